/*
 * snapshot.c - a live cluster's snapshot (see snapshot.h).
 */
#include "rules/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <time.h>

#include "rules/diagnose.h"
#include "formats/json.h"
#include "model/quota.h"

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
        const struct dra_podspec *p = s->m.pods[i];
        size_t h;
        if (strcmp(p->o.kind, "Pod"))
            continue;
        for (h = dra_key_hash(p->o.ns, p->o.name) & (cap - 1); s->pod_idx[h]; h = (h + 1) & (cap - 1))
            s->dup_pods |= !strcmp(s->m.pods[s->pod_idx[h] - 1]->o.ns, p->o.ns) &&
                           !strcmp(s->m.pods[s->pod_idx[h] - 1]->o.name, p->o.name);
        s->pod_idx[h] = i + 1;
    }
    return 0;
}

/* The position in s->m.pods of the Pod ns/name, or SIZE_MAX (a patched model keeps every Pod
 * at its base's position). */
static size_t pod_pos(const struct snapshot *s, const char *ns, const char *name)
{
    size_t h, mask = s->npod_idx - 1;

    if (!s->npod_idx)
        return SIZE_MAX;
    for (h = dra_key_hash(ns, name) & mask; s->pod_idx[h]; h = (h + 1) & mask) {
        const struct dra_podspec *p = s->m.pods[s->pod_idx[h] - 1];
        if (!strcmp(p->o.ns, ns) && !strcmp(p->o.name, name))
            return s->pod_idx[h] - 1;
    }
    return SIZE_MAX;
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

/* What a delta may see change: a Pod (core v1), an Event (core or events.k8s.io), a
 * ResourceClaim; anything else is OTHER. */
enum tracked { T_OTHER, T_POD, T_EVENT, T_CLAIM };

static enum tracked tracked(const cJSON *o)
{
    const char *av = dd_json_str(o, "apiVersion", NULL), *kind = dd_json_str(o, "kind", NULL);

    if (!av || !kind)
        return T_OTHER;
    if (!strcmp(kind, "Pod"))
        return !strcmp(av, "v1") ? T_POD : T_OTHER;
    if (!strcmp(kind, "Event"))
        return !strcmp(av, "v1") || !strcmp(av, "events.k8s.io/v1") ? T_EVENT : T_OTHER;
    if (!strcmp(kind, "ResourceClaim"))
        return !strncmp(av, "resource.k8s.io/", 16) ? T_CLAIM : T_OTHER;
    return T_OTHER;
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

/* 1 when o's status.allocation is that of the claim of its namespace and name in v[0..n). */
static int same_allocation(const cJSON *o, const struct keys *other)
{
    const char *ns = dd_json_str(o, "metadata", "namespace", NULL);
    const char *name = dd_json_str(o, "metadata", "name", NULL);
    size_t i;

    for (i = 0; name && i < other->n; i++) {
        const char *ns2 = dd_json_str(other->v[i], "metadata", "namespace", NULL);
        const char *name2 = dd_json_str(other->v[i], "metadata", "name", NULL);
        if (name2 && !strcmp(name, name2) && !strcmp(ns ? ns : "", ns2 ? ns2 : ""))
            return cJSON_Compare(dd_json_path(o, "status", "allocation", NULL),
                                 dd_json_path(other->v[i], "status", "allocation", NULL), 1);
    }
    return 0;
}

/*
 * The Pods that changed from prev's objects to s's, into changed, and the ResourceClaims, old
 * versions into gone and new ones into came, and, when events is not NULL, the Events that came
 * or went (Pods, Events and claims are compared by address: a cache replaces an object, never
 * changes it in place).  1 when anything else changed, or
 * changed in order (the rules' words follow the objects' order), or a claim's allocation did
 * (the allocator's inventory then changes for every Pod), 0, -1 on ENOMEM.
 */
static int changed_objects(const struct snapshot *prev, const struct snapshot *s,
                           struct keys *changed, struct keys *gone, struct keys *came,
                           struct keys *events)
{
    struct ptrset ps = { NULL, 16 };
    size_t i, j, ntracked = 0;
    enum tracked t;
    int rc = 0;

    /* Kinds from the builds' own pass: the objects' JSON is not read again here. */
    for (i = 0; i < prev->nborrowed; i++)
        ntracked += prev->kinds[i] != T_OTHER;
    while (ps.cap < 2 * ntracked + 2)
        ps.cap *= 2;
    if (!(ps.v = calloc(ps.cap, sizeof(*ps.v))))
        return -1;
    for (i = 0; i < prev->nborrowed && !rc; i++)
        if (prev->kinds[i] != T_OTHER)
            rc = ptrset_put(&ps, prev->borrowed[i]) ? 1 : 0;
    /* Everything else: the same objects in the same order. */
    for (i = j = 0; j < s->nborrowed && !rc; j++) {
        if ((t = s->kinds[j]) != T_OTHER) {
            if (!ptrset_take(&ps, s->borrowed[j]) &&
                ((t == T_POD && keys_push(changed, s->borrowed[j])) ||
                 (t == T_CLAIM && keys_push(came, s->borrowed[j])) ||
                 (t == T_EVENT && events && keys_push(events, s->borrowed[j]))))
                rc = -1;
            continue;
        }
        while (i < prev->nborrowed && prev->kinds[i] != T_OTHER)
            i++;
        /* A store replaces an object on every update, even one that changes nothing kept (a
         * Node's heartbeat): the same content is the same object. */
        if (i == prev->nborrowed || (prev->borrowed[i] != s->borrowed[j] &&
                                     !cJSON_Compare(prev->borrowed[i], s->borrowed[j], 1)))
            rc = 1;
        i++;
    }
    while (!rc && i < prev->nborrowed && prev->kinds[i] != T_OTHER)
        i++;
    if (!rc && i < prev->nborrowed)
        rc = 1;
    for (i = 0; i < ps.cap && !rc; i++)
        if (ps.v[i] && ps.v[i] != &taken && ((t = tracked(ps.v[i])) != T_EVENT || events) &&
            keys_push(t == T_POD ? changed : t == T_EVENT ? events : gone, ps.v[i]))
            rc = -1;
    free(ps.v);
    for (i = 0; i < gone->n && !rc; i++)
        if (dd_json_path(gone->v[i], "status", "allocation", NULL) &&
            !same_allocation(gone->v[i], came))
            rc = 1;
    for (i = 0; i < came->n && !rc; i++)
        if (dd_json_path(came->v[i], "status", "allocation", NULL) &&
            !same_allocation(came->v[i], gone))
            rc = 1;
    return rc;
}

/* The podspecs of s's Pods with the keys of changed (those it has), into *out[0..*n). */
static int pods_of(const struct snapshot *s, const struct keys *changed,
                   const struct dra_podspec ***out, size_t *n)
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
            if ((*out)[j] == p)
                p = NULL; /* an update is there twice */
        if (p)
            (*out)[(*n)++] = p;
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

/* The namespace and name of each changed Pod (an update is there twice), looked up once. */
struct names {
    const char **ns, **name;
    size_t n;
    const char **cns;  /* the namespaces of the ResourceClaims that changed */
    size_t ncns;
};

static int in_claim_ns(const struct names *nm, const char *ns)
{
    size_t i;

    for (i = 0; i < nm->ncns; i++)
        if (!strcmp(nm->cns[i], ns ? ns : ""))
            return 1;
    return 0;
}

/* nm->cns from the claims of gone and came; -1 on ENOMEM. */
static int claim_namespaces(const struct keys *gone, const struct keys *came, struct names *nm)
{
    size_t i;

    if (!(nm->cns = malloc((gone->n + came->n + 1) * sizeof(*nm->cns))))
        return -1;
    for (i = 0; i < gone->n + came->n; i++) {
        const cJSON *o = i < gone->n ? gone->v[i] : came->v[i - gone->n];
        const char *ns = dd_json_str(o, "metadata", "namespace", NULL);
        if (!in_claim_ns(nm, ns))
            nm->cns[nm->ncns++] = ns ? ns : "";
    }
    return 0;
}

/*
 * *v[0..*n) (podspecs of m) and every podspec of m in a namespace of nm->cns, each once: the
 * podspecs a change of claims there may concern (a pod names claims of its own namespace; a
 * missing one's "did you mean" reads its namespace's claims).  -1 on ENOMEM.
 */
static int widen_to_claim_ns(const struct dra_model *m, const struct names *nm,
                             const struct dra_podspec ***v, size_t *n)
{
    const struct dra_podspec **w;
    size_t i, k = 0, extra = 0;

    for (i = 0; i < m->npods; i++)
        extra += (size_t)in_claim_ns(nm, m->pods[i]->o.ns);
    if (!(w = realloc(*v, (*n + extra + 1) * sizeof(*w))))
        return -1;
    for (i = 0; i < *n; i++)
        if (!in_claim_ns(nm, w[i]->o.ns))
            w[k++] = w[i];
    for (i = 0; i < m->npods; i++)
        if (in_claim_ns(nm, m->pods[i]->o.ns))
            w[k++] = m->pods[i];
    *v = w;
    *n = k;
    return 0;
}

static int names_of(const struct keys *changed, struct names *nm)
{
    size_t i;

    nm->n = 0;
    nm->ns = malloc((changed->n + 1) * sizeof(*nm->ns));
    nm->name = malloc((changed->n + 1) * sizeof(*nm->name));
    if (!nm->ns || !nm->name)
        return -1;
    for (i = 0; i < changed->n; i++) {
        const char *ns = dd_json_str(changed->v[i], "metadata", "namespace", NULL);
        const char *name = dd_json_str(changed->v[i], "metadata", "name", NULL);
        if (!name)
            continue;
        nm->ns[nm->n] = ns ? ns : "";
        nm->name[nm->n++] = name;
    }
    return 0;
}

/* 1 when f (a POD rule's) is about one of the changed Pods, or about a podspec in a namespace
 * whose claims changed. */
/* 1 when ns is the namespace of one of nm's Pods or claims. */
static int in_names_ns(const struct names *nm, const char *ns)
{
    size_t i;

    for (i = 0; i < nm->n; i++)
        if (!strcmp(nm->ns[i], ns))
            return 1;
    return in_claim_ns(nm, ns);
}

/* *part: m with only the ResourceQuotas of the namespaces of nm's Pods and claims (what the
 * QUOTA rules rerun over), whose array *v owns.  -1 on ENOMEM. */
static int quota_part(const struct dra_model *m, const struct names *nm, struct dra_model *part,
                      struct dra_quota **v)
{
    size_t i;

    *part = *m;
    part->nquotas = 0;
    if (!(*v = part->quotas = malloc((m->nquotas + 1) * sizeof(**v))))
        return -1;
    for (i = 0; i < m->nquotas; i++)
        if (in_names_ns(nm, m->quotas[i].o.ns))
            (*v)[part->nquotas++] = m->quotas[i];
    return 0;
}

/* The QUOTA rules' findings over the quotas of nm's namespaces in m, into out; -1 on ENOMEM. */
static int run_quotas(const struct dra_model *m, const struct names *nm,
                      const struct rule_options *opt, struct dd_findings *out)
{
    struct dra_model part;
    struct dra_quota *v;
    int rc = quota_part(m, nm, &part, &v) ||
             (part.nquotas && dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_QUOTA, out)) ? -1
                                                                                           : 0;

    free(v);
    return rc;
}

static int about_changed(const struct dd_finding *f, const struct names *nm)
{
    size_t i;

    if (nm->ncns && in_claim_ns(nm, f->obj.namespace_))
        return 1;
    if (strcmp(f->obj.kind, "Pod"))
        return 0;
    for (i = 0; i < nm->n; i++)
        if (!strcmp(f->obj.name, nm->name[i]) && !strcmp(f->obj.namespace_, nm->ns[i]))
            return 1;
    return 0;
}

/* ---- the claims' users ------------------------------------------------------------ */

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

/* s->cu_start and cu_pos from s's model (see snapshot.h); -1 on ENOMEM. */
static int claim_users(struct snapshot *s)
{
    const struct dra_model *m = &s->m;
    size_t i, j, *fill;

    s->cu_start = calloc(m->nclaims + 2, sizeof(*s->cu_start));
    fill = calloc(m->nclaims + 1, sizeof(*fill));
    if (!s->cu_start || !fill) {
        free(fill);
        return -1;
    }
    for (i = 0; i < m->npods; i++)
        for (j = 0; j < m->pods[i]->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, m->pods[i], &m->pods[i]->claims[j]);
            if (c)
                s->cu_start[c - m->claims + 1]++;
        }
    for (i = 0; i < m->nclaims; i++)
        s->cu_start[i + 1] += s->cu_start[i];
    if (!(s->cu_pos = malloc((s->cu_start[m->nclaims] + 1) * sizeof(*s->cu_pos)))) {
        free(fill);
        return -1;
    }
    /* A podspec resolving two claims to one is there twice: harmless, the groups are sets. */
    for (i = 0; i < m->npods; i++)
        for (j = 0; j < m->pods[i]->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, m->pods[i], &m->pods[i]->claims[j]);
            if (c) {
                size_t k = (size_t)(c - m->claims);
                s->cu_pos[s->cu_start[k] + fill[k]++] = i;
            }
        }
    free(fill);
    return 0;
}

