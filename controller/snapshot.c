#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "json.h"

const struct snap_resource snap_resources[] = {
    { "", "v1", "pods", NULL },
    { "", "v1", "nodes", NULL },
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
const size_t snap_nresources = sizeof(snap_resources) / sizeof(snap_resources[0]);

static const char *const sar_verbs[] = { "create", "update", "delete" };

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

/* Asks once per driver ServiceAccount; unanswered questions leave RBAC objects to decide. */
static int collect_sar(struct snapshot *s, struct kube_client *c)
{
    const struct dra_model *m = &s->m;
    size_t i, j, k, cap = m->ndrivers * 3, off = 0, need = 0;

    for (i = 0; i < m->ndrivers; i++)
        need += strlen(m->drivers[i].ds->o.ns) + strlen(m->drivers[i].ds->service_account) + 2;
    if (!cap)
        return 0;
    s->sar = calloc(cap, sizeof(*s->sar));
    s->sar_strings = malloc(need + 1);
    if (!s->sar || !s->sar_strings)
        return -1;
    for (i = 0; i < m->ndrivers; i++) {
        const char *ns = m->drivers[i].ds->o.ns, *sa = m->drivers[i].ds->service_account;
        char *pns, *psa;
        int seen = 0;
        for (j = 0; j < i; j++)
            seen |= m->drivers[j].ds == m->drivers[i].ds;
        if (seen)
            continue;
        pns = s->sar_strings + off;
        off += (size_t)snprintf(pns, need + 1 - off, "%s", ns) + 1;
        psa = s->sar_strings + off;
        off += (size_t)snprintf(psa, need + 1 - off, "%s", sa) + 1;
        for (k = 0; k < 3; k++) {
            int a = ask_sar(c, ns, sa, sar_verbs[k]);
            if (a < 0)
                continue;
            s->sar[s->nsar].ns = pns;
            s->sar[s->nsar].sa = psa;
            s->sar[s->nsar].verb = sar_verbs[k];
            s->sar[s->nsar++].allowed = a;
        }
    }
    return 0;
}

static size_t key_hash(const char *ns, const char *name)
{
    size_t h = 1469598103934665603ULL;
    const char *p;

    for (p = ns; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ '/') * 1099511628211ULL;
    for (p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/* Workers look a pod up for every key they take: index the Pods once per snapshot. */
static int index_pods(struct snapshot *s)
{
    size_t cap = 16, i;

    while (cap < 2 * s->m.npods)
        cap *= 2;
    if (!(s->pod_idx = calloc(cap, sizeof(*s->pod_idx))))
        return -1;
    s->npod_idx = cap;
    for (i = 0; i < s->m.npods; i++) {
        const struct dra_podspec *p = &s->m.pods[i];
        size_t h;
        if (strcmp(p->o.kind, "Pod"))
            continue;
        for (h = key_hash(p->o.ns, p->o.name) & (cap - 1); s->pod_idx[h]; h = (h + 1) & (cap - 1))
            ;
        s->pod_idx[h] = i + 1;
    }
    return 0;
}

struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                struct kube_client *client, const struct rule_options *opt,
                                struct dd_err *err)
{
    struct snapshot *s = calloc(1, sizeof(*s));
    const cJSON *it;
    size_t i;

    if (!s) {
        cJSON_Delete(owned);
        free(borrowed);
        dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
        return NULL;
    }
    s->objects = owned;
    s->borrowed = borrowed;
    s->nborrowed = n;
    s->refs = 1;
    dra_model_init(&s->m, NULL, NULL);
    s->m.live = 1;
    cJSON_ArrayForEach(it, owned)
        if (dra_model_add(&s->m, it, NULL, 0) != DD_OK)
            goto oom;
    for (i = 0; i < n; i++)
        if (dra_model_add(&s->m, borrowed[i], NULL, 0) != DD_OK)
            goto oom;
    if (dra_model_finish(&s->m) != DD_OK)
        goto oom;
    s->assumed = diag_assume_rejected_claims(&s->m);
    cJSON_ArrayForEach(it, s->assumed)
        if (dra_model_add(&s->m, it, NULL, 0) != DD_OK)
            goto oom;
    if (client && collect_sar(s, client))
        goto oom;
    s->m.sar = s->sar;
    s->m.nsar = s->nsar;
    if (dd_rules_run(&s->m, opt, &s->f) || index_pods(s))
        goto oom;
    return s;
oom:
    snapshot_free(s);
    dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
    return NULL;
}

cJSON *snapshot_list_all(struct kube_client *c, struct dd_err *err)
{
    cJSON *all = cJSON_CreateArray();
    char path[256];
    size_t i;

    if (!all) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    for (i = 0; i < snap_nresources; i++) {
        const struct snap_resource *r = &snap_resources[i];
        struct kube_status st;
        cJSON *items = NULL, *it;
        char *rv = NULL;
        enum dd_rc rc;

        kube_path(path, sizeof(path), r->group, r->version, r->resource, NULL, NULL, NULL);
        rc = kube_list(c, path, r->selector, 500, &items, &rv, &st, err);
        free(rv);
        if (rc != DD_OK && st.http == 403) {
            fprintf(stderr, "dra-doctor: note: cannot list %s (forbidden); diagnosing without "
                    "them\n", r->resource);
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

const struct dra_podspec *snapshot_pod(const struct snapshot *s, const char *ns, const char *name)
{
    size_t h, mask = s->npod_idx - 1;

    if (!s->npod_idx)
        return NULL;
    for (h = key_hash(ns, name) & mask; s->pod_idx[h]; h = (h + 1) & mask) {
        const struct dra_podspec *p = &s->m.pods[s->pod_idx[h] - 1];
        if (!strcmp(p->o.ns, ns) && !strcmp(p->o.name, name))
            return p;
    }
    return NULL;
}

/* Keeps only the named members of o (NULL-terminated list). */
static void keep_only(cJSON *o, const char *const *names)
{
    cJSON *it = o ? o->child : NULL, *next;
    size_t i;

    for (; it; it = next) {
        int keep = 0;
        next = it->next;
        for (i = 0; names[i] && !keep; i++)
            keep = it->string && !strcmp(it->string, names[i]);
        if (!keep)
            cJSON_Delete(cJSON_DetachItemViaPointer(o, it));
    }
}

void snapshot_trim(cJSON *obj)
{
    static const char *const pod_spec[] = { "resourceClaims", "nodeName", "serviceAccountName",
                                            "serviceAccount", "containers", NULL };
    static const char *const pod_status[] = { "phase", "containerStatuses",
                                              "resourceClaimStatuses", NULL };
    static const char *const ctr[] = { "name", NULL };
    static const char *const ctr_status[] = { "name", "state", NULL };
    static const char *const node_status[] = { "nodeInfo", NULL };
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata"), *it;
    const char *kind = dd_json_str(obj, "kind", NULL);

    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
        "kubectl.kubernetes.io/last-applied-configuration");
    if (!kind)
        return;
    /* A Pod is read for its claims, node, phase and container states (lib/dra.c, diagnose.c);
     * its containers' names only.  Thousands of pods make this most of the memory. */
    if (!strcmp(kind, "Pod")) {
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
        cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
        keep_only(spec, pod_spec);
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(spec, "containers"))
            keep_only(it, ctr);
        keep_only(status, pod_status);
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, "containerStatuses"))
            keep_only(it, ctr_status);
    } else if (!strcmp(kind, "Node")) {
        /* Only the agent's annotation and the runtime version say anything about CDI. */
        keep_only(cJSON_GetObjectItemCaseSensitive(obj, "status"), node_status);
    }
}

void snapshot_free(struct snapshot *s)
{
    if (!s)
        return;
    dd_findings_release(&s->f);
    dra_model_release(&s->m);
    cJSON_Delete(s->objects);
    free(s->borrowed);
    cJSON_Delete(s->assumed);
    free(s->sar);
    free(s->sar_strings);
    free(s->pod_idx);
    free(s);
}
