/*
 * rules.c - the rule table and every check.  Checks read the model only and
 * append findings; they never print, never allocate outside the findings and
 * short-lived locals, and never look at the network or the file system.
 */
#include "rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra.h"
#include "json.h"
#include "kubever.h"
#include "quota.h"
#include "rbac.h"
#include "suggest.h"
#include "rules/rules_int.h"


static void check_api_versions(struct rule_ctx *ctx);
static void check_claim_source(struct rule_ctx *ctx);
static void check_quota(struct rule_ctx *ctx);
static void check_claim_ref(struct rule_ctx *ctx);
static void check_template_ref(struct rule_ctx *ctx);
static void check_class_ref(struct rule_ctx *ctx);
static void check_rbac(struct rule_ctx *ctx);
static void check_syntax(struct rule_ctx *ctx);
static void check_driver(struct rule_ctx *ctx);
static void check_attrs(struct rule_ctx *ctx);
static void check_runtime(struct rule_ctx *ctx);
static void check_devices(struct rule_ctx *ctx);
static void check_cdi_enabled(struct rule_ctx *ctx);
static void check_cdi_dir(struct rule_ctx *ctx);
static void check_publishing(struct rule_ctx *ctx);

/* Pipeline order: the input is read -> claim created -> references resolve -> driver
 * publishes -> selector matches -> enough devices -> CDI injects. */
static const struct dd_rule rule_table[] = {
    { "InputUnreadable", DD_SEV_ERROR, DD_STEP_NONE,
      "A file or document cannot be read (malformed, oversized, unreadable): nothing in it is "
      "checked (lint only)", NULL },
    { "InputDuplicateKey", DD_SEV_WARNING, DD_STEP_NONE,
      "A mapping repeats a key: kubectl keeps the last value and silently drops the earlier one "
      "(lint only)", NULL },
    { "InputNotKubernetes", DD_SEV_WARNING, DD_STEP_NONE,
      "A document is not a Kubernetes object, or lacks a proper apiVersion and kind (lint only)",
      NULL },
    { "HelmChartNotRendered", DD_SEV_INFO, DD_STEP_NONE,
      "Helm or Go template files are not checked: render the chart first (lint only)", NULL },
    { "APIVersionNotServed", DD_SEV_ERROR, DD_STEP_NONE,
      "An object uses a resource.k8s.io version the target Kubernetes release does not serve",
      check_api_versions },
    { "PodClaimSourceRemoved", DD_SEV_ERROR, DD_STEP_NONE,
      "A pod's resourceClaims entry uses `source`, removed in Kubernetes 1.31",
      check_claim_source },
    { "ContainerClaimNameUnknown", DD_SEV_ERROR, DD_STEP_NONE,
      "A container's resources.claims names a claim the pod does not have",
      rule__check_container_claims },
    { "AdminAccessNamespaceLabelMissing", DD_SEV_ERROR, DD_STEP_CLAIM,
      "A claim asks for admin access in a namespace without the admin-access label",
      rule__check_admin_access },
    { "QuotaExceeded", DD_SEV_ERROR, DD_STEP_CLAIM,
      "Claims need more DRA devices or claim objects than a ResourceQuota allows", check_quota },
    { "ClaimNotFound", DD_SEV_WARNING, DD_STEP_CLAIM,
      "A pod references a ResourceClaim that does not exist", check_claim_ref },
    { "ClaimTemplateNotFound", DD_SEV_WARNING, DD_STEP_CLAIM,
      "A pod references a ResourceClaimTemplate that does not exist", check_template_ref },
    { "DeviceClassNotFound", DD_SEV_WARNING, DD_STEP_CLASS,
      "A claim requests a DeviceClass that does not exist", check_class_ref },
    { "DriverRBACDenied", DD_SEV_ERROR, DD_STEP_DRIVER,
      "A DRA driver's ServiceAccount may not create, update and delete ResourceSlices",
      check_rbac },
    { "DriverNotPublishing", DD_SEV_ERROR, DD_STEP_DRIVER,
      "A DRA driver is installed but publishes no ResourceSlices (live clusters only)",
      check_publishing },
    { "DriverDaemonSetMissingOnNode", DD_SEV_ERROR, DD_STEP_DRIVER,
      "A driver's plugin DaemonSet cannot run on the nodes that need its devices",
      rule__check_plugin_nodes },
    { "PoolIncomplete", DD_SEV_WARNING, DD_STEP_DRIVER,
      "A pool has fewer slices of its newest generation than resourceSliceCount says, or "
      "slices disagreeing on it", rule__check_pool_complete },
    { "PoolInvalid", DD_SEV_ERROR, DD_STEP_DRIVER,
      "A pool holds the same device name twice (one pool name published from several nodes)",
      rule__check_pool_valid },
    { "SliceNodeSelectionMatchesNoNode", DD_SEV_ERROR, DD_STEP_DRIVER,
      "A ResourceSlice's nodeName or nodeSelector matches no node", rule__check_slice_nodes },
    { "SelectorSyntaxError", DD_SEV_ERROR, DD_STEP_SELECTOR,
      "A CEL device selector does not compile or is not a boolean", check_syntax },
    { "SelectorMatchesNoDriver", DD_SEV_ERROR, DD_STEP_SELECTOR,
      "A device selector requires a driver name that no known DRA driver has", check_driver },
    { "SelectorUnknownAttribute", DD_SEV_WARNING, DD_STEP_SELECTOR,
      "A device selector reads an attribute or capacity no published device has", check_attrs },
    { "SelectorRuntimeError", DD_SEV_ERROR, DD_STEP_SELECTOR,
      "A device selector fails with a CEL runtime error on a published device, which aborts "
      "the allocation of every claim that uses it", check_runtime },
    { "DeviceTaintNotTolerated", DD_SEV_ERROR, DD_STEP_DEVICES,
      "Every device a request could get has a taint it does not tolerate", rule__check_device_taints },
    { "PrioritizedListExhausted", DD_SEV_ERROR, DD_STEP_DEVICES,
      "None of a request's firstAvailable alternatives can be satisfied",
      rule__check_first_available },
    { "AllocationModeAllUnsatisfiable", DD_SEV_ERROR, DD_STEP_DEVICES,
      "A request for all devices matches none, or more than 32 on a node", rule__check_all_mode },
    { "InsufficientDevices", DD_SEV_WARNING, DD_STEP_DEVICES,
      "Claims need more devices of a class than the known inventory offers", check_devices },
    { "PodConstraintsExcludeDeviceNodes", DD_SEV_ERROR, DD_STEP_DEVICES,
      "The pod's nodeSelector, node affinity or untolerated taints rule out every node that has "
      "its devices", rule__check_pod_constraints },
    { "PodBypassesScheduler", DD_SEV_ERROR, DD_STEP_ALLOCATED,
      "A pod with claims sets spec.nodeName, so the scheduler never allocates them",
      rule__check_bypass },
    { "ClaimAllocatedOnOtherNode", DD_SEV_ERROR, DD_STEP_ALLOCATED,
      "A shared claim is allocated where the pod cannot go, or all replicas share one claim",
      rule__check_claim_node },
    { "ReservedForLimitReached", DD_SEV_ERROR, DD_STEP_ALLOCATED,
      "More pods share one ResourceClaim than its status.reservedFor can hold (256)",
      rule__check_reserved_for },
    { "ClaimNotAllocated", DD_SEV_WARNING, DD_STEP_ALLOCATED,
      "A pod's claim exists but is not allocated, for a reason no other rule explains "
      "(per pod, controller only)", NULL },
    { "StaleResourceSlices", DD_SEV_WARNING, DD_STEP_PREPARE,
      "Node-local slices of a driver whose plugin no longer runs on that node (live clusters)",
      rule__check_stale_slices },
    { "KubeletPluginNotRegistered", DD_SEV_ERROR, DD_STEP_PREPARE,
      "The kubelet cannot prepare a pod's claims: their DRA driver is not registered on the "
      "pod's node (per pod, controller only)", NULL },
    { "NodePrepareFailed", DD_SEV_ERROR, DD_STEP_PREPARE,
      "The driver refuses to prepare a claim (its opaque parameters, its feature gates)",
      rule__check_config_params },
    { "CDIDisabled", DD_SEV_ERROR, DD_STEP_CDI,
      "The container runtime has CDI disabled, so DRA devices are never injected",
      check_cdi_enabled },
    { "CDISpecDirNotShared", DD_SEV_ERROR, DD_STEP_CDI,
      "A DRA driver writes CDI specs to a directory the container runtime does not read",
      check_cdi_dir },
    { "CDIInjectionFailed", DD_SEV_ERROR, DD_STEP_CDI,
      "The runtime failed to inject a pod's CDI devices, for a reason no other rule explains "
      "(per pod, controller only)", NULL },
    { "OpaqueConfigDriverMismatch", DD_SEV_WARNING, DD_STEP_RUNNING,
      "A claim's or class's opaque configuration names a driver its devices do not come from",
      rule__check_config_driver },
    { "ClaimNotConsumedByContainer", DD_SEV_WARNING, DD_STEP_RUNNING,
      "A claim's devices reach no container: none lists the claim, or names a request it lacks",
      rule__check_claims_consumed },
    { "DeviceUnhealthy", DD_SEV_WARNING, DD_STEP_RUNNING,
      "A running container's DRA device is reported Unhealthy by its driver (live clusters)",
      rule__check_device_health },
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

/* The engine's "did you mean": a plausible typo of one of names, or NULL. */
static const char *nearest(const char *s, const char *const *names, size_t n)
{
    return sug_nearest(s, names, n);
}

/* ---- known drivers ------------------------------------------------------- */

static const char *typo_of_known(const char *s, const struct rule_names *known);

/* Drivers the snapshot shows: slice publishers, driver DaemonSets and --known-driver (or the
 * caller's list of them all). */
static void known_drivers(const struct rule_ctx *ctx, struct rule_names *out)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    out->n = 0;
    if (ctx->opt->known_drivers_all) {
        for (i = 0; i < ctx->opt->nknown_drivers && i < MAX_NAMES; i++)
            out->v[out->n++] = ctx->opt->known_drivers[i];
        return;
    }
    for (i = 0; i < m->nslices; i++)
        names_add(out, m->slices[i].driver);
    for (i = 0; i < m->ndrivers; i++)
        names_add(out, m->drivers[i].name);
    for (i = 0; i < ctx->opt->nknown_drivers; i++)
        names_add(out, ctx->opt->known_drivers[i]);
    /* A class beside an unnamed driver names it, unless it misspells a name known already
     * (the seed's typo class sits beside its driver too). */
    for (i = 0; i < m->ninstall_names; i++)
        if (!typo_of_known(m->install_names[i], out))
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
static const char *typo_of_known(const char *s, const struct rule_names *known)
{
    struct rule_names all = *known, prof;
    size_t i;

    if (drv_real_driver(s))
        return NULL;
    profile_drivers(&prof);
    for (i = 0; i < prof.n; i++)
        names_add(&all, prof.v[i]);
    return nearest(s, all.v, all.n);
}

static void join_names(char *buf, size_t size, const struct rule_names *s)
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
    static const struct rule_options defaults = RULE_OPTIONS_INIT;
    struct rule_ctx ctx;
    size_t i;

    struct rule_names known;

    ctx.m = m;
    ctx.opt = opt ? opt : &defaults;
    ctx.out = out;
    known_drivers(&ctx, &known);
    ctx.known = &known;
    for (i = 0; i < NRULES; i++) {
        ctx.rule = &rule_table[i];
        if (rule_table[i].check && selected(ctx.opt, rule_table[i].code))
            rule_table[i].check(&ctx);
    }
    return out->oom ? -1 : 0;
}