/* A podspec's claim: positions in m.claims and m.pods. */
struct snapshot_use {
    size_t claim, pos;
};

static int cmp_use(const void *a, const void *b)
{
    const struct snapshot_use *x = a, *y = b;

    return x->claim != y->claim ? (x->claim > y->claim) - (x->claim < y->claim)
                                : (x->pos > y->pos) - (x->pos < y->pos);
}

/* A growing array of positions, with a mark per podspec. */
struct group {
    size_t *v, n, cap;
    unsigned char *in;
};

static int group_add(struct group *g, size_t pos)
{
    if (g->in[pos])
        return 0;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16, *v = realloc(g->v, cap * sizeof(*v));
        if (!v)
            return -1;
        g->v = v;
        g->cap = cap;
    }
    g->in[pos] = 1;
    g->v[g->n++] = pos;
    return 0;
}

/* The first of v[0..n) (sorted) whose claim is not before k. */
static size_t first_use(const struct snapshot_use *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].claim < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds to g the positions of v's uses of claim k. */
static int group_add_users(struct group *g, const struct snapshot_use *v, size_t n, size_t k)
{
    size_t i;

    for (i = first_use(v, n, k); i < n && v[i].claim == k; i++)
        if (group_add(g, v[i].pos))
            return -1;
    return 0;
}

/*
 * The positions of the podspecs joined, by claims they resolve to, to those at at[0..nat) in
 * prev's model or in s's, patched from it (same positions, same claims), sorted: the CLAIM
 * rules' groups of the changed Pods, old and new.  The users of a claim are base's, and those
 * replaced since, as prev and s have them (their uses lists): none is resolved again here, so
 * that an update costs its own Pods, not all those replaced since base.  -1 on ENOMEM.
 */
static int claim_groups(const struct snapshot *prev, const struct snapshot *s, const size_t *at,
                        size_t nat, struct group *g)
{
    const struct snapshot *base = s->base;
    const struct dra_model *ms[2] = { &prev->m, &s->m };
    unsigned char *seen = NULL;
    size_t i, j, q, v;
    int rc = -1;

    memset(g, 0, sizeof(*g));
    if (!(g->in = calloc(s->m.npods + 1, 1)) || !(seen = calloc(s->m.nclaims + 1, 1)))
        goto out;
    for (i = 0; i < nat; i++)
        if (group_add(g, at[i]))
            goto out;
    for (q = 0; q < g->n; q++)
        for (v = 0; v < 2; v++) {
            const struct dra_podspec *p = ms[v]->pods[g->v[q]];
            for (j = 0; j < p->nclaims; j++) {
                const struct dra_claim *c = dra_pod_claim_resolve(ms[v], p, &p->claims[j]);
                size_t k;
                if (!c || seen[k = (size_t)(c - ms[v]->claims)])
                    continue;
                seen[k] = 1;
                /* A claim that came since base has no users there (its slot is past base's). */
                for (i = k < base->m.nclaims ? base->cu_start[k] : 0;
                     k < base->m.nclaims && i < base->cu_start[k + 1]; i++)
                    if (group_add(g, base->cu_pos[i]))
                        goto out;
                if (group_add_users(g, prev->uses, prev->nuses, k) ||
                    group_add_users(g, s->uses, s->nuses, k))
                    goto out;
            }
        }
    if (g->n > 1)
        qsort(g->v, g->n, sizeof(*g->v), cmp_size);
    rc = 0;
out:
    free(seen);
    return rc;
}

/* The podspecs of m at the positions of g, in order (NULL on ENOMEM). */
static const struct dra_podspec **podspecs_at(const struct dra_model *m, const struct group *g)
{
    const struct dra_podspec **v = malloc((g->n + 1) * sizeof(*v));
    size_t i;

    for (i = 0; v && i < g->n; i++)
        v[i] = m->pods[g->v[i]];
    return v;
}

/* ---- the model patched ----------------------------------------------------------- */

/*
 * Podspecs parsed for one update, shared by the later snapshots of the same base.  Each holds
 * the box of the update before it: a snapshot keeps every podspec parsed since base alive with
 * one reference, whatever their number.
 */
struct snapshot_box {
    atomic_size_t refs;
    struct snapshot_box *prev; /* a reference, or NULL */
    size_t parsed;             /* podspecs in the chain */
    struct dra_model m;        /* Pods, and the claims that came (patch_inserts) */
    /* The stand-in claims this update made (patch_stand_ins), owned: m's claims point into
     * them.  assumed (references) and assumed_ns (sorted, each once) are the model's every
     * stand-in and their namespaces, owned when own_assumed, else the box before's; NULL
     * when no box in the chain made any (then they are base's). */
    cJSON *made, *assumed;
    const char **assumed_ns;
    size_t nassumed_ns;
    int own_assumed;
};

static void box_unref(struct snapshot_box *b)
{
    /* A loop, not recursion: a chain may be a quarter of the Pods long. */
    while (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        struct snapshot_box *prev = b->prev;
        dra_model_release(&b->m);
        cJSON_Delete(b->made);
        if (b->own_assumed) {
            cJSON_Delete(b->assumed);
            free(b->assumed_ns);
        }
        free(b);
        b = prev;
    }
}

static struct snapshot_box *box_ref(struct snapshot_box *b)
{
    if (b)
        atomic_fetch_add(&b->refs, 1);
    return b;
}

/* At most this many Pods replaced in one update, and podspecs parsed since base before a full
 * build starts a new base: the boxes hold the replaced podspecs alive too, so past a quarter of
 * the Pods a rebuild (one per npods / 4 Pods replaced: O(1) per Pod amortised) frees them.
 * What an update copies of those since base (moved, uses) is arrays of positions, a few bytes
 * per Pod replaced. */
#define PATCH_MAX_CHANGED 64
#define PATCH_MAX_PARSED(npods) (16 + (npods) / 4)

/* How many of a[0..n) and b[0..n) are equal before the first that differ. */
static size_t same_run(const cJSON **a, const cJSON **b, size_t n)
{
    size_t lo = 0, step = 256;

    /* Blocks while they compare equal, then one by one in the block that does not. */
    while (lo + step <= n && !memcmp(a + lo, b + lo, step * sizeof(*a)))
        lo += step;
    while (lo < n && a[lo] == b[lo])
        lo++;
    return lo;
}

/* 1 when o is a core v1 Pod named ns/name, the strings set. */
static int pod_named(const cJSON *o, const char **ns, const char **name)
{
    const char *av = dd_json_str(o, "apiVersion", NULL), *kind = dd_json_str(o, "kind", NULL);

    *ns = dd_json_str(o, "metadata", "namespace", NULL);
    *name = dd_json_str(o, "metadata", "name", NULL);
    if (!*ns)
        *ns = "";
    return av && kind && *name && !strcmp(av, "v1") && !strcmp(kind, "Pod");
}

/* The stand-in claims s's model holds: a patched snapshot's are its base's, but when a box
 * of its chain made some. */
static const cJSON *assumed_of(const struct snapshot *s)
{
    if (s->box && s->box->assumed)
        return s->box->assumed;
    return s->base ? s->base->assumed : s->assumed;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* *out: the namespaces of stand-in array a's claims, sorted, each once (the strings a's), *n
 * of them; -1 on ENOMEM. */
static int assumed_namespaces(const cJSON *a, const char ***out, size_t *n)
{
    size_t i, k = 0;
    const cJSON *it;

    *out = NULL;
    *n = 0;
    if (!(i = (size_t)cJSON_GetArraySize(a)))
        return 0;
    if (!(*out = malloc(i * sizeof(**out))))
        return -1;
    cJSON_ArrayForEach(it, a) {
        const char *ns = dd_json_str(it, "metadata", "namespace", NULL);
        (*out)[(*n)++] = ns ? ns : "";
    }
    qsort(*out, *n, sizeof(**out), cmp_str);
    for (i = 0; i < *n; i++)
        if (!k || strcmp((*out)[k - 1], (*out)[i]))
            (*out)[k++] = (*out)[i];
    *n = k;
    return 0;
}

/* 1 when s's model has a stand-in claim in namespace ns: a Pod there may make or drop one, in
 * an order a patch does not keep (patch_stand_ins). */
static int stands_in(const struct snapshot *s, const char *ns)
{
    const struct snapshot *base = s->base ? s->base : s;
    const char *const *v = base->assumed_ns;
    size_t n = base->nassumed_ns;

    if (s->box && s->box->assumed) {
        v = s->box->assumed_ns;
        n = s->box->nassumed_ns;
    }
    return n && bsearch(&ns, v, n, sizeof(*v), cmp_str);
}

/* Undoes a patch (s's model is then empty), or frees a patched snapshot's own parts. */
static void unpatch(struct snapshot *s)
{
    if (!s->base)
        return;
    if (s->kinds != s->base->kinds)
        free(s->kinds); /* an insertion's own */
    if (s->pod_idx != s->base->pod_idx)
        free(s->pod_idx);
    if (s->m.claim_idx != s->base->m.claim_idx)
        free(s->m.claim_idx);
    free(s->m.pods);
    box_unref(s->box);
    box_unref(s->evbox);
    s->evbox = NULL;
    free(s->moved);
    free(s->uses);
    snapshot_free(s->base);
    s->base = NULL;
    s->box = NULL;
    s->moved = NULL;
    s->nmoved = 0;
    s->uses = NULL;
    s->nuses = 0;
    s->pod_idx = NULL;
    s->npod_idx = 0;
    s->kinds = NULL;
    dra_model_init(&s->m, NULL, NULL);
}

