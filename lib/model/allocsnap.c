/*
 * allocsnap.c - the allocation snapshot and answer formats (allocsnap.h).
 */
#include "model/allocsnap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

/* Gives obj apiVersion and kind when it has none (the oracle needs neither, the model both). */
static int typed(cJSON *obj, const char *api, const char *kind)
{
    if (!cJSON_IsObject(obj))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(obj, "apiVersion") &&
        !cJSON_AddStringToObject(obj, "apiVersion", api))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(obj, "kind") && !cJSON_AddStringToObject(obj, "kind", kind))
        return -1;
    return 0;
}

enum dd_rc asnap_load(cJSON *snap, struct dra_model *m, struct alloc_options *opt,
                      struct dd_err *err)
{
    static const struct {
        const char *key, *api, *kind;
    } lists[] = {
        {"nodes", "v1", "Node"},
        {"slices", "resource.k8s.io/v1", "ResourceSlice"},
        {"classes", "resource.k8s.io/v1", "DeviceClass"},
        {"claims", "resource.k8s.io/v1", "ResourceClaim"},
    };
    cJSON *it, *pod = cJSON_GetObjectItemCaseSensitive(snap, "pod");
    size_t i;
    enum dd_rc rc;

    alloc_options_default(opt);
    if (!cJSON_IsObject(snap))
        return dd_failf(err, DD_EINVAL, "an allocation snapshot is a JSON object");
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(snap, "gates"))
        if (it->string && cJSON_IsBool(it))
            (void)alloc_gates_set(&opt->gates, it->string, cJSON_IsTrue(it));
    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(snap, lists[i].key)) {
            if (typed(it, lists[i].api, lists[i].kind))
                return dd_failf(err, DD_EINVAL, "%s: an entry is not an object", lists[i].key);
            if ((rc = dra_model_add(m, it, NULL, 0)) != DD_OK)
                return dd_failf(err, rc, "%s: %s", lists[i].key, dd_strerror(rc));
        }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(snap, "inFlight"))
        if (typed(it, "resource.k8s.io/v1", "ResourceClaim"))
            return dd_failf(err, DD_EINVAL, "inFlight: an entry is not an object");
    opt->in_flight = cJSON_GetObjectItemCaseSensitive(snap, "inFlight");
    if (!pod || typed(pod, "v1", "Pod"))
        return dd_failf(err, DD_EINVAL, "the snapshot has no pod");
    if ((rc = dra_model_add(m, pod, NULL, 0)) != DD_OK)
        return dd_failf(err, rc, "pod: %s", dd_strerror(rc));
    return DD_OK;
}

const struct dra_podspec *asnap_pod(const struct dra_model *m)
{
    size_t i;

    for (i = 0; i < m->npods; i++)
        if (!strcmp(m->pods[i]->o.kind, "Pod"))
            return m->pods[i];
    return NULL;
}

/* ---- emitting ---------------------------------------------------------------------- */

static int add_copy(cJSON *arr, const cJSON *obj)
{
    cJSON *c = cJSON_Duplicate(obj, 1);

    return c && cJSON_AddItemToArray(arr, c) ? 0 : -1;
}

static int add_gates(cJSON *snap, const struct alloc_gates *g)
{
    static const char *const names[] = {
        "DRAAdminAccess", "DRAConsumableCapacity", "DRADerivedAttributes",
        "DRADeviceBindingConditions", "DRADeviceCompatibilityGroups", "DRADeviceTaints",
        "DRAFractionalCapacityRange", "DRAListTypeAttributes", "DRAOptionalNodeOperations",
        "DRAPartitionableDevices", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus",
    };
    struct alloc_gates d, probe;
    cJSON *o = cJSON_AddObjectToObject(snap, "gates");
    size_t i;

    if (!o)
        return -1;
    alloc_gates_default(&d);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int on, dflt;
        probe = *g;
        (void)alloc_gates_set(&probe, names[i], 0);
        on = memcmp(&probe, g, sizeof(probe)) != 0; /* clearing it changed g: it is on */
        probe = d;
        (void)alloc_gates_set(&probe, names[i], 0);
        dflt = memcmp(&probe, &d, sizeof(probe)) != 0;
        if (on != dflt && !cJSON_AddBoolToObject(o, names[i], on))
            return -1;
    }
    return 0;
}

