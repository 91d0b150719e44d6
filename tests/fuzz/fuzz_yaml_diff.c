/*
 * fuzz_yaml_diff.c - differential libFuzzer entry for lib/formats/yaml.c: every input
 * is read twice, by the default reader (fast path with libyaml fallback) and
 * by libyaml alone, and the two must agree exactly: the same sequence of
 * documents and errors, the same trees (types included, so 1 and "1" differ),
 * the same position for every node, the same messages and return code.
 * A third read with skimming (struct ydoc_skim) must give the same sequence
 * again, except that documents the skimming rule allows to skip may be
 * reported as skipped instead.  Both ways are read once more into an arena
 * (struct ydoc_arena), giving back every other document as it is delivered:
 * the documents kept must hold the same trees and positions at the end.
 *
 * A first byte 0x01..0x07 picks tighter limits and is skipped, as in
 * fuzz_manifest.c.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/yaml.h"

struct rec {
    int is_doc;            /* 0 error, 1 document, 2 skimmed document */
    cJSON *root;           /* documents: the tree (owned) */
    int *lc;               /* 2 ints per node, in pre-order; owned */
    size_t n;
    struct dd_err err;     /* errors */
};

struct log {
    struct rec *r;
    size_t n, cap;
};

static void fail(const char *what)
{
    fprintf(stderr, "yaml_diff mismatch: %s\n", what);
    abort();
}

static size_t count(const cJSON *node)
{
    size_t n = 1;
    const cJSON *c;

    for (c = node->child; c; c = c->next)
        n += count(c);
    return n;
}

/* Positions in pre-order; both readers record them in that order. */
static void collect(const cJSON *node, const struct ydoc_pos *pos, size_t npos, size_t *k,
                    int *lc)
{
    const cJSON *c;

    if (*k >= npos || pos[*k].node != node)
        fail("position list is not the tree in pre-order");
    lc[2 * *k] = pos[*k].line;
    lc[2 * *k + 1] = pos[*k].col;
    (*k)++;
    for (c = node->child; c; c = c->next)
        collect(c, pos, npos, k, lc);
}

static struct rec *push(struct log *lg)
{
    if (lg->n == lg->cap) {
        lg->cap = lg->cap ? lg->cap * 2 : 8;
        lg->r = realloc(lg->r, lg->cap * sizeof(*lg->r));
        if (!lg->r)
            abort();
    }
    memset(&lg->r[lg->n], 0, sizeof(lg->r[0]));
    return &lg->r[lg->n++];
}

static enum dd_rc on_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    struct rec *r = push(ctx);
    size_t k = 0;

    r->is_doc = 1;
    r->root = root;
    if (!root) {
        if (npos)
            fail("positions for an empty document");
        return DD_OK;
    }
    r->n = count(root);
    if (r->n != npos)
        fail("not one position per node");
    r->lc = malloc(2 * r->n * sizeof(int));
    if (!r->lc)
        abort();
    collect(root, pos, npos, &k, r->lc);
    return DD_OK;
}

static enum dd_rc on_err(void *ctx, const struct dd_err *err)
{
    push(ctx)->err = *err;
    return DD_OK;
}

/* Skimming rule: kinds not starting with 'K', unless a key "claims" occurs. */
static int skim_skip(void *ctx, const char *api_version, const char *kind)
{
    (void)ctx;
    (void)api_version;
    return kind[0] != 'K';
}

static enum dd_rc skim_skipped(void *ctx)
{
    push(ctx)->is_doc = 2;
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

static void release(struct log *lg)
{
    size_t i;

    for (i = 0; i < lg->n; i++) {
        cJSON_Delete(lg->r[i].root);
        free(lg->r[i].lc);
    }
    free(lg->r);
}

struct alog {
    struct log lg; /* first: on_err takes a struct alog too */
    struct ydoc_arena *a;
    size_t ndocs;
};

static enum dd_rc on_arena_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    struct alog *al = ctx;
    struct rec *r = push(&al->lg);

    if (pos || npos)
        fail("positions handed over with an arena");
    r->is_doc = 1;
    if (root && al->ndocs++ % 2 == 1) {
        ydoc_arena_drop(al->a);
        r->is_doc = 3;
        return DD_OK;
    }
    r->root = root;
    return DD_OK;
}

static void same_in_arena(const struct ydoc_arena *a, const cJSON *x, const cJSON *y,
                          const int *lc, size_t *k)
{
    int line = 0, col = 0;

    if (x->type != y->type || (x->string == NULL) != (y->string == NULL) ||
        (x->string && strcmp(x->string, y->string)) ||
        (x->valuestring == NULL) != (y->valuestring == NULL) ||
        (x->valuestring && strcmp(x->valuestring, y->valuestring)) ||
        x->valueint != y->valueint ||
        !(x->valuedouble == y->valuedouble || (isnan(x->valuedouble) && isnan(y->valuedouble))))
        fail("a node differs in the arena");
    if (!ydoc_arena_pos(a, x, &line, &col) || line != lc[2 * *k] || col != lc[2 * *k + 1])
        fail("a position differs in the arena");
    (*k)++;
    for (x = x->child, y = y->child; x && y; x = x->next, y = y->next)
        same_in_arena(a, x, y, lc, k);
    if (x || y)
        fail("children differ in the arena");
}

