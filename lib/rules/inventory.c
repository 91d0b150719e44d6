/*
 * inventory.c - the devices the slices publish, and the pools they come in, against what
 * claims ask of them.
 *
 *   PoolIncomplete                   fewer slices of the newest generation than
 *                                    resourceSliceCount says, or slices disagreeing on it
 *   PoolInvalid                      the same device name twice in a pool (one pool name
 *                                    published from several nodes)
 *   SliceNodeSelectionMatchesNoNode  a slice's nodeName or nodeSelector matches no node
 *   DeviceTaintNotTolerated          every device the request could get has a taint it does
 *                                    not tolerate (1.36, DRADeviceTaints)
 *   PrioritizedListExhausted         no firstAvailable alternative can be satisfied, and why
 *   AllocationModeAllUnsatisfiable   allocationMode All with no device, or more than 32 on a node
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/drivers.h"
#include "model/kubever.h"
#include "model/nodefit.h"

/* The most devices allocationMode All may get (resource.AllocationResultsMaxSize). */
#define ALL_MAX 32

/* ---- pools ---------------------------------------------------------------- */

/* One pool: its slices (indices into m->slices) at the newest generation. */
struct pool {
    const char *driver, *name;
    int64_t generation;
    size_t *slice;
    size_t n, cap;
};

struct pools {
    struct pool *v;
    size_t n;
};

static void pools_free(struct pools *ps)
{
    size_t i;

    for (i = 0; i < ps->n; i++)
        free(ps->v[i].slice);
    free(ps->v);
}

/* Groups the slices by (driver, pool), keeping the newest generation as GatherPools does.
 * 0, or -1 on ENOMEM. */
static int gather(const struct dra_model *m, struct pools *ps)
{
    size_t i, h, cap = 16, *ix;

    ps->n = 0;
    while (cap < 2 * m->nslices + 2)
        cap *= 2;
    ps->v = calloc(m->nslices + 1, sizeof(*ps->v));
    ix = calloc(cap, sizeof(*ix)); /* pools by (driver, name): 1 + index */
    if (!ps->v || !ix) {
        free(ix);
        return -1;
    }
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        struct pool *p = NULL;
        for (h = dra_key_hash(s->driver, s->pool) & (cap - 1); ix[h] && !p; h = (h + 1) & (cap - 1))
            if (STRIEQ(ps->v[ix[h] - 1].driver, s->driver) && STRIEQ(ps->v[ix[h] - 1].name, s->pool))
                p = &ps->v[ix[h] - 1];
        if (!p) {
            ix[h] = ps->n + 1;
            p = &ps->v[ps->n++];
            p->driver = s->driver;
            p->name = s->pool;
            p->generation = s->generation;
        }
        if (s->generation < p->generation)
            continue; /* out-dated: dropped silently */
        if (s->generation > p->generation) {
            p->generation = s->generation;
            p->n = 0;
        }
        if (p->n == p->cap) {
            size_t ncap = p->cap ? p->cap * 2 : 4, *nv = realloc(p->slice, ncap * sizeof(*nv));
            if (!nv) {
                free(ix);
                return -1;
            }
            p->slice = nv;
            p->cap = ncap;
        }
        p->slice[p->n++] = i;
    }
    free(ix);
    return 0;
}