/* s->moved: prev's and at[0..nat) (sorted), merged. -1 on ENOMEM. */
static int patch_moved(const struct snapshot *prev, struct snapshot *s, const size_t *at,
                       size_t nat)
{
    size_t i = 0, j = 0, n = 0, *v = malloc((prev->nmoved + nat + 1) * sizeof(*v));

    if (!v)
        return -1;
    while (i < prev->nmoved || j < nat) {
        size_t x = j == nat || (i < prev->nmoved && prev->moved[i] <= at[j]) ? prev->moved[i++]
                                                                              : at[j++];
        if (!n || v[n - 1] != x)
            v[n++] = x;
    }
    s->moved = v;
    s->nmoved = n;
    return 0;
}

/* 1 when x is one of v[0..n) (sorted). */
static int has_pos(const size_t *v, size_t n, size_t x)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x;
}

/* s->uses: prev's, but at the positions at[0..nat) (sorted) what s's podspecs there resolve
 * to.  The podspecs replaced before are not resolved again.  -1 on ENOMEM. */
static int patch_uses(const struct snapshot *prev, struct snapshot *s, const size_t *at,
                      size_t nat)
{
    struct snapshot_use *fresh = NULL, *v;
    size_t i, j, nfresh = 0, cap = 0, n = 0;

    for (i = 0; i < nat; i++) {
        const struct dra_podspec *p = s->m.pods[at[i]];
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(&s->m, p, &p->claims[j]);
            if (!c)
                continue;
            if (nfresh == cap) {
                struct snapshot_use *u = realloc(fresh, (cap = cap ? 2 * cap : 16) * sizeof(*u));
                if (!u) {
                    free(fresh);
                    return -1;
                }
                fresh = u;
            }
            fresh[nfresh].claim = (size_t)(c - s->m.claims);
            fresh[nfresh++].pos = at[i];
        }
    }
    if (nfresh > 1)
        qsort(fresh, nfresh, sizeof(*fresh), cmp_use);
    if (!(v = malloc((prev->nuses + nfresh + 1) * sizeof(*v)))) {
        free(fresh);
        return -1;
    }
    for (i = j = 0; i < prev->nuses || j < nfresh;) {
        if (j == nfresh || (i < prev->nuses && cmp_use(&prev->uses[i], &fresh[j]) < 0)) {
            if (!has_pos(at, nat, prev->uses[i].pos))
                v[n++] = prev->uses[i];
            i++;
        } else {
            v[n++] = fresh[j++];
        }
    }
    free(fresh);
    s->uses = v;
    s->nuses = n;
    return 0;
}

/* 1 when s's model may be patched from prev's at all: both from live caches alone, prev's
 * Pods indexed and told apart, and its base young enough (PATCH_MAX_PARSED). */
static int may_patch(const struct snapshot *prev, const struct snapshot *s)
{
    return !prev->objects && !s->objects && !prev->dup_pods && prev->npod_idx && prev->kinds &&
           (!prev->box || prev->box->parsed < PATCH_MAX_PARSED(prev->m.npods));
}

/* A copy of idx[0..n), or NULL. */
static size_t *idx_copy(const size_t *idx, size_t n)
{
    size_t *v = malloc((n + 1) * sizeof(*v));

    if (v && n)
        memcpy(v, idx, n * sizeof(*v));
    return v;
}

/*
 * s's model begins as prev's, shared with prev's base (a reference), with box's podspecs (box
 * taken; NULL: prev's box is kept) and prev's Events.  The Pod and claim indexes are base's, or
 * copies of prev's own (prev may go first).  s->m.pods is share_pods'.  0, or -1 on ENOMEM (s
 * is then unpatched).
 */
static int share_begin(const struct snapshot *prev, struct snapshot *s, struct snapshot_box *box)
{
    struct snapshot *base = prev->base ? prev->base : (struct snapshot *)prev;

    s->m = prev->m;
    s->m.pods = NULL;
    s->m.claim_idx = base->m.claim_idx;
    s->base = base;
    atomic_fetch_add(&base->refs, 1);
    s->box = box ? box : box_ref(prev->box);
    s->evbox = box_ref(prev->evbox);
    s->pod_idx = base->pod_idx;
    s->npod_idx = base->npod_idx;
    if ((prev->m.claim_idx != base->m.claim_idx &&
         !(s->m.claim_idx = idx_copy(prev->m.claim_idx, prev->m.nclaim_idx))) ||
        (prev->pod_idx != base->pod_idx &&
         !(s->pod_idx = idx_copy(prev->pod_idx, s->npod_idx = prev->npod_idx)))) {
        unpatch(s);
        return -1;
    }
    return 0;
}

/*
 * s's Pods (npods of them): prev's, but at positions at[0..nat) (unsorted; those past prev's
 * Pods are new ones) s->box's podspecs, in order, resolved against s's claims.  0, or -1 on
 * ENOMEM (s is then unpatched).
 */
static int share_pods(const struct snapshot *prev, struct snapshot *s, size_t *at, size_t nat,
                      size_t npods)
{
    size_t i;

    if (!(s->m.pods = malloc((npods + 1) * sizeof(*s->m.pods)))) {
        unpatch(s);
        return -1;
    }
    if (prev->m.npods)
        memcpy(s->m.pods, prev->m.pods, prev->m.npods * sizeof(*s->m.pods));
    for (i = 0; i < nat; i++)
        s->m.pods[at[i]] = s->box->m.pods[i];
    s->m.npods = s->m.cappods = npods;
    if (nat)
        dra_model_resolve_claims(&s->m, s->box->m.pods, nat);
    if (nat > 1)
        qsort(at, nat, sizeof(*at), cmp_size);
    if (patch_moved(prev, s, at, nat) || patch_uses(prev, s, at, nat)) {
        unpatch(s);
        return -1;
    }
    return 0;
}

/* A box for an update of prev, after prev's box in the chain; NULL on ENOMEM. */
static struct snapshot_box *box_new(const struct snapshot *prev)
{
    struct snapshot_box *box = calloc(1, sizeof(*box));

    if (!box)
        return NULL;
    atomic_init(&box->refs, 1);
    box->prev = box_ref(prev->box);
    box->parsed = prev->box ? prev->box->parsed : 0;
    if (prev->box) {
        box->assumed = prev->box->assumed;
        box->assumed_ns = prev->box->assumed_ns;
        box->nassumed_ns = prev->box->nassumed_ns;
    }
    dra_model_init(&box->m, NULL, NULL);
    box->m.live = 1;
    return box;
}

/* 1 when Pods a and b ask for the same stand-in claims (diag_assume_rejected_claims): they
 * name the same claims, and both have a status or neither (a store's update of a Pod's
 * status, which is most of them). */
static int same_claims(const cJSON *a, const cJSON *b)
{
    return !dd_json_path(a, "status", NULL) == !dd_json_path(b, "status", NULL) &&
           cJSON_Compare(dd_json_path(a, "spec", "resourceClaims", NULL),
                         dd_json_path(b, "spec", "resourceClaims", NULL), 1);
}

/* The position in prev's model of the Pod old, which now replaces in its place: of the same
 * name, that prev's model holds (a store's update), and in a namespace where prev's model has
 * a stand-in claim, one that names the same claims (another may make or drop one:
 * patch_assumes).  SIZE_MAX otherwise. */
static size_t replaced_at(const struct snapshot *prev, const cJSON *old, const cJSON *now)
{
    const char *ns, *name, *ns2, *name2;
    size_t pos;

    if (!pod_named(old, &ns, &name) || !pod_named(now, &ns2, &name2) || strcmp(ns, ns2) ||
        strcmp(name, name2) || (pos = pod_pos(prev, ns, name)) == SIZE_MAX ||
        prev->m.pods[pos]->o.json != old || (stands_in(prev, ns) && !same_claims(old, now)))
        return SIZE_MAX;
    return pos;
}

/*
 * s's model as prev's where only Pods that prev's model holds were replaced, each in its place
 * by one of the same name that the model holds too (the updates of a live cache's store): the
 * new ones parsed into a box of their own, the others' podspecs, and everything else, shared.
 * The Pods replaced, old and new, go to changed.  1 when that does not apply (s is untouched),
 * 0, -1 on ENOMEM.
 */
static int patch_model(const struct snapshot *prev, struct snapshot *s, struct keys *changed)
{
    struct snapshot *base = prev->base ? prev->base : (struct snapshot *)prev;
    struct snapshot_box *box = NULL;
    size_t i, at[PATCH_MAX_CHANGED], nat = 0;
    int rc = 1;

    /* Stand-ins for claims are added to the claims, which the patched model shares: a Pod of
     * a namespace with one is not patched, nor one that needs a new one (patch_assumes). */
    if (!may_patch(prev, s) || s->nborrowed != prev->nborrowed)
        return 1;
    /* A pointer comparison per object: what a store replaced is all that differs (memcmp
     * skips the runs of equal ones many at a time). */
    for (i = 0; i < s->nborrowed; i++) {
        const cJSON *old, *now;
        size_t pos;
        i += same_run(prev->borrowed + i, s->borrowed + i, s->nborrowed - i);
        if (i == s->nborrowed)
            break;
        old = prev->borrowed[i];
        now = s->borrowed[i];
        if (nat == PATCH_MAX_CHANGED || (pos = replaced_at(prev, old, now)) == SIZE_MAX)
            goto out;
        at[nat++] = pos;
        if (keys_push(changed, old) || keys_push(changed, now)) {
            rc = -1;
            goto out;
        }
    }
    if (nat) {
        if (!(box = box_new(prev))) {
            rc = -1;
            goto out;
        }
        box->parsed += nat;
        for (i = 0; i < nat; i++) {
            enum dd_rc r = dra_model_add(&box->m, changed->v[2 * i + 1], NULL, 0);
            if (r != DD_OK) {
                rc = -1;
                goto out;
            }
            /* The new version is kept as the old one was (a Pod's spec does not change what
             * makes the model keep it, but a store may hold anything). */
            if (box->m.npods != i + 1 || box->m.plugin_pods.n)
                goto out;
        }
    }
    /* A Pod replaced each Pod: prev's kinds, which are base's unless objects came or went. */
    if (prev->kinds == base->kinds)
        s->kinds = base->kinds;
    else if ((s->kinds = malloc(s->nborrowed + 1)))
        memcpy(s->kinds, prev->kinds, s->nborrowed);
    else
        rc = -1;
    if (rc < 0) {
        goto out;
    } else if ((rc = share_begin(prev, s, box)) < 0 ||
               (rc = share_pods(prev, s, at, nat, prev->m.npods)) < 0) {
        box = NULL; /* share_begin took it, and unpatch let it go with s's kinds */
        goto out;
    }
    box = NULL;
out:
    box_unref(box);
    if (rc)
        changed->n = 0;
    return rc;
}

/* 1 when Pod o names a ResourceClaimTemplate: quota_one charges its claims in the Pods' order. */
static int names_template(const cJSON *o)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(o, "spec", "resourceClaims", NULL))
        if (dd_json_str(it, "resourceClaimTemplateName", NULL))
            return 1;
    return 0;
}

/*
 * 1 when o, an object of s's that prev has not, is a Pod or a ResourceClaim a patched model may
 * take in, at the end of its array rather than in the place a full build gives it: prev's model
 * has none of its name; a claim is not allocated (an allocation is in the allocator's
 * inventory, base's), nor in a namespace with a stand-in claim (which it may replace); and no
 * ResourceQuota of its namespace charges claims (quota_key_charged: the claims a quota admits
 * are the first ones, in order), or o is a Pod that names no template (the stand-ins it may
 * need: patch_stand_ins).
 */
