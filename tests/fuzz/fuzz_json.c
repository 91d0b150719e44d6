/*
 * fuzz_json.c - libFuzzer entry for the arena JSON parser (lib/formats/json.c) against cJSON
 * (cJSON_ParseWithLengthOpts, then only whitespace may follow).  When both accept, the trees
 * must match field by field (type, key, string, valueint, valuedouble bits, list links),
 * print the same and compare as cJSON compares its own trees; parsed again with a skip key
 * the tree must be cJSON's with those members removed; cJSON's tree packed (dd_json_pack)
 * must read and print as before.  When only one accepts, the input
 * must be one of the known differences, all of them places where cJSON is laxer than
 * RFC 8259 or cuts a number short:
 *   - nesting deeper than our limit (100; cJSON's is 1000);
 *   - a control character (< 0x20): raw in a string, or between tokens, where cJSON takes
 *     every byte up to 0x20 for whitespace;
 *   - a UTF-8 byte order mark at the start (cJSON skips it);
 *   - \u with a non-hex digit (cJSON reads the escape as U+0000);
 *   - a number strtod takes but the grammar does not ("01", "1.", "-.5", "1.e5");
 *   - we alone accept: a number longer than 63 bytes (cJSON cuts it there and then fails
 *     on the rest).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "json_oracle.h"

/* dd_json_share on every array and object under o, innermost first (held lists inside held
 * lists). */
static void share_lists(cJSON *o)
{
    cJSON *it;

    for (it = o && !(o->type & cJSON_IsReference) ? o->child : NULL; it; it = it->next) {
        share_lists(it);
        dd_json_share(it);
    }
}

/* dd_json_tail on every object under o, innermost first, naming its last three members
 * but the first, last first: they move last in another order, each marked. */
static void mark_tails(cJSON *o)
{
    const char *names[4] = { NULL, NULL, NULL, NULL };
    size_t n = 0;
    cJSON *it;

    for (it = o->child; it; it = it->next)
        mark_tails(it);
    if (!cJSON_IsObject(o) || !o->child)
        return;
    for (it = o->child->prev; it != o->child && n < 3; it = it->prev)
        if (it->string)
            names[n++] = it->string;
    dd_json_tail(o, names);
}

/* Two copies of want with their runs of last members marked, packed (the second holds
 * what the first saw): each reads and prints as the marked tree, and still does once the
 * other is freed (the ASan run finds a run freed with its first sharer). */
static void check_tails(const cJSON *want)
{
    cJSON *moved = cJSON_Duplicate(want, 1), *twin, *copy;
    char *pm, *pc;
    int same;

    if (!moved)
        abort();
    mark_tails(moved);
    twin = dd_json_pack(cJSON_Duplicate(moved, 1));
    copy = dd_json_pack(cJSON_Duplicate(moved, 1));
    cJSON_Delete(twin);
    /* As any two trees alike compare: false where a key repeats or a number is inf. */
    twin = cJSON_Duplicate(moved, 1);
    same = cJSON_Compare(moved, twin, 1);
    cJSON_Delete(twin);
    pm = cJSON_PrintUnformatted(moved);
    pc = cJSON_PrintUnformatted(copy);
    if (!oracle_same_str(pm, pc) || cJSON_Compare(moved, copy, 1) != same)
        abort();
    free(pm);
    free(pc);
    cJSON_Delete(copy);
    cJSON_Delete(moved);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SKIP "a"

#define DIGIT(c) ((c) >= '0' && (c) <= '9')
#define NUMCHAR(c) (DIGIT(c) || (c) == '-' || (c) == '+' || (c) == '.' || (c) == 'e' || (c) == 'E')
#define HEX(c) (DIGIT(c) || ((c) >= 'a' && (c) <= 'f') || ((c) >= 'A' && (c) <= 'F'))

/* -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? over all of s[0..n). */
static int strict_number(const char *s, size_t n)
{
    size_t i = 0;

    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && DIGIT(s[i]))
        while (i < n && DIGIT(s[i]))
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        if (++i == n || !DIGIT(s[i]))
            return 0;
        while (i < n && DIGIT(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i == n || !DIGIT(s[i]))
            return 0;
        while (i < n && DIGIT(s[i]))
            i++;
    }
    return i == n;
}

