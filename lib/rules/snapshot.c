/*
 * snapshot.c - a live cluster's snapshot (see snapshot.h).
 */
#include "rules/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "rules/diagnose.h"
#include "formats/json.h"

/* The verbs a kubelet plugin needs on its slices: the ones DriverRBACDenied judges. */
#define sar_verbs drv_slice_verbs

static size_t nsar_verbs(void)
{
    size_t n = 0;

    while (sar_verbs[n])
        n++;
    return n;
}

/* Asks src once per driver ServiceAccount and verb; unanswered questions leave RBAC objects
 * to decide. */
static int collect_sar(struct snapshot *s, const struct snapshot_sars *src)
{
    const struct dra_model *m = &s->m;
    size_t i, j, k, cap = m->ndrivers * nsar_verbs(), off = 0, need = 0;

    for (i = 0; i < m->ndrivers; i++)
        need += strlen(m->drivers[i].ds->o.ns) + strlen(m->drivers[i].ds->service_account) + 2;
    if (!cap)
        return 0;
    s->sar = calloc(cap, sizeof(*s->sar));
    s->sar_strings = malloc(need + 1);
    if (!s->sar || !s->sar_strings)
        return -1;
    for (i = 0; i < m->ndrivers; i++) {
        const char *ns = m->drivers[i].ds->o.ns, *sa = m->drivers[i].ds->service_account;
        char *pns, *psa;
        int seen = 0;
        for (j = 0; j < i; j++)
            seen |= m->drivers[j].ds == m->drivers[i].ds;
        if (seen)
            continue;
        pns = s->sar_strings + off;
        off += (size_t)snprintf(pns, need + 1 - off, "%s", ns) + 1;
        psa = s->sar_strings + off;
        off += (size_t)snprintf(psa, need + 1 - off, "%s", sa) + 1;
        for (k = 0; sar_verbs[k]; k++) {
            int a = src->ask(src->ctx, ns, sa, sar_verbs[k]);
            if (a < 0)
                continue;
            s->sar[s->nsar].ns = pns;
            s->sar[s->nsar].sa = psa;
            s->sar[s->nsar].verb = sar_verbs[k];
            s->sar[s->nsar++].allowed = a;
        }
    }
    return 0;
}

/* Workers look a pod up for every key they take: index the Pods once per snapshot. */
static int index_pods(struct snapshot *s)
{
    size_t cap = 16, i;

    while (cap < 2 * s->m.npods)
        cap *= 2;
    if (!(s->pod_idx = calloc(cap, sizeof(*s->pod_idx))))
        return -1;
    s->npod_idx = cap;
    for (i = 0; i < s->m.npods; i++) {
        const struct dra_podspec *p = &s->m.pods[i];
        size_t h;
        if (strcmp(p->o.kind, "Pod"))
            continue;
        for (h = dra_key_hash(p->o.ns, p->o.name) & (cap - 1); s->pod_idx[h]; h = (h + 1) & (cap - 1))
            s->dup_pods |= !strcmp(s->m.pods[s->pod_idx[h] - 1].o.ns, p->o.ns) &&
                           !strcmp(s->m.pods[s->pod_idx[h] - 1].o.name, p->o.name);
        s->pod_idx[h] = i + 1;
    }
    return 0;
}

/* Thread CPU seconds since *t, and *t moved to now. */
static double lap(struct timespec *t)
{
    struct timespec now;
    double d;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    d = (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
    *t = now;
    return d;
}

/* ---- after some Pods changed ------------------------------------------------------ */

/* A Pod (core v1), or an Event (core or events.k8s.io): the objects a delta may see change. */
static int pod_or_event(const cJSON *o, int *is_pod)
{
    const char *av = dd_json_str(o, "apiVersion", NULL), *kind = dd_json_str(o, "kind", NULL);

    *is_pod = av && kind && !strcmp(av, "v1") && !strcmp(kind, "Pod");
    return *is_pod || (av && kind && !strcmp(kind, "Event") &&
                       (!strcmp(av, "v1") || !strcmp(av, "events.k8s.io/v1")));
}

/* A set of object addresses (open addressing, at most half full). */
struct ptrset {
    const cJSON **v;
    size_t cap;
};

static size_t ptr_hash(const cJSON *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL);
}

