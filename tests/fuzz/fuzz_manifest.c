/*
 * fuzz_manifest.c - libFuzzer entry for the manifest loader (lib/formats/yaml.c and
 * lib/formats/manifest.c): arbitrary bytes through mf_load_buffer with small limits,
 * then a position lookup for every node of every tree, then release.  The same
 * bytes are loaded again into a compact set (with a keep that drops every other
 * object) and into a plain one with that keep: objects, trees, positions and
 * diagnostics must be the same.
 *
 * A first byte 0x01..0x07 (never the start of real YAML) picks tighter
 * limits and is skipped, so the seed corpus can be plain manifests while the
 * fuzzer still reaches every limit error.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/manifest.h"

static void visit(const struct mf_set *set, const cJSON *node, int depth)
{
    const cJSON *c;
    int line = 0, col = 0;

    /* Every node the loader made must have a position. */
    if (!mf_pos(set, node, &line, &col) || line < 1 || col < 1)
        abort();
    if (depth > 64)
        abort(); /* the depth limit must hold for copies made by aliases too */
    for (c = node->child; c; c = c->next)
        visit(set, c, depth + 1);
}

static int keep_odd(void *ctx, const cJSON *obj)
{
    (void)obj;
    return ++*(size_t *)ctx % 2;
}

static int same_node(const struct mf_set *a, const cJSON *x, const struct mf_set *b,
                     const cJSON *y)
{
    int l1 = 0, c1 = 0, l2 = 0, c2 = 0;

    if (x->type != y->type || (x->string == NULL) != (y->string == NULL) ||
        (x->string && strcmp(x->string, y->string)) ||
        (x->valuestring == NULL) != (y->valuestring == NULL) ||
        (x->valuestring && strcmp(x->valuestring, y->valuestring)) ||
        x->valueint != y->valueint ||
        !(x->valuedouble == y->valuedouble || (isnan(x->valuedouble) && isnan(y->valuedouble))))
        return 0;
    if (!mf_pos(a, x, &l1, &c1) || !mf_pos(b, y, &l2, &c2) || l1 != l2 || c1 != c2)
        return 0;
    for (x = x->child, y = y->child; x && y; x = x->next, y = y->next)
        if (!same_node(a, x, b, y))
            return 0;
    return !x && !y;
}

static void compare_compact(const uint8_t *data, size_t size, const struct mf_limits *lim)
{
    struct mf_set a = MF_SET_INIT, b = MF_SET_INIT;
    size_t ka = 0, kb = 0, i;
    char x[256], y[256];

    a.keep = b.keep = keep_odd;
    a.keep_ctx = &ka;
    b.keep_ctx = &kb;
    b.compact = 1;
    if (mf_load_buffer(&a, "fuzz.yaml", (const char *)data, size, lim) !=
        mf_load_buffer(&b, "fuzz.yaml", (const char *)data, size, lim))
        abort();
    if (a.n != b.n || a.nfiltered != b.nfiltered || a.ndiags != b.ndiags)
        abort();
    for (i = 0; i < a.ndiags; i++)
        if (strcmp(mf_diag_format(&a.diags[i], x, sizeof(x)),
                   mf_diag_format(&b.diags[i], y, sizeof(y))))
            abort();
    for (i = 0; i < a.n; i++)
        if (a.objs[i].line != b.objs[i].line || a.objs[i].col != b.objs[i].col ||
            strcmp(a.objs[i].name, b.objs[i].name) ||
            !same_node(&a, a.objs[i].json, &b, b.objs[i].json))
            abort();
    mf_set_release(&a);
    mf_set_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mf_set set = MF_SET_INIT;
    struct mf_limits lim = { 1 << 20, 16, 64, 200 };
    char buf[256];
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
    if (mf_load_buffer(&set, "fuzz.yaml", (const char *)data, size, &lim) == DD_ENOMEM)
        abort();
    for (i = 0; i < set.nroots; i++)
        visit(&set, set.roots[i], 1);
    for (i = 0; i < set.n; i++) {
        if (!set.objs[i].api_version || !set.objs[i].kind || !set.objs[i].namespace_ ||
            !set.objs[i].name || !mf_pos(&set, set.objs[i].json, NULL, NULL))
            abort();
    }
    for (i = 0; i < set.ndiags; i++)
        mf_diag_format(&set.diags[i], buf, sizeof(buf));
    mf_set_release(&set);
    compare_compact(data, size, &lim);
    return 0;
}