static int may_insert(const struct snapshot *prev, const cJSON *o, enum tracked t)
{
    const char *ns, *name;
    size_t i, j;

    if (t == T_POD) {
        if (!pod_named(o, &ns, &name) || pod_pos(prev, ns, name) != SIZE_MAX)
            return 0;
        if (!names_template(o))
            return 1;
    } else if (t != T_CLAIM || dd_json_path(o, "status", "allocation", NULL) ||
               !(name = dd_json_str(o, "metadata", "name", NULL))) {
        return 0;
    } else if (!(ns = dd_json_str(o, "metadata", "namespace", NULL))) {
        ns = "";
    }
    if (t == T_CLAIM && (stands_in(prev, ns) || dra_find_claim(&prev->m, ns, name, 0)))
        return 0;
    for (i = 0; i < prev->m.nquotas; i++)
        for (j = 0; !strcmp(prev->m.quotas[i].o.ns, ns) && j < prev->m.quotas[i].nhard; j++)
            if (quota_key_charged(prev->m.quotas[i].hard[j].key))
                return 0;
    return 1;
}

/* Adds the Pods of s's model from position from on to s's Pod index, made its own (a copy of
 * base's, or built anew when it would be more than half full).  -1 on ENOMEM. */
static int index_more_pods(struct snapshot *s, size_t from)
{
    size_t i, h, mask;

    if (2 * s->m.npods > s->npod_idx) {
        if (s->pod_idx != s->base->pod_idx)
            free(s->pod_idx);
        s->pod_idx = NULL;
        return index_pods(s);
    }
    if (s->pod_idx == s->base->pod_idx && !(s->pod_idx = idx_copy(s->pod_idx, s->npod_idx)))
        return -1;
    mask = s->npod_idx - 1;
    for (i = from; i < s->m.npods; i++) {
        const struct dra_podspec *p = s->m.pods[i];
        if (strcmp(p->o.kind, "Pod"))
            continue;
        for (h = dra_key_hash(p->o.ns, p->o.name) & mask; s->pod_idx[h]; h = (h + 1) & mask)
            ;
        s->pod_idx[h] = i + 1;
    }
    return 0;
}

/* 1 when one of claims c[0..n) has a request with a selector of its own: a selector's
 * verdicts are kept per model by its number there (dra_selector_match), and a box's claims are
 * numbered in the box, not in the base whose verdicts the patched model reads. */
static int claims_select(const struct dra_claim *c, size_t n)
{
    size_t i, j, k;

    for (i = 0; i < n; i++)
        for (j = 0; j < c[i].spec.nreq; j++) {
            const struct dra_request *r = &c[i].spec.req[j];
            if (r->nsel)
                return 1;
            for (k = 0; k < r->nsub; k++)
                if (r->sub[k].nsel)
                    return 1;
        }
    return 0;
}

/* 1 when ns is the namespace of one of c[0..n). */
static int claims_ns(const struct dra_claim *c, size_t n, const char *ns)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!strcmp(c[i].o.ns, ns))
            return 1;
    return 0;
}

/*
 * Parses into box (s->box, its podspecs for the positions at[*nat..]) prev's podspecs that a
 * claim s's model gained (box's) resolves now, but those at at[0..*nat) (replaced): prev's
 * remember none for them, and may be read while s is built.  1 when one cannot be (s is then
 * built whole), 0, -1 on ENOMEM.
 */
static int reparse_claimants(const struct snapshot *prev, struct snapshot *s,
                             struct snapshot_box *box, size_t *at, size_t *nat)
{
    size_t i, j, k, had = *nat;

    for (i = 0; i < prev->m.npods; i++) {
        const struct dra_podspec *p = prev->m.pods[i];
        if (!p->nclaims || !claims_ns(box->m.claims, box->m.nclaims, p->o.ns))
            continue;
        for (k = 0; k < had && at[k] != i; k++)
            ;
        if (k < had)
            continue; /* replaced: its new version is parsed already */
        for (j = 0; j < p->nclaims; j++)
            if (!dra_pod_claim_resolve(&prev->m, p, &p->claims[j]) &&
                dra_pod_claim_lookup(&s->m, p, &p->claims[j]))
                break;
        if (j == p->nclaims)
            continue;
        if (dra_model_add(&box->m, p->o.json, NULL, 0) != DD_OK)
            return -1;
        if (box->m.npods != *nat + 1 || box->m.plugin_pods.n)
            return 1;
        at[(*nat)++] = i;
    }
    return 0;
}

/* 1 when a claim p names is missing from m, or one of m's stand-ins. */
static int names_stand_in(const struct dra_model *m, const struct dra_podspec *p)
{
    const struct dra_claim *c;
    size_t j;

    for (j = 0; j < p->nclaims; j++)
        if (p->claims[j].claim &&
            (!(c = dra_find_claim(m, p->o.ns, p->claims[j].claim, 0)) || diag_claim_assumed(c)))
            return 1;
    return 0;
}

struct pos_pod {
    size_t at;
    const struct dra_podspec *p;
};

static int cmp_pos_pod(const void *a, const void *b)
{
    const struct pos_pod *x = a, *y = b;

    return (x->at > y->at) - (x->at < y->at);
}

/*
 * The stand-in claims (diag_assume_rejected_claims) that the podspecs of s->box, at positions
 * at[0..nat) of s's model, need and prev's model lacks: into the box, as claims after those
 * that came, and its view of the model's every stand-in made.  A full build makes them after
 * every claim, in the Pods' order (the first to name one), and quota_one admits in that
 * order: so only in a namespace where prev's model has none (a QuotaExceeded pod, the first of
 * its namespace), where they are the last of its claims either way; and no new Pod there names
 * a stand-in or a missing claim.  1 when that does not hold (s is then built whole), 0, -1 on
 * ENOMEM.
 */
static int patch_stand_ins(const struct snapshot *prev, struct snapshot *s, const size_t *at,
                           size_t nat)
{
    struct snapshot_box *box = s->box;
    struct dra_model part = s->m;
    const struct dra_podspec **pods;
    struct pos_pod *v;
    const cJSON *it;
    cJSON *made, *c;
    size_t i;

    if (!s->m.nquotas || !nat)
        return 0;
    v = malloc(nat * sizeof(*v));
    pods = malloc(nat * sizeof(*pods));
    if (!v || !pods) {
        free(v);
        free(pods);
        return -1;
    }
    for (i = 0; i < nat; i++) {
        v[i].at = at[i];
        v[i].p = box->m.pods[i];
        /* A new Pod that names a stand-in may come before the one it was made for: the
         * stand-ins' order follows the Pods'. */
        if (at[i] >= prev->m.npods && stands_in(prev, v[i].p->o.ns) &&
            names_stand_in(&s->m, v[i].p)) {
            free(v);
            free(pods);
            return 1;
        }
    }
    qsort(v, nat, sizeof(*v), cmp_pos_pod);
    for (i = 0; i < nat; i++)
        pods[i] = v[i].p;
    part.pods = pods;
    part.npods = nat;
    made = diag_assume_rejected_claims(&part);
    free(v);
    free(pods);
    if (!made)
        return 0;
    box->made = made;
    cJSON_ArrayForEach(it, made) {
        const char *ns = dd_json_str(it, "metadata", "namespace", NULL);
        if (stands_in(prev, ns ? ns : ""))
            return 1;
    }
    cJSON_ArrayForEach(it, made)
        if (dra_model_add(&box->m, it, NULL, 0) != DD_OK)
            return -1;
    /* References to them all, base's and the chain's first. */
    if (!(box->assumed = cJSON_CreateArray()))
        return -1;
    box->own_assumed = 1;
    box->assumed_ns = NULL;
    cJSON_ArrayForEach(it, assumed_of(prev))
        if (!cJSON_AddItemReferenceToArray(box->assumed, (cJSON *)it))
            return -1;
    cJSON_ArrayForEach(c, made)
        if (!cJSON_AddItemReferenceToArray(box->assumed, c))
            return -1;
    return assumed_namespaces(box->assumed, &box->assumed_ns, &box->nassumed_ns);
}

/* s's Events (their objects) and their numbers in s's order: open addressing. */
struct evnum {
    const cJSON **k;
    size_t *v, cap;
};

static size_t evnum_get(void *ctx, const cJSON *json)
{
    const struct evnum *en = ctx;
    size_t h, mask = en->cap - 1;

    for (h = ptr_hash(json) & mask; en->k[h]; h = (h + 1) & mask)
        if (en->k[h] == json)
            return en->v[h];
    return SIZE_MAX;
}

/*
 * s->evbox: the Events s's model reads, prev's but those that went, with those of came (new
 * objects, parsed into the box), all numbered in s's order: a merge (dra_events_merge), not a
 * parse and a sort of every Event.  -1 on ENOMEM.
 */
static int patch_event_box(const struct snapshot *prev, struct snapshot *s,
                           const struct keys *came)
{
    struct snapshot_box *box = calloc(1, sizeof(*box));
    struct evnum en = { NULL, NULL, 16 };
    struct dra_event *v = NULL;
    size_t i, h, n = 0, k = 0;
    int rc = -1;

    if (!box)
        return -1;
    atomic_init(&box->refs, 1);
    dra_model_init(&box->m, NULL, NULL);
    box->m.live = 1;
    for (i = 0; i < s->nborrowed; i++)
        n += s->kinds[i] == T_EVENT;
    while (en.cap < 2 * n + 2)
        en.cap *= 2;
    if (!(en.k = calloc(en.cap, sizeof(*en.k))) || !(en.v = malloc(en.cap * sizeof(*en.v))))
        goto out;
    for (i = 0; i < s->nborrowed; i++)
        if (s->kinds[i] == T_EVENT) {
            for (h = ptr_hash(s->borrowed[i]) & (en.cap - 1); en.k[h]; h = (h + 1) & (en.cap - 1))
                ;
            en.k[h] = s->borrowed[i];
            en.v[h] = k++;
        }
    for (i = 0; i < came->n; i++)
        if (dra_model_add(&box->m, came->v[i], NULL, 0) != DD_OK)
            goto out;
    if (dra_events_merge(prev->m.events, prev->m.nevents, box->m.events, box->m.nevents,
                         evnum_get, &en, &v, &n) != DD_OK)
        goto out;
    free(box->m.events);
    box->m.events = v;
    box->m.nevents = box->m.capevents = n;
    box_unref(s->evbox); /* prev's, which share_begin took */
    s->evbox = box;
    box = NULL;
    s->m.events = s->evbox->m.events;
    s->m.nevents = s->evbox->m.nevents;
    s->m.capevents = s->evbox->m.capevents;
    rc = 0;
out:
    box_unref(box);
    free(en.k);
    free(en.v);
    return rc;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const cJSON *const *)a, y = (uintptr_t)*(const cJSON *const *)b;

    return (x > y) - (x < y);
}

/* Takes out of came the objects went holds too: met in the walk as gone then as new, after an
 * object that came before them, they are neither.  -1 on ENOMEM. */
static int unmoved(struct keys *came, const struct keys *went)
{
    const cJSON **w;
    size_t i, n = 0;

    if (!came->n || !went->n)
        return 0;
    if (!(w = malloc(went->n * sizeof(*w))))
        return -1;
    memcpy(w, went->v, went->n * sizeof(*w));
    qsort(w, went->n, sizeof(*w), cmp_ptr);
    for (i = 0; i < came->n; i++)
        if (!bsearch(&came->v[i], w, went->n, sizeof(*w), cmp_ptr))
            came->v[n++] = came->v[i];
    came->n = n;
    free(w);
    return 0;
}

const char *snapshot_whole_name(enum snapshot_whole why)
{
    static const char *const names[SNAPSHOT_WHOLE_N] = {
        "patched", "aged", "unindexed", "many", "pod-came", "pod-went", "pod-changed",
        "claim-came", "claim-went", "claim-changed", "other-came", "other-went",
        "other-changed", "stand-in", "claim-room", "unkept",
    };

    return why < SNAPSHOT_WHOLE_N ? names[why] : "?";
}