/* Marks what ptrset_take took: probe chains stay whole. */
static const cJSON taken;

/* 1 when p was in the set (it is taken out, so that what stays was not seen again), else 0. */
static int ptrset_take(struct ptrset *ps, const cJSON *p)
{
    size_t h, mask = ps->cap - 1;

    for (h = ptr_hash(p) & mask; ps->v[h]; h = (h + 1) & mask)
        if (ps->v[h] == p) {
            ps->v[h] = &taken;
            return 1;
        }
    return 0;
}

/* Adds p; -1 when it was there already. */
static int ptrset_put(struct ptrset *ps, const cJSON *p)
{
    size_t h, mask = ps->cap - 1;

    for (h = ptr_hash(p) & mask; ps->v[h]; h = (h + 1) & mask)
        if (ps->v[h] == p)
            return -1;
    ps->v[h] = p;
    return 0;
}

struct keys {
    const cJSON **v; /* the changed Pods, old and new versions (an update is there twice) */
    size_t n, cap;
};

static int keys_push(struct keys *k, const cJSON *o)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 16;
        const cJSON **v = realloc(k->v, cap * sizeof(*v));
        if (!v)
            return -1;
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = o;
    return 0;
}

/*
 * The Pods that changed from prev's objects to s's, into changed (Pods and Events are compared
 * by address: a cache replaces an object, never changes it in place).  1 when anything else
 * changed, or changed in order (the rules' words follow the objects' order), 0, -1 on ENOMEM.
 */
static int changed_pods(const struct snapshot *prev, const struct snapshot *s, struct keys *changed)
{
    struct ptrset ps = { NULL, 16 };
    size_t i, j, npods = 0;
    int pod, rc = 0;

    for (i = 0; i < prev->nborrowed; i++)
        npods += pod_or_event(prev->borrowed[i], &pod);
    while (ps.cap < 2 * npods + 2)
        ps.cap *= 2;
    if (!(ps.v = calloc(ps.cap, sizeof(*ps.v))))
        return -1;
    for (i = 0; i < prev->nborrowed && !rc; i++)
        if (pod_or_event(prev->borrowed[i], &pod))
            rc = ptrset_put(&ps, prev->borrowed[i]) ? 1 : 0;
    /* Everything but Pods and Events: the same objects in the same order. */
    for (i = j = 0; j < s->nborrowed && !rc; j++) {
        if (pod_or_event(s->borrowed[j], &pod)) {
            if (!ptrset_take(&ps, s->borrowed[j]) && pod && keys_push(changed, s->borrowed[j]))
                rc = -1;
            continue;
        }
        while (i < prev->nborrowed && pod_or_event(prev->borrowed[i], &pod))
            i++;
        /* A store replaces an object on every update, even one that changes nothing kept (a
         * Node's heartbeat): the same content is the same object. */
        if (i == prev->nborrowed || (prev->borrowed[i] != s->borrowed[j] &&
                                     !cJSON_Compare(prev->borrowed[i], s->borrowed[j], 1)))
            rc = 1;
        i++;
    }
    while (!rc && i < prev->nborrowed && pod_or_event(prev->borrowed[i], &pod))
        i++;
    if (!rc && i < prev->nborrowed)
        rc = 1;
    for (i = 0; i < ps.cap && !rc; i++)
        if (ps.v[i] && ps.v[i] != &taken && pod_or_event(ps.v[i], &pod) && pod &&
            keys_push(changed, ps.v[i]))
            rc = -1;
    free(ps.v);
    return rc;
}

/* The podspecs of s's Pods with the keys of changed (those it has), into *out[0..*n). */
static int pods_of(const struct snapshot *s, const struct keys *changed,
                   struct dra_podspec **out, size_t *n)
{
    size_t i, j;

