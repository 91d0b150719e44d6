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
#include <string.h>

/* Asserts that haystack contains needle, printing both when it does not. */
#define assert_contains(haystack, needle)                                              \
    do {                                                                               \
        const char *h_ = (haystack), *n_ = (needle);                                   \
        if (!h_ || !strstr(h_, n_))                                                    \
            fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_);     \
    } while (0)

#endif
