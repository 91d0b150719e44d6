/*
 * test_yaml.c - the YAML reader's fast path against libyaml: every test
 * input and seed manifest, and tricky snippets, read both ways must give the
 * same documents, trees, positions and errors (tests/fuzz/fuzz_yaml_diff.c
 * does the same with generated inputs).  The snippets also check that the
 * fast path itself read them, so the comparison is not libyaml against
 * libyaml.  Every input is also read a third time with skimming, which may
 * only replace documents it is allowed to skip by a "skipped" report, and
 * both ways again into an arena (struct ydoc_arena), which must hold the same
 * trees and positions even when every other document is dropped.
 */
#include "harness.h"

#include <ftw.h>
#include <math.h>

#include "formats/yaml.h"

struct rec {
    int is_doc;  /* 0 error, 1 document, 2 skimmed document */
    cJSON *root; /* owned */
    int *lc;     /* line, col per node in pre-order; owned */
    size_t n;
    struct dd_err err;
};

struct log {
    struct rec r[256];
    size_t n;
};

static size_t count_nodes(const cJSON *node)
{
    size_t n = 1;
    const cJSON *c;

    for (c = node->child; c; c = c->next)
        n += count_nodes(c);
    return n;
}

/* Both readers record positions in pre-order; anything else fails here. */
static void collect(const cJSON *node, const struct ydoc_pos *pos, size_t npos, size_t *k, int *lc)
{
    const cJSON *c;

    assert_true(*k < npos);
    assert_ptr_equal(pos[*k].node, node);
    lc[2 * *k] = pos[*k].line;
    lc[2 * *k + 1] = pos[*k].col;
    (*k)++;
    for (c = node->child; c; c = c->next)
        collect(c, pos, npos, k, lc);
}

static enum dd_rc on_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    struct log *lg = ctx;
    struct rec *r;
    size_t k = 0;

    assert_true(lg->n < sizeof(lg->r) / sizeof(lg->r[0]));
    r = &lg->r[lg->n++];
    memset(r, 0, sizeof(*r));
    r->is_doc = 1;
    r->root = root;
    if (!root) {
        assert_int_equal(npos, 0);
        return DD_OK;
    }
    r->n = count_nodes(root);
    assert_int_equal(r->n, npos);
    r->lc = malloc(2 * r->n * sizeof(int));
    assert_non_null(r->lc);
    collect(root, pos, npos, &k, r->lc);
    return DD_OK;
}

static enum dd_rc on_err(void *ctx, const struct dd_err *err)
{
    struct log *lg = ctx;

    assert_true(lg->n < sizeof(lg->r) / sizeof(lg->r[0]));
    memset(&lg->r[lg->n], 0, sizeof(lg->r[0]));
    lg->r[lg->n++].err = *err;
    return DD_OK;
}

/* The skimming rule of these tests: kinds not starting with 'K', unless a key "claims" occurs. */
static int skim_skip(void *ctx, const char *api_version, const char *kind)
{
    (void)ctx;
    (void)api_version;
    return kind[0] != 'K';
}

static enum dd_rc skim_skipped(void *ctx)
{
    struct log *lg = ctx;

    assert_true(lg->n < sizeof(lg->r) / sizeof(lg->r[0]));
    memset(&lg->r[lg->n], 0, sizeof(lg->r[0]));
    lg->r[lg->n++].is_doc = 2;
    return DD_OK;
}

static int has_key(const cJSON *node, const char *key)
{
    const cJSON *c;

    for (c = node->child; c; c = c->next)
        if ((c->string && strcmp(c->string, key) == 0) || has_key(c, key))
            return 1;
    return 0;
}

/* May a skimming reader report this document (as built without skimming) as skipped? */
static int skippable(const cJSON *root)
{
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(root, "apiVersion");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
    size_t n;

    if (!cJSON_IsObject(root) || !cJSON_IsString(av) || !cJSON_IsString(kind))
        return 0;
    n = strlen(kind->valuestring);
    if (n >= 4 && strcmp(kind->valuestring + n - 4, "List") == 0)
        return 0;
    return skim_skip(NULL, av->valuestring, kind->valuestring) && !has_key(root, "claims");
}

static void release(struct log *lg);

