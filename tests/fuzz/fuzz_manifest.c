/*
 * fuzz_manifest.c - libFuzzer entry for the manifest loader (lib/formats/yaml.c and
 * lib/formats/manifest.c): arbitrary bytes through mf_load_buffer with small limits,
 * then a position lookup for every node of every tree, then release.
 *
 * A first byte 0x01..0x07 (never the start of real YAML) picks tighter
 * limits and is skipped, so the seed corpus can be plain manifests while the
 * fuzzer still reaches every limit error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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
    return 0;
}