void rule__check_pool_complete(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX];
    struct pools ps;
    size_t i, j;

    if (gather(m, &ps)) {
        ctx->out->oom = 1;
        pools_free(&ps);
        return;
    }
    for (i = 0; i < ps.n; i++) {
        const struct pool *p = &ps.v[i];
        const struct dra_slice *first = &m->slices[p->slice[0]];
        int64_t want = first->slice_count;
        int disagree = 0;
        for (j = 1; j < p->n; j++)
            disagree |= m->slices[p->slice[j]].slice_count != want;
        if (!disagree && (int64_t)p->n >= want)
            continue;
        if (disagree)
            snprintf(msg, sizeof(msg),
                     "Pool %s of driver %s: the slices of generation %lld disagree on "
                     "resourceSliceCount (ResourceSlice %s says %lld, others differ), so whether "
                     "the scheduler sees the pool complete depends on the order it reads them; "
                     "an incomplete pool's devices are skipped (\"cannot allocate all claims\").",
                     p->name, p->driver, (long long)p->generation, first->o.name,
                     (long long)want);
        else
            snprintf(msg, sizeof(msg),
                     "Pool %s of driver %s declares resourceSliceCount %lld, but only %zu "
                     "ResourceSlice(s) of generation %lld exist (%s...): the scheduler skips the "
                     "devices of an incomplete pool (\"cannot allocate all claims\"), and a request "
                     "for all devices fails (\"asks for all devices, but resource pool %s is "
                     "currently being updated\").",
                     p->name, p->driver, (long long)want, p->n, (long long)p->generation,
                     first->o.name, p->name);
        snprintf(fix, sizeof(fix), "Let driver %s publish every slice of the pool with one count "
                 "(its plugin's logs say why one is missing: RBAC, a crash mid-update), or set "
                 "resourceSliceCount to the slices it publishes.", p->driver);
        scope(ctx, emit(ctx, ctx->rule->severity, &first->o, 0, msg, fix), NULL, p->driver,
              *first->node ? first->node : NULL);
    }
    pools_free(&ps);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when a device name occurs twice in pool p, 0 when not, -1 on ENOMEM. */
static int has_duplicate(const struct dra_model *m, const struct pool *p)
{
    const char **names;
    size_t j, a, n = 0;
    int dup = 0;

    for (j = 0; j < p->n; j++)
        n += m->slices[p->slice[j]].ndev;
    if (n < 2)
        return 0;
    if (!(names = malloc(n * sizeof(*names))))
        return -1;
    for (j = 0, n = 0; j < p->n; j++)
        for (a = 0; a < m->slices[p->slice[j]].ndev; a++)
            names[n++] = m->slices[p->slice[j]].dev[a].name;
    qsort(names, n, sizeof(*names), cmp_str);
    for (j = 1; j < n && !dup; j++)
        dup = STRIEQ(names[j - 1], names[j]);
    free(names);
    return dup;
}

void rule__check_pool_valid(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], text[300];
    struct pools ps;
    size_t i, j, k, a, b, len;

    if (gather(m, &ps)) {
        ctx->out->oom = 1;
        pools_free(&ps);
        return;
    }
    for (i = 0; i < ps.n; i++) {
        const struct pool *p = &ps.v[i];
        const struct dra_slice *s1 = NULL, *s2 = NULL;
        const char *dup = NULL;
        int twice = has_duplicate(m, p);
        if (twice < 0) {
            ctx->out->oom = 1;
            break;
        }
        /* Which pair comes first, in the order the scheduler meets them. */
        for (j = 0; twice && j < p->n && !dup; j++)
            for (k = j; k < p->n && !dup; k++) {
                const struct dra_slice *x = &m->slices[p->slice[j]], *y = &m->slices[p->slice[k]];
                for (a = 0; a < x->ndev && !dup; a++)
                    for (b = j == k ? a + 1 : 0; b < y->ndev && !dup; b++)
                        if (STRIEQ(x->dev[a].name, y->dev[b].name)) {
                            dup = x->dev[a].name;
                            s1 = x;
                            s2 = y;
                        }
            }
        if (!dup)
            continue;
        if (s1 != s2 && *s1->node && *s2->node && !STRIEQ(s1->node, s2->node))
            snprintf(msg, sizeof(msg),
                     "Pool %s of driver %s holds device %s twice: ResourceSlices %s (node %s) and "
                     "%s (node %s) publish the same pool name from different nodes, so the "
                     "scheduler sees one invalid pool. ",
                     p->name, p->driver, dup, s1->o.name, s1->node, s2->o.name, s2->node);
        else
            snprintf(msg, sizeof(msg),
                     "Pool %s of driver %s holds device %s twice (ResourceSlice %s%s%s), so the "
                     "scheduler treats the pool as invalid. ",
                     p->name, p->driver, dup, s1->o.name, s1 != s2 ? " and " : "",
                     s1 != s2 ? s2->o.name : "");
        len = strlen(msg);
        kv_invalid_pool_text(rule__kube_minor(ctx), p->name, dup, text, sizeof(text));
        if (rule__kube_minor(ctx) <= 34)
            cat(msg, sizeof(msg), &len,
                "Kubernetes 1.34 fails the allocation of every claim on a node that sees it, "
                "whatever the claim's driver (\"%s\").", text);
        else
            cat(msg, sizeof(msg), &len,
                "Its devices are skipped; a claim that cannot be allocated without them fails "
                "with \"%s\".", text);
        snprintf(fix, sizeof(fix), "Make driver %s name its pools uniquely (node-local pools "
                 "after their node) and its devices uniquely within a pool.", p->driver);
        scope(ctx, emit(ctx, ctx->rule->severity, &s1->o, 0, msg, fix), NULL, p->driver,
              *s1->node ? s1->node : NULL);
    }
    pools_free(&ps);
}