static void compare_arena(const uint8_t *data, size_t size, const struct ydoc_limits *lim,
                          unsigned flags, const struct log *ref, enum dd_rc ref_rc)
{
    struct alog al;
    struct ydoc_sink sink = { &al, on_arena_doc, on_err, NULL, NULL };
    enum dd_rc rc;
    size_t i, k;

    memset(&al, 0, sizeof(al));
    if (!(al.a = ydoc_arena_new()))
        abort();
    sink.arena = al.a;
    rc = ydoc_parse_stream_ex((const char *)data, size, lim, &sink, flags, NULL);
    if (rc != ref_rc || al.lg.n != ref->n)
        fail("arena: return codes or number of entries differ");
    for (i = 0; i < al.lg.n; i++) {
        const struct rec *a = &al.lg.r[i], *b = &ref->r[i];
        if ((a->is_doc != 0) != (b->is_doc != 0))
            fail("arena: a document on one side, an error on the other");
        if (!a->is_doc && (a->err.rc != b->err.rc || a->err.line != b->err.line ||
                           a->err.col != b->err.col || strcmp(a->err.msg, b->err.msg)))
            fail("arena: errors differ");
        if (a->is_doc != 1)
            continue;
        if ((a->root == NULL) != (b->root == NULL))
            fail("arena: an empty document on one side only");
        k = 0;
        if (a->root)
            same_in_arena(al.a, a->root, b->root, b->lc, &k);
        if (b->root && ydoc_arena_pos(al.a, b->root, NULL, NULL))
            fail("arena: claims a node it does not hold");
    }
    for (i = 0; i < al.lg.n; i++)
        al.lg.r[i].root = NULL; /* the arena's */
    release(&al.lg);
    ydoc_arena_free(al.a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ydoc_limits lim = { 16, 64, 200 };
    struct log fast = { 0 }, slow = { 0 }, skim = { 0 };
    struct ydoc_sink sf = { &fast, on_doc, on_err, NULL, NULL }, ss = { &slow, on_doc, on_err, NULL, NULL };
    struct ydoc_sink sk = { &skim, on_doc, on_err, NULL, NULL };
    struct ydoc_skim how = { &skim, skim_skip, "claims", NULL, skim_skipped };
    enum dd_rc rf, rs, rk;
    size_t i;

    if (size > 0 && data[0] >= 1 && data[0] <= 7) {
        if (data[0] & 1)
            lim.max_depth = 4;
        if (data[0] & 2)
            lim.max_alias_nodes = 5;
        if (data[0] & 4)
            lim.max_documents = 2;
        data++;
        size--;
    }
    rf = ydoc_parse_stream_ex((const char *)data, size, &lim, &sf, 0, NULL);
    rs = ydoc_parse_stream_ex((const char *)data, size, &lim, &ss, YDOC_LIBYAML_ONLY, NULL);
    rk = ydoc_parse_stream_skim((const char *)data, size, &lim, &sk, &how, 0, NULL);
    if (rf == DD_ENOMEM || rs == DD_ENOMEM || rk == DD_ENOMEM)
        abort();
    if (rk != rf || skim.n != fast.n)
        fail("skimming: return codes or number of entries differ");
    for (i = 0; i < fast.n; i++) {
        const struct rec *a = &skim.r[i], *b = &fast.r[i];
        if (a->is_doc == 2) {
            if (b->is_doc != 1 || !b->root || !skippable(b->root))
                fail("skimming skipped a document it must not skip");
            continue;
        }
        if (a->is_doc != b->is_doc ||
            (!a->is_doc && (a->err.rc != b->err.rc || a->err.line != b->err.line ||
                            a->err.col != b->err.col || strcmp(a->err.msg, b->err.msg))) ||
            (a->is_doc && ((a->root == NULL) != (b->root == NULL) ||
                           (a->root && !same_tree(a->root, b->root)) || a->n != b->n ||
                           (a->n && memcmp(a->lc, b->lc, 2 * a->n * sizeof(int))))))
            fail("skimming changed a document or an error");
    }
    if (rf != rs)
        fail("return codes differ");
    if (fast.n != slow.n)
        fail("number of documents and errors differs");
    for (i = 0; i < fast.n; i++) {
        const struct rec *a = &fast.r[i], *b = &slow.r[i];
        if (a->is_doc != b->is_doc)
            fail("a document on one side, an error on the other");
        if (!a->is_doc) {
            if (a->err.rc != b->err.rc || a->err.line != b->err.line ||
                a->err.col != b->err.col || strcmp(a->err.msg, b->err.msg))
                fail("errors differ");
            continue;
        }
        if ((a->root == NULL) != (b->root == NULL) || (a->root && !same_tree(a->root, b->root)))
            fail("trees differ");
        if (a->n != b->n || (a->n && memcmp(a->lc, b->lc, 2 * a->n * sizeof(int))))
            fail("positions differ");
    }
    compare_arena(data, size, &lim, 0, &fast, rf);
    compare_arena(data, size, &lim, YDOC_LIBYAML_ONLY, &slow, rs);
    release(&fast);
    release(&slow);
    release(&skim);
    return 0;
}