static int same_tree(const cJSON *a, const cJSON *b)
{
    const cJSON *x, *y;

    if ((a->type & 0xff) != (b->type & 0xff))
        return 0;
    if ((a->string == NULL) != (b->string == NULL) || (a->string && strcmp(a->string, b->string)))
        return 0;
    if (cJSON_IsString(a) && strcmp(a->valuestring, b->valuestring))
        return 0;
    if (cJSON_IsNumber(a) && !(a->valuedouble == b->valuedouble ||
                               (isnan(a->valuedouble) && isnan(b->valuedouble))))
        return 0;
    for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
        if (!same_tree(x, y))
            return 0;
    return !x && !y;
}

/*
 * Arena reads: every other document is given back as soon as it is delivered;
 * the others are compared once the whole stream is read.
 */
struct alog {
    struct log lg; /* first: on_err takes a struct alog too */
    struct ydoc_arena *a;
    size_t ndocs;
};

static enum dd_rc on_arena_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    struct alog *al = ctx;
    struct rec *r;

    assert_null(pos);
    assert_int_equal(npos, 0);
    assert_true(al->lg.n < sizeof(al->lg.r) / sizeof(al->lg.r[0]));
    r = &al->lg.r[al->lg.n++];
    memset(r, 0, sizeof(*r));
    r->is_doc = 1;
    if (root && al->ndocs++ % 2 == 1) {
        ydoc_arena_drop(al->a);
        r->is_doc = 3;
        return DD_OK;
    }
    r->root = root;
    return DD_OK;
}

/* Every field a reader sets, and the position of every node, against a tree of its own. */
static void same_in_arena(const char *what, const struct ydoc_arena *a, const cJSON *x,
                          const cJSON *y, const int *lc, size_t *k)
{
    int line = 0, col = 0;

    if (x->type != y->type || (x->string == NULL) != (y->string == NULL) ||
        (x->string && strcmp(x->string, y->string)) ||
        (x->valuestring == NULL) != (y->valuestring == NULL) ||
        (x->valuestring && strcmp(x->valuestring, y->valuestring)) ||
        x->valueint != y->valueint ||
        !(x->valuedouble == y->valuedouble || (isnan(x->valuedouble) && isnan(y->valuedouble))))
        fail_msg("%s: node %zu differs in the arena", what, *k);
    if (!ydoc_arena_pos(a, x, &line, &col) || line != lc[2 * *k] || col != lc[2 * *k + 1])
        fail_msg("%s: node %zu: position %d:%d in the arena, not %d:%d", what, *k, line, col,
                 lc[2 * *k], lc[2 * *k + 1]);
    (*k)++;
    for (x = x->child, y = y->child; x && y; x = x->next, y = y->next)
        same_in_arena(what, a, x, y, lc, k);
    if (x || y)
        fail_msg("%s: children differ in the arena", what);
}

/* Reads text into an arena (flags as ydoc_parse_stream_ex) and compares it with ref. */
static void compare_arena(const char *what, const char *text, size_t len, unsigned flags,
                          const struct log *ref, enum dd_rc ref_rc)
{
    static struct alog al;
    struct ydoc_limits lim = { 64, 100000, 10000 };
    struct ydoc_sink sink = { &al, on_arena_doc, on_err, NULL, NULL };
    enum dd_rc rc;
    size_t i, k;

    memset(&al, 0, sizeof(al));
    assert_non_null(al.a = ydoc_arena_new());
    sink.arena = al.a;
    rc = ydoc_parse_stream_ex(text, len, &lim, &sink, flags, NULL);
    if (rc != ref_rc || al.lg.n != ref->n)
        fail_msg("%s: arena: rc %d vs %d, %zu vs %zu entries", what, rc, ref_rc, al.lg.n, ref->n);
    for (i = 0; i < al.lg.n; i++) {
        const struct rec *a = &al.lg.r[i], *b = &ref->r[i];
        if ((a->is_doc != 0) != (b->is_doc != 0))
            fail_msg("%s: arena: entry %zu: document vs error", what, i);
        if (!a->is_doc && (a->err.line != b->err.line || a->err.col != b->err.col ||
                           a->err.rc != b->err.rc || strcmp(a->err.msg, b->err.msg)))
            fail_msg("%s: arena: error %zu differs", what, i);
        if (a->is_doc != 1)
            continue;
        if ((a->root == NULL) != (b->root == NULL))
            fail_msg("%s: arena: document %zu: empty vs not", what, i);
        k = 0;
        if (a->root)
            same_in_arena(what, al.a, a->root, b->root, b->lc, &k);
        /* A node of another tree is none of the arena's. */
        if (b->root && ydoc_arena_pos(al.a, b->root, NULL, NULL))
            fail_msg("%s: arena: claims a node it does not hold", what);
    }
    for (i = 0; i < al.lg.n; i++)
        al.lg.r[i].root = NULL; /* the arena's */
    release(&al.lg);
    ydoc_arena_free(al.a);
}