static void node_names(const struct dra_model *m, char *buf, size_t size)
{
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; i < m->nodes.n && i < 8; i++)
        cat(buf, size, &len, "%s%s", i ? ", " : "", m->nodes.v[i].name);
    if (m->nodes.n > 8)
        cat(buf, size, &len, ", ...");
}

void rule__check_slice_nodes(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], names[512];
    enum dd_severity sev = m->live || ctx->opt->complete ? ctx->rule->severity : DD_SEV_WARNING;
    size_t i, j;

    /* Without the cluster's nodes there is nothing to match. */
    if (!m->nodes.n)
        return;
    node_names(m, names, sizeof(names));
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        size_t match = 0;
        if (*s->node) {
            if (dra_find_node(m, s->node))
                continue;
            snprintf(msg, sizeof(msg),
                     "ResourceSlice %s (driver %s) is published for node %s, but no Node has that "
                     "name (nodes: %s): its %zu device(s) are on no node the scheduler considers "
                     "(\"cannot allocate all claims\" everywhere).%s",
                     s->o.name, s->driver, s->node, names, s->ndev,
                     m->live ? "" : " (If the input does not hold every Node, ignore this; "
                     "--complete makes it an error.)");
            snprintf(fix, sizeof(fix), "Make the driver publish its node's own name (the Node's "
                     "metadata.name, often the hostname and not the FQDN: its NODE_NAME env comes "
                     "from spec.nodeName).");
            scope(ctx, emit(ctx, sev, &s->o, 0, msg, fix), NULL, s->driver, NULL);
            continue;
        }
        if (!s->node_selector)
            continue;
        for (j = 0; j < m->nodes.n; j++)
            match += fit_node_selector_matches(s->node_selector, m->nodes.v[j].json);
        if (match)
            continue;
        snprintf(msg, sizeof(msg),
                 "ResourceSlice %s (driver %s) selects its nodes with a nodeSelector that matches "
                 "none of the %zu node(s) (%s): its %zu device(s) are available nowhere "
                 "(\"cannot allocate all claims\").%s",
                 s->o.name, s->driver, m->nodes.n, names, s->ndev,
                 m->live ? "" : " (If the input does not hold every Node, ignore this; "
                 "--complete makes it an error.)");
        snprintf(fix, sizeof(fix), "Label the nodes that reach these devices as the slice's "
                 "nodeSelector requires, or correct the driver's node selection.");
        scope(ctx, emit(ctx, sev, &s->o, 0, msg, fix), NULL, s->driver, NULL);
    }
}

/* The driver names the selectors of the class (and request) pin, into out. */
void rule__request_drivers(const struct dra_model *m, const struct dra_request *r,
                            struct rule_names *out)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
    const struct dra_selector *sets[2] = { cls ? cls->sel : NULL, r->sel };
    size_t counts[2] = { cls ? cls->nsel : 0, r->nsel }, k, i, j, n;

    for (k = 0; k < 2; k++)
        for (i = 0; i < counts[k]; i++) {
            const struct cel_driver_ref *refs;
            if (!sets[k][i].prog ||
                cel_program_drivers(sets[k][i].prog, &refs, &n) != CEL_DRIVERS_SET)
                continue;
            for (j = 0; j < n; j++)
                names_add(out, refs[j].name);
        }
}

/* ---- what the published devices offer a request ---------------------------------------- */

static const char *const filtering[] = { "NoSchedule", "NoExecute", NULL };

struct offer {
    size_t matching;      /* devices the request's class and selectors accept */
    size_t tolerated;     /* of them, with no taint the request does not tolerate */
    size_t max_per_node;  /* matching devices on the node with most */
    const char *node_max;
    const cJSON *taint;   /* a taint that keeps a matching device away */
    const char *tainted;  /* that device */
};

