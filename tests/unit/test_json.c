/*
 * test_json.c - the arena JSON parser against cJSON: every input both accept must give
 * trees no cJSON reader can tell apart (types, strings, valuedouble and valueint, list
 * links, printed form); errors with their positions; the depth and memory caps; skip_key;
 * nodes added afterwards; arena reuse.  tests/fuzz/fuzz_json.c does the same with
 * generated inputs.  And dd_json_pack: each tree packed reads and prints as cJSON's.
 * Runs from the repository root.
 */
#include "harness.h"

#include <dirent.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>

#include "formats/json.h"
#include "json_oracle.h"

#define BIG ((size_t)64 << 20)

/* Field by field, and the list links cJSON itself relies on to append. */
static void same_tree(const cJSON *want, const cJSON *got)
{
    const char *d = tree_diff(want, got);

    if (d)
        fail_msg("trees differ: %s", d);
}

/* The nodes and string bytes of o's tree that dd_json_pack copies (shared ones aside). */
static void tree_size(const cJSON *o, size_t *nodes, size_t *bytes)
{
    for (; o; o = o->next) {
        ++*nodes;
        if (o->string && !(o->type & cJSON_StringIsConst))
            *bytes += strlen(o->string) + 1;
        if (o->valuestring && !(o->type & cJSON_IsReference))
            *bytes += strlen(o->valuestring) + 1;
        tree_size(o->child, nodes, bytes);
    }
}

/* Every node of o's tree in [lo, hi), every string it copied in [slo, shi). */
static void in_block(const cJSON *o, const cJSON *lo, const cJSON *hi, const char *slo,
                     const char *shi)
{
    for (; o; o = o->next) {
        if (o < lo || o >= hi)
            fail_msg("node %p outside the block [%p, %p)", (void *)o, (void *)lo, (void *)hi);
        if (o->string && (o->string < slo || o->string >= shi))
            fail_msg("key \"%s\" outside the block", o->string);
        if (o->valuestring && (o->valuestring < slo || o->valuestring >= shi))
            fail_msg("string \"%s\" outside the block", o->valuestring);
        in_block(o->child, lo, hi, slo, shi);
    }
}

/*
 * dd_json_pack of a copy of want: reads as want (its flags aside: they only say who frees),
 * prints the same, lies in one block (nodes, then strings), and cJSON_Delete frees it (the
 * ASan run finds a leak or a bad free).
 */
static void check_packed(const cJSON *want)
{
    cJSON *copy = cJSON_Duplicate(want, 1), *p;
    size_t nodes = 0, bytes = 0;
    const char *d;
    char *pw, *pp;

    assert_non_null(copy);
    tree_size(copy, &nodes, &bytes);
    p = dd_json_pack(copy);
    assert_ptr_not_equal(p, copy);
    if ((d = tree_diff_types(want, p, 0xFF)))
        fail_msg("packed tree differs: %s", d);
    assert_true(p->type & cJSON_IsReference);
    assert_null(p->next);
    assert_null(p->prev);
    in_block(p, p, p + nodes, (const char *)(p + nodes), (const char *)(p + nodes) + bytes);
    pw = cJSON_PrintUnformatted(want);
    pp = cJSON_PrintUnformatted(p);
    assert_string_equal(pw, pp);
    free(pw);
    free(pp);
    cJSON_Delete(p);
}

static void check_same(struct dd_json_arena *a, const char *buf, size_t len)
{
    struct dd_err err;
    cJSON *want = cjson_parse(buf, len), *got;
    cJSON *copy;
    char *pw, *pg;

    dd_err_clear(&err);
    got = dd_json_arena_parse(a, buf, len, 1000, NULL, &err);
    if (!want) {
        if (got)
            fail_msg("cJSON refuses, we accept: %.200s", buf);
        return;
    }
    if (!got)
        fail_msg("cJSON accepts, we refuse (%s): %.200s", err.msg, buf);
    same_tree(want, got);
    /* cJSON_Compare is false even between two cJSON trees when a key repeats (it looks
     * members up by name) or a number is inf (|inf - inf| is NaN): expect what it says then. */
    copy = cJSON_Duplicate(want, 1);
    assert_int_equal(cJSON_Compare(want, got, 1), cJSON_Compare(want, copy, 1));
    assert_int_equal(cJSON_Compare(got, want, 1), cJSON_Compare(copy, want, 1));
    cJSON_Delete(copy);
    pw = cJSON_PrintUnformatted(want);
    pg = cJSON_PrintUnformatted(got);
    assert_string_equal(pw, pg);
    free(pw);
    free(pg);
    check_packed(want);
    cJSON_Delete(want);
}

static void check_same_str(struct dd_json_arena *a, const char *s)
{
    check_same(a, s, strlen(s));
}