/* Where err's line and column point. */
static size_t offset_of(const char *buf, size_t len, const struct dd_err *err)
{
    size_t p = 0;
    int line = 1;

    while (line < err->line && p < len)
        if (buf[p++] == '\n')
            line++;
    if (line != err->line || err->col < 1 || p + (size_t)err->col - 1 > len)
        abort();
    return p + (size_t)err->col - 1;
}

/* cJSON accepted what we refused: one of the differences listed at the top? */
static int known_refusal(const char *buf, size_t len, const struct dd_err *err)
{
    size_t p, s, e, k;

    if (err->rc == DD_ETOOBIG)
        return !strcmp(err->msg, "JSON nests deeper than 100 levels");
    if (err->rc != DD_EPARSE)
        return 0;
    p = offset_of(buf, len, err);
    if (p < len && (unsigned char)buf[p] < 0x20)
        return 1;
    if (p == 0 && len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
        return 1;
    for (k = 0; k < 4 && p >= k + 2; k++)
        if (buf[p - k - 2] == '\\' && buf[p - k - 1] == 'u' && p < len && !HEX(buf[p]))
            return 1;
    for (s = p; s > 0 && NUMCHAR(buf[s - 1]); s--)
        ;
    for (e = s; e < len && NUMCHAR(buf[e]); e++)
        ;
    return e > s && e >= p && (buf[s] == '-' || DIGIT(buf[s])) && !strict_number(buf + s, e - s);
}

/* We accepted what cJSON refused: a number longer than 63 bytes (the text is valid JSON). */
static int long_number(const char *buf, size_t len)
{
    size_t i, run = 0;
    int in_str = 0;

    for (i = 0; i < len; i++) {
        if (in_str) {
            if (buf[i] == '\\')
                i++;
            else if (buf[i] == '"')
                in_str = 0;
            continue;
        }
        in_str = buf[i] == '"';
        run = NUMCHAR(buf[i]) ? run + 1 : 0;
        if (run > 63)
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct dd_json_arena *a;
    const char *buf = (const char *)data;
    struct dd_err err, err2;
    cJSON *want, *got, *skipped;

    if (!a && !(a = dd_json_arena_new((size_t)256 << 20)))
        abort();
    want = cjson_parse(buf, size);
    dd_err_clear(&err);
    got = dd_json_arena_parse(a, buf, size, 100, NULL, &err);
    dd_err_clear(&err2);
    skipped = dd_json_arena_parse(a, buf, size, 100, SKIP, &err2);
    /* Skipping changes the tree, never what is accepted nor the error. */
    if (!got != !skipped || strcmp(err.msg, err2.msg) || err.line != err2.line ||
        err.col != err2.col)
        abort();
    if (!got && (!err.msg[0] || (err.rc != DD_EPARSE && err.rc != DD_ETOOBIG)))
        abort();
    if (want && got) {
        cJSON *copy = cJSON_Duplicate(want, 1), *twin;
        char *pw = cJSON_PrintUnformatted(want), *pg = cJSON_PrintUnformatted(got);
        if (tree_diff(want, got))
            abort();
        if (!oracle_same_str(pw, pg) || cJSON_Compare(want, got, 1) != cJSON_Compare(want, copy, 1))
            abort();
        free(pg);
        /* With its lists shared (dd_json_share: a twin's first, so that the copy's are
         * held) and packed (dd_json_pack), cJSON's tree reads and prints the same, flags
         * aside; freeing both frees no held list (the ASan run). */
        twin = cJSON_Duplicate(want, 1);
        share_lists(twin);
        share_lists(copy);
        cJSON_Delete(twin);
        copy = dd_json_pack(copy);
        pg = cJSON_PrintUnformatted(copy);
        if (tree_diff_types(want, copy, 0xFF) || !oracle_same_str(pw, pg))
            abort();
        free(pw);
        free(pg);
        cJSON_Delete(copy);
        check_tails(want);
        strip(want, SKIP);
        if (tree_diff(want, skipped))
            abort();
    } else if (want && !known_refusal(buf, size, &err)) {
        abort();
    } else if (got && !long_number(buf, size)) {
        abort();
    }
    cJSON_Delete(want);
    dd_json_arena_reset(a);
    return 0;
}