/* Taints of dev: its own, and those of the DeviceTaintRules that select it and take effect
 * under gates g (kv_taint_rules_effective: their version served, their gate on). */
static const cJSON *untolerated(const struct dra_model *m, const struct dra_slice *s,
                                const struct dra_device *d, const cJSON *tolerations,
                                const struct kv_gates *g)
{
    const cJSON *t = fit_untolerated(tolerations, dd_json_arr(d->json, "taints", NULL), filtering);
    size_t i;

    for (i = 0; !t && i < m->resource_other.n; i++) {
        const struct dra_obj *o = &m->resource_other.v[i];
        const cJSON *sel = dd_json_path(o->json, "spec", "deviceSelector", NULL);
        const char *dr = dd_json_str(sel, "driver", NULL), *pool = dd_json_str(sel, "pool", NULL);
        const char *dev = dd_json_str(sel, "device", NULL);
        cJSON *arr;
        if (!STRIEQ(o->kind, "DeviceTaintRule") || (dr && !STRIEQ(dr, s->driver)) ||
            (pool && !STRIEQ(pool, s->pool)) || (dev && !STRIEQ(dev, d->name)) ||
            !kv_taint_rules_effective(g, rule__api_ver(o)))
            continue;
        /* A rule without a deviceSelector taints every device of the cluster. */
        if (!(arr = cJSON_CreateArray()))
            return NULL;
        cJSON_AddItemReferenceToArray(arr, (cJSON *)dd_json_path(o->json, "spec", "taint", NULL));
        if (fit_untolerated(tolerations, arr, filtering))
            t = dd_json_path(o->json, "spec", "taint", NULL);
        cJSON_Delete(arr);
    }
    return t;
}

/* The offers of one check's requests, worked out once per request key (rule__memo_get): the
 * class, the selectors' texts and, where taints matter, the tolerations. */
struct offers {
    const struct dra_model *m;
    struct rule_memo *memo;
    size_t *node_of;   /* per slice with a nodeName: the first slice with the same one */
    const struct kv_gates *taints; /* the gates taints are judged under; NULL: they do not filter */
    int tainted;       /* a device or a DeviceTaintRule has a taint: tolerations decide */
    int rules;         /* a DeviceTaintRule exists: any device may be tainted */
    struct rule_names publishers; /* drivers of the slices */
    int more;          /* more publishers than publishers holds */
};

static void offers_free(struct offers *of)
{
    rule__memo_free(of->memo);
    free(of->node_of);
}

/* Whether a DeviceTaintRule exists (*rules) or a device has taints of its own: without
 * either, every device is tolerated. */
static int taints_present(const struct dra_model *m, int *rules)
{
    size_t i;

    for (i = 0, *rules = 0; !*rules && i < m->resource_other.n; i++)
        *rules = STRIEQ(m->resource_other.v[i].kind, "DeviceTaintRule");
    if (*rules)
        return 1;
    for (i = 0; i < m->ndevices; i++)
        if (m->device_tainted[i])
            return 1;
    return 0;
}

/* 0, or -1 on ENOMEM (ctx->out->oom is set). */
static int offers_init(struct offers *of, struct rule_ctx *ctx, const struct kv_gates *taints)
{
    const struct dra_model *m = ctx->m;
    size_t cap = 16, *ix, i, h;

    memset(of, 0, sizeof(*of));
    of->m = m;
    of->taints = taints;
    while (cap < 2 * m->nslices + 2)
        cap *= 2;
    of->memo = rule__memo_new();
    of->node_of = calloc(m->nslices + 1, sizeof(*of->node_of));
    ix = calloc(cap, sizeof(*ix));
    if (!of->memo || !of->node_of || !ix) {
        free(ix);
        offers_free(of);
        ctx->out->oom = 1;
        return -1;
    }
    for (i = 0; i < m->nslices; i++) {
        const char *node = m->slices[i].node;
        if (!*node)
            continue;
        for (h = dra_key_hash("", node) & (cap - 1); ix[h] && !STRIEQ(m->slices[ix[h] - 1].node, node);
             h = (h + 1) & (cap - 1))
            ;
        if (!ix[h])
            ix[h] = i + 1;
        of->node_of[i] = ix[h] - 1;
    }
    free(ix);
    for (i = 0; i < m->nslices; i++) {
        names_add(&of->publishers, m->slices[i].driver);
        of->more |= of->publishers.n == MAX_NAMES && !names_has(&of->publishers, m->slices[i].driver);
    }
    of->tainted = taints && taints_present(m, &of->rules);
    return 0;
}