static void test_differential_snippets(void **state)
{
    static const char *const in[] = {
        "{}", "[]", "0", "\"\"", "true", "false", "null", " \t\r\n[ ] \n",
        "{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":null,\"e\":true,\"f\":false}}",
        "[[],[[]],{},{\"\":{}}]",
        "{\"dup\":1,\"dup\":2,\"dup\":{\"dup\":3}}",
        "[\"plain\",\"caf\xc3\xa9\",\"\xe2\x82\xac\xf0\x9f\x98\x80\"]",
        "{ \"a\" : [ 1 , 2 ] , \"b\" : \"x\" }",
        "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
        "[\"\\u0041\\u00e9\\u00E9\\u20ac\\uD83D\\uDE00\\udbff\\udfff\\u0080\\u07ff\\u0800"
        "\\uffff\"]",
        "{\"k\\u0065y\":\"v\\u0061l\",\"a\\nb\":1}",
        "[\"a\\u0000b\",\"\\u0000\"]", "{\"x\\u0000y\":1}",
        "[\"long plain string without any escapes at all, long enough for the word loop\"]",
        "[\"escape late in a long string ......................... \\n and after\"]",
        "[0,-0,1,-1,0.5,-0.25,1e3,1E3,1e+3,1e-3,1E-0,0e0,-0.0e-0]",
        "[2147483647,2147483648,-2147483648,-2147483649,2147483646.5,-2147483648.5]",
        "[999999999999999,-999999999999999,9999999999999999,12345678901234567890123]",
        "[1e308,1.7976931348623157e308,1e400,-1e400,4.9e-324,1e-400,2.5,-2.5,0.1]",
        "[3.14159265358979323846264338327950288419716939937510582097494459]",
        "[123456789012345678901234567890123456789012345678901234567890123]",
        "\"top-level string\"", "-12.5e2", "  42  ",
    };
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    size_t i;

    (void)state;
    assert_non_null(a);
    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        check_same_str(a, in[i]);
        dd_json_arena_reset(a);
    }
    dd_json_arena_free(a);
}

static int check_dir(struct dd_json_arena *a, const char *dir)
{
    char path[512];
    struct dirent *e;
    DIR *d = opendir(dir);
    int n = 0;

    if (!d)
        fail_msg("cannot open %s", dir);
    while ((e = readdir(d))) {
        char *buf;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        buf = test_read_file(path);
        check_same(a, buf, strlen(buf));
        dd_json_arena_reset(a);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

/* Not-JSON files (truncated.json) must be refused by both. */
static void test_differential_files(void **state)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);

    (void)state;
    assert_true(check_dir(a, "tests/fuzz/corpus/admission") >= 5);
    assert_true(check_dir(a, "tests/data/live") >= 1);
    assert_true(check_dir(a, "tests/fuzz/corpus/json") >= 5);
    assert_true(check_dir(a, "tests/fuzz/corpus/manifest") >= 1);
    dd_json_arena_free(a);
}

static cJSON *parse_ok(struct dd_json_arena *a, const char *s)
{
    struct dd_err err;
    cJSON *t = dd_json_arena_parse(a, s, strlen(s), 100, NULL, &err);

    if (!t)
        fail_msg("%s: %s", s, err.msg);
    return t;
}

static void test_strings(void **state)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    cJSON *t;

    (void)state;
    t = parse_ok(a, "[\"\\uD83D\\uDE00\",\"\\u00e9\",\"\\u20AC\",\"a\\u0000b\",\"\\/\","
                    "\"\\u007f\"]");
    assert_string_equal(cJSON_GetArrayItem(t, 0)->valuestring, "\xf0\x9f\x98\x80");
    assert_string_equal(cJSON_GetArrayItem(t, 1)->valuestring, "\xc3\xa9");
    assert_string_equal(cJSON_GetArrayItem(t, 2)->valuestring, "\xe2\x82\xac");
    assert_string_equal(cJSON_GetArrayItem(t, 3)->valuestring, "a");
    assert_string_equal(cJSON_GetArrayItem(t, 4)->valuestring, "/");
    assert_string_equal(cJSON_GetArrayItem(t, 5)->valuestring, "\x7f");
    /* Not NUL-terminated: the parser must stop at len. */
    t = dd_json_arena_parse(a, "\"abc\"XYZ", 5, 100, NULL, NULL);
    assert_non_null(t);
    assert_string_equal(t->valuestring, "abc");
    t = dd_json_arena_parse(a, "[12]", 3, 100, NULL, NULL);
    assert_null(t);
    dd_json_arena_free(a);
}

/* Strings are decoded straight into the chunk's free room; one running past the chunk's end is
 * measured and decoded again: escapes and errors at every offset across that edge. */
