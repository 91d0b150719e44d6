/*
 * fit.c - DevicesDoNotFit: a pod (or a workload's pod template) whose claims kube-scheduler's
 * allocator (lib/model/alloc) can place on no node, all of its claims together, and why, node
 * by node (nodes with the same reason grouped).
 *
 * The allocator is built once per run (lint, a live snapshot) or given (the webhook's view,
 * rule_options.inventory).  Lint input often lacks what the allocator needs; what is assumed
 * is said in the finding, and the finding is a warning unless the input is the whole cluster
 * (live, lint --cluster-inventory, --complete with Node objects):
 *   - no Node objects: the nodes are those the node-local ResourceSlices name, without labels
 *     or taints;
 *   - a driver that publishes no slice in the input but whose profile tells how many devices
 *     its DaemonSet simulates per node (the DRA example driver's NUM_DEVICES): those devices,
 *     on every node (--nodes N nodes when the input has none); never in a live cluster, whose
 *     slices are all the scheduler has;
 *   - a driver installed whose devices cannot be known (real hardware, no slices): nothing is
 *     judged, as nothing proves a pod does not fit.
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/alloc.h"
#include "model/drivers.h"

#define FIT_MAX_NODES 1000      /* nodes assumed for a profile's devices (--nodes) */
#define FIT_MAX_DEVICES 128     /* devices per assumed slice (a ResourceSlice's limit) */
#define FIT_MAX_GROUPS 6        /* reasons named in one finding */
#define FIT_NODES_NAMED 3       /* nodes named per reason */

struct fit_memo;

/* What the rule judges with: the run's model, or one that adds what lint assumes. */
struct fit_env {
    const struct alloc_inventory *inv;
    int borrowed;                  /* a copy of rule_options.inventory's: nothing owned */
    struct alloc_inventory *own;   /* owned, when built here */
    struct dra_model aux;          /* the model with assumed objects (aux_used) */
    int aux_used;
    cJSON *made;                   /* owned: the assumed objects */
    int assumed_nodes;             /* nodes taken from the slices' nodeName */
    const struct dra_driver *profile; /* a driver whose devices come from its profile */
    struct rule_names unknown;     /* drivers installed whose devices cannot be known */
    const char **snodes;           /* owned array: nodes named by node-local slices, sorted */
    size_t nsnodes;
    struct dra_obj *nodes;         /* owned array: the nodes assumed (their JSON in made) */
    size_t nnodes;
    long profile_nodes;
    struct fit_memo *verdicts;     /* the inventory's verdicts kept across runs
                                      (dd_rules_inventory_remember), or NULL: the run's own */
};

/* dd_rules_inventory_new's: the environment, as a run builds it. */
struct rule_inventory {
    struct fit_env e;
    struct fit_memo *memo;         /* owned: e.verdicts, or NULL */
};

static void gates_of(const struct rule_ctx *ctx, struct alloc_gates *g)
{
    size_t i;

    alloc_gates_default(g);
    for (i = 0; i < KV_NGATES; i++)
        if (kv_gate_exists(ctx->gates->minor, (enum kv_gate)i))
            alloc_gates_set(g, kv_gate_name((enum kv_gate)i), ctx->gates->on[i]);
}

static int has_slices(const struct dra_model *m, const char *driver)
{
    size_t i;

    for (i = 0; i < m->nslices; i++)
        if (STRIEQ(m->slices[i].driver, driver))
            return 1;
    return 0;
}