static void offer_of(const struct offers *of, const struct dra_class *cls,
                     const struct dra_request *r, struct offer *o)
{
    const struct dra_model *m = of->m;
    size_t i, k, *per = calloc(m->nslices + 1, sizeof(*per));

    memset(o, 0, sizeof(*o));
    for (i = 0; i < m->ndevices; i++) {
        const struct dra_slice *s = &m->slices[m->device_slice[i]];
        const cJSON *t;
        if (!dra_request_admits(m, cls, r, i))
            continue;
        o->matching++;
        t = of->tainted && (m->device_tainted[i] || of->rules)
                ? untolerated(m, s, m->devices[i], r->tolerations, of->taints) : NULL;
        if (!t)
            o->tolerated++;
        else if (!o->taint) {
            o->taint = t;
            o->tainted = m->devices[i]->name;
        }
        /* Per node: slices with the same nodeName count together. */
        if (per && *s->node) {
            k = of->node_of[m->device_slice[i]];
            if (++per[k] > o->max_per_node) {
                o->max_per_node = per[k];
                o->node_max = s->node;
            }
        }
    }
    free(per);
}

/* 1 when a slice of one of drivers is published (of any driver, when drivers is empty). */
static int published(const struct offers *of, const struct rule_names *drivers)
{
    const struct dra_model *m = of->m;
    size_t i;

    if (!drivers->n)
        return m->nslices > 0;
    for (i = 0; i < drivers->n; i++)
        if (names_has(&of->publishers, drivers->v[i]))
            return 1;
    for (i = 0; of->more && i < m->nslices; i++)
        if (names_has(drivers, m->slices[i].driver))
            return 1;
    return 0;
}

/* What the published devices offer request r of class cls; NULL on ENOMEM. */
static const struct offer *offer_get(struct offers *of, const struct dra_class *cls,
                                     const struct dra_request *r)
{
    char buf[1024], *tol = NULL;
    struct offer *o;
    int fresh;

    /* The tolerations' text is the key's last part (where taints decide): printed into buf,
     * as most are short, else allocated. */
    if (of->tainted && r->tolerations &&
        !(tol = cJSON_PrintPreallocated((cJSON *)r->tolerations, buf, sizeof(buf), 0) ? buf
                : cJSON_PrintUnformatted(r->tolerations)))
        return NULL;
    if ((o = rule__memo_get(of->memo, cls, r, tol, sizeof(*o), &fresh)) && fresh)
        offer_of(of, cls, r, o);
    if (tol != buf)
        free(tol);
    return o;
}

/* Device taints filter allocation when DRADeviceTaints is on (by default from 1.36): the gates
 * they are judged under, or NULL. */
static const struct kv_gates *taints_on(const struct rule_ctx *ctx)
{
    return rule__gate(ctx, KV_GATE_DEVICE_TAINTS) ? ctx->gates : NULL;
}

static void taint_one(struct rule_ctx *ctx, struct offers *of, const struct dra_claim *c,
                      const struct dra_request *r)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(ctx->m, r->class_name) : NULL;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    const struct offer *o;

    if (!cls)
        return;
    if (!(o = offer_get(of, cls, r))) {
        ctx->out->oom = 1;
        return;
    }
    if (!o->matching || o->tolerated)
        return;
    snprintf(msg, sizeof(msg),
             "%s %s: every one of the %zu device(s) request \"%s\" could get has a taint it does "
             "not tolerate (device %s: %s=%s:%s), and the scheduler skips tainted devices without "
             "saying so (\"cannot allocate all claims\").",
             c->o.kind, objname(&c->o, on, sizeof(on)), o->matching, r->name, o->tainted,
             dd_json_str(o->taint, "key", NULL) ? dd_json_str(o->taint, "key", NULL) : "",
             dd_json_str(o->taint, "value", NULL) ? dd_json_str(o->taint, "value", NULL) : "",
             dd_json_str(o->taint, "effect", NULL) ? dd_json_str(o->taint, "effect", NULL) : "");
    snprintf(fix, sizeof(fix), "Add a toleration for it to request \"%s\" (tolerations: [{key: "
             "%s, operator: Exists}]) if the device may be used so, or remove the taint (the "
             "driver's, or a DeviceTaintRule's).", r->name,
             dd_json_str(o->taint, "key", NULL) ? dd_json_str(o->taint, "key", NULL) : "...");
    scope(ctx, emit(ctx, ctx->rule->severity, &c->o, r->line, msg, fix), cls->o.name, NULL, NULL);
}

