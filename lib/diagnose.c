/*
 * diagnose.c - from the engine's findings to one pod's root cause.
 *
 * The engine judges objects (a class, a claim, a driver, a node); a pod is
 * stuck on the first of them its path meets.  This file only selects and
 * orders findings for a pod and adds the per-pod evidence no rule can see
 * (container errors, scheduler and controller events).  It decides nothing
 * the rules decide.
 */
#include "diagnose.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "quota.h"
#include "rules.h"

#define STRIEQ(a, b) (strcmp((a), (b)) == 0)
#define MAX_NAMES 32

/* The steps of a pod's path, in the order it meets them. */
enum step {
    STEP_CLAIM,     /* the claim exists */
    STEP_CLASS,     /* its DeviceClass exists */
    STEP_DRIVER,    /* the class's driver publishes slices */
    STEP_SELECTOR,  /* selectors match a driver and devices */
    STEP_DEVICES,   /* enough free devices */
    STEP_ALLOCATED, /* the claim is allocated */
    STEP_CDI,       /* the runtime injects the devices */
    NSTEPS
};

static const struct { const char *code; enum step step; } steps[] = {
    { "QuotaExceeded", STEP_CLAIM },         { "ClaimNotFound", STEP_CLAIM },
    { "ClaimTemplateNotFound", STEP_CLAIM }, { "DeviceClassNotFound", STEP_CLASS },
    { "DriverRBACDenied", STEP_DRIVER },     { "DriverNotPublishing", STEP_DRIVER },
    { "SelectorSyntaxError", STEP_SELECTOR }, { "SelectorMatchesNoDriver", STEP_SELECTOR },
    { "SelectorUnknownAttribute", STEP_SELECTOR }, { "InsufficientDevices", STEP_DEVICES },
    { "ClaimNotAllocated", STEP_ALLOCATED }, { "CDIDisabled", STEP_CDI },
    { "CDISpecDirNotShared", STEP_CDI },     { "CDIInjectionFailed", STEP_CDI },
};

struct names {
    const char *v[MAX_NAMES];
    size_t n;
};

static int names_has(const struct names *s, const char *x)
{
    size_t i;

    for (i = 0; x && i < s->n; i++)
        if (STRIEQ(s->v[i], x))
            return 1;
    return 0;
}

static void names_add(struct names *s, const char *x)
{
    if (x && *x && !names_has(s, x) && s->n < MAX_NAMES)
        s->v[s->n++] = x;
}

/* One candidate cause: a finding of the engine, or per-pod evidence. */
struct cand {
    const char *code;          /* static */
    enum step step;
    const struct dd_finding *f; /* NULL for per-pod evidence */
    char text[768];            /* message for per-pod evidence */
};

struct pod_view {
    const struct dra_model *m;
    const struct dra_podspec *p;
    struct names classes;      /* DeviceClasses its claims request */
    struct names drivers;      /* drivers those classes draw from (and their DaemonSets' others) */
    int all_allocated;         /* every claim exists and is allocated */
    int running, pending;
    const char *cdi_error;     /* CreateContainerError text about CDI, or NULL */
    struct cand c[DIAG_MAX_CODES * 2];
    size_t nc;
};

static enum step step_of(const char *code)
{
    size_t i;

    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (STRIEQ(steps[i].code, code))
            return steps[i].step;
    return NSTEPS;
}

static void add_cand(struct pod_view *v, const char *code, const struct dd_finding *f,
                     const char *text)
{
    const struct dd_rule *r = dd_rule_find(code);
    size_t i;

    if (!r || v->nc == sizeof(v->c) / sizeof(v->c[0]))
        return;
    for (i = 0; i < v->nc; i++)
        if (STRIEQ(v->c[i].code, r->code))
            return; /* one entry per code: the first evidence is kept */
    v->c[v->nc].code = r->code;
    v->c[v->nc].step = step_of(r->code);
    v->c[v->nc].f = f;
    snprintf(v->c[v->nc].text, sizeof(v->c[v->nc].text), "%s", text ? text : "");
    v->nc++;
}

static const struct dra_event *last_event(const struct dra_model *m, const struct dra_podspec *p,
                                          const char *reason, const char *needle)
{
    const struct dra_event *hit = NULL, *ev;
    size_t i, n;

    ev = dra_events_about(m, "Pod", p->o.ns, p->o.name, &n);
    for (i = 0; i < n; i++)
        if (STRIEQ(ev[i].reason, reason) && (!needle || strstr(ev[i].message, needle)))
            hit = &ev[i];
    return hit;
}

static int is_assumed(const struct dra_claim *c)
{
    return dd_json_str(c->o.json, "metadata", "annotations", DIAG_ANN_ASSUMED, NULL) != NULL;
}

