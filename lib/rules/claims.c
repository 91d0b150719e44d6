/*
 * claims.c - what a claim asks for against what the cluster will give it.
 *
 *   AdminAccessNamespaceLabelMissing  adminAccess in a namespace without the label (its key
 *                                     changed in 1.34)
 *   OpaqueConfigDriverMismatch        config for a driver the claim's devices do not come from:
 *                                     the driver skips it, silently
 *   NodePrepareFailed                 opaque parameters the driver refuses when it prepares the
 *                                     claim (and, live, the kubelet's prepare error)
 *   DeviceTaintNotTolerated           every device the request could get has a taint it does not
 *                                     tolerate (1.36, DRADeviceTaints)
 *   PrioritizedListExhausted          no firstAvailable alternative can be satisfied, and why
 *   AllocationModeAllUnsatisfiable    allocationMode All with no device, or more than 32 on a node
 */
#include "rules_int.h"

#include <stdlib.h>

#include "json.h"
#include "kubever.h"
#include "nodefit.h"
#include "suggest.h"

/* The namespace label admin access needs, from 1.34 (k8s.io/api resource/v1
 * DRAAdminNamespaceLabelKey); 1.33 used resource.k8s.io/admin-access. */
#define ADMIN_LABEL "resource.kubernetes.io/admin-access"
#define ADMIN_LABEL_OLD "resource.k8s.io/admin-access"
/* AllocationResultsMaxSize: the most devices one request can be allocated. */
#define ALL_MAX 32

static int kube_minor(const struct rule_ctx *ctx)
{
    return ctx->opt->kube_minor ? ctx->opt->kube_minor : KV_DEFAULT_MINOR;
}

static const struct dra_obj *namespace_named(const struct dra_model *m, const char *name)
{
    size_t i;

    for (i = 0; i < m->namespaces.n; i++)
        if (STRIEQ(m->namespaces.v[i].name, name))
            return &m->namespaces.v[i];
    return NULL;
}

/* The request (or alternative) of c at admin access, or NULL. */
static const struct dra_request *admin_request(const struct dra_claim *c, size_t *idx)
{
    size_t i, j;

    for (i = 0; i < c->spec.nreq; i++) {
        if (c->spec.req[i].admin_access) {
            *idx = i;
            return &c->spec.req[i];
        }
        for (j = 0; j < c->spec.req[i].nsub; j++)
            if (c->spec.req[i].sub[j].admin_access) {
                *idx = i;
                return &c->spec.req[i].sub[j];
            }
    }
    return NULL;
}

void rule__check_admin_access(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, idx = 0;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const struct dra_request *r = admin_request(c, &idx);
        const char *ns = *c->o.ns ? c->o.ns : "default", *v, *old;
        const struct dra_obj *nso;
        /* An admitted claim had the label when it was created; a template's claims are yet to
         * be made by kube-controller-manager. */
        if (!r || (m->live && !c->is_template) || !(nso = namespace_named(m, ns)))
            continue;
        v = dd_json_str(nso->json, "metadata", "labels", ADMIN_LABEL, NULL);
        if (v && STRIEQ(v, "true"))
            continue;
        old = dd_json_str(nso->json, "metadata", "labels", ADMIN_LABEL_OLD, NULL);
        snprintf(msg, sizeof(msg),
                 "%s %s: request \"%s\" asks for admin access, but Namespace %s lacks the label "
                 "%s: \"true\"%s, so the API server refuses %s (%s.requests[%zu].adminAccess: "
                 "Forbidden: admin access to devices requires the `%s: true` label on the "
                 "containing namespace)%s.",
                 c->o.kind, objname(&c->o, on, sizeof(on)), r->name, ns, ADMIN_LABEL,
                 old ? " (it has " ADMIN_LABEL_OLD ", the key of 1.33: Kubernetes 1.34 renamed it)"
                     : "",
                 c->is_template ? "each claim made from it" : "the claim",
                 c->is_template ? "spec.devices" : "spec.devices", idx, ADMIN_LABEL,
                 c->is_template ? "; the pods get FailedResourceClaimCreation" : "");
        snprintf(fix, sizeof(fix), "kubectl label namespace %s %s=true (only namespaces whose "
                 "users may see every device should have it).", ns, ADMIN_LABEL);
        emit(ctx, ctx->rule->severity, &c->o, r->line, msg, fix);
    }
}

