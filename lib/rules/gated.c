/*
 * gated.c - checks of DRA features that come and go with feature gates, release by release
 * (lib/model/kubever.c has the gates):
 *
 *   DeviceTaintRuleEvictsAll       a NoExecute DeviceTaintRule whose selector matches every
 *                                  device: it evicts every DRA pod of the cluster
 *   ExtendedResourceNotBacked      a pod asks for an extended resource that no DeviceClass
 *                                  maps and no device plugin offers
 *   ExtendedResourceConflict       two DeviceClasses map one extended resource, or a node's
 *                                  device plugin still advertises it
 *   BindingConditionsNotMet        an allocated device's binding conditions are not True
 *                                  (live)
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

/* ---- DeviceTaintRuleEvictsAll -------------------------------------------------------- */

/* How many published devices the rule's deviceSelector matches; *all: of every device. */
static size_t taint_rule_matches(const struct dra_model *m, const cJSON *sel, size_t *total)
{
    const char *dr = dd_json_str(sel, "driver", NULL), *pool = dd_json_str(sel, "pool", NULL);
    const char *dev = dd_json_str(sel, "device", NULL);
    size_t i, j, n = 0;

    *total = 0;
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        for (j = 0; j < s->ndev; j++) {
            (*total)++;
            n += (!dr || STRIEQ(dr, s->driver)) && (!pool || STRIEQ(pool, s->pool)) &&
                 (!dev || STRIEQ(dev, s->dev[j].name));
        }
    }
    return n;
}

void rule__check_taint_rule_scope(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], gate[128];
    size_t i, total, hit;

    for (i = 0; i < m->resource_other.n; i++) {
        const struct dra_obj *o = &m->resource_other.v[i];
        const cJSON *sel = dd_json_path(o->json, "spec", "deviceSelector", NULL);
        const char *effect = dd_json_str(o->json, "spec", "taint", "effect", NULL);
        const char *key = dd_json_str(o->json, "spec", "taint", "key", NULL);
        int empty = !dd_json_str(sel, "driver", NULL) && !dd_json_str(sel, "pool", NULL) &&
                    !dd_json_str(sel, "device", NULL);
        size_t len = 0;

        if (!STRIEQ(o->kind, "DeviceTaintRule") || !effect || !STRIEQ(effect, "NoExecute"))
            continue;
        /* Where the release ignores the rule, it evicts nothing (a live object's version is
         * served: its gate decides). */
        if (!(m->live ? rule__gate(ctx, kv_gate_exists(ctx->gates->minor,
                                                       KV_GATE_DEVICE_TAINT_RULES)
                                                ? KV_GATE_DEVICE_TAINT_RULES
                                                : KV_GATE_DEVICE_TAINTS)
                      : kv_taint_rules_effective(ctx->gates, rule__api_ver(o))))
            continue;
        hit = taint_rule_matches(m, sel, &total);
        if (!empty && (!total || hit < total))
            continue;
        cat(msg, sizeof(msg), &len, "DeviceTaintRule %s taints %s with effect NoExecute (key %s): "
            "the device taint eviction controller deletes every pod whose claim has one of them "
            "and does not tolerate the taint, so every DRA pod of the cluster goes, whatever its "
            "namespace or priority (kubernetes/kubernetes#141422).", o->name,
            empty ? "every device of every driver (its deviceSelector names no driver, pool or "
                    "device)" : "every published device",
            key ? key : "(none)");
        if (!empty)
            cat(msg, sizeof(msg), &len, " Its selector matches all %zu of them.", total);
        cat(msg, sizeof(msg), &len, " Kubernetes 1.%d honours it: %s.", ctx->gates->minor,
            kv_gate_says(ctx->gates, kv_gate_exists(ctx->gates->minor,
                                                    KV_GATE_DEVICE_TAINT_RULES)
                                         ? KV_GATE_DEVICE_TAINT_RULES
                                         : KV_GATE_DEVICE_TAINTS, gate, sizeof(gate)));
        snprintf(fix, sizeof(fix), "Narrow spec.deviceSelector to the driver, pool or device "
                 "meant (deviceSelector: {driver: ..., pool: ...}), or use effect NoSchedule to "
                 "stop new allocations without evicting.");
        emit(ctx, ctx->rule->severity, o, 0, msg, fix);
    }
}

