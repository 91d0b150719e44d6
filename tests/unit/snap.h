/*
 * snap.h - builds a model from a JSON array of Kubernetes objects, for unit
 * tests of the model, RBAC, quota and rules (no files, no YAML).
 */
#ifndef DD_TEST_SNAP_H
#define DD_TEST_SNAP_H

#include "harness.h"

#include "model/dra.h"
#include "rules/rules.h"

struct snap {
    cJSON *root;
    struct dra_model m;
    struct dd_findings f;
};

/* Like snap_load, with runtime facts as lint's --containerd-config gives them (cri may be NULL). */
static inline void snap_load_cri(struct snap *s, const char *json, const struct cri_config *cri)
{
    const cJSON *it;

    memset(s, 0, sizeof(*s));
    s->root = cJSON_Parse(json);
    if (!s->root)
        fail_msg("bad test JSON near: %.40s", cJSON_GetErrorPtr());
    dra_model_init(&s->m, NULL, NULL);
    cJSON_ArrayForEach(it, s->root)
        assert_int_equal(dra_model_add(&s->m, it, "test.yaml", 1), DD_OK);
    s->m.cri = cri;
    assert_int_equal(dra_model_finish(&s->m), DD_OK);
}

static inline void snap_load(struct snap *s, const char *json)
{
    snap_load_cri(s, json, NULL);
}

/* Runs every rule; returns how many findings have code (all when code is NULL). */
static inline size_t snap_run(struct snap *s, const struct rule_options *opt, const char *code)
{
    size_t i, n = 0;

    dd_findings_release(&s->f);
    assert_int_equal(dd_rules_run(&s->m, opt, &s->f), 0);
    for (i = 0; i < s->f.n; i++)
        if (!code || !strcmp(s->f.v[i].code, code))
            n++;
    return n;
}

/* The first finding with code, or fails the test. */
static inline const struct dd_finding *snap_get(const struct snap *s, const char *code)
{
    size_t i;

    for (i = 0; i < s->f.n; i++)
        if (!strcmp(s->f.v[i].code, code))
            return &s->f.v[i];
    fail_msg("no %s finding", code);
    return NULL;
}

static inline void snap_free(struct snap *s)
{
    dd_findings_release(&s->f);
    dra_model_release(&s->m);
    cJSON_Delete(s->root);
}

#endif