/*
 * What the engine makes of the driver names a selector requires: none known, and whether the
 * first unknown one is a plausible misspelling of a known or profile driver (suggestion).
 * Used by SelectorMatchesNoDriver and, so that each fault is reported on its own, by
 * InsufficientDevices, which counts the devices of the driver a typo meant.
 */
struct driver_verdict {
    int unknown;            /* 1: every driver name the selector allows is unknown */
    const char *bad;        /* the unknown name reported: the first that is a typo, else the first */
    const char *suggestion; /* what the typo meant (known or profile driver), or NULL: not a typo */
    int line, col;          /* position of bad within the expression */
};

static void judge_selector(const struct rule_ctx *ctx, const struct dra_selector *sel,
                           const struct rule_names *known, struct driver_verdict *v)
{
    const struct cel_driver_ref *refs;
    size_t n, i, at = 0;

    (void)ctx;
    memset(v, 0, sizeof(*v));
    if (!sel->prog || cel_program_drivers(sel->prog, &refs, &n) != CEL_DRIVERS_SET || n == 0)
        return;
    for (i = 0; i < n; i++)
        if (names_has(known, refs[i].name))
            return;
    v->unknown = 1;
    for (i = 0; i < n && !v->suggestion; i++)
        if ((v->suggestion = typo_of_known(refs[i].name, known)))
            at = i;
    v->bad = refs[at].name;
    v->line = refs[at].line;
    v->col = refs[at].col;
}

/* ---- API versions -------------------------------------------------------- */

static int kube_minor(const struct rule_ctx *ctx)
{
    return ctx->opt->kube_minor ? ctx->opt->kube_minor : KV_DEFAULT_MINOR;
}

static void api_version_one(struct rule_ctx *ctx, const struct dra_obj *o)
{
    const char *slash = strchr(o->api_version, '/'), *ver = slash ? slash + 1 : "";
    const char *to = kv_resource_preferred(kube_minor(ctx));
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    int removed, minor = kube_minor(ctx);
    enum kv_serving sv = kv_resource_serving(minor, ver, o->kind, &removed);
    size_t len = 0;

    if (sv == KV_SERVED || sv == KV_UNKNOWN)
        return;
    objname(o, on, sizeof(on));
    if (sv == KV_OFF_BY_DEFAULT) {
        cat(msg, sizeof(msg), &len,
            "%s %s uses %s, which Kubernetes 1.%d serves only when kube-apiserver runs with "
            "--runtime-config=resource.k8s.io/%s=true (off by default); on a default cluster "
            "kubectl apply fails (no matches for kind \"%s\" in version \"%s\").",
            o->kind, on, o->api_version, minor, ver, o->kind, o->api_version);
        snprintf(fix, sizeof(fix), "Set apiVersion: resource.k8s.io/%s%s (or enable %s on "
                 "the API server).", to, !strcmp(ver, "v1beta1") ? "; a request's fields move "
                 "under `exactly`, a device's under its top level (no `basic`)" : "",
                 o->api_version);
        emit(ctx, DD_SEV_WARNING, o, 0, msg, fix);
        return;
    }
    if (!strcmp(o->kind, "ResourceClass") || !strcmp(o->kind, "PodSchedulingContext") ||
        !strcmp(o->kind, "ResourceClaimParameters") || !strcmp(o->kind, "ResourceClassParameters")) {
        cat(msg, sizeof(msg), &len,
            "%s %s (%s) belongs to classic DRA, which Kubernetes removed in 1.%d: the API server "
            "has no such kind and kubectl apply fails (no matches for kind \"%s\").",
            o->kind, on, o->api_version, removed, o->kind);
        snprintf(fix, sizeof(fix), "Use structured parameters (resource.k8s.io/%s): a "
                 "DeviceClass with CEL selectors instead of a ResourceClass, and the driver's "
                 "current release.", to);
    } else {
        cat(msg, sizeof(msg), &len,
            "%s %s uses %s, which Kubernetes 1.%d does not serve: kubectl apply fails (no "
            "matches for kind \"%s\" in version \"%s\") and nothing of it reaches the cluster.",
            o->kind, on, o->api_version, minor, o->kind, o->api_version);
        if (removed)
            cat(msg, sizeof(msg), &len, " (%s was removed in 1.%d.)", o->api_version, removed);
        snprintf(fix, sizeof(fix), "Set apiVersion: resource.k8s.io/%s; a request's "
                 "deviceClassName, selectors, count and allocationMode move under `exactly`.",
                 to);
    }
    emit(ctx, ctx->rule->severity, o, 0, msg, fix);
}

/* The API server refuses what it does not serve: only offline input can hold it. */
static void check_api_versions(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    if (m->live)
        return;
    for (i = 0; i < m->nclasses; i++)
        api_version_one(ctx, &m->classes[i].o);
    for (i = 0; i < m->nclaims; i++)
        api_version_one(ctx, &m->claims[i].o);
    for (i = 0; i < m->nslices; i++)
        api_version_one(ctx, &m->slices[i].o);
    for (i = 0; i < m->resource_other.n; i++)
        api_version_one(ctx, &m->resource_other.v[i]);
}

static void check_claim_source(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, j;

    if (m->live)
        return;
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        for (j = 0; j < p->nclaims; j++) {
            const cJSON *src;
            const char *tmpl, *claim;
            if (!p->claims[j].has_source)
                continue;
            src = dd_json_path(cJSON_GetArrayItem(dd_json_arr(p->spec, "resourceClaims", NULL),
                                                  (int)j), "source", NULL);
            tmpl = dd_json_str(src, "resourceClaimTemplateName", NULL);
            claim = dd_json_str(src, "resourceClaimName", NULL);
            snprintf(msg, sizeof(msg),
                     "%s %s: pod claim \"%s\" uses `source`, which Kubernetes removed in 1.%d "
                     "(Kubernetes 1.%d rejects the pod: unknown field \"source\", and the entry "
                     "names no claim), so the pod is never created.",
                     p->o.kind, objname(&p->o, on, sizeof(on)), p->claims[j].name,
                     KV_POD_CLAIM_SOURCE_REMOVED, kube_minor(ctx));
            if (tmpl || claim)
                snprintf(fix, sizeof(fix), "Replace `source: {%s: %s}` with `%s: %s` on the "
                         "entry itself.", tmpl ? "resourceClaimTemplateName" : "resourceClaimName",
                         tmpl ? tmpl : claim, tmpl ? "resourceClaimTemplateName" :
                         "resourceClaimName", tmpl ? tmpl : claim);
            else
                snprintf(fix, sizeof(fix), "Name the claim on the entry itself with "
                         "resourceClaimName or resourceClaimTemplateName.");
            emit(ctx, ctx->rule->severity, &p->o, p->claims[j].line, msg, fix);
        }
    }
}

/* ---- QuotaExceeded ------------------------------------------------------- */

/* One claim creation in apply order: a ResourceClaim, or the claims a workload's template makes. */
struct claim_event {
    const struct dra_obj *o;
    const struct dra_claim_spec *spec;
    int64_t claims;
    const char *tmpl; /* template name for generated claims, else NULL */
};

/* Is h a quota key the DRA evaluator charges? */
static int dra_quota_key(const struct dra_quota_item *h)
{
    return !strcmp(h->key, QUOTA_CLAIM_COUNT_KEY) || strstr(h->key, QUOTA_CLASS_SUFFIX);
}

