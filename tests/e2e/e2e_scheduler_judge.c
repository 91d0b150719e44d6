/*
 * e2e_scheduler_judge.c - the real kube-scheduler judges lib/model/alloc: a deterministic
 * sample of the allocation snapshots the differential fuzzer generates (tests/fuzz/
 * fuzz_alloc_diff.c) is applied, one case after the other, to the real control plane - the
 * Nodes as plain API objects (no kubelet: scheduling needs none), the ResourceSlices, the
 * DeviceClasses, the ResourceClaims with the allocations other pods hold (status.allocation
 * written as a driver's scheduler would), then the pod - and the scheduler's verdict (bound
 * to a node, or PodScheduled=False) is compared with dra-doctor's on the very same snapshot:
 * unschedulable where dra-doctor fits the pod nowhere, bound only to a node where it fits, with
 * the devices dra-doctor picks there.  dra-doctor's answer is the one after the deallocations
 * the scheduler's PostFilter makes (alloc_result.deallocate), as the scheduler's is after its
 * retries.  Half the sample is drawn where dra-doctor fits the pod, half where it does not.
 * Each case has its own namespace, node, driver, pool and class names, and everything it
 * made is deleted before the next one; objects this program did not make are never touched.
 *
 * A snapshot is made applicable first, and dra-doctor judges it as applied (e2e/README.md):
 * the release's default feature gates (fields of alpha gates the API server would drop are
 * removed), no binding conditions (the scheduler would wait for them in PreBind, up to 10
 * minutes), in-flight claims allocated (the scheduler's memory cannot be planted), claims of
 * templates named directly, and what the real cluster needs beside the generated objects:
 * each Node's status (Ready, pods to allocate), a node label and the pod's required affinity
 * to it (keeping the pod off the real node and other cases' nodes), tolerations of the node
 * lifecycle controller's not-ready/unreachable taints, a container, and the class that
 * selects every device selecting only this case's drivers.
 *
 * DD_JUDGE_SEED (default 1) and DD_JUDGE_CASES (default 30) choose the sample; a case the
 * API server refuses is counted and replaced by the next one drawn.
 */
#include "harness.h"

/* The generator and dra-doctor's side of the differential harness: generate(), ours(). */
#include "../fuzz/fuzz_alloc_diff.c"

#include "apply.h"

#define MAX_DRAWS 400
#define VERDICT_SECONDS 30
#define ADMIN_ACCESS_LABEL "resource.kubernetes.io/admin-access"
#define CASE_LABEL "dra-doctor.io/judge-case"

/* ---- the snapshot as the cluster can hold it -------------------------------------------- */

/* Deletes every member called key, at any depth. */
static void strip(cJSON *o, const char *key)
{
    cJSON *c;

    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_ArrayForEach(c, o)
        if (cJSON_IsObject(c) || cJSON_IsArray(c))
            strip(c, key);
}

/* Prefixes every deviceClassName value, at any depth. */
static void rename_classes(cJSON *o, const char *id)
{
    cJSON *c;

    cJSON_ArrayForEach(c, o) {
        if (c->string && !strcmp(c->string, "deviceClassName") && cJSON_IsString(c)) {
            char name[96];
            snprintf(name, sizeof(name), "%s-%s", id, c->valuestring);
            cJSON_SetValuestring(c, name);
        } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            rename_classes(c, id);
        }
    }
}

/* A device holding the same name twice in one slice is refused by the API server: no need
 * to send it. */
static int duplicate_names(const cJSON *snap)
{
    const cJSON *s, *d, *e;

    cJSON_ArrayForEach(s, cJSON_GetObjectItem(snap, "slices")) {
        const cJSON *devs = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "spec"), "devices");
        cJSON_ArrayForEach(d, devs)
            for (e = d->next; e; e = e->next)
                if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "name")),
                            cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"))))
                    return 1;
    }
    return 0;
}

/*
 * The generated snapshot `gen` as case `id` applies it (a new tree): see the file's comment.
 */
