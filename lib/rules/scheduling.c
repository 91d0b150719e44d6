/*
 * scheduling.c - nodes and scheduling: a pod's own constraints against where its devices are,
 * and what the scheduler must do that a pod can keep it from doing.
 *
 *   PodConstraintsExcludeDeviceNodes  the nodes that have devices for the pod's claims are all
 *                                     ruled out by its nodeSelector, node affinity or a node
 *                                     taint it does not tolerate (GPU nodes' taints: device
 *                                     plugins' pods were tolerated automatically, claims are not)
 *   PodBypassesScheduler              spec.nodeName set by hand: nobody allocates the claims
 *   ClaimAllocatedOnOtherNode         a shared claim is allocated where this pod cannot go, or a
 *                                     workload's replicas share one named claim but may not
 *                                     share its node (required anti-affinity, a hostPort)
 *   ReservedForLimitReached           more pods share a claim than status.reservedFor holds
 *
 * The filters are kube-scheduler's (lib/model/nodefit); the nodes a device is on are the
 * allocator's (a slice's nodeName, nodeSelector or allNodes).
 */
#include "rules_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/nodefit.h"

#define WHY_MAX 300

/* ---- where devices are -------------------------------------------------------------- */

/* Marks on[0..nodes) the nodes where slice s offers its devices. */
static void slice_nodes(const struct dra_model *m, const struct dra_slice *s, unsigned char *on)
{
    size_t k;

    if (*s->node) {
        for (k = dra_node_first(m, s->node); k != SIZE_MAX; k = dra_node_next(m, k))
            on[k] = 1;
        return;
    }
    for (k = 0; k < m->nodes.n; k++)
        on[k] |= (unsigned char)(s->all_nodes || (s->node_selector &&
                                 fit_node_selector_matches(s->node_selector, m->nodes.v[k].json)));
}

/* Per class, worked out the first time a check asks: the nodes where it has a device
 * (ascending), and whether every device it admits is node-local. */
struct class_where {
    int done;
    size_t *nodes, n;
    int nonlocal;        /* it admits a device of a slice without nodeName */
    size_t admitted;     /* devices it admits */
};

struct where {
    const struct dra_model *m;
    struct class_where *c; /* per m->classes */
    unsigned char *on;     /* scratch, nodes.n */
    struct rule_class_sites *kept; /* the cache's, or NULL */
};

/* The cache's part (rule_cache.class_sites): class_where of each class, worked out the first
 * time a run over the model or one patched from it asks (a full build pays only for the classes
 * its pods ask for), with the arrays of the model it is of (compared only): what costs every
 * device of the cluster, once per model.  mu guards c (runs on other threads may share it). */
struct rule_class_sites {
    pthread_mutex_t mu;
    const struct dra_obj *nodes;
    size_t nnodes;
    const struct dra_slice *slices;
    size_t nslices;
    const struct dra_class *classes;
    size_t nclasses;
    struct class_where *c;
};

/* The cache's class sites, when they are of m or of a model patched from it (its very Node,
 * slice and class arrays), else NULL.  The cache is shared, not const: it fills as runs ask. */
static struct rule_class_sites *kept_where(const struct dra_model *m,
                                           const struct rule_cache *cache)
{
    struct rule_class_sites *cs = cache ? cache->class_sites : NULL;

    if (!cs || cs->nodes != m->nodes.v || cs->nnodes != m->nodes.n || cs->slices != m->slices ||
        cs->nslices != m->nslices || cs->classes != m->classes || cs->nclasses != m->nclasses)
        return NULL;
    return cs;
}

/* cache: the run's (rule_options.cache), or NULL. */
static int where_init(const struct dra_model *m, const struct rule_cache *cache, struct where *w)
{
    memset(w, 0, sizeof(*w));
    w->m = m;
    w->kept = kept_where(m, cache);
    w->c = calloc(m->nclasses + 1, sizeof(*w->c));
    w->on = calloc(m->nodes.n + 1, 1);
    if (!w->c || !w->on) {
        free(w->c);
        free(w->on);
        return -1;
    }
    return 0;
}