/* The driver names the selectors of the class (and request) pin, into out. */
static void request_drivers(const struct dra_model *m, const struct dra_request *r,
                            struct rule_names *out)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
    const struct dra_selector *sets[2] = { cls ? cls->sel : NULL, r->sel };
    size_t counts[2] = { cls ? cls->nsel : 0, r->nsel }, k, i, j, n;

    for (k = 0; k < 2; k++)
        for (i = 0; i < counts[k]; i++) {
            const struct cel_driver_ref *refs;
            if (!sets[k][i].prog ||
                cel_program_drivers(sets[k][i].prog, &refs, &n) != CEL_DRIVERS_SET)
                continue;
            for (j = 0; j < n; j++)
                names_add(out, refs[j].name);
        }
}

/* 1 when config entry cfg applies to request name (no `requests` list: to all). */
static int config_for(const cJSON *cfg, const char *name)
{
    const cJSON *reqs = dd_json_arr(cfg, "requests", NULL), *it;

    if (!cJSON_GetArraySize(reqs))
        return 1;
    cJSON_ArrayForEach(it, reqs)
        if (cJSON_IsString(it) && (STRIEQ(it->valuestring, name) ||
                                   (!strncmp(it->valuestring, name, strlen(name)) &&
                                    it->valuestring[strlen(name)] == '/')))
            return 1;
    return 0;
}

/* The drivers that serve the requests cfg applies to (all drivers of a class's selectors). */
static void config_drivers(const struct dra_model *m, const struct dra_claim_spec *spec,
                           const cJSON *cfg, struct rule_names *out)
{
    size_t i, j;

    for (i = 0; i < spec->nreq; i++) {
        if (!config_for(cfg, spec->req[i].name))
            continue;
        request_drivers(m, &spec->req[i], out);
        for (j = 0; j < spec->req[i].nsub; j++)
            request_drivers(m, &spec->req[i].sub[j], out);
    }
}

static void mismatch_one(struct rule_ctx *ctx, const struct dra_obj *o, const cJSON *cfg,
                         size_t idx, const char *field, const struct rule_names *drivers)
{
    const char *driver = dd_json_str(cfg, "opaque", "driver", NULL), *near;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], list[512];
    size_t len = 0, i;

    if (!driver || !drivers->n || names_has(drivers, driver))
        return;
    for (i = 0, list[0] = '\0'; i < drivers->n; i++)
        cat(list, sizeof(list), &len, "%s%s", i ? ", " : "", drivers->v[i]);
    near = sug_nearest(driver, drivers->v, drivers->n);
    len = 0;
    cat(msg, sizeof(msg), &len,
        "%s %s: %s[%zu].opaque is for driver \"%s\", but the devices it configures come from %s: "
        "drivers skip the configuration of other drivers without a word, so none of it applies "
        "and the devices run with their defaults.",
        o->kind, objname(o, on, sizeof(on)), field, idx, driver, list);
    if (near)
        cat(msg, sizeof(msg), &len, " Did you mean '%s'?", near);
    snprintf(fix, sizeof(fix), "Set %s[%zu].opaque.driver to %s.", field, idx,
             near ? near : drivers->v[0]);
    /* A class's configuration reaches every pod of the class. */
    scope(ctx, emit(ctx, ctx->rule->severity, o, 0, msg, fix),
          STRIEQ(o->kind, "DeviceClass") ? o->name : NULL, NULL, NULL);
}