static void test_strings_across_chunks(void **state)
{
    static const char unit[] = "\\u00e9\\uD83D\\uDE00\\n\\\"";
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    size_t pad, i, len, cut;
    char *s = malloc(70000 + 100 * sizeof(unit) + 16);
    struct dd_err err;

    (void)state;
    assert_non_null(s);
    for (pad = 65100; pad < 65350; pad++) {
        len = 0;
        s[len++] = '[';
        s[len++] = '"';
        memset(s + len, 'x', pad);
        len += pad;
        len += (size_t)sprintf(s + len, "\",\"");
        for (i = 0; i < 100; i++)
            len += (size_t)sprintf(s + len, "%s", unit);
        cut = len;
        len += (size_t)sprintf(s + len, "\"]");
        check_same(a, s, len);
        dd_json_arena_reset(a);
        /* A lone high surrogate at the end: reported where the low one should start. */
        len = cut + (size_t)sprintf(s + cut, "\\uD800\"]");
        assert_null(dd_json_arena_parse(a, s, len, 10, NULL, &err));
        assert_int_equal(err.col, (int)(cut + 7));
        dd_json_arena_reset(a);
    }
    free(s);
    dd_json_arena_free(a);
}

static void test_numbers(void **state)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    cJSON *t;

    (void)state;
    t = parse_ok(a, "[0,-0,2147483648,-2147483649,999999999999999,9999999999999999,1e400,"
                    "2.9,-2.9]");
    assert_true(t->child->valuedouble == 0 && !signbit(t->child->valuedouble));
    assert_true(signbit(cJSON_GetArrayItem(t, 1)->valuedouble));
    assert_int_equal(cJSON_GetArrayItem(t, 2)->valueint, INT_MAX);
    assert_int_equal(cJSON_GetArrayItem(t, 3)->valueint, INT_MIN);
    assert_true(cJSON_GetArrayItem(t, 4)->valuedouble == 999999999999999.0);
    assert_true(cJSON_GetArrayItem(t, 5)->valuedouble == 1e16); /* rounded, as strtod does */
    assert_true(isinf(cJSON_GetArrayItem(t, 6)->valuedouble));
    assert_int_equal(cJSON_GetArrayItem(t, 6)->valueint, INT_MAX);
    assert_int_equal(cJSON_GetArrayItem(t, 7)->valueint, 2);
    assert_int_equal(cJSON_GetArrayItem(t, 8)->valueint, -2);
    /* Longer than cJSON's 63-byte copy (cJSON refuses it): valid JSON, read whole. */
    t = parse_ok(a, "0.0000000000000000000000000000000000000000000000000000000000000000000000015");
    assert_true(t->valuedouble == 1.5e-72);
    dd_json_arena_free(a);
}

static void expect_error(const char *s, size_t len, int line, int col, const char *tail)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    char want[128];
    struct dd_err err;

    dd_err_clear(&err);
    if (dd_json_arena_parse(a, s, len, 100, NULL, &err))
        fail_msg("accepted: %s", s);
    snprintf(want, sizeof(want), "malformed JSON at line %d, column %d%s", line, col, tail);
    if (err.rc != DD_EPARSE || strcmp(err.msg, want))
        fail_msg("%s: got \"%s\", want \"%s\"", s, err.msg, want);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    dd_json_arena_free(a);
}

#define ERR(s, line, col) expect_error(s, sizeof(s) - 1, line, col, "")

static void test_errors(void **state)
{
    (void)state;
    ERR("", 1, 1);
    ERR(" \n ", 2, 2);
    ERR("{\"a\":\"bc", 1, 9);              /* unterminated string: the end */
    ERR("{\"a\":\"b\\qc\"}", 1, 9);        /* bad escape: the letter */
    ERR("[\"ab\\", 1, 6);                  /* backslash at the end */
    ERR("{\"a\" 1}", 1, 6);                /* missing colon */
    ERR("{\"a\":1,}", 1, 8);               /* trailing comma */
    ERR("[1,2,]", 1, 6);
    ERR("[1 2]", 1, 4);
    ERR("{1:2}", 1, 2);
    ERR("{\"a\":1", 1, 7);
    ERR("[\"a\tb\"]", 1, 4);               /* raw control character */
    ERR("{\n  \"a\": \"x\ny\"\n}", 2, 10);
    ERR("[\"\\uD800\"]", 1, 9);            /* lone high surrogate: where the low one should be */
    ERR("[\"\\uD800\\u0041\"]", 1, 9);     /* not a low surrogate: its backslash */
    ERR("[\"\\uD800\\n\"]", 1, 10);
    ERR("[\"\\uDC00\"]", 1, 3);            /* lone low surrogate: its backslash */
    ERR("[\"\\u12G4\"]", 1, 7);            /* not hex */
    ERR("[\"\\u12\"]", 1, 7);
    ERR("[\"\\u00\x13" "0\"]", 1, 7);        /* 0x13 | 0x20 is '3' */
    ERR("[01]", 1, 3);
    ERR("[1.]", 1, 4);
    ERR("[.5]", 1, 2);
    ERR("[-]", 1, 3);
    ERR("[1e]", 1, 4);
    ERR("[+1]", 1, 2);
    ERR("[tru]", 1, 5);
    ERR("nul", 1, 4);
    ERR("\xef\xbb\xbf{}", 1, 1);           /* a byte order mark is not JSON */
    expect_error("[1]\n\n  ]", 8, 3, 3, ": unexpected data after the value");
    ERR("[1,\n\n  ]", 3, 3);
    ERR("[\"a\",\x01\"b\"]", 1, 6);         /* only four whitespace characters */
    expect_error("{\"a\":1} x", 9, 1, 9, ": unexpected data after the value");
    expect_error("01", 2, 1, 2, ": unexpected data after the value");
    expect_error("[1]\0", 4, 1, 4, ": unexpected data after the value");
    expect_error("[\"a\0b\"]", 7, 1, 4, "");
}

