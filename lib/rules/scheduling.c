/*
 * scheduling.c - nodes and scheduling: a pod's own constraints against where its devices are,
 * and what the scheduler must do that a pod can keep it from doing.
 *
 *   PodConstraintsExcludeDeviceNodes  the nodes that have devices for the pod's claims are all
 *                                     ruled out by its nodeSelector, node affinity or a node
 *                                     taint it does not tolerate (GPU nodes' taints: device
 *                                     plugins' pods were tolerated automatically, claims are not)
 *   PodBypassesScheduler              spec.nodeName set by hand: nobody allocates the claims
 *   ClaimAllocatedOnOtherNode         a shared claim is allocated where this pod cannot go, or a
 *                                     workload's replicas all share one named claim
 *   ReservedForLimitReached           more pods share a claim than status.reservedFor holds
 *
 * The filters are kube-scheduler's (lib/model/nodefit); the nodes a device is on are the
 * allocator's (a slice's nodeName, nodeSelector or allNodes).
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/nodefit.h"

#define WHY_MAX 300

/* 1 when slice s offers its devices on node. */
static int slice_on(const struct dra_slice *s, const struct dra_obj *node)
{
    if (*s->node)
        return STRIEQ(s->node, node->name);
    if (s->all_nodes)
        return 1;
    return s->node_selector && fit_node_selector_matches(s->node_selector, node->json);
}

/* Marks on[0..nodes) the nodes where class cls has at least one device. */
static void class_nodes(const struct dra_model *m, const struct dra_class *cls, unsigned char *on)
{
    size_t i, j, k;

    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        int any = 0;
        for (j = 0; j < s->ndev && !any; j++)
            any = rule__class_admits(cls, &s->dev[j].dev);
        for (k = 0; any && k < m->nodes.n; k++)
            on[k] |= (unsigned char)slice_on(s, &m->nodes.v[k]);
    }
}

/* The claim spec behind a pod claim entry (the claim, or the template its claim comes from). */
static const struct dra_claim_spec *spec_of(const struct dra_model *m, const struct dra_podspec *p,
                                            const struct dra_pod_claim *pc)
{
    const struct dra_claim *c = dra_pod_claim_resolve(m, p, pc);

    if (!c && pc->tmpl)
        c = dra_find_claim(m, p->o.ns, pc->tmpl, 1);
    return c ? &c->spec : NULL;
}

/* A taint that only device-plugin pods got a toleration for, by ExtendedResourceToleration. */
static int extended_resource_taint(const char *why)
{
    return strstr(why, "untolerated taint {") && strchr(strstr(why, "taint {"), '/');
}

void rule__check_pod_constraints(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], why[WHY_MAX];
    unsigned char *devnodes;
    size_t i, j, k, r, len;

    if (!m->nodes.n || !m->nslices || !(devnodes = malloc(m->nodes.n))) {
        if (m->nodes.n && m->nslices)
            ctx->out->oom = 1;
        return;
    }
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        size_t ndev = 0, nfit = 0;
        int taint = 0;
        /* A pod on a node is past the scheduler; a DaemonSet is a driver's, or everywhere. */
        if (*p->node || p->replicas < 0 || !p->nclaims)
            continue;
        memset(devnodes, 0, m->nodes.n);
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[j]);
            const struct dra_claim_spec *spec = spec_of(m, p, &p->claims[j]);
            /* An allocated claim's devices are where it is: ClaimAllocatedOnOtherNode. */
            if (c && c->allocated)
                continue;
            for (r = 0; spec && r < spec->nreq; r++) {
                const struct dra_class *cls = spec->req[r].class_name
                                                  ? dra_find_class(m, spec->req[r].class_name)
                                                  : NULL;
                if (cls)
                    class_nodes(m, cls, devnodes);
            }
        }
        for (k = 0; k < m->nodes.n; k++)
            if (devnodes[k]) {
                ndev++;
                nfit += !fit_pod_excluded(p->spec, m->nodes.v[k].json, 0, why, sizeof(why));
            }
        if (!ndev || nfit)
            continue;
        len = 0;
        cat(msg, sizeof(msg), &len,
            "%s %s can get its devices only on node(s) the pod itself rules out, so it stays "
            "Pending (\"0/%zu nodes are available: ... cannot allocate all claims, ...\"):",
            p->o.kind, objname(&p->o, on, sizeof(on)), m->nodes.n);
        for (k = 0; k < m->nodes.n; k++)
            if (devnodes[k] && fit_pod_excluded(p->spec, m->nodes.v[k].json, 0, why, sizeof(why))) {
                cat(msg, sizeof(msg), &len, " %s: %s;", m->nodes.v[k].name, why);
                taint |= extended_resource_taint(why);
            }
        if (len && msg[len - 1] == ';')
            msg[--len] = '\0';
        cat(msg, sizeof(msg), &len, ".");
        if (taint)
            cat(msg, sizeof(msg), &len, " Pods that requested the device through a device plugin "
                "got this toleration from the ExtendedResourceToleration admission plugin; a pod "
                "that uses resourceClaims gets none.");
        snprintf(fix, sizeof(fix), "Let the pod go where its devices are: add the toleration, or "
                 "change its nodeSelector or node affinity (in the %s's pod template).",
                 STRIEQ(p->o.kind, "Pod") ? "pod spec" : p->o.kind);
        emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix);
    }
    free(devnodes);
}