/* Why patch_inserts's walk stopped at prev's i-th and s's j-th object, which differ: the one
 * that went when its successor is next in s, the one that came when it comes before prev's,
 * else one replaced by the other; by its kind.  Only a count reads it. */
static enum snapshot_whole whole_at(const struct snapshot *prev, const struct snapshot *s,
                                    size_t i, size_t j)
{
    static const enum snapshot_whole by[3][4] = {
        { SNAPSHOT_WHOLE_OTHER_CAME, SNAPSHOT_WHOLE_POD_CAME, SNAPSHOT_WHOLE_OTHER_CAME,
          SNAPSHOT_WHOLE_CLAIM_CAME },
        { SNAPSHOT_WHOLE_OTHER_WENT, SNAPSHOT_WHOLE_POD_WENT, SNAPSHOT_WHOLE_OTHER_WENT,
          SNAPSHOT_WHOLE_CLAIM_WENT },
        { SNAPSHOT_WHOLE_OTHER_CHANGED, SNAPSHOT_WHOLE_POD_CHANGED,
          SNAPSHOT_WHOLE_OTHER_CHANGED, SNAPSHOT_WHOLE_CLAIM_CHANGED },
    };
    int has_i = i < prev->nborrowed, has_j = j < s->nborrowed;

    if (has_i && (!has_j || (i + 1 < prev->nborrowed && prev->borrowed[i + 1] == s->borrowed[j])))
        return by[1][prev->kinds[i] & 3];
    if (!has_i || (j + 1 < s->nborrowed && s->borrowed[j + 1] == prev->borrowed[i]))
        return by[0][tracked(s->borrowed[j])];
    return by[2][tracked(s->borrowed[j])];
}

/*
 * s's model as prev's where Events came, went or were replaced (the scheduler's, one per
 * attempt), Pods and ResourceClaims came that may_insert takes, and Pods were replaced in their
 * places (replaced_at): every other object is prev's, in its order.
 *  - The Pods and claims that came are parsed into a box (s->box): the Pods take positions past
 *    prev's; the claims, and the stand-ins the Pods need (patch_stand_ins), the slots base
 *    keeps past its own (dra_model_reserve_claims), which only the newest snapshot patched
 *    from base fills (base->claims_used: an update of an older one is built whole).  The
 *    podspecs a new claim resolves are parsed again.
 *  - What a model reads of the Events is an array sorted by object and arrival: s's is prev's
 *    merged with those that came, in a box of its own, s->evbox (patch_event_box).  A chain
 *    of boxes would grow with each such update.
 *  - The rest is shared as patch_model shares it; s->kinds is s's own.
 * 1 when that does not apply (s is untouched; *why says why), 0, -1 on ENOMEM.
 */
static int patch_inserts(const struct snapshot *prev, struct snapshot *s,
                         enum snapshot_whole *why)
{
    struct snapshot *base = prev->base ? prev->base : (struct snapshot *)prev;
    struct snapshot_box *box = NULL;
    struct keys came = { NULL, 0, 0 }, evcame = { NULL, 0, 0 }, evwent = { NULL, 0, 0 },
                repl = { NULL, 0, 0 };
    unsigned char *kinds;
    size_t i = 0, j = 0, run, nat = 0, nnew = 0, *at = NULL, room, ncame = 0;
    enum tracked t = T_OTHER;
    int events = 0, fresh, rc = -1;

    if (!may_patch(prev, s)) {
        *why = prev->box && prev->box->parsed >= PATCH_MAX_PARSED(prev->m.npods)
                   ? SNAPSHOT_WHOLE_AGED
                   : SNAPSHOT_WHOLE_UNINDEXED;
        return 1;
    }
    room = PATCH_MAX_PARSED(prev->m.npods) - (prev->box ? prev->box->parsed : 0);
    if (!(kinds = malloc(s->nborrowed + 1)))
        return -1;
    /* Both in one walk: runs of the same objects, and what came or went between them. */
    while (i < prev->nborrowed || j < s->nborrowed) {
        run = prev->nborrowed - i < s->nborrowed - j ? prev->nborrowed - i : s->nborrowed - j;
        run = same_run(prev->borrowed + i, s->borrowed + j, run);
        memcpy(kinds + j, prev->kinds + i, run);
        i += run;
        j += run;
        if (i < prev->nborrowed && prev->kinds[i] == T_EVENT) {
            /* went (or replaced: its new version is next in s; or it is next in s itself, after
             * objects that came) */
            if (keys_push(&evwent, prev->borrowed[i++]))
                goto out;
            events = 1;
        } else if (j < s->nborrowed && (t = tracked(s->borrowed[j])) == T_EVENT) {
            if (keys_push(&evcame, s->borrowed[j]))
                goto out;
            kinds[j++] = T_EVENT;
            events = 1;
        } else if (j < s->nborrowed && came.n + repl.n < room &&
                   may_insert(prev, s->borrowed[j], t)) {
            if (keys_push(&came, s->borrowed[j]))
                goto out;
            kinds[j++] = (unsigned char)t;
        } else if (i < prev->nborrowed && j < s->nborrowed && prev->kinds[i] == T_POD &&
                   came.n + repl.n < room &&
                   replaced_at(prev, prev->borrowed[i], s->borrowed[j]) != SIZE_MAX) {
            if (keys_push(&repl, s->borrowed[j]))
                goto out;
            kinds[j++] = T_POD;
            i++;
        } else if (i < prev->nborrowed || j < s->nborrowed) {
            *why = came.n + repl.n >= room ? SNAPSHOT_WHOLE_MANY : whole_at(prev, s, i, j);
            rc = 1;
            goto out;
        } else {
            break;
        }
    }
    if (!events && !came.n && !repl.n) {
        *why = SNAPSHOT_WHOLE_UNKEPT; /* no change: patch_model took it unless it was that */
        rc = 1;
        goto out;
    }
    if (unmoved(&evcame, &evwent))
        goto out;
    /* Events alone keep prev's box: an empty one per update would make a chain that grows. */
    if (((came.n || repl.n) && !(box = box_new(prev))) ||
        !(at = malloc((came.n + repl.n + prev->m.npods + 1) * sizeof(*at))))
        goto out;
    for (i = 0; i < came.n; i++) {
        size_t had = box->m.npods;
        if (dra_model_add(&box->m, came.v[i], NULL, 0) != DD_OK)
            goto out;
        if (box->m.npods > had)
            at[nat++] = prev->m.npods + nnew++;
    }
    /* A replaced Pod is kept as its old version was (patch_model). */
    for (i = 0; i < repl.n; i++) {
        const char *ns, *name;
        if (dra_model_add(&box->m, repl.v[i], NULL, 0) != DD_OK)
            goto out;
        pod_named(repl.v[i], &ns, &name);
        at[nat++] = pod_pos(prev, ns, name);
    }
    rc = 1;
    *why = SNAPSHOT_WHOLE_UNKEPT;
    if (box && (box->m.npods != nat || box->m.plugin_pods.n ||
                claims_select(box->m.claims, box->m.nclaims)))
        goto out;
    s->kinds = kinds;
    kinds = NULL;
    rc = share_begin(prev, s, box);
    box = NULL; /* s's now, or let go with it */
    if (rc)
        goto out;
    /* The claims go into the room base keeps past its own, when no other update filled it. */
    fresh = s->box != prev->box;
    if (fresh && (rc = patch_stand_ins(prev, s, at, nat)) == 0 &&
        (s->box->m.nclaims > base->m.capclaims - prev->m.nclaims ||
         (s->box->m.nclaims && prev->m.nclaims != atomic_load(&base->claims_used)))) {
        *why = SNAPSHOT_WHOLE_CLAIM_ROOM;
        rc = 1;
    } else if (rc > 0) {
        *why = SNAPSHOT_WHOLE_STAND_IN;
    }
    if (rc) {
        unpatch(s);
        goto out;
    }
    ncame = came.n;
    if (fresh && s->box->m.nclaims) {
        size_t *copied = s->m.claim_idx != base->m.claim_idx ? s->m.claim_idx : NULL;
        enum dd_rc r = dra_model_append_claims(&s->m, s->box->m.claims, s->box->m.nclaims);
        if (r == DD_OK)
            free(copied); /* the index of prev's claims, which the new one holds too */
        rc = r == DD_ENOMEM ? -1 : r != DD_OK ? 1
                                              : reparse_claimants(prev, s, s->box, at, &nat);
        *why = r != DD_OK ? SNAPSHOT_WHOLE_CLAIM_ROOM : SNAPSHOT_WHOLE_UNKEPT;
        if (rc) {
            unpatch(s);
            goto out;
        }
    }
    /* What the chain holds counts (may_patch): the claims too, the Pods parsed again too. */
    if (s->box && s->box != prev->box)
        s->box->parsed += ncame + nat - nnew;
    s->m.nobjects = prev->m.nobjects + s->nborrowed - prev->nborrowed;
    if ((rc = share_pods(prev, s, at, nat, prev->m.npods + nnew)) ||
        (nnew && (rc = index_more_pods(s, prev->m.npods))) ||
        (events && (rc = patch_event_box(prev, s, &evcame)))) {
        unpatch(s);
        goto out;
    }
    if (fresh && s->box->m.nclaims)
        atomic_store(&base->claims_used, s->m.nclaims);
out:
    free(kinds);
    free(at);
    free(came.v);
    free(evcame.v);
    free(evwent.v);
    free(repl.v);
    box_unref(box);
    return rc;
}

/* 1 when the Pods of changed (every stride-th, from the stride-th: the new versions) ask for
 * stand-in claims, which prev's did not (then the model must be built whole), 0, -1 on
 * ENOMEM. */
static int patch_assumes(struct snapshot *s, const struct keys *changed, size_t stride)
{
    struct dra_model part = s->m;
    struct keys now = { NULL, 0, 0 };
    const struct dra_podspec **pods;
    cJSON *assumed;
    size_t i, n;

    if (!s->m.nquotas)
        return 0; /* nothing is exhausted */
    for (i = stride - 1; i < changed->n; i += stride)
        if (keys_push(&now, changed->v[i])) {
            free(now.v);
            return -1;
        }
    i = (size_t)pods_of(s, &now, &pods, &n);
    free(now.v);
    if (i)
        return -1;
    part.pods = pods;
    part.npods = n;
    assumed = diag_assume_rejected_claims(&part);
    free(pods);
    cJSON_Delete(assumed);
    return assumed != NULL;
}

/* 1 when s's findings may be prev's with the rules a Pod affects rerun: the same evidence
 * besides the objects (and the stand-in claims, which are claims: assumed_changed). */
static int delta_applies(const struct snapshot *prev, const struct snapshot *s)
{
    return !prev->objects && !s->objects && !prev->dup_pods && !s->dup_pods &&
           prev->m.live == s->m.live && same_sar(prev, s) && same_plugin_pods(&prev->m, &s->m);
}

static int cmp_stand_in(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    const char *nx = dd_json_str(x, "metadata", "namespace", NULL);
    const char *ny = dd_json_str(y, "metadata", "namespace", NULL);
    int c = strcmp(nx ? nx : "", ny ? ny : "");

    if (c)
        return c;
    nx = dd_json_str(x, "metadata", "name", NULL);
    ny = dd_json_str(y, "metadata", "name", NULL);
    return strcmp(nx ? nx : "", ny ? ny : "");
}

