/*
 * fuzz_toml.c - libFuzzer entry for the TOML reader and the containerd view
 * of its result.  Parses the input, extracts CRI facts from whatever tree
 * comes out, exercises the lookups, and frees everything.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/cri.h"
#include "formats/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks the tree so a malformed node (bad type, dangling pointer) shows up
 * under ASan even when cri_config_from_toml does not look at it. */
static size_t walk(const struct toml_value *v, int depth)
{
    size_t n = 1, i;

    if (depth > 100000)
        abort();
    if (v->line < 1)
        abort();
    switch (v->type) {
    case TOML_STRING:
        n += strlen(v->u.s);
        break;
    case TOML_ARRAY:
        for (i = 0; i < v->u.arr.n; i++)
            n += walk(v->u.arr.items[i], depth + 1);
        break;
    case TOML_TABLE:
        for (i = 0; i < v->u.tab.n; i++) {
            n += strlen(v->u.tab.kv[i].key);
            /* Keys are unique within a table, and toml_get finds each. */
            if (toml_get(v, v->u.tab.kv[i].key) != v->u.tab.kv[i].val && v->u.tab.n < 64)
                abort();
            n += walk(v->u.tab.kv[i].val, depth + 1);
        }
        break;
    default:
        break;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dd_err err;
    struct cri_config c;
    struct toml_value *root = toml_parse((const char *)data, size, &err);

    if (!root) {
        /* Every failure carries a reason. */
        if (err.rc == DD_OK || err.msg[0] == '\0')
            abort();
        return 0;
    }
    if (err.rc != DD_OK || root->type != TOML_TABLE)
        abort();
    walk(root, 0);
    if (cri_config_from_toml(root, &c, &err) == DD_OK) {
        if (c.version < 1 || c.version > 3 || c.nspec_dirs > CRI_MAX_SPEC_DIRS)
            abort();
        if (c.nspec_dirs)
            (void)cri_config_has_spec_dir(&c, c.spec_dirs[0]);
        cri_config_release(&c);
    } else if (err.msg[0] == '\0') {
        abort();
    }
    toml_free(root);
    return 0;
}