static void quota_report(struct rule_ctx *ctx, const struct dra_quota *q,
                         const struct claim_event *ev, const struct dra_quota_item *h,
                         int64_t per, int64_t need)
{
    char msg[MSG_MAX], fix[MSG_MAX], qn[300], on[300], cls[256] = "";
    const char *sfx = strstr(h->key, QUOTA_CLASS_SUFFIX);
    size_t len = 0;

    objname(&q->o, qn, sizeof(qn));
    objname(ev->o, on, sizeof(on));
    if (ev->tmpl)
        cat(msg, sizeof(msg), &len,
            "%s %s creates %lld claim(s) from ResourceClaimTemplate %s; with them the namespace "
            "needs %s=%lld, but ResourceQuota %s allows %lld, so kube-controller-manager's "
            "claim creation is rejected (\"exceeded quota: %s\") and the pod never gets its "
            "claim.",
            ev->o->kind, on, (long long)ev->claims, ev->tmpl, h->key, (long long)need, qn,
            (long long)h->hard, q->o.name);
    else
        cat(msg, sizeof(msg), &len,
            "ResourceClaim %s needs %s=%lld; with the claims before it the namespace needs %lld, "
            "but ResourceQuota %s allows %lld, so the API server rejects it (\"exceeded quota: "
            "%s\").",
            on, h->key, (long long)per, (long long)need, qn, (long long)h->hard, q->o.name);
    snprintf(fix, sizeof(fix), "Raise %s in ResourceQuota %s to at least %lld, or remove that limit.",
             h->key, qn, (long long)need);
    if (sfx && (size_t)(sfx - h->key) < sizeof(cls))
        memcpy(cls, h->key, (size_t)(sfx - h->key));
    scope(ctx, emit(ctx, ctx->rule->severity, ev->o, 0, msg, fix), *cls ? cls : NULL, NULL,
          NULL);
}

/*
 * Admits claims in order as the quota admission would: a claim that does not
 * fit is reported and, being rejected, charges nothing, so every later claim
 * is judged against what was really admitted.  Of a template's N claims the
 * ones that fit are admitted and the rest reported.
 */
static void quota_one(struct rule_ctx *ctx, const struct dra_quota *q,
                      const struct claim_event *ev, size_t nev)
{
    struct quota_usage u = QUOTA_USAGE_INIT;
    size_t i, k;

    for (i = 0; i < nev; i++) {
        struct quota_usage one = QUOTA_USAGE_INIT;
        int64_t fit = ev[i].claims;
        const struct dra_quota_item *over = NULL;

        if (quota_usage_add_claim(&one, ev[i].spec, 1)) {
            ctx->out->oom = 1;
            break;
        }
        for (k = 0; k < q->nhard; k++) {
            const struct dra_quota_item *h = &q->hard[k];
            int64_t per = quota_usage_get(&one, h->key), room;
            if (per <= 0 || !dra_quota_key(h))
                continue;
            room = h->hard - quota_usage_get(&u, h->key);
            if (room < 0)
                room = 0;
            if (room / per < fit) {
                fit = room / per;
                over = h;
            }
        }
        if (over)
            quota_report(ctx, q, &ev[i], over, quota_usage_get(&one, over->key),
                         quota_usage_get(&u, over->key) +
                             quota_usage_get(&one, over->key) * ev[i].claims);
        if (fit > 0 && quota_usage_add_claim(&u, ev[i].spec, fit))
            ctx->out->oom = 1;
        quota_usage_release(&one);
    }
    quota_usage_release(&u);
}

/* Claims and pods by namespace (then model order), so that each quota visits its own. */
struct ns_ref {
    const char *ns;
    size_t i;
};

static int cmp_ns_ref(const void *a, const void *b)
{
    const struct ns_ref *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);

    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The first of v[0..n) (sorted) in namespace ns, or n. */
static size_t ns_first(const struct ns_ref *v, size_t n, const char *ns)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(v[mid].ns, ns) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void check_quota(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    struct claim_event *ev;
    struct ns_ref *cl, *pl;
    size_t qi, i, j, nev, ncl = 0, npl = m->npods;

    if (!m->nquotas)
        return;
    ev = calloc(m->nclaims + 1, sizeof(*ev));
    cl = malloc((m->nclaims + 1) * sizeof(*cl));
    pl = malloc((m->npods + 1) * sizeof(*pl));
    if (!cl || !pl) {
        free(ev);
        ev = NULL;
    }
    for (i = 0; ev && i < m->nclaims; i++)
        if (!m->claims[i].is_template) {
            cl[ncl].ns = m->claims[i].o.ns;
            cl[ncl++].i = i;
        }
    for (i = 0; ev && i < m->npods; i++) {
        pl[i].ns = m->pods[i].o.ns;
        pl[i].i = i;
    }
    if (ev) {
        qsort(cl, ncl, sizeof(*cl), cmp_ns_ref);
        qsort(pl, npl, sizeof(*pl), cmp_ns_ref);
    }
    for (qi = 0; ev && qi < m->nquotas; qi++) {
        const struct dra_quota *q = &m->quotas[qi];
        size_t cap = m->nclaims + 1, k;

        nev = 0;
        for (k = ns_first(cl, ncl, q->o.ns); k < ncl && STRIEQ(cl[k].ns, q->o.ns); k++) {
            i = cl[k].i;
            ev[nev].o = &m->claims[i].o;
            ev[nev].spec = &m->claims[i].spec;
            ev[nev].claims = 1;
            ev[nev++].tmpl = NULL;
        }
        for (k = ns_first(pl, npl, q->o.ns); k < npl && STRIEQ(pl[k].ns, q->o.ns); k++) {
            const struct dra_podspec *p = &m->pods[pl[k].i];
            for (j = 0; j < p->nclaims; j++) {
                const struct dra_claim *t;
                /* A live pod's generated claim is a ResourceClaim already counted above. */
                if (!p->claims[j].tmpl || dra_pod_claim_resolve(m, p, &p->claims[j]) ||
                    !(t = dra_find_claim(m, p->o.ns, p->claims[j].tmpl, 1)))
                    continue;
                if (nev == cap) {
                    struct claim_event *nv = realloc(ev, 2 * cap * sizeof(*ev));
                    if (!nv) {
                        ctx->out->oom = 1;
                        goto out;
                    }
                    ev = nv;
                    cap *= 2;
                }
                ev[nev].o = &p->o;
                ev[nev].spec = &t->spec;
                ev[nev].claims = p->replicas < 0 ? dra_node_count(m, ctx->opt->nodes)
                                                 : p->replicas;
                ev[nev++].tmpl = t->o.name;
            }
        }
        quota_one(ctx, q, ev, nev);
    }
out:
    if (!ev)
        ctx->out->oom = 1;
    free(ev);
    free(cl);
    free(pl);
}

/* ---- references ---------------------------------------------------------- */

static enum dd_severity ref_severity(const struct rule_ctx *ctx)
{
    return ctx->opt->complete ? DD_SEV_ERROR : ctx->rule->severity;
}

static const char *partial_note(const struct rule_ctx *ctx)
{
    return ctx->opt->complete ? "" : " (if it is created outside these manifests, ignore this "
                                     "warning; --complete makes it an error)";
}

static void check_pod_refs(struct rule_ctx *ctx, int is_template)
{
    const struct dra_model *m = ctx->m;
    const char *what = is_template ? "ResourceClaimTemplate" : "ResourceClaim";
    size_t i, j;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        for (j = 0; j < p->nclaims; j++) {
            const char *ref = is_template ? p->claims[j].tmpl : p->claims[j].claim;
            char msg[MSG_MAX], fix[MSG_MAX], on[300];

            if (!ref || dra_find_claim(m, p->o.ns, ref, is_template))
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s references %s \"%s\" (pod claim \"%s\"), which is not in namespace "
                     "%s%s; the pod stays Pending and the scheduler reports nothing.",
                     p->o.kind, objname(&p->o, on, sizeof(on)), what, ref, p->claims[j].name,
                     *p->o.ns ? p->o.ns : "default", partial_note(ctx));
            snprintf(fix, sizeof(fix), "Create %s %s/%s, or correct the name in spec.resourceClaims.",
                     what, *p->o.ns ? p->o.ns : "default", ref);
            emit(ctx, ref_severity(ctx), &p->o, p->claims[j].line, msg, fix);
        }
    }
}

static void check_claim_ref(struct rule_ctx *ctx)
{
    check_pod_refs(ctx, 0);
}

static void check_template_ref(struct rule_ctx *ctx)
{
    check_pod_refs(ctx, 1);
}

/* "Did you mean" answers already computed in one run: many claims often name the same
 * missing class, and each answer costs an edit distance per class. */
struct near_memo {
    const char *name[MAX_NAMES];
    const char *near[MAX_NAMES];
    size_t n;
};

static const char *nearest_memo(struct near_memo *memo, const char *s,
                                const struct rule_names *names)
{
    const char *near;
    size_t i;

    for (i = 0; i < memo->n; i++)
        if (STRIEQ(memo->name[i], s))
            return memo->near[i];
    near = nearest(s, names->v, names->n);
    if (memo->n < MAX_NAMES) {
        memo->name[memo->n] = s;
        memo->near[memo->n++] = near;
    }
    return near;
}

static void class_ref_one(struct rule_ctx *ctx, const struct dra_claim *c,
                          const struct dra_request *r, const struct rule_names *classes,
                          struct near_memo *memo)
{
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    const struct drv_profile *prof;
    const char *near;
    size_t len = 0;

    if (!r->class_name || dra_find_class(ctx->m, r->class_name))
        return;
    /* A class a real driver's install makes is not a typo of another one's. */
    prof = drv_profile_for_class(r->class_name);
    near = prof ? NULL : nearest_memo(memo, r->class_name, classes);
    cat(msg, sizeof(msg), &len,
        "%s %s request \"%s\" asks for DeviceClass \"%s\", which does not exist%s%s%s; the "
        "scheduler keeps the pod Pending (\"device class %s does not exist\")%s.",
        c->o.kind, objname(&c->o, on, sizeof(on)), r->name, r->class_name,
        near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "", r->class_name,
        partial_note(ctx));
    if (near)
        snprintf(fix, sizeof(fix), "Set deviceClassName to \"%s\".", near);
    else if (prof)
        snprintf(fix, sizeof(fix), "Install %s (%s), whose install creates DeviceClass %s, or "
                 "correct deviceClassName.", prof->id, prof->vendor, r->class_name);
    else
        snprintf(fix, sizeof(fix), "Create DeviceClass %s, or correct deviceClassName.",
                 r->class_name);
    scope(ctx, emit(ctx, ref_severity(ctx), &c->o, r->line, msg, fix), r->class_name, NULL, NULL);
}