/* ---- Extended resources backed by DRA ------------------------------------------------ */

/* The class that backs extended resource name for the scheduler, or NULL: the implicit
 * deviceclass.resource.kubernetes.io/<class>, else the spec.extendedResourceName a class
 * declares (with DRAExtendedResource on: off, the API server drops the field), the newest
 * when several do (extendedresourcecache.go: the newer, then the lower name).  *n counts the
 * classes declaring it. */
static const struct dra_class *backing_class(const struct rule_ctx *ctx, const char *name,
                                             size_t *n)
{
    const struct dra_model *m = ctx->m;
    const struct dra_class *best = NULL;
    size_t i;

    *n = 0;
    if (!strncmp(name, "deviceclass.resource.kubernetes.io/", 35)) {
        best = dra_find_class(m, name + 35);
        *n = best != NULL;
        return best;
    }
    if (!rule__gate(ctx, KV_GATE_EXTENDED_RESOURCE))
        return NULL;
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *c = &m->classes[i];
        const char *ern = dd_json_str(c->o.json, "spec", "extendedResourceName", NULL);
        const char *t = dd_json_str(c->o.json, "metadata", "creationTimestamp", NULL);
        const char *bt = best ? dd_json_str(best->o.json, "metadata", "creationTimestamp", NULL)
                              : NULL;
        int cmp;
        if (!ern || !STRIEQ(ern, name))
            continue;
        (*n)++;
        /* RFC 3339 in UTC compares as text. */
        cmp = t && bt ? strcmp(t, bt) : 0;
        if (!best || cmp > 0 || (cmp == 0 && strcmp(c->o.name, best->o.name) < 0))
            best = c;
    }
    return best;
}

/* The Nodes whose device plugins advertise name (status.allocatable[name] > 0), counted;
 * *first names one. */
static size_t plugin_nodes(const struct dra_model *m, const char *name, const char **first)
{
    size_t i, n = 0;

    *first = NULL;
    for (i = 0; i < m->nodes.n; i++) {
        const char *v = dd_json_str(m->nodes.v[i].json, "status", "allocatable", name, NULL);
        if (v && strcmp(v, "0")) {
            if (!n)
                *first = m->nodes.v[i].name;
            n++;
        }
    }
    return n;
}

/* The extended resources pod spec p asks for, each once, into out. */
static void extended_names(const struct dra_podspec *p, struct rule_names *out)
{
    static const char *const kinds[] = { "containers", "initContainers" };
    static const char *const lists[] = { "requests", "limits" };
    const cJSON *c, *r;
    size_t i, j;

    out->n = 0;
    for (i = 0; i < 2; i++)
        cJSON_ArrayForEach(c, dd_json_arr(p->spec, kinds[i], NULL))
            for (j = 0; j < 2; j++)
                cJSON_ArrayForEach(r, dd_json_path(c, "resources", lists[j], NULL))
                    if (r->string && dra_extended_resource_name(r->string) &&
                        !(cJSON_IsString(r) && !strcmp(r->valuestring, "0")))
                        names_add(out, r->string);
}

void rule__check_extended_backed(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], gate[128];
    struct rule_names names;
    size_t i, j, n;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        extended_names(p, &names);
        for (j = 0; j < names.n; j++) {
            const char *name = names.v[j], *node;
            const struct dra_class *cls = backing_class(ctx, name, &n);
            size_t declared = 0, k;
            /* Evidence of absence: a live cluster's Nodes, or a repository that holds its
             * Nodes (or says it is the whole cluster). */
            if (cls || plugin_nodes(m, name, &node) ||
                !(m->live || m->nodes.n || ctx->opt->complete))
                continue;
            for (k = 0; k < m->nclasses; k++) {
                const char *ern = dd_json_str(m->classes[k].o.json, "spec",
                                              "extendedResourceName", NULL);
                declared += ern && STRIEQ(ern, name);
            }
            if (declared)
                snprintf(msg, sizeof(msg),
                         "%s %s asks for extended resource %s, which a DeviceClass maps, but "
                         "Kubernetes 1.%d drops spec.extendedResourceName (%s), and no node's "
                         "device plugin offers it: the scheduler keeps the pod Pending "
                         "(\"Insufficient %s\").", p->o.kind, objname(&p->o, on, sizeof(on)),
                         name, ctx->gates->minor,
                         kv_gate_says(ctx->gates, KV_GATE_EXTENDED_RESOURCE, gate, sizeof(gate)),
                         name);
            else
                snprintf(msg, sizeof(msg),
                         "%s %s asks for extended resource %s, which no DeviceClass maps "
                         "(spec.extendedResourceName, or deviceclass.resource.kubernetes.io/"
                         "<class>) and no node's device plugin offers (status.allocatable, %zu "
                         "node(s)): the scheduler keeps the pod Pending (\"Insufficient %s\").",
                         p->o.kind, objname(&p->o, on, sizeof(on)), name, m->nodes.n, name);
            snprintf(fix, sizeof(fix), "Give a DeviceClass of the driver that has these devices "
                     "spec.extendedResourceName: %s%s, or install the device plugin that "
                     "advertises it, or correct the name in the pod's resources.", name,
                     declared ? " on a release with DRAExtendedResource on (1.36+)" : "");
            scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL, NULL);
        }
    }
}