static void where_free(struct where *w)
{
    size_t i;

    for (i = 0; w->c && i < w->m->nclasses; i++)
        free(w->c[i].nodes);
    free(w->c);
    free(w->on);
}

/* cls's class_where worked out into cw; NULL on ENOMEM. */
static const struct class_where *where_of(struct where *w, const struct dra_class *cls,
                                          struct class_where *cw)
{
    const struct dra_model *m = w->m;
    const struct dra_slice *marked = NULL;
    size_t i, k;

    memset(w->on, 0, m->nodes.n);
    for (i = 0; i < m->ndevices; i++) {
        const struct dra_slice *s = &m->slices[m->device_slice[i]];
        if (!dra_class_admits(m, cls, i))
            continue;
        cw->admitted++;
        cw->nonlocal |= !*s->node;
        if (s != marked) /* a slice's devices are consecutive */
            slice_nodes(m, marked = s, w->on);
    }
    for (k = 0; k < m->nodes.n; k++)
        cw->n += w->on[k];
    if (!(cw->nodes = malloc((cw->n + 1) * sizeof(*cw->nodes))))
        return NULL;
    for (k = 0, cw->n = 0; k < m->nodes.n; k++)
        if (w->on[k])
            cw->nodes[cw->n++] = k;
    cw->done = 1;
    return cw;
}

/* NULL on ENOMEM. */
static const struct class_where *class_where(struct where *w, const struct dra_class *cls)
{
    size_t at = (size_t)(cls - w->m->classes);
    const struct class_where *r;

    if (w->kept) {
        pthread_mutex_lock(&w->kept->mu);
        r = w->kept->c[at].done ? &w->kept->c[at] : where_of(w, cls, &w->kept->c[at]);
        pthread_mutex_unlock(&w->kept->mu);
        return r;
    }
    return w->c[at].done ? &w->c[at] : where_of(w, cls, &w->c[at]);
}

struct rule_class_sites *rule__class_sites_new(const struct dra_model *m)
{
    struct rule_class_sites *cs = calloc(1, sizeof(*cs));

    if (!cs || !(cs->c = calloc(m->nclasses + 1, sizeof(*cs->c)))) {
        free(cs);
        return NULL;
    }
    pthread_mutex_init(&cs->mu, NULL);
    cs->nodes = m->nodes.v;
    cs->nnodes = m->nodes.n;
    cs->slices = m->slices;
    cs->nslices = m->nslices;
    cs->classes = m->classes;
    cs->nclasses = m->nclasses;
    return cs;
}

void rule__class_sites_free(struct rule_class_sites *cs)
{
    size_t i;

    for (i = 0; cs && i < cs->nclasses; i++)
        free(cs->c[i].nodes);
    if (cs) {
        pthread_mutex_destroy(&cs->mu);
        free(cs->c);
    }
    free(cs);
}

/* The claim spec behind a pod claim entry (the claim, or the template its claim comes from). */
static const struct dra_claim_spec *spec_of(const struct dra_model *m, const struct dra_podspec *p,
                                            const struct dra_pod_claim *pc)
{
    const struct dra_claim *c = dra_pod_claim_resolve(m, p, pc);

    if (!c && pc->tmpl)
        c = dra_find_claim(m, p->o.ns, pc->tmpl, 1);
    return c ? &c->spec : NULL;
}

/* A taint that only device-plugin pods got a toleration for, by ExtendedResourceToleration. */
static int extended_resource_taint(const char *why)
{
    return strstr(why, "untolerated taint {") && strchr(strstr(why, "taint {"), '/');
}

