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
#include "quota.h"
#include "rbac.h"

#define STRIEQ(a, b) (strcmp((a), (b)) == 0)
#define MSG_MAX 2048
#define MAX_NAMES 64

static void check_quota(struct rule_ctx *ctx);
static void check_claim_ref(struct rule_ctx *ctx);
static void check_template_ref(struct rule_ctx *ctx);
static void check_class_ref(struct rule_ctx *ctx);
static void check_rbac(struct rule_ctx *ctx);
static void check_syntax(struct rule_ctx *ctx);
static void check_driver(struct rule_ctx *ctx);
static void check_attrs(struct rule_ctx *ctx);
static void check_devices(struct rule_ctx *ctx);
static void check_cdi_enabled(struct rule_ctx *ctx);
static void check_cdi_dir(struct rule_ctx *ctx);
static void check_publishing(struct rule_ctx *ctx);

/* Pipeline order: claim created -> references resolve -> driver publishes -> selector
 * matches -> enough devices -> CDI injects. */
static const struct dd_rule rule_table[] = {
    { "QuotaExceeded", DD_SEV_ERROR,
      "Claims need more DRA devices or claim objects than a ResourceQuota allows", check_quota },
    { "ClaimNotFound", DD_SEV_WARNING,
      "A pod references a ResourceClaim that does not exist", check_claim_ref },
    { "ClaimTemplateNotFound", DD_SEV_WARNING,
      "A pod references a ResourceClaimTemplate that does not exist", check_template_ref },
    { "DeviceClassNotFound", DD_SEV_WARNING,
      "A claim requests a DeviceClass that does not exist", check_class_ref },
    { "DriverRBACDenied", DD_SEV_ERROR,
      "A DRA driver's ServiceAccount may not create, update and delete ResourceSlices",
      check_rbac },
    { "DriverNotPublishing", DD_SEV_ERROR,
      "A DRA driver is installed but publishes no ResourceSlices (live clusters only)",
      check_publishing },
    { "SelectorSyntaxError", DD_SEV_ERROR,
      "A CEL device selector does not compile or is not a boolean", check_syntax },
    { "SelectorMatchesNoDriver", DD_SEV_ERROR,
      "A device selector requires a driver name that no known DRA driver has", check_driver },
    { "SelectorUnknownAttribute", DD_SEV_WARNING,
      "A device selector reads an attribute or capacity no published device has", check_attrs },
    { "InsufficientDevices", DD_SEV_WARNING,
      "Claims need more devices of a class than the known inventory offers", check_devices },
    { "ClaimNotAllocated", DD_SEV_WARNING,
      "A pod's claim exists but is not allocated, for a reason no other rule explains "
      "(per pod, controller only)", NULL },
    { "DriverNotRegistered", DD_SEV_ERROR,
      "The kubelet cannot prepare a pod's claims: their DRA driver is not registered on the "
      "pod's node (per pod, controller only)", NULL },
    { "CDIDisabled", DD_SEV_ERROR,
      "The container runtime has CDI disabled, so DRA devices are never injected",
      check_cdi_enabled },
    { "CDISpecDirNotShared", DD_SEV_ERROR,
      "A DRA driver writes CDI specs to a directory the container runtime does not read",
      check_cdi_dir },
    { "CDIInjectionFailed", DD_SEV_ERROR,
      "The runtime failed to inject a pod's CDI devices, for a reason no other rule explains "
      "(per pod, controller only)", NULL },
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

/* ---- helpers ------------------------------------------------------------- */

static struct dd_finding *emit(struct rule_ctx *ctx, enum dd_severity sev,
                               const struct dra_obj *o, int line, const char *msg,
                               const char *fix)
{
    return dd_findings_add(ctx->out, ctx->rule->code, sev, o->api_version, o->kind, o->ns,
                           o->name, o->file, line ? line : o->line, msg, fix);
}

/* Tags f with what it is about (see struct dd_finding); f may be NULL after an OOM. */
static void scope(struct rule_ctx *ctx, struct dd_finding *f, const char *cls,
                  const char *driver, const char *node)
{
    if (f && dd_finding_scope(f, cls, driver, node))
        ctx->out->oom = 1;
}

/* Appends printf output to buf at *len, never overflowing; truncation is acceptable for messages. */
static void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
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
static void cats(char *buf, size_t size, size_t *len, const char *s)
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
static const char *objname(const struct dra_obj *o, char *buf, size_t size)
{
    if (*o->ns)
        snprintf(buf, size, "%s/%s", o->ns, o->name);
    else
        snprintf(buf, size, "%s", o->name);
    return buf;
}

/*
 * Optimal string alignment distance (a transposition, "exmaple", costs one edit), or
 * anything above max once it is sure to exceed max.  Three rows suffice: the
 * transposition looks two back.  A row is never below the smaller of the previous
 * row's minimum and the one before's plus one, so two rows over max end it.
 */
static size_t edit_distance(const char *a, const char *b, size_t max)
{
    size_t la = strlen(a), lb = strlen(b), i, j, low, prev_low = 0;
    size_t rows[3][254], *pp, *p, *c;

    if (la > 253 || lb > 253)
        return (size_t)-1;
    for (j = 0; j <= lb; j++)
        rows[0][j] = j;
    for (i = 1; i <= la; i++) {
        pp = rows[(i + 1) % 3]; /* row i - 2 */
        p = rows[(i + 2) % 3];  /* row i - 1 */
        c = rows[i % 3];
        low = c[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1], best = p[j] + 1;
            if (c[j - 1] + 1 < best)
                best = c[j - 1] + 1;
            if (p[j - 1] + cost < best)
                best = p[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            if ((c[j] = best) < low)
                low = best;
        }
        if (low > max && prev_low > max)
            return max + 1;
        prev_low = low;
    }
    return rows[la % 3][lb];
}

/* The closest of names to s within a typo's reach, or NULL; the first of equals wins. */
static const char *nearest(const char *s, const char *const *names, size_t n)
{
    size_t i, best = (size_t)-1, ls = strlen(s), limit = ls / 4 > 2 ? ls / 4 : 2;
    const char *r = NULL;

    for (i = 0; i < n && best; i++) {
        size_t ln = strlen(names[i]), floor = ln > ls ? ln - ls : ls - ln, dist;
        size_t max = best <= limit ? best - 1 : limit;
        /* The length difference is a lower bound: skip what cannot win. */
        if (floor > max)
            continue;
        if ((dist = edit_distance(s, names[i], max)) <= max) {
            best = dist;
            r = names[i];
        }
    }
    return r;
}

/* ---- known drivers ------------------------------------------------------- */

struct rule_names {
    const char *v[MAX_NAMES];
    size_t n;
};

static int names_has(const struct rule_names *s, const char *name)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (STRIEQ(s->v[i], name))
            return 1;
    return 0;
}