static void check_class_ref(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    struct rule_names classes = { { 0 }, 0 };
    struct near_memo memo;
    size_t i, j, k;

    memo.n = 0;
    for (i = 0; i < m->nclasses; i++)
        names_add(&classes, m->classes[i].o.name);
    for (i = 0; i < m->nclaims; i++)
        for (j = 0; j < m->claims[i].spec.nreq; j++) {
            const struct dra_request *r = &m->claims[i].spec.req[j];
            class_ref_one(ctx, &m->claims[i], r, &classes, &memo);
            for (k = 0; k < r->nsub; k++)
                class_ref_one(ctx, &m->claims[i], &r->sub[k], &classes, &memo);
        }
}

/* ---- DriverRBACDenied ---------------------------------------------------- */

#define RBAC_GROUP "resource.k8s.io"
#define RBAC_RESOURCE "resourceslices"
#define MAX_GRANTS 32

/* The line of the role's rule about resourceslices, to point at what to edit. */
static int slice_rule_line(const struct dra_model *m, const struct dra_obj *role)
{
    const cJSON *rule, *res;
    int line;

    cJSON_ArrayForEach(rule, dd_json_arr(role->json, "rules", NULL))
        cJSON_ArrayForEach(res, dd_json_arr(rule, "resources", NULL))
            if (cJSON_IsString(res) && STRIEQ(res->valuestring, RBAC_RESOURCE) && m->pos &&
                m->pos(m->pos_ctx, rule, &line))
                return line;
    return 0;
}

/* 1 when a SubjectAccessReview answered anything about the account: then its answers decide
 * and a verb nobody asked about is not judged (the RBAC objects may not be cached). */
static int sar_any(const struct dra_model *m, const char *ns, const char *sa)
{
    size_t i;

    for (i = 0; i < m->nsar; i++)
        if (STRIEQ(m->sar[i].ns, ns) && STRIEQ(m->sar[i].sa, sa))
            return 1;
    return 0;
}

/* What SubjectAccessReviews said about the account: -1 no answer, 0 denied, 1 allowed. */
static int sar_answer(const struct dra_model *m, const char *ns, const char *sa, const char *verb)
{
    size_t i;

    for (i = 0; i < m->nsar; i++)
        if (STRIEQ(m->sar[i].ns, ns) && STRIEQ(m->sar[i].sa, sa) && STRIEQ(m->sar[i].verb, verb))
            return m->sar[i].allowed;
    return -1;
}

/* A driver's name for messages, and for a finding's scope: detection may not have found one. */
static const char *driver_label(const struct dra_driver *d)
{
    return *d->name ? d->name : "of unknown name";
}

static const char *driver_scope(const struct dra_driver *d)
{
    return *d->name ? d->name : NULL;
}

static void rbac_one(struct rule_ctx *ctx, const struct dra_driver *d)
{
    const char *const *verbs = drv_slice_verbs;
    const struct dra_model *m = ctx->m;
    const char *ns = d->ds->o.ns, *sa = d->ds->service_account;
    struct rbac_grant g[MAX_GRANTS];
    const struct rbac_grant *target = NULL;
    size_t n = rbac_sa_grants(m, ns, sa, g, MAX_GRANTS), i, len = 0, flen = 0;
    char missing[128] = "", msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    int nmissing = 0, unknown_role = 0, nsar = sar_any(m, ns, sa);

    if (n > MAX_GRANTS)
        n = MAX_GRANTS;
    for (i = 0; verbs[i]; i++) {
        int answer = sar_answer(m, ns, sa, verbs[i]);
        if (answer == 0 || (answer < 0 && !nsar &&
                            !rbac_sa_allows_cluster(m, ns, sa, verbs[i], RBAC_GROUP, RBAC_RESOURCE))) {
            size_t ml = strlen(missing);
            snprintf(missing + ml, sizeof(missing) - ml, "%s%s", nmissing ? ", " : "", verbs[i]);
            nmissing++;
        }
    }
    if (!nmissing)
        return;
    for (i = 0; i < n; i++) {
        if (!g[i].role)
            unknown_role = 1;
        else if (g[i].cluster_wide && STRIEQ(g[i].role_kind, "ClusterRole") &&
                 (!target || (!rbac_role_mentions(m, target->role, RBAC_GROUP, RBAC_RESOURCE) &&
                              rbac_role_mentions(m, g[i].role, RBAC_GROUP, RBAC_RESOURCE))))
            target = &g[i];
    }
    /* A repository may hold only part of the cluster: judge only what it shows in full.
     * An API server's SubjectAccessReview answer is always complete. */
    if (!nsar && !ctx->opt->complete && (!n || unknown_role))
        return;
    objname(&d->ds->o, dsn, sizeof(dsn));
    cat(msg, sizeof(msg), &len,
        "ServiceAccount %s/%s of DaemonSet %s (driver %s) cannot %s resourceslices.%s at cluster "
        "scope%s, so the driver publishes no ResourceSlices and the scheduler sees no %s devices "
        "(\"cannot allocate all claims\").",
        ns, sa, dsn, driver_label(d), missing, RBAC_GROUP,
        nsar ? " (SubjectAccessReview)" : "", *d->name ? d->name : "such");
    if (target) {
        cat(fix, sizeof(fix), &flen,
            "Add the verbs %s for resourceslices in apiGroup %s to ClusterRole %s (a kubelet "
            "plugin lists, watches, creates, updates and deletes its slices; get and patch are "
            "not needed).",
            missing, RBAC_GROUP, target->role->name);
        scope(ctx, emit(ctx, ctx->rule->severity, target->role, slice_rule_line(m, target->role),
                        msg, fix), NULL, driver_scope(d), NULL);
        return;
    }
    for (i = 0; i < n; i++)
        if (!g[i].cluster_wide) {
            cat(msg, sizeof(msg), &len,
                " RoleBinding %s/%s grants only inside namespace %s, which cannot cover "
                "cluster-scoped ResourceSlices.",
                g[i].binding->ns, g[i].binding->name, g[i].binding->ns);
            snprintf(fix, sizeof(fix),
                     "Bind a ClusterRole granting list, watch, create, update, delete "
                     "on resourceslices to ServiceAccount %s/%s with a ClusterRoleBinding instead "
                     "of RoleBinding %s.",
                     ns, sa, g[i].binding->name);
            scope(ctx, emit(ctx, ctx->rule->severity, g[i].binding, 0, msg, fix), NULL,
                  driver_scope(d), NULL);
            return;
        }
    /* The example driver's slice controller retries with a growing delay (client-go's
     * workqueue backoff, up to 1000 s): measured 12.7 s after the fix on a real node. */
    snprintf(fix, sizeof(fix),
             "Grant list, watch, create, update, delete on resourceslices.%s to "
             "ServiceAccount %s/%s with a ClusterRole and a ClusterRoleBinding, then restart "
             "the plugin pods of DaemonSet %s/%s to publish at once (a refused plugin retries "
             "with a growing delay).",
             RBAC_GROUP, ns, sa, d->ds->o.ns, d->ds->o.name);
    scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, driver_scope(d), NULL);
}

/* 1 when the account may do what a plugin does to its slices (SAR answers first, then RBAC). */
static int may_publish(const struct dra_model *m, const char *ns, const char *sa)
{
    const char *const *verbs = drv_slice_verbs;
    int any = sar_any(m, ns, sa);
    size_t i;

    for (i = 0; verbs[i]; i++) {
        int a = sar_answer(m, ns, sa, verbs[i]);
        if (a == 0 || (a < 0 && !any &&
                       !rbac_sa_allows_cluster(m, ns, sa, verbs[i], RBAC_GROUP, RBAC_RESOURCE)))
            return 0;
    }
    return 1;
}

/* Live only: in a repository, slices are normally absent (drivers publish them at run time). */
static void check_publishing(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    size_t i, j;

    if (!m->live)
        return;
    for (i = 0; i < m->ndrivers; i++) {
        const struct dra_driver *d = &m->drivers[i];
        int64_t ready = -1, desired = -1;
        int has = 0;

        for (j = 0; j < m->nslices && !has; j++)
            has = STRIEQ(m->slices[j].driver, d->name);
        /* A denial is DriverRBACDenied's to report; the second name of a multi-driver
         * DaemonSet (NVIDIA's compute domains) may rightly publish nothing, unless asked for. */
        if (has || !*d->name || !may_publish(m, d->ds->o.ns, d->ds->service_account) ||
            (d->profile && !STRIEQ(d->name, d->profile->plugins[0].driver)))
            continue;
        dd_json_int(d->ds->o.json, &ready, "status", "numberReady", NULL);
        dd_json_int(d->ds->o.json, &desired, "status", "desiredNumberScheduled", NULL);
        objname(&d->ds->o, dsn, sizeof(dsn));
        if (ready == 0)
            snprintf(msg, sizeof(msg), "Driver %s is installed (DaemonSet %s) but no ResourceSlice "
                     "of it exists: none of its %lld plugin pod(s) is ready.", d->name, dsn,
                     (long long)desired);
        else
            snprintf(msg, sizeof(msg), "Driver %s is installed (DaemonSet %s) and may write "
                     "ResourceSlices, but none exists: its plugin is failing to publish (or an "
                     "admission policy rejects its slices).", d->name, dsn);
        snprintf(fix, sizeof(fix), "Check the plugin pods of DaemonSet %s (kubectl logs) for "
                 "\"resource slice\" errors; a plugin refused earlier retries with a growing "
                 "delay: restart its pods (kubectl rollout restart) to publish at once.", dsn);
        scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, driver_scope(d), NULL);
    }
}

static void check_rbac(struct rule_ctx *ctx)
{
    size_t i, j;

    for (i = 0; i < ctx->m->ndrivers; i++) {
        int seen = 0;
        /* One DaemonSet may serve several driver names; its ServiceAccount is judged once. */
        for (j = 0; j < i; j++)
            seen |= ctx->m->drivers[j].ds == ctx->m->drivers[i].ds;
        if (!seen)
            rbac_one(ctx, &ctx->m->drivers[i]);
    }
}

