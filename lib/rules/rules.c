/*
 * rules.c - the rule table and the engine that runs it.  The checks live in one file per family
 * (rules_int.h lists them): claims.c (claims and references), drivers.c (drivers, RBAC and their
 * kubelet plugins), selectors.c, inventory.c (devices and pools), scheduling.c (nodes and
 * scheduling), runtime.c (runtime and CDI), gated.c (features that come with feature gates),
 * shapes.c (objects as the API server decodes and admits them).  Checks read the model only and append findings;
 * they never print, never allocate outside the findings and short-lived locals, and never look
 * at the network or the file system.
 */
#include "rules_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/json.h"
#include "model/drivers.h"
#include "rules/suggest.h"

/* Surfaces: most rules judge a whole snapshot, lint's or a live cluster's; those that also
 * judge one object at admission say so (ALL). */
#define OFFLINE_LIVE (DD_LINT | DD_LIVE)
#define ALL (DD_LINT | DD_LIVE | DD_ADMISSION)

/* Pipeline order: the input is read -> claim created -> references resolve -> driver
 * publishes -> selector matches -> enough devices -> CDI injects. */
static const struct dd_rule rule_table[] = {
    { "InputUnreadable", DD_SEV_ERROR, DD_STEP_NONE, DD_LINT,
      "A file or document cannot be read (malformed, oversized, unreadable): nothing in it is "
      "checked (lint only)", NULL, DD_SCOPE_CLUSTER, NULL },
    { "InputDuplicateKey", DD_SEV_WARNING, DD_STEP_NONE, DD_LINT,
      "A mapping repeats a key: kubectl keeps the last value and silently drops the earlier one "
      "(lint only)", NULL, DD_SCOPE_CLUSTER, NULL },
    { "InputNotKubernetes", DD_SEV_WARNING, DD_STEP_NONE, DD_LINT,
      "A document is not a Kubernetes object, or lacks a proper apiVersion and kind (lint only)",
      NULL, DD_SCOPE_CLUSTER, NULL },
    { "HelmChartNotRendered", DD_SEV_INFO, DD_STEP_NONE, DD_LINT,
      "Helm or Go template files are not checked: render the chart first (lint only)", NULL,
      DD_SCOPE_CLUSTER, NULL },
    { "ObjectVariants", DD_SEV_INFO, DD_STEP_NONE, DD_LINT,
      "One object is defined in several files (per-platform copies, overlays): each variant is "
      "checked with the variants beside it, never counted together (lint only)", NULL,
      DD_SCOPE_CLUSTER, NULL },
    { "APIVersionNotServed", DD_SEV_ERROR, DD_STEP_NONE, DD_LINT,
      "An object uses a resource.k8s.io version the target Kubernetes release does not serve",
      rule__check_api_versions, DD_SCOPE_NO_PODS, NULL },
    { "FieldNotInAPIVersion", DD_SEV_ERROR, DD_STEP_NONE, DD_LINT,
      "An object has a field its resource.k8s.io version does not have (another version's "
      "shape): the API server's strict decoding refuses it (lint only)",
      rule__check_field_shapes, DD_SCOPE_NO_PODS, NULL },
    { "PodClaimSourceRemoved", DD_SEV_ERROR, DD_STEP_NONE, DD_LINT,
      "A pod's resourceClaims entry uses `source`, removed in Kubernetes 1.31",
      rule__check_claim_source, DD_SCOPE_POD, NULL },
    { "PodClaimFieldsRemoved", DD_SEV_ERROR, DD_STEP_NONE, DD_LIVE,
      "A workload's pods are refused for a claim entry without a name, which its template has: "
      "a mutating webhook or policy removed it (live clusters)",
      rule__check_claim_fields_removed, DD_SCOPE_EVENTS, NULL },
    { "ContainerClaimNameUnknown", DD_SEV_ERROR, DD_STEP_NONE, DD_LINT,
      "A container's resources.claims names a claim the pod does not have",
      rule__check_container_claims, DD_SCOPE_POD, NULL },
    { "AdminAccessNamespaceLabelMissing", DD_SEV_ERROR, DD_STEP_CLAIM, OFFLINE_LIVE,
      "A claim asks for admin access in a namespace without the admin-access label",
      rule__check_admin_access, DD_SCOPE_NO_PODS, NULL },
    { "QuotaExceeded", DD_SEV_ERROR, DD_STEP_CLAIM, ALL,
      "Claims need more DRA devices or claim objects than a ResourceQuota allows", rule__check_quota,
      DD_SCOPE_QUOTA, NULL },
    { "ClaimNotFound", DD_SEV_WARNING, DD_STEP_CLAIM, OFFLINE_LIVE,
      "A pod references a ResourceClaim that does not exist", rule__check_claim_ref, DD_SCOPE_POD, NULL },
    { "ClaimTemplateNotFound", DD_SEV_WARNING, DD_STEP_CLAIM, ALL,
      "A pod references a ResourceClaimTemplate that does not exist", rule__check_template_ref,
      DD_SCOPE_POD, NULL },
    { "DeviceClassNotFound", DD_SEV_WARNING, DD_STEP_CLASS, ALL,
      "A claim requests a DeviceClass that does not exist", rule__check_class_ref,
      DD_SCOPE_NO_PODS, NULL },
    { "ExtendedResourceNotBacked", DD_SEV_ERROR, DD_STEP_CLASS, OFFLINE_LIVE,
      "A pod asks for an extended resource that no DeviceClass maps and no device plugin offers",
      rule__check_extended_backed, DD_SCOPE_POD, NULL },
    { "ExtendedResourceConflict", DD_SEV_WARNING, DD_STEP_CLASS, OFFLINE_LIVE,
      "Two DeviceClasses map one extended resource, or a node's device plugin still advertises "
      "it: one of them is never used", rule__check_extended_conflict, DD_SCOPE_NO_PODS, NULL },
    { "DriverRBACDenied", DD_SEV_ERROR, DD_STEP_DRIVER, OFFLINE_LIVE,
      "A DRA driver's ServiceAccount may not create, update and delete ResourceSlices",
      rule__check_rbac, DD_SCOPE_NO_PODS, NULL },
    { "DriverNotPublishing", DD_SEV_ERROR, DD_STEP_DRIVER, DD_LIVE,
      "A DRA driver is installed but publishes no ResourceSlices (live clusters only)",
      rule__check_publishing, DD_SCOPE_NO_PODS, NULL },
    { "DriverNotPublishingOnNode", DD_SEV_ERROR, DD_STEP_DRIVER, DD_LIVE,
      "A driver's plugin is ready on a node but publishes no ResourceSlice there, or only "
      "empty ones (live clusters only)", rule__check_publishing_on_node, DD_SCOPE_NO_PODS, NULL },
    { "DriverDaemonSetMissingOnNode", DD_SEV_ERROR, DD_STEP_DRIVER, OFFLINE_LIVE,
      "A driver's plugin DaemonSet cannot run on the nodes that need its devices",
      rule__check_plugin_nodes, DD_SCOPE_POD_PART, rule__check_plugin_nodes_pods },
    { "PoolIncomplete", DD_SEV_WARNING, DD_STEP_DRIVER, OFFLINE_LIVE,
      "A pool has fewer slices of its newest generation than resourceSliceCount says, or "
      "slices disagreeing on it", rule__check_pool_complete, DD_SCOPE_NO_PODS, NULL },
    { "PoolInvalid", DD_SEV_ERROR, DD_STEP_DRIVER, OFFLINE_LIVE,
      "A pool holds the same device name twice (one pool name published from several nodes)",
      rule__check_pool_valid, DD_SCOPE_NO_PODS, NULL },
    { "SliceNodeSelectionMatchesNoNode", DD_SEV_ERROR, DD_STEP_DRIVER, OFFLINE_LIVE,
      "A ResourceSlice's nodeName or nodeSelector matches no node", rule__check_slice_nodes,
      DD_SCOPE_NO_PODS, NULL },
    { "SelectorSyntaxError", DD_SEV_ERROR, DD_STEP_SELECTOR, ALL,
      "A CEL device selector does not compile or is not a boolean", rule__check_syntax,
      DD_SCOPE_NO_PODS, NULL },
    { "SelectorMatchesNoDriver", DD_SEV_ERROR, DD_STEP_SELECTOR, ALL,
      "A device selector requires a driver name that no known DRA driver has", rule__check_driver,
      DD_SCOPE_NO_PODS, NULL },
    { "SelectorUnknownAttribute", DD_SEV_WARNING, DD_STEP_SELECTOR, ALL,
      "A device selector reads an attribute or capacity no published device has", rule__check_attrs,
      DD_SCOPE_NO_PODS, NULL },
    { "SelectorRuntimeError", DD_SEV_ERROR, DD_STEP_SELECTOR, OFFLINE_LIVE,
      "A device selector fails with a CEL runtime error on a published device, which aborts "
      "the allocation of every claim that uses it", rule__check_runtime, DD_SCOPE_NO_PODS, NULL },
    { "DeviceTaintNotTolerated", DD_SEV_ERROR, DD_STEP_DEVICES, OFFLINE_LIVE,
      "Every device a request could get has a taint it does not tolerate", rule__check_device_taints,
      DD_SCOPE_POD_PART, rule__check_device_taints_pods },
    { "DeviceTaintRuleEvictsAll", DD_SEV_WARNING, DD_STEP_NONE, ALL,
      "A NoExecute DeviceTaintRule's selector matches every device: it evicts every DRA pod",
      rule__check_taint_rule_scope, DD_SCOPE_NO_PODS, NULL },
    { "PrioritizedListExhausted", DD_SEV_ERROR, DD_STEP_DEVICES, OFFLINE_LIVE,
      "None of a request's firstAvailable alternatives can be satisfied",
      rule__check_first_available, DD_SCOPE_NO_PODS, NULL },
    { "AllocationModeAllUnsatisfiable", DD_SEV_ERROR, DD_STEP_DEVICES, OFFLINE_LIVE,
      "A request for all devices matches none, or more than 32 on a node", rule__check_all_mode,
      DD_SCOPE_NO_PODS, NULL },
    { "DevicesDoNotFit", DD_SEV_WARNING, DD_STEP_DEVICES, ALL,
      "No node can allocate a pod's claims together, as kube-scheduler's allocator decides it: "
      "per node, which request, constraint, counter or capacity fails", rule__check_fit,
      DD_SCOPE_POD, NULL },
    { "PodConstraintsExcludeDeviceNodes", DD_SEV_ERROR, DD_STEP_DEVICES, OFFLINE_LIVE,
      "The pod's nodeSelector, node affinity or untolerated taints rule out every node that has "
      "its devices", rule__check_pod_constraints, DD_SCOPE_POD, NULL },
    { "ClaimStatusRBACDenied", DD_SEV_ERROR, DD_STEP_ALLOCATED, OFFLINE_LIVE,
      "A scheduler or a driver that writes ResourceClaim status may not update "
      "resourceclaims/binding or resourceclaims/driver (Kubernetes 1.36+)",
      rule__check_claim_status_rbac, DD_SCOPE_CLUSTER, NULL },
    { "PodBypassesScheduler", DD_SEV_ERROR, DD_STEP_ALLOCATED, ALL,
      "A pod with claims sets spec.nodeName, so the scheduler never allocates them",
      rule__check_bypass, DD_SCOPE_POD, NULL },
    { "ClaimAllocatedOnOtherNode", DD_SEV_ERROR, DD_STEP_ALLOCATED, OFFLINE_LIVE,
      "A shared claim is allocated where the pod cannot go, or a workload's replicas share one "
      "claim but cannot share its node",
      rule__check_claim_node, DD_SCOPE_CLAIM, NULL },
    { "ReservedForLimitReached", DD_SEV_ERROR, DD_STEP_ALLOCATED, OFFLINE_LIVE,
      "More pods share one ResourceClaim than its status.reservedFor can hold (256)",
      rule__check_reserved_for, DD_SCOPE_CLAIM, NULL },
    { "BindingConditionsNotMet", DD_SEV_WARNING, DD_STEP_ALLOCATED, DD_LIVE,
      "A claim's allocated device waits for binding conditions that are not True (live "
      "clusters)", rule__check_binding_conditions, DD_SCOPE_NO_PODS, NULL },
    { "ClaimNotAllocated", DD_SEV_WARNING, DD_STEP_ALLOCATED, DD_LIVE,
      "A pod's claim exists but is not allocated, for a reason no other rule explains "
      "(per pod, controller only)", NULL, DD_SCOPE_CLUSTER, NULL },
    { "StaleResourceSlices", DD_SEV_WARNING, DD_STEP_PREPARE, DD_LIVE,
      "Node-local slices of a driver whose plugin no longer runs on that node (live clusters)",
      rule__check_stale_slices, DD_SCOPE_NO_PODS, NULL },
    { "KubeletPluginNotRegistered", DD_SEV_ERROR, DD_STEP_PREPARE, DD_LIVE,
      "The kubelet cannot prepare a pod's claims: their DRA driver is not registered on the "
      "pod's node (per pod, controller only)", NULL, DD_SCOPE_CLUSTER, NULL },
    { "NodePrepareFailed", DD_SEV_ERROR, DD_STEP_PREPARE, ALL,
      "The driver refuses to prepare a claim (its opaque parameters, its feature gates)",
      rule__check_config_params, DD_SCOPE_NO_PODS, NULL },
    { "CDIDisabled", DD_SEV_ERROR, DD_STEP_CDI, OFFLINE_LIVE,
      "The container runtime has CDI disabled, so DRA devices are never injected",
      rule__check_cdi_enabled, DD_SCOPE_NO_PODS, NULL },
    { "CDISpecDirNotShared", DD_SEV_ERROR, DD_STEP_CDI, OFFLINE_LIVE,
      "A DRA driver writes CDI specs to a directory the container runtime does not read",
      rule__check_cdi_dir, DD_SCOPE_NO_PODS, NULL },
    { "CDIInjectionFailed", DD_SEV_ERROR, DD_STEP_CDI, DD_LIVE,
      "The runtime failed to inject a pod's CDI devices, for a reason no other rule explains "
      "(per pod, controller only)", NULL, DD_SCOPE_CLUSTER, NULL },
    { "OpaqueConfigDriverMismatch", DD_SEV_WARNING, DD_STEP_RUNNING, ALL,
      "A claim's or class's opaque configuration names a driver its devices do not come from",
      rule__check_config_driver, DD_SCOPE_NO_PODS, NULL },
    { "ClaimNotConsumedByContainer", DD_SEV_WARNING, DD_STEP_RUNNING, ALL,
      "A claim's devices reach no container: none lists the claim, or names a request it lacks",
      rule__check_claims_consumed, DD_SCOPE_POD, NULL },
    { "DeviceUnhealthy", DD_SEV_WARNING, DD_STEP_RUNNING, OFFLINE_LIVE,
      "A running container's DRA device is reported Unhealthy by its driver (live clusters)",
      rule__check_device_health, DD_SCOPE_POD, NULL },
};

