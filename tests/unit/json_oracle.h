/*
 * json_oracle.h - cJSON as the oracle for lib/formats/json.c's arena parser, shared by
 * tests/unit/test_json.c and tests/fuzz/fuzz_json.c (header-only, static).
 */
#ifndef DD_JSON_ORACLE_H
#define DD_JSON_ORACLE_H

#include <string.h>
#include <cjson/cJSON.h>

/* cJSON as the webhook used it before the arena parser: one value, then only whitespace.
 * A new tree (cJSON_Delete it), or NULL. */
static cJSON *cjson_parse(const char *buf, size_t len)
{
    const char *end = NULL;
    cJSON *t = cJSON_ParseWithLengthOpts(buf, len, &end, 0);

    while (t && end < buf + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (t && end != buf + len) {
        cJSON_Delete(t);
        t = NULL;
    }
    return t;
}

static int oracle_same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/*
 * NULL when got reads as want field by field (type (the bits in type_mask), key, string,
 * valueint, the bits of valuedouble) with the list links cJSON relies on to append (first
 * child's prev at the last, last's next NULL); otherwise the first difference (a static
 * string).
 */
static const char *tree_diff_types(const cJSON *want, const cJSON *got, int type_mask)
{
    const cJSON *w, *g, *last = NULL;
    const char *d;

    if ((want->type & type_mask) != (got->type & type_mask))
        return "type";
    if (!oracle_same_str(want->string, got->string))
        return "key";
    if (!oracle_same_str(want->valuestring, got->valuestring))
        return "valuestring";
    if (want->valueint != got->valueint)
        return "valueint";
    if (memcmp(&want->valuedouble, &got->valuedouble, sizeof(double)))
        return "valuedouble";
    for (w = want->child, g = got->child; w && g; w = w->next, g = g->next) {
        if ((d = tree_diff_types(w, g, type_mask)))
            return d;
        if (g != got->child && g->prev != last)
            return "prev link";
        last = g;
    }
    if (w || g)
        return "number of children";
    if (got->child && got->child->prev != last)
        return "first child's prev is not the last child";
    return NULL;
}

static const char *tree_diff(const cJSON *want, const cJSON *got)
{
    return tree_diff_types(want, got, ~0);
}

/* cJSON's tree with every member named key removed, at any depth. */
static void strip(cJSON *t, const char *key)
{
    cJSON *c, *next;

    for (c = t->child; c; c = next) {
        next = c->next;
        if (cJSON_IsObject(t) && !strcmp(c->string, key))
            cJSON_Delete(cJSON_DetachItemViaPointer(t, c));
        else
            strip(c, key);
    }
}

#endif