/* ---- selectors ----------------------------------------------------------- */

/* Where a selector sits: its owner, the class its devices come from, and how to name it
 * (formatted only for a finding: most selectors have none). */
struct sel_site {
    const struct dra_obj *owner;
    const struct dra_class *cls;   /* the class (for request selectors: the requested one) */
    const struct dra_selector *sel;
    const char *request;           /* the request's name; NULL for a class's own selector */
    const char *base;              /* the claim's devices field, e.g. "spec.devices" */
    size_t req, sub, idx;          /* request index; firstAvailable index + 1 (0: exactly);
                                      selector index */
};

/* "selector 1" or "request gpu, selector 1". */
static const char *site_where(const struct sel_site *s, char *buf, size_t size)
{
    if (s->request)
        snprintf(buf, size, "request %s, selector %zu", s->request, s->idx + 1);
    else
        snprintf(buf, size, "selector %zu", s->idx + 1);
    return buf;
}

/* The field path of the expression. */
static const char *site_path(const struct sel_site *s, char *buf, size_t size)
{
    if (!s->request)
        snprintf(buf, size, "spec.selectors[%zu].cel.expression", s->idx);
    else if (!s->sub)
        snprintf(buf, size, "%s.requests[%zu].exactly.selectors[%zu].cel.expression", s->base,
                 s->req, s->idx);
    else
        snprintf(buf, size, "%s.requests[%zu].firstAvailable[%zu].selectors[%zu].cel.expression",
                 s->base, s->req, s->sub - 1, s->idx);
    return buf;
}

typedef void (*sel_fn)(struct rule_ctx *ctx, const struct sel_site *s);

static void request_selectors(struct rule_ctx *ctx, struct sel_site *s,
                              const struct dra_request *r, sel_fn fn)
{
    s->request = r->name;
    s->cls = r->class_name ? dra_find_class(ctx->m, r->class_name) : NULL;
    for (s->idx = 0; s->idx < r->nsel; s->idx++) {
        s->sel = &r->sel[s->idx];
        fn(ctx, s);
    }
}

static void for_each_selector(struct rule_ctx *ctx, sel_fn fn)
{
    const struct dra_model *m = ctx->m;
    struct sel_site s;
    size_t i;

    memset(&s, 0, sizeof(s));
    for (i = 0; i < m->nclasses; i++)
        for (s.idx = 0; s.idx < m->classes[i].nsel; s.idx++) {
            s.owner = &m->classes[i].o;
            s.cls = &m->classes[i];
            s.sel = &m->classes[i].sel[s.idx];
            fn(ctx, &s);
        }
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        s.owner = &c->o;
        s.base = c->is_template ? "spec.spec.devices" : "spec.devices";
        for (s.req = 0; s.req < c->spec.nreq; s.req++) {
            const struct dra_request *r = &c->spec.req[s.req];
            s.sub = 0;
            request_selectors(ctx, &s, r, fn);
            for (s.sub = 1; s.sub <= r->nsub; s.sub++)
                request_selectors(ctx, &s, &r->sub[s.sub - 1], fn);
        }
    }
}

static void syntax_one(struct rule_ctx *ctx, const struct sel_site *s)
{
    char msg[MSG_MAX], fix[MSG_MAX], on[300], where[160], path[200];
    int line = s->sel->line;

    if (s->sel->prog)
        return;
    if (line && s->sel->err.line > 1)
        line += s->sel->err.line - 1;
    snprintf(msg, sizeof(msg), "%s %s %s does not compile, so the API server rejects it: %s",
             s->owner->kind, objname(s->owner, on, sizeof(on)),
             site_where(s, where, sizeof(where)), s->sel->err.msg);
    snprintf(fix, sizeof(fix), "Correct the CEL expression in %s; it must be a boolean over "
             "device.driver, device.attributes and device.capacity.",
             site_path(s, path, sizeof(path)));
    scope(ctx, emit(ctx, ctx->rule->severity, s->owner, line, msg, fix),
          s->cls ? s->cls->o.name : NULL, NULL, NULL);
}

static void check_syntax(struct rule_ctx *ctx)
{
    for_each_selector(ctx, syntax_one);
}

static void driver_one(struct rule_ctx *ctx, const struct sel_site *s)
{
    const struct rule_names *known = ctx->known;
    struct driver_verdict v;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], list[512], where[160], path[200];
    const struct cel_driver_ref *refs;
    const struct drv_profile *prof;
    size_t n, len = 0;

    if (!s->sel->prog)
        return;
    if (cel_program_drivers(s->sel->prog, &refs, &n) == CEL_DRIVERS_NONE) {
        snprintf(msg, sizeof(msg), "%s %s %s can never match: it requires device.driver to be "
                 "several different names at once.", s->owner->kind,
                 objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)));
        snprintf(fix, sizeof(fix), "Keep one driver name in %s (use || or `in [...]` to allow "
                 "several).", site_path(s, path, sizeof(path)));
        scope(ctx, emit(ctx, ctx->rule->severity, s->owner, s->sel->line, msg, fix),
              s->cls ? s->cls->o.name : NULL, NULL, NULL);
        return;
    }
    judge_selector(ctx, s->sel, known, &v);
    if (!v.unknown)
        return;
    join_names(list, sizeof(list), known);
    if (v.suggestion) {
        cat(msg, sizeof(msg), &len,
            "%s %s %s requires device.driver == '%s', but no known DRA driver has that name "
            "(known: %s), so no device ever matches and claims stay unallocated (\"cannot "
            "allocate all claims\"). Did you mean '%s'?",
            s->owner->kind, objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)),
            v.bad, known->n ? list : "none in the input; compared with well-known drivers",
            v.suggestion);
        snprintf(fix, sizeof(fix), "Change '%s' to '%s' in %s.", v.bad, v.suggestion,
                 site_path(s, path, sizeof(path)));
        scope(ctx, emit(ctx, ctx->rule->severity, s->owner, s->sel->line, msg, fix),
              s->cls ? s->cls->o.name : NULL, v.suggestion, NULL);
        return;
    }
    /* Not a misspelling: a driver installed elsewhere is as likely as a missing one. */
    prof = drv_profile_for_driver(v.bad);
    cat(msg, sizeof(msg), &len, "%s %s %s requires driver '%s'", s->owner->kind,
        objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)), v.bad);
    if (prof)
        cat(msg, sizeof(msg), &len, " (%s's %s)", prof->vendor, prof->id);
    cat(msg, sizeof(msg), &len, ", which %s (%s: %s)", ctx->m->live ?
        "is not installed in the cluster: no ResourceSlice and no kubelet-plugin DaemonSet of it"
        : "these manifests do not install", ctx->m->live ? "registered" : "installed here",
        known->n ? list : "none");
    cat(msg, sizeof(msg), &len, "; until it is, no device matches and claims stay unallocated "
        "(\"cannot allocate all claims\")%s.", ctx->opt->complete || ctx->m->live ? "" :
        " (if it is installed elsewhere, this is fine: pass --known-driver; --complete makes "
        "this an error)");
    snprintf(fix, sizeof(fix), "Install the driver '%s', or use the name of an installed "
             "driver in %s%s.", v.bad, site_path(s, path, sizeof(path)),
             ctx->m->live ? "" : " (--known-driver declares one that is installed elsewhere)");
    scope(ctx, emit(ctx, ctx->opt->complete ? DD_SEV_ERROR : DD_SEV_WARNING, s->owner,
                    s->sel->line, msg, fix),
          s->cls ? s->cls->o.name : NULL, v.bad, NULL);
}

static void check_driver(struct rule_ctx *ctx)
{
    for_each_selector(ctx, driver_one);
}

/* ---- selectors evaluated on the published devices ------------------------ */

/*
 * What the scheduler's allocator does with a device: a class's selectors in order, then
 * the request's, each only while the ones before were true; a CEL runtime error on any
 * device it evaluates aborts the allocation of the whole claim ("class X: selector #N: CEL
 * runtime error: ..." / "claim ns/x: selector #N: ...").  Which sub-expressions run at all
 * (guards, &&, ||, ?:) is the evaluator's business: nothing here second-guesses it.
 */
struct sel_error {
    char msg[160];                   /* the evaluator's text, e.g. "no such key: model" */
    size_t ndev;                     /* devices it fails on */
    const struct dra_slice *slice;   /* the first of them */
    const struct dra_device *dev;
};

#define SEL_ERRORS_MAX 4

struct sel_errors {
    struct sel_error v[SEL_ERRORS_MAX]; /* distinct messages, in order of first failure */
    size_t n;
    size_t evaluated;                   /* devices the selector was evaluated on */
};

static void sel_errors_add(struct sel_errors *e, const char *msg, const struct dra_slice *sl,
                           const struct dra_device *d)
{
    size_t i;

    for (i = 0; i < e->n; i++)
        if (STRIEQ(e->v[i].msg, msg)) {
            e->v[i].ndev++;
            return;
        }
    if (e->n == SEL_ERRORS_MAX)
        return;
    snprintf(e->v[e->n].msg, sizeof(e->v[e->n].msg), "%.*s", (int)sizeof(e->v[e->n].msg) - 1,
             msg);
    e->v[e->n].ndev = 1;
    e->v[e->n].slice = sl;
    e->v[e->n++].dev = d;
}

/*
 * Runs sel[0..nsel) on every published device for which pass[] (NULL: every device) is set,
 * in order, as the allocator does, and records each selector's errors in errs[0..nsel).  With
 * out_pass, sets out_pass[d] to whether every selector was true on device d.  Devices are
 * numbered in slice order.
 */
static void eval_selectors(const struct dra_model *m, const struct dra_selector *sel, size_t nsel,
                           const unsigned char *pass, unsigned char *out_pass,
                           struct sel_errors *errs)
{
    size_t i, j, k, d = 0;

