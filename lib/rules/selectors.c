/*
 * selectors.c - CEL device selectors, compiled as the API server does and evaluated on the
 * published devices as the scheduler's allocator does (class selectors in order, then the
 * request's on the devices the class admits).
 *
 *   SelectorSyntaxError       does not compile, or is not a boolean, or costs too much
 *   SelectorMatchesNoDriver   requires a driver name nothing installs (an error for a typo)
 *   SelectorUnknownAttribute  reads an attribute or capacity no published device has
 *   SelectorRuntimeError      any other runtime error: the scheduler aborts the allocation
 */
#include "rules_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "rules/suggest.h"


/* The attribute or capacity domain of sel's own that driver name s plausibly misspells: the
 * selector names the right driver itself (`device.driver == 'tpu.acem.io' &&
 * device.attributes['tpu.acme.io'].x`).  NULL when none. */
static const char *typo_of_own_domain(const struct dra_selector *sel, const char *s)
{
    const struct cel_attr_ref *attrs;
    struct rule_names domains = { { 0 }, 0 };
    size_t n, i;

    if (drv_real_driver(s))
        return NULL;
    cel_program_attrs(sel->prog, &attrs, &n);
    for (i = 0; i < n; i++)
        if (attrs[i].domain && !STRIEQ(attrs[i].domain, s))
            names_add(&domains, attrs[i].domain);
    return domains.n ? sug_nearest(s, domains.v, domains.n) : NULL;
}

void rule__judge_selector(const struct rule_ctx *ctx, const struct dra_selector *sel,
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
        if ((v->suggestion = rule__typo_of_known(refs[i].name, known)) ||
            (v->own_domain = (v->suggestion = typo_of_own_domain(sel, refs[i].name)) != NULL))
            at = i;
    v->bad = refs[at].name;
    v->line = refs[at].line;
    v->col = refs[at].col;
}

/* 1 when the only evidence of driver name s is class cls itself: it sits beside a driver
 * DaemonSet that does not tell its name, and no slice, named driver, --known-driver or other
 * class names s.  Such a name proves nothing about cls. */