static cJSON *applicable(const cJSON *gen, const char *id, const char *ns)
{
    static const char *const gated[] = {
        "compatibilityGroups",      /* DRADeviceCompatibilityGroups (alpha) */
        "skipNodeOperations",       /* DRAOptionalNodeOperations (alpha) */
        "declaredFeatures",         /* NodeDeclaredFeatures (alpha) */
        "bindingConditions", "bindingFailureConditions", "bindsToNode", "allocationTimestamp",
    };
    char *text = cJSON_PrintUnformatted(gen), *t, to[64];
    cJSON *snap, *c, *it, *pod, *spec, *aff, *terms, *term, *exprs, *e;
    size_t i;

    /* Names: this case's drivers (their attribute domains and selectors with them), nodes,
     * pools and slices. */
    snprintf(to, sizeof(to), "gpu.%s.example.com", id);
    t = replace(text, "gpu.example.com", to);
    free(text);
    snprintf(to, sizeof(to), "nic.%s.example.com", id);
    text = replace(t, "nic.example.com", to);
    free(t);
    snprintf(to, sizeof(to), "\"%s-node-", id);
    t = replace(text, "\"node-", to);
    free(text);
    snprintf(to, sizeof(to), "\"%s-shared-", id);
    text = replace(t, "\"shared-", to);
    free(t);
    snap = cJSON_Parse(text);
    free(text);
    assert_non_null(snap);

    cJSON_DeleteItemFromObject(snap, "gates");
    for (i = 0; i < sizeof(gated) / sizeof(gated[0]); i++)
        strip(snap, gated[i]);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(snap, "slices")) {
        cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItem(cJSON_GetObjectItem(it, "spec"), "devices")) {
            cJSON *a = cJSON_GetObjectItem(d, "attributes"), *x, *next;
            /* A request policy only on a device that allows multiple allocations (the API
             * server refuses it elsewhere). */
            if (!cJSON_IsTrue(cJSON_GetObjectItem(d, "allowMultipleAllocations")))
                strip(cJSON_GetObjectItem(d, "capacity"), "requestPolicy");
            /* List-typed attributes (DRAListTypeAttributes, alpha). */
            for (x = a ? a->child : NULL; x; x = next) {
                next = x->next;
                if (cJSON_GetObjectItem(x, "strings") || cJSON_GetObjectItem(x, "ints") ||
                    cJSON_GetObjectItem(x, "bools") || cJSON_GetObjectItem(x, "versions"))
                    cJSON_Delete(cJSON_DetachItemViaPointer(a, x));
            }
        }
    }
    /* In-flight claims: allocated ones (they hold their devices the same way). */
    if ((it = cJSON_DetachItemFromObject(snap, "inFlight"))) {
        while ((c = cJSON_DetachItemFromArray(it, 0)))
            cJSON_AddItemToArray(cJSON_GetObjectItem(snap, "claims"), c);
        cJSON_Delete(it);
    }

    rename_classes(snap, id);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(snap, "classes")) {
        cJSON *m = cJSON_GetObjectItem(c, "metadata"), *sel;
        char name[96];
        snprintf(name, sizeof(name), "%s-%s", id, cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")));
        cJSON_SetValuestring(cJSON_GetObjectItem(m, "name"), name);
        /* Beside the webhook's check of driver names: these drivers are new by design. */
        cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "annotations"),
                                "dra-doctor.io/allow-unregistered-driver", "true");
        cJSON_ArrayForEach(sel, cJSON_GetObjectItem(cJSON_GetObjectItem(c, "spec"), "selectors")) {
            cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(sel, "cel"), "expression");
            if (x && !strcmp(x->valuestring, "true")) {
                snprintf(name, sizeof(name), "device.driver.endsWith('.%s.example.com')", id);
                cJSON_SetValuestring(x, name);
            }
        }
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(snap, "claims")) {
        cJSON *m = cJSON_GetObjectItem(c, "metadata"), *st = cJSON_GetObjectItem(c, "status");
        cJSON_DeleteItemFromObject(m, "ownerReferences");
        cJSON_SetValuestring(cJSON_GetObjectItem(m, "namespace"), ns);
        cJSON_DeleteItemFromObject(st, "devices");
        /* As a v1.37 scheduler writes an allocation.  One without the timestamp can never be
         * reserved for a pod by it: PreBind adds the timestamp, and the API server refuses the
         * change of an allocation (status.allocation: field cannot be modified once set). */
        if (cJSON_GetObjectItem(st, "allocation"))
            cJSON_AddStringToObject(cJSON_GetObjectItem(st, "allocation"), "allocationTimestamp",
                                    "2026-01-01T00:00:00Z");
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(snap, "nodes")) {
        cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "metadata"), "labels"),
                                CASE_LABEL, id);
        simulated_node_status(c, "a plain API object (e2e_scheduler_judge)");
    }

    /* The pod: claims of templates by the names they were generated under. */
    pod = cJSON_GetObjectItem(snap, "pod");
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "namespace"), ns);
    spec = cJSON_GetObjectItem(pod, "spec");
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(spec, "resourceClaims")) {
        const char *pc = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
        if (!cJSON_GetObjectItem(c, "resourceClaimTemplateName"))
            continue;
        cJSON_DeleteItemFromObject(c, "resourceClaimTemplateName");
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "status"),
                                                   "resourceClaimStatuses"))
            if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")), pc))
                cJSON_AddStringToObject(c, "resourceClaimName",
                                        cJSON_GetStringValue(cJSON_GetObjectItem(it, "resourceClaimName")));
    }
    cJSON_DeleteItemFromObject(pod, "status");
    cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 0);
    cJSON_AddFalseToObject(spec, "automountServiceAccountToken");
    {
        cJSON *ctr = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "containers"), ctr);
        cJSON_AddStringToObject(ctr, "name", "c");
        cJSON_AddStringToObject(ctr, "image", "registry.k8s.io/pause:3.10");
    }
    aff = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "affinity"), "nodeAffinity");
    terms = cJSON_AddArrayToObject(
        cJSON_AddObjectToObject(aff, "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    term = cJSON_CreateObject();
    cJSON_AddItemToArray(terms, term);
    exprs = cJSON_AddArrayToObject(term, "matchExpressions");
    e = cJSON_CreateObject();
    cJSON_AddItemToArray(exprs, e);
    cJSON_AddStringToObject(e, "key", CASE_LABEL);
    cJSON_AddStringToObject(e, "operator", "In");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(e, "values"), cJSON_CreateString(id));
    tolerate_simulated_nodes(spec);
    return snap;
}