    for (i = 0; i < m->nslices; i++)
        for (j = 0; j < m->slices[i].ndev; j++, d++) {
            const struct dra_device *dv = &m->slices[i].dev[j];
            int ok = !pass || pass[d];
            for (k = 0; k < nsel && ok; k++) {
                struct dd_err err;
                enum cel_verdict v;
                if (!sel[k].prog) {
                    ok = 0; /* SelectorSyntaxError's to report */
                    break;
                }
                dd_err_clear(&err);
                errs[k].evaluated++;
                v = cel_eval_device(sel[k].prog, &dv->dev, NULL, &err);
                if (v == CEL_ERROR)
                    sel_errors_add(&errs[k], err.msg, &m->slices[i], dv);
                ok = v == CEL_TRUE;
            }
            if (out_pass)
                out_pass[d] = (unsigned char)ok;
        }
}

static size_t published_devices(const struct dra_model *m)
{
    size_t i, n = 0;

    for (i = 0; i < m->nslices; i++)
        n += m->slices[i].ndev;
    return n;
}

/* The reference of prog that names key (the one a "no such key: key" error is about). */
static const struct cel_attr_ref *ref_named(const struct cel_program *prog, const char *key,
                                            const struct cel_device *dev)
{
    const struct cel_attr_ref *refs, *first = NULL;
    size_t n, i;

    cel_program_attrs(prog, &refs, &n);
    for (i = 0; i < n; i++) {
        size_t k, has = 0;
        if (!refs[i].domain || !STRIEQ(refs[i].name, key))
            continue;
        if (!first)
            first = &refs[i];
        /* Of several references with that name, the one the device lacks. */
        for (k = 0; !refs[i].capacity && k < dev->nattrs; k++)
            has |= STRIEQ(dev->attrs[k].domain, refs[i].domain) &&
                   STRIEQ(dev->attrs[k].name, key);
        for (k = 0; refs[i].capacity && k < dev->ncaps; k++)
            has |= STRIEQ(dev->caps[k].domain, refs[i].domain) && STRIEQ(dev->caps[k].name, key);
        if (!has)
            return &refs[i];
    }
    return first;
}

/* A missing key on a device: its message, fix and the did-you-mean from the device's own
 * attributes (or capacities) of that domain. */
static void missing_key(struct rule_ctx *ctx, const struct sel_site *s,
                        const struct sel_errors *errs, const struct sel_error *e,
                        const char *key, const char *scheduler)
{
    const struct cel_device *dev = &e->dev->dev;
    const struct cel_attr_ref *r = ref_named(s->sel->prog, key, dev);
    struct rule_names have = { { 0 }, 0 };
    char msg[MSG_MAX], fix[MSG_MAX], on[300], list[512], where[160], path[200], split[300] = "";
    const char *near = NULL, *field = r && r->capacity ? "capacity" : "attributes";
    size_t k, len = 0;

    if (r) {
        const char *slash = strchr(r->domain, '/');
        for (k = 0; !r->capacity && k < dev->nattrs; k++)
            if (STRIEQ(dev->attrs[k].domain, r->domain))
                names_add(&have, dev->attrs[k].name);
        for (k = 0; r->capacity && k < dev->ncaps; k++)
            if (STRIEQ(dev->caps[k].domain, r->domain))
                names_add(&have, dev->caps[k].name);
        near = nearest(key, have.v, have.n);
        /* "dra.net/rdma" is an attribute's qualified name, not a domain. */
        for (k = 0; slash && !near && k < dev->nattrs; k++)
            if (strlen(dev->attrs[k].domain) == (size_t)(slash - r->domain) &&
                !strncmp(dev->attrs[k].domain, r->domain, (size_t)(slash - r->domain)) &&
                STRIEQ(dev->attrs[k].name, slash + 1))
                snprintf(split, sizeof(split), "device.%s['%s'].%s", field, dev->attrs[k].domain,
                         dev->attrs[k].name);
    }
    join_names(list, sizeof(list), &have);
    if (r) {
        cat(msg, sizeof(msg), &len,
            "%s %s %s reads device.%s['%s'].%s, but %zu of the %zu published device(s) it is "
            "evaluated on lack it (device %s/%s of driver %s ", s->owner->kind,
            objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)), field,
            r->domain, key, e->ndev, errs->evaluated, e->slice->pool, e->dev->name,
            e->dev->dev.driver);
        if (have.n)
            cat(msg, sizeof(msg), &len, "has: %s", list);
        else
            cat(msg, sizeof(msg), &len, "has no %s in domain '%s'", field, r->domain);
        cat(msg, sizeof(msg), &len, "), so allocation aborts with \"%s\".", scheduler);
    } else {
        cat(msg, sizeof(msg), &len,
            "%s %s %s fails on %zu of the %zu published device(s) it is evaluated on (first: "
            "device %s/%s of driver %s), so allocation aborts with \"%s\".",
            s->owner->kind, objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)),
            e->ndev, errs->evaluated, e->slice->pool, e->dev->name, e->dev->dev.driver,
            scheduler);
    }
    if (near)
        cat(msg, sizeof(msg), &len, " Did you mean '%s'?", near);
    else if (*split)
        cat(msg, sizeof(msg), &len, " Did you mean %s?", split);
    if (r)
        snprintf(fix, sizeof(fix), "%s%s%s in %s, or guard it with has(device.%s['%s'].%s).",
                 near || *split ? "Use " : "Use an existing name", near ? near : split,
                 "", site_path(s, path, sizeof(path)), field, r->domain, key);
    else
        snprintf(fix, sizeof(fix), "Read only what the devices publish in %s, or guard the "
                 "access with has() or `in`.", site_path(s, path, sizeof(path)));
    scope(ctx, emit(ctx, ctx->rule->severity, s->owner, s->sel->line, msg, fix),
          s->cls ? s->cls->o.name : NULL, r ? r->domain : NULL, NULL);
}

/* The scheduler's words for an error of selector s: "class X: selector #N: CEL runtime error". */
static void scheduler_text(const struct sel_site *s, const char *err, char *buf, size_t size)
{
    /* klog.KObj: "ns/name", or "name" without a namespace. */
    if (s->request)
        snprintf(buf, size, "claim %s%s%s: selector #%zu: CEL runtime error: %s", s->owner->ns,
                 *s->owner->ns ? "/" : "", s->owner->name, s->idx, err);
    else
        snprintf(buf, size, "class %s: selector #%zu: CEL runtime error: %s", s->owner->name,
                 s->idx, err);
}

/* The findings of one selector's errors; only missing keys are SelectorUnknownAttribute's. */
static void attrs_report(struct rule_ctx *ctx, const struct sel_site *s,
                         const struct sel_errors *errs)
{
    static const char nsk[] = "no such key: ";
    char sched[400];
    size_t i;

    for (i = 0; i < errs->n; i++) {
        const struct sel_error *e = &errs->v[i];
        if (strncmp(e->msg, nsk, sizeof(nsk) - 1))
            continue;
        scheduler_text(s, e->msg, sched, sizeof(sched));
        missing_key(ctx, s, errs, e, e->msg + sizeof(nsk) - 1, sched);
    }
}

typedef void (*sel_report)(struct rule_ctx *ctx, const struct sel_site *s,
                           const struct sel_errors *errs);

/* The errors of one selector that are not missing keys (SelectorUnknownAttribute's): any
 * other runtime error aborts the allocation just the same. */
static void runtime_report(struct rule_ctx *ctx, const struct sel_site *s,
                           const struct sel_errors *errs)
{
    static const char nsk[] = "no such key: ";
    char sched[400], msg[MSG_MAX], fix[MSG_MAX], on[300], where[160], path[200];
    size_t i;

    for (i = 0; i < errs->n; i++) {
        const struct sel_error *e = &errs->v[i];
        if (!strncmp(e->msg, nsk, sizeof(nsk) - 1))
            continue;
        scheduler_text(s, e->msg, sched, sizeof(sched));
        snprintf(msg, sizeof(msg),
                 "%s %s %s fails on %zu of the %zu published device(s) it is evaluated on "
                 "(first: device %s/%s of driver %s): the scheduler aborts the allocation of "
                 "every claim that uses it with \"%s\".",
                 s->owner->kind, objname(s->owner, on, sizeof(on)),
                 site_where(s, where, sizeof(where)), e->ndev, errs->evaluated, e->slice->pool,
                 e->dev->name, e->dev->dev.driver, sched);
        snprintf(fix, sizeof(fix),
                 "Make %s hold on every device it can meet: guard the failing part (has(), `in`, "
                 "a type or range check, `&&` before it), or fix the device's published "
                 "attributes. `dra-doctor explain` shows the failing sub-expression and the "
                 "values it saw.", site_path(s, path, sizeof(path)));
        scope(ctx, emit(ctx, ctx->rule->severity, s->owner, s->sel->line, msg, fix),
              s->cls ? s->cls->o.name : NULL, NULL, NULL);
    }
}

/* A claim's requests (and firstAvailable alternatives) on the devices their class admits. */
static void attrs_claim(struct rule_ctx *ctx, const struct dra_claim *c,
                        unsigned char *const *class_pass, struct sel_errors *errs, size_t maxsel,
                        sel_report report)
{
    const struct dra_model *m = ctx->m;
    struct sel_site s;
    size_t i, j;

    memset(&s, 0, sizeof(s));
    s.owner = &c->o;
    s.base = c->is_template ? "spec.spec.devices" : "spec.devices";
    for (s.req = 0; s.req < c->spec.nreq; s.req++) {
        const struct dra_request *top = &c->spec.req[s.req];
        for (s.sub = 0; s.sub <= top->nsub; s.sub++) {
            const struct dra_request *r = s.sub ? &top->sub[s.sub - 1] : top;
            if (!r->nsel || !r->class_name || !(s.cls = dra_find_class(m, r->class_name)))
                continue;
            j = (size_t)(s.cls - m->classes);
            memset(errs, 0, maxsel * sizeof(*errs));
            eval_selectors(m, r->sel, r->nsel < maxsel ? r->nsel : maxsel, class_pass[j], NULL,
                           errs);
            s.request = r->name;
            for (i = 0; i < r->nsel && i < maxsel; i++) {
                s.idx = i;
                s.sel = &r->sel[i];
                report(ctx, &s, &errs[i]);
            }
        }
    }
}