void rule__check_pod_constraints(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], why[WHY_MAX];
    struct where w;
    size_t *seen_cls, *seen_node, *cls, ncls, i, j, k, r, len;
    unsigned char *devnodes;

    if (!m->nodes.n || !m->nslices)
        return;
    memset(&w, 0, sizeof(w));
    seen_cls = calloc(m->nclasses + 1, sizeof(*seen_cls));
    cls = calloc(m->nclasses + 1, sizeof(*cls));
    seen_node = calloc(m->nodes.n, sizeof(*seen_node));
    if (!seen_cls || !cls || !seen_node || where_init(m, ctx->opt->cache, &w)) {
        ctx->out->oom = 1;
        goto out;
    }
    devnodes = w.on;
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        int taint = 0, ndev = 0, nfit = 0;
        struct fit_pod fp;
        /* A pod on a node is past the scheduler; a DaemonSet is a driver's, or everywhere. */
        if (*p->node || p->replicas < 0 || !p->nclaims)
            continue;
        fit_pod_prepare(p->spec, &fp);
        /* The classes of its claims not allocated yet, each once. */
        ncls = 0;
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[j]);
            const struct dra_claim_spec *spec = spec_of(m, p, &p->claims[j]);
            /* An allocated claim's devices are where it is: ClaimAllocatedOnOtherNode. */
            if (c && c->allocated)
                continue;
            for (r = 0; spec && r < spec->nreq; r++) {
                const struct dra_class *cl = spec->req[r].class_name
                                                 ? dra_find_class(m, spec->req[r].class_name)
                                                 : NULL;
                if (cl && seen_cls[cl - m->classes] != i + 1) {
                    seen_cls[cl - m->classes] = i + 1;
                    cls[ncls++] = (size_t)(cl - m->classes);
                }
            }
        }
        /* Any node with its devices that it may use will do: most pods stop at the first. */
        for (j = 0; j < ncls && !nfit; j++) {
            const struct class_where *cw = class_where(&w, &m->classes[cls[j]]);
            if (!cw) {
                ctx->out->oom = 1;
                goto out;
            }
            for (k = 0; k < cw->n && !nfit; k++) {
                if (seen_node[cw->nodes[k]] == i + 1)
                    continue;
                seen_node[cw->nodes[k]] = i + 1;
                ndev = 1;
                nfit = !fit_pod_excluded_prepared(&fp, m->nodes.v[cw->nodes[k]].json, 0, why,
                                                  sizeof(why));
            }
        }
        if (!ndev || nfit)
            continue;
        memset(devnodes, 0, m->nodes.n);
        for (j = 0; j < ncls; j++) {
            const struct class_where *cw = class_where(&w, &m->classes[cls[j]]);
            for (k = 0; k < cw->n; k++)
                devnodes[cw->nodes[k]] = 1;
        }
        len = 0;
        cat(msg, sizeof(msg), &len,
            "%s %s can get its devices only on node(s) the pod itself rules out, so it stays "
            "Pending (\"0/%zu nodes are available: ... cannot allocate all claims, ...\"):",
            p->o.kind, objname(&p->o, on, sizeof(on)), m->nodes.n);
        for (k = 0; k < m->nodes.n; k++)
            if (devnodes[k] &&
                fit_pod_excluded_prepared(&fp, m->nodes.v[k].json, 0, why, sizeof(why))) {
                cat(msg, sizeof(msg), &len, " %s: %s;", m->nodes.v[k].name, why);
                taint |= extended_resource_taint(why);
            }
        if (len && msg[len - 1] == ';')
            msg[--len] = '\0';
        cat(msg, sizeof(msg), &len, ".");
        if (taint)
            cat(msg, sizeof(msg), &len, " Pods that requested the device through a device plugin "
                "got this toleration from the ExtendedResourceToleration admission plugin; a pod "
                "that uses resourceClaims gets none.");
        snprintf(fix, sizeof(fix), "Let the pod go where its devices are: add the toleration, or "
                 "change its nodeSelector or node affinity (in the %s's pod template).",
                 STRIEQ(p->o.kind, "Pod") ? "pod spec" : p->o.kind);
        emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix);
    }
out:
    where_free(&w);
    free(seen_cls);
    free(cls);
    free(seen_node);
}

/* ---- who uses a claim ------------------------------------------------------------------ */

/* The pod claim entries that resolve to a claim, by claim (in the model's order), then in pod
 * order (dra_pod_claim_resolve once per entry).  Made of the podspecs alone, so that a run over
 * a few of them (an update's groups of a claim, lib/rules/snapshot) costs those, not every claim
 * of the cluster. */