/* A pod evicted by the device taint manager (NoExecute). */
static void evicted(struct rule_ctx *ctx, const struct dra_podspec *p)
{
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(p->status, "conditions", NULL)) {
        const char *t = dd_json_str(it, "type", NULL), *r = dd_json_str(it, "reason", NULL);
        if (!t || !r || !STRIEQ(t, "DisruptionTarget") || !STRIEQ(r, "DeletionByDeviceTaintManager"))
            continue;
        snprintf(msg, sizeof(msg),
                 "Pod %s is being evicted by the device taint manager (DisruptionTarget: %s): a "
                 "device of its claims got a taint with effect NoExecute that its claim does not "
                 "tolerate.", objname(&p->o, on, sizeof(on)),
                 dd_json_str(it, "message", NULL) ? dd_json_str(it, "message", NULL) : r);
        snprintf(fix, sizeof(fix), "Find the taint on the claim's devices (kubectl get "
                 "resourceslices -o yaml; kubectl get devicetaintrules); tolerate it in the claim "
                 "with tolerationSeconds if the pod may finish its work first.");
        scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL, p->node);
        return;
    }
}

/* fn for every request (and firstAvailable alternative) of every claim not allocated yet,
 * with the offers of a context of its own (taints filtering when taints is set). */
static void each_open_request(struct rule_ctx *ctx, const struct kv_gates *taints,
                              void (*fn)(struct rule_ctx *ctx, struct offers *of,
                                         const struct dra_claim *c, const struct dra_request *r))
{
    const struct dra_model *m = ctx->m;
    struct offers of;
    size_t i, j, k;

    if (offers_init(&of, ctx, taints))
        return;
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        if (c->allocated)
            continue;
        for (j = 0; j < c->spec.nreq; j++) {
            fn(ctx, &of, c, &c->spec.req[j]);
            for (k = 0; k < c->spec.req[j].nsub; k++)
                fn(ctx, &of, c, &c->spec.req[j].sub[k]);
        }
    }
    offers_free(&of);
}

/* The pods the device taint manager evicts (the part of DeviceTaintNotTolerated that reads
 * podspecs, one at a time). */
void rule__check_device_taints_pods(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    if (!taints_on(ctx))
        return;
    for (i = 0; m->live && i < m->npods; i++)
        evicted(ctx, m->pods[i]);
}

void rule__check_device_taints(struct rule_ctx *ctx)
{
    int rules;

    if (!taints_on(ctx))
        return;
    /* Untainted devices are all tolerated: no request's offer needs computing. */
    if (taints_present(ctx->m, &rules))
        each_open_request(ctx, taints_on(ctx), taint_one);
    rule__check_device_taints_pods(ctx);
}

/* Why alternative r cannot be satisfied from the published devices, into why; 0 when it can
 * (or nobody can tell: no devices of its drivers are published). */
static int alternative_fails(struct rule_ctx *ctx, struct offers *of, const struct dra_request *r,
                             char *why, size_t size)
{
    const struct dra_model *m = ctx->m;
    const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
    struct rule_names drivers = { { 0 }, 0 };
    const struct offer *o;

    if (!r->class_name)
        return 0;
    if (!cls) {
        snprintf(why, size, "DeviceClass %s does not exist", r->class_name);
        return 1;
    }
    /* Judged only against a driver whose devices are published. */
    rule__request_drivers(m, r, &drivers);
    if (!published(of, &drivers))
        return 0;
    if (!(o = offer_get(of, cls, r))) {
        ctx->out->oom = 1;
        return 0;
    }
    if (!o->matching)
        snprintf(why, size, "no published device matches class %s and its selectors", cls->o.name);
    else if (!o->tolerated)
        snprintf(why, size, "all %zu matching device(s) have a taint it does not tolerate",
                 o->matching);
    else if (!r->all && (int64_t)o->tolerated < r->count)
        snprintf(why, size, "it needs %lld device(s), %zu match", (long long)r->count,
                 o->tolerated);
    else
        return 0;
    return 1;
}