/* Every ASCII byte at every offset of a 48-byte string, so that each lands in every lane of
 * the 16- and 8-byte scans and in the byte loop after them: controls are refused where they
 * are, everything else is kept as it is. */
static void test_string_bytes_at_every_offset(void **state)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    char s[64];
    int b, k;

    (void)state;
    for (b = 0; b < 0x80; b++) {
        if (b == '"' || b == '\\')
            continue;
        for (k = 0; k < 48; k++) {
            cJSON *t;
            memcpy(s, "[\"", 2);
            memset(s + 2, 'x', 48);
            s[2 + k] = (char)b;
            memcpy(s + 50, "\"]", 3);
            if (b < 0x20) {
                expect_error(s, 52, 1, 3 + k, "");
                continue;
            }
            t = parse_ok(a, s);
            if (memcmp(t->child->valuestring, s + 2, 48) || t->child->valuestring[48])
                fail_msg("byte 0x%02x at %d: got \"%s\"", b, k, t->child->valuestring);
            dd_json_arena_reset(a);
        }
    }
    dd_json_arena_free(a);
}

static char *nest(int depth, int objects)
{
    char *s = malloc((size_t)depth * 6 + 8), *p = s;
    int i;

    assert_non_null(s);
    for (i = 0; i < depth; i++)
        p += sprintf(p, "%s", objects && i % 2 ? "{\"a\":" : "[");
    *p++ = '1';
    for (i = depth - 1; i >= 0; i--)
        *p++ = objects && i % 2 ? '}' : ']';
    *p = '\0';
    return s;
}

static void test_depth(void **state)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    struct dd_err err;
    int objects;

    (void)state;
    for (objects = 0; objects < 2; objects++) {
        char *ok = nest(20, objects), *deep = nest(21, objects);
        assert_non_null(dd_json_arena_parse(a, ok, strlen(ok), 20, NULL, &err));
        assert_null(dd_json_arena_parse(a, deep, strlen(deep), 20, NULL, &err));
        assert_int_equal(err.rc, DD_ETOOBIG);
        assert_string_equal(err.msg, "JSON nests deeper than 20 levels");
        check_same_str(a, deep);
        free(ok);
        free(deep);
    }
    /* No recursion: a depth no C stack would survive in a recursive parser. */
    {
        char *huge = nest(300000, 1);
        cJSON *t = dd_json_arena_parse(a, huge, strlen(huge), 300000, NULL, &err);
        assert_non_null(t);
        assert_true(cJSON_IsArray(t) && cJSON_IsObject(t->child));
        free(huge);
    }
    dd_json_arena_free(a);
}

