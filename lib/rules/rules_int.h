/*
 * rules_int.h - what the rule engine's files (lib/rules/\*.c) share: how a
 * check reports a finding, and small string and name-set helpers.  Not part of the API.
 */
#ifndef DD_RULES_INT_H
#define DD_RULES_INT_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/dra.h"
#include "rules/rules.h"
#include "model/kubever.h"

#define STRIEQ(a, b) (strcmp((a), (b)) == 0)
#define MSG_MAX 2048
#define MAX_NAMES 64

static inline struct dd_finding *emit(struct rule_ctx *ctx, enum dd_severity sev,
                               const struct dra_obj *o, int line, const char *msg,
                               const char *fix)
{
    return dd_findings_add(ctx->out, ctx->rule->code, sev, o->api_version, o->kind, o->ns,
                           o->name, o->file, line ? line : o->line, msg, fix);
}

/* Tags f with what it is about (see struct dd_finding); f may be NULL after an OOM. */
static inline void scope(struct rule_ctx *ctx, struct dd_finding *f, const char *cls,
                  const char *driver, const char *node)
{
    if (f && dd_finding_scope(f, cls, driver, node))
        ctx->out->oom = 1;
}

/* Appends printf output to buf at *len, never overflowing; truncation is acceptable for messages. */
static inline void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*len >= size - 1)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n >= size ? size - 1 : *len + (size_t)n;
}

/* cat(buf, size, len, "%s", s) without printf's machinery, which costs ten times more:
 * the webhook lists known drivers in every denial. */
static inline void cats(char *buf, size_t size, size_t *len, const char *s)
{
    size_t n = strlen(s);

    if (*len >= size - 1)
        return;
    if (n > size - 1 - *len)
        n = size - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

/* "ns/name", or "name" when cluster-scoped. */
static inline const char *objname(const struct dra_obj *o, char *buf, size_t size)
{
    if (*o->ns)
        snprintf(buf, size, "%s/%s", o->ns, o->name);
    else
        snprintf(buf, size, "%s", o->name);
    return buf;
}

/* The version of o's apiVersion ("v1" of "resource.k8s.io/v1"; "" without a group). */
static inline const char *rule__api_ver(const struct dra_obj *o)
{
    const char *slash = strchr(o->api_version, '/');

    return slash ? slash + 1 : "";
}

/* A small set of names (driver names, class names), borrowed. */
struct rule_names {
    const char *v[MAX_NAMES];
    size_t n;
};

static inline int names_has(const struct rule_names *s, const char *name)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (STRIEQ(s->v[i], name))
            return 1;
    return 0;
}

static inline void names_add(struct rule_names *s, const char *name)
{
    if (name && *name && !names_has(s, name) && s->n < MAX_NAMES)
        s->v[s->n++] = name;
}

/* A driver's name for messages, and for a finding's scope: detection may not have found one. */
static inline const char *rule__driver_label(const struct dra_driver *d)
{
    return *d->name ? d->name : "of unknown name";
}

static inline const char *rule__driver_scope(const struct dra_driver *d)
{
    return *d->name ? d->name : NULL;
}

/* The release the input is for (--kube-version), 1.<minor>. */
static inline int rule__kube_minor(const struct rule_ctx *ctx)
{
    return ctx->opt->kube_minor ? ctx->opt->kube_minor : KV_DEFAULT_MINOR;
}

/* The gates the input runs with: the options', else the release's defaults (rules.c fills
 * ctx->gates once per run). */
static inline int rule__gate(const struct rule_ctx *ctx, enum kv_gate g)
{
    return ctx->gates->on[g];
}

/* rules.c: sets ctx->gates to ctx->opt->gates, or to the release's defaults in *defaults. */
void rule__ctx_gates(struct rule_ctx *ctx, struct kv_gates *defaults);

/* rules.c: the drivers the snapshot shows (slice publishers, driver DaemonSets,
 * --known-driver), into out. */
void rule__known_drivers(const struct rule_ctx *ctx, struct rule_names *out);

/* rules.c: the known or profile driver name s plausibly misspells, or NULL; a list of names
 * for messages ("a, b, ..." or "none"). */
const char *rule__typo_of_known(const char *s, const struct rule_names *known);
void rule__join_names(char *buf, size_t size, const struct rule_names *s);

/*
 * What the engine makes of the driver names a selector requires: none known, and whether the
 * first unknown one is a plausible misspelling of a known or profile driver (suggestion).
 * Used by SelectorMatchesNoDriver and, so that each fault is reported on its own, by
 * DevicesDoNotFit, which stays silent where a typo is the cause.
 */
struct driver_verdict {
    int unknown;            /* 1: every driver name the selector allows is unknown */
    const char *bad;        /* the unknown name reported: the first that is a typo, else the first */
    const char *suggestion; /* what the typo meant (known or profile driver), or NULL: not a typo */
    int own_domain;         /* 1: the suggestion is an attribute domain the selector itself reads */
    int line, col;          /* position of bad within the expression */
};

/* selectors.c: the verdict on the driver names selector sel requires. */
void rule__judge_selector(const struct rule_ctx *ctx, const struct dra_selector *sel,
                          const struct rule_names *known, struct driver_verdict *v);

/* inventory.c: the driver names the selectors of r's class (and r) pin, into out. */
void rule__request_drivers(const struct dra_model *m, const struct dra_request *r,
                           struct rule_names *out);

/*
 * rules.c: results per request that depend only on its class and the texts of its selectors
 * (and, when given, an extra key such as its tolerations): thousands of claims share a few
 * such keys, so a check works each key out once and not once per claim.  A value is
 * value_size zeroed bytes the first time its key is asked for (*fresh = 1; a key is asked
 * for with one size).  The pointer
 * stays valid until rule__memo_free.  r may be NULL (the class alone); NULL on ENOMEM.
 */