void rule__check_first_available(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], why[400];
    struct offers of;
    size_t i, j, k, len;

    /* Without DRAPrioritizedList the API server drops firstAvailable. */
    if (!rule__gate(ctx, KV_GATE_PRIORITIZED_LIST) || offers_init(&of, ctx, taints_on(ctx)))
        return;
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        for (j = 0; j < c->spec.nreq; j++) {
            const struct dra_request *r = &c->spec.req[j];
            size_t failed = 0;
            if (!r->nsub || c->allocated)
                continue;
            for (k = 0; k < r->nsub; k++)
                failed += alternative_fails(ctx, &of, &r->sub[k], why, sizeof(why));
            if (failed != r->nsub)
                continue;
            len = 0;
            cat(msg, sizeof(msg), &len, "%s %s: request \"%s\" lists %zu alternatives "
                "(firstAvailable), and none can be satisfied, so the claim is never allocated "
                "(\"cannot allocate all claims\"):", c->o.kind, objname(&c->o, on, sizeof(on)),
                r->name, r->nsub);
            for (k = 0; k < r->nsub; k++) {
                alternative_fails(ctx, &of, &r->sub[k], why, sizeof(why));
                cat(msg, sizeof(msg), &len, " %s: %s;", r->sub[k].name, why);
            }
            msg[len - 1] = '.';
            snprintf(fix, sizeof(fix), "Add an alternative the cluster can give, or fix the one "
                     "that should work (its class, selectors or count).");
            emit(ctx, m->live ? ctx->rule->severity : DD_SEV_WARNING, &c->o, r->line, msg, fix);
        }
    }
    offers_free(&of);
}

static void all_one(struct rule_ctx *ctx, struct offers *of, const struct dra_claim *c,
                    const struct dra_request *r)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(ctx->m, r->class_name) : NULL;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    struct rule_names drivers = { { 0 }, 0 };
    const struct offer *o;
    int seen;

    if (!r->all || !cls)
        return;
    rule__request_drivers(ctx->m, r, &drivers);
    seen = drivers.n && published(of, &drivers);
    if (!(o = offer_get(of, cls, r))) {
        ctx->out->oom = 1;
        return;
    }
    if (o->max_per_node > ALL_MAX) {
        snprintf(msg, sizeof(msg),
                 "%s %s: request \"%s\" asks for all devices of class %s, but node %s has %zu "
                 "matching devices and one request can be allocated at most %d: the scheduler "
                 "gives up on that node without a word (\"cannot allocate all claims\").",
                 c->o.kind, objname(&c->o, on, sizeof(on)), r->name, cls->o.name, o->node_max,
                 o->max_per_node, ALL_MAX);
        snprintf(fix, sizeof(fix), "Narrow request \"%s\" with selectors to at most %d devices "
                 "per node, or ask for an exact count.", r->name, ALL_MAX);
        emit(ctx, ctx->rule->severity, &c->o, r->line, msg, fix);
    } else if (seen && !o->matching) {
        snprintf(msg, sizeof(msg),
                 "%s %s: request \"%s\" asks for all devices of class %s, and no published device "
                 "matches: allocation fails (\"cannot allocate all claims\"; the scheduler logs "
                 "\"no devices found\").", c->o.kind, objname(&c->o, on, sizeof(on)), r->name,
                 cls->o.name);
        snprintf(fix, sizeof(fix), "Check the class's and the request's selectors against the "
                 "devices (dra-doctor explain).");
        emit(ctx, ctx->m->live ? ctx->rule->severity : DD_SEV_WARNING, &c->o, r->line, msg, fix);
    }
}

void rule__check_all_mode(struct rule_ctx *ctx)
{
    each_open_request(ctx, NULL, all_one);
}