static void test_max_bytes(void **state)
{
    size_t n = 100000, i;
    char *s = malloc(n * 2 + 2);
    struct dd_json_arena *a = dd_json_arena_new((size_t)1 << 20);
    struct dd_err err;
    cJSON *t;

    (void)state;
    assert_non_null(s);
    s[0] = '[';
    for (i = 0; i < n; i++)
        memcpy(s + 1 + 2 * i, "0,", 2);
    s[n * 2] = ']';
    s[n * 2 + 1] = '\0';
    assert_null(dd_json_arena_parse(a, s, n * 2 + 1, 100, NULL, &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_string_equal(err.msg, "JSON tree would take more than 1048576 bytes");
    /* 10000 elements (64 bytes each) fit; the failed parse left nothing behind. */
    s[10000 * 2] = ']';
    t = dd_json_arena_parse(a, s, 10000 * 2 + 1, 100, NULL, &err);
    assert_non_null(t);
    assert_int_equal(cJSON_GetArraySize(t), 10000);
    /* A string alone past the cap. */
    dd_json_arena_reset(a);
    memset(s, 'x', n * 2 + 2);
    s[0] = '"';
    s[n * 2 + 1] = '"';
    assert_non_null(dd_json_arena_parse(a, s, n * 2 + 2, 100, NULL, &err));
    free(s);
    s = malloc(((size_t)2 << 20) + 2);
    assert_non_null(s);
    memset(s, 'x', ((size_t)2 << 20) + 2);
    s[0] = '"';
    s[((size_t)2 << 20) + 1] = '"';
    assert_null(dd_json_arena_parse(a, s, ((size_t)2 << 20) + 2, 100, NULL, &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    dd_json_arena_free(a);
    /* One that would fit in the chunk's free room, but not under the cap. */
    a = dd_json_arena_new(1000);
    s[1999] = '"';
    assert_null(dd_json_arena_parse(a, s, 2000, 100, NULL, &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    s[900] = '"'; /* 64 + 912 bytes */
    assert_non_null(dd_json_arena_parse(a, s, 901, 100, NULL, &err));
    free(s);
    dd_json_arena_free(a);
}

static void test_skip_key(void **state)
{
    static const char *const in[] = {
        "{\"managedFields\":[{\"a\":1}]}",
        "{\"managedFields\":1,\"b\":2}",
        "{\"a\":1,\"managedFields\":{\"x\":[1,2,{\"managedFields\":3}]},\"b\":2}",
        "{\"a\":1,\"managedFields\":\"s\"}",
        "{\"a\":1,\"managedFields\":[],\"managedFields\":{},\"c\":[{\"managedFields\":null}]}",
        "[{\"metadata\":{\"name\":\"x\",\"managedFields\":[{\"m\":\"k\"}]}},"
        "{\"managedFieldsX\":1}]",
        "{\"managed\\u0046ields\":1,\"managedField\":2}",
        "[\"managedFields\",{\"k\":\"managedFields\"}]",
    };
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    struct dd_err err;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        cJSON *want = cJSON_Parse(in[i]), *got;
        assert_non_null(want);
        strip(want, "managedFields");
        got = dd_json_arena_parse(a, in[i], strlen(in[i]), 100, "managedFields", &err);
        assert_non_null(got);
        same_tree(want, got);
        /* Appending after a dropped last member must link to the member before it. */
        if (cJSON_IsObject(got)) {
            char *p;
            assert_non_null(dd_json_arena_add_string(a, got, "z", "end"));
            assert_non_null(cJSON_AddStringToObject(want, "z", "end"));
            same_tree(want, got);
            p = cJSON_PrintUnformatted(got);
            assert_non_null(p);
            free(p);
        }
        cJSON_Delete(want);
    }
    /* Still checked inside. */
    assert_null(dd_json_arena_parse(a, "{\"managedFields\":[1,}],\"a\":1}", 29, 100,
                                    "managedFields", &err));
    assert_string_equal(err.msg, "malformed JSON at line 1, column 21");
    assert_null(dd_json_arena_parse(a, "{\"managedFields\":[[[1]]]}", 25, 2, "managedFields",
                                    &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    dd_json_arena_free(a);
}

static void test_add_and_cjson_readers(void **state)
{
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    cJSON *t, *st, *arr, *c, *heap, *dup;
    char *p;
    int n = 0;

    (void)state;
    t = parse_ok(a, "{\"metadata\":{\"name\":\"x\"},\"list\":[1,2],\"empty\":{}}");
    assert_non_null(dd_json_arena_add_string(a, t, "uid", "123"));
    assert_non_null(st = dd_json_arena_add_object(a, t, "status"));
    assert_non_null(dd_json_arena_add_string(a, st, "phase", "ok"));
    assert_non_null(dd_json_arena_add_string(a, cJSON_GetObjectItemCaseSensitive(t, "empty"), "k",
                                             "v"));
    assert_null(dd_json_arena_add_string(a, cJSON_GetObjectItemCaseSensitive(t, "list"), "k", "v"));
    assert_null(dd_json_arena_add_string(a, t, "k", NULL));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "uid")->valuestring, "123");
    assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "status")));
    assert_string_equal(dd_json_str(t, "status", "phase", NULL), "ok");
    /* cJSON appends through child->prev. */
    arr = cJSON_GetObjectItemCaseSensitive(t, "list");
    heap = cJSON_CreateNumber(3);
    assert_true(cJSON_AddItemToArray(arr, heap));
    assert_int_equal(cJSON_GetArraySize(arr), 3);
    cJSON_ArrayForEach(c, arr)
        assert_int_equal(c->valueint, ++n);
    p = cJSON_PrintUnformatted(t);
    assert_string_equal(p, "{\"metadata\":{\"name\":\"x\"},\"list\":[1,2,3],"
                           "\"empty\":{\"k\":\"v\"},"
                           "\"uid\":\"123\",\"status\":{\"phase\":\"ok\"}}");
    dup = cJSON_Duplicate(t, 1);
    assert_true(cJSON_Compare(dup, t, 1));
    cJSON_Delete(dup);
    free(p);
    /* Heap nodes stay the caller's. */
    cJSON_Delete(cJSON_DetachItemViaPointer(arr, heap));
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    dd_json_arena_free(a);

    /* Past the cap: NULL, and nothing half-added. */
    a = dd_json_arena_new(150);
    t = parse_ok(a, "{}");
    assert_null(dd_json_arena_add_string(a, t, "key", "value"));
    assert_null(t->child);
    assert_non_null(dd_json_arena_add_object(a, t, "k"));
    dd_json_arena_free(a);
}

/* Under ASan: chunks come and go without leaks or stale pointers; trees of one arena coexist. */
static void test_reuse(void **state)
{
    size_t n = 400000, i;
    char *big = malloc(n * 8 + 2);
    struct dd_json_arena *a = dd_json_arena_new(BIG);
    cJSON *t1, *t2;

    (void)state;
    assert_non_null(big);
    big[0] = '[';
    for (i = 0; i < n; i++)
        memcpy(big + 1 + 8 * i, "\"abcde\",", 8);
    big[n * 8] = ']';
    big[n * 8 + 1] = '\0';
    for (i = 0; i < 3; i++) {
        assert_non_null(t1 = dd_json_arena_parse(a, big, n * 8 + 1, 10, NULL, NULL));
        assert_int_equal(cJSON_GetArraySize(t1), (int)n);
        dd_json_arena_reset(a);
    }
    for (i = 0; i < 2000; i++) {
        t1 = parse_ok(a, "{\"a\":[1,2,3],\"b\":\"x\"}");
        t2 = parse_ok(a, "[true]");
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t1, "a")), 3);
        assert_true(cJSON_IsTrue(t2->child));
        assert_null(dd_json_arena_parse(a, "[1,", 3, 10, NULL, NULL));
        dd_json_arena_reset(a);
    }
    /* A failed parse after a good one leaves the good tree intact. */
    t1 = parse_ok(a, "{\"keep\":\"me\"}");
    assert_null(dd_json_arena_parse(a, big, n * 8, 10, NULL, NULL));
    assert_string_equal(dd_json_str(t1, "keep", NULL), "me");
    free(big);
    dd_json_arena_free(a);
    dd_json_arena_free(NULL);
}