struct rule_memo;
struct rule_memo *rule__memo_new(void);
void *rule__memo_get(struct rule_memo *mm, const struct dra_class *cls,
                     const struct dra_request *r, const char *extra, size_t value_size,
                     int *fresh);
void rule__memo_free(struct rule_memo *mm);

/* dd_rules_cache_new's (rules.c): one part per rule that reads it, each its file's. */
struct rule_cache {
    /* rules.c: the driver names the slices and the drivers of m tell (rule__known_drivers'
     * first part: a pass over every slice, which every run would make), with the arrays they
     * were read from (compared only). */
    struct rule_names drivers_named;
    const struct dra_slice *named_slices;
    size_t named_nslices;
    const struct dra_driver *named_drivers;
    size_t named_ndrivers;
    struct rule_plugin_sites *plugin_sites; /* drivers.c: DriverDaemonSetMissingOnNode */
    struct rule_class_sites *class_sites;   /* scheduling.c: where each class has devices
                                               (PodConstraintsExcludeDeviceNodes,
                                               ClaimAllocatedOnOtherNode) */
    struct rule_class_sels *class_sels;     /* selectors.c: the classes' selectors on every
                                               device (SelectorUnknownAttribute,
                                               SelectorRuntimeError) */
};

/* What the checks of one run work out once for several rules (rules.c frees it at the end of
 * the run); each part NULL until a check needs it. */
struct rule_sel_walk;
struct rule_scratch {
    struct rule_sel_walk *sel; /* selectors.c: every selector's errors on the devices
                                  (SelectorUnknownAttribute, SelectorRuntimeError) */
};
void rule__sel_walk_free(struct rule_sel_walk *w);

/* drivers.c, scheduling.c and selectors.c: their parts of the cache of m; NULL on ENOMEM. */
struct rule_plugin_sites *rule__plugin_sites_new(const struct dra_model *m);
void rule__plugin_sites_free(struct rule_plugin_sites *ps);
struct rule_class_sites *rule__class_sites_new(const struct dra_model *m);
void rule__class_sites_free(struct rule_class_sites *cs);
struct rule_class_sels *rule__class_sels_new(const struct dra_model *m);
void rule__class_sels_free(struct rule_class_sels *cs);

/* ---- the checks, in the table of rules.c, by family ---- */

/* claims.c: claims and references */
void rule__check_api_versions(struct rule_ctx *ctx);
void rule__check_claim_source(struct rule_ctx *ctx);
void rule__check_container_claims(struct rule_ctx *ctx);
void rule__check_admin_access(struct rule_ctx *ctx);
void rule__check_quota(struct rule_ctx *ctx);
void rule__check_claim_ref(struct rule_ctx *ctx);
void rule__check_template_ref(struct rule_ctx *ctx);
void rule__check_class_ref(struct rule_ctx *ctx);
void rule__check_config_driver(struct rule_ctx *ctx);
void rule__check_claims_consumed(struct rule_ctx *ctx);

/* drivers.c: drivers, RBAC and kubelet plugins */
void rule__check_rbac(struct rule_ctx *ctx);
void rule__check_publishing(struct rule_ctx *ctx);
void rule__check_plugin_nodes(struct rule_ctx *ctx);
void rule__check_plugin_nodes_pods(struct rule_ctx *ctx); /* its pod_check */
void rule__check_stale_slices(struct rule_ctx *ctx);
void rule__check_config_params(struct rule_ctx *ctx);
void rule__check_claim_status_rbac(struct rule_ctx *ctx);
void rule__check_publishing_on_node(struct rule_ctx *ctx);

/* selectors.c */
void rule__check_syntax(struct rule_ctx *ctx);
void rule__check_driver(struct rule_ctx *ctx);
void rule__check_attrs(struct rule_ctx *ctx);
void rule__check_runtime(struct rule_ctx *ctx);

/* fit.c: the allocator's verdict on a pod */
void rule__check_fit(struct rule_ctx *ctx);

/* inventory.c: devices and pools */
void rule__check_pool_complete(struct rule_ctx *ctx);
void rule__check_pool_valid(struct rule_ctx *ctx);
void rule__check_slice_nodes(struct rule_ctx *ctx);
void rule__check_device_taints(struct rule_ctx *ctx);
void rule__check_device_taints_pods(struct rule_ctx *ctx); /* its pod_check */
void rule__check_first_available(struct rule_ctx *ctx);
void rule__check_all_mode(struct rule_ctx *ctx);

/* scheduling.c: nodes and scheduling */
void rule__check_pod_constraints(struct rule_ctx *ctx);
void rule__check_bypass(struct rule_ctx *ctx);
void rule__check_claim_node(struct rule_ctx *ctx);
void rule__check_reserved_for(struct rule_ctx *ctx);

/* shapes.c: objects as the API server decodes them */
void rule__check_field_shapes(struct rule_ctx *ctx);
void rule__check_claim_fields_removed(struct rule_ctx *ctx);

/* gated.c: features behind feature gates */
void rule__check_taint_rule_scope(struct rule_ctx *ctx);
void rule__check_extended_backed(struct rule_ctx *ctx);
void rule__check_extended_conflict(struct rule_ctx *ctx);
void rule__check_binding_conditions(struct rule_ctx *ctx);

/* runtime.c: runtime and CDI */
void rule__check_cdi_enabled(struct rule_ctx *ctx);
void rule__check_cdi_dir(struct rule_ctx *ctx);
void rule__check_device_health(struct rule_ctx *ctx);

#endif