/* Every selector on the published devices in the allocator's order; report() judges the
 * errors of each. */
static void walk_selectors(struct rule_ctx *ctx, sel_report report)
{
    const struct dra_model *m = ctx->m;
    size_t ndev = published_devices(m), i, j, maxsel = 64;
    unsigned char **class_pass;
    struct sel_errors *errs;
    struct sel_site s;

    /* Without published devices there is nothing to evaluate on. */
    if (!ndev)
        return;
    class_pass = calloc(m->nclasses + 1, sizeof(*class_pass));
    errs = calloc(maxsel, sizeof(*errs));
    if (!class_pass || !errs) {
        ctx->out->oom = 1;
        goto out;
    }
    memset(&s, 0, sizeof(s));
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *cls = &m->classes[i];
        size_t nsel = cls->nsel < maxsel ? cls->nsel : maxsel;
        if (!(class_pass[i] = malloc(ndev))) {
            ctx->out->oom = 1;
            goto out;
        }
        memset(errs, 0, maxsel * sizeof(*errs));
        eval_selectors(m, cls->sel, nsel, NULL, class_pass[i], errs);
        s.owner = &cls->o;
        s.cls = cls;
        for (j = 0; j < nsel; j++) {
            s.idx = j;
            s.sel = &cls->sel[j];
            report(ctx, &s, &errs[j]);
        }
    }
    for (i = 0; i < m->nclaims; i++)
        attrs_claim(ctx, &m->claims[i], class_pass, errs, maxsel, report);
out:
    for (i = 0; class_pass && i < m->nclasses; i++)
        free(class_pass[i]);
    free(class_pass);
    free(errs);
}

static void check_attrs(struct rule_ctx *ctx)
{
    walk_selectors(ctx, attrs_report);
}

static void check_runtime(struct rule_ctx *ctx)
{
    walk_selectors(ctx, runtime_report);
}

/* ---- InsufficientDevices ------------------------------------------------- */

/* A device, or a driver profile's identical simulated devices counted `mult` times. */
struct inv_entry {
    struct cel_device dev;
    int64_t mult;
    const struct dra_driver *from; /* the DaemonSet that defines the count, or NULL for slices */
};

struct inventory {
    struct inv_entry *v;
    size_t n;
    struct rule_names unknown; /* drivers installed whose device count cannot be known */
};

static int driver_has_slices(const struct dra_model *m, const char *driver)
{
    size_t i;

    for (i = 0; i < m->nslices; i++)
        if (STRIEQ(m->slices[i].driver, driver))
            return 1;
    return 0;
}

static int build_inventory(const struct rule_ctx *ctx, struct inventory *inv)
{
    const struct dra_model *m = ctx->m;
    size_t i, j, cap = m->ndrivers;
    long nodes = dra_node_count(m, ctx->opt->nodes);

    memset(inv, 0, sizeof(*inv));
    for (i = 0; i < m->nslices; i++)
        cap += m->slices[i].ndev;
    if (!(inv->v = calloc(cap + 1, sizeof(*inv->v))))
        return -1;
    for (i = 0; i < m->nslices; i++)
        for (j = 0; j < m->slices[i].ndev; j++) {
            inv->v[inv->n].dev = m->slices[i].dev[j].dev;
            inv->v[inv->n++].mult = 1;
        }
    for (i = 0; i < m->ndrivers; i++) {
        const struct dra_driver *d = &m->drivers[i];
        struct inv_entry *e;
        if (driver_has_slices(m, d->name))
            continue;
        if (d->num_devices < 0 || !d->profile) {
            names_add(&inv->unknown, d->name);
            continue;
        }
        e = &inv->v[inv->n++];
        e->dev.driver = d->name;
        e->dev.attrs = d->profile->device_attrs;
        e->dev.nattrs = d->profile->ndevice_attrs;
        e->dev.caps = d->profile->device_caps;
        e->dev.ncaps = d->profile->ndevice_caps;
        e->mult = d->num_devices * nodes;
        e->from = d;
    }
    return 0;
}

/*
 * Devices of the inventory matching every selector of cls.  A selector whose
 * driver name is a typo is evaluated as if it named the driver it was meant
 * to (SelectorMatchesNoDriver reports the typo itself).  Counting stops at
 * need: only a shortfall is reported, with its exact figure.  Returns -1 when
 * the answer cannot be known.
 */
static int64_t class_supply(const struct rule_ctx *ctx, const struct dra_class *cls,
                            const struct inventory *inv, int64_t need,
                            const struct dra_driver **from)
{
    struct rule_names drivers = { { 0 }, 0 };
    struct driver_verdict v[32];
    int64_t supply = 0;
    size_t i, j, nsel = cls->nsel < 32 ? cls->nsel : 32;
    int any = 1;

    for (j = 0; j < nsel; j++) {
        const struct cel_driver_ref *refs;
        size_t n, k;
        if (!cls->sel[j].prog)
            return -1;
        judge_selector(ctx, &cls->sel[j], ctx->known, &v[j]);
        if (cel_program_drivers(cls->sel[j].prog, &refs, &n) != CEL_DRIVERS_SET)
            continue;
        any = 0;
        for (k = 0; k < n; k++)
            names_add(&drivers, v[j].unknown && v[j].suggestion && STRIEQ(refs[k].name, v[j].bad)
                                    ? v[j].suggestion : refs[k].name);
    }
    for (i = 0; i < inv->unknown.n; i++)
        if (any || names_has(&drivers, inv->unknown.v[i]))
            return -1;
    *from = NULL;
    for (i = 0; i < inv->n && supply < need; i++) {
        int ok = 1;
        if (!any && !names_has(&drivers, inv->v[i].dev.driver))
            continue;
        for (j = 0; j < nsel && ok; j++) {
            struct cel_device d = inv->v[i].dev;
            if (v[j].unknown && v[j].suggestion && STRIEQ(d.driver, v[j].suggestion))
                d.driver = v[j].bad;
            enum cel_verdict r = cel_eval_device(cls->sel[j].prog, &d, NULL, NULL);
            /* A runtime error aborts the allocation (SelectorRuntimeError,
             * SelectorUnknownAttribute): what the class would offer once it is fixed
             * cannot be known. */
            if (r == CEL_ERROR)
                return -1;
            ok = r == CEL_TRUE;
        }
        if (ok) {
            supply += inv->v[i].mult;
            if (inv->v[i].from)
                *from = inv->v[i].from;
        }
    }
    /* No device of the class's drivers is known at all: nothing to compare with. */
    for (i = 0; i < drivers.n; i++) {
        int seen = 0;
        for (j = 0; j < inv->n && !seen; j++)
            seen = STRIEQ(inv->v[j].dev.driver, drivers.v[i]);
        if (!seen)
            return -1;
    }
    if (any && !inv->n)
        return -1;
    return supply;
}

struct demand {
    int64_t n;
    char who[512]; /* the first consumers, for the message */
    size_t wlen;
};

static void demand_add(struct demand *dem, const struct dra_model *m,
                       const struct dra_claim_spec *spec, int64_t mult, const struct dra_obj *who)
{
    size_t i;

    for (i = 0; i < spec->nreq; i++) {
        const struct dra_request *r = &spec->req[i];
        const struct dra_class *c;
        struct demand *d;
        if (r->nsub || r->all || !r->class_name || !(c = dra_find_class(m, r->class_name)))
            continue;
        d = &dem[c - m->classes];
        d->n += r->count * mult;
        cat(d->who, sizeof(d->who), &d->wlen, "%s%s", d->wlen ? ", " : "", who->name);
    }
}

/* Demand per class (dem[0..m->nclasses)): claims some pod uses (a shared claim is allocated
 * once) or already allocated, and one claim per pod for templates.  0, or -1 on ENOMEM. */
static int class_demand(const struct rule_ctx *ctx, struct demand *dem)
{
    const struct dra_model *m = ctx->m;
    char *used = calloc(m->nclaims + 1, 1);
    size_t i, j;

    if (!used)
        return -1;
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        int64_t pods = p->replicas < 0 ? dra_node_count(m, ctx->opt->nodes) : p->replicas;
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[j]);
            if (c)
                used[c - m->claims] = 1;
            else if (p->claims[j].tmpl && (c = dra_find_claim(m, p->o.ns, p->claims[j].tmpl, 1)))
                demand_add(dem, m, &c->spec, pods, &p->o);
        }
    }
    for (i = 0; i < m->nclaims; i++)
        if (!m->claims[i].is_template && (used[i] || m->claims[i].allocated))
            demand_add(dem, m, &m->claims[i].spec, 1, &m->claims[i].o);
    free(used);
    return 0;
}

