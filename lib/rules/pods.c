/*
 * pods.c - the pod's side of a claim: which containers get its devices, whether the names they
 * use exist, and whether the scheduler sees the pod at all.
 *
 *   ContainerClaimNameUnknown   a container names a claim the pod does not have (API refuses)
 *   ClaimNotConsumedByContainer a claim no container lists, or a `request` the claim lacks:
 *                               the device is prepared and no container gets it, silently
 *   PodBypassesScheduler        spec.nodeName set by hand: nobody allocates the claims
 */
#include "rules_int.h"

#include "json.h"

/* The pod claim entry called name, or NULL. */
static const struct dra_pod_claim *pod_claim(const struct dra_podspec *p, const char *name)
{
    size_t i;

    for (i = 0; name && i < p->nclaims; i++)
        if (STRIEQ(p->claims[i].name, name))
            return &p->claims[i];
    return NULL;
}

/* The names of the pod's claims, for messages: "a, b" or "none". */
static void claim_list(const struct dra_podspec *p, char *buf, size_t size)
{
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; i < p->nclaims; i++)
        cat(buf, size, &len, "%s%s", i ? ", " : "", p->claims[i].name);
    if (!p->nclaims)
        cat(buf, size, &len, "none");
}

/* The path of container c of p, as validation names it: spec.containers[i]. */
static void ctr_path(const struct dra_podspec *p, const struct dra_container *c, char *buf,
                     size_t size)
{
    size_t i, k = 0;

    for (i = 0; i < p->nctr && &p->ctr[i] != c; i++)
        k += p->ctr[i].init == c->init;
    snprintf(buf, size, "%s%s[%zu]", STRIEQ(p->o.kind, "Pod") ? "spec." : "spec.template.spec.",
             c->init ? "initContainers" : "containers", k);
}

void rule__check_container_claims(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], path[160], names[512];
    size_t i, j, k;

    /* The API server refuses such a pod or workload: a live one never has it. */
    if (m->live)
        return;
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        for (j = 0; j < p->nctr; j++) {
            const struct dra_container *c = &p->ctr[j];
            const cJSON *it;
            k = 0;
            cJSON_ArrayForEach(it, c->claims) {
                const char *name = dd_json_str(it, "name", NULL);
                if (name && !pod_claim(p, name)) {
                    ctr_path(p, c, path, sizeof(path));
                    claim_list(p, names, sizeof(names));
                    snprintf(msg, sizeof(msg),
                             "%s %s: container %s uses claim \"%s\", which is not one of the pod's "
                             "resourceClaims (%s): the API server refuses it (%s.resources."
                             "claims[%zu]: Not found: \"%s\": must be one of the names in "
                             "pod.spec.resourceClaims).",
                             p->o.kind, objname(&p->o, on, sizeof(on)), c->name, name, names,
                             path, k, name);
                    snprintf(fix, sizeof(fix), "Name one of the pod's claims (%s) in %s.resources."
                             "claims[%zu].name, or add a resourceClaims entry \"%s\".", names, path,
                             k, name);
                    emit(ctx, ctx->rule->severity, &p->o, c->line, msg, fix);
                }
                k++;
            }
        }
    }
}

/* The claim or template spec behind a pod claim entry, or NULL when not in the input. */
static const struct dra_claim *claim_behind(const struct dra_model *m, const struct dra_podspec *p,
                                            const struct dra_pod_claim *pc)
{
    const struct dra_claim *c = dra_pod_claim_resolve(m, p, pc);

    if (!c && pc->tmpl)
        c = dra_find_claim(m, p->o.ns, pc->tmpl, 1);
    return c;
}

/* 1 when request name (or "request/subrequest") exists in spec. */
static int has_request(const struct dra_claim_spec *spec, const char *name)
{
    size_t i, j, n = strcspn(name, "/");

    for (i = 0; i < spec->nreq; i++) {
        if (strlen(spec->req[i].name) != n || strncmp(spec->req[i].name, name, n))
            continue;
        if (!name[n])
            return 1;
        for (j = 0; j < spec->req[i].nsub; j++)
            if (STRIEQ(spec->req[i].sub[j].name, name + n + 1))
                return 1;
    }
    return 0;
}

/*
 * Whether the devices of spec reach a container through CDI (1), through the pod as a whole
 * (0: dranet moves interfaces into the pod's network namespace, no container lists its claim),
 * or nobody can tell (-1): by the drivers its requests' classes select.
 */
static int per_container(const struct dra_model *m, const struct dra_claim_spec *spec)
{
    size_t i, j, k, n;
    int any = -1;

    for (i = 0; i < spec->nreq; i++) {
        const struct dra_request *r = &spec->req[i];
        const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
        for (j = 0; cls && j < cls->nsel; j++) {
            const struct cel_driver_ref *refs;
            if (!cls->sel[j].prog ||
                cel_program_drivers(cls->sel[j].prog, &refs, &n) != CEL_DRIVERS_SET)
                continue;
            for (k = 0; k < n; k++) {
                const struct drv_profile *pr = drv_profile_for_driver(refs[k].name);
                size_t d;
                int w = pr ? pr->writes_cdi : -1;
                for (d = 0; w < 0 && d < m->ndrivers; d++)
                    if (STRIEQ(m->drivers[d].name, refs[k].name))
                        w = m->drivers[d].writes_cdi;
                if (w == 0)
                    return 0;
                if (w == 1)
                    any = 1;
            }
        }
    }
    return any;
}