struct users {
    /* c: m->claims[c]; seq: the entry's place in pod order (podspecs' addresses are not) */
    struct use { size_t c, seq; const struct dra_podspec *p; size_t k; } *at;
    size_t n;
};

static void users_free(struct users *u)
{
    free(u->at);
}

static int cmp_use(const void *a, const void *b)
{
    const struct use *x = a, *y = b;

    if (x->c != y->c)
        return (x->c > y->c) - (x->c < y->c);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int users_init(const struct dra_model *m, struct users *u)
{
    size_t i, j, n = 0;

    for (i = 0; i < m->npods; i++)
        n += m->pods[i]->nclaims;
    u->n = 0;
    if (!(u->at = malloc((n + 1) * sizeof(*u->at))))
        return -1;
    for (i = 0; i < m->npods; i++)
        for (j = 0; j < m->pods[i]->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, m->pods[i], &m->pods[i]->claims[j]);
            if (c) {
                u->at[u->n] = (struct use){ (size_t)(c - m->claims), u->n, m->pods[i], j };
                u->n++;
            }
        }
    if (u->n > 1)
        qsort(u->at, u->n, sizeof(*u->at), cmp_use);
    return 0;
}

/* The entries of claim c are at[*lo .. the return value). */
static size_t users_of(const struct users *u, size_t c, size_t *lo)
{
    size_t a = 0, b = u->n;

    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (u->at[mid].c < c)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    while (b < u->n && u->at[b].c == c)
        b++;
    return b;
}

/* ---- ClaimAllocatedOnOtherNode ------------------------------------------------------ */

/* 1 when labels (an object of strings) satisfy a LabelSelector {matchLabels, matchExpressions}
 * (In, NotIn, Exists, DoesNotExist); an empty selector matches everything, as in the API. */
static int labels_match(const cJSON *sel, const cJSON *labels)
{
    const cJSON *it, *v;

    cJSON_ArrayForEach(it, dd_json_path(sel, "matchLabels", NULL)) {
        const char *have = it->string ? dd_json_str(labels, it->string, NULL) : NULL;
        if (!cJSON_IsString(it) || !have || !STRIEQ(have, it->valuestring))
            return 0;
    }
    cJSON_ArrayForEach(it, dd_json_arr(sel, "matchExpressions", NULL)) {
        const char *key = dd_json_str(it, "key", NULL), *op = dd_json_str(it, "operator", NULL);
        const char *have = key ? dd_json_str(labels, key, NULL) : NULL;
        int in = 0;
        if (!key || !op)
            return 0;
        cJSON_ArrayForEach(v, dd_json_arr(it, "values", NULL))
            in |= have && cJSON_IsString(v) && STRIEQ(v->valuestring, have);
        if (STRIEQ(op, "In") ? !in : STRIEQ(op, "NotIn") ? in
            : STRIEQ(op, "Exists") ? !have : STRIEQ(op, "DoesNotExist") ? have != NULL : 1)
            return 0;
    }
    return 1;
}

/*
 * Why two replicas of workload p can never run on one node, into why; 0 when nothing in its
 * pod template says so.  kube-scheduler's filters: a required pod anti-affinity term on
 * kubernetes.io/hostname that the template's own labels match, in its own namespace
 * (InterPodAffinity), or a container port with a hostPort (NodePorts).
 */
