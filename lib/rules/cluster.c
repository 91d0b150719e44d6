#include "rules/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel.h"
#include "formats/json.h"

const struct cluster_resource cluster_resources[] = {
    { "", "v1", "pods", NULL },
    { "", "v1", "nodes", NULL },
    { "", "v1", "namespaces", NULL },
    { "", "v1", "resourcequotas", NULL },
    { "", "v1", "events", "fieldSelector=involvedObject.kind%3DPod" },
    { "resource.k8s.io", "v1", "deviceclasses", NULL },
    { "resource.k8s.io", "v1", "resourceclaims", NULL },
    { "resource.k8s.io", "v1", "resourceclaimtemplates", NULL },
    { "resource.k8s.io", "v1", "resourceslices", NULL },
    { "apps", "v1", "daemonsets", NULL },
    { "rbac.authorization.k8s.io", "v1", "clusterroles", NULL },
    { "rbac.authorization.k8s.io", "v1", "clusterrolebindings", NULL },
};
const size_t cluster_nresources = sizeof(cluster_resources) / sizeof(cluster_resources[0]);

int cluster_gates_from_metrics(const char *text, struct kv_gates *g)
{
    static const char metric[] = "kubernetes_feature_enabled{";
    const char *line;
    int n = 0;

    for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *end, *name, *v;
        char buf[96];
        size_t len;
        int gi;

        if (strncmp(line, metric, sizeof(metric) - 1))
            continue;
        end = strchr(line, '}');
        name = strstr(line, "name=\"");
        if (!end || !name || name > end)
            continue;
        name += 6;
        len = strcspn(name, "\"");
        if (len >= sizeof(buf))
            continue;
        memcpy(buf, name, len);
        buf[len] = '\0';
        for (v = end + 1; *v == ' '; v++)
            ;
        if ((gi = kv_gate_lookup(buf)) < 0 || (*v != '0' && *v != '1'))
            continue;
        kv_gates_put(g, (enum kv_gate)gi, *v == '1', KV_FROM_SERVER);
        n++;
    }
    return n;
}

/* The resource.k8s.io versions the server lists, into ci->served; 1 when v1 is one. */
static int discover_versions(struct kube_client *c, struct cluster_info *ci)
{
    static const char *const order[] = { "v1", "v1beta2", "v1alpha3" };
    struct kube_status st;
    struct dd_err err;
    cJSON *group = NULL, *v;
    size_t len = 0, i;
    char path[128];

    ci->served[0] = '\0';
    dd_err_clear(&err);
    if (kube_get(c, "/apis/resource.k8s.io", &group, &st, &err) != DD_OK)
        return 0;
    cJSON_ArrayForEach(v, dd_json_arr(group, "versions", NULL)) {
        const char *ver = dd_json_str(v, "version", NULL);
        if (ver && len + strlen(ver) + 2 < sizeof(ci->served))
            len += (size_t)snprintf(ci->served + len, sizeof(ci->served) - len, "%s%s",
                                    len ? " " : "", ver);
    }
    cJSON_Delete(group);
    /* DeviceTaintRules: in the newest served version that has them. */
    for (i = 0; i < sizeof(order) / sizeof(order[0]) && !ci->taint_rules[0]; i++) {
        cJSON *list = NULL, *r;
        if (!strstr(ci->served, order[i]))
            continue;
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/%s", order[i]);
        if (kube_get(c, path, &list, &st, &err) != DD_OK)
            continue;
        cJSON_ArrayForEach(r, dd_json_arr(list, "resources", NULL))
            if (dd_json_str(r, "name", NULL) && !strcmp(dd_json_str(r, "name", NULL),
                                                        "devicetaintrules"))
                snprintf(ci->taint_rules, sizeof(ci->taint_rules), "%s", order[i]);
        cJSON_Delete(list);
    }
    for (i = 0; ci->served[i]; i += strcspn(ci->served + i, " ") + (ci->served[i] != '\0'))
        if (!strncmp(ci->served + i, "v1", 2) && (ci->served[i + 2] == ' ' || !ci->served[i + 2]))
            return 1;
    return 0;
}

enum dd_rc cluster_discover(struct kube_client *c, const char *flags, struct cluster_info *ci,
                            struct dd_err *err)
{
    struct kube_status st;
    struct dd_err e;
    cJSON *ver = NULL;
    char *metrics = NULL;
    size_t mlen, len;
    int real = 0, n;