#define NRULES (sizeof(rule_table) / sizeof(rule_table[0]))

const struct dd_rule *dd_rules(size_t *n)
{
    *n = NRULES;
    return rule_table;
}

const struct dd_rule *dd_rule_find(const char *code)
{
    size_t i;

    for (i = 0; i < NRULES; i++)
        if (STRIEQ(rule_table[i].code, code))
            return &rule_table[i];
    return NULL;
}

/* ---- known drivers ------------------------------------------------------- */

/* The driver names m's slices and drivers tell, added to out. */
static void drivers_named(const struct dra_model *m, struct rule_names *out)
{
    size_t i;

    for (i = 0; i < m->nslices; i++)
        names_add(out, m->slices[i].driver);
    for (i = 0; i < m->ndrivers; i++)
        names_add(out, m->drivers[i].name);
}

/* Drivers the snapshot shows: slice publishers, driver DaemonSets and --known-driver (or the
 * caller's list of them all). */
void rule__known_drivers(const struct rule_ctx *ctx, struct rule_names *out)
{
    const struct dra_model *m = ctx->m;
    const struct rule_cache *c = ctx->opt->cache;
    size_t i;

    out->n = 0;
    if (ctx->opt->known_drivers_all) {
        for (i = 0; i < ctx->opt->nknown_drivers && i < MAX_NAMES; i++)
            out->v[out->n++] = ctx->opt->known_drivers[i];
        return;
    }
    if (c && c->named_slices == m->slices && c->named_nslices == m->nslices &&
        c->named_drivers == m->drivers && c->named_ndrivers == m->ndrivers) {
        *out = c->drivers_named;
    } else {
        drivers_named(m, out);
    }
    for (i = 0; i < ctx->opt->nknown_drivers; i++)
        names_add(out, ctx->opt->known_drivers[i]);
    /* A class beside an unnamed driver names it, unless it misspells a name known already
     * (the seed's typo class sits beside its driver too). */
    for (i = 0; i < m->ninstall_names; i++)
        if (!rule__typo_of_known(m->install_names[i], out))
            names_add(out, m->install_names[i]);
}