static void check_devices(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    struct inventory inv;
    struct demand *dem;
    size_t i;

    if (!m->nclasses)
        return;
    dem = calloc(m->nclasses, sizeof(*dem));
    if (!dem || class_demand(ctx, dem) || build_inventory(ctx, &inv)) {
        ctx->out->oom = 1;
        free(dem);
        return;
    }
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *cls = &m->classes[i];
        const struct dra_driver *from = NULL;
        char msg[MSG_MAX], fix[MSG_MAX], dsn[300];
        size_t len = 0;
        int64_t supply;

        if (!dem[i].n || (supply = class_supply(ctx, cls, &inv, dem[i].n, &from)) < 0 || supply >= dem[i].n)
            continue;
        cat(msg, sizeof(msg), &len,
            "Claims need %lld device(s) of DeviceClass %s (%s), but the known inventory offers "
            "%lld",
            (long long)dem[i].n, cls->o.name, dem[i].who, (long long)supply);
        if (from) {
            const char *env = from->profile->num_devices_env;
            objname(&from->ds->o, dsn, sizeof(dsn));
            cat(msg, sizeof(msg), &len, ": DaemonSet %s %s %s=%lld per node on %ld node(s)", dsn,
                from->num_devices_line ? "sets" : "defaults to", env,
                (long long)from->num_devices, dra_node_count(m, ctx->opt->nodes));
            snprintf(fix, sizeof(fix),
                     "Raise %s in DaemonSet %s to at least %lld (or add nodes), or need fewer "
                     "devices.",
                     env, dsn,
                     (long long)((dem[i].n + dra_node_count(m, ctx->opt->nodes) - 1) /
                                 dra_node_count(m, ctx->opt->nodes)));
        } else {
            snprintf(fix, sizeof(fix),
                     "Add devices or nodes for the class's driver, or reduce the claims' counts "
                     "to %lld in total (`dra-doctor explain claim NAME` shows which selector "
                     "turns each device away).", (long long)supply);
        }
        cat(msg, sizeof(msg), &len,
            "; the pods left over stay Pending with \"cannot allocate all claims\".");
        scope(ctx, emit(ctx, ctx->rule->severity, &cls->o, 0, msg, fix), cls->o.name,
              from ? from->name : NULL, NULL);
    }
    free(inv.v);
    free(dem);
}

int dd_rules_class_capacity(const struct dra_model *m, const struct rule_options *opt,
                            int64_t *supply, int64_t *demand)
{
    static const struct rule_options defaults = RULE_OPTIONS_INIT;
    struct dd_findings none = DD_FINDINGS_INIT;
    struct rule_names known;
    struct rule_ctx ctx = { m, opt ? opt : &defaults, &none, NULL, &known };
    struct inventory inv;
    struct demand *dem = calloc(m->nclasses + 1, sizeof(*dem));
    size_t i;

    memset(&inv, 0, sizeof(inv));
    known_drivers(&ctx, &known);
    if (!dem || class_demand(&ctx, dem) || (supply && build_inventory(&ctx, &inv))) {
        free(dem);
        return -1;
    }
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_driver *from;
        if (supply)
            supply[i] = class_supply(&ctx, &m->classes[i], &inv, INT64_MAX, &from);
        demand[i] = dem[i].n;
    }
    free(inv.v);
    free(dem);
    return 0;
}

/* ---- CDI ----------------------------------------------------------------- */

static int uses_dra(const struct dra_model *m)
{
    return m->ndrivers || m->nclasses || m->nclaims || m->nslices;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static void cdi_enabled_one(struct rule_ctx *ctx, const struct dra_runtime *r)
{
    const struct cri_config *c = &r->cfg;
    struct dra_obj file;
    const struct dra_obj *o = r->obj;
    char msg[MSG_MAX], fix[MSG_MAX], where[300];
    enum dd_severity sev = ctx->rule->severity;
    size_t len = 0;

    if (c->enable_cdi)
        return;
    if (!o) {
        memset(&file, 0, sizeof(file));
        file.api_version = "";
        file.kind = "ContainerdConfig";
        file.ns = "";
        file.name = c->file ? base_name(c->file) : "config.toml";
        file.file = c->file;
        file.line = c->enable_cdi_line;
        o = &file;
        snprintf(where, sizeof(where), "containerd (config version %d)", c->version);
    } else {
        snprintf(where, sizeof(where), "containerd on node %s (%s)", r->node,
                 r->src == DRA_RT_AGENT ? "reported by the dra-doctor node agent" : c->file);
    }
    if (r->src == DRA_RT_INFERRED) {
        /* The runtime version only tells the default; the node's file may override it. */
        sev = DD_SEV_WARNING;
        cat(msg, sizeof(msg), &len,
            "Inferred: %s defaults enable_cdi to false in [%s], so pods would start without "
            "their DRA devices, with no error and no event. Run the dra-doctor node agent (or "
            "lint with --containerd-config) to read the node's real config.", where, c->table);
    } else if (c->enable_cdi_line) {
        cat(msg, sizeof(msg), &len,
            "%s sets enable_cdi = false in [%s]%s: it ignores the CDI devices DRA drivers "
            "prepare, so pods start without their devices, with no error and no event.",
            where, c->table, r->obj && c->file ? " of its config" : "");
        if (c->version == 3 && !c->runtime) {
            /* containerd 2.4 removed the key (lib/cri.c): only 2.0 to 2.3 obey it. */
            sev = DD_SEV_WARNING;
            cat(msg, sizeof(msg), &len, " Assumed: containerd 2.0 to 2.3; 2.4 and later ignore "
                "enable_cdi and always inject.");
        }
    } else {
        cat(msg, sizeof(msg), &len,
            "%s does not set enable_cdi in [%s], and containerd 1.7 defaults it to false: pods "
            "start without their DRA devices, with no error and no event (containerd 2.x would "
            "default it to true).", where, c->table);
    }
    /* Measured on a real node: a restart injects nothing into running containers. */
    snprintf(fix, sizeof(fix), "Set enable_cdi = true in [%s]%s%s and restart containerd, then "
             "delete and recreate the pods that started meanwhile: running containers never "
             "get their devices.", c->table, r->obj ? " of node " : "", r->obj ? r->node : "");
    scope(ctx, emit(ctx, sev, o, r->obj ? 0 : c->enable_cdi_line, msg, fix), NULL, NULL, r->node);
}

static void check_cdi_enabled(struct rule_ctx *ctx)
{
    size_t i;

    if (!uses_dra(ctx->m))
        return;
    for (i = 0; i < ctx->m->nruntimes; i++)
        cdi_enabled_one(ctx, &ctx->m->runtimes[i]);
}

/* 1 when path equals dir or lies below it, comparing whole components. */
static size_t path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (strncmp(path, dir, n) || (path[n] && path[n] != '/' && !(n == 1 && dir[0] == '/')))
        return 0;
    return n;
}

static const struct dra_volume *find_volume(const struct dra_podspec *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->nvol; i++)
        if (STRIEQ(p->vol[i].name, name))
            return &p->vol[i];
    return NULL;
}

/* 1 when every known runtime reads CDI specs from host directory dir (containerd's
 * default directories when no runtime is known). */
static int spec_dir_ok(const struct dra_model *m, const char *dir)
{
    static const char *const dflt[] = { "/etc/cdi", "/var/run/cdi" };
    size_t i;

    if (m->nruntimes) {
        for (i = 0; i < m->nruntimes; i++)
            if (!cri_config_has_spec_dir(&m->runtimes[i].cfg, dir))
                return 0;
        return 1;
    }
    for (i = 0; i < 2; i++)
        if (path_under(dir, dflt[i]) && strlen(dir) - path_under(dir, dflt[i]) <= 1)
            return 1;
    return 0;
}

static void cdi_dir_one(struct rule_ctx *ctx, const struct dra_driver *d)
{
    const struct dra_model *m = ctx->m;
    const struct dra_container *c = d->ctr;
    const struct dra_mount *best = NULL, *shared = NULL;
    const struct dra_volume *vol = NULL;
    size_t i, bestlen = 0, len = 0;
    char host[1024] = "", msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    const char *how = d->cdi_src == DRA_CDI_ENV ? "CDI_ROOT"
                    : d->cdi_src == DRA_CDI_FLAG ? "--cdi-root" : "its default; CDI_ROOT is unset";

    if (!d->cdi_root || !c)
        return;
    for (i = 0; i < c->nmounts; i++) {
        size_t n = path_under(d->cdi_root, c->mounts[i].path);
        const struct dra_volume *v = find_volume(d->ds, c->mounts[i].volume);
        if (n && n >= bestlen) {
            best = &c->mounts[i];
            bestlen = n;
        }
        if (!shared && v && v->host_path && spec_dir_ok(m, v->host_path))
            shared = &c->mounts[i];
    }
    if (best && (vol = find_volume(d->ds, best->volume)) && vol->host_path) {
        snprintf(host, sizeof(host), "%s%s", vol->host_path, d->cdi_root + bestlen);
        if (spec_dir_ok(m, host))
            return;
    }
    objname(&d->ds->o, dsn, sizeof(dsn));
    cat(msg, sizeof(msg), &len, "DaemonSet %s (driver %s) writes CDI specs to %s (%s)", dsn,
        driver_label(d), d->cdi_root, how);
    if (*host)
        cat(msg, sizeof(msg), &len, ", which is host directory %s, not one of containerd's "
            "cdi_spec_dirs", host);
    else
        cat(msg, sizeof(msg), &len, ", which is inside the container, not on a hostPath volume");
    cat(msg, sizeof(msg), &len, ": the runtime cannot find the specs and the pod fails with "
        "CreateContainerError \"CDI device injection failed: unresolvable CDI devices\".");
    /* Measured on a real node: the kubelet does not prepare an already prepared claim
     * again, so the restarted driver never rewrites the failed pods' specs. */
    if (shared)
        snprintf(fix, sizeof(fix), "Set env CDI_ROOT=%s on container %s (volume %s is the "
                 "host's %s, which containerd reads), then delete and recreate the pods that "
                 "failed: their claims are not prepared again.", shared->path, c->name,
                 shared->volume, find_volume(d->ds, shared->volume)->host_path);
    else
        snprintf(fix, sizeof(fix), "Mount hostPath /var/run/cdi into container %s and set env "
                 "CDI_ROOT to its mountPath, then delete and recreate the pods that failed: "
                 "their claims are not prepared again.", c->name);
    scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, d->cdi_line, msg, fix), NULL,
          driver_scope(d),
          NULL);
}

static void check_cdi_dir(struct rule_ctx *ctx)
{
    size_t i, j;

    for (i = 0; i < ctx->m->ndrivers; i++) {
        int seen = 0;
        for (j = 0; j < i; j++)
            seen |= ctx->m->drivers[j].ctr == ctx->m->drivers[i].ctr;
        if (!seen)
            cdi_dir_one(ctx, &ctx->m->drivers[i]);
    }
}

const char *dd_rules_nearest(const char *s, const char *const *names, size_t n)
{
    return nearest(s, names, n);
}