static void names_add(struct rule_names *s, const char *name)
{
    if (name && *name && !names_has(s, name) && s->n < MAX_NAMES)
        s->v[s->n++] = name;
}

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
}

static void profile_drivers(struct rule_names *out)
{
    size_t i, j, n;
    const struct drv_profile *p = drv_profiles(&n);

    out->n = 0;
    for (i = 0; i < n; i++)
        for (j = 0; j < DRV_MAX && p[i].drivers[j]; j++)
            names_add(out, p[i].drivers[j]);
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
 * The driver a selector's unknown driver name most likely meant, or NULL:
 * what "did you mean" suggests.  Used by SelectorMatchesNoDriver and, so
 * that each fault is reported on its own, by InsufficientDevices.
 */
struct driver_verdict {
    int unknown;            /* 1: every driver name the selector allows is unknown */
    const char *bad;        /* the first unknown name */
    const char *suggestion; /* nearest known (or profile) driver, or NULL */
    int line, col;          /* position of bad within the expression */
};

static void judge_selector(const struct rule_ctx *ctx, const struct dra_selector *sel,
                           const struct rule_names *known, struct driver_verdict *v)
{
    const struct cel_driver_ref *refs;
    size_t n, i;
    struct rule_names profiles;
    enum cel_drivers_kind kind;

    memset(v, 0, sizeof(*v));
    if (!sel->prog)
        return;
    kind = cel_program_drivers(sel->prog, &refs, &n);
    if (kind != CEL_DRIVERS_SET || n == 0)
        return;
    for (i = 0; i < n; i++)
        if (names_has(known, refs[i].name))
            return;
    v->bad = refs[0].name;
    v->line = refs[0].line;
    v->col = refs[0].col;
    if (known->n) {
        v->unknown = 1;
        v->suggestion = nearest(v->bad, known->v, known->n);
        return;
    }
    /* Nothing in the input says which drivers exist: only a near miss of a well-known
     * driver name is evidence enough. */
    profile_drivers(&profiles);
    if (!names_has(&profiles, v->bad) && (v->suggestion = nearest(v->bad, profiles.v, profiles.n)))
        v->unknown = 1;
    (void)ctx;
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
    const char *near;
    size_t len = 0;

    if (!r->class_name || dra_find_class(ctx->m, r->class_name))
        return;
    near = nearest_memo(memo, r->class_name, classes);
    cat(msg, sizeof(msg), &len,
        "%s %s request \"%s\" asks for DeviceClass \"%s\", which does not exist%s%s%s; the "
        "scheduler keeps the pod Pending (\"device class %s does not exist\")%s.",
        c->o.kind, objname(&c->o, on, sizeof(on)), r->name, r->class_name,
        near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "", r->class_name,
        partial_note(ctx));
    if (near)
        snprintf(fix, sizeof(fix), "Set deviceClassName to \"%s\".", near);
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

/* What SubjectAccessReviews said about the account: -1 no answer, 0 denied, 1 allowed. */
static int sar_answer(const struct dra_model *m, const char *ns, const char *sa, const char *verb)
{
    size_t i;

    for (i = 0; i < m->nsar; i++)
        if (STRIEQ(m->sar[i].ns, ns) && STRIEQ(m->sar[i].sa, sa) && STRIEQ(m->sar[i].verb, verb))
            return m->sar[i].allowed;
    return -1;
}

static void rbac_one(struct rule_ctx *ctx, const struct dra_driver *d)
{
    static const char *const verbs[] = { "create", "update", "delete" };
    const struct dra_model *m = ctx->m;
    const char *ns = d->ds->o.ns, *sa = d->ds->service_account;
    struct rbac_grant g[MAX_GRANTS];
    const struct rbac_grant *target = NULL;
    size_t n = rbac_sa_grants(m, ns, sa, g, MAX_GRANTS), i, len = 0, flen = 0;
    char missing[128] = "", msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    int nmissing = 0, unknown_role = 0, nsar = 0;

    if (n > MAX_GRANTS)
        n = MAX_GRANTS;
    for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        int answer = sar_answer(m, ns, sa, verbs[i]);
        nsar += answer >= 0;
        if (answer == 0 ||
            (answer < 0 && !rbac_sa_allows_cluster(m, ns, sa, verbs[i], RBAC_GROUP, RBAC_RESOURCE))) {
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
        ns, sa, dsn, d->name, missing, RBAC_GROUP,
        nsar ? " (SubjectAccessReview)" : "", d->name);
    if (target) {
        cat(fix, sizeof(fix), &flen,
            "Add the verbs %s (the example driver's chart also grants patch) for resourceslices "
            "in apiGroup %s to ClusterRole %s.",
            missing, RBAC_GROUP, target->role->name);
        scope(ctx, emit(ctx, ctx->rule->severity, target->role, slice_rule_line(m, target->role),
                        msg, fix), NULL, d->name, NULL);
        return;
    }
    for (i = 0; i < n; i++)
        if (!g[i].cluster_wide) {
            cat(msg, sizeof(msg), &len,
                " RoleBinding %s/%s grants only inside namespace %s, which cannot cover "
                "cluster-scoped ResourceSlices.",
                g[i].binding->ns, g[i].binding->name, g[i].binding->ns);
            snprintf(fix, sizeof(fix),
                     "Bind a ClusterRole granting get, list, watch, create, update, patch, delete "
                     "on resourceslices to ServiceAccount %s/%s with a ClusterRoleBinding instead "
                     "of RoleBinding %s.",
                     ns, sa, g[i].binding->name);
            scope(ctx, emit(ctx, ctx->rule->severity, g[i].binding, 0, msg, fix), NULL, d->name,
                  NULL);
            return;
        }
    /* The example driver's slice controller retries with a growing delay (client-go's
     * workqueue backoff, up to 1000 s): measured 12.7 s after the fix on a real node. */
    snprintf(fix, sizeof(fix),
             "Grant get, list, watch, create, update, patch, delete on resourceslices.%s to "
             "ServiceAccount %s/%s with a ClusterRole and a ClusterRoleBinding, then restart "
             "the plugin pods of DaemonSet %s/%s to publish at once (a refused plugin retries "
             "with a growing delay).",
             RBAC_GROUP, ns, sa, d->ds->o.ns, d->ds->o.name);
    scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, d->name, NULL);
}

/* 1 when the account may create, update and delete slices (SAR answers first, then RBAC). */
static int may_publish(const struct dra_model *m, const char *ns, const char *sa)
{
    static const char *const verbs[] = { "create", "update", "delete" };
    size_t i;

    for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        int a = sar_answer(m, ns, sa, verbs[i]);
        if (a == 0 ||
            (a < 0 && !rbac_sa_allows_cluster(m, ns, sa, verbs[i], RBAC_GROUP, RBAC_RESOURCE)))
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
        if (has || !may_publish(m, d->ds->o.ns, d->ds->service_account) ||
            (d->profile && !STRIEQ(d->name, d->profile->drivers[0])))
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
        scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, d->name, NULL);
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
    cat(msg, sizeof(msg), &len,
        "%s %s %s requires device.driver == '%s', but no known DRA driver has that name "
        "(known: %s), so no device ever matches and claims stay unallocated (\"cannot allocate "
        "all claims\").",
        s->owner->kind, objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)), v.bad,
        known->n ? list : "none in the input; compared with well-known drivers");
    if (v.suggestion) {
        cat(msg, sizeof(msg), &len, " Did you mean '%s'?", v.suggestion);
        snprintf(fix, sizeof(fix), "Change '%s' to '%s' in %s.", v.bad, v.suggestion, site_path(s, path, sizeof(path)));
    } else {
        snprintf(fix, sizeof(fix),
                 "Use the name of an installed driver in %s, or install the driver '%s' "
                 "(--known-driver declares one that is installed elsewhere).",
                 site_path(s, path, sizeof(path)), v.bad);
    }
    scope(ctx, emit(ctx, ctx->rule->severity, s->owner, s->sel->line, msg, fix),
          s->cls ? s->cls->o.name : NULL, v.suggestion, NULL);
}