/* Pods that use claim c (a named claim), other than p. */
static size_t sharers(const struct dra_model *m, const struct dra_claim *c,
                      const struct dra_podspec *p)
{
    size_t i, j, n = 0;

    for (i = 0; i < m->npods; i++)
        for (j = 0; &m->pods[i] != p && j < m->pods[i].nclaims; j++)
            n += dra_pod_claim_resolve(m, &m->pods[i], &m->pods[i].claims[j]) == c;
    return n;
}

/* 1 when every published device the spec's classes accept is node-local (and there is one). */
static int node_local(const struct dra_model *m, const struct dra_claim_spec *spec)
{
    size_t r, i, j, seen = 0;

    for (r = 0; r < spec->nreq; r++) {
        const struct dra_class *cls = spec->req[r].class_name
                                          ? dra_find_class(m, spec->req[r].class_name) : NULL;
        for (i = 0; cls && i < m->nslices; i++)
            for (j = 0; j < m->slices[i].ndev; j++)
                if (rule__class_admits(cls, &m->slices[i].dev[j].dev)) {
                    if (!*m->slices[i].node)
                        return 0;
                    seen++;
                }
    }
    return seen > 0;
}

void rule__check_claim_node(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], why[WHY_MAX];
    size_t i, j, k;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_pod_claim *pc = &p->claims[j];
            const struct dra_claim *c;
            size_t nodes = 0, fits = 0, first = (size_t)-1;
            /* Every replica of a workload names the same claim: one allocation for all, which
             * pins them to one node when its devices are node-local (published with nodeName;
             * a fabric's devices may serve many nodes, and IMEX channels are shared so). */
            if (pc->claim && p->replicas > 1 && (c = dra_find_claim(m, p->o.ns, pc->claim, 0)) &&
                node_local(m, &c->spec)) {
                snprintf(msg, sizeof(msg),
                         "%s %s: all %lld replicas use ResourceClaim %s (pod claim \"%s\"), which "
                         "is allocated once: every replica shares its device(s) and runs where "
                         "they are; a replica that cannot go there stays Pending (\"resourceclaim "
                         "not available on the node\").",
                         p->o.kind, objname(&p->o, on, sizeof(on)), (long long)p->replicas,
                         pc->claim, pc->name);
                snprintf(fix, sizeof(fix), "Give each replica a claim of its own: "
                         "resourceClaimTemplateName instead of resourceClaimName (or run one "
                         "replica, if sharing the device is the point).");
                emit(ctx, DD_SEV_WARNING, &p->o, pc->line, msg, fix);
                continue;
            }
            /* A Pending pod whose shared claim another pod already had allocated. */
            if (*p->node || !pc->claim || !m->nodes.n ||
                !(c = dra_pod_claim_resolve(m, p, pc)) || !c->allocated || !c->alloc_nodes)
                continue;
            for (k = 0; k < m->nodes.n; k++)
                if (fit_node_selector_matches(c->alloc_nodes, m->nodes.v[k].json)) {
                    nodes++;
                    if (first == (size_t)-1)
                        first = k;
                    fits += !fit_pod_excluded(p->spec, m->nodes.v[k].json, 0, why, sizeof(why));
                }
            if (fits)
                continue;
            if (!nodes)
                snprintf(msg, sizeof(msg),
                         "Pod %s: its shared ResourceClaim %s is allocated on a node that no "
                         "longer exists, so the pod can run nowhere (\"resourceclaim not "
                         "available on the node\").", objname(&p->o, on, sizeof(on)), c->o.name);
            else {
                fit_pod_excluded(p->spec, m->nodes.v[first].json, 0, why, sizeof(why));
                snprintf(msg, sizeof(msg),
                         "Pod %s: its shared ResourceClaim %s is already allocated on node %s "
                         "(for %zu other pod(s)), where this pod cannot go (%s): it stays Pending "
                         "(\"resourceclaim not available on the node\"); the claim is freed only "
                         "when no pod uses it.",
                         objname(&p->o, on, sizeof(on)), c->o.name, m->nodes.v[first].name,
                         sharers(m, c, p), why);
            }
            snprintf(fix, sizeof(fix), "Let the pod go to the claim's node, or give it a claim of "
                     "its own (a ResourceClaimTemplate).");
            scope(ctx, emit(ctx, ctx->rule->severity, &p->o, pc->line, msg, fix), NULL, NULL,
                  nodes ? m->nodes.v[first].name : NULL);
        }
    }
}