void rule__check_config_driver(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i, k;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const cJSON *cfg;
        k = 0;
        cJSON_ArrayForEach(cfg, c->spec.config) {
            struct rule_names drivers = { { 0 }, 0 };
            config_drivers(m, &c->spec, cfg, &drivers);
            mismatch_one(ctx, &c->o, cfg, k++, c->is_template ? "spec.spec.devices.config"
                                                               : "spec.devices.config", &drivers);
        }
    }
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *cls = &m->classes[i];
        struct rule_names drivers = { { 0 }, 0 };
        struct dra_request r;
        const cJSON *cfg;
        memset(&r, 0, sizeof(r));
        r.class_name = cls->o.name;
        request_drivers(m, &r, &drivers);
        k = 0;
        cJSON_ArrayForEach(cfg, cls->config)
            mismatch_one(ctx, &cls->o, cfg, k++, "spec.config", &drivers);
    }
}

/* The value of gate in a FEATURE_GATES list ("A=true,B=false"): 1, 0, or -1 unset. */
static int gate_set(const char *gates, const char *gate)
{
    size_t n = strlen(gate);
    const char *p;

    for (p = gates; p && (p = strstr(p, gate)); p += n)
        if ((p == gates || p[-1] == ',') && p[n] == '=')
            return !strncmp(p + n + 1, "true", 4);
    return -1;
}

/* Whether the installed plugin of driver enables gate: 1, 0, -1 when no DaemonSet says. */
static int driver_gate(const struct dra_model *m, const char *driver, const char *gate)
{
    size_t i;

    for (i = 0; i < m->ndrivers; i++)
        if (STRIEQ(m->drivers[i].name, driver)) {
            const char *g = dra_container_env(m->drivers[i].ctr, "FEATURE_GATES", NULL);
            return g ? gate_set(g, gate) == 1 : 0;
        }
    return -1;
}

/* The driver's refusal of parameters (a config entry's opaque.parameters), into err; 1 when
 * refused. */
static int params_refused(const struct dra_model *m, const char *driver, const cJSON *params,
                          char *err, size_t size, int *assumed)
{
    const struct drv_profile *p = drv_profile_for_driver(driver);
    const char *av = dd_json_str(params, "apiVersion", NULL);
    const char *kind = dd_json_str(params, "kind", NULL);
    size_t i, j;

    *assumed = 0;
    for (i = 0; p && av && kind && i < p->nparams; i++) {
        const struct drv_param *r = &p->params[i];
        const char *v;
        int kind_ok = 0;
        if (!STRIEQ(r->api_version, av))
            continue;
        for (j = 0; j < 4 && r->kinds[j]; j++)
            kind_ok |= STRIEQ(r->kinds[j], kind);
        v = kind_ok ? dd_json_str(params, r->path[0], r->path[1], r->path[2], NULL) : NULL;
        if (!v)
            continue;
        for (j = 0; j < 8 && r->values[j] && !STRIEQ(r->values[j], v); j++)
            ;
        if (j == 8 || !r->values[j]) {
            snprintf(err, size, r->error, v);
            return 1;
        }
        for (j = 0; j < 4 && r->gated[j]; j++)
            if (STRIEQ(r->gated[j], v)) {
                int g = driver_gate(m, driver, r->gate[j]);
                if (g == 1)
                    break;
                *assumed = g < 0;
                snprintf(err, size, r->gate_error, v, r->gate[j]);
                return 1;
            }
    }
    return 0;
}

void rule__check_config_params(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], err[512];
    size_t i, k;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const cJSON *cfg;
        k = 0;
        cJSON_ArrayForEach(cfg, c->spec.config) {
            const char *driver = dd_json_str(cfg, "opaque", "driver", NULL);
            int assumed;
            k++;
            if (!driver || !params_refused(m, driver, dd_json_path(cfg, "opaque", "parameters",
                                                                   NULL), err, sizeof(err),
                                           &assumed))
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s: config[%zu] for driver %s is refused when the claim is prepared "
                     "(%s); the kubelet reports \"Failed to prepare dynamic resources: prepare "
                     "dynamic resources: NodePrepareResources failed for ResourceClaim ...\" and "
                     "the pod stays in ContainerCreating.%s",
                     c->o.kind, objname(&c->o, on, sizeof(on)), k - 1, driver, err,
                     assumed ? " Assumed: the driver's feature gates are its defaults (its "
                               "DaemonSet is not in the input)." : "");
            snprintf(fix, sizeof(fix), "Use a value driver %s accepts, or enable the feature gate "
                     "it names in the driver's installation (chart value featureGates, env "
                     "FEATURE_GATES).", driver);
            emit(ctx, assumed ? DD_SEV_WARNING : ctx->rule->severity, &c->o, 0, msg, fix);
        }
    }
}