/* Is f about a stand-in claim (one the quota rejected)? */
static int assumed_object(const struct dra_model *m, const struct dd_finding *f)
{
    const struct dra_claim *c;

    return !strcmp(f->obj.kind, "ResourceClaim") &&
           (c = dra_find_claim(m, f->obj.namespace_, f->obj.name, 0)) && is_assumed(c);
}

/* Classes and drivers the pod's claims lead to. */
static void collect_path(struct pod_view *v, const struct dd_findings *fs)
{
    const struct dra_model *m = v->m;
    size_t i, j, k;

    for (i = 0; i < v->p->nclaims; i++) {
        const struct dra_claim *c = dra_pod_claim_resolve(m, v->p, &v->p->claims[i]);
        const cJSON *res;
        if (!c)
            continue;
        for (j = 0; j < c->spec.nreq; j++) {
            names_add(&v->classes, c->spec.req[j].class_name);
            for (k = 0; k < c->spec.req[j].nsub; k++)
                names_add(&v->classes, c->spec.req[j].sub[k].class_name);
        }
        cJSON_ArrayForEach(res, dd_json_arr(c->o.json, "status", "allocation", "devices",
                                            "results", NULL))
            names_add(&v->drivers, dd_json_str(res, "driver", NULL));
    }
    for (i = 0; i < v->classes.n; i++) {
        const struct dra_class *cls = dra_find_class(m, v->classes.v[i]);
        for (j = 0; cls && j < cls->nsel; j++) {
            const struct cel_driver_ref *refs;
            size_t n;
            if (cls->sel[j].prog &&
                cel_program_drivers(cls->sel[j].prog, &refs, &n) == CEL_DRIVERS_SET)
                for (k = 0; k < n; k++)
                    names_add(&v->drivers, refs[k].name);
        }
    }
    /* A misspelled driver name stands for the driver it was meant to be. */
    for (i = 0; i < fs->n; i++)
        if (STRIEQ(fs->v[i].code, "SelectorMatchesNoDriver") &&
            names_has(&v->classes, fs->v[i].scope_class))
            names_add(&v->drivers, fs->v[i].scope_driver);
    /* A DaemonSet serving one of them serves the pod: its other names count too. */
    for (i = 0; i < m->ndrivers; i++)
        if (names_has(&v->drivers, m->drivers[i].name))
            for (j = 0; j < m->ndrivers; j++)
                if (m->drivers[j].ds == m->drivers[i].ds)
                    names_add(&v->drivers, m->drivers[j].name);
}

static int about_pod_or_claim(const struct pod_view *v, const struct dd_finding *f)
{
    const struct dra_model *m = v->m;
    size_t i;

    if (STRIEQ(f->obj.kind, "Pod"))
        return STRIEQ(f->obj.namespace_, v->p->o.ns) && STRIEQ(f->obj.name, v->p->o.name);
    if (!STRIEQ(f->obj.kind, "ResourceClaim"))
        return 0;
    for (i = 0; i < v->p->nclaims; i++) {
        const struct dra_claim *c = dra_pod_claim_resolve(m, v->p, &v->p->claims[i]);
        if (c && STRIEQ(c->o.ns, f->obj.namespace_) && STRIEQ(c->o.name, f->obj.name))
            return 1;
    }
    return 0;
}

/* The CDI findings apply to the node the pod runs on, or will run on. */
static int about_node(const struct pod_view *v, const struct dd_finding *f)
{
    if (!f->scope_node)
        return 1; /* lint's --containerd-config speaks for every node */
    if (*v->p->node)
        return STRIEQ(f->scope_node, v->p->node);
    return v->m->nruntimes == 1;
}

/* Does finding f lie on the pod's path at a step the pod still has ahead of it? */
static int on_path(const struct pod_view *v, const struct dd_finding *f)
{
    enum step st = step_of(f->code);

    if (st == NSTEPS)
        return 0;
    if (st == STEP_CDI)
        return (STRIEQ(f->code, "CDIDisabled") ? about_node(v, f)
                                               : names_has(&v->drivers, f->scope_driver));
    /* Once every claim is allocated, nothing before allocation blocks the pod. */
    if (v->all_allocated)
        return 0;
    if (about_pod_or_claim(v, f))
        return 1;
    if (st == STEP_DRIVER)
        return names_has(&v->drivers, f->scope_driver);
    return f->scope_class && names_has(&v->classes, f->scope_class) &&
           (STRIEQ(f->obj.kind, "DeviceClass") || st == STEP_DEVICES);
}