/* ---- the cluster ------------------------------------------------------------------------- */

/* Events of the case's pod with this reason: the message of the newest, or NULL (a new string). */
static char *pod_event(const char *ns, const char *reason)
{
    char path[192], sel[128], *msg = NULL;
    cJSON *items = NULL, *e;
    struct kube_status st;
    struct dd_err err;

    kube_path(path, sizeof(path), "", "v1", "events", ns, NULL, NULL);
    snprintf(sel, sizeof(sel), "fieldSelector=involvedObject.name%%3Dpod,reason%%3D%s", reason);
    if (kube_list(kc, path, sel, 0, &items, NULL, &st, &err) != DD_OK)
        return NULL;
    cJSON_ArrayForEach(e, items) {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(e, "message"));
        free(msg);
        msg = strdup(m ? m : "");
    }
    cJSON_Delete(items);
    return msg;
}

/* The case's claims that hold an allocation now. */
static int allocated_claims(const char *ns)
{
    char path[192];
    cJSON *items = NULL, *c;
    struct kube_status st;
    struct dd_err err;
    int n = 0;

    kube_path(path, sizeof(path), "resource.k8s.io", "v1", "resourceclaims", ns, NULL, NULL);
    if (kube_list(kc, path, NULL, 0, &items, NULL, &st, &err) != DD_OK)
        return -1;
    cJSON_ArrayForEach(c, items)
        n += cJSON_GetObjectItem(cJSON_GetObjectItem(c, "status"), "allocation") != NULL;
    cJSON_Delete(items);
    return n;
}