/* ---- what the published devices offer a request ---------------------------------------- */

static const char *const filtering[] = { "NoSchedule", "NoExecute", NULL };

struct offer {
    size_t matching;      /* devices the request's class and selectors accept */
    size_t tolerated;     /* of them, with no taint the request does not tolerate */
    size_t max_per_node;  /* matching devices on the node with most */
    const char *node_max;
    const cJSON *taint;   /* a taint that keeps a matching device away */
    const char *tainted;  /* that device */
};

/* Taints of dev: its own, and DeviceTaintRules' that select it. */
static const cJSON *untolerated(const struct dra_model *m, const struct dra_slice *s,
                                const struct dra_device *d, const cJSON *tolerations)
{
    const cJSON *t = fit_untolerated(tolerations, dd_json_arr(d->json, "taints", NULL), filtering);
    size_t i;

    for (i = 0; !t && i < m->resource_other.n; i++) {
        const struct dra_obj *o = &m->resource_other.v[i];
        const cJSON *sel = dd_json_path(o->json, "spec", "deviceSelector", NULL);
        const char *dr = dd_json_str(sel, "driver", NULL), *pool = dd_json_str(sel, "pool", NULL);
        const char *dev = dd_json_str(sel, "device", NULL);
        cJSON *arr;
        if (!STRIEQ(o->kind, "DeviceTaintRule") || (dr && !STRIEQ(dr, s->driver)) ||
            (pool && !STRIEQ(pool, s->pool)) || (dev && !STRIEQ(dev, d->name)))
            continue;
        /* A rule without a deviceSelector taints every device of the cluster. */
        if (!(arr = cJSON_CreateArray()))
            return NULL;
        cJSON_AddItemReferenceToArray(arr, (cJSON *)dd_json_path(o->json, "spec", "taint", NULL));
        if (fit_untolerated(tolerations, arr, filtering))
            t = dd_json_path(o->json, "spec", "taint", NULL);
        cJSON_Delete(arr);
    }
    return t;
}

static void offer_of(const struct dra_model *m, const struct dra_class *cls,
                     const struct dra_request *r, int taints, struct offer *o)
{
    size_t i, j, k, *per = calloc(m->nslices + 1, sizeof(*per));

    memset(o, 0, sizeof(*o));
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        for (j = 0; j < s->ndev; j++) {
            const cJSON *t;
            if (!rule__request_admits(cls, r, &s->dev[j].dev))
                continue;
            o->matching++;
            t = taints ? untolerated(m, s, &s->dev[j], r->tolerations) : NULL;
            if (!t)
                o->tolerated++;
            else if (!o->taint) {
                o->taint = t;
                o->tainted = s->dev[j].name;
            }
            /* Per node: slices with the same nodeName count together. */
            if (per && *s->node) {
                for (k = 0; k < i && !STRIEQ(m->slices[k].node, s->node); k++)
                    ;
                if (++per[k] > o->max_per_node) {
                    o->max_per_node = per[k];
                    o->node_max = s->node;
                }
            }
        }
    }
    free(per);
}

/* Device taints filter allocation from 1.36 (DRADeviceTaints beta, on by default). */
static int taints_on(const struct rule_ctx *ctx)
{
    return kube_minor(ctx) >= 36;
}