/* Every driver name of the profiles, current and former: what a misspelling may have meant
 * when the input installs nothing of it. */
static void profile_drivers(struct rule_names *out)
{
    size_t i, j, n;
    const struct drv_profile *p = drv_profiles(&n);

    out->n = 0;
    for (i = 0; i < n; i++) {
        for (j = 0; j < DRV_MAX && p[i].plugins[j].driver; j++)
            names_add(out, p[i].plugins[j].driver);
        for (j = 0; j < DRV_MAX && p[i].other_names[j]; j++)
            names_add(out, p[i].other_names[j]);
    }
}

/* The known or profile driver name s plausibly misspells, or NULL.  A real driver's name is
 * never a misspelling of another's (cpu.example.com is the example driver's cpu profile,
 * qat.intel.com is Intel's QAT driver). */
const char *rule__typo_of_known(const char *s, const struct rule_names *known)
{
    struct rule_names all = *known, prof;
    size_t i;

    if (drv_real_driver(s))
        return NULL;
    profile_drivers(&prof);
    for (i = 0; i < prof.n; i++)
        names_add(&all, prof.v[i]);
    return sug_nearest(s, all.v, all.n);
}

void rule__join_names(char *buf, size_t size, const struct rule_names *s)
{
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; i < s->n && i < 8; i++) {
        if (i)
            cats(buf, size, &len, ", ");
        cats(buf, size, &len, s->v[i]);
    }
    if (s->n > 8)
        cats(buf, size, &len, ", ...");
    if (!s->n)
        cats(buf, size, &len, "none");
}