/* Keys and strings a tree shares (cJSON's CS and Reference calls, as lib/model/keep.c's
 * common words) stay shared in the packed copy; the rest is copied. */
static void test_pack_shared(void **state)
{
    static const char key[] = "kind", value[] = "Pod";
    cJSON *o = cJSON_CreateObject(), *p, *arr;

    (void)state;
    assert_null(dd_json_pack(NULL));
    assert_non_null(o);
    cJSON_AddItemToObjectCS(o, key, cJSON_CreateStringReference(value));
    arr = cJSON_AddArrayToObject(o, "names");
    cJSON_AddItemToArray(arr, cJSON_CreateString("a"));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(7));
    p = dd_json_pack(o);
    assert_ptr_equal(p->child->string, key);
    assert_ptr_equal(p->child->valuestring, value);
    assert_string_equal(dd_json_str(p, "kind", NULL), "Pod");
    arr = cJSON_GetObjectItemCaseSensitive(p, "names");
    assert_ptr_equal(arr, p + 2);
    assert_string_equal(arr->child->valuestring, "a");
    assert_true((char *)arr->child->valuestring >= (char *)(p + 5));
    assert_int_equal(arr->child->next->valueint, 7);
    assert_ptr_equal(arr->child->prev, arr->child->next);
    cJSON_Delete(p);
}

/* A Pod-like tree whose "tolerations" list has the given last key (to tell lists apart). */
static cJSON *with_list(const char *last)
{
    char text[512];
    cJSON *o;

    snprintf(text, sizeof(text),
             "{\"kind\":\"Pod\",\"spec\":{\"nodeName\":\"n\",\"tolerations\":[{\"key\":\"a\","
             "\"operator\":\"Exists\",\"tolerationSeconds\":300},{\"%s\":\"b\"}]}}", last);
    assert_non_null(o = cJSON_Parse(text));
    return o;
}

static cJSON *list_of(cJSON *o)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"),
                                            "tolerations");
}

/* Lists alike are held once from their second sighting; the trees read and print as before;
 * cJSON_Delete, cJSON_Duplicate and dd_json_pack leave the held list alone (the ASan run
 * finds a double free or a leak). */
