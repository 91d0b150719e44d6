/*
 * snapshot.c - a live cluster's snapshot (see snapshot.h).
 */
#include "rules/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
            ;
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

struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                const struct rule_options *opt, struct dd_err *err)
{
    struct snapshot *s = calloc(1, sizeof(*s));
    struct timespec t;
    const cJSON *it;
    size_t i;

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
    lap(&t);
    if (dd_rules_run(&s->m, opt, &s->f))
        goto oom;
    s->steps.rules = lap(&t);
    if (index_pods(s))
        goto oom;
    s->ix = diag_index_new(&s->f); /* without it, diag_pod_indexed looks at every finding */
    s->steps.index = lap(&t);
    return s;
oom:
    snapshot_free(s);
    dd_failf(err, DD_ENOMEM, "out of memory building a snapshot");
    return NULL;
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