/* ---- results per request key ---------------------------------------------------------- */

struct memo_entry {
    const struct dra_class *cls;
    const struct dra_request *r;   /* the first request of the key: its selectors' ids */
    char *extra;                   /* owned, or NULL */
    size_t hash;
    void *value;                   /* owned */
};

struct rule_memo {
    struct memo_entry *v;
    size_t n, cap;
    size_t *ix;                    /* open addressing: 1 + index; at most half full */
    size_t nix;
};

struct rule_memo *rule__memo_new(void)
{
    return calloc(1, sizeof(struct rule_memo));
}

void rule__memo_free(struct rule_memo *mm)
{
    size_t i;

    for (i = 0; mm && i < mm->n; i++) {
        free(mm->v[i].extra);
        free(mm->v[i].value);
    }
    if (mm) {
        free(mm->v);
        free(mm->ix);
    }
    free(mm);
}

static size_t memo_hash(const struct dra_class *cls, const struct dra_request *r,
                        const char *extra)
{
    size_t h = (size_t)(uintptr_t)cls * 1099511628211ULL, i;

    for (i = 0; r && i < r->nsel; i++)
        h = (h ^ r->sel[i].id) * 1099511628211ULL;
    h = (h ^ (r ? r->nsel : 0)) * 1099511628211ULL;
    for (; extra && *extra; extra++)
        h = (h ^ (unsigned char)*extra) * 1099511628211ULL;
    return h;
}