static int replicas_apart(const struct dra_podspec *p, char *why, size_t size)
{
    const cJSON *tmpl = dd_json_path(p->o.json, "spec", "template", NULL), *t, *c, *port;

    if (STRIEQ(p->o.kind, "CronJob"))
        tmpl = dd_json_path(p->o.json, "spec", "jobTemplate", "spec", "template", NULL);
    cJSON_ArrayForEach(t, dd_json_arr(p->spec, "affinity", "podAntiAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution", NULL)) {
        const char *key = dd_json_str(t, "topologyKey", NULL);
        const cJSON *nss = dd_json_arr(t, "namespaces", NULL), *n;
        int own = !nss || !cJSON_GetArraySize(nss);
        cJSON_ArrayForEach(n, nss)
            own |= cJSON_IsString(n) && STRIEQ(n->valuestring, p->o.ns);
        if (key && STRIEQ(key, "kubernetes.io/hostname") && own &&
            !dd_json_path(t, "namespaceSelector", NULL) &&
            dd_json_path(t, "labelSelector", NULL) &&
            labels_match(dd_json_path(t, "labelSelector", NULL),
                         dd_json_path(tmpl, "metadata", "labels", NULL))) {
            snprintf(why, size, "its required pod anti-affinity on kubernetes.io/hostname keeps "
                     "a second replica off that node (\"node(s) didn't match pod anti-affinity "
                     "rules\")");
            return 1;
        }
    }
    cJSON_ArrayForEach(c, dd_json_arr(p->spec, "containers", NULL))
        cJSON_ArrayForEach(port, dd_json_arr(c, "ports", NULL)) {
            int64_t hp;
            if (dd_json_int(port, &hp, "hostPort", NULL) && hp > 0) {
                snprintf(why, size, "container %s takes hostPort %lld, which a second replica "
                         "cannot take on that node (\"node(s) didn't have free ports for the "
                         "requested pod ports\")",
                         dd_json_str(c, "name", NULL) ? dd_json_str(c, "name", NULL) : "?",
                         (long long)hp);
                return 1;
            }
        }
    return 0;
}

/*
 * The nodes an allocated claim's nodeSelector matches, ascending, into *out (n of them).  The
 * allocator writes it as matchFields on metadata.name: those names are looked up instead of
 * matching every node.  0, or -1 on ENOMEM.
 */
static int alloc_nodes(const struct dra_model *m, const cJSON *sel, size_t **out, size_t *n)
{
    const cJSON *terms = dd_json_arr(sel, "nodeSelectorTerms", NULL), *t, *f, *v;
    unsigned char *on;
    size_t k;
    int named = terms != NULL;

    cJSON_ArrayForEach(t, terms) {
        const cJSON *names = NULL;
        if (cJSON_GetArraySize(dd_json_arr(t, "matchExpressions", NULL)))
            named = 0;
        cJSON_ArrayForEach(f, dd_json_arr(t, "matchFields", NULL)) {
            const char *key = dd_json_str(f, "key", NULL), *op = dd_json_str(f, "operator", NULL);
            if (key && op && STRIEQ(key, "metadata.name") && STRIEQ(op, "In"))
                names = dd_json_arr(f, "values", NULL);
        }
        named &= names != NULL;
    }
    *n = 0;
    if (!(*out = malloc((m->nodes.n + 1) * sizeof(**out))) || !(on = calloc(m->nodes.n + 1, 1))) {
        free(*out);
        return -1;
    }
    if (named) {
        /* Every term needs its node named in an In list: only those can match. */
        cJSON_ArrayForEach(t, terms)
            cJSON_ArrayForEach(f, dd_json_arr(t, "matchFields", NULL))
                cJSON_ArrayForEach(v, dd_json_arr(f, "values", NULL))
                    for (k = cJSON_IsString(v) ? dra_node_first(m, v->valuestring) : SIZE_MAX;
                         k != SIZE_MAX; k = dra_node_next(m, k))
                        on[k] = 1;
    }
    for (k = 0; k < m->nodes.n; k++)
        if ((!named || on[k]) && fit_node_selector_matches(sel, m->nodes.v[k].json))
            (*out)[(*n)++] = k;
    free(on);
    return 0;
}