static void pod_state(struct pod_view *v)
{
    const cJSON *st = v->p->status, *cs;
    const char *phase = dd_json_str(st, "phase", NULL);

    v->running = phase && STRIEQ(phase, "Running");
    v->pending = !phase || STRIEQ(phase, "Pending");
    cJSON_ArrayForEach(cs, dd_json_arr(st, "containerStatuses", NULL)) {
        const char *reason = dd_json_str(cs, "state", "waiting", "reason", NULL);
        const char *msg = dd_json_str(cs, "state", "waiting", "message", NULL);
        if (reason && STRIEQ(reason, "CreateContainerError") && msg && strstr(msg, "CDI"))
            v->cdi_error = msg;
    }
}

/* Evidence only the pod shows: missing claims, failed claim creation, runtime errors. */
static void pod_evidence(struct pod_view *v)
{
    const struct dra_model *m = v->m;
    char text[768];
    size_t i;

    v->all_allocated = v->p->nclaims > 0;
    for (i = 0; i < v->p->nclaims; i++) {
        const struct dra_pod_claim *pc = &v->p->claims[i];
        const struct dra_claim *c = dra_pod_claim_resolve(m, v->p, pc);
        const struct dra_event *e;

        if (!c || !c->allocated || is_assumed(c))
            v->all_allocated = 0;
        if (c && is_assumed(c)) {
            snprintf(text, sizeof(text), "ResourceClaim %s/%s, used by pod %s, does not exist.",
                     c->o.ns, c->o.name, v->p->o.name);
            add_cand(v, "ClaimNotFound", NULL, text);
        }
        if (c || !pc->tmpl)
            continue;
        /* kube-controller-manager could not create the claim from the template. */
        if ((e = last_event(m, v->p, "FailedResourceClaimCreation", "exceeded quota"))) {
            snprintf(text, sizeof(text), "The claim for pod claim \"%s\" (template %s) was not "
                     "created: %s. Fix: raise the ResourceQuota of namespace %s.",
                     pc->name, pc->tmpl, e->message, v->p->o.ns);
            add_cand(v, "QuotaExceeded", NULL, text);
        }
    }
    if (v->cdi_error) {
        snprintf(text, sizeof(text), "A container of pod %s cannot start: %s", v->p->o.name,
                 v->cdi_error);
        add_cand(v, "CDIInjectionFailed", NULL, text);
    }
}

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    size_t ix = 0, iy = 0, n, i;
    const struct dd_rule *r = dd_rules(&n);

    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    /* Within a step, the rule table's order (per-pod evidence of a step after its rules). */
    for (i = 0; i < n; i++) {
        if (r[i].code == x->code)
            ix = i;
        if (r[i].code == y->code)
            iy = i;
    }
    if ((x->f == NULL) != (y->f == NULL))
        return x->f ? -1 : 1;
    return ix < iy ? -1 : ix > iy;
}

/* A finding of the engine explains the per-pod evidence of the same step better. */
static void drop_explained(struct pod_view *v)
{
    size_t i, j, k = 0;

    for (i = 0; i < v->nc; i++) {
        int explained = 0;
        if (!v->c[i].f)
            for (j = 0; j < v->nc; j++)
                explained |= v->c[j].f && v->c[j].step == v->c[i].step &&
                             (STRIEQ(v->c[i].code, "CDIInjectionFailed") ||
                              STRIEQ(v->c[i].code, "ClaimNotFound"));
        if (!explained)
            v->c[k++] = v->c[i];
    }
    v->nc = k;
}

void diag_pod(const struct dra_model *m, const struct dd_findings *findings,
              const struct dra_podspec *pod, struct diag_result *out)
{
    struct pod_view *v = calloc(1, sizeof(*v));
    const struct dra_event *e;
    size_t i, len = 0;

    memset(out, 0, sizeof(*out));
    out->healthy = 1;
    if (!v)
        return; /* no diagnosis is better than a wrong one */
    v->m = m;
    v->p = pod;
    pod_state(v);
    if (!v->running && !v->pending)
        goto out; /* Succeeded or Failed: DRA no longer matters */
    collect_path(v, findings);
    pod_evidence(v);
    for (i = 0; i < findings->n; i++)
        if (on_path(v, &findings->v[i]))
            add_cand(v, findings->v[i].code, &findings->v[i], NULL);
    /* A running pod is only at risk from what stops injection. */
    if (v->running && !v->cdi_error) {
        int cdi_off = 0;
        for (i = 0; i < v->nc; i++)
            cdi_off |= STRIEQ(v->c[i].code, "CDIDisabled");
        if (!cdi_off)
            v->nc = 0;
    }
    if (v->pending && !v->nc && !v->all_allocated &&
        (e = last_event(m, pod, "FailedScheduling", NULL))) {
        char text[768];
        snprintf(text, sizeof(text), "The scheduler cannot place pod %s: %s", pod->o.name,
                 e->message);
        add_cand(v, "ClaimNotAllocated", NULL, text);
    }
    drop_explained(v);
    if (!v->nc)
        goto out;
    qsort(v->c, v->nc, sizeof(v->c[0]), cmp_cand);
    out->healthy = 0;
    for (i = 0; i < v->nc && out->ncodes < DIAG_MAX_CODES; i++) {
        out->codes[out->ncodes++] = v->c[i].code;
        len += (size_t)snprintf(out->list + len, len < sizeof(out->list) ? sizeof(out->list) - len : 0,
                                "%s%s", i ? "," : "", v->c[i].code);
    }
    if (v->c[0].f && assumed_object(m, v->c[0].f))
        snprintf(out->message, sizeof(out->message),
                 "ResourceClaim %s/%s does not exist: creating it is refused by the quota "
                 "(dra-doctor assumes it asks for one device of the class the quota is full "
                 "for). %s Fix: %s", v->c[0].f->obj.namespace_, v->c[0].f->obj.name,
                 v->c[0].f->message, v->c[0].f->fix);
    else if (v->c[0].f)
        snprintf(out->message, sizeof(out->message), "%s Fix: %s", v->c[0].f->message,
                 v->c[0].f->fix);
    else
        snprintf(out->message, sizeof(out->message), "%s", v->c[0].text);
out:
    free(v);
}