static int memo_same(const struct memo_entry *e, const struct dra_class *cls,
                     const struct dra_request *r, const char *extra)
{
    size_t na = e->r ? e->r->nsel : 0, nb = r ? r->nsel : 0, i;

    if (e->cls != cls || na != nb || !e->extra != !extra || (extra && strcmp(e->extra, extra)))
        return 0;
    for (i = 0; i < na; i++)
        if (e->r->sel[i].id != r->sel[i].id)
            return 0;
    return 1;
}

void *rule__memo_get(struct rule_memo *mm, const struct dra_class *cls,
                     const struct dra_request *r, const char *extra, size_t value_size,
                     int *fresh)
{
    size_t h = memo_hash(cls, r, extra), i, k;
    struct memo_entry *e;

    *fresh = 0;
    for (k = mm->nix ? h & (mm->nix - 1) : 0; mm->nix && mm->ix[k]; k = (k + 1) & (mm->nix - 1))
        if (mm->v[mm->ix[k] - 1].hash == h && memo_same(&mm->v[mm->ix[k] - 1], cls, r, extra))
            return mm->v[mm->ix[k] - 1].value;
    if (mm->n == mm->cap) {
        size_t cap = mm->cap ? 2 * mm->cap : 16;
        struct memo_entry *nv = realloc(mm->v, cap * sizeof(*nv));
        if (!nv)
            return NULL;
        mm->v = nv;
        mm->cap = cap;
    }
    if (2 * (mm->n + 1) > mm->nix) {
        size_t cap = mm->nix ? 2 * mm->nix : 32, *ix = calloc(cap, sizeof(*ix));
        if (!ix)
            return NULL;
        for (i = 0; i < mm->n; i++) {
            for (k = mm->v[i].hash & (cap - 1); ix[k]; k = (k + 1) & (cap - 1))
                ;
            ix[k] = i + 1;
        }
        free(mm->ix);
        mm->ix = ix;
        mm->nix = cap;
    }
    e = &mm->v[mm->n];
    e->cls = cls;
    e->r = r;
    e->hash = h;
    e->extra = extra ? strdup(extra) : NULL;
    e->value = calloc(1, value_size ? value_size : 1);
    if ((extra && !e->extra) || !e->value) {
        free(e->extra);
        free(e->value);
        return NULL;
    }
    for (k = h & (mm->nix - 1); mm->ix[k]; k = (k + 1) & (mm->nix - 1))
        ;
    mm->ix[k] = ++mm->n;
    *fresh = 1;
    return e->value;
}