void rule__check_claim_node(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], why[WHY_MAX];
    struct users u = { NULL, 0 };
    struct where w;
    size_t i, j, k;

    if (where_init(m, ctx->opt->cache, &w)) {
        ctx->out->oom = 1;
        return;
    }
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_pod_claim *pc = &p->claims[j];
            const struct dra_claim *c;
            size_t nodes = 0, fits = 0, first = (size_t)-1, *at = NULL, nat, others = 0, hi;
            /* Every replica of a workload names the same claim: one allocation for all, which
             * pins them to one node when its devices are node-local (published with nodeName;
             * a fabric's devices may serve many nodes, and IMEX channels are shared so).  That
             * is how a device is shared (Kubernetes' own examples share one so), and a fault
             * only where the replicas cannot share that node. */
            if (pc->claim && p->replicas > 1 && (c = dra_find_claim(m, p->o.ns, pc->claim, 0)) &&
                replicas_apart(p, why, sizeof(why))) {
                size_t r, admitted = 0;
                int nonlocal = 0;
                for (r = 0; r < c->spec.nreq; r++) {
                    const struct dra_class *cls = c->spec.req[r].class_name ?
                        dra_find_class(m, c->spec.req[r].class_name) : NULL;
                    const struct class_where *cw = cls ? class_where(&w, cls) : NULL;
                    if (cls && !cw) {
                        ctx->out->oom = 1;
                        goto out;
                    }
                    admitted += cw ? cw->admitted : 0;
                    nonlocal |= cw && cw->nonlocal;
                }
                if (admitted && !nonlocal) {
                    snprintf(msg, sizeof(msg),
                             "%s %s: all %lld replicas use ResourceClaim %s (pod claim \"%s\"), "
                             "which is allocated once, on the node of its device(s), where every "
                             "replica must run; but %s: all replicas but one stay Pending "
                             "(\"resourceclaim not available on the node\" everywhere else).",
                             p->o.kind, objname(&p->o, on, sizeof(on)), (long long)p->replicas,
                             pc->claim, pc->name, why);
                    snprintf(fix, sizeof(fix), "Give each replica a claim of its own: "
                             "resourceClaimTemplateName instead of resourceClaimName (or let "
                             "the replicas share a node, if sharing the device is the point).");
                    emit(ctx, DD_SEV_WARNING, &p->o, pc->line, msg, fix);
                    continue;
                }
            }
            /* A Pending pod whose shared claim another pod already had allocated. */
            if (*p->node || !pc->claim || !m->nodes.n ||
                !(c = dra_pod_claim_resolve(m, p, pc)) || !c->allocated || !c->alloc_nodes)
                continue;
            if (alloc_nodes(m, c->alloc_nodes, &at, &nat)) {
                ctx->out->oom = 1;
                goto out;
            }
            for (k = 0; k < nat && !fits; k++) {
                nodes++;
                if (first == (size_t)-1)
                    first = at[k];
                fits += !fit_pod_excluded(p->spec, m->nodes.v[at[k]].json, 0, why, sizeof(why));
            }
            free(at);
            if (fits)
                continue;
            if (!u.at && users_init(m, &u)) {
                ctx->out->oom = 1;
                goto out;
            }
            for (hi = users_of(&u, (size_t)(c - m->claims), &k); k < hi; k++)
                others += u.at[k].p != p;
            if (!nodes)
                snprintf(msg, sizeof(msg),
                         "Pod %s: its shared ResourceClaim %s is allocated on a node that no "
                         "longer exists, so the pod can run nowhere (\"resourceclaim not "
                         "available on the node\").", objname(&p->o, on, sizeof(on)), c->o.name);
            else {
                fit_pod_excluded(p->spec, m->nodes.v[first].json, 0, why, sizeof(why));
                snprintf(msg, sizeof(msg),
                         "Pod %s: its shared ResourceClaim %s is already allocated on node %s "
                         "(for %zu other pod(s)), where this pod cannot go (%s): it stays Pending "
                         "(\"resourceclaim not available on the node\"); the claim is freed only "
                         "when no pod uses it.",
                         objname(&p->o, on, sizeof(on)), c->o.name, m->nodes.v[first].name,
                         others, why);
            }
            snprintf(fix, sizeof(fix), "Let the pod go to the claim's node, or give it a claim of "
                     "its own (a ResourceClaimTemplate).");
            scope(ctx, emit(ctx, ctx->rule->severity, &p->o, pc->line, msg, fix), NULL, NULL,
                  nodes ? m->nodes.v[first].name : NULL);
        }
    }
out:
    where_free(&w);
    users_free(&u);
}

/* API validation caps status.reservedFor at 256 (ResourceClaimReservedForMaxSize); the
 * scheduler reserves in PreBind, so pod 257 fails there, after the claim looked usable. */
#define RESERVED_FOR_MAX 256