/* ---- stand-ins for claims the quota rejected ----------------------------- */

/* A class whose device quota in ns is used up, or NULL. */
static const char *exhausted_class(const struct dra_model *m, const char *ns, char *buf,
                                   size_t size)
{
    size_t i, j;

    for (i = 0; i < m->nquotas; i++) {
        const struct dra_quota *q = &m->quotas[i];
        if (!STRIEQ(q->o.ns, ns))
            continue;
        for (j = 0; j < q->nhard; j++) {
            const char *sfx = strstr(q->hard[j].key, QUOTA_CLASS_SUFFIX);
            int64_t used;
            if (!sfx || sfx[strlen(QUOTA_CLASS_SUFFIX)] ||
                !dd_json_int(q->o.json, &used, "status", "used", q->hard[j].key, NULL) ||
                used < q->hard[j].hard || (size_t)(sfx - q->hard[j].key) >= size)
                continue;
            memcpy(buf, q->hard[j].key, (size_t)(sfx - q->hard[j].key));
            buf[sfx - q->hard[j].key] = '\0';
            return buf;
        }
    }
    return NULL;
}

static cJSON *stand_in(const char *ns, const char *name, const char *cls)
{
    cJSON *o = cJSON_CreateObject(), *meta, *ann, *reqs, *req = NULL, *ex;
    int ok = o && cJSON_AddStringToObject(o, "apiVersion", "resource.k8s.io/v1") &&
             cJSON_AddStringToObject(o, "kind", "ResourceClaim") &&
             (meta = cJSON_AddObjectToObject(o, "metadata")) &&
             cJSON_AddStringToObject(meta, "name", name) &&
             cJSON_AddStringToObject(meta, "namespace", ns) &&
             (ann = cJSON_AddObjectToObject(meta, "annotations")) &&
             cJSON_AddStringToObject(ann, DIAG_ANN_ASSUMED, "rejected by ResourceQuota") &&
             (reqs = cJSON_AddArrayToObject(
                  cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "spec"), "devices"),
                  "requests")) &&
             (req = cJSON_CreateObject()) && cJSON_AddItemToArray(reqs, req) &&
             cJSON_AddStringToObject(req, "name", "assumed") &&
             (ex = cJSON_AddObjectToObject(req, "exactly")) &&
             cJSON_AddStringToObject(ex, "deviceClassName", cls);

    if (!ok) {
        /* req belongs to reqs once added; before that it is ours to free. */
        if (req && !cJSON_GetArraySize(dd_json_arr(o, "spec", "devices", "requests", NULL)))
            cJSON_Delete(req);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *diag_assume_rejected_claims(const struct dra_model *m)
{
    cJSON *out = NULL;
    char cls[256];
    size_t i, j;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = &m->pods[i];
        if (!p->status)
            continue;
        for (j = 0; j < p->nclaims; j++) {
            const char *name = p->claims[j].claim;
            const cJSON *it;
            cJSON *c;
            int dup = 0;
            if (!name || dra_find_claim(m, p->o.ns, name, 0) ||
                !exhausted_class(m, p->o.ns, cls, sizeof(cls)))
                continue;
            cJSON_ArrayForEach(it, out)
                dup |= STRIEQ(dd_json_str(it, "metadata", "name", NULL), name) &&
                       STRIEQ(dd_json_str(it, "metadata", "namespace", NULL), p->o.ns);
            if (dup)
                continue;
            if ((!out && !(out = cJSON_CreateArray())) || !(c = stand_in(p->o.ns, name, cls))) {
                cJSON_Delete(out);
                return NULL;
            }
            cJSON_AddItemToArray(out, c);
        }
    }
    return out;
}