static void release(struct log *lg)
{
    size_t i;

    for (i = 0; i < lg->n; i++) {
        cJSON_Delete(lg->r[i].root);
        free(lg->r[i].lc);
    }
    lg->n = 0;
}

/*
 * Reads text both ways and compares, then once more with skimming; returns
 * the fast path's counters (skimmed: from the third read).
 */
static struct ydoc_stats compare(const char *what, const char *text, size_t len)
{
    static struct log fast, slow, skim;
    struct ydoc_limits lim = { 64, 100000, 10000 };
    struct ydoc_sink sf = { &fast, on_doc, on_err, NULL, NULL }, ss = { &slow, on_doc, on_err, NULL, NULL };
    struct ydoc_sink sk = { &skim, on_doc, on_err, NULL, NULL };
    struct ydoc_skim how = { &skim, skim_skip, "claims", NULL, skim_skipped };
    struct ydoc_stats st = { 0, 0, 0 }, st2 = { 0, 0, 0 };
    enum dd_rc rf, rs, rk;
    size_t i;

    rf = ydoc_parse_stream_ex(text, len, &lim, &sf, 0, &st);
    rs = ydoc_parse_stream_ex(text, len, &lim, &ss, YDOC_LIBYAML_ONLY, NULL);
    rk = ydoc_parse_stream_skim(text, len, &lim, &sk, &how, 0, &st2);
    if (rk != rf || skim.n != fast.n)
        fail_msg("%s: skimming: rc %d vs %d, %zu vs %zu entries", what, rk, rf, skim.n, fast.n);
    for (i = 0; i < fast.n; i++) {
        const struct rec *a = &skim.r[i], *b = &fast.r[i];
        if (a->is_doc == 2) {
            if (b->is_doc != 1 || !b->root || !skippable(b->root))
                fail_msg("%s: entry %zu: skimmed, but not skippable", what, i);
            continue;
        }
        if (a->is_doc != b->is_doc ||
            (!a->is_doc && (a->err.line != b->err.line || a->err.col != b->err.col ||
                            a->err.rc != b->err.rc || strcmp(a->err.msg, b->err.msg))) ||
            (a->is_doc && ((a->root == NULL) != (b->root == NULL) ||
                           (a->root && !same_tree(a->root, b->root)) || a->n != b->n ||
                           (a->n && memcmp(a->lc, b->lc, 2 * a->n * sizeof(int))))))
            fail_msg("%s: entry %zu differs when skimming", what, i);
    }
    if (st2.fast_docs != st.fast_docs || st2.fallbacks != st.fallbacks)
        fail_msg("%s: skimming changed the counters", what);
    st.skimmed = st2.skimmed;
    release(&skim);
    if (rf != rs || fast.n != slow.n)
        fail_msg("%s: rc %d vs %d, %zu vs %zu documents and errors", what, rf, rs, fast.n, slow.n);
    for (i = 0; i < fast.n; i++) {
        const struct rec *a = &fast.r[i], *b = &slow.r[i];
        if (a->is_doc != b->is_doc)
            fail_msg("%s: entry %zu: document vs error", what, i);
        if (!a->is_doc) {
            if (a->err.line != b->err.line || a->err.col != b->err.col ||
                a->err.rc != b->err.rc || strcmp(a->err.msg, b->err.msg))
                fail_msg("%s: error %d:%d %s vs %d:%d %s", what, a->err.line, a->err.col,
                         a->err.msg, b->err.line, b->err.col, b->err.msg);
            continue;
        }
        if ((a->root == NULL) != (b->root == NULL) || (a->root && !same_tree(a->root, b->root)))
            fail_msg("%s: document %zu: trees differ", what, i);
        if (a->n != b->n || (a->n && memcmp(a->lc, b->lc, 2 * a->n * sizeof(int))))
            fail_msg("%s: document %zu: positions differ", what, i);
    }
    compare_arena(what, text, len, 0, &fast, rf);
    compare_arena(what, text, len, YDOC_LIBYAML_ONLY, &slow, rs);
    release(&fast);
    release(&slow);
    return st;
}

static size_t nfiles;