void rule__check_claims_consumed(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], path[160];
    size_t i, j, k;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        /* A DaemonSet that is a driver's plugin asks for no devices for itself. */
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_pod_claim *pc = &p->claims[j];
            const struct dra_claim *cl = claim_behind(m, p, pc);
            int used = 0, bad_request = 0;
            if (!cl || per_container(m, &cl->spec) != 1)
                continue;
            for (k = 0; k < p->nctr; k++) {
                const cJSON *it;
                cJSON_ArrayForEach(it, p->ctr[k].claims) {
                    const char *name = dd_json_str(it, "name", NULL);
                    const char *req = dd_json_str(it, "request", NULL);
                    if (!name || !STRIEQ(name, pc->name))
                        continue;
                    if (req && *req && !has_request(&cl->spec, req)) {
                        ctr_path(p, &p->ctr[k], path, sizeof(path));
                        snprintf(msg, sizeof(msg),
                                 "%s %s: container %s asks for request \"%s\" of claim \"%s\", "
                                 "but %s %s has no request of that name: the kubelet gives the "
                                 "container none of the claim's devices, without an error.",
                                 p->o.kind, objname(&p->o, on, sizeof(on)), p->ctr[k].name, req,
                                 pc->name, cl->o.kind, cl->o.name);
                        snprintf(fix, sizeof(fix), "Name a request of %s %s in %s.resources."
                                 "claims (or drop `request` to get all of the claim's devices).",
                                 cl->o.kind, cl->o.name, path);
                        scope(ctx, emit(ctx, ctx->rule->severity, &p->o, p->ctr[k].line, msg,
                                        fix), NULL, NULL, p->node);
                        bad_request = 1;
                    }
                    used = 1;
                }
            }
            if (used || bad_request)
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s: no container lists claim \"%s\" in resources.claims, so its devices "
                     "are allocated and prepared but injected into no container: the pod runs "
                     "without them, with no error and no event.",
                     p->o.kind, objname(&p->o, on, sizeof(on)), pc->name);
            snprintf(fix, sizeof(fix), "Add `resources: {claims: [{name: %s}]}` to each container "
                     "that uses the device.", pc->name);
            scope(ctx, emit(ctx, ctx->rule->severity, &p->o, pc->line, msg, fix), NULL, NULL,
                  p->node);
        }
    }
}

/* The pod's PodScheduled condition, if the scheduler wrote one. */
static int scheduler_saw(const struct dra_podspec *p)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(p->status, "conditions", NULL)) {
        const char *t = dd_json_str(it, "type", NULL);
        if (t && STRIEQ(t, "PodScheduled"))
            return 1;
    }
    return 0;
}

void rule__check_bypass(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, j;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        int unallocated = 0;
        /* Only a Pod carries nodeName before it exists; a live pod the scheduler placed has
         * its PodScheduled condition. */
        if (!STRIEQ(p->o.kind, "Pod") || !*p->node || !p->nclaims ||
            (m->live && scheduler_saw(p)))
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

/* The kubelet reports device health per container (ResourceHealthStatus, beta in 1.36) from
 * the driver's NodeWatchResources stream: status.containerStatuses[].allocatedResourcesStatus
 * [{name: "claim:<pod claim>[/<request>]", resources: [{resourceID, health}]}]. Nothing else
 * shows it: the container keeps running with a device its driver calls broken. */
void rule__check_device_health(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        const cJSON *cs, *ars, *res;

        cJSON_ArrayForEach(cs, dd_json_arr(p->status, "containerStatuses", NULL))
            cJSON_ArrayForEach(ars, dd_json_arr(cs, "allocatedResourcesStatus", NULL)) {
                const char *name = dd_json_str(ars, "name", NULL);
                if (!name || strncmp(name, "claim:", 6))
                    continue;
                cJSON_ArrayForEach(res, dd_json_arr(ars, "resources", NULL)) {
                    const char *h = dd_json_str(res, "health", NULL);
                    const char *id = dd_json_str(res, "resourceID", NULL);
                    if (!h || !STRIEQ(h, "Unhealthy"))
                        continue;
                    snprintf(msg, sizeof(msg),
                             "Pod %s: container %s runs with device %s (pod claim %s), which "
                             "its DRA driver reports Unhealthy; the kubelet only records it, "
                             "so the container keeps the device.",
                             objname(&p->o, on, sizeof(on)),
                             dd_json_str(cs, "name", NULL) ? dd_json_str(cs, "name", NULL) : "?",
                             id ? id : "?", name + 6);
                    snprintf(fix, sizeof(fix), "Check the device on node %s (the driver's "
                             "logs say why); recreate the pod once it is repaired, or taint "
                             "the device (a DeviceTaintRule) so no claim gets it meanwhile.",
                             *p->node ? p->node : "?");
                    scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL,
                          p->node);
                }
            }
    }
}