/*
 * The scheduler's verdict on the pod: 1 bound (node filled), 0 unschedulable (message
 * filled), -1 none in time.  allocated: the case's claims allocated before the pod came.
 */
static int verdict(const char *ns, int allocated, char *node, size_t nsize, char *msg,
                   size_t msize)
{
    char path[192];
    double end = now_s() + VERDICT_SECONDS, settled = 0;
    struct kube_status st;
    struct dd_err err;

    kube_path(path, sizeof(path), "", "v1", "pods", ns, "pod", NULL);
    for (;;) {
        cJSON *pod = NULL, *c;
        const char *bound = NULL;
        int unsched = 0;
        enum dd_rc rc = kube_get(kc, path, &pod, &st, &err);
        if (rc == DD_OK) {
            bound = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "nodeName"));
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "status"), "conditions"))
                if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "type")), "PodScheduled") &&
                    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")), "False")) {
                    unsched = 1;
                    snprintf(msg, msize, "%s: %s", cJSON_GetStringValue(cJSON_GetObjectItem(c, "reason")),
                             cJSON_GetStringValue(cJSON_GetObjectItem(c, "message")));
                }
        } else if (rc == DD_ENOTFOUND) {
            /* Bound and deleted at once, by the device taint eviction controller (below): the
             * scheduler's event names the node. */
            char *ev = pod_event(ns, "Scheduled"), *to = ev ? strstr(ev, " to ") : NULL;
            if (to)
                snprintf(node, nsize, "%s", to + 4);
            free(ev);
            if (to)
                return 1;
        }
        if (bound && *bound) {
            snprintf(node, nsize, "%s", bound);
            cJSON_Delete(pod);
            return 1;
        }
        cJSON_Delete(pod);
        /* Unschedulable: final unless an event the scheduler saw late puts it back in its
         * queue, which a second's wait shows; or unless PostFilter deallocated one of its
         * claims, after which the pod is tried again once its backoff (1 s, doubling) ends. */
        if (unsched && !settled)
            settled = now_s() + 1.0;
        if (settled && allocated && allocated_claims(ns) < allocated && settled < end - 15)
            settled = now_s() + 12.0;
        if (settled && now_s() > settled)
            return 0;
        if (now_s() > end)
            return -1;
        msleep(50);
    }
}

/* ---- the test ---------------------------------------------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The names of the nodes dra-doctor says the pod can be bound to (its DRA filter and its own
 * filters; none when the DRA filter errs on one), as a space-separated list in fits; their
 * number. */
static int fits_of(const cJSON *answer, char *fits, size_t size)
{
    const cJSON *n;
    size_t k = 0;
    int count = 0;

    fits[0] = '\0';
    if (!answer || !cJSON_GetNumberValue(cJSON_GetObjectItem(answer, "fits")))
        return 0;
    cJSON_ArrayForEach(n, cJSON_GetObjectItem(answer, "nodes")) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(n, "status")), "fit") ||
            *cJSON_GetStringValue(cJSON_GetObjectItem(n, "podFilter")))
            continue;
        k += (size_t)snprintf(fits + k, k < size ? size - k : 0, "%s%s", count ? " " : "",
                              cJSON_GetStringValue(cJSON_GetObjectItem(n, "node")));
        count++;
    }
    return count;
}

/* " name " in the space-separated list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p;

    for (p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
            return 1;
    return 0;
}

/* The devices the scheduler wrote into the pod's claims it allocated on node, in order, are
 * those dra-doctor picks there (the allocator of the release's default gates walks pools and
 * devices in a fixed order).  1 when they are, else 0 with the first difference in why. */