static int compare_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    char *text;

    (void)st;
    (void)ftw;
    if (flag != FTW_F)
        return 0;
    text = test_read_file(path);
    compare(path, text, strlen(text));
    free(text);
    nfiles++;
    return 0;
}

static void test_all_test_inputs(void **state)
{
    (void)state;
    nfiles = 0;
    assert_int_equal(nftw("tests/data/lint", compare_file, 16, FTW_PHYS), 0);
    assert_int_equal(nftw("tests/fuzz/corpus/manifest", compare_file, 16, FTW_PHYS), 0);
    assert_int_equal(nftw("tests/fuzz/corpus/yaml_diff", compare_file, 16, FTW_PHYS), 0);
    assert_true(nfiles > 50);
}

/* Snippets the fast path must read itself. */
static void test_fast_snippets(void **state)
{
    static const char *const cases[] = {
        "key: 'it''s'\n",
        "key: \"a\\\"b\"\n",
        "key: a # comment\n",
        "key: \"a # not comment\"\n",
        "url: http://x:80/y\n",
        "- - nested\n  - two\n- x\n",
        "key: |-\n  line1\n  line2\n",
        "key: |\n  line1\n\n  line2\n\n\nnext: 1\n",
        "key: |+\n  keep\n\n",
        "key: >\n  folded\n  text\n\n  para\n   more\n",
        "key: >-\n  a\n  b\n",
        "key:\n",
        "a:\nb: 1\n",
        "key: ~\n",
        "on: yes\noff: no\ny: n\n",
        "mode: 0644\n",
        "a: 1.0\nb: 1e3\nc: 0x1F\nd: \"123\"\ne: -.inf\nf: .NaN\ng: 1_000\nh: 0b11\n",
        "a: b   \nc:   \n  - d   \n",
        "apiVersion: v1\r\nkind: A\r\ndata:\r\n  x: |\r\n    y\r\n",
        "a: no newline at the end",
        "a: |\n  no newline at the end",
        "list:\n- a\n- b\nafter: 1\n",
        "list:\n  - a\n  - b\nafter: 1\n",
        "- name: x\n  ports:\n  - 80\n  - 443\n  env: []\n- name: y\n",
        "-\n  a: 1\n-\n- \"q\"\n",
        "{\"a\": [1, 2, {\"b\": null}], \"c\": \"caf\\u00e9\", \"d\": {}}\n",
        "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    false\n  ]\n}\n",
        "a: [x, 'y', 1]\nb: {}\nc: {k: v, l: [1]}\n",
        "---\n---\na: 1\n...\n---\n# comment only\n",
        "\"quoted key\": 1\n'single': 2\n",
        "k\xc3\xa9y: v\xc3\xa4l\nother: [\xc3\xa9, b]\n",
        "expression: device.driver == 'gpu.example.com' && device.attributes['x'].model == 'y'\n",
        "a:\n  # comment\n  b: 1 # trailing\n\n  c: 2\n",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ydoc_stats st = compare(cases[i], cases[i], strlen(cases[i]));
        if (st.fallbacks != 0)
            fail_msg("fast path gave up on: %s", cases[i]);
    }
}