/* The items of array a (may be NULL), sorted by namespace and name, into *v[0..*n). */
static int sorted_items(const cJSON *a, const cJSON ***v, size_t *n)
{
    const cJSON *it;

    *n = 0;
    if (!(*v = malloc(((size_t)cJSON_GetArraySize(a) + 1) * sizeof(**v))))
        return -1;
    cJSON_ArrayForEach(it, a)
        (*v)[(*n)++] = it;
    qsort(*v, *n, sizeof(**v), cmp_stand_in);
    return 0;
}

/*
 * The stand-in claims (quota-rejected claims the pods name) of prev and of s that differ,
 * old versions into gone and new ones into came: to the rules they are claims that came or
 * went, without an allocation.  Sorted merge, not a pass per pair: a cluster may have
 * thousands.  -1 on ENOMEM.
 */
static int assumed_changed(const struct snapshot *prev, const struct snapshot *s,
                           struct keys *gone, struct keys *came)
{
    const cJSON *pa = assumed_of(prev), *sa = assumed_of(s), **v = NULL, **w = NULL;
    size_t n, k, i = 0, j = 0;
    int rc = -1;

    if (pa == sa)
        return 0;
    if (sorted_items(pa, &v, &n) || sorted_items(sa, &w, &k))
        goto out;
    while (i < n || j < k) {
        int c = i == n ? 1 : j == k ? -1 : cmp_stand_in(&v[i], &w[j]);
        if (!c && cJSON_Compare(v[i], w[j], 1)) {
            i++;
            j++;
            continue;
        }
        if ((c <= 0 && keys_push(gone, v[i])) || (c >= 0 && keys_push(came, w[j])))
            goto out;
        i += c <= 0;
        j += c >= 0;
    }
    rc = 0;
out:
    free(v);
    free(w);
    return rc;
}

/*
 * s's findings from prev's (pf: all of them) where only Pods, Events and ResourceClaims (but
 * not their allocations) changed: prev's findings of POD rules but about the changed Pods (and,
 * when claims changed, about any podspec of their namespaces); of NO_PODS rules and of POD_PART
 * rules but their pod_check's over the changed Pods' old versions, when no claim changed; of
 * QUOTA rules but over the quotas of the namespaces of the changed Pods and claims (run_quotas,
 * old and new: so are they rerun); when
 * the model was patched (only Pods were replaced) of EVENTS rules, and of CLAIM rules but over
 * the changed Pods' groups (or all of theirs when no Pod or claim changed: Events alone) (*kept
 * of them, in prev's order).  Then the POD rules' findings for those Pods now, the POD_PART
 * rules' pod_check's for them (every POD_PART and NO_PODS rule's when claims changed: they read
 * claims), the CLAIM rules' over their groups, and every CLUSTER rule's (and, unpatched, every
 * EVENTS rule's, and CLAIM rule's but after Events alone).  A claim's allocation is the
 * allocator's inventory, which every pod's fit reads: a change of it is a full build.  patched:
 * the changed Pods when patch_model found them, else NULL.  1 when that does not apply (then
 * nothing was added), 0, -1 on ENOMEM.
 */
static int delta_rules(const struct snapshot *prev, const struct dd_findings *pf,
                       struct snapshot *s, const struct rule_options *opt,
                       const struct keys *patched, size_t *kept)
{
    struct keys changed = { NULL, 0, 0 }, cgone = { NULL, 0, 0 }, ccame = { NULL, 0, 0 };
    struct names nm = { NULL, NULL, 0, NULL, 0 };
    struct dd_findings gone = DD_FINDINGS_INIT;
    const struct dra_podspec **now = NULL, **old = NULL, **gold = NULL, **gnow = NULL;
    struct group g = { NULL, 0, 0, NULL };
    size_t *at = NULL, nat = 0;
    struct dra_model part;
    const char *code = NULL;
    enum dd_scope sc = DD_SCOPE_CLUSTER;
    size_t nnow, nold, i;
    int rc, claims = 0, groups;

    if (!delta_applies(prev, s))
        return 1;
    if (patched && !(changed.v = malloc((patched->n + 1) * sizeof(*changed.v))))
        return -1;
    if (patched) {
        if (patched->n)
            memcpy(changed.v, patched->v, patched->n * sizeof(*changed.v));
        changed.n = changed.cap = patched->n;
    } else if ((rc = changed_objects(prev, s, &changed, &cgone, &ccame, NULL)) ||
               (rc = assumed_changed(prev, s, &cgone, &ccame))) {
        goto out;
    }
    claims = cgone.n + ccame.n > 0;
    /* Events alone: the CLAIM rules read no Event, their findings are prev's. */
    groups = patched || (!changed.n && !claims);
    if ((rc = pods_of(s, &changed, &now, &nnow)) || (rc = pods_of(prev, &changed, &old, &nold)) ||
        (rc = names_of(&changed, &nm)) ||
        (claims && ((rc = claim_namespaces(&cgone, &ccame, &nm)) ||
                    (rc = widen_to_claim_ns(&s->m, &nm, &now, &nnow)))))
        goto out;
    for (i = 0; i < pf->n && !s->f.oom; i++) {
        const struct dd_finding *f = &pf->v[i];
        if (f->code != code)
            sc = scope_of(code = f->code);
        if (((sc == DD_SCOPE_NO_PODS || sc == DD_SCOPE_POD_PART) && !claims) ||
            (sc == DD_SCOPE_CLAIM && groups) || (sc == DD_SCOPE_EVENTS && patched) ||
            sc == DD_SCOPE_QUOTA ||
            (sc == DD_SCOPE_POD && !about_changed(f, &nm)))
            dd_findings_copy(&s->f, f);
    }
    /* What the POD_PART rules said of the old versions goes (the rest of theirs stays; all of
     * it is said again when claims changed); and, when the model was patched, what the CLAIM
     * rules said of the changed Pods' groups. */
    part = prev->m;
    part.pods = old;
    part.npods = nold;
    rc = -1;
    if ((!claims && dd_rules_run_pod_parts(&part, opt, &gone)) ||
        run_quotas(&prev->m, &nm, opt, &gone))
        goto out;
    if (patched) {
        if (!(at = malloc((nm.n + 1) * sizeof(*at))))
            goto out;
        for (i = 0; i < nm.n; i++)
            if ((at[nat] = pod_pos(s, nm.ns[i], nm.name[i])) != SIZE_MAX)
                nat++;
        if (claim_groups(prev, s, at, nat, &g) ||
            !(gold = podspecs_at(&prev->m, &g)) || !(gnow = podspecs_at(&s->m, &g)))
            goto out;
        part.pods = gold;
        part.npods = g.n;
        if (dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_CLAIM, &gone))
            goto out;
    }
    dd_findings_remove(&s->f, &gone);
    *kept = s->f.n;
    part = s->m;
    part.pods = now;
    part.npods = nnow;
    rc = s->f.oom ||
         dd_rules_run_scoped(&s->m, opt, 1u << DD_SCOPE_CLUSTER |
                             (groups ? 0 : 1u << DD_SCOPE_CLAIM) |
                             (patched ? 0 : 1u << DD_SCOPE_EVENTS) |
                             (claims ? 1u << DD_SCOPE_NO_PODS | 1u << DD_SCOPE_POD_PART : 0),
                             &s->f) ||
         dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_POD, &s->f) ||
         (!claims && dd_rules_run_pod_parts(&part, opt, &s->f)) ||
         run_quotas(&s->m, &nm, opt, &s->f) ? -1 : 0;
    if (!rc && patched) {
        part.pods = gnow;
        part.npods = g.n;
        rc = dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_CLAIM, &s->f) ? -1 : 0;
    }
out:
    free(g.v);
    free(g.in);
    free(gold);
    free(gnow);
    free(at);
    dd_findings_release(&gone);
    free(changed.v);
    free(cgone.v);
    free(ccame.v);
    free(nm.ns);
    free(nm.name);
    free(nm.cns);
    free(now);
    free(old);
    return rc;
}

/* ---- findings in layers ---------------------------------------------------------- */

static int bit(const uint64_t *v, size_t i)
{
    return v && (v[i / 64] >> (i % 64) & 1);
}

static void set_bit(uint64_t *v, size_t i)
{
    v[i / 64] |= (uint64_t)1 << (i % 64);
}

/* The first position of v[0..n) (sorted) not before f. */
static size_t lower_bound(const struct dd_finding *v, size_t n, const struct dd_finding *f)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dd_finding_cmp(&v[mid], f) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * Drops one finding equal to f: of own's (not dropped yet: drop marks them), else of fb's
 * (not gone yet: gone marks them).  Both lists are sorted.  0 when there is none.
 */
static int drop_equal(const struct dd_findings *own, unsigned char *drop,
                      const struct snapshot *fb, uint64_t *gone, const struct dd_finding *f)
{
    size_t i;

    for (i = own ? lower_bound(own->v, own->n, f) : 0;
         own && i < own->n && !dd_finding_cmp(&own->v[i], f); i++)
        if (!drop[i])
            return drop[i] = 1;
    for (i = lower_bound(fb->f.v, fb->f.n, f); i < fb->f.n && !dd_finding_cmp(&fb->f.v[i], f); i++)
        if (!bit(gone, i)) {
            set_bit(gone, i);
            return 1;
        }
    return 0;
}

/* A layer's own findings (those since fbase) past which the next update is a flat delta, all
 * findings in one list that later layers lie over: each update copies its predecessor's own,
 * so this bounds that copy, and the flat one (every finding) comes once per this many new. */
#define LAYER_MAX_OWN 512

/*
 * delta_rules for a patched model, with s's findings a layer over prev's (or prev's fbase's):
 * what the rules said of the changed Pods goes as bits of s->gone (or, of prev's own, is not
 * copied), found by the index (POD rules), by the list of CLUSTER findings, and by bisection
 * for what the POD_PART and CLAIM rules say of the old versions; then s->f holds prev's own
 * kept (*kept of them, in order) and what the rules say now.  No pass over the findings kept.
 * 1 when that does not apply (s is untouched), 0, -1 on ENOMEM.
 */