    *n = 0;
    if (!(*out = malloc((changed->n + 1) * sizeof(**out))))
        return -1;
    for (i = 0; i < changed->n; i++) {
        const char *ns = dd_json_str(changed->v[i], "metadata", "namespace", NULL);
        const char *name = dd_json_str(changed->v[i], "metadata", "name", NULL);
        const struct dra_podspec *p = name ? snapshot_pod(s, ns ? ns : "", name) : NULL;
        for (j = 0; p && j < *n; j++)
            if ((*out)[j].o.json == p->o.json)
                p = NULL; /* an update is there twice */
        if (p)
            (*out)[(*n)++] = *p;
    }
    return 0;
}

static int same_sar(const struct snapshot *a, const struct snapshot *b)
{
    size_t i;

    if (a->nsar != b->nsar)
        return 0;
    for (i = 0; i < a->nsar; i++)
        if (strcmp(a->sar[i].ns, b->sar[i].ns) || strcmp(a->sar[i].sa, b->sar[i].sa) ||
            strcmp(a->sar[i].verb, b->sar[i].verb) || a->sar[i].allowed != b->sar[i].allowed)
            return 0;
    return 1;
}

static int same_plugin_pods(const struct dra_model *a, const struct dra_model *b)
{
    size_t i;

    if (a->plugin_pods.n != b->plugin_pods.n)
        return 0;
    for (i = 0; i < a->plugin_pods.n; i++)
        if (a->plugin_pods.v[i].json != b->plugin_pods.v[i].json)
            return 0;
    return 1;
}

/* The scope of the rule that reported code (the table's own string). */
static enum dd_scope scope_of(const char *code)
{
    size_t n, i;
    const struct dd_rule *r = dd_rules(&n);

    for (i = 0; i < n; i++)
        if (r[i].code == code)
            return r[i].scope;
    return DD_SCOPE_CLUSTER;
}

/* 1 when f is about one of the changed Pods. */
static int about_changed(const struct dd_finding *f, const struct keys *changed)
{
    size_t i;

    if (strcmp(f->obj.kind, "Pod"))
        return 0;
    for (i = 0; i < changed->n; i++) {
        const char *ns = dd_json_str(changed->v[i], "metadata", "namespace", NULL);
        const char *name = dd_json_str(changed->v[i], "metadata", "name", NULL);
        if (name && !strcmp(f->obj.name, name) && !strcmp(f->obj.namespace_, ns ? ns : ""))
            return 1;
    }
    return 0;
}

/*
 * s's findings from prev's where only Pods (and Events) changed: prev's findings of NO_PODS
 * rules, and of POD rules but about the changed Pods; the POD rules' findings for the changed
 * Pods now; every CLUSTER rule's.  1 when that does not apply (then nothing was added), 0, -1
 * on ENOMEM.
 */
static int delta_rules(const struct snapshot *prev, struct snapshot *s,
                       const struct rule_options *opt)
{
    struct keys changed = { NULL, 0, 0 };
    struct dra_podspec *now = NULL;
    struct dra_model part;
    const char *code = NULL;
    enum dd_scope sc = DD_SCOPE_CLUSTER;
    size_t nnow, i;
    int rc;

    if (prev->objects || s->objects || prev->dup_pods || s->dup_pods ||
        prev->m.live != s->m.live || !same_sar(prev, s) || !same_plugin_pods(&prev->m, &s->m) ||
        !prev->assumed != !s->assumed ||
        (s->assumed && !cJSON_Compare(prev->assumed, s->assumed, 1)))
        return 1;
    if ((rc = changed_pods(prev, s, &changed)) || (rc = pods_of(s, &changed, &now, &nnow)))
        goto out;
    for (i = 0; i < prev->f.n && !s->f.oom; i++) {
        const struct dd_finding *f = &prev->f.v[i];
        if (f->code != code)
            sc = scope_of(code = f->code);
        if (sc == DD_SCOPE_NO_PODS || (sc == DD_SCOPE_POD && !about_changed(f, &changed)))
            dd_findings_copy(&s->f, f);
    }
    part = s->m;
    part.pods = now;
    part.npods = nnow;
    rc = s->f.oom || dd_rules_run_scoped(&s->m, opt, 1u << DD_SCOPE_CLUSTER, &s->f) ||
         dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_POD, &s->f) ? -1 : 0;