static void check_driver(struct rule_ctx *ctx)
{
    for_each_selector(ctx, driver_one);
}

/* ---- SelectorUnknownAttribute -------------------------------------------- */

/* The driver names a site's devices come from (its own constraint, else its class's). */
static enum cel_drivers_kind site_drivers(const struct sel_site *s, struct rule_names *out)
{
    const struct cel_driver_ref *refs;
    size_t n, i, j;

    out->n = 0;
    if (s->sel->prog && cel_program_drivers(s->sel->prog, &refs, &n) == CEL_DRIVERS_SET) {
        for (i = 0; i < n; i++)
            names_add(out, refs[i].name);
        return CEL_DRIVERS_SET;
    }
    for (j = 0; s->cls && j < s->cls->nsel; j++)
        if (s->cls->sel[j].prog &&
            cel_program_drivers(s->cls->sel[j].prog, &refs, &n) == CEL_DRIVERS_SET) {
            for (i = 0; i < n; i++)
                names_add(out, refs[i].name);
            return CEL_DRIVERS_SET;
        }
    return CEL_DRIVERS_ANY;
}

static int device_has(const struct cel_device *d, const struct cel_attr_ref *r)
{
    size_t i;

    if (r->capacity) {
        for (i = 0; i < d->ncaps; i++)
            if (STRIEQ(d->caps[i].domain, r->domain) && STRIEQ(d->caps[i].name, r->name))
                return 1;
        return 0;
    }
    for (i = 0; i < d->nattrs; i++)
        if (STRIEQ(d->attrs[i].domain, r->domain) && STRIEQ(d->attrs[i].name, r->name))
            return 1;
    return 0;
}