static int layer_rules(const struct snapshot *prev, struct snapshot *s,
                       const struct rule_options *opt, const struct keys *changed, size_t *kept)
{
    const struct snapshot *fb = prev->fbase ? prev->fbase : prev;
    const struct dd_findings *own = prev->fbase ? &prev->f : NULL;
    size_t nw = (fb->f.n + 63) / 64, i, j, n, nnow, nold, nat = 0, *at = NULL;
    struct names nm = { NULL, NULL, 0, NULL, 0 };
    struct dd_findings gone = DD_FINDINGS_INIT;
    const struct dra_podspec **now = NULL, **old = NULL, **gold = NULL, **gnow = NULL;
    struct group g = { NULL, 0, 0, NULL };
    unsigned char *drop = NULL;
    struct dra_model part;
    const char *code = NULL;
    enum dd_scope sc = DD_SCOPE_CLUSTER;
    int rc = -1;

    if (!delta_applies(prev, s) || !fb->ix || (own && own->n > LAYER_MAX_OWN))
        return 1;
    if (!(s->gone = calloc(nw + 1, sizeof(*s->gone))) ||
        !(drop = calloc(own ? own->n + 1 : 1, 1)))
        goto out;
    if (own && nw)
        memcpy(s->gone, prev->gone, nw * sizeof(*s->gone));
    if (pods_of(s, changed, &now, &nnow) || pods_of(prev, changed, &old, &nold) ||
        names_of(changed, &nm))
        goto out;
    for (i = 0; i < nm.n; i++) {
        const size_t *pos = diag_index_about(fb->ix, "Pod", nm.ns[i], nm.name[i], &n);
        for (j = 0; j < n; j++)
            if (scope_of(fb->f.v[pos[j]].code) == DD_SCOPE_POD)
                set_bit(s->gone, pos[j]);
    }
    for (i = 0; i < fb->ncluster_pos; i++)
        set_bit(s->gone, fb->cluster_pos[i]);
    for (i = 0; own && i < own->n; i++) {
        if (own->v[i].code != code)
            sc = scope_of(code = own->v[i].code);
        drop[i] = sc == DD_SCOPE_CLUSTER || (sc == DD_SCOPE_POD && about_changed(&own->v[i], &nm));
    }
    part = prev->m;
    part.pods = old;
    part.npods = nold;
    if (dd_rules_run_pod_parts(&part, opt, &gone) || !(at = malloc((nm.n + 1) * sizeof(*at))))
        goto out;
    for (i = 0; i < nm.n; i++)
        if ((at[nat] = pod_pos(s, nm.ns[i], nm.name[i])) != SIZE_MAX)
            nat++;
    if (claim_groups(prev, s, at, nat, &g) || !(gold = podspecs_at(&prev->m, &g)) ||
        !(gnow = podspecs_at(&s->m, &g)))
        goto out;
    part.pods = gold;
    part.npods = g.n;
    if (dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_CLAIM, &gone) ||
        run_quotas(&prev->m, &nm, opt, &gone) || gone.oom)
        goto out;
    rc = 1; /* a finding prev does not have: the rules did not say the same; a flat delta */
    for (i = 0; i < gone.n; i++)
        if (!drop_equal(own, drop, fb, s->gone, &gone.v[i]))
            goto out;
    for (i = 0; own && i < own->n; i++)
        if (!drop[i])
            dd_findings_copy(&s->f, &own->v[i]);
    *kept = s->f.n;
    part = s->m;
    part.pods = now;
    part.npods = nnow;
    rc = s->f.oom || dd_rules_run_scoped(&s->m, opt, 1u << DD_SCOPE_CLUSTER, &s->f) ||
         dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_POD, &s->f) ||
         dd_rules_run_pod_parts(&part, opt, &s->f) || run_quotas(&s->m, &nm, opt, &s->f) ? -1
                                                                                          : 0;
    part.pods = gnow;
    part.npods = g.n;
    if (!rc && dd_rules_run_scoped(&part, opt, 1u << DD_SCOPE_CLAIM, &s->f))
        rc = -1;
out:
    if (!rc) {
        s->fbase = (struct snapshot *)fb;
        atomic_fetch_add(&s->fbase->refs, 1);
    } else {
        free(s->gone);
        s->gone = NULL;
        dd_findings_release(&s->f);
    }
    free(g.v);
    free(g.in);
    free(gold);
    free(gnow);
    free(at);
    free(drop);
    dd_findings_release(&gone);
    free(nm.ns);
    free(nm.name);
    free(now);
    free(old);
    return rc;
}

void snapshot_foreach_finding(const struct snapshot *s,
                              void (*fn)(const struct dd_finding *f, void *ctx), void *ctx)
{
    const struct dd_findings *b = s->fbase ? &s->fbase->f : NULL, *o = &s->f;
    size_t i = 0, j = 0;

    while ((b && i < b->n) || j < o->n) {
        if (b && i < b->n && bit(s->gone, i))
            i++;
        else if (b && i < b->n && (j == o->n || dd_finding_cmp(&b->v[i], &o->v[j]) <= 0))
            fn(&b->v[i++], ctx);
        else
            fn(&o->v[j++], ctx);
    }
}

static void copy_one(const struct dd_finding *f, void *ctx)
{
    dd_findings_copy(ctx, f);
}

int snapshot_findings(const struct snapshot *s, struct dd_findings *out)
{
    snapshot_foreach_finding(s, copy_one, out);
    return out->oom ? -1 : 0;
}

size_t snapshot_nfindings(const struct snapshot *s)
{
    size_t n = s->f.n, i;

    if (s->fbase) {
        n += s->fbase->f.n;
        for (i = 0; i < (s->fbase->f.n + 63) / 64; i++)
            n -= (size_t)__builtin_popcountll(s->gone[i]);
    }
    return n;
}

/* ---- whose diagnosis may change ----------------------------------------------------- */

/* A cursor over a snapshot's findings in their order (snapshot_foreach_finding's). */
struct fcursor {
    const struct snapshot *s;
    size_t i, j;
};

static const struct dd_finding *fcursor_next(struct fcursor *c)
{
    const struct dd_findings *b = c->s->fbase ? &c->s->fbase->f : NULL, *o = &c->s->f;

    while (b && c->i < b->n && bit(c->s->gone, c->i))
        c->i++;
    if (b && c->i < b->n && (c->j == o->n || dd_finding_cmp(&b->v[c->i], &o->v[c->j]) <= 0))
        return &b->v[c->i++];
    return c->j < o->n ? &o->v[c->j++] : NULL;
}

/* Equal findings of two snapshots mostly share their strings (dd_findings_copy): compared by
 * address first. */
static int finding_cmp(const struct dd_finding *a, const struct dd_finding *b)
{
    if (a == b || (a->code == b->code && a->message == b->message && a->fix == b->fix &&
                   a->obj.name == b->obj.name && a->obj.namespace_ == b->obj.namespace_ &&
                   a->obj.kind == b->obj.kind && a->obj.api_version == b->obj.api_version &&
                   a->file == b->file && a->line == b->line && a->col == b->col &&
                   a->severity == b->severity && a->scope_class == b->scope_class &&
                   a->scope_driver == b->scope_driver && a->scope_node == b->scope_node))
        return 0;
    return dd_finding_cmp(a, b);
}

/* The Pods named, and the namespaces whose every Pod is, a diagnosis of which may change. */
struct reach {
    struct names pods; /* pods.ns/name; pods.cns: the namespaces */
    size_t cap, capns;
    int all;
};

static int reach_pod(struct reach *r, const char *ns, const char *name)
{
    if (r->pods.n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        const char **a = realloc(r->pods.ns, cap * sizeof(*a)), **b;
        if (a)
            r->pods.ns = a;
        if (!a || !(b = realloc(r->pods.name, cap * sizeof(*b))))
            return -1;
        r->pods.name = b;
        r->cap = cap;
    }
    r->pods.ns[r->pods.n] = ns ? ns : "";
    r->pods.name[r->pods.n++] = name;
    return 0;
}

static int reach_ns(struct reach *r, const char *ns)
{
    if (in_claim_ns(&r->pods, ns))
        return 0;
    if (r->pods.ncns == r->capns) {
        size_t cap = r->capns ? 2 * r->capns : 16;
        const char **a = realloc(r->pods.cns, cap * sizeof(*a));
        if (!a)
            return -1;
        r->pods.cns = a;
        r->capns = cap;
    }
    r->pods.cns[r->pods.ncns++] = ns ? ns : "";
    return 0;
}

/* What f (a finding one snapshot has and the other not) reaches, into r. */
static int reach_finding(struct reach *r, const struct dd_finding *f)
{
    switch (diag_finding_reach(f)) {
    case DIAG_REACH_NONE:
        return 0;
    case DIAG_REACH_POD:
        return reach_pod(r, f->obj.namespace_, f->obj.name);
    case DIAG_REACH_NAMESPACE:
        return reach_ns(r, f->obj.namespace_);
    default:
        r->all = 1;
        return 0;
    }
}

/* The object an Event (old or new version) is about, when a Pod. */
static int reach_event(struct reach *r, const cJSON *e)
{
    const cJSON *about = dd_json_path(e, "involvedObject", NULL);
    const char *kind;

    if (!about)
        about = dd_json_path(e, "regarding", NULL);
    kind = dd_json_str(about, "kind", NULL);
    if (!kind || strcasecmp(kind, "Pod"))
        return 0; /* a diagnosis reads the Events about its pod only */
    return dd_json_str(about, "name", NULL)
               ? reach_pod(r, dd_json_str(about, "namespace", NULL),
                           dd_json_str(about, "name", NULL))
               : 0;
}

/* 1 when s patched prev's model (the same base) and lies as a layer over prev, or over prev's
 * fbase: what changed is then in the positions replaced and the layers, not in every object
 * and finding. */
static int layered_from(const struct snapshot *prev, const struct snapshot *s)
{
    return s->base == (prev->base ? prev->base : prev) && s->fbase &&
           (s->fbase == prev || s->fbase == prev->fbase) && s->m.npods == prev->m.npods;
}

/* The findings of v[0..n) and w[0..k) (each sorted) that the other has not, into r. */
static int reach_diff(struct reach *r, const struct dd_finding *v, size_t n,
                      const struct dd_finding *w, size_t k)
{
    size_t i = 0, j = 0;

    while ((i < n || j < k) && !r->all) {
        int c = i == n ? 1 : j == k ? -1 : finding_cmp(&v[i], &w[j]);
        if (c && reach_finding(r, c < 0 ? &v[i] : &w[j]))
            return -1;
        i += c <= 0;
        j += c >= 0;
    }
    return 0;
}

/* snapshot_affected_pods' reach where layered_from(prev, s): the Pods replaced since prev
 * (positions of s->moved that hold another podspec), the findings of fbase that one of them
 * drops and the other not, and their own that differ.  -1 on ENOMEM. */
static int layered_reach(const struct snapshot *prev, const struct snapshot *s, struct reach *r)
{
    const struct dd_findings *b = &s->fbase->f;
    size_t i, w, nw = (b->n + 63) / 64;

    for (i = 0; i < s->nmoved; i++) {
        const struct dra_podspec *p = s->m.pods[s->moved[i]];
        if (p != prev->m.pods[s->moved[i]] && reach_pod(r, p->o.ns, p->o.name))
            return -1;
    }
    for (w = 0; w < nw && !r->all; w++) {
        uint64_t x = s->gone[w] ^ (prev == s->fbase ? 0 : prev->gone[w]);
        while (x) {
            if (reach_finding(r, &b->v[w * 64 + (size_t)__builtin_ctzll(x)]))
                return -1;
            x &= x - 1;
        }
    }
    return prev == s->fbase ? reach_diff(r, NULL, 0, s->f.v, s->f.n)
                            : reach_diff(r, prev->f.v, prev->f.n, s->f.v, s->f.n);
}

