/*
 * harness.h - what every unit test includes: cmocka and a few helpers.
 * Tests are cmocka groups; scripts/run-tests.sh reads cmocka's summaries.
 */
#ifndef DD_TEST_HARNESS_H
#define DD_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Asserts that haystack contains needle, printing both when it does not. */
#define assert_contains(haystack, needle)                                              \
    do {                                                                               \
        const char *h_ = (haystack), *n_ = (needle);                                   \
        if (!h_ || !strstr(h_, n_))                                                    \
            fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_);     \
    } while (0)

/* Reads a whole file into a new NUL-terminated buffer (free it), failing the test on error. */
static inline char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = calloc((size_t)n + 1, 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

#endif