/* The claim a template generates for pod entry pc: the template's spec, owned by the pod. */
static cJSON *generated(const struct dra_claim *t, const struct dra_podspec *pod,
                        const char *pcname)
{
    cJSON *c = cJSON_CreateObject(), *meta, *refs, *ref;
    const cJSON *spec = dd_json_path(t->o.json, "spec", "spec", NULL);
    const char *uid = dd_json_str(pod->o.json, "metadata", "uid", NULL);
    char name[512];

    snprintf(name, sizeof(name), "%s-%s", pod->o.name, pcname);
    if (!c || !cJSON_AddStringToObject(c, "apiVersion", "resource.k8s.io/v1") ||
        !cJSON_AddStringToObject(c, "kind", "ResourceClaim") ||
        !(meta = cJSON_AddObjectToObject(c, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", name) ||
        !cJSON_AddStringToObject(meta, "namespace", pod->o.ns) ||
        !(refs = cJSON_AddArrayToObject(meta, "ownerReferences")) ||
        !(ref = cJSON_CreateObject()) || !cJSON_AddItemToArray(refs, ref) ||
        !cJSON_AddStringToObject(ref, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(ref, "kind", "Pod") ||
        !cJSON_AddStringToObject(ref, "name", pod->o.name) ||
        !cJSON_AddStringToObject(ref, "uid", uid ? uid : "") ||
        !cJSON_AddTrueToObject(ref, "controller") ||
        (spec && !cJSON_AddItemToObject(c, "spec", cJSON_Duplicate(spec, 1)))) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

cJSON *asnap_emit(const struct dra_model *m, const struct dra_podspec *pod,
                  const struct alloc_options *opt, const char *name)
{
    cJSON *s = cJSON_CreateObject(), *nodes, *slices, *classes, *claims, *p, *st, *statuses;
    const cJSON *it;
    size_t i;

    if (!s || !cJSON_AddStringToObject(s, "name", name ? name : "") ||
        add_gates(s, &opt->gates) || !(nodes = cJSON_AddArrayToObject(s, "nodes")) ||
        !(slices = cJSON_AddArrayToObject(s, "slices")) ||
        !(classes = cJSON_AddArrayToObject(s, "classes")) ||
        !(claims = cJSON_AddArrayToObject(s, "claims")))
        goto oom;
    for (i = 0; i < m->nodes.n; i++)
        if (add_copy(nodes, m->nodes.v[i].json))
            goto oom;
    for (i = 0; i < m->nslices; i++)
        if (add_copy(slices, m->slices[i].o.json))
            goto oom;
    for (i = 0; i < m->nclasses; i++)
        if (add_copy(classes, m->classes[i].o.json))
            goto oom;
    for (i = 0; i < m->nclaims; i++)
        if (!m->claims[i].is_template && add_copy(claims, m->claims[i].o.json))
            goto oom;
    if (opt->in_flight && !cJSON_AddItemToObject(s, "inFlight", cJSON_Duplicate(opt->in_flight, 1)))
        goto oom;
    if (!(p = cJSON_Duplicate(pod->o.json, 1)) || !cJSON_AddItemToObject(s, "pod", p))
        goto oom;
    /* A workload's pod template becomes a pod of its own. */
    if (strcmp(pod->o.kind, "Pod")) {
        cJSON *meta = cJSON_CreateObject(), *spec = cJSON_Duplicate(pod->spec, 1);
        cJSON_DeleteItemFromObject(s, "pod");
        if (!(p = cJSON_CreateObject()) || !cJSON_AddItemToObject(s, "pod", p) || !meta || !spec ||
            !cJSON_AddStringToObject(p, "apiVersion", "v1") || !cJSON_AddStringToObject(p, "kind", "Pod") ||
            !cJSON_AddItemToObject(p, "metadata", meta) || !cJSON_AddItemToObject(p, "spec", spec) ||
            !cJSON_AddStringToObject(meta, "name", pod->o.name) ||
            !cJSON_AddStringToObject(meta, "namespace", pod->o.ns)) {
            cJSON_Delete(meta);
            cJSON_Delete(spec);
            goto oom;
        }
    }
    /* Claims of templates that were not generated yet: as the resourceclaim controller
     * would generate them. */
    for (i = 0; i < pod->nclaims; i++) {
        const struct dra_pod_claim *pc = &pod->claims[i];
        const struct dra_claim *t;
        cJSON *c, *e;
        int found = 0;

        if (!pc->tmpl)
            continue;
        cJSON_ArrayForEach(it, dd_json_arr(p, "status", "resourceClaimStatuses", NULL))
            found |= dd_json_str(it, "name", NULL) && !strcmp(dd_json_str(it, "name", NULL), pc->name);
        if (found || !(t = dra_find_claim(m, pod->o.ns, pc->tmpl, 1)))
            continue;
        if (!(c = generated(t, pod, pc->name)) || !cJSON_AddItemToArray(claims, c))
            goto oom;
        if (!(st = cJSON_GetObjectItemCaseSensitive(p, "status")) &&
            !(st = cJSON_AddObjectToObject(p, "status")))
            goto oom;
        if (!(statuses = cJSON_GetObjectItemCaseSensitive(st, "resourceClaimStatuses")) &&
            !(statuses = cJSON_AddArrayToObject(st, "resourceClaimStatuses")))
            goto oom;
        if (!(e = cJSON_CreateObject()) || !cJSON_AddItemToArray(statuses, e) ||
            !cJSON_AddStringToObject(e, "name", pc->name) ||
            !cJSON_AddStringToObject(e, "resourceClaimName",
                                     dd_json_str(c, "metadata", "name", NULL)))
            goto oom;
    }
    return s;
oom:
    cJSON_Delete(s);
    return NULL;
}

/* ---- answers ------------------------------------------------------------------------- */

static const char *verdict_word(enum alloc_verdict v, int pod)
{
    switch (v) {
    case ALLOC_FIT: return pod ? "ok" : "fit";
    case ALLOC_UNSCHEDULABLE: return "unschedulable";
    default: return "error";
    }
}

/* "ns/name" of claim c as a member key of o; NULL on ENOMEM. */
static cJSON *add_key(cJSON *o, const char *key, const struct dra_claim *c)
{
    char buf[512];

    snprintf(buf, sizeof(buf), "%s/%s", c->o.ns, c->o.name);
    return cJSON_AddStringToObject(o, key, buf);
}

cJSON *asnap_answer(const struct alloc_result *r, const char *name)
{
    cJSON *a = cJSON_CreateObject(), *nodes;
    size_t i, j;

    if (!a || !cJSON_AddStringToObject(a, "name", name ? name : "") ||
        !cJSON_AddStringToObject(a, "status", verdict_word(r->verdict, 1)) ||
        (r->reason && !cJSON_AddStringToObject(a, "reason", r->reason)) ||
        !cJSON_AddNumberToObject(a, "fits", (double)r->nfit) ||
        (r->deallocate >= 0 && !add_key(a, "deallocate", r->claims[r->deallocate])) ||
        !(nodes = cJSON_AddArrayToObject(a, "nodes")))
        goto oom;
    for (i = 0; i < r->nnodes; i++) {
        const struct alloc_node *n = &r->nodes[i];
        cJSON *o = cJSON_CreateObject(), *allocs = NULL;
        size_t k;

        if (!o || !cJSON_AddItemToArray(nodes, o) ||
            !cJSON_AddStringToObject(o, "node", n->node->name) ||
            !cJSON_AddStringToObject(o, "podFilter", n->pod_filter ? n->pod_filter : "") ||
            !cJSON_AddStringToObject(o, "status", verdict_word(n->verdict, 0)) ||
            (n->reason && !cJSON_AddStringToObject(o, "reason", n->reason)))
            goto oom;
        /* A fitting node: each claim it allocates, in order, with its devices (a claim without
         * requests gets none). */
        for (k = 0; n->verdict == ALLOC_FIT && k < r->nclaims; k++) {
            const struct dra_claim *c = r->claims[k];
            cJSON *cur, *devs;
            char key[512];

            if (c->allocated)
                continue;
            snprintf(key, sizeof(key), "%s/%s", c->o.ns, c->o.name);
            if ((!allocs && !(allocs = cJSON_AddArrayToObject(o, "allocations"))) ||
                !(cur = cJSON_CreateObject()) || !cJSON_AddItemToArray(allocs, cur) ||
                !cJSON_AddStringToObject(cur, "claim", key) ||
                !(devs = cJSON_AddArrayToObject(cur, "devices")))
                goto oom;
            for (j = 0; j < n->npicks; j++) {
                const struct alloc_pick *p = &n->picks[j];
                cJSON *d;
                if (p->claim != k)
                    continue;
                if (!(d = cJSON_CreateObject()) || !cJSON_AddItemToArray(devs, d) ||
                    !cJSON_AddStringToObject(d, "request", p->request) ||
                    !cJSON_AddStringToObject(d, "driver", p->driver) ||
                    !cJSON_AddStringToObject(d, "pool", p->pool) ||
                    !cJSON_AddStringToObject(d, "device", p->device) ||
                    (p->admin_access && !cJSON_AddTrueToObject(d, "adminAccess")) ||
                    (p->shared && !cJSON_AddTrueToObject(d, "shared")))
                    goto oom;
            }
        }
    }
    return a;
oom:
    cJSON_Delete(a);
    return NULL;
}

static const char *s_or(const cJSON *o, const char *key)
{
    const char *s = dd_json_str(o, key, NULL);
    return s ? s : "";
}

/* The status of a node for the comparison. */
static const char *status_of(const cJSON *node, int flags)
{
    const char *st = s_or(node, "status");

    return flags & ASNAP_UNORDERED && !strcmp(st, "error") ? "unschedulable" : st;
}

int asnap_compare(const cJSON *a, const cJSON *b, int flags, size_t *skipped, char *why,
                  size_t size)
{
    const cJSON *na = cJSON_GetObjectItemCaseSensitive(a, "nodes");
    const cJSON *nb = cJSON_GetObjectItemCaseSensitive(b, "nodes"), *x, *y;
    int i, n;

    if (strcmp(s_or(a, "status"), s_or(b, "status"))) {
        snprintf(why, size, "pod: %s (%s) against %s (%s)", s_or(a, "status"), s_or(a, "reason"),
                 s_or(b, "status"), s_or(b, "reason"));
        return 1;
    }
    n = cJSON_GetArraySize(na);
    if (n != cJSON_GetArraySize(nb)) {
        snprintf(why, size, "%d nodes against %d", n, cJSON_GetArraySize(nb));
        return 1;
    }
    for (i = 0; i < n; i++) {
        x = cJSON_GetArrayItem(na, i);
        y = cJSON_GetArrayItem(nb, i);
        if (strcmp(s_or(x, "node"), s_or(y, "node"))) {
            snprintf(why, size, "node %s against node %s", s_or(x, "node"), s_or(y, "node"));
            return 1;
        }
        if (flags & ASNAP_TIMEOUTS &&
            (strstr(s_or(x, "reason"), "timed out") || strstr(s_or(y, "reason"), "timed out"))) {
            if (skipped)
                (*skipped)++;
            continue;
        }
        if (strcmp(status_of(x, flags), status_of(y, flags))) {
            snprintf(why, size, "node %s: %s (%s) against %s (%s)", s_or(x, "node"),
                     s_or(x, "status"), s_or(x, "reason"), s_or(y, "status"), s_or(y, "reason"));
            return 1;
        }
        if (!*s_or(x, "podFilter") != !*s_or(y, "podFilter")) {
            snprintf(why, size, "node %s: pod filter \"%s\" against \"%s\"", s_or(x, "node"),
                     s_or(x, "podFilter"), s_or(y, "podFilter"));
            return 1;
        }
        if (flags & ASNAP_PICKS) {
            const cJSON *pa = cJSON_GetObjectItemCaseSensitive(x, "allocations");
            const cJSON *pb = cJSON_GetObjectItemCaseSensitive(y, "allocations");
            char *ta = pa ? cJSON_PrintUnformatted(pa) : NULL;
            char *tb = pb ? cJSON_PrintUnformatted(pb) : NULL;
            int diff = (ta || tb) && (!ta || !tb || strcmp(ta, tb));
            if (diff)
                snprintf(why, size, "node %s: devices %s against %s", s_or(x, "node"),
                         ta ? ta : "none", tb ? tb : "none");
            free(ta);
            free(tb);
            if (diff)
                return 1;
        }
    }
    return 0;
}