static int is_guarded(const struct cel_attr_ref *refs, size_t n, const struct cel_attr_ref *r)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (refs[i].guarded && refs[i].capacity == r->capacity && refs[i].domain &&
            STRIEQ(refs[i].domain, r->domain) && STRIEQ(refs[i].name, r->name))
            return 1;
    return 0;
}

static void attr_one(struct rule_ctx *ctx, const struct sel_site *s, const struct rule_names *drivers,
                     const struct cel_attr_ref *r)
{
    const struct dra_model *m = ctx->m;
    const char *field = r->capacity ? "capacity" : "attributes";
    struct rule_names have = { { 0 }, 0 };
    char msg[MSG_MAX], fix[MSG_MAX], on[300], list[512], where[160], path[200];
    size_t i, j, ndev = 0, len = 0;
    const char *near;

    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *sl = &m->slices[i];
        if (drivers->n ? !names_has(drivers, sl->driver) : !STRIEQ(sl->driver, r->domain))
            continue;
        for (j = 0; j < sl->ndev; j++) {
            const struct cel_device *d = &sl->dev[j].dev;
            size_t k;
            ndev++;
            if (device_has(d, r))
                return;
            if (r->capacity) {
                for (k = 0; k < d->ncaps; k++)
                    if (STRIEQ(d->caps[k].domain, r->domain))
                        names_add(&have, d->caps[k].name);
            } else {
                for (k = 0; k < d->nattrs; k++)
                    if (STRIEQ(d->attrs[k].domain, r->domain))
                        names_add(&have, d->attrs[k].name);
            }
        }
    }
    if (!ndev)
        return; /* no published devices to compare with */
    near = nearest(r->name, have.v, have.n);
    join_names(list, sizeof(list), &have);
    cat(msg, sizeof(msg), &len,
        "%s %s %s reads device.%s['%s'].%s, but none of the %zu published device(s) has it "
        "(%s has: %s), so allocation aborts with \"no such key: %s\".",
        s->owner->kind, objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)), field, r->domain, r->name,
        ndev, r->domain, list, r->name);
    if (near)
        cat(msg, sizeof(msg), &len, " Did you mean '%s'?", near);
    snprintf(fix, sizeof(fix), "%s%s%s in %s, or guard it with has(device.%s['%s'].%s).",
             near ? "Use '" : "Use an existing name", near ? near : "", near ? "'" : "",
             site_path(s, path, sizeof(path)), field, r->domain, r->name);
    scope(ctx, emit(ctx, ctx->rule->severity, s->owner, s->sel->line, msg, fix),
          s->cls ? s->cls->o.name : NULL, r->domain, NULL);
}

