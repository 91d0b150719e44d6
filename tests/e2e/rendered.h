/*
 * rendered.h - what e2e_deploy and e2e_helm do with rendered manifests (a struct mf_set):
 * look objects up, and write a chosen few as one List for kubectl.  Included after
 * harness.h and formats/manifest.h, by one .c file each (static definitions).
 */
#ifndef DD_E2E_RENDERED_H
#define DD_E2E_RENDERED_H

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The object of kind and name in set (borrowed), or NULL. */
static __attribute__((unused)) const cJSON *find(const struct mf_set *set, const char *kind,
                                                 const char *name)
{
    size_t i;

    for (i = 0; name && i < set->n; i++)
        if (!strcmp(set->objs[i].kind, kind) && !strcmp(set->objs[i].name, name))
            return set->objs[i].json;
    return NULL;
}

/* find(), failing the test when it is not there. */
static __attribute__((unused)) const cJSON *need(const struct mf_set *set, const char *kind,
                                                 const char *name)
{
    const cJSON *o = find(set, kind, name);

    if (!o)
        fail_msg("no %s %s in the rendered manifests", kind, name ? name : "(unnamed)");
    return o;
}

/* 1 when the JSON array arr holds the string s. */
static __attribute__((unused)) int str_in(const cJSON *arr, const char *s)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, arr)
        if (cJSON_IsString(e) && !strcmp(e->valuestring, s))
            return 1;
    return 0;
}

/* Writes the objects of set that keep() accepts as a List to dir/name (its path in path);
 * returns how many. */
static __attribute__((unused)) size_t write_list(const struct mf_set *set, const char *dir,
                                                 const char *name,
                                                 int (*keep)(const struct mf_object *),
                                                 char *path, size_t size)
{
    cJSON *list = cJSON_CreateObject(), *items;
    char *text;
    size_t i, n = 0;
    FILE *f;

    cJSON_AddStringToObject(list, "apiVersion", "v1");
    cJSON_AddStringToObject(list, "kind", "List");
    items = cJSON_AddArrayToObject(list, "items");
    for (i = 0; i < set->n; i++)
        if (keep(&set->objs[i])) {
            cJSON_AddItemToArray(items, cJSON_Duplicate(set->objs[i].json, 1));
            n++;
        }
    text = cJSON_Print(list);
    assert_non_null(text);
    snprintf(path, size, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(list);
    return n;
}

#endif