    memset(ci, 0, sizeof(*ci));
    dd_err_clear(&e);
    if (kube_get(c, "/version", &ver, &st, &e) == DD_OK && dd_json_str(ver, "gitVersion", NULL))
        snprintf(ci->version, sizeof(ci->version), "%s", dd_json_str(ver, "gitVersion", NULL));
    cJSON_Delete(ver);
    real = kv_minor_of(ci->version);
    ci->minor = real < KV_MIN_MINOR ? (real ? KV_MIN_MINOR : KV_DEFAULT_MINOR)
                : real > KV_MAX_MINOR ? KV_MAX_MINOR
                                      : real;
    ci->supported = discover_versions(c, ci);
    kv_gates_init(&ci->gates, ci->minor);
    if (kube_get_text(c, "/metrics", &metrics, &mlen, &st, &e) == DD_OK)
        ci->gates_known = cluster_gates_from_metrics(metrics, &ci->gates) > 0;
    free(metrics);
    if (flags && kv_gates_set(&ci->gates, flags, KV_FROM_FLAG, err) != DD_OK)
        return DD_EINVAL;

    if (!ci->supported) {
        snprintf(ci->says, sizeof(ci->says),
                 "the API server (Kubernetes %s) serves %s%s%s: dra-doctor needs "
                 "resource.k8s.io/v1, Kubernetes 1.%d or later (DRA is GA from 1.34); it "
                 "diagnoses nothing until the cluster is upgraded",
                 ci->version[0] ? ci->version : "of unknown version",
                 ci->served[0] ? "resource.k8s.io " : "no resource.k8s.io API",
                 ci->served[0] ? ci->served : "", ci->served[0] ? " only" : "", KV_MIN_MINOR);
        return DD_OK;
    }
    len = (size_t)snprintf(ci->says, sizeof(ci->says), "Kubernetes %s",
                           ci->version[0] ? ci->version : "of unknown version (/version did "
                                                          "not answer)");
    if (real != ci->minor)
        len += (size_t)snprintf(ci->says + len, sizeof(ci->says) - len,
                                ", judged as 1.%d (the %s release dra-doctor knows)", ci->minor,
                                real > KV_MAX_MINOR ? "newest" : "nearest");
    len += (size_t)snprintf(ci->says + len, sizeof(ci->says) - len,
                            "; resource.k8s.io %s; DeviceTaintRules %s%s", ci->served,
                            ci->taint_rules[0] ? "served in " : "not served",
                            ci->taint_rules);
    n = 0;
    for (int g = 0; g < KV_NGATES; g++)
        n += ci->gates.from[g] == KV_FROM_FLAG;
    snprintf(ci->says + len, sizeof(ci->says) - len, "; feature gates: %s%s%s",
             ci->gates_known ? "the API server's (its kubernetes_feature_enabled metric)"
                             : "assumed to be the release's defaults (the API server's /metrics, "
                               "which tells them, cannot be read: grant get on the "
                               "nonResourceURL /metrics, or pass --feature-gates)",
             n ? ", then --feature-gates " : "", n ? flags : "");
    return DD_OK;
}

void cluster_rule_options(const struct cluster_info *ci, int stored, struct rule_options *opt)
{
    struct cel_env env;

    opt->kube_minor = ci->minor;
    opt->gates = &ci->gates;
    kv_cel_env(&ci->gates, stored, &env);
    cel_set_default_env(&env);
}

size_t cluster_extra_resources(const struct cluster_info *ci, struct cluster_resource *out,
                               size_t max)
{
    size_t n = 0;

    if (ci->taint_rules[0] && n < max)
        out[n++] = (struct cluster_resource){ "resource.k8s.io", ci->taint_rules, "devicetaintrules",
                                           NULL };
    if (n < max)
        out[n++] = (struct cluster_resource){ "", "v1", "events",
                                           "fieldSelector=reason%3DFailedCreate" };
    if (n < max)
        out[n++] = (struct cluster_resource){ "admissionregistration.k8s.io", "v1",
                                           "mutatingwebhookconfigurations", NULL };
    /* GA (admissionregistration.k8s.io/v1) from 1.36. */
    if (ci->minor >= 36 && n < max)
        out[n++] = (struct cluster_resource){ "admissionregistration.k8s.io", "v1",
                                           "mutatingadmissionpolicies", NULL };
    return n;
}