static void attrs_site(struct rule_ctx *ctx, const struct sel_site *s)
{
    const struct cel_attr_ref *refs;
    struct rule_names drivers;
    size_t n, i, j;

    if (!s->sel->prog)
        return;
    cel_program_attrs(s->sel->prog, &refs, &n);
    if (site_drivers(s, &drivers) == CEL_DRIVERS_ANY)
        drivers.n = 0;
    for (i = 0; i < n; i++) {
        int dup = 0;
        if (refs[i].guarded || !refs[i].domain || is_guarded(refs, n, &refs[i]))
            continue;
        /* One finding per name, however often the expression reads it. */
        for (j = 0; j < i; j++)
            dup |= refs[j].domain && refs[j].capacity == refs[i].capacity &&
                   STRIEQ(refs[j].domain, refs[i].domain) && STRIEQ(refs[j].name, refs[i].name);
        if (!dup)
            attr_one(ctx, s, &drivers, &refs[i]);
    }
}

static void check_attrs(struct rule_ctx *ctx)
{
    for_each_selector(ctx, attrs_site);
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
            ok = cel_eval_device(cls->sel[j].prog, &d, NULL, NULL) == CEL_TRUE;
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
                     "to %lld in total.", (long long)supply);
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
        d->name, d->cdi_root, how);
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
    scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, d->cdi_line, msg, fix), NULL, d->name,
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