/* Snippets the fast path leaves to libyaml, alone or around fast documents. */
static void test_fallback_snippets(void **state)
{
    static const char *const cases[] = {
        "a: &x 1\nb: *x\n---\nc: 1\n",
        "a: !!str 1\n",
        "%YAML 1.1\n---\na: 1\n",
        "a: multi\n  line\n---\nb: 1\n",
        "a: \"multi\n  line\"\n",
        "? complex\n: key\n",
        "a:\n\tb: 1\n",
        "a: 1\na: 2\n---\nb: 1\n",
        "a: 1\n...\ngarbage\n---\nb: 2\n",
        "a: [1, 2\n---\nb: 1\n",
        "--- 42 spec [a, b], kind: Flow, metadata: {name: f}\n",
        "a: \"\\ud83d\"\n", /* a lone surrogate */
        "a: \"\\x41\\0\"\n",
        "a: |2\n   x\n",
        "key: - a\n",
        "a: b: c\n",
        "\xef\xbb\xbf" "a: 1\n",
        "a: 1\r---\r\nb: 2\n",
        "~\n",
        "...\n",
        "a:\n  b: 1\n c: 2\n",
        "[a, b]: c\n",
        "a: 'unterminated\n",
        "a: [1,]\n",
        "a: {b}\n",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        compare(cases[i], cases[i], strlen(cases[i]));
}

/* Documents skimming must skip (the compare() oracle checks that it may). */
static void test_skim_snippets(void **state)
{
    static const struct {
        const char *text;
        size_t skimmed;
    } cases[] = {
        { "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n  c: |\n    x\n", 1 },
        { "kind: Service\napiVersion: v1\nspec:\n  ports:\n  - port: 80\n    name: \"h\"\n", 1 },
        { "apiVersion: v1\nkind: Keep\n---\napiVersion: v1\nkind: Skip\n---\nkind: Skip\n", 1 },
        { "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n"
          "      claims: []\n---\napiVersion: apps/v1\nkind: Deployment\nspec: {a: [1, {b: c}]}\n", 1 },
        { "apiVersion: v1\nkind: ConfigMap\na: 1\na: 2\n---\napiVersion: v1\nkind: C\n", 1 },
        { "apiVersion: v1\nkind: ConfigMap\nx: &a 1\n---\napiVersion: v1\nkind: C\n", 1 },
        { "apiVersion: v1\nkind: C\n---\napiVersion: v1\nkind: C\nbad: [\n---\nkind: C\napiVersion: v1\n", 2 },
        { "apiVersion: v1\nkind: \"C\"\n", 0 },
        { "apiVersion: 1\nkind: C\n", 0 },
        { "apiVersion: v1\nkind: C\n\"q\": 1\n", 0 },
        { "apiVersion: v1\nkind: ItemList\nitems: []\n", 0 },
        { "{\"apiVersion\": \"v1\", \"kind\": \"C\"}\n", 0 },
        { "apiVersion: v1\nkind: C\napiVersion: v2\n", 0 },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ydoc_stats st = compare(cases[i].text, cases[i].text, strlen(cases[i].text));
        if (st.skimmed != cases[i].skimmed)
            fail_msg("skimmed %zu, not %zu, documents of: %s", st.skimmed, cases[i].skimmed,
                     cases[i].text);
    }
}

/* Exact values and positions for a few cases, beyond agreeing with libyaml. */
static void test_values(void **state)
{
    static struct log lg;
    static const char text[] = "a: 'it''s'\n"        /* 1 */
                               "b: \"a\\\"b\"\n"      /* 2 */
                               "c: x # y\n"           /* 3 */
                               "d:\n"                 /* 4 */
                               "e: |-\n"              /* 5 */
                               "  l1\n"               /* 6 */
                               "  l2\n"               /* 7 */
                               "f: 0644\n"            /* 8 */
                               "g:\n"                 /* 9 */
                               "- 1\n"                /* 10 */
                               "h: \"\\ud83d\\ude00\"\n" /* 11: a JSON surrogate pair */
                               "i: 9007199254740993\n"; /* 12: past a double's 53 bits */
    struct ydoc_limits lim = { 64, 10, 10 };
    struct ydoc_sink sink = { &lg, on_doc, on_err, NULL, NULL };
    const cJSON *root;

    (void)state;
    assert_int_equal(ydoc_parse_stream(text, strlen(text), &lim, &sink), DD_OK);
    assert_int_equal(lg.n, 1);
    root = lg.r[0].root;
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "a")->valuestring, "it's");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "b")->valuestring, "a\"b");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "c")->valuestring, "x");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "d")));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "e")->valuestring, "l1\nl2");
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "f")->valuedouble == 420.0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "h")->valuestring,
                        "\xf0\x9f\x98\x80");
    /* An integer keeps its exact digits beside the double. */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "i")->valuestring,
                        "9007199254740993");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "f")->valuestring, "420");
    /* Pre-order: root, a, b, c, d (null after the colon), e, f, g, g[0], h, i. */
    assert_int_equal(lg.r[0].n, 11);
    assert_int_equal(lg.r[0].lc[2 * 4], 4);
    assert_int_equal(lg.r[0].lc[2 * 4 + 1], 3);
    assert_int_equal(lg.r[0].lc[2 * 5], 5);
    assert_int_equal(lg.r[0].lc[2 * 5 + 1], 4);
    assert_int_equal(lg.r[0].lc[2 * 7], 10);
    assert_int_equal(lg.r[0].lc[2 * 7 + 1], 1);
    release(&lg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_test_inputs),
        cmocka_unit_test(test_fast_snippets),
        cmocka_unit_test(test_fallback_snippets),
        cmocka_unit_test(test_skim_snippets),
        cmocka_unit_test(test_values),
    };

    return cmocka_run_group_tests_name("yaml", tests, NULL, NULL);
}
