/*
 * pools.c - what the scheduler's allocator makes of the published ResourceSlices before it looks
 * at any claim: which pools are complete, which are valid, which nodes each slice serves.
 *
 *   PoolIncomplete                  fewer slices of the newest generation than resourceSliceCount
 *                                   says, or slices of one generation disagreeing on it: the
 *                                   pool's devices are skipped
 *   PoolInvalid                     one device name twice in a pool (the same pool name published
 *                                   from several nodes): 1.34 fails every allocation on the node
 *   SliceNodeSelectionMatchesNoNode a slice's nodeName or nodeSelector matches no node
 *
 * Sources: k8s.io/dynamic-resource-allocation structured/internal/{stable,incubating}/pools_*.go (GatherPools,
 * addSlice: newest generation only; isIncomplete; duplicate device names), allocator_*.go.
 */
#include "rules_int.h"

#include <stdlib.h>

#include "kubever.h"
#include "nodefit.h"

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
    size_t i, j;

    ps->n = 0;
    if (!(ps->v = calloc(m->nslices + 1, sizeof(*ps->v))))
        return -1;
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        struct pool *p = NULL;
        for (j = 0; j < ps->n && !p; j++)
            if (STRIEQ(ps->v[j].driver, s->driver) && STRIEQ(ps->v[j].name, s->pool))
                p = &ps->v[j];
        if (!p) {
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
            size_t cap = p->cap ? p->cap * 2 : 4, *nv = realloc(p->slice, cap * sizeof(*nv));
            if (!nv)
                return -1;
            p->slice = nv;
            p->cap = cap;
        }
        p->slice[p->n++] = i;
    }
    return 0;
}

static int kube_minor(const struct rule_ctx *ctx)
{
    return ctx->opt->kube_minor ? ctx->opt->kube_minor : KV_DEFAULT_MINOR;
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

void rule__check_pool_valid(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX];
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
        /* Pools are small (a node's devices): pairs are cheap. */
        for (j = 0; j < p->n && !dup; j++)
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
        if (kube_minor(ctx) <= 34)
            cat(msg, sizeof(msg), &len,
                "Kubernetes 1.34 fails the allocation of every claim on a node that sees it, "
                "whatever the claim's driver (\"pool %s is invalid: duplicate device name %s\").",
                p->name, dup);
        else
            cat(msg, sizeof(msg), &len,
                "Its devices are skipped; a claim that cannot be allocated without them fails "
                "with \"invalid resource pools were encountered\".");
        snprintf(fix, sizeof(fix), "Make driver %s name its pools uniquely (node-local pools "
                 "after their node) and its devices uniquely within a pool.", p->driver);
        scope(ctx, emit(ctx, ctx->rule->severity, &s1->o, 0, msg, fix), NULL, p->driver,
              *s1->node ? s1->node : NULL);
    }
    pools_free(&ps);
}

/* The Node called name, or NULL. */
static const struct dra_obj *node_named(const struct dra_model *m, const char *name)
{
    size_t i;

    for (i = 0; i < m->nodes.n; i++)
        if (STRIEQ(m->nodes.v[i].name, name))
            return &m->nodes.v[i];
    return NULL;
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
            if (node_named(m, s->node))
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