void rule__check_extended_conflict(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX];
    size_t i, n, nodes;

    if (!rule__gate(ctx, KV_GATE_EXTENDED_RESOURCE))
        return;
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *c = &m->classes[i], *best;
        const char *name = dd_json_str(c->o.json, "spec", "extendedResourceName", NULL), *node;
        size_t len = 0;
        if (!name)
            continue;
        best = backing_class(ctx, name, &n);
        nodes = plugin_nodes(m, name, &node);
        if (best != c && n > 1) {
            cat(msg, sizeof(msg), &len,
                "DeviceClass %s maps extended resource %s, as DeviceClass %s does: the scheduler "
                "uses one class per name, the newest (then the lower name), so pods asking for "
                "%s get %s's devices and never this class's.", c->o.name, name, best->o.name,
                name, best->o.name);
            if (!dd_json_str(c->o.json, "metadata", "creationTimestamp", NULL))
                cat(msg, sizeof(msg), &len, " (Which is newer manifests cannot tell: %s, the "
                    "lower name, was taken here.)", best->o.name);
        }
        if (best == c && nodes)
            cat(msg, sizeof(msg), &len,
                "DeviceClass %s maps extended resource %s, but %zu node(s) (%s%s) still "
                "advertise %s through a device plugin: there the device plugin serves the pods "
                "that ask for it, not this class (the scheduler backs a name with DRA only on "
                "nodes whose allocatable has none of it).", c->o.name, name, nodes, node,
                nodes > 1 ? ", ..." : "", name);
        if (!len)
            continue;
        snprintf(fix, sizeof(fix), "Map %s from one DeviceClass only (remove "
                 "spec.extendedResourceName from the others), and remove the device plugin "
                 "from nodes whose devices DRA should serve.", name);
        scope(ctx, emit(ctx, ctx->rule->severity, &c->o, 0, msg, fix), c->o.name, NULL,
              nodes ? node : NULL);
    }
}

/* ---- BindingConditionsNotMet ------------------------------------------------------------ */

/* The status.devices entry of claim c for allocation result r, or NULL. */
static const cJSON *device_status(const cJSON *claim, const cJSON *r)
{
    const cJSON *d;

    cJSON_ArrayForEach(d, dd_json_arr(claim, "status", "devices", NULL)) {
        const char *dr = dd_json_str(d, "driver", NULL), *p = dd_json_str(d, "pool", NULL),
                   *dv = dd_json_str(d, "device", NULL);
        if (dr && p && dv && dd_json_str(r, "driver", NULL) && dd_json_str(r, "pool", NULL) &&
            dd_json_str(r, "device", NULL) && STRIEQ(dr, dd_json_str(r, "driver", NULL)) &&
            STRIEQ(p, dd_json_str(r, "pool", NULL)) && STRIEQ(dv, dd_json_str(r, "device", NULL)))
            return d;
    }
    return NULL;
}

/* The condition of type t of a status.devices entry, or NULL. */
static const cJSON *condition(const cJSON *dev, const char *t)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, dd_json_arr(dev, "conditions", NULL))
        if (dd_json_str(c, "type", NULL) && STRIEQ(dd_json_str(c, "type", NULL), t))
            return c;
    return NULL;
}