static int same_devices(const cJSON *answer, const char *node, char *why, size_t size)
{
    const cJSON *n, *a, *d;

    cJSON_ArrayForEach(n, cJSON_GetObjectItem(answer, "nodes"))
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(n, "node")), node))
            break;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(n, "allocations")) {
        char claim[256], path[320], *slash;
        cJSON *c = NULL, *res;
        struct kube_status st;
        struct dd_err err;
        int i = 0;

        snprintf(claim, sizeof(claim), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(a, "claim")));
        slash = strchr(claim, '/');
        *slash = '\0';
        kube_path(path, sizeof(path), "resource.k8s.io", "v1", "resourceclaims", claim, slash + 1, NULL);
        if (kube_get(kc, path, &c, &st, &err) != DD_OK) {
            snprintf(why, size, "claim %s/%s: %s", claim, slash + 1, st.message);
            return 0;
        }
        res = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
                  c, "status"), "allocation"), "devices"), "results");
        cJSON_ArrayForEach(d, cJSON_GetObjectItem(a, "devices")) {
            const cJSON *r = cJSON_GetArrayItem(res, i++);
            static const char *const keys[] = {"request", "driver", "pool", "device"};
            size_t k;
            for (k = 0; k < 4; k++) {
                const char *x = cJSON_GetStringValue(cJSON_GetObjectItem(d, keys[k]));
                const char *y = r ? cJSON_GetStringValue(cJSON_GetObjectItem(r, keys[k])) : NULL;
                if (!y || strcmp(x, y)) {
                    char *text = cJSON_PrintUnformatted(res);
                    snprintf(why, size, "claim %s/%s, device %d: dra-doctor picks %s/%s/%s for %s; "
                             "the scheduler allocated %s", claim, slash + 1, i - 1,
                             cJSON_GetStringValue(cJSON_GetObjectItem(d, "driver")),
                             cJSON_GetStringValue(cJSON_GetObjectItem(d, "pool")),
                             cJSON_GetStringValue(cJSON_GetObjectItem(d, "device")),
                             cJSON_GetStringValue(cJSON_GetObjectItem(d, "request")), text);
                    free(text);
                    cJSON_Delete(c);
                    return 0;
                }
            }
        }
        if (cJSON_GetArraySize(res) != i) {
            snprintf(why, size, "claim %s/%s: dra-doctor picks %d device(s), the scheduler %d",
                     claim, slash + 1, i, cJSON_GetArraySize(res));
            cJSON_Delete(c);
            return 0;
        }
        cJSON_Delete(c);
    }
    return 1;
}

/* dra-doctor's answer for snap as the scheduler ends up deciding: while the pod fits nowhere
 * and PostFilter deallocates one of its claims (the answer's "deallocate"), again without that
 * allocation (on a copy).  *rounds counts the deallocations. */
static cJSON *settled(const cJSON *snap, int *rounds)
{
    cJSON *copy = cJSON_Duplicate(snap, 1), *answer;
    const char *d;

    for (*rounds = 0;; ++*rounds) {
        cJSON *c;
        answer = ours(copy);
        if (!answer || !(d = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "deallocate"))) ||
            *rounds == 8)
            break;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(copy, "claims")) {
            char key[256];
            const cJSON *m = cJSON_GetObjectItem(c, "metadata");
            snprintf(key, sizeof(key), "%s/%s", cJSON_GetStringValue(cJSON_GetObjectItem(m, "namespace")),
                     cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")));
            if (!strcmp(key, d))
                cJSON_DeleteItemFromObject(c, "status");
        }
        cJSON_Delete(answer);
    }
    cJSON_Delete(copy);
    return answer;
}