static cJSON *node_json(const char *name)
{
    cJSON *n = cJSON_CreateObject(), *meta, *labels;

    if (!n || !cJSON_AddStringToObject(n, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(n, "kind", "Node") ||
        !(meta = cJSON_AddObjectToObject(n, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", name) ||
        !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
        !cJSON_AddStringToObject(labels, "kubernetes.io/hostname", name)) {
        cJSON_Delete(n);
        return NULL;
    }
    return n;
}

/* One attribute value as a ResourceSlice writes it; NULL for list kinds it skips. */
static cJSON *attr_json(const struct cel_attr *a)
{
    cJSON *v = cJSON_CreateObject();

    if (!v)
        return NULL;
    switch (a->kind) {
    case CEL_ATTR_INT:
        if (cJSON_AddNumberToObject(v, "int", (double)a->i))
            return v;
        break;
    case CEL_ATTR_BOOL:
        if (cJSON_AddBoolToObject(v, "bool", a->b))
            return v;
        break;
    case CEL_ATTR_STRING:
    case CEL_ATTR_VERSION:
        if (a->s && cJSON_AddStringToObject(v, a->kind == CEL_ATTR_STRING ? "string" : "version",
                                            a->s))
            return v;
        break;
    default:
        break;
    }
    cJSON_Delete(v);
    return NULL;
}

/* "name" in the driver's own domain, else "domain/name". */
static void qualified(char *buf, size_t size, const char *driver, const char *domain,
                      const char *name)
{
    if (!domain || !*domain || STRIEQ(domain, driver))
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "%s/%s", domain, name);
}

/* The slice a profile driver's plugin would publish on node: its devices, alike. */
static cJSON *profile_slice(const struct dra_driver *d, const char *node)
{
    const struct drv_profile *p = d->profile;
    cJSON *s = cJSON_CreateObject(), *meta, *spec, *pool, *devs;
    int64_t i, n = d->num_devices < FIT_MAX_DEVICES ? d->num_devices : FIT_MAX_DEVICES;
    char name[512];
    size_t k;

    snprintf(name, sizeof(name), "%s-%s", node, d->name);
    if (!s || !cJSON_AddStringToObject(s, "apiVersion", "resource.k8s.io/v1") ||
        !cJSON_AddStringToObject(s, "kind", "ResourceSlice") ||
        !(meta = cJSON_AddObjectToObject(s, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", name) ||
        !(spec = cJSON_AddObjectToObject(s, "spec")) ||
        !cJSON_AddStringToObject(spec, "driver", d->name) ||
        !cJSON_AddStringToObject(spec, "nodeName", node) ||
        !(pool = cJSON_AddObjectToObject(spec, "pool")) ||
        !cJSON_AddStringToObject(pool, "name", node) ||
        !cJSON_AddNumberToObject(pool, "generation", 0) ||
        !cJSON_AddNumberToObject(pool, "resourceSliceCount", 1) ||
        !(devs = cJSON_AddArrayToObject(spec, "devices")))
        goto oom;
    for (i = 0; i < n; i++) {
        cJSON *dev = cJSON_CreateObject(), *attrs, *caps;
        snprintf(name, sizeof(name), "device-%lld", (long long)i);
        if (!dev)
            goto oom;
        cJSON_AddItemToArray(devs, dev);
        if (!cJSON_AddStringToObject(dev, "name", name) ||
            !(attrs = cJSON_AddObjectToObject(dev, "attributes")) ||
            !(caps = cJSON_AddObjectToObject(dev, "capacity")))
            goto oom;
        for (k = 0; k < p->ndevice_attrs; k++) {
            cJSON *v = attr_json(&p->device_attrs[k]);
            if (!v)
                continue;
            qualified(name, sizeof(name), d->name, p->device_attrs[k].domain,
                      p->device_attrs[k].name);
            cJSON_AddItemToObject(attrs, name, v);
        }
        for (k = 0; k < p->ndevice_caps; k++) {
            cJSON *c = cJSON_CreateObject();
            qualified(name, sizeof(name), d->name, p->device_caps[k].domain,
                      p->device_caps[k].name);
            if (!c || !cJSON_AddStringToObject(c, "value", p->device_caps[k].quantity)) {
                cJSON_Delete(c);
                goto oom;
            }
            cJSON_AddItemToObject(caps, name, c);
        }
    }
    return s;
oom:
    cJSON_Delete(s);
    return NULL;
}

static int made_add(struct fit_env *e, cJSON *o)
{
    if (!o)
        return -1;
    cJSON_AddItemToArray(e->made, o);
    return dra_model_add(&e->aux, o, NULL, 0) == DD_OK ? 0 : -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The node names node-local slices give, sorted, without repeats, into e->snodes.  0, or -1
 * on ENOMEM. */
static int slice_nodes(const struct dra_model *m, struct fit_env *e)
{
    size_t i, n = 0;

    if (!(e->snodes = calloc(m->nslices + 1, sizeof(*e->snodes))))
        return -1;
    for (i = 0; i < m->nslices; i++) {
        const char *node = dd_json_str(m->slices[i].o.json, "spec", "nodeName", NULL);
        if (node && *node)
            e->snodes[n++] = node;
    }
    qsort(e->snodes, n, sizeof(*e->snodes), cmp_str);
    for (i = 0; i < n; i++)
        if (!e->nsnodes || strcmp(e->snodes[e->nsnodes - 1], e->snodes[i]))
            e->snodes[e->nsnodes++] = e->snodes[i];
    return 0;
}

static int has_slice_on(const struct fit_env *e, const char *node)
{
    return e->nsnodes && bsearch(&node, e->snodes, e->nsnodes, sizeof(*e->snodes), cmp_str);
}

/*
 * The allocator for this run.  0 with e->inv set, 1 when nothing can be judged (no device
 * known, or a driver's devices unknowable), -1 on ENOMEM.
 */
static int fit_env_init(struct rule_ctx *ctx, struct fit_env *e)
{
    const struct dra_model *m = ctx->m;
    struct alloc_options opt;
    struct dd_err err;
    cJSON *names = NULL;
    const cJSON *it;
    size_t i;
    int need_aux = 0;

    memset(e, 0, sizeof(*e));
    if (ctx->opt->inventory) {
        *e = ctx->opt->inventory->e;
        e->borrowed = 1;
        return e->inv ? 0 : 1;
    }
    /* At admission the model holds the object and a few samples, not the cluster. */
    if (ctx->surface == DD_ADMISSION)
        return 1;
    for (i = 0; i < m->ndrivers; i++) {
        const struct dra_driver *d = &m->drivers[i];
        if (!*d->name || has_slices(m, d->name))
            continue;
        /* Live, the slices are what the scheduler reads: assuming the profile's devices
         * would judge against an inventory it does not have (DriverNotPublishing says why
         * there is none).  Either way the pods that need the driver are not judged. */
        if (d->num_devices < 0 || !d->profile || ctx->surface == DD_LIVE) {
            names_add(&e->unknown, d->name);
            continue;
        }
        if (!e->profile)
            e->profile = d;
        need_aux = 1;
    }
    if (!m->nslices && !e->profile)
        return 1;
    if (slice_nodes(m, e))
        return -1;
    alloc_options_default(&opt);
    gates_of(ctx, &opt.gates);
    opt.templates_as_claims = ctx->surface != DD_LIVE; /* lint, admission: not created yet */
    opt.first_fit = 1; /* whether it fits anywhere; when it fits nowhere every node is judged */
    if (need_aux) {
        dra_model_init(&e->aux, NULL, NULL);
        e->aux_used = 1;
        e->aux.live = m->live;
        e->aux.cel_cache = m->cel_cache;
        if (!(e->made = cJSON_CreateArray()) || !(names = cJSON_CreateArray()))
            goto oom;
        for (i = 0; i < m->nclasses; i++)
            if (dra_model_add(&e->aux, m->classes[i].o.json, m->classes[i].o.file,
                              m->classes[i].o.line) != DD_OK)
                goto oom;
        for (i = 0; i < m->nclaims; i++)
            if (dra_model_add(&e->aux, m->claims[i].o.json, m->claims[i].o.file,
                              m->claims[i].o.line) != DD_OK)
                goto oom;
        for (i = 0; i < m->nslices; i++)
            if (dra_model_add(&e->aux, m->slices[i].o.json, NULL, 0) != DD_OK)
                goto oom;
        for (i = 0; i < m->nodes.n; i++)
            if (dra_model_add(&e->aux, m->nodes.v[i].json, NULL, 0) != DD_OK)
                goto oom;
        if (!m->nodes.n) {
            long n = (long)e->nsnodes, k;
            for (k = 0; k < n; k++) {
                cJSON *nm = cJSON_CreateString(e->snodes[k]);
                if (!nm)
                    goto oom;
                cJSON_AddItemToArray(names, nm);
            }
            if (!n && e->profile) {
                long want = dra_node_count(m, ctx->opt->nodes);
                e->profile_nodes = want < FIT_MAX_NODES ? want : FIT_MAX_NODES;
                for (k = 0; k < e->profile_nodes; k++) {
                    char nm[64];
                    cJSON *s;
                    snprintf(nm, sizeof(nm), "node-%ld", k + 1);
                    if (!(s = cJSON_CreateString(nm)))
                        goto oom;
                    cJSON_AddItemToArray(names, s);
                }
            } else {
                e->assumed_nodes = 1;
                e->profile_nodes = n;
            }
            cJSON_ArrayForEach(it, names)
                if (made_add(e, node_json(it->valuestring)))
                    goto oom;
        } else {
            e->profile_nodes = (long)m->nodes.n;
            for (i = 0; i < m->nodes.n && i < FIT_MAX_NODES; i++) {
                cJSON *s = cJSON_CreateString(m->nodes.v[i].name);
                if (!s)
                    goto oom;
                cJSON_AddItemToArray(names, s);
            }
        }
        for (i = 0; i < m->ndrivers; i++) {
            const struct dra_driver *d = &m->drivers[i];
            if (!*d->name || has_slices(m, d->name) || !d->profile || d->num_devices <= 0)
                continue;
            cJSON_ArrayForEach(it, names)
                if (made_add(e, profile_slice(d, it->valuestring)))
                    goto oom;
        }
        cJSON_Delete(names);
        names = NULL;
        if (dra_model_finish(&e->aux) != DD_OK)
            goto oom;
        if (!e->aux.nodes.n)
            return 1;
    }
    if (!need_aux && !m->nodes.n) {
        /* Only the nodes are missing: the allocator judges the ones the slices name. */
        size_t k;
        if (!e->nsnodes)
            return 1;
        if (!(e->made = cJSON_CreateArray()) ||
            !(e->nodes = calloc(e->nsnodes, sizeof(*e->nodes))))
            goto oom;
        for (k = 0; k < e->nsnodes; k++) {
            cJSON *nj = node_json(e->snodes[k]);
            if (!nj)
                goto oom;
            cJSON_AddItemToArray(e->made, nj);
            e->nodes[k] = (struct dra_obj){ nj, "v1", "Node", "", e->snodes[k], NULL, 0 };
        }
        e->nnodes = k;
        e->assumed_nodes = 1;
        opt.nodes = e->nodes;
        opt.nnodes = e->nnodes;
    }
    if (!(e->own = alloc_inventory_new(need_aux ? &e->aux : m, &opt, &err)))
        goto oom;
    e->inv = e->own;
    return 0;
oom:
    cJSON_Delete(names);
    return -1;
}

static void fit_env_free(struct fit_env *e)
{
    if (e->borrowed)
        return;
    alloc_inventory_free(e->own);
    free(e->snodes);
    free(e->nodes);
    if (e->aux_used)
        dra_model_release(&e->aux);
    cJSON_Delete(e->made);
}

/* The pods the rule judges here: a live cluster's unscheduled Pods; in lint and at
 * admission every pod spec (workloads' templates too) that is left to the scheduler. */
static int judged(const struct rule_ctx *ctx, const struct dra_podspec *p)
{
    const char *phase;

    if (!p->nclaims || *p->node || dd_json_str(p->spec, "nodeName", NULL))
        return 0;
    if (ctx->surface != DD_LIVE)
        return 1;
    phase = dd_json_str(p->status, "phase", NULL);
    return STRIEQ(p->o.kind, "Pod") && (!phase || STRIEQ(phase, "Pending")) &&
           !dd_json_path(p->o.json, "metadata", "deletionTimestamp", NULL);
}

/* ---- the finding ------------------------------------------------------------------------ */

/* The nodes of a result grouped by reason: worked out once per result (pods alike share it). */
struct groups {
    int none;                /* nothing to report: a node fits bar the pod's own filters, or
                                every reason is another rule's */
    size_t ng, other;
    struct {
        const struct alloc_node *first;
        const struct alloc_node *named[FIT_NODES_NAMED];
        size_t n, nnamed;
    } g[FIT_MAX_GROUPS];
};

/* The fix for the first reason: what would make the pod fit there. */
static void fix_for(char *fix, size_t size, const struct alloc_result *r,
                    const struct alloc_node *n)
{
    const struct alloc_why *w = &n->why;
    const char *claim = w->claim < r->nclaims ? r->claims[w->claim]->o.name : "";
    const struct alloc_funnel *f = w->nalts ? &w->alts[0] : NULL;
    size_t i, best = 0;

    if (w->kind == ALLOC_WHY_DEVICES && f) {
        for (i = 0; i < r->nnodes; i++)
            if (r->nodes[i].why.kind == ALLOC_WHY_DEVICES && r->nodes[i].why.nalts &&
                r->nodes[i].why.alts[0].capacity_ok > best &&
                !strcmp(r->nodes[i].why.alts[0].request, f->request))
                best = r->nodes[i].why.alts[0].capacity_ok;
        if (best && !f->all)
            snprintf(fix, size, "Ask for at most %zu device(s) in request %s of %s (the most one "
                     "node can give it now), or make room on one node: more devices its class "
                     "and selectors accept, or fewer held by other claims.", best, f->request,
                     claim);
        else
            snprintf(fix, size, "Make devices that request %s of %s accepts usable on a node the "
                     "pod may run on (publish them, free them, or widen its class's and its own "
                     "selectors).", f->request, claim);
    } else if (w->kind == ALLOC_WHY_CONSTRAINT) {
        snprintf(fix, size, "Relax %s in %s, or put devices that satisfy it together on one "
                 "node.", w->constraint ? w->constraint : "the constraint", claim);
    } else if (w->kind == ALLOC_WHY_TOGETHER) {
        snprintf(fix, size, "Ask for fewer devices, or spread the requests over pods: one node "
                 "must hold every device the pod's claims ask for at once.");
    } else if (w->kind == ALLOC_WHY_UNAVAILABLE) {
        snprintf(fix, size, "Run the pod where claim %s's devices are (its allocation decides "
                 "the node), or let the claim be allocated again.", claim);
    } else if (n->verdict == ALLOC_FIT && n->pod_filter) {
        snprintf(fix, size, "Change the pod's nodeSelector, affinity or tolerations so that it "
                 "may run on a node whose devices fit its claims.");
    } else {
        snprintf(fix, size, "Fix what the scheduler reports for the node (the finding about "
                 "its class, selector or pool says how).");
    }
}

/* A class one of whose selectors requires only drivers nobody runs (SelectorMatchesNoDriver). */
static int class_misnames_driver(const struct rule_ctx *ctx, const char *name)
{
    const struct dra_class *cls = name ? dra_find_class(ctx->m, name) : NULL;
    struct driver_verdict v;
    size_t i;

    for (i = 0; cls && i < cls->nsel; i++) {
        rule__judge_selector(ctx, &cls->sel[i], ctx->known, &v);
        if (v.unknown)
            return 1;
    }
    return 0;
}

/* Whether some node has devices of the usable pools for request req: when none has, a node
 * without them proves nothing about this pod (the driver publishes nothing at all: other
 * rules say why). */
static int reaches_some_node(const struct alloc_result *r, const char *req)
{
    size_t i, j;

    for (i = 0; i < r->nnodes; i++)
        for (j = 0; j < r->nodes[i].why.nalts; j++)
            if ((r->nodes[i].why.alts[j].on_node || r->nodes[i].why.alts[j].skipped) &&
                !strcmp(r->nodes[i].why.alts[j].request, req))
                return 1;
    return 0;
}

/*
 * Whether what keeps the pod off node n is another rule's to say (each rule assumes the
 * others' faults fixed): the allocator's error (SelectorRuntimeError,
 * AllocationModeAllUnsatisfiable), pools it will not use (PoolIncomplete, PoolInvalid),
 * taints (DeviceTaintNotTolerated), a class naming a driver nobody runs
 * (SelectorMatchesNoDriver), All matching nothing (AllocationModeAllUnsatisfiable), no
 * device of the request's class anywhere.
 */
static int explained_elsewhere(const struct rule_ctx *ctx, const struct alloc_result *r,
                               const struct alloc_node *n)
{
    const struct alloc_why *w = &n->why;
    size_t i;

    if (n->verdict == ALLOC_ERROR || w->kind == ALLOC_WHY_ERROR)
        return 1;
    if (w->kind == ALLOC_WHY_NONE)
        return n->reason && strstr(n->reason, "invalid resource pools");
    if (w->kind != ALLOC_WHY_DEVICES)
        return 0;
    for (i = 0; i < w->nalts; i++) {
        const struct alloc_funnel *f = &w->alts[i];
        if (!(f->skipped && f->capacity_ok + f->skipped >= (size_t)f->need) &&
            !(f->free && !f->tolerated) && !(f->all && f->class_ok && !f->selected) &&
            !(!f->class_ok && f->on_node && class_misnames_driver(ctx, f->class_name)) &&
            !(!f->on_node && !reaches_some_node(r, f->request)))
            return 0;
    }
    return 1;
}

/* A node with no device for the pod and no slice of its own: true, but no cause by itself
 * (clusters have CPU-only nodes); it is named when another node's reason is reported. */
static int bare(const struct fit_env *e, const struct alloc_node *n)
{
    size_t i;

    if (n->why.kind != ALLOC_WHY_DEVICES)
        return 0;
    for (i = 0; i < n->why.nalts; i++)
        if (n->why.alts[i].on_node || n->why.alts[i].skipped)
            return 0;
    return !has_slice_on(e, n->node->name);
}

/* Whether a claim of r may take devices of a driver whose devices cannot be known (or of
 * any driver): then nothing proves the pod does not fit. */
static int unknowable(const struct rule_ctx *ctx, const struct fit_env *e,
                      const struct alloc_result *r)
{
    struct rule_names d;
    size_t i, j, k, l;

    for (i = 0; e->unknown.n && i < r->nclaims; i++) {
        const struct dra_claim_spec *sp = &r->claims[i]->spec;
        for (j = 0; j < sp->nreq; j++)
            for (k = 0; k <= sp->req[j].nsub; k++) {
                const struct dra_request *q = k ? &sp->req[j].sub[k - 1] : &sp->req[j];
                if (k == 0 && sp->req[j].nsub)
                    continue;
                d.n = 0;
                rule__request_drivers(ctx->m, q, &d);
                if (!d.n)
                    return 1;
                for (l = 0; l < d.n; l++)
                    if (names_has(&e->unknown, d.v[l]))
                        return 1;
            }
    }
    return 0;
}

static int group_nodes(const struct rule_ctx *ctx, const struct fit_env *e,
                       const struct alloc_result *r, struct groups *G)
{
    char *text[FIT_MAX_GROUPS] = { NULL }, why[MSG_MAX];
    size_t i, k, ours = 0;

    memset(G, 0, sizeof(*G));
    G->none = unknowable(ctx, e, r);
    for (i = 0; i < r->nnodes && !G->none; i++) {
        const struct alloc_node *n = &r->nodes[i];
        /* A node whose devices fit, kept off by the pod's own node filters:
         * PodConstraintsExcludeDeviceNodes says so. */
        if (n->verdict == ALLOC_FIT) {
            G->none = 1;
            break;
        }
        ours += !explained_elsewhere(ctx, r, n) && !bare(e, n);
        alloc_why_text(r, n, why, sizeof(why));
        for (k = 0; k < G->ng && strcmp(text[k], why); k++)
            ;
        if (k == G->ng && G->ng < FIT_MAX_GROUPS) {
            if (!(text[k] = strdup(why)))
                break;
            G->g[G->ng++].first = n;
        }
        if (k == G->ng) {
            G->other++;
            continue;
        }
        if (G->g[k].nnamed < FIT_NODES_NAMED)
            G->g[k].named[G->g[k].nnamed++] = n;
        G->g[k].n++;
    }
    if (!ours || !G->ng)
        G->none = 1;
    for (k = 0; k < G->ng; k++)
        free(text[k]);
    return i < r->nnodes && !G->none ? -1 : 0;
}

static void report(struct rule_ctx *ctx, const struct fit_env *e, const struct dra_podspec *p,
                   const struct alloc_result *r, const struct groups *G)
{
    char msg[MSG_MAX * 2], fix[MSG_MAX], why[MSG_MAX], on[300];
    size_t i, k, len = 0;
    const struct alloc_node *first = G->g[0].first;
    const char *cls = NULL;
    enum dd_severity sev = ctx->rule->severity;

    if (G->none)
        return;
    objname(&p->o, on, sizeof(on));
    /* The first clause (up to a ';') is what the webhook's warning shows: the reasons first. */
    cat(msg, sizeof(msg), &len, "%s %s fits on no node: ", p->o.kind, on);
    for (k = 0; k < G->ng; k++) {
        for (i = 0; i < G->g[k].nnamed; i++)
            cat(msg, sizeof(msg), &len, "%s%s", i ? ", " : "", G->g[k].named[i]->node->name);
        if (G->g[k].n > G->g[k].nnamed)
            cat(msg, sizeof(msg), &len, " and %zu more", G->g[k].n - G->g[k].nnamed);
        alloc_why_text(r, G->g[k].first, why, sizeof(why));
        cat(msg, sizeof(msg), &len, ": %s%s", why, k + 1 < G->ng ? "; " : ".");
    }
    if (G->other)
        cat(msg, sizeof(msg), &len, " %zu more node(s) for other reasons.", G->other);
    cat(msg, sizeof(msg), &len, " Its claims (");
    for (i = 0; i < r->nclaims; i++)
        cat(msg, sizeof(msg), &len, "%s%s %s", i ? ", " : "",
            r->claims[i]->is_template ? "ResourceClaimTemplate" : "ResourceClaim",
            r->claims[i]->o.name);
    cat(msg, sizeof(msg), &len, ") were allocated on each of the %zu node(s) as kube-scheduler's "
        "allocator does it (Kubernetes v1.37 semantics), all together.", r->nnodes);
    if (first->why.kind == ALLOC_WHY_DEVICES && first->why.nalts)
        cls = first->why.alts[0].class_name;
    /* An error is a promise: only when the inventory is proven whole (a live cluster's, read
     * by the controller or by lint --cluster-inventory, or lint --complete with the cluster's
     * Node objects). */
    if (ctx->surface == DD_LIVE ||
        (ctx->surface == DD_LINT && (ctx->opt->complete || ctx->opt->live_inventory) &&
         !e->assumed_nodes && !e->profile))
        sev = DD_SEV_ERROR;
    if (ctx->opt->live_inventory)
        cat(msg, sizeof(msg), &len, " Judged against the live cluster's inventory (%s): its "
            "Nodes, ResourceSlices and allocated ResourceClaims, with the manifests' objects in "
            "place of the cluster's of the same name.", ctx->opt->live_inventory);
    if (e->assumed_nodes)
        cat(msg, sizeof(msg), &len, " (The input has no Node objects: the nodes are those its "
            "ResourceSlices name, assumed to exist without labels or taints.)");
    if (e->profile)
        cat(msg, sizeof(msg), &len, " (Driver %s publishes no ResourceSlice in the input: its "
            "DaemonSet's %lld device(s) per node are assumed, on %ld node(s).)",
            e->profile->name, (long long)e->profile->num_devices, e->profile_nodes);
    if (ctx->surface == DD_LINT && !ctx->opt->complete && !ctx->opt->live_inventory)
        cat(msg, sizeof(msg), &len, " (This assumes the input holds every ResourceSlice and "
            "every allocated claim; --complete makes it an error.)");
    fix_for(fix, sizeof(fix), r, first);
    scope(ctx, emit(ctx, sev, &p->o, 0, msg, fix), cls, NULL, NULL);
}

/* ---- memo: pods alike in all that allocation reads fit alike ------------------------------ */

/*
 * The key of what the allocator reads of pod p: its node filters, the specs of its claims
 * (all unallocated) in order with what PreFilter checks of each but its spec
 * (alloc_claim_state), and its namespace when a request asks for admin access (the
 * namespace's label decides it); its claims into claims[] (room for p->nclaims).  NULL when
 * p cannot be keyed (an allocated claim, one not found) or on ENOMEM.
 */
static char *pod_key(const struct dra_model *m, const struct alloc_inventory *inv,
                     const struct dra_podspec *p, const struct dra_claim **claims)
{
    const cJSON *f[3];
    cJSON *k = cJSON_CreateArray();
    char *out = NULL;
    size_t i;

    if (!k)
        return NULL;
    /* The node filters lib/model/nodefit reads (pod affinity is not one of them). */
    f[0] = cJSON_GetObjectItemCaseSensitive(p->spec, "nodeSelector");
    f[1] = dd_json_path(p->spec, "affinity", "nodeAffinity", NULL);
    f[2] = cJSON_GetObjectItemCaseSensitive(p->spec, "tolerations");
    for (i = 0; i < 3; i++)
        cJSON_AddItemToArray(k, f[i] ? cJSON_Duplicate(f[i], 1) : cJSON_CreateNull());
    for (i = 0; i < p->nclaims; i++) {
        const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[i]);
        if (!c && p->claims[i].tmpl && !p->status)
            c = dra_find_claim(m, p->o.ns, p->claims[i].tmpl, 1);
        if (!c || c->allocated || dd_json_path(c->o.json, "metadata", "deletionTimestamp", NULL))
            goto done;
        claims[i] = c;
        cJSON_AddItemToArray(k, cJSON_Duplicate(dd_json_path(c->o.json, c->is_template ?
                                                             "spec.spec" : "spec", NULL), 1));
        /* A template standing for its claim, and what PreFilter checks of a claim but its
         * spec (who controls it, whether it is being allocated), stop a pod before any node
         * is judged: not the verdict of a claim of the same spec. */
        cJSON_AddItemToArray(k, cJSON_CreateNumber(
                                    c->is_template ? 4 : alloc_claim_state(inv, p, &p->claims[i], c)));
    }
    if ((out = cJSON_PrintUnformatted(k)) && strstr(out, "\"adminAccess\"")) {
        cJSON_AddItemToArray(k, cJSON_CreateString(p->o.ns));
        free(out);
        out = cJSON_PrintUnformatted(k);
    }
done:
    cJSON_Delete(k);
    return out;
}

/* Verdicts by pod key (open addressing, at most half full): a pod that fits, or the
 * explained result of one that does not. */
struct fit_entry {
    char *key;                     /* owned; NULL: free slot */
    int fits;
    struct alloc_result r;         /* when it does not fit */
    struct groups groups;          /* r's nodes by reason */
};

struct fit_memo {
    struct fit_entry *slot;
    size_t cap, n;
};

static size_t key_hash(const char *s)
{
    size_t h = 14695981039346656037ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct fit_entry *memo_get(const struct fit_memo *fm, const char *key)
{
    size_t k;

    if (!key || !fm->cap)
        return NULL;
    for (k = key_hash(key) & (fm->cap - 1); fm->slot[k].key; k = (k + 1) & (fm->cap - 1))
        if (!strcmp(fm->slot[k].key, key))
            return &fm->slot[k];
    return NULL;
}

/* Takes key (owned) into the memo; NULL (key freed) when there is no room. */
static struct fit_entry *memo_put(struct fit_memo *fm, char *key)
{
    size_t k, i;

    if (2 * (fm->n + 1) > fm->cap) {
        size_t cap = fm->cap ? 2 * fm->cap : 64;
        struct fit_entry *ns = calloc(cap, sizeof(*ns));
        if (!ns) {
            free(key);
            return NULL;
        }
        for (i = 0; i < fm->cap; i++) {
            if (!fm->slot[i].key)
                continue;
            for (k = key_hash(fm->slot[i].key) & (cap - 1); ns[k].key; k = (k + 1) & (cap - 1))
                ;
            ns[k] = fm->slot[i];
        }
        free(fm->slot);
        fm->slot = ns;
        fm->cap = cap;
    }
    for (k = key_hash(key) & (fm->cap - 1); fm->slot[k].key; k = (k + 1) & (fm->cap - 1))
        ;
    fm->slot[k].key = key;
    fm->n++;
    return &fm->slot[k];
}

static void memo_free(struct fit_memo *fm)
{
    size_t i;

    for (i = 0; i < fm->cap; i++) {
        free(fm->slot[i].key);
        alloc_result_release(&fm->slot[i].r);
    }
    free(fm->slot);
}

/* Reports a remembered result for pod p, whose claims (in the same order) are claims[]. */
static void report_as(struct rule_ctx *ctx, const struct fit_env *e, const struct dra_podspec *p,
                      struct alloc_result *r, const struct groups *G,
                      const struct dra_claim **claims)
{
    const struct dra_claim **own = r->claims;
    size_t i, n = 0;

    for (i = 0; i < p->nclaims && n < r->nclaims; i++)
        if (claims[i])
            claims[n++] = claims[i];
    if (n != r->nclaims)
        return;
    r->claims = claims;
    report(ctx, e, p, r, G);
    r->claims = own;
}

void rule__check_fit(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m, *claims_from;
    struct fit_memo fm = { NULL, 0, 0 }, *memo;
    const struct dra_claim **claims = NULL;
    struct fit_env e;
    size_t i, most = 0;
    int rc;

    for (i = 0; i < m->npods; i++)
        if (judged(ctx, m->pods[i]) && m->pods[i]->nclaims + 1 > most)
            most = m->pods[i]->nclaims + 1;
    if (!most)
        return;
    if (!(claims = calloc(most, sizeof(*claims))) || (rc = fit_env_init(ctx, &e)) < 0) {
        ctx->out->oom = 1;
        free(claims);
        if (claims)
            fit_env_free(&e);
        return;
    }
    /* Pods alike are judged once per run, or once per inventory that keeps its verdicts. */
    memo = e.verdicts ? e.verdicts : &fm;
    /* A model patched from the inventory's shares its claims array, and has the claims that
     * came since past the end of the inventory model's; any other (an admission request's)
     * finds its pod's claims in the inventory's. */
    claims_from = rc ? NULL : alloc_inventory_model(e.inv);
    if (claims_from && m->claims == claims_from->claims)
        claims_from = m;
    for (i = 0; rc == 0 && i < m->npods && !ctx->out->oom; i++) {
        const struct dra_podspec *p = m->pods[i];
        struct fit_entry *hit;
        struct alloc_result r;
        struct groups groups;
        char *key;

        if (!judged(ctx, p))
            continue;
        memset(claims, 0, most * sizeof(*claims));
        key = pod_key(m, e.inv, p, claims);
        if ((hit = memo_get(memo, key))) {
            free(key);
            if (!hit->fits && !hit->groups.none)
                report_as(ctx, &e, p, &hit->r, &hit->groups, claims);
            continue;
        }
        /* Explained as it goes: a pod that fits stops at its first node (first_fit), one that
         * does not is judged once, every node with its reason. */
        if (alloc_pod_in(e.inv, claims_from, p, 1, &r, NULL) != DD_OK) {
            ctx->out->oom = 1;
            free(key);
            break;
        }
        /* A pod whose claim kube-scheduler's PostFilter will deallocate has no final
         * verdict yet: the next snapshot, without that allocation, judges it. */
        if (r.verdict == ALLOC_FIT && !r.nfit && r.nnodes && r.deallocate < 0) {
            if (group_nodes(ctx, &e, &r, &groups))
                ctx->out->oom = 1;
            report(ctx, &e, p, &r, &groups);
            if (key && (hit = memo_put(memo, key))) {
                hit->r = r; /* kept: pods alike get the same reasons */
                hit->groups = groups;
            } else {
                alloc_result_release(&r);
            }
            continue;
        }
        if (key && (hit = memo_put(memo, key)))
            hit->fits = 1;
        alloc_result_release(&r);
    }
    memo_free(&fm);
    free(claims);
    fit_env_free(&e);
}

int dd_rules_inventory_remember(struct rule_inventory *ri)
{
    if (!ri->memo && !(ri->memo = calloc(1, sizeof(*ri->memo))))
        return -1;
    ri->e.verdicts = ri->memo;
    return 0;
}

/* ---- the inventory, built once per view (the webhook) --------------------------------------- */

struct rule_inventory *dd_rules_inventory_new(const struct dra_model *m,
                                              const struct rule_options *opt)
{
    static const struct rule_options defaults = RULE_OPTIONS_INIT;
    struct rule_inventory *ri = calloc(1, sizeof(*ri));
    struct rule_names known;
    struct kv_gates gates;
    struct rule_ctx ctx;
    int rc;

    if (!ri)
        return NULL;
    memset(&ctx, 0, sizeof(ctx));
    ctx.m = m;
    ctx.opt = opt ? opt : &defaults;
    /* Built as lint builds it (the pods admitted have no claims yet), or for a live snapshot's
     * own rules (lib/rules/snapshot: one per model, which its updates share). */
    ctx.surface = opt && opt->surface == DD_LIVE ? DD_LIVE : DD_LINT;
    rule__ctx_gates(&ctx, &gates);
    rule__known_drivers(&ctx, &known);
    ctx.known = &known;
    if ((rc = fit_env_init(&ctx, &ri->e)) < 0) {
        fit_env_free(&ri->e);
        free(ri);
        return NULL;
    }
    if (rc)
        ri->e.inv = NULL; /* nothing to judge with */
    return ri;
}

void dd_rules_inventory_free(struct rule_inventory *ri)
{
    if (ri) {
        fit_env_free(&ri->e);
        if (ri->memo)
            memo_free(ri->memo);
        free(ri->memo);
    }
    free(ri);
}