void rule__ctx_gates(struct rule_ctx *ctx, struct kv_gates *defaults)
{
    if (!(ctx->gates = ctx->opt->gates)) {
        kv_gates_init(defaults, rule__kube_minor(ctx));
        ctx->gates = defaults;
    }
}

static int selected(const struct rule_options *opt, const char *code)
{
    size_t i;

    for (i = 0; opt->only && i < opt->nonly; i++)
        if (opt->only[i][0] == code[0] && !strcmp(opt->only[i], code))
            return 1;
    return !opt->only;
}

int dd_rules_run(const struct dra_model *m, const struct rule_options *opt,
                 struct dd_findings *out)
{
    return dd_rules_run_scoped(m, opt, ~0u, out);
}

/* scopes' rules (their pod_check alone when parts) over m. */
static int run(const struct dra_model *m, const struct rule_options *opt, unsigned scopes,
               int parts, struct dd_findings *out)
{
    static const struct rule_options defaults = RULE_OPTIONS_INIT;
    struct rule_scratch scratch = { NULL };
    struct rule_ctx ctx;
    size_t i;

    struct rule_names known;
    struct kv_gates gates;

    ctx.m = m;
    ctx.scratch = &scratch;
    ctx.opt = opt ? opt : &defaults;
    ctx.surface = ctx.opt->surface ? ctx.opt->surface : m->live ? DD_LIVE : DD_LINT;
    ctx.out = out;
    rule__ctx_gates(&ctx, &gates);
    rule__known_drivers(&ctx, &known);
    ctx.known = &known;
    for (i = 0; i < NRULES; i++) {
        struct timespec t0, t1;
        ctx.rule = &rule_table[i];
        void (*check)(struct rule_ctx *) = parts ? rule_table[i].pod_check : rule_table[i].check;
        if (!check || !(rule_table[i].surfaces & ctx.surface) ||
            !(scopes & 1u << rule_table[i].scope) || !selected(ctx.opt, rule_table[i].code))
            continue;
        if (ctx.opt->before)
            ctx.opt->before(ctx.opt->before_arg);
        if (ctx.opt->seconds)
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        check(&ctx);
        if (ctx.opt->seconds) {
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
            ctx.opt->seconds[i] += (double)(t1.tv_sec - t0.tv_sec) +
                                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        }
    }
    rule__sel_walk_free(scratch.sel);
    return out->oom ? -1 : 0;
}

int dd_rules_run_scoped(const struct dra_model *m, const struct rule_options *opt,
                        unsigned scopes, struct dd_findings *out)
{
    return run(m, opt, scopes, 0, out);
}

int dd_rules_run_pod_parts(const struct dra_model *m, const struct rule_options *opt,
                           struct dd_findings *out)
{
    return run(m, opt, 1u << DD_SCOPE_POD_PART, 1, out);
}

/* ---- what runs over models alike share ------------------------------------------------- */

struct rule_cache *dd_rules_cache_new(const struct dra_model *m)
{
    struct rule_cache *rc = calloc(1, sizeof(*rc));

    if (!rc)
        return NULL;
    drivers_named(m, &rc->drivers_named);
    rc->named_slices = m->slices;
    rc->named_nslices = m->nslices;
    rc->named_drivers = m->drivers;
    rc->named_ndrivers = m->ndrivers;
    if (!(rc->plugin_sites = rule__plugin_sites_new(m)) ||
        !(rc->class_sites = rule__class_sites_new(m)) ||
        !(rc->class_sels = rule__class_sels_new(m))) {
        dd_rules_cache_free(rc);
        return NULL;
    }
    return rc;
}

void dd_rules_cache_free(struct rule_cache *rc)
{
    if (rc) {
        rule__plugin_sites_free(rc->plugin_sites);
        rule__class_sites_free(rc->class_sites);
        rule__class_sels_free(rc->class_sels);
    }
    free(rc);
}

const char *dd_rules_nearest(const char *s, const char *const *names, size_t n)
{
    return sug_nearest(s, names, n);
}