static int reserved_for_pod(const struct dra_claim *c, const struct dra_podspec *p)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, c->reserved_for) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        if (cJSON_IsString(name) && STRIEQ(name->valuestring, p->o.name))
            return 1;
    }
    return 0;
}

void rule__check_reserved_for(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    struct users u;
    size_t i, j, hi;

    if (users_init(m, &u)) {
        ctx->out->oom = 1;
        return;
    }
    snprintf(fix, sizeof(fix), "Give the pods claims of their own (a ResourceClaimTemplate), or "
             "split them over several shared claims of at most %d users each.",
             RESERVED_FOR_MAX);
    /* A claim nothing uses says nothing: only the claims the podspecs use are read. */
    for (i = 0; i < u.n; i = hi) {
        const struct dra_claim *c = &m->claims[u.at[i].c];
        int64_t users = 0;
        int reported = 0;

        for (hi = i; hi < u.n && u.at[hi].c == u.at[i].c; hi++)
            ;
        if (c->is_template)
            continue;
        /* Live: the claim is full and a Pending pod waits for a place in it. */
        if (cJSON_GetArraySize(c->reserved_for) >= RESERVED_FOR_MAX)
            for (j = i; j < hi; j++) {
                const struct dra_podspec *p = u.at[j].p;
                size_t k = u.at[j].k;
                if (!*p->node && STRIEQ(p->o.kind, "Pod") && !reserved_for_pod(c, p)) {
                    snprintf(msg, sizeof(msg),
                             "Pod %s: its shared ResourceClaim %s is already reserved for "
                             "%d pods, the most status.reservedFor may hold; the scheduler "
                             "fails to reserve it for one more in PreBind and retries "
                             "forever.", objname(&p->o, on, sizeof(on)), c->o.name,
                             cJSON_GetArraySize(c->reserved_for));
                    emit(ctx, ctx->rule->severity, &p->o, p->claims[k].line, msg, fix);
                    reported = 1;
                }
            }
        /* Manifests: the workloads naming the claim stand for more pods than it can hold. */
        for (j = i; !reported && j < hi; j++) {
            const struct dra_podspec *p = u.at[j].p;
            size_t k = u.at[j].k;
            if (!p->claims[k].claim)
                continue;
            users += p->replicas < 0 ? (int64_t)m->nodes.n : p->replicas;
            if (users <= RESERVED_FOR_MAX)
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s: with it, %lld pods share ResourceClaim %s, but one claim can be "
                     "reserved for at most %d: the pods beyond that stay Pending (the "
                     "scheduler's PreBind fails to add them to status.reservedFor).",
                     p->o.kind, objname(&p->o, on, sizeof(on)), (long long)users, c->o.name,
                     RESERVED_FOR_MAX);
            emit(ctx, ctx->rule->severity, &p->o, p->claims[k].line, msg, fix);
            reported = 1; /* once per claim: on the workload that tips it over */
        }
    }
    users_free(&u);
}

void rule__check_bypass(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, j;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        int unallocated = 0;
        /* Only a Pod carries nodeName before it exists.  Live, nodeName alone proves nothing
         * (the scheduler sets it too, and the kubelet marks a pinned pod PodScheduled), but
         * the scheduler binds only after it allocated every claim (PreBind): a bound pod with
         * an unallocated claim never went through it. */
        if (!STRIEQ(p->o.kind, "Pod") || !*p->node || !p->nclaims)
            continue;
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[j]);
            unallocated |= !c || !c->allocated;
        }
        if (!unallocated)
            continue;
        snprintf(msg, sizeof(msg),
                 "Pod %s sets spec.nodeName (%s), so it never passes the scheduler, which is what "
                 "allocates and reserves its claims: the kubelet refuses to prepare them "
                 "(\"prepare dynamic resources: pod %s (...) is not allowed to use ResourceClaim "
                 "...\") and the pod stays in ContainerCreating.",
                 objname(&p->o, on, sizeof(on)), p->node, p->o.name);
        snprintf(fix, sizeof(fix), "Remove spec.nodeName and let the scheduler place the pod "
                 "(to pin it, use a nodeSelector on kubernetes.io/hostname: %s).", p->node);
        scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL, p->node);
    }
}