static void taint_one(struct rule_ctx *ctx, const struct dra_claim *c, const struct dra_request *r)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(ctx->m, r->class_name) : NULL;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    struct offer o;

    if (!cls)
        return;
    offer_of(ctx->m, cls, r, 1, &o);
    if (!o.matching || o.tolerated)
        return;
    snprintf(msg, sizeof(msg),
             "%s %s: every one of the %zu device(s) request \"%s\" could get has a taint it does "
             "not tolerate (device %s: %s=%s:%s), and the scheduler skips tainted devices without "
             "saying so (\"cannot allocate all claims\").",
             c->o.kind, objname(&c->o, on, sizeof(on)), o.matching, r->name, o.tainted,
             dd_json_str(o.taint, "key", NULL) ? dd_json_str(o.taint, "key", NULL) : "",
             dd_json_str(o.taint, "value", NULL) ? dd_json_str(o.taint, "value", NULL) : "",
             dd_json_str(o.taint, "effect", NULL) ? dd_json_str(o.taint, "effect", NULL) : "");
    snprintf(fix, sizeof(fix), "Add a toleration for it to request \"%s\" (tolerations: [{key: "
             "%s, operator: Exists}]) if the device may be used so, or remove the taint (the "
             "driver's, or a DeviceTaintRule's).", r->name,
             dd_json_str(o.taint, "key", NULL) ? dd_json_str(o.taint, "key", NULL) : "...");
    scope(ctx, emit(ctx, ctx->rule->severity, &c->o, r->line, msg, fix), cls->o.name, NULL, NULL);
}

/* A pod evicted by the device taint manager (NoExecute). */
static void evicted(struct rule_ctx *ctx, const struct dra_podspec *p)
{
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(p->status, "conditions", NULL)) {
        const char *t = dd_json_str(it, "type", NULL), *r = dd_json_str(it, "reason", NULL);
        if (!t || !r || !STRIEQ(t, "DisruptionTarget") || !STRIEQ(r, "DeletionByDeviceTaintManager"))
            continue;
        snprintf(msg, sizeof(msg),
                 "Pod %s is being evicted by the device taint manager (DisruptionTarget: %s): a "
                 "device of its claims got a taint with effect NoExecute that its claim does not "
                 "tolerate.", objname(&p->o, on, sizeof(on)),
                 dd_json_str(it, "message", NULL) ? dd_json_str(it, "message", NULL) : r);
        snprintf(fix, sizeof(fix), "Find the taint on the claim's devices (kubectl get "
                 "resourceslices -o yaml; kubectl get devicetaintrules); tolerate it in the claim "
                 "with tolerationSeconds if the pod may finish its work first.");
        scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL, p->node);
        return;
    }
}

void rule__check_device_taints(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i, j, k;

    if (!taints_on(ctx))
        return;
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        if (c->allocated)
            continue;
        for (j = 0; j < c->spec.nreq; j++) {
            taint_one(ctx, c, &c->spec.req[j]);
            for (k = 0; k < c->spec.req[j].nsub; k++)
                taint_one(ctx, c, &c->spec.req[j].sub[k]);
        }
    }
    for (i = 0; m->live && i < m->npods; i++)
        evicted(ctx, &m->pods[i]);
}

/* Why alternative r cannot be satisfied from the published devices, into why; 0 when it can
 * (or nobody can tell: no devices of its drivers are published). */
static int alternative_fails(const struct rule_ctx *ctx, const struct dra_request *r, char *why,
                             size_t size)
{
    const struct dra_model *m = ctx->m;
    const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
    struct rule_names drivers = { { 0 }, 0 };
    struct offer o;
    size_t i, seen = 0;

    if (!r->class_name)
        return 0;
    if (!cls) {
        snprintf(why, size, "DeviceClass %s does not exist", r->class_name);
        return 1;
    }
    /* Judged only against a driver whose devices are published. */
    request_drivers(m, r, &drivers);
    for (i = 0; i < m->nslices; i++)
        seen += !drivers.n || names_has(&drivers, m->slices[i].driver);
    if (!seen)
        return 0;
    offer_of(m, cls, r, taints_on(ctx), &o);
    if (!o.matching)
        snprintf(why, size, "no published device matches class %s and its selectors", cls->o.name);
    else if (!o.tolerated)
        snprintf(why, size, "all %zu matching device(s) have a taint it does not tolerate",
                 o.matching);
    else if (!r->all && (int64_t)o.tolerated < r->count)
        snprintf(why, size, "it needs %lld device(s), %zu match", (long long)r->count,
                 o.tolerated);
    else
        return 0;
    return 1;
}