int snapshot_affected_pods(const struct snapshot *prev, const struct snapshot *s,
                           void (*fn)(void *ctx, const char *ns, const char *name), void *ctx)
{
    struct keys pods = { NULL, 0, 0 }, gone = { NULL, 0, 0 }, came = { NULL, 0, 0 };
    struct keys events = { NULL, 0, 0 };
    struct reach r = { { NULL, NULL, 0, NULL, 0 }, 0, 0, 0 };
    struct fcursor a = { prev, 0, 0 }, b = { s, 0, 0 };
    struct ptrset named = { NULL, 16 };
    const struct dd_finding *fa, *fb;
    size_t i;
    int rc;

    if (!s->steps.delta || !prev->kinds || !s->kinds)
        return 1;
    if (s->steps.patched && layered_from(prev, s)) {
        rc = layered_reach(prev, s, &r);
        goto told;
    }
    if ((rc = changed_objects(prev, s, &pods, &gone, &came, &events)) ||
        (rc = assumed_changed(prev, s, &gone, &came)))
        goto out;
    rc = -1;
    for (i = 0; i < pods.n; i++)
        if (dd_json_str(pods.v[i], "metadata", "name", NULL) &&
            reach_pod(&r, dd_json_str(pods.v[i], "metadata", "namespace", NULL),
                      dd_json_str(pods.v[i], "metadata", "name", NULL)))
            goto out;
    for (i = 0; i < events.n; i++)
        if (reach_event(&r, events.v[i]))
            goto out;
    for (i = 0; i < gone.n + came.n; i++)
        if (reach_ns(&r, dd_json_str(i < gone.n ? gone.v[i] : came.v[i - gone.n], "metadata",
                                     "namespace", NULL)))
            goto out;
    /* The findings that one has and the other not: both lists are in one order. */
    fa = fcursor_next(&a);
    fb = fcursor_next(&b);
    while ((fa || fb) && !r.all) {
        int c = !fa ? 1 : !fb ? -1 : finding_cmp(fa, fb);
        if (c && reach_finding(&r, c < 0 ? fa : fb))
            goto out;
        if (c <= 0)
            fa = fcursor_next(&a);
        if (c >= 0)
            fb = fcursor_next(&b);
    }
    rc = 0;
told:
    if (rc)
        goto out;
    rc = 1;
    if (r.all)
        goto out;
    rc = -1;
    while (named.cap < 2 * r.pods.n + 2)
        named.cap *= 2;
    if (!(named.v = calloc(named.cap, sizeof(*named.v))))
        goto out;
    /* Each pod once (one may be named by its two versions, its Event and its findings). */
    for (i = 0; i < r.pods.n; i++) {
        const struct dra_podspec *p = snapshot_pod(s, r.pods.ns[i], r.pods.name[i]);
        if (p && !in_claim_ns(&r.pods, p->o.ns) && !ptrset_put(&named, (const cJSON *)p))
            fn(ctx, p->o.ns, p->o.name);
    }
    for (i = 0; r.pods.ncns && i < s->m.npods; i++)
        if (in_claim_ns(&r.pods, s->m.pods[i]->o.ns))
            fn(ctx, s->m.pods[i]->o.ns, s->m.pods[i]->o.name);
    rc = 0;
out:
    free(pods.v);
    free(gone.v);
    free(came.v);
    free(events.v);
    free(named.v);
    free(r.pods.ns);
    free(r.pods.name);
    free(r.pods.cns);
    return rc;
}

/* s's findings all in s->f, without a layer; -1 on ENOMEM (s unchanged). */
static int unlayer(struct snapshot *s)
{
    struct dd_findings all = DD_FINDINGS_INIT;

    if (snapshot_findings(s, &all)) {
        dd_findings_release(&all);
        return -1;
    }
    dd_findings_release(&s->f);
    s->f = all;
    free(s->gone);
    s->gone = NULL;
    snapshot_free(s->fbase);
    s->fbase = NULL;
    return 0;
}

/* s->cluster_pos from s->f (all of s's findings); -1 on ENOMEM. */
static int cluster_positions(struct snapshot *s)
{
    const char *code = NULL;
    enum dd_scope sc = DD_SCOPE_CLUSTER;
    size_t i;

    if (!(s->cluster_pos = malloc((s->f.n + 1) * sizeof(*s->cluster_pos))))
        return -1;
    for (i = 0; i < s->f.n; i++) {
        if (s->f.v[i].code != code)
            sc = scope_of(code = s->f.v[i].code);
        if (sc == DD_SCOPE_CLUSTER)
            s->cluster_pos[s->ncluster_pos++] = i;
    }
    return 0;
}

/* snapshot_build, or snapshot_update when prev is not NULL (snapshot_patch when whole is
 * not NULL). */
static struct snapshot *build(const struct snapshot *prev, cJSON *owned, const cJSON **borrowed,
                              size_t n, const struct snapshot_sars *sars,
                              struct dra_cel_cache *cel, const struct rule_options *opt,
                              enum snapshot_whole *whole, struct dd_err *err)
{
    struct snapshot *s = calloc(1, sizeof(*s));
    struct keys patched = { NULL, 0, 0 };
    struct rule_options ropt = RULE_OPTIONS_INIT;
    struct timespec t;
    const cJSON *it;
    size_t i, kept = 0;
    int rc = 1, inserted = 0, shared;

    if (!s) {
        cJSON_Delete(owned);
        free(borrowed);
        dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->objects = owned;
    s->borrowed = borrowed;
    s->nborrowed = n;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    if (prev && (rc = patch_model(prev, s, &patched)) == 0 &&
        (rc = patch_assumes(s, &patched, 2)) != 0) {
        unpatch(s);
        patched.n = 0;
    }
    if (prev && rc > 0)
        inserted = !(rc = patch_inserts(prev, s, &s->steps.whole));
    if (rc < 0)
        goto oom;
    if (rc && whole) {
        *whole = s->steps.whole != SNAPSHOT_PATCHED ? s->steps.whole : SNAPSHOT_WHOLE_UNKEPT;
        free(patched.v);
        snapshot_free(s); /* untouched: its borrowed array goes */
        return NULL;
    }
    if (!rc) {
        s->steps.patched = 1;
        s->steps.whole = SNAPSHOT_PATCHED;
        s->steps.model = lap(&t);
        goto evidence;
    }
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
    /* A full build after prev is for changed claims mostly (an allocation is every pod's
     * fit): prev's slices are these, and their devices' CEL values, ~700 bytes each, are
     * shared rather than built twice and held twice while prev lives. */
    shared = prev && !owned && dra_model_slices_are(&prev->m, borrowed, n);
    if (shared)
        dra_model_borrow_slices(&s->m, &prev->m);
    /* What an update compares, found while the model reads the object anyway. */
    if (!(s->kinds = malloc(n + 1)))
        goto oom;
    for (i = 0; i < n; i++) {
        s->kinds[i] = (unsigned char)tracked(borrowed[i]);
        if (shared && dra_is_slice(borrowed[i]))
            s->m.nobjects++;
        else if (dra_model_add(&s->m, borrowed[i], NULL, 0) != DD_OK)
            goto oom;
    }
    /* Room for the claims that updates patching this model may add (patch_inserts). */
    if ((!owned && dra_model_reserve_claims(&s->m, s->m.nclaims / 4 + 64) != DD_OK) ||
        dra_model_finish(&s->m) != DD_OK)
        goto oom;
    s->steps.model = lap(&t);
    s->assumed = diag_assume_rejected_claims(&s->m);
    cJSON_ArrayForEach(it, s->assumed)
        if (dra_model_add(&s->m, it, NULL, 0) != DD_OK)
            goto oom;
    if (assumed_namespaces(s->assumed, &s->assumed_ns, &s->nassumed_ns))
        goto oom;
    if (!s->m.claims_gen) /* the stand-ins are claims some pods resolve to */
        dra_model_resolve_claims(&s->m, s->m.pods, s->m.npods);
    s->steps.assume = lap(&t);
    atomic_init(&s->claims_used, s->m.nclaims);
    if (index_pods(s) || claim_users(s))
        goto oom;
evidence:
    if (sars && collect_sar(s, sars))
        goto oom;
    s->m.sar = s->sar;
    s->m.nsar = s->nsar;
    lap(&t);
    if (opt)
        ropt = *opt;
    /* DevicesDoNotFit's allocator inventory reads no Pod: built once per base, not per Pod. */
    if (!ropt.inventory && (!ropt.surface || ropt.surface == DD_LIVE)) {
        ropt.surface = DD_LIVE;
        if (!s->base && (!(s->inv = dd_rules_inventory_new(&s->m, &ropt)) ||
                         dd_rules_inventory_remember(s->inv) ||
                         !(s->cache = dd_rules_cache_new(&s->m))))
            goto oom;
        ropt.inventory = s->base ? s->base->inv : s->inv;
        ropt.cache = s->base ? s->base->cache : s->cache;
    }
    /* Changed Events are no changed Pods: their update is a flat delta, the EVENTS rules
     * rerun. */
    rc = 1;
    if (prev && s->steps.patched && !inserted &&
        (rc = layer_rules(prev, s, &ropt, &patched, &kept)) < 0)
        goto oom;
    if (prev && rc) {
        /* A flat delta reads every finding of prev's. */
        struct dd_findings all = DD_FINDINGS_INIT;
        const struct dd_findings *pf = &prev->f;
        if (prev->fbase && !snapshot_findings(prev, &all))
            pf = &all;
        rc = all.oom ? -1 : delta_rules(prev, pf, s, &ropt,
                                        s->steps.patched && !inserted ? &patched : NULL, &kept);
        dd_findings_release(&all);
        if (rc < 0)
            goto oom;
    }
    s->steps.delta = !rc;
    if (rc && dd_rules_run(&s->m, &ropt, &s->f))
        goto oom;
    /* One order whatever the objects' was: a pod's diagnosis takes the first finding of a
     * code under a class or driver, which must not change with the way the list was made.
     * The kept findings are in it already. */
    dd_findings_sort_tail(&s->f, rc ? 0 : kept);
    s->steps.rules = lap(&t);
    /* Without it, diag_pod_indexed looks at every finding.  A layer's lies over fbase's; after
     * a flat delta most findings are prev's, or its fbase's: that index is patched. */
    if (s->fbase &&
        !(s->ix = diag_index_layer(s->fbase->ix, s->gone,
                                   prev->fbase == s->fbase ? prev->gone : NULL, &s->f)) &&
        unlayer(s))
        goto oom;
    if (!s->ix && s->steps.delta) {
        const struct snapshot *pb = prev->fbase ? prev->fbase : prev;
        if (pb->ix)
            s->ix = diag_index_patch(pb->ix, &pb->f, &s->f);
    }
    if (!s->fbase && !s->ix)
        s->ix = diag_index_new(&s->f);
    if (!s->fbase && cluster_positions(s))
        goto oom;
    s->steps.index = lap(&t);
    free(patched.v);
    return s;
oom:
    free(patched.v);
    snapshot_free(s);
    dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
    return NULL;
}

struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                const struct rule_options *opt, struct dd_err *err)
{
    return build(NULL, owned, borrowed, n, sars, cel, opt, NULL, err);
}

struct snapshot *snapshot_update(const struct snapshot *prev, const cJSON **borrowed, size_t n,
                                 const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                 const struct rule_options *opt, struct dd_err *err)
{
    return build(prev, NULL, borrowed, n, sars, cel, opt, NULL, err);
}

struct snapshot *snapshot_patch(const struct snapshot *prev, const cJSON **borrowed, size_t n,
                                const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                const struct rule_options *opt, enum snapshot_whole *whole,
                                struct dd_err *err)
{
    *whole = SNAPSHOT_PATCHED;
    return build(prev, NULL, borrowed, n, sars, cel, opt, prev ? whole : NULL, err);
}

const struct dra_podspec *snapshot_pod(const struct snapshot *s, const char *ns, const char *name)
{
    size_t pos = pod_pos(s, ns, name);

    return pos == SIZE_MAX ? NULL : s->m.pods[pos];
}

void snapshot_free(struct snapshot *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) > 1)
        return;
    diag_index_free(s->ix);
    dd_findings_release(&s->f);
    free(s->gone);
    free(s->cluster_pos);
    snapshot_free(s->fbase);
    dd_rules_inventory_free(s->inv);
    dd_rules_cache_free(s->cache);
    if (s->base)
        unpatch(s); /* which leaves pod_idx to base */
    else
        dra_model_release(&s->m);
    cJSON_Delete(s->objects);
    free(s->borrowed);
    free(s->kinds);
    cJSON_Delete(s->assumed);
    free(s->assumed_ns);
    free(s->sar);
    free(s->sar_strings);
    free(s->pod_idx);
    free(s->cu_start);
    free(s->cu_pos);
    free(s);
}