out:
    free(changed.v);
    free(now);
    return rc;
}

/* snapshot_build, or snapshot_update when prev is not NULL. */
static struct snapshot *build(const struct snapshot *prev, cJSON *owned, const cJSON **borrowed,
                              size_t n, const struct snapshot_sars *sars,
                              struct dra_cel_cache *cel, const struct rule_options *opt,
                              struct dd_err *err)
{
    struct snapshot *s = calloc(1, sizeof(*s));
    struct timespec t;
    const cJSON *it;
    size_t i;
    int rc = 1;

    if (!s) {
        cJSON_Delete(owned);
        free(borrowed);
        dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
        return NULL;
    }
    s->objects = owned;
    s->borrowed = borrowed;
    s->nborrowed = n;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    dra_model_init(&s->m, NULL, NULL);
    s->m.live = 1;
    if (cel) {
        /* Programs the previous snapshots used and the last one no longer does go now. */
        dra_cel_cache_trim(cel);
        s->m.cel_cache = cel;
    }
    cJSON_ArrayForEach(it, owned)
        if (dra_model_add(&s->m, it, NULL, 0) != DD_OK)
            goto oom;
    for (i = 0; i < n; i++)
        if (dra_model_add(&s->m, borrowed[i], NULL, 0) != DD_OK)
            goto oom;
    if (dra_model_finish(&s->m) != DD_OK)
        goto oom;
    s->steps.model = lap(&t);
    s->assumed = diag_assume_rejected_claims(&s->m);
    cJSON_ArrayForEach(it, s->assumed)
        if (dra_model_add(&s->m, it, NULL, 0) != DD_OK)
            goto oom;
    s->steps.assume = lap(&t);
    if (sars && collect_sar(s, sars))
        goto oom;
    s->m.sar = s->sar;
    s->m.nsar = s->nsar;
    if (index_pods(s))
        goto oom;
    lap(&t);
    if (prev && (rc = delta_rules(prev, s, opt)) < 0)
        goto oom;
    s->steps.delta = !rc;
    if (rc && dd_rules_run(&s->m, opt, &s->f))
        goto oom;
    /* One order whatever the objects' was: a pod's diagnosis takes the first finding of a
     * code under a class or driver, which must not change with the way the list was made. */
    dd_findings_sort(&s->f);
    s->steps.rules = lap(&t);
    s->ix = diag_index_new(&s->f); /* without it, diag_pod_indexed looks at every finding */
    s->steps.index = lap(&t);
    return s;
oom:
    snapshot_free(s);
    dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
    return NULL;
}

struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                const struct rule_options *opt, struct dd_err *err)
{
    return build(NULL, owned, borrowed, n, sars, cel, opt, err);
}

struct snapshot *snapshot_update(const struct snapshot *prev, const cJSON **borrowed, size_t n,
                                 const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                 const struct rule_options *opt, struct dd_err *err)
{
    return build(prev, NULL, borrowed, n, sars, cel, opt, err);
}

const struct dra_podspec *snapshot_pod(const struct snapshot *s, const char *ns, const char *name)
{
    size_t h, mask = s->npod_idx - 1;

    if (!s->npod_idx)
        return NULL;
    for (h = dra_key_hash(ns, name) & mask; s->pod_idx[h]; h = (h + 1) & mask) {
        const struct dra_podspec *p = &s->m.pods[s->pod_idx[h] - 1];
        if (!strcmp(p->o.ns, ns) && !strcmp(p->o.name, name))
            return p;
    }
    return NULL;
}

void snapshot_free(struct snapshot *s)
{
    if (!s)
        return;
    diag_index_free(s->ix);
    dd_findings_release(&s->f);
    dra_model_release(&s->m);
    cJSON_Delete(s->objects);
    free(s->borrowed);
    cJSON_Delete(s->assumed);
    free(s->sar);
    free(s->sar_strings);
    free(s->pod_idx);
    free(s);
}