static void same_content(const cJSON *want, const cJSON *got)
{
    const char *d = tree_diff_types(want, got, 0xFF);

    if (d)
        fail_msg("trees differ: %s", d);
}

static void test_share_lists(void **state)
{
    cJSON *a = with_list("k1"), *b = with_list("k1"), *c = with_list("k1"), *d = with_list("k2");
    cJSON *want = with_list("k1"), *dup, *p, *big, *big2, *o;
    char *pw, *pc;
    int i;

    (void)state;
    dd_json_share(list_of(a)); /* the first sighting: a keeps its own */
    assert_false(list_of(a)->type & cJSON_IsReference);
    dd_json_share(list_of(b));
    dd_json_share(list_of(c));
    dd_json_share(list_of(d)); /* another list: seen once */
    assert_true(list_of(b)->type & cJSON_IsReference);
    assert_ptr_equal(list_of(b)->child, list_of(c)->child);
    assert_false(list_of(d)->type & cJSON_IsReference);
    same_content(want, b);
    pw = cJSON_PrintUnformatted(want);
    pc = cJSON_PrintUnformatted(c);
    assert_string_equal(pw, pc);
    free(pc);
    /* The same members in another order are another list (readers iterate them). */
    o = cJSON_Parse("{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\",\"key\":\"a\","
                    "\"tolerationSeconds\":300},{\"k1\":\"b\"}]}}");
    assert_non_null(o);
    dd_json_share(list_of(o));
    dd_json_share(list_of(o));
    assert_ptr_not_equal(list_of(o)->child, list_of(b)->child);
    cJSON_Delete(o);
    /* A copy owns its list; a packed tree points at the held one and copies the rest. */
    assert_non_null(dup = cJSON_Duplicate(c, 1));
    assert_false(list_of(dup)->type & cJSON_IsReference);
    assert_ptr_not_equal(list_of(dup)->child, list_of(c)->child);
    same_content(want, dup);
    dd_json_share(list_of(dup)); /* now held: dup's own goes */
    assert_ptr_equal(list_of(dup)->child, list_of(b)->child);
    p = dd_json_pack(dup);
    assert_ptr_equal(list_of(p)->child, list_of(b)->child);
    same_content(want, p);
    /* A list past 4 KiB stays its own. */
    assert_non_null(big = cJSON_CreateObject());
    assert_non_null(o = cJSON_AddArrayToObject(big, "l"));
    for (i = 0; i < 100; i++)
        cJSON_AddItemToArray(o, cJSON_CreateString("a string of some length"));
    assert_non_null(big2 = cJSON_Duplicate(big, 1));
    dd_json_share(cJSON_GetObjectItemCaseSensitive(big, "l"));
    dd_json_share(cJSON_GetObjectItemCaseSensitive(big2, "l"));
    assert_false(cJSON_GetObjectItemCaseSensitive(big2, "l")->type & cJSON_IsReference);
    dd_json_share(NULL);
    dd_json_share(cJSON_GetObjectItemCaseSensitive(big, "missing"));
    cJSON_Delete(big);
    cJSON_Delete(big2);
    cJSON_Delete(p);
    free(pw);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    cJSON_Delete(d);
    cJSON_Delete(want);
}

/* {"metadata":{"name":NAME,"namespace":NS},"status":{"phase":PHASE},"apiVersion":"v1",
 * "kind":"Pod"} with its runs marked as lib/model/keep.c marks a Pod's. */
static cJSON *marked_pod(const char *name, const char *ns, const char *phase)
{
    static const char *const root[] = { "status", "apiVersion", "kind", NULL };
    static const char *const meta[] = { "namespace", NULL };
    char text[512];
    cJSON *o;

    snprintf(text, sizeof(text),
             "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"status\":{\"phase\":\"%s\"},"
             "\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"}}", phase, ns, name);
    assert_non_null(o = cJSON_Parse(text));
    dd_json_tail(cJSON_GetObjectItemCaseSensitive(o, "metadata"), meta);
    dd_json_tail(o, root);
    return o;
}

/* got reads as want through cJSON's readers (next and child: the prev links of a run held
 * are those of its own list) and prints the same. */
static void same_reading(const cJSON *want, const cJSON *got)
{
    char *pw = cJSON_PrintUnformatted(want), *pg = cJSON_PrintUnformatted(got);

    assert_string_equal(pw, pg);
    assert_true(cJSON_Compare(want, got, 1));
    free(pw);
    free(pg);
}

static int in_range(const void *p, const cJSON *block)
{
    return (const char *)p >= (const char *)block &&
           (const char *)p < (const char *)block + malloc_usable_size((void *)block);
}