static int named_only_by(const struct rule_ctx *ctx, const struct dra_class *cls, const char *s)
{
    const struct dra_model *m = ctx->m;
    size_t i, j, k, n;

    for (i = 0; i < m->ninstall_names && !STRIEQ(m->install_names[i], s); i++)
        ;
    if (i == m->ninstall_names)
        return 0;
    for (i = 0; i < m->nslices; i++)
        if (STRIEQ(m->slices[i].driver, s))
            return 0;
    for (i = 0; i < m->ndrivers; i++)
        if (STRIEQ(m->drivers[i].name, s) && strcmp(m->drivers[i].name_from, "DeviceClass beside it"))
            return 0;
    for (i = 0; i < ctx->opt->nknown_drivers; i++)
        if (STRIEQ(ctx->opt->known_drivers[i], s))
            return 0;
    for (i = 0; i < m->nclasses; i++) {
        if (&m->classes[i] == cls)
            continue;
        for (j = 0; j < m->classes[i].nsel; j++) {
            const struct cel_driver_ref *refs;
            if (!m->classes[i].sel[j].prog ||
                cel_program_drivers(m->classes[i].sel[j].prog, &refs, &n) != CEL_DRIVERS_SET)
                continue;
            for (k = 0; k < n; k++)
                if (STRIEQ(refs[k].name, s))
                    return 0;
        }
    }
    return 1;
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
    if (!r->nsel) /* most requests: no class to look up */
        return;
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

void rule__check_syntax(struct rule_ctx *ctx)
{
    for_each_selector(ctx, syntax_one);
}

static void driver_one(struct rule_ctx *ctx, const struct sel_site *s)
{
    const struct rule_names *known = ctx->known;
    struct rule_names others = { { 0 }, 0 };
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
    rule__judge_selector(ctx, s->sel, known, &v);
    /* A class's own name for its driver, beside a DaemonSet that tells none, is no evidence
     * for it: judged without it, it is reported only when the selector proves it a typo. */
    if (!v.unknown && !s->request && n == 1 && named_only_by(ctx, s->cls, refs[0].name)) {
        size_t i;
        for (i = 0; i < known->n; i++)
            if (!STRIEQ(known->v[i], refs[0].name))
                names_add(&others, known->v[i]);
        known = &others;
        rule__judge_selector(ctx, s->sel, known, &v);
        if (!v.suggestion)
            return;
    }
    if (!v.unknown)
        return;
    rule__join_names(list, sizeof(list), known);
    if (v.suggestion) {
        cat(msg, sizeof(msg), &len,
            "%s %s %s requires device.driver == '%s', but no known DRA driver has that name "
            "(known: %s), so no device ever matches and claims stay unallocated (\"cannot "
            "allocate all claims\"). Did you mean '%s'?",
            s->owner->kind, objname(s->owner, on, sizeof(on)), site_where(s, where, sizeof(where)),
            v.bad, known->n ? list : "none in the input; compared with well-known drivers",
            v.suggestion);
        if (v.own_domain)
            cat(msg, sizeof(msg), &len, " The same selector reads attributes of domain '%s', "
                "which a driver publishes under its own name.", v.suggestion);
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

void rule__check_driver(struct rule_ctx *ctx)
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

/* Runs sel[0..nsel) on device d in order, as the allocator does, while they hold, recording
 * each one's errors in errs[0..nsel); 1 when every one was true. */
static int eval_device(const struct dra_model *m, const struct dra_selector *sel, size_t nsel,
                       size_t d, struct sel_errors *errs)
{
    size_t k;
    int ok = 1;

    for (k = 0; k < nsel && ok; k++) {
        struct dd_err err;
        enum cel_verdict v;
        if (!sel[k].prog)
            return 0; /* SelectorSyntaxError's to report */
        errs[k].evaluated++;
        if ((v = dra_selector_match(m, &sel[k], d, NULL)) == CEL_ERROR) {
            dra_selector_match(m, &sel[k], d, &err);
            sel_errors_add(&errs[k], err.msg, m->devices[d]->slice, m->devices[d]);
        }
        ok = v == CEL_TRUE;
    }
    return ok;
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
        near = sug_nearest(key, have.v, have.n);
        /* "dra.net/rdma" is an attribute's qualified name, not a domain. */
        for (k = 0; slash && !near && k < dev->nattrs; k++)
            if (strlen(dev->attrs[k].domain) == (size_t)(slash - r->domain) &&
                !strncmp(dev->attrs[k].domain, r->domain, (size_t)(slash - r->domain)) &&
                STRIEQ(dev->attrs[k].name, slash + 1))
                snprintf(split, sizeof(split), "device.%s['%s'].%s", field, dev->attrs[k].domain,
                         dev->attrs[k].name);
    }
    rule__join_names(list, sizeof(list), &have);
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

/* The scheduler's words, in the target release, for error e of selector s on its first
 * device: "class X: selector #N[ on device D/P/N]: CEL runtime error: ...". */
static void scheduler_text(const struct rule_ctx *ctx, const struct sel_site *s,
                           const struct sel_error *e, char *buf, size_t size)
{
    char claim[300];

    /* klog.KObj: "ns/name", or "name" without a namespace. */
    if (s->request)
        snprintf(claim, sizeof(claim), "%s%s%s", s->owner->ns, *s->owner->ns ? "/" : "",
                 s->owner->name);
    kv_cel_runtime_text(rule__kube_minor(ctx), s->owner->name, s->request ? claim : NULL,
                        s->idx, e->dev->dev.driver, e->slice->pool, e->dev->name, e->msg, buf,
                        size);
}

/* The findings of one selector's errors; only missing keys are SelectorUnknownAttribute's. */
static void attrs_report(struct rule_ctx *ctx, const struct sel_site *s,
                         const struct sel_errors *errs)
{
    static const char nsk[] = "no such key: ";
    char sched[600];
    size_t i;

    for (i = 0; i < errs->n; i++) {
        const struct sel_error *e = &errs->v[i];
        if (strncmp(e->msg, nsk, sizeof(nsk) - 1))
            continue;
        scheduler_text(ctx, s, e, sched, sizeof(sched));
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
    char sched[600], msg[MSG_MAX], fix[MSG_MAX], on[300], where[160], path[200];
    size_t i;

    for (i = 0; i < errs->n; i++) {
        const struct sel_error *e = &errs->v[i];
        if (!strncmp(e->msg, nsk, sizeof(nsk) - 1))
            continue;
        scheduler_text(ctx, s, e, sched, sizeof(sched));
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

/* The request keys whose errors are still to be worked out. */
struct pending {
    struct key { const struct dra_request *r; size_t cls, nsel; struct sel_errors *errs; } *v;
    size_t n, cap;
};

/*
 * A claim's requests (and firstAvailable alternatives) on the devices their class admits,
 * once per request key (claims share their few selector texts): with todo, the keys not seen
 * yet go there to be evaluated; without, each request's errors are reported.  0, or -1 on
 * ENOMEM.
 */
static int attrs_claim(struct rule_ctx *ctx, const struct dra_claim *c, struct rule_memo *memo,
                       size_t maxsel, sel_report report, struct pending *todo)
{
    const struct dra_model *m = ctx->m;
    struct sel_errors *errs;
    struct sel_site s;
    size_t i, nsel;
    int fresh;

    memset(&s, 0, sizeof(s));
    s.owner = &c->o;
    s.base = c->is_template ? "spec.spec.devices" : "spec.devices";
    for (s.req = 0; s.req < c->spec.nreq; s.req++) {
        const struct dra_request *top = &c->spec.req[s.req];
        for (s.sub = 0; s.sub <= top->nsub; s.sub++) {
            const struct dra_request *r = s.sub ? &top->sub[s.sub - 1] : top;
            if (!r->nsel || !r->class_name || !(s.cls = dra_find_class(m, r->class_name)))
                continue;
            nsel = r->nsel < maxsel ? r->nsel : maxsel;
            if (!(errs = rule__memo_get(memo, s.cls, r, NULL, nsel * sizeof(*errs), &fresh)))
                return -1;
            if (todo) {
                if (!fresh)
                    continue;
                if (todo->n == todo->cap) {
                    size_t cap = todo->cap ? 2 * todo->cap : 16;
                    struct key *v = realloc(todo->v, cap * sizeof(*v));
                    if (!v)
                        return -1;
                    todo->v = v;
                    todo->cap = cap;
                }
                todo->v[todo->n++] = (struct key){ r, (size_t)(s.cls - m->classes), nsel, errs };
                continue;
            }
            s.request = r->name;
            for (i = 0; i < nsel; i++) {
                s.idx = i;
                s.sel = &r->sel[i];
                report(ctx, &s, &errs[i]);
            }
        }
    }
    return 0;
}

/* Drivers told apart by number, at most this many (the others' devices share the last). */
#define SEL_DRIVERS 64

/* Per device of m, the number of its driver in names[0..*n) (SEL_DRIVERS for one past
 * them): slice by slice, as a slice's devices share its driver.  -1 on ENOMEM. */
static int driver_numbers(const struct dra_model *m, unsigned char **drv, const char ***names,
                          size_t *n)
{
    size_t i, d, k, *of = calloc(m->nslices + 1, sizeof(*of));

    *n = 0;
    *drv = malloc(m->ndevices + 1);
    *names = calloc(SEL_DRIVERS, sizeof(**names));
    if (!of || !*drv || !*names) {
        free(of);
        return -1;
    }
    for (i = 0; i < m->nslices; i++) {
        const char *name = m->slices[i].driver;
        for (k = 0; k < *n && strcmp((*names)[k], name); k++)
            ;
        if (k == *n && *n < SEL_DRIVERS)
            (*names)[(*n)++] = name;
        of[i] = k;
    }
    for (d = 0; d < m->ndevices; d++)
        (*drv)[d] = (unsigned char)of[m->device_slice[d]];
    free(of);
    return 0;
}

/* The classes' selectors on every published device: what each class admits (pass, per class
 * a bit per device: as bytes, 200 classes over 40,000 devices took 8 MiB) and each of its
 * selectors' errors (errs[at[i] + k], at most maxsel per class).  Of the classes and devices
 * alone: a model patched from another shares it (rule_cache.class_sels). */
struct class_eval {
    size_t maxsel;
    size_t *at;
    struct sel_errors *errs;
    uint64_t **pass;
    size_t nclasses;
};

static int class_admits_device(const struct class_eval *ce, size_t cls, size_t d)
{
    return (int)((ce->pass[cls][d / 64] >> (d % 64)) & 1);
}

static void class_eval_release(struct class_eval *ce)
{
    size_t i;

    for (i = 0; ce->pass && i < ce->nclasses; i++)
        free(ce->pass[i]);
    free(ce->pass);
    free(ce->errs);
    free(ce->at);
    memset(ce, 0, sizeof(*ce));
}

/* A pass of every class over every device.  -1 on ENOMEM (ce released). */
static int class_eval_fill(const struct dra_model *m, struct class_eval *ce)
{
    size_t ndev = m->ndevices, i, d, k, nall = 0, ndrivers = 0;
    unsigned char *drv = NULL;
    const char **names = NULL;
    int ok = 0;

    memset(ce, 0, sizeof(*ce));
    ce->maxsel = 64;
    ce->nclasses = m->nclasses;
    ce->pass = calloc(m->nclasses + 1, sizeof(*ce->pass));
    if (!ce->pass || !(ce->at = calloc(m->nclasses + 1, sizeof(*ce->at))))
        goto out;
    for (i = 0; i < m->nclasses; i++) {
        ce->at[i] = nall;
        nall += m->classes[i].nsel < ce->maxsel ? m->classes[i].nsel : ce->maxsel;
    }
    if (!(ce->errs = calloc(nall + 1, sizeof(*ce->errs))) ||
        driver_numbers(m, &drv, &names, &ndrivers))
        goto out;
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *cls = &m->classes[i];
        size_t nsel = cls->nsel < ce->maxsel ? cls->nsel : ce->maxsel;
        unsigned char excluded[SEL_DRIVERS + 1] = { 0 };
        if (!(ce->pass[i] = calloc(ndev / 64 + 1, sizeof(**ce->pass))))
            goto out;
        /* Most classes name a driver: on the others' devices the first selector is false
         * without an error (counted as evaluated, as the scheduler evaluates it there) and
         * no later one is evaluated. */
        for (k = 0; nsel && cls->sel[0].prog && k < ndrivers; k++)
            excluded[k] = (unsigned char)cel_program_excludes_driver(cls->sel[0].prog, names[k],
                                                                     NULL);
        for (d = 0; d < ndev; d++) {
            if (excluded[drv[d]])
                ce->errs[ce->at[i]].evaluated++;
            else if (eval_device(m, cls->sel, nsel, d, &ce->errs[ce->at[i]]))
                ce->pass[i][d / 64] |= (uint64_t)1 << (d % 64);
        }
    }
    ok = 1;
out:
    free(drv);
    free(names);
    if (!ok)
        class_eval_release(ce);
    return ok ? 0 : -1;
}

/* The cache's part (rule_cache.class_sels): the class_eval of the model it is of, filled the
 * first time a run over that model or one patched from it asks, with the arrays it was of
 * (compared only).  At 200 classes and 10,000 devices a run paid 18 ms for it, every live
 * update that reruns the selector rules.  mu guards the fill. */
struct rule_class_sels {
    pthread_mutex_t mu;
    const struct dra_class *classes;
    size_t nclasses;
    const struct dra_device **devices;
    size_t ndevices;
    int state; /* 0: not yet; 1: filled; -1: ENOMEM */
    struct class_eval ce;
};

struct rule_class_sels *rule__class_sels_new(const struct dra_model *m)
{
    struct rule_class_sels *cs = calloc(1, sizeof(*cs));

    if (!cs)
        return NULL;
    pthread_mutex_init(&cs->mu, NULL);
    cs->classes = m->classes;
    cs->nclasses = m->nclasses;
    cs->devices = m->devices;
    cs->ndevices = m->ndevices;
    return cs;
}

void rule__class_sels_free(struct rule_class_sels *cs)
{
    if (cs) {
        class_eval_release(&cs->ce);
        pthread_mutex_destroy(&cs->mu);
    }
    free(cs);
}

/* The cache's class_eval for m (filled now if need be), or NULL when it is of another model. */
static const struct class_eval *kept_classes(const struct dra_model *m,
                                             const struct rule_cache *cache)
{
    struct rule_class_sels *cs = cache ? cache->class_sels : NULL;
    int state;

    if (!cs || cs->classes != m->classes || cs->nclasses != m->nclasses ||
        cs->devices != m->devices || cs->ndevices != m->ndevices)
        return NULL;
    pthread_mutex_lock(&cs->mu);
    if (!cs->state)
        cs->state = class_eval_fill(m, &cs->ce) ? -1 : 1;
    state = cs->state;
    pthread_mutex_unlock(&cs->mu);
    return state > 0 ? &cs->ce : NULL;
}

/*
 * Every selector's errors on the published devices, in the allocator's order: worked out once
 * per run for both rules that judge them (the classes' part once per model: kept_classes).
 */
struct rule_sel_walk {
    const struct class_eval *ce; /* the classes' selectors': own's, or the cache's */
    struct class_eval own;
    struct rule_memo *memo;      /* the requests', per request key */
};

void rule__sel_walk_free(struct rule_sel_walk *w)
{
    if (w) {
        rule__memo_free(w->memo);
        class_eval_release(&w->own);
    }
    free(w);
}

static struct rule_sel_walk *sel_walk_new(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i, d;
    struct pending todo = { NULL, 0, 0 };
    struct rule_sel_walk *w = calloc(1, sizeof(*w));
    int ok = 0;

    if (!w || !(w->memo = rule__memo_new()))
        goto out;
    if (!(w->ce = kept_classes(m, ctx->opt->cache))) {
        if (class_eval_fill(m, &w->own))
            goto out;
        w->ce = &w->own;
    }
    /* The requests' keys, then each evaluated device by device on what its class admits. */
    for (i = 0; i < m->nclaims; i++)
        if (attrs_claim(ctx, &m->claims[i], w->memo, w->ce->maxsel, NULL, &todo))
            goto out;
    for (d = 0; d < m->ndevices; d++)
        for (i = 0; i < todo.n; i++)
            if (class_admits_device(w->ce, todo.v[i].cls, d))
                eval_device(m, todo.v[i].r->sel, todo.v[i].nsel, d, todo.v[i].errs);
    ok = 1;
out:
    free(todo.v);
    if (!ok) {
        rule__sel_walk_free(w);
        ctx->out->oom = 1;
        return NULL;
    }
    return w;
}

/* Every selector's errors, as report() judges them: the classes', then the requests'. */
static void walk_selectors(struct rule_ctx *ctx, sel_report report)
{
    const struct dra_model *m = ctx->m;
    struct rule_sel_walk *w = ctx->scratch->sel;
    struct sel_site s;
    size_t i, j;

    /* Without published devices there is nothing to evaluate on. */
    if (!m->ndevices)
        return;
    if (!w && !(w = ctx->scratch->sel = sel_walk_new(ctx)))
        return;
    memset(&s, 0, sizeof(s));
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *cls = &m->classes[i];
        s.owner = &cls->o;
        s.cls = cls;
        for (j = 0; j < cls->nsel && j < w->ce->maxsel; j++) {
            s.idx = j;
            s.sel = &cls->sel[j];
            report(ctx, &s, &w->ce->errs[w->ce->at[i] + j]);
        }
    }
    for (i = 0; i < m->nclaims; i++)
        if (attrs_claim(ctx, &m->claims[i], w->memo, w->ce->maxsel, report, NULL)) {
            ctx->out->oom = 1;
            return;
        }
}

void rule__check_attrs(struct rule_ctx *ctx)
{
    walk_selectors(ctx, attrs_report);
}

void rule__check_runtime(struct rule_ctx *ctx)
{
    walk_selectors(ctx, runtime_report);
}