void rule__check_first_available(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], why[400];
    size_t i, j, k, len;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        for (j = 0; j < c->spec.nreq; j++) {
            const struct dra_request *r = &c->spec.req[j];
            size_t failed = 0;
            if (!r->nsub || c->allocated)
                continue;
            for (k = 0; k < r->nsub; k++)
                failed += alternative_fails(ctx, &r->sub[k], why, sizeof(why));
            if (failed != r->nsub)
                continue;
            len = 0;
            cat(msg, sizeof(msg), &len, "%s %s: request \"%s\" lists %zu alternatives "
                "(firstAvailable), and none can be satisfied, so the claim is never allocated "
                "(\"cannot allocate all claims\"):", c->o.kind, objname(&c->o, on, sizeof(on)),
                r->name, r->nsub);
            for (k = 0; k < r->nsub; k++) {
                alternative_fails(ctx, &r->sub[k], why, sizeof(why));
                cat(msg, sizeof(msg), &len, " %s: %s;", r->sub[k].name, why);
            }
            msg[len - 1] = '.';
            snprintf(fix, sizeof(fix), "Add an alternative the cluster can give, or fix the one "
                     "that should work (its class, selectors or count).");
            emit(ctx, m->live ? ctx->rule->severity : DD_SEV_WARNING, &c->o, r->line, msg, fix);
        }
    }
}

static void all_one(struct rule_ctx *ctx, const struct dra_claim *c, const struct dra_request *r)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(ctx->m, r->class_name) : NULL;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    struct rule_names drivers = { { 0 }, 0 };
    struct offer o;
    size_t i, seen = 0;

    if (!r->all || !cls)
        return;
    request_drivers(ctx->m, r, &drivers);
    for (i = 0; i < ctx->m->nslices; i++)
        seen += drivers.n && names_has(&drivers, ctx->m->slices[i].driver);
    offer_of(ctx->m, cls, r, 0, &o);
    if (o.max_per_node > ALL_MAX) {
        snprintf(msg, sizeof(msg),
                 "%s %s: request \"%s\" asks for all devices of class %s, but node %s has %zu "
                 "matching devices and one request can be allocated at most %d: the scheduler "
                 "gives up on that node without a word (\"cannot allocate all claims\").",
                 c->o.kind, objname(&c->o, on, sizeof(on)), r->name, cls->o.name, o.node_max,
                 o.max_per_node, ALL_MAX);
        snprintf(fix, sizeof(fix), "Narrow request \"%s\" with selectors to at most %d devices "
                 "per node, or ask for an exact count.", r->name, ALL_MAX);
        emit(ctx, ctx->rule->severity, &c->o, r->line, msg, fix);
    } else if (seen && !o.matching) {
        snprintf(msg, sizeof(msg),
                 "%s %s: request \"%s\" asks for all devices of class %s, and no published device "
                 "matches: allocation fails (\"cannot allocate all claims\"; the scheduler logs "
                 "\"no devices found\").", c->o.kind, objname(&c->o, on, sizeof(on)), r->name,
                 cls->o.name);
        snprintf(fix, sizeof(fix), "Check the class's and the request's selectors against the "
                 "devices (dra-doctor explain).");
        emit(ctx, ctx->m->live ? ctx->rule->severity : DD_SEV_WARNING, &c->o, r->line, msg, fix);
    }
}

void rule__check_all_mode(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i, j, k;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        if (c->allocated)
            continue;
        for (j = 0; j < c->spec.nreq; j++) {
            all_one(ctx, c, &c->spec.req[j]);
            for (k = 0; k < c->spec.req[j].nsub; k++)
                all_one(ctx, c, &c->spec.req[j].sub[k]);
        }
    }
}