int cluster_start(const struct kube_config *cfg, const char *who, const char *flags, int stored,
                  struct cluster_info *ci, struct rule_options *ro)
{
    struct kube_client *k;
    struct dd_err err;
    int rc = 0;

    dd_err_clear(&err);
    if (!(k = kube_client_new(cfg, NULL, &err))) {
        fprintf(stderr, "dra-doctor %s: %s\n", who, err.msg);
        return -1;
    }
    if (cluster_discover(k, flags, ci, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor %s: --feature-gates: %s\n", who, err.msg);
        rc = -1;
    } else {
        fprintf(stderr, "dra-doctor %s: %s%s\n", who, ci->supported ? "" : "unsupported cluster: ",
                ci->says);
        cluster_rule_options(ci, stored, ro);
    }
    kube_client_free(k);
    return rc;
}

cJSON *cluster_list_all(struct kube_client *c, const struct cluster_resource *extra,
                        size_t nextra, struct dd_err *err)
{
    cJSON *all = cJSON_CreateArray();
    char path[256];
    size_t i;

    if (!all) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    for (i = 0; i < cluster_nresources + nextra; i++) {
        const struct cluster_resource *r = i < cluster_nresources ? &cluster_resources[i]
                                                                   : &extra[i - cluster_nresources];
        struct kube_status st;
        cJSON *items = NULL, *it;
        enum dd_rc rc;

        kube_path(path, sizeof(path), r->group, r->version, r->resource, NULL, NULL, NULL);
        rc = kube_list(c, path, r->selector, 500, &items, NULL, &st, err);
        if (rc != DD_OK && (st.http == 403 || (i >= cluster_nresources && st.http == 404))) {
            if (i < cluster_nresources)
                fprintf(stderr, "dra-doctor: note: cannot list %s (forbidden); diagnosing "
                        "without them\n", r->resource);
            dd_err_clear(err);
            continue;
        }
        if (rc != DD_OK) {
            cJSON_Delete(all);
            return NULL;
        }
        while (items && (it = cJSON_DetachItemFromArray(items, 0)))
            cJSON_AddItemToArray(all, it);
        cJSON_Delete(items);
    }
    return all;
}

/* One SubjectAccessReview: may ServiceAccount ns/sa do verb on resourceslices cluster-wide? */
static int ask_sar(struct kube_client *c, const char *ns, const char *sa, const char *verb)
{
    char body[1024];
    cJSON *out = NULL;
    int allowed;

    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
             "\"spec\":{\"user\":\"system:serviceaccount:%s:%s\",\"groups\":["
             "\"system:serviceaccounts\",\"system:serviceaccounts:%s\",\"system:authenticated\"],"
             "\"resourceAttributes\":{\"group\":\"resource.k8s.io\",\"resource\":"
             "\"resourceslices\",\"verb\":\"%s\"}}}",
             ns, sa, ns, verb);
    if (kube_request(c, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", NULL, body,
                     strlen(body), &out, NULL, NULL) != DD_OK)
        return -1;
    allowed = dd_json_true(out, "status", "allowed", NULL);
    cJSON_Delete(out);
    return allowed;
}

int cluster_sar_ask(void *ctx, const char *ns, const char *sa, const char *verb)
{
    struct cluster_sars *s = ctx;
    struct cluster_sar *e;
    size_t i;
    int a;

    for (i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].ns, ns) && !strcmp(s->v[i].sa, sa) && !strcmp(s->v[i].verb, verb))
            return s->v[i].allowed;
    if (!s->client || (a = ask_sar(s->client, ns, sa, verb)) < 0)
        return -1;
    /* Out of memory forgets the answer: it is asked again next time. */
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct cluster_sar *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return a;
        s->v = v;
        s->cap = cap;
    }
    e = &s->v[s->n];
    if (!(e->ns = strdup(ns)) || !(e->sa = strdup(sa))) {
        free(e->ns);
        return a;
    }
    e->verb = verb;
    e->allowed = a;
    s->n++;
    return a;
}

void cluster_sars_forget(struct cluster_sars *s)
{
    while (s->n) {
        s->n--;
        free(s->v[s->n].ns);
        free(s->v[s->n].sa);
    }
    free(s->v);
    s->v = NULL;
    s->cap = 0;
}