/* A claim allocated a device with binding conditions (DRADeviceBindingConditions): the
 * scheduler binds the pod only once each is True in the claim's status.devices, and gives up
 * after its binding timeout (isClaimReadyForBinding, pkg/scheduler/framework/plugins/
 * dynamicresources). */
void rule__check_binding_conditions(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], gate[128];
    size_t i;

    /* The scheduler waits only with both gates on (dynamicresources.go, DeviceBindingAndStatus). */
    if (!m->live || !rule__gate(ctx, KV_GATE_BINDING_CONDITIONS) ||
        !rule__gate(ctx, KV_GATE_CLAIM_DEVICE_STATUS))
        return;
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const cJSON *r, *t;
        if (c->is_template || !c->binding)
            continue;
        cJSON_ArrayForEach(r, c->alloc_results) {
            const cJSON *dev, *cond;
            char missing[512] = "", failed[512] = "";
            size_t ml = 0, fl = 0, len = 0;
            /* Most devices have no binding conditions: their status is not looked up. */
            if (!cJSON_GetArraySize(dd_json_arr(r, "bindingFailureConditions", NULL)) &&
                !cJSON_GetArraySize(dd_json_arr(r, "bindingConditions", NULL)))
                continue;
            dev = device_status(c->o.json, r);
            cJSON_ArrayForEach(t, dd_json_arr(r, "bindingFailureConditions", NULL))
                if (cJSON_IsString(t) && (cond = condition(dev, t->valuestring)) &&
                    dd_json_str(cond, "status", NULL) &&
                    STRIEQ(dd_json_str(cond, "status", NULL), "True"))
                    cat(failed, sizeof(failed), &fl, "%s%s (reason %s: %s)", fl ? ", " : "",
                        t->valuestring, dd_json_str(cond, "reason", NULL) ?
                        dd_json_str(cond, "reason", NULL) : "-",
                        dd_json_str(cond, "message", NULL) ? dd_json_str(cond, "message", NULL) : "");
            cJSON_ArrayForEach(t, dd_json_arr(r, "bindingConditions", NULL))
                if (cJSON_IsString(t) && (!(cond = condition(dev, t->valuestring)) ||
                                          !dd_json_str(cond, "status", NULL) ||
                                          !STRIEQ(dd_json_str(cond, "status", NULL), "True")))
                    cat(missing, sizeof(missing), &ml, "%s%s", ml ? ", " : "", t->valuestring);
            if (!ml && !fl)
                continue;
            cat(msg, sizeof(msg), &len, "ResourceClaim %s is allocated device %s/%s/%s, which "
                "has binding conditions: ", objname(&c->o, on, sizeof(on)),
                dd_json_str(r, "driver", NULL) ? dd_json_str(r, "driver", NULL) : "?",
                dd_json_str(r, "pool", NULL) ? dd_json_str(r, "pool", NULL) : "?",
                dd_json_str(r, "device", NULL) ? dd_json_str(r, "device", NULL) : "?");
            if (fl)
                cat(msg, sizeof(msg), &len, "failure condition %s is True, so the scheduler "
                    "gives the device up (\"device binding failed\") and tries again.", failed);
            else
                cat(msg, sizeof(msg), &len, "%s %s not True in the claim's status.devices%s, so "
                    "the scheduler holds the pod before binding (\"waiting for binding "
                    "conditions for device on node ...\") and gives the device up after its "
                    "binding timeout (600 s by default, \"device binding timeout\").", missing,
                    ml && strchr(missing, ',') ? "are" : "is",
                    dev ? "" : " (the device has no status entry at all)");
            cat(msg, sizeof(msg), &len, " Kubernetes 1.%d: %s.", ctx->gates->minor,
                kv_gate_says(ctx->gates, KV_GATE_BINDING_CONDITIONS, gate, sizeof(gate)));
            snprintf(fix, sizeof(fix), "The component that prepares device %s (the driver's "
                     "attach controller) must set %s True in status.devices; check it runs and "
                     "may write claim status (resourceclaims/driver, ClaimStatusRBACDenied).",
                     dd_json_str(r, "device", NULL) ? dd_json_str(r, "device", NULL) : "?",
                     fl ? "the binding conditions" : missing);
            scope(ctx, emit(ctx, fl ? DD_SEV_ERROR : ctx->rule->severity, &c->o, 0, msg, fix),
                  NULL, dd_json_str(r, "driver", NULL), NULL);
        }
    }
}