/* dd_json_tail moves the named members last, in order; dd_json_pack then takes the longest
 * marked run of last members held (from its second sighting) instead of copying it, and the
 * tree reads and prints as before; cJSON_Delete of one packed tree leaves the held run to
 * the others (the ASan run finds a bad free or a leak). */
static void test_pack_tails(void **state)
{
    static const char *const none[] = { "absent", NULL };
    cJSON *o[4], *p[4], *want[4], *st;
    char *pw, *pp;
    size_t i;

    (void)state;
    o[0] = marked_pod("a", "ns1", "Pending");
    pw = cJSON_PrintUnformatted(o[0]);
    assert_string_equal(pw, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\"},"
                            "\"status\":{\"phase\":\"Pending\"},\"apiVersion\":\"v1\","
                            "\"kind\":\"Pod\"}");
    dd_json_tail(o[0], none); /* nothing named: nothing moves */
    pp = cJSON_PrintUnformatted(o[0]);
    assert_string_equal(pp, pw);
    free(pw);
    free(pp);
    o[1] = marked_pod("b", "ns1", "Pending");
    o[2] = marked_pod("c", "ns1", "Pending");
    o[3] = marked_pod("d", "ns2", "Running");
    for (i = 0; i < 4; i++) {
        assert_non_null(want[i] = cJSON_Duplicate(o[i], 1));
        p[i] = dd_json_pack(o[i]);
        assert_ptr_not_equal(p[i], o[i]);
        same_reading(want[i], p[i]);
    }
    /* The first of its kind copies its run; the second on holds it: from status on for the
     * Pending pods, from apiVersion on for the Running one, whose status is its own. */
    st = cJSON_GetObjectItemCaseSensitive(p[0], "status");
    assert_true(in_range(st, p[0]));
    st = cJSON_GetObjectItemCaseSensitive(p[1], "status");
    assert_false(in_range(st, p[1]));
    assert_ptr_equal(st, cJSON_GetObjectItemCaseSensitive(p[2], "status"));
    st = cJSON_GetObjectItemCaseSensitive(p[3], "status");
    assert_true(in_range(st, p[3]));
    assert_false(in_range(st->next, p[3]));
    assert_string_equal(st->next->valuestring, "v1");
    /* The namespace is a run of its own: ns1's held after its first sighting, not ns2's. */
    assert_ptr_equal(cJSON_GetObjectItemCaseSensitive(p[1]->child, "namespace"),
                     cJSON_GetObjectItemCaseSensitive(p[2]->child, "namespace"));
    assert_true(in_range(cJSON_GetObjectItemCaseSensitive(p[3]->child, "namespace"), p[3]));
    /* A first member is never a run held: the list would be dd_json_share's. */
    assert_true(in_range(p[1]->child, p[1]));
    assert_true(in_range(p[1]->child->child, p[1]));
    cJSON_Delete(p[1]);
    same_reading(want[2], p[2]);
    for (i = 0; i < 4; i++) {
        if (i != 1)
            cJSON_Delete(p[i]);
        cJSON_Delete(want[i]);
    }
}

/* All lists held take at most 8 MiB: distinct lists of 3,700 bytes (20 nodes, 20 strings of
 * 120 characters), each seen twice, are held until the next would pass it.  Fills the
 * process's table, so it runs last. */
static void test_share_cap(void **state)
{
    const size_t size = 20 * sizeof(cJSON) + 20 * 121, cap = (size_t)8 << 20;
    size_t held = 0, tried, i, j;
    char text[122];

    (void)state;
    for (tried = 0; tried < cap / size + 100; tried++) {
        cJSON *o[2];
        for (j = 0; j < 2; j++) {
            assert_non_null(o[j] = cJSON_CreateObject());
            cJSON *l = cJSON_AddArrayToObject(o[j], "l");
            for (i = 0; i < 20; i++) {
                snprintf(text, sizeof(text), "%08zu-%0111zu", tried, i);
                cJSON_AddItemToArray(l, cJSON_CreateString(text));
            }
            dd_json_share(cJSON_GetObjectItemCaseSensitive(o[j], "l"));
        }
        held += !!(cJSON_GetObjectItemCaseSensitive(o[1], "l")->type & cJSON_IsReference);
        cJSON_Delete(o[0]);
        cJSON_Delete(o[1]);
    }
    /* test_share_lists held a few small lists before. */
    assert_true(held * size <= cap);
    assert_true(held * size > cap - 64 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_lists),
        cmocka_unit_test(test_differential_snippets),
        cmocka_unit_test(test_differential_files),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_strings_across_chunks),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_string_bytes_at_every_offset),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_max_bytes),
        cmocka_unit_test(test_skip_key),
        cmocka_unit_test(test_add_and_cjson_readers),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_pack_shared),
        cmocka_unit_test(test_pack_tails),
        cmocka_unit_test(test_share_cap),
    };

    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