static void scheduler_agrees(void **state)
{
    /* A case's objects, in the order they are made (a claim's class before it, ...). */
    static const struct {
        const char *key, *group, *kind, *resource;
        int namespaced;
    } kinds[] = {
        {"nodes", "", "Node", "nodes", 0},
        {"slices", "resource.k8s.io", "ResourceSlice", "resourceslices", 0},
        {"classes", "resource.k8s.io", "DeviceClass", "deviceclasses", 0},
        {"claims", "resource.k8s.io", "ResourceClaim", "resourceclaims", 1},
    };
    const char *s_env = getenv("DD_JUDGE_SEED"), *n_env = getenv("DD_JUDGE_CASES");
    const char *only = getenv("DD_JUDGE_ONLY");
    uint64_t seed = s_env ? strtoull(s_env, NULL, 10) : 1;
    int want = n_env ? atoi(n_env) : 30, judged = 0, agree = 0, bound = 0, unsched = 0;
    int refused = 0, draws, nns = 0, fit_cases = 0, unfit_cases = 0;
    static char namespaces[MAX_DRAWS][32];
    size_t left;
    double t0 = now_s();

    (void)state;
    for (draws = 0; draws < MAX_DRAWS && judged < want; draws++) {
        uint8_t buf[600];
        uint64_t s = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)draws + 1;
        char id[16], ns[32], why[2048] = "", node[128] = "", msg[2048] = "", fits[1024];
        struct made m = {.n = 0};
        cJSON *gen, *snap, *answer, *o;
        size_t k;
        int v, nfits, ok = 0, rounds;

        if (only && atoi(only) != draws)
            continue;
        for (k = 0; k < sizeof(buf); k++)
            buf[k] = (uint8_t)xorshift(&s);
        gen = generate(buf, sizeof(buf));
        if (duplicate_names(gen)) {
            cJSON_Delete(gen);
            continue;
        }
        snprintf(id, sizeof(id), "j%03d", draws);
        snprintf(ns, sizeof(ns), "dd-judge-%s", id);
        snap = applicable(gen, id, ns);
        cJSON_Delete(gen);
        answer = settled(snap, &rounds);
        assert_non_null(answer);
        nfits = fits_of(answer, fits, sizeof(fits));
        /* Half the sample where dra-doctor fits the pod, half where it does not (most
         * generated pods fit nowhere): each half is a claim the scheduler can refute. */
        if (!only && (nfits ? fit_cases : unfit_cases) >= (nfits ? want / 2 : want - want / 2)) {
            cJSON_Delete(answer);
            cJSON_Delete(snap);
            continue;
        }

        /* The cluster: namespace, nodes, slices, classes, claims with their allocations. */
        o = cJSON_Parse("{\"metadata\":{\"labels\":{\"" ADMIN_ACCESS_LABEL "\":\"true\"}}}");
        cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "name", ns);
        if (!create(&m, "", "v1", "Namespace", "namespaces", NULL, o, why, sizeof(why))) {
            snprintf(namespaces[nns++], sizeof(namespaces[0]), "%s", ns);
            ok = 1;
        }
        cJSON_Delete(o);
        for (k = 0; ok && k < sizeof(kinds) / sizeof(kinds[0]); k++)
            cJSON_ArrayForEach(o, cJSON_GetObjectItem(snap, kinds[k].key))
                if (ok && create(&m, kinds[k].group, "v1", kinds[k].kind, kinds[k].resource,
                                 kinds[k].namespaced ? ns : NULL, o, why, sizeof(why)))
                    ok = 0;
        if (ok) {
            /* The scheduler's informers have seen all of it before the pod arrives; the
             * namespace's default ServiceAccount comes from a controller, a moment after the
             * namespace. */
            double until = now_s() + 10;
            msleep(500);
            while ((ok = !create(&m, "", "v1", "Pod", "pods", ns, cJSON_GetObjectItem(snap, "pod"),
                                 why, sizeof(why))) == 0 &&
                   strstr(why, "service account") && now_s() < until)
                msleep(200);
        }
        if (!ok) {
            printf("  %s: refused by the API server: %s\n", id, why);
            refused++;
            delete_all(&m);
            cJSON_Delete(answer);
            cJSON_Delete(snap);
            continue;
        }
        {
            int allocated = 0;
            cJSON_ArrayForEach(o, cJSON_GetObjectItem(snap, "claims"))
                allocated += cJSON_GetObjectItem(cJSON_GetObjectItem(o, "status"), "allocation") != NULL;
            v = verdict(ns, allocated, node, sizeof(node), msg, sizeof(msg));
        }
        judged++;
        if (nfits)
            fit_cases++;
        else
            unfit_cases++;
        if (v == 1) {
            bound++;
            ok = listed(fits, node);
            printf("  %s: bound to %s; dra-doctor: fits on [%s]%s%s\n", id, node, fits,
                   rounds ? " after PostFilter deallocates a claim" : "", ok ? "" : "  DISAGREE");
            if (ok && !(ok = same_devices(answer, node, msg, sizeof(msg)))) {
                /* Bound, then deleted (its claims deallocated) by the device taint eviction
                 * controller: v1.37.2 honours only tolerations whose effect is NoExecute, where
                 * the allocator lets one without an effect tolerate it (docs/alloc.md). */
                char *ev = NULL;
                double until = now_s() + 3;
                while (!(ev = pod_event(ns, "DeviceTaintManagerEviction")) && now_s() < until)
                    msleep(200);
                if (ev) {
                    ok = 1;
                    printf("  %s: evicted at once by the device taint eviction controller: devices "
                           "not compared\n", id);
                }
                free(ev);
                if (!ok)
                    printf("  %s: DISAGREE: %s\n", id, msg);
            }
        } else if (v == 0) {
            unsched++;
            ok = nfits == 0;
            printf("  %s: unschedulable; dra-doctor: %s%s\n", id,
                   nfits ? "fits on [" : "fits nowhere", nfits ? fits : "");
            if (!ok)
                printf("  %s: DISAGREE: the scheduler: %s\n", id, msg);
        } else {
            ok = 0;
            printf("  %s: no verdict from the scheduler in %d s; dra-doctor: fits on [%s]\n", id,
                   VERDICT_SECONDS, fits);
        }
        if (ok) {
            agree++;
        } else {
            char *text = cJSON_PrintUnformatted(snap), *a = cJSON_PrintUnformatted(answer), path[64];
            FILE *f;
            printf("  %s: snapshot: %s\n  %s: dra-doctor: %s\n", id, text, id, a);
            snprintf(path, sizeof(path), "build/e2e-judge-%s.json", id);
            if ((f = fopen(path, "w"))) {
                fputs(text, f);
                fclose(f);
                printf("  %s: written to %s\n", id, path);
            }
            free(text);
            free(a);
        }
        if (!getenv("DD_JUDGE_KEEP"))
            delete_all(&m);
        cJSON_Delete(answer);
        cJSON_Delete(snap);
    }
    printf("real scheduler vs dra-doctor: %d/%d agree (%d bound, %d unschedulable; %d refused "
           "by the API server, %d draws, seed %llu) in %.0f s\n",
           agree, judged, bound, unsched, refused, draws, (unsigned long long)seed, now_s() - t0);

    if (only) { /* one case, to look at (DD_JUDGE_KEEP=1 keeps its objects) */
        assert_int_equal(agree, judged);
        return;
    }
    /* Every namespace goes (its claims' finalizers are the resourceclaim controller's). */
    if (nns && (left = namespaces_left(namespaces[0], sizeof(namespaces[0]), (size_t)nns, 60)))
        fail_msg("%zu namespace(s) of the cases still there after 60 s", left);
    assert_int_equal(judged, want);
    assert_int_equal(agree, judged);
    /* A sample that only ever binds (or never does) judges half of the allocator. */
    assert_true(bound > 0);
    assert_true(unsched > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scheduler_agrees),
    };
    return cmocka_run_group_tests_name("e2e-scheduler-judge", tests, apply_setup, apply_teardown);
}