/* API validation caps status.reservedFor at 256 (ResourceClaimReservedForMaxSize); the
 * scheduler reserves in PreBind, so pod 257 fails there, after the claim looked usable. */
#define RESERVED_FOR_MAX 256

static int reserved_for_pod(const struct dra_claim *c, const struct dra_podspec *p)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, c->reserved_for) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        if (cJSON_IsString(name) && STRIEQ(name->valuestring, p->o.name))
            return 1;
    }
    return 0;
}

void rule__check_reserved_for(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, j, k;

    snprintf(fix, sizeof(fix), "Give the pods claims of their own (a ResourceClaimTemplate), or "
             "split them over several shared claims of at most %d users each.",
             RESERVED_FOR_MAX);
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        int64_t users = 0;
        int reported = 0;

        if (c->is_template)
            continue;
        /* Live: the claim is full and a Pending pod waits for a place in it. */
        if (cJSON_GetArraySize(c->reserved_for) >= RESERVED_FOR_MAX)
            for (j = 0; j < m->npods; j++) {
                const struct dra_podspec *p = &m->pods[j];
                for (k = 0; k < p->nclaims; k++)
                    if (!*p->node && STRIEQ(p->o.kind, "Pod") &&
                        dra_pod_claim_resolve(m, p, &p->claims[k]) == c &&
                        !reserved_for_pod(c, p)) {
                        snprintf(msg, sizeof(msg),
                                 "Pod %s: its shared ResourceClaim %s is already reserved for "
                                 "%d pods, the most status.reservedFor may hold; the scheduler "
                                 "fails to reserve it for one more in PreBind and retries "
                                 "forever.", objname(&p->o, on, sizeof(on)), c->o.name,
                                 cJSON_GetArraySize(c->reserved_for));
                        emit(ctx, ctx->rule->severity, &p->o, p->claims[k].line, msg, fix);
                        reported = 1;
                    }
            }
        /* Manifests: the workloads naming the claim stand for more pods than it can hold. */
        for (j = 0; !reported && j < m->npods; j++) {
            const struct dra_podspec *p = &m->pods[j];
            for (k = 0; !reported && k < p->nclaims; k++) {
                if (!p->claims[k].claim || dra_pod_claim_resolve(m, p, &p->claims[k]) != c)
                    continue;
                users += p->replicas < 0 ? (int64_t)m->nodes.n : p->replicas;
                if (users <= RESERVED_FOR_MAX)
                    continue;
                snprintf(msg, sizeof(msg),
                         "%s %s: with it, %lld pods share ResourceClaim %s, but one claim can be "
                         "reserved for at most %d: the pods beyond that stay Pending (the "
                         "scheduler's PreBind fails to add them to status.reservedFor).",
                         p->o.kind, objname(&p->o, on, sizeof(on)), (long long)users, c->o.name,
                         RESERVED_FOR_MAX);
                emit(ctx, ctx->rule->severity, &p->o, p->claims[k].line, msg, fix);
                reported = 1; /* once per claim: on the workload that tips it over */
            }
        }
    }
}

void rule__check_bypass(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, j;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        int unallocated = 0;
        /* Only a Pod carries nodeName before it exists.  Live, nodeName alone proves nothing
         * (the scheduler sets it too, and the kubelet marks a pinned pod PodScheduled), but
         * the scheduler binds only after it allocated every claim (PreBind): a bound pod with
         * an unallocated claim never went through it. */
        if (!STRIEQ(p->o.kind, "Pod") || !*p->node || !p->nclaims)
            continue;
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[j]);
            unallocated |= !c || !c->allocated;
        }
        if (!unallocated)
            continue;
        snprintf(msg, sizeof(msg),
                 "Pod %s sets spec.nodeName (%s), so it never passes the scheduler, which is what "
                 "allocates and reserves its claims: the kubelet refuses to prepare them "
                 "(\"prepare dynamic resources: pod %s (...) is not allowed to use ResourceClaim "
                 "...\") and the pod stays in ContainerCreating.",
                 objname(&p->o, on, sizeof(on)), p->node, p->o.name);
        snprintf(fix, sizeof(fix), "Remove spec.nodeName and let the scheduler place the pod "
                 "(to pin it, use a nodeSelector on kubernetes.io/hostname: %s).", p->node);
        scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL, p->node);
    }
}
