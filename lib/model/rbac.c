#include "model/rbac.h"

#include <stdio.h>
#include <string.h>

#include "formats/json.h"

#define STRIEQ(a, b) (strcmp((a), (b)) == 0)

/* Aggregation may nest (a role aggregating aggregated roles); the API server does not, but
 * a cycle in hand-written manifests must not recurse forever. */
#define MAX_AGGREGATION_DEPTH 4

static int list_has(const cJSON *arr, const char *want)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr)
        if (cJSON_IsString(it) && (STRIEQ(it->valuestring, want) || STRIEQ(it->valuestring, "*")))
            return 1;
    return 0;
}

static int subject_matches(const cJSON *subj, const char *bind_ns, const char *ns,
                           const char *name)
{
    const char *kind = dd_json_str(subj, "kind", NULL);
    const char *sname = dd_json_str(subj, "name", NULL);
    const char *sns = dd_json_str(subj, "namespace", NULL);
    char buf[512];

    if (!kind || !sname)
        return 0;
    if (STRIEQ(kind, "ServiceAccount"))
        /* A RoleBinding's ServiceAccount subject defaults to the binding's namespace. */
        return STRIEQ(sname, name) && STRIEQ(sns ? sns : bind_ns, ns);
    if (STRIEQ(kind, "User")) {
        snprintf(buf, sizeof(buf), "system:serviceaccount:%s:%s", ns, name);
        return STRIEQ(sname, buf);
    }
    if (STRIEQ(kind, "Group")) {
        snprintf(buf, sizeof(buf), "system:serviceaccounts:%s", ns);
        return STRIEQ(sname, "system:serviceaccounts") || STRIEQ(sname, "system:authenticated") ||
               STRIEQ(sname, buf);
    }
    return 0;
}

static const struct dra_obj *find_role(const struct dra_model *m, const char *kind,
                                       const char *ns, const char *name)
{
    size_t i;

    for (i = 0; i < m->roles.n; i++) {
        const struct dra_obj *r = &m->roles.v[i];
        if (STRIEQ(r->kind, kind) && STRIEQ(r->name, name) &&
            (STRIEQ(kind, "ClusterRole") || STRIEQ(r->ns, ns)))
            return r;
    }
    return NULL;
}

size_t rbac_sa_grants(const struct dra_model *m, const char *ns, const char *name,
                      struct rbac_grant *out, size_t max)
{
    size_t i, n = 0;

    for (i = 0; i < m->bindings.n; i++) {
        const struct dra_obj *b = &m->bindings.v[i];
        const cJSON *subj;
        const char *rkind = dd_json_str(b->json, "roleRef", "kind", NULL);
        const char *rname = dd_json_str(b->json, "roleRef", "name", NULL);
        int hit = 0;

        if (!rkind || !rname)
            continue;
        cJSON_ArrayForEach(subj, dd_json_arr(b->json, "subjects", NULL))
            hit |= subject_matches(subj, b->ns, ns, name);
        if (!hit)
            continue;
        if (n < max) {
            out[n].binding = b;
            out[n].role_kind = rkind;
            out[n].role_name = rname;
            out[n].cluster_wide = STRIEQ(b->kind, "ClusterRoleBinding");
            out[n].role = find_role(m, rkind, b->ns, rname);
        }
        n++;
    }
    return n;
}

/* 1 when every matchLabels pair of selector is among role's labels. */
static int labels_match(const cJSON *selector, const cJSON *role)
{
    const cJSON *want = dd_json_path(selector, "matchLabels", NULL), *it;
    const cJSON *have = dd_json_path(role, "metadata", "labels", NULL);

    if (!cJSON_IsObject(want) || !cJSON_GetArraySize(want))
        return 0;
    cJSON_ArrayForEach(it, want) {
        const char *v = dd_json_str(have, it->string, NULL);
        if (!cJSON_IsString(it) || !v || !STRIEQ(v, it->valuestring))
            return 0;
    }
    return 1;
}

typedef int (*rule_pred)(const cJSON *rule, const char *verb, const char *group,
                         const char *resource, const char *name);

static int any_rule(const struct dra_model *m, const struct dra_obj *role, rule_pred pred,
                    const char *verb, const char *group, const char *resource, const char *name,
                    int depth)
{
    const cJSON *rule, *sel;
    size_t i;

    cJSON_ArrayForEach(rule, dd_json_arr(role->json, "rules", NULL))
        if (pred(rule, verb, group, resource, name))
            return 1;
    if (depth >= MAX_AGGREGATION_DEPTH || !STRIEQ(role->kind, "ClusterRole"))
        return 0;
    cJSON_ArrayForEach(sel, dd_json_arr(role->json, "aggregationRule", "clusterRoleSelectors", NULL))
        for (i = 0; i < m->roles.n; i++) {
            const struct dra_obj *r = &m->roles.v[i];
            if (r != role && STRIEQ(r->kind, "ClusterRole") && labels_match(sel, r->json) &&
                any_rule(m, r, pred, verb, group, resource, name, depth + 1))
                return 1;
        }
    return 0;
}

static int rule_allows(const cJSON *rule, const char *verb, const char *group,
                       const char *resource, const char *name)
{
    const cJSON *names = dd_json_arr(rule, "resourceNames", NULL);

    /* resourceNames restrict a rule to named requests: create and collection verbs carry no name. */
    if (names && cJSON_GetArraySize(names) > 0 && (!name || !list_has(names, name)))
        return 0;
    return list_has(dd_json_arr(rule, "apiGroups", NULL), group) &&
           list_has(dd_json_arr(rule, "resources", NULL), resource) &&
           list_has(dd_json_arr(rule, "verbs", NULL), verb);
}

static int rule_mentions(const cJSON *rule, const char *verb, const char *group,
                         const char *resource, const char *name)
{
    (void)verb;
    (void)name;
    return list_has(dd_json_arr(rule, "apiGroups", NULL), group) &&
           list_has(dd_json_arr(rule, "resources", NULL), resource);
}

int rbac_role_allows(const struct dra_model *m, const struct dra_obj *role, const char *verb,
                     const char *group, const char *resource)
{
    return any_rule(m, role, rule_allows, verb, group, resource, NULL, 0);
}

int rbac_role_allows_named(const struct dra_model *m, const struct dra_obj *role,
                           const char *verb, const char *group, const char *resource,
                           const char *name)
{
    return any_rule(m, role, rule_allows, verb, group, resource, name, 0);
}

int rbac_role_mentions(const struct dra_model *m, const struct dra_obj *role, const char *group,
                       const char *resource)
{
    return any_rule(m, role, rule_mentions, NULL, group, resource, NULL, 0);
}

int rbac_sa_allows_cluster(const struct dra_model *m, const char *ns, const char *name,
                           const char *verb, const char *group, const char *resource)
{
    struct rbac_grant g[32];
    size_t i, n = rbac_sa_grants(m, ns, name, g, 32);

    for (i = 0; i < n && i < 32; i++)
        if (g[i].cluster_wide && g[i].role && STRIEQ(g[i].role_kind, "ClusterRole") &&
            rbac_role_allows(m, g[i].role, verb, group, resource))
            return 1;
    return 0;
}
