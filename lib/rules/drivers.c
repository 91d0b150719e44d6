/*
 * drivers.c - drivers, their RBAC and their kubelet plugins: who may publish slices, where the
 * plugins run, and what a driver refuses when it prepares a claim.
 *
 *   DriverRBACDenied              the driver's ServiceAccount may not write ResourceSlices
 *   DriverNotPublishing           installed, allowed, and still no slices (live)
 *   DriverDaemonSetMissingOnNode  the plugin DaemonSet's nodeSelector, affinity or tolerations
 *                                 keep it off the nodes that need it: no plugin, so no slices
 *   StaleResourceSlices           node-local slices of a driver that no longer runs on that
 *                                 node: pods are scheduled onto capacity that cannot be prepared
 *   NodePrepareFailed             opaque parameters the driver's published schema refuses, or
 *                                 a feature gate of the driver they need (the kubelet's own
 *                                 prepare error is the controller's evidence, lib/rules/diagnose.c)
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/drivers.h"
#include "model/nodefit.h"
#include "model/rbac.h"

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

/* 1 when a SubjectAccessReview answered anything about the account: then its answers decide
 * and a verb nobody asked about is not judged (the RBAC objects may not be cached). */
static int sar_any(const struct dra_model *m, const char *ns, const char *sa)
{
    size_t i;

    for (i = 0; i < m->nsar; i++)
        if (STRIEQ(m->sar[i].ns, ns) && STRIEQ(m->sar[i].sa, sa))
            return 1;
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
    const char *const *verbs = drv_slice_verbs;
    const struct dra_model *m = ctx->m;
    const char *ns = d->ds->o.ns, *sa = d->ds->service_account;
    struct rbac_grant g[MAX_GRANTS];
    const struct rbac_grant *target = NULL;
    size_t n = rbac_sa_grants(m, ns, sa, g, MAX_GRANTS), i, len = 0, flen = 0;
    char missing[128] = "", msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    int nmissing = 0, unknown_role = 0, nsar = sar_any(m, ns, sa);

    if (n > MAX_GRANTS)
        n = MAX_GRANTS;
    for (i = 0; verbs[i]; i++) {
        int answer = sar_answer(m, ns, sa, verbs[i]);
        if (answer == 0 || (answer < 0 && !nsar &&
                            !rbac_sa_allows_cluster(m, ns, sa, verbs[i], RBAC_GROUP, RBAC_RESOURCE))) {
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
        ns, sa, dsn, rule__driver_label(d), missing, RBAC_GROUP,
        nsar ? " (SubjectAccessReview)" : "", *d->name ? d->name : "such");
    if (target) {
        cat(fix, sizeof(fix), &flen,
            "Add the verbs %s for resourceslices in apiGroup %s to ClusterRole %s (a kubelet "
            "plugin lists, watches, creates, updates and deletes its slices; get and patch are "
            "not needed).",
            missing, RBAC_GROUP, target->role->name);
        scope(ctx, emit(ctx, ctx->rule->severity, target->role, slice_rule_line(m, target->role),
                        msg, fix), NULL, rule__driver_scope(d), NULL);
        return;
    }
    for (i = 0; i < n; i++)
        if (!g[i].cluster_wide) {
            cat(msg, sizeof(msg), &len,
                " RoleBinding %s/%s grants only inside namespace %s, which cannot cover "
                "cluster-scoped ResourceSlices.",
                g[i].binding->ns, g[i].binding->name, g[i].binding->ns);
            snprintf(fix, sizeof(fix),
                     "Bind a ClusterRole granting list, watch, create, update, delete "
                     "on resourceslices to ServiceAccount %s/%s with a ClusterRoleBinding instead "
                     "of RoleBinding %s.",
                     ns, sa, g[i].binding->name);
            scope(ctx, emit(ctx, ctx->rule->severity, g[i].binding, 0, msg, fix), NULL,
                  rule__driver_scope(d), NULL);
            return;
        }
    /* The example driver's slice controller retries with a growing delay (client-go's
     * workqueue backoff, up to 1000 s): measured 12.7 s after the fix on a real node. */
    snprintf(fix, sizeof(fix),
             "Grant list, watch, create, update, delete on resourceslices.%s to "
             "ServiceAccount %s/%s with a ClusterRole and a ClusterRoleBinding, then restart "
             "the plugin pods of DaemonSet %s/%s to publish at once (a refused plugin retries "
             "with a growing delay).",
             RBAC_GROUP, ns, sa, d->ds->o.ns, d->ds->o.name);
    scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, rule__driver_scope(d), NULL);
}

/* 1 when the account may do what a plugin does to its slices (SAR answers first, then RBAC). */
static int may_publish(const struct dra_model *m, const char *ns, const char *sa)
{
    const char *const *verbs = drv_slice_verbs;
    int any = sar_any(m, ns, sa);
    size_t i;

    for (i = 0; verbs[i]; i++) {
        int a = sar_answer(m, ns, sa, verbs[i]);
        if (a == 0 || (a < 0 && !any &&
                       !rbac_sa_allows_cluster(m, ns, sa, verbs[i], RBAC_GROUP, RBAC_RESOURCE)))
            return 0;
    }
    return 1;
}

#define WHY_MAX 300

/* How many known nodes DaemonSet ds may run its plugin on; ok[k] says which (ok may be NULL). */
static size_t ds_nodes(const struct dra_model *m, const struct dra_podspec *ds, unsigned char *ok)
{
    char why[WHY_MAX];
    struct fit_pod fp;
    size_t k, n = 0;

    fit_pod_prepare(ds->spec, &fp);
    for (k = 0; k < m->nodes.n; k++) {
        int a = !fit_pod_excluded_prepared(&fp, m->nodes.v[k].json, 1, why, sizeof(why));
        if (ok)
            ok[k] = (unsigned char)a;
        n += (size_t)a;
    }
    return n;
}

/* Live only: in a repository, slices are normally absent (drivers publish them at run time). */
void rule__check_publishing(struct rule_ctx *ctx)
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
        /* A denial is DriverRBACDenied's to report, and a DaemonSet that may run on no node
         * DriverDaemonSetMissingOnNode's; the second name of a multi-driver DaemonSet
         * (NVIDIA's compute domains) may rightly publish nothing, unless asked for. */
        if (has || !*d->name || !may_publish(m, d->ds->o.ns, d->ds->service_account) ||
            (d->profile && !STRIEQ(d->name, d->profile->plugins[0].driver)) ||
            (m->nodes.n && !ds_nodes(m, d->ds, NULL)))
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
        scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, rule__driver_scope(d), NULL);
    }
}

void rule__check_rbac(struct rule_ctx *ctx)
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

/* 1 when driver d is the first entry of its DaemonSet (a DaemonSet is judged once). */
static int first_of_ds(const struct dra_model *m, size_t i)
{
    size_t j;

    for (j = 0; j < i; j++)
        if (m->drivers[j].ds == m->drivers[i].ds)
            return 0;
    return 1;
}

/* The names of the DaemonSet's drivers, for messages. */
static void ds_drivers(const struct dra_model *m, const struct dra_podspec *ds, char *buf,
                       size_t size)
{
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; i < m->ndrivers; i++)
        if (m->drivers[i].ds == ds)
            cat(buf, size, &len, "%s%s", len ? ", " : "", *m->drivers[i].name
                                                          ? m->drivers[i].name : "of unknown name");
}

/* 1 when pod p uses a device of driver (its claims' classes pin it). */
static int pod_wants(const struct dra_model *m, const struct dra_podspec *p, const char *driver)
{
    size_t i, j, k, n;

    for (i = 0; i < p->nclaims; i++) {
        const struct dra_claim *c = dra_pod_claim_resolve(m, p, &p->claims[i]);
        if (!c && p->claims[i].tmpl)
            c = dra_find_claim(m, p->o.ns, p->claims[i].tmpl, 1);
        for (j = 0; c && j < c->spec.nreq; j++) {
            const struct dra_class *cls = c->spec.req[j].class_name
                                              ? dra_find_class(m, c->spec.req[j].class_name) : NULL;
            for (k = 0; cls && k < cls->nsel; k++) {
                const struct cel_driver_ref *refs;
                size_t r;
                if (!cls->sel[k].prog ||
                    cel_program_drivers(cls->sel[k].prog, &refs, &n) != CEL_DRIVERS_SET)
                    continue;
                for (r = 0; r < n; r++)
                    if (STRIEQ(refs[r].name, driver))
                        return 1;
            }
        }
    }
    return 0;
}

/* Marks pub[k] for each node k a node-local slice of one of DaemonSet ds's drivers is
 * published for, and returns whether there is one anywhere (on a node the input may not
 * hold): then something does publish there (a plugin the input does not show, or stale
 * slices, which StaleResourceSlices judges), and "no slices there" would be false. */
static int published_on(const struct dra_model *m, const struct dra_podspec *ds,
                        unsigned char *pub)
{
    size_t i, j, k;
    int any = 0;

    memset(pub, 0, m->nodes.n);
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        int mine = 0;
        for (j = 0; *s->node && j < m->ndrivers && !mine; j++)
            mine = m->drivers[j].ds == ds && STRIEQ(m->drivers[j].name, s->driver);
        if (!mine)
            continue;
        any = 1;
        for (k = dra_node_first(m, s->node); k != SIZE_MAX; k = dra_node_next(m, k))
            pub[k] = 1;
    }
    return any;
}

/* What fit_pod_excluded reads of a pod spec, as text (NULL on ENOMEM): pods of one template
 * (or alike) share it, and with it where they may go. */
static char *constraints(const cJSON *spec)
{
    const cJSON *part[3] = { dd_json_path(spec, "nodeSelector", NULL),
                             dd_json_path(spec, "affinity", "nodeAffinity", NULL),
                             dd_json_path(spec, "tolerations", NULL) };
    char *text[3] = { NULL, NULL, NULL }, *out = NULL;
    size_t i, len = 1;

    for (i = 0; i < 3; i++) {
        if (part[i] && !(text[i] = cJSON_PrintUnformatted(part[i])))
            goto out;
        len += (text[i] ? strlen(text[i]) : 0) + 1;
    }
    if ((out = malloc(len)))
        snprintf(out, len, "%s|%s|%s", text[0] ? text[0] : "", text[1] ? text[1] : "",
                 text[2] ? text[2] : "");
out:
    for (i = 0; i < 3; i++)
        free(text[i]);
    return out;
}

/* Where a pod may go against where a DaemonSet's plugin may run. */
struct pod_fit {
    size_t pod_nodes;     /* nodes the pod may use (counted only while both is 0) */
    size_t both;          /* of them, nodes the plugin may run on too */
    size_t first;         /* the first node the pod may use and the plugin not, or SIZE_MAX */
};

static void pod_fit(const struct dra_model *m, const cJSON *spec, const unsigned char *ok,
                    struct pod_fit *f)
{
    char why[WHY_MAX];
    struct fit_pod fp;
    size_t k;

    f->first = SIZE_MAX;
    fit_pod_prepare(spec, &fp);
    /* A node both may use settles it: most pods stop at the first. */
    for (k = 0; k < m->nodes.n && !f->both; k++)
        if (!fit_pod_excluded_prepared(&fp, m->nodes.v[k].json, 0, why, sizeof(why))) {
            f->pod_nodes++;
            f->both += ok[k];
            if (!ok[k] && f->first == SIZE_MAX)
                f->first = k;
        }
}

/*
 * Where DaemonSet ds (the first driver of it) may run its plugin and where its drivers publish,
 * node by node: what DriverDaemonSetMissingOnNode reads of objects other than Pods, which costs
 * the nodes and slices of the cluster.  Worked out per run, or once per model in its cache.
 */
struct plugin_site {
    const cJSON *ds;         /* the DaemonSet's object: which one this is (NULL: none) */
    size_t allowed;          /* ds_nodes' count */
    int anywhere;            /* published_on's answer */
    unsigned char *ok, *pub; /* owned: per node, ds_nodes' and published_on's marks */
};

/* The cache's part (rule_cache.plugin_sites): per driver of the model, its DaemonSet's sites
 * when it is the first of it, and the arrays of the model it was built from (compared only). */
struct rule_plugin_sites {
    const struct dra_obj *nodes;
    size_t nnodes;
    const struct dra_slice *slices;
    size_t nslices;
    struct plugin_site *v;
    size_t n;
};

static void site_release(struct plugin_site *ps)
{
    free(ps->ok);
    free(ps->pub);
}

/* ps for driver i of m (the first of its DaemonSet).  -1 on ENOMEM. */
static int site_init(const struct dra_model *m, size_t i, struct plugin_site *ps)
{
    const struct dra_podspec *ds = m->drivers[i].ds;

    ps->ds = ds->o.json;
    ps->ok = malloc(m->nodes.n + 1);
    ps->pub = malloc(m->nodes.n + 1);
    if (!ps->ok || !ps->pub) {
        site_release(ps);
        return -1;
    }
    ps->allowed = ds_nodes(m, ds, ps->ok);
    ps->anywhere = published_on(m, ds, ps->pub);
    return 0;
}

struct rule_plugin_sites *rule__plugin_sites_new(const struct dra_model *m)
{
    struct rule_plugin_sites *c = calloc(1, sizeof(*c));
    size_t i;

    if (!c || !(c->v = calloc(m->ndrivers + 1, sizeof(*c->v)))) {
        free(c);
        return NULL;
    }
    c->nodes = m->nodes.v;
    c->nnodes = m->nodes.n;
    c->slices = m->slices;
    c->nslices = m->nslices;
    c->n = m->ndrivers;
    for (i = 0; m->nodes.n && i < m->ndrivers; i++)
        if (first_of_ds(m, i) && site_init(m, i, &c->v[i])) {
            rule__plugin_sites_free(c);
            return NULL;
        }
    return c;
}

void rule__plugin_sites_free(struct rule_plugin_sites *c)
{
    size_t i;

    for (i = 0; c && i < c->n; i++)
        site_release(&c->v[i]);
    if (c)
        free(c->v);
    free(c);
}

/* The cached sites of driver i, when the cache is of this model or one patched from it: its
 * very Node and slice arrays (a patched model shares its base's), and the same DaemonSet. */
static const struct plugin_site *cached_site(const struct rule_ctx *ctx, size_t i)
{
    const struct rule_plugin_sites *c = ctx->opt->cache ? ctx->opt->cache->plugin_sites : NULL;
    const struct dra_model *m = ctx->m;

    if (!c || c->nodes != m->nodes.v || c->nnodes != m->nodes.n || c->slices != m->slices ||
        c->nslices != m->nslices || c->n != m->ndrivers || !c->v[i].ds ||
        c->v[i].ds != m->drivers[i].ds->o.json)
        return NULL;
    return &c->v[i];
}

/* plugin_nodes for driver d, the first of its DaemonSet, that may run at ps. */
static void plugin_nodes_ds(struct rule_ctx *ctx, const struct dra_driver *d,
                            const struct plugin_site *ps, int pods_only)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], dsn[300], why[WHY_MAX], names[300];
    struct rule_memo *fits;
    size_t j, k, len;

    objname(&d->ds->o, dsn, sizeof(dsn));
    ds_drivers(m, d->ds, names, sizeof(names));
    if (!ps->allowed) {
        if (ps->anywhere || pods_only)
            return;
        len = 0;
        cat(msg, sizeof(msg), &len, "DaemonSet %s (driver %s) can run its kubelet plugin on "
            "none of the %zu node(s), so no node publishes its devices and every claim for "
            "them stays unallocated (\"cannot allocate all claims\"):", dsn, names,
            m->nodes.n);
        for (k = 0; k < m->nodes.n && k < 8; k++) {
            fit_pod_excluded(d->ds->spec, m->nodes.v[k].json, 1, why, sizeof(why));
            cat(msg, sizeof(msg), &len, " %s: %s;", m->nodes.v[k].name, why);
        }
        msg[len - 1] = '.';
        snprintf(fix, sizeof(fix), "Make the DaemonSet's nodeSelector, node affinity and "
                 "tolerations match the device nodes (a chart's kubeletPlugin.nodeSelector / "
                 "affinity / tolerations; NVIDIA's default affinity wants Node Feature "
                 "Discovery's PCI labels), or label and untaint those nodes.");
        scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL,
              *d->name ? d->name : NULL, NULL);
        return;
    }
    /* Pods that need the driver and may go only where its plugin cannot. */
    if (!(fits = rule__memo_new())) {
        ctx->out->oom = 1;
        return;
    }
    for (j = 0; *d->name && j < m->npods; j++) {
        const struct dra_podspec *p = m->pods[j];
        struct pod_fit *f;
        char *key;
        int fresh;
        if (*p->node || p->replicas < 0 || !pod_wants(m, p, d->name))
            continue;
        key = constraints(p->spec);
        f = key ? rule__memo_get(fits, NULL, NULL, key, sizeof(*f), &fresh) : NULL;
        free(key);
        if (!f) {
            ctx->out->oom = 1;
            break;
        }
        if (fresh)
            pod_fit(m, p->spec, ps->ok, f);
        if (!f->pod_nodes || f->both || ps->pub[f->first])
            continue;
        k = f->first;
        fit_pod_excluded(d->ds->spec, m->nodes.v[k].json, 1, why, sizeof(why));
        snprintf(msg, sizeof(msg),
                 "DaemonSet %s (driver %s) cannot run its kubelet plugin on the %zu node(s) "
                 "%s %s may use (node %s: %s), so no device of the driver is ever published "
                 "there and the pod stays Pending (\"cannot allocate all claims\").",
                 dsn, names, f->pod_nodes, p->o.kind, p->o.name, m->nodes.v[k].name, why);
        snprintf(fix, sizeof(fix), "Let DaemonSet %s run on node %s (its nodeSelector, "
                 "affinity, tolerations), or send the pod where the plugin runs.", dsn,
                 m->nodes.v[k].name);
        scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, d->name,
              m->nodes.v[k].name);
    }
    rule__memo_free(fits);
}

/* DriverDaemonSetMissingOnNode: a DaemonSet that can run nowhere (pods_only: not judged), and
 * per podspec, one that cannot reach where the pod may go. */
static void plugin_nodes(struct rule_ctx *ctx, int pods_only)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    if (!m->nodes.n)
        return;
    for (i = 0; i < m->ndrivers; i++) {
        const struct plugin_site *ps;
        struct plugin_site own = { NULL, 0, 0, NULL, NULL };
        if (!first_of_ds(m, i))
            continue;
        if (!(ps = cached_site(ctx, i)) && site_init(m, i, &own)) {
            ctx->out->oom = 1;
            return;
        }
        plugin_nodes_ds(ctx, &m->drivers[i], ps ? ps : &own, pods_only);
        site_release(&own);
    }
}

void rule__check_plugin_nodes(struct rule_ctx *ctx)
{
    plugin_nodes(ctx, 0);
}

void rule__check_plugin_nodes_pods(struct rule_ctx *ctx)
{
    plugin_nodes(ctx, 1);
}

/* 1 when a Ready pod of DaemonSet ds runs on node. */
static int plugin_runs(const struct dra_model *m, const struct dra_podspec *ds, const char *node)
{
    const cJSON *pod = dra_plugin_pod(m, ds, node);

    return pod && dra_pod_ready(pod);
}

void rule__check_stale_slices(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    size_t i, j, h, unnamed = 0, cap = 16, *first;

    /* Only a live cluster shows where plugins run. */
    if (!m->live)
        return;
    for (i = 0; i < m->ndrivers; i++)
        unnamed += !*m->drivers[i].name;
    while (cap < 2 * m->nslices + 2)
        cap *= 2;
    if (!(first = calloc(cap, sizeof(*first)))) { /* (driver, node) seen: 1 + its first slice */
        ctx->out->oom = 1;
        return;
    }
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        const struct dra_driver *d = NULL;
        int seen = 0;
        if (!*s->node)
            continue;
        /* One finding per driver and node. */
        for (h = dra_key_hash(s->driver, s->node) & (cap - 1); first[h] && !seen; h = (h + 1) & (cap - 1))
            seen = STRIEQ(m->slices[first[h] - 1].driver, s->driver) &&
                   STRIEQ(m->slices[first[h] - 1].node, s->node);
        if (!seen)
            first[h] = i + 1;
        for (j = 0; j < m->ndrivers && !d; j++)
            if (STRIEQ(m->drivers[j].name, s->driver))
                d = &m->drivers[j];
        /* Where no plugin pod is known at all (a cache without them), nothing is judged. */
        if (seen || (!d && unnamed) || (d && (!m->plugin_pods.n || plugin_runs(m, d->ds, s->node))))
            continue;
        if (d) {
            objname(&d->ds->o, dsn, sizeof(dsn));
            snprintf(msg, sizeof(msg),
                     "ResourceSlice %s says driver %s has devices on node %s, but no Ready pod of "
                     "its DaemonSet %s runs there: the scheduler still places pods onto these "
                     "devices, and the kubelet cannot prepare them (\"DRA driver %s is not "
                     "registered\"). The kubelet removes a gone plugin's slices 30 s after it "
                     "disconnects; slices of a plugin that never registered stay.",
                     s->o.name, s->driver, s->node, dsn, s->driver);
            snprintf(fix, sizeof(fix), "Get the plugin running on node %s (kubectl get pods -n %s "
                     "-o wide; its logs), or delete the stale slices: kubectl delete "
                     "resourceslices --field-selector spec.driver=%s,spec.nodeName=%s.", s->node,
                     d->ds->o.ns, s->driver, s->node);
        } else {
            snprintf(msg, sizeof(msg),
                     "ResourceSlice %s says driver %s has devices on node %s, but no kubelet "
                     "plugin of that driver is installed (no DaemonSet of it): the scheduler "
                     "still places pods onto these devices, and the kubelet cannot prepare them "
                     "(\"DRA driver %s is not registered\").",
                     s->o.name, s->driver, s->node, s->driver);
            snprintf(fix, sizeof(fix), "Reinstall the driver, or delete its stale slices: kubectl "
                     "delete resourceslices --field-selector spec.driver=%s,spec.nodeName=%s.",
                     s->driver, s->node);
        }
        scope(ctx, emit(ctx, ctx->rule->severity, &s->o, 0, msg, fix), NULL, s->driver, s->node);
    }
    free(first);
}

/* The value of gate in a FEATURE_GATES list ("A=true,B=false"): 1, 0, or -1 unset. */
static int gate_set(const char *gates, const char *gate)
{
    size_t n = strlen(gate);
    const char *p;

    for (p = gates; p && (p = strstr(p, gate)); p += n)
        if ((p == gates || p[-1] == ',') && p[n] == '=')
            return !strncmp(p + n + 1, "true", 4);
    return -1;
}

/* Whether the installed plugin of driver enables gate: 1, 0, -1 when no DaemonSet says. */
static int driver_gate(const struct dra_model *m, const char *driver, const char *gate)
{
    size_t i;

    for (i = 0; i < m->ndrivers; i++)
        if (STRIEQ(m->drivers[i].name, driver)) {
            const char *g = dra_container_env(m->drivers[i].ctr, "FEATURE_GATES", NULL);
            return g ? gate_set(g, gate) == 1 : 0;
        }
    return -1;
}

/* The driver's refusal of parameters (a config entry's opaque.parameters), into err; 1 when
 * refused. */
static int params_refused(const struct dra_model *m, const char *driver, const cJSON *params,
                          char *err, size_t size, int *assumed)
{
    const struct drv_profile *p = drv_profile_for_driver(driver);
    const char *av = dd_json_str(params, "apiVersion", NULL);
    const char *kind = dd_json_str(params, "kind", NULL);
    size_t i, j;

    *assumed = 0;
    for (i = 0; p && av && kind && i < p->nparams; i++) {
        const struct drv_param *r = &p->params[i];
        const char *v;
        int kind_ok = 0;
        if (!STRIEQ(r->api_version, av))
            continue;
        for (j = 0; j < 4 && r->kinds[j]; j++)
            kind_ok |= STRIEQ(r->kinds[j], kind);
        v = kind_ok ? dd_json_str(params, r->path[0], r->path[1], r->path[2], NULL) : NULL;
        if (!v)
            continue;
        for (j = 0; j < 8 && r->values[j] && !STRIEQ(r->values[j], v); j++)
            ;
        if (j == 8 || !r->values[j]) {
            snprintf(err, size, r->error, v);
            return 1;
        }
        for (j = 0; j < 4 && r->gated[j]; j++)
            if (STRIEQ(r->gated[j], v)) {
                int g = driver_gate(m, driver, r->gate[j]);
                if (g == 1)
                    break;
                *assumed = g < 0;
                snprintf(err, size, r->gate_error, v, r->gate[j]);
                return 1;
            }
    }
    return 0;
}

void rule__check_config_params(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], err[512];
    size_t i, k;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const cJSON *cfg;
        k = 0;
        cJSON_ArrayForEach(cfg, c->spec.config) {
            const char *driver = dd_json_str(cfg, "opaque", "driver", NULL);
            int assumed;
            k++;
            if (!driver || !params_refused(m, driver, dd_json_path(cfg, "opaque", "parameters",
                                                                   NULL), err, sizeof(err),
                                           &assumed))
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s: config[%zu] for driver %s is refused when the claim is prepared "
                     "(%s); the kubelet reports \"Failed to prepare dynamic resources: prepare "
                     "dynamic resources: NodePrepareResources failed for ResourceClaim ...\" and "
                     "the pod stays in ContainerCreating.%s",
                     c->o.kind, objname(&c->o, on, sizeof(on)), k - 1, driver, err,
                     assumed ? " Assumed: the driver's feature gates are its defaults (its "
                               "DaemonSet is not in the input)." : "");
            snprintf(fix, sizeof(fix), "Use a value driver %s accepts, or enable the feature gate "
                     "it names in the driver's installation (chart value featureGates, env "
                     "FEATURE_GATES).", driver);
            emit(ctx, assumed ? DD_SEV_WARNING : ctx->rule->severity, &c->o, 0, msg, fix);
        }
    }
}

/* ---- ClaimStatusRBACDenied ----------------------------------------------------------------- */

/* The first cluster-wide ClusterRole of ServiceAccount ns/sa allowing verb on resource.k8s.io
 * resource (for the object name, when not NULL), or NULL. */
static const struct dra_obj *sa_role_for(const struct dra_model *m, const char *ns,
                                         const char *sa, const char *verb, const char *resource,
                                         const char *name)
{
    struct rbac_grant g[32];
    size_t i, n = rbac_sa_grants(m, ns, sa, g, 32);

    for (i = 0; i < n && i < 32; i++)
        if (g[i].cluster_wide && g[i].role && STRIEQ(g[i].role_kind, "ClusterRole") &&
            rbac_role_allows_named(m, g[i].role, verb, RBAC_GROUP, resource, name))
            return g[i].role;
    return NULL;
}

static const struct dra_obj *sa_may_write(const struct dra_model *m, const char *ns,
                                          const char *sa, const char *resource,
                                          const char *name)
{
    const struct dra_obj *r = sa_role_for(m, ns, sa, "update", resource, name);

    return r ? r : sa_role_for(m, ns, sa, "patch", resource, name);
}

/* A driver that writes claim status (its role updates resourceclaims/status) needs
 * resourceclaims/driver for its name from 1.36 (pkg/registry/resource/utils.go,
 * AuthorizedForDeviceStatus: associated-node:<verb> from a pod on the claim's node, else
 * arbitrary-node:<verb>). */
static void status_driver_one(struct rule_ctx *ctx, const struct dra_driver *d)
{
    static const char *const verbs[] = { "associated-node:update", "associated-node:patch",
                                         "arbitrary-node:update", "arbitrary-node:patch", NULL };
    const struct dra_model *m = ctx->m;
    const char *ns = d->ds->o.ns, *sa = d->ds->service_account;
    const struct dra_obj *status = sa_may_write(m, ns, sa, "resourceclaims/status", NULL);
    char msg[MSG_MAX], fix[MSG_MAX], dsn[300], gate[128];
    size_t i;

    if (!status || !*d->name)
        return;
    for (i = 0; verbs[i]; i++)
        if (sa_role_for(m, ns, sa, verbs[i], "resourceclaims/driver", d->name))
            return;
    objname(&d->ds->o, dsn, sizeof(dsn));
    snprintf(msg, sizeof(msg),
             "Driver %s (DaemonSet %s) writes ResourceClaim status (ClusterRole %s lets "
             "ServiceAccount %s/%s update resourceclaims/status), but nothing lets it update "
             "resourceclaims/driver for %s: Kubernetes 1.%d (%s) refuses its status.devices "
             "writes with \"changing status.devices requires resource=\\\"resourceclaims/"
             "driver\\\", verb=\\\"[associated-node:update arbitrary-node:update]\\\" "
             "permission\", so the device status it reports (network data, conditions) never "
             "reaches the claim.", d->name, dsn, status->name, ns, sa, d->name,
             ctx->gates->minor, kv_gate_says(ctx->gates, KV_GATE_GRANULAR_STATUS_AUTHZ, gate,
                                             sizeof(gate)));
    snprintf(fix, sizeof(fix), "Add to ClusterRole %s: {apiGroups: [resource.k8s.io], resources: "
             "[resourceclaims/driver], resourceNames: [%s], verbs: [associated-node:update, "
             "associated-node:patch]} (arbitrary-node:... for a controller that is not on the "
             "claim's node).", status->name, d->name);
    /* Its role shows it means to write status, not that it does (a warning): a binder's
     * refusal below is certain. */
    scope(ctx, emit(ctx, DD_SEV_WARNING, &d->ds->o, 0, msg, fix), NULL, rule__driver_scope(d),
          NULL);
}

/* A scheduler or binder (it binds pods: create pods/binding) that writes claim status needs
 * resourceclaims/binding from 1.36 (AuthorizedForBinding): every pod with claims it schedules
 * stays Pending. */
static void status_binder_one(struct rule_ctx *ctx, const char *ns, const char *sa)
{
    const struct dra_model *m = ctx->m;
    const struct dra_obj *status = sa_may_write(m, ns, sa, "resourceclaims/status", NULL);
    char msg[MSG_MAX], fix[MSG_MAX], gate[128];
    struct rbac_grant g[32];
    size_t i, n, pods = 0;

    if (!status || sa_may_write(m, ns, sa, "resourceclaims/binding", NULL))
        return;
    /* It binds pods: a scheduler, not a controller that only reads claims. */
    n = rbac_sa_grants(m, ns, sa, g, 32);
    for (i = 0; i < n && i < 32; i++)
        if (g[i].cluster_wide && g[i].role &&
            rbac_role_allows(m, g[i].role, "create", "", "pods/binding"))
            break;
    if (i == n || i == 32)
        return;
    for (i = 0; i < m->npods; i++) {
        const char *sched = dd_json_str(m->pods[i]->spec, "schedulerName", NULL);
        pods += sched && strcmp(sched, "default-scheduler") && m->pods[i]->nclaims;
    }
    snprintf(msg, sizeof(msg),
             "ServiceAccount %s/%s binds pods and writes ResourceClaim status (ClusterRole %s: "
             "resourceclaims/status), but may not update resourceclaims/binding: Kubernetes 1.%d "
             "(%s) refuses its claim allocations with \"changing status.allocation or "
             "status.reservedFor requires resource=\\\"resourceclaims/binding\\\", "
             "verb=\\\"update\\\" permission\", so every pod with claims it schedules stays "
             "Pending%s.", ns, sa, status->name, ctx->gates->minor,
             kv_gate_says(ctx->gates, KV_GATE_GRANULAR_STATUS_AUTHZ, gate, sizeof(gate)),
             pods ? " (pods here with claims name a scheduler other than default-scheduler)" : "");
    snprintf(fix, sizeof(fix), "Add to ClusterRole %s: {apiGroups: [resource.k8s.io], resources: "
             "[resourceclaims/binding], verbs: [update, patch]} (as the kube-scheduler's role "
             "has from 1.36; kubernetes/kubernetes#138149).", status->name);
    emit(ctx, ctx->rule->severity, status, 0, msg, fix);
}

void rule__check_claim_status_rbac(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    if (!rule__gate(ctx, KV_GATE_GRANULAR_STATUS_AUTHZ))
        return;
    for (i = 0; i < m->ndrivers; i++)
        status_driver_one(ctx, &m->drivers[i]);
    /* Every ServiceAccount a ClusterRoleBinding names, once. */
    for (i = 0; i < m->bindings.n; i++) {
        const struct dra_obj *b = &m->bindings.v[i];
        const cJSON *subj;
        size_t j;
        if (!STRIEQ(b->kind, "ClusterRoleBinding"))
            continue;
        cJSON_ArrayForEach(subj, dd_json_arr(b->json, "subjects", NULL)) {
            const char *k = dd_json_str(subj, "kind", NULL), *n = dd_json_str(subj, "name", NULL);
            const char *ns = dd_json_str(subj, "namespace", NULL);
            int seen = 0;
            if (!k || !n || !ns || !STRIEQ(k, "ServiceAccount"))
                continue;
            for (j = 0; j < i && !seen; j++) {
                const cJSON *o;
                cJSON_ArrayForEach(o, dd_json_arr(m->bindings.v[j].json, "subjects", NULL))
                    seen |= STRIEQ(m->bindings.v[j].kind, "ClusterRoleBinding") &&
                            dd_json_str(o, "name", NULL) && dd_json_str(o, "namespace", NULL) &&
                            STRIEQ(dd_json_str(o, "name", NULL), n) &&
                            STRIEQ(dd_json_str(o, "namespace", NULL), ns);
            }
            if (!seen)
                status_binder_one(ctx, ns, n);
        }
    }
}

/* ---- DriverNotPublishingOnNode ----------------------------------------------------------- */

/* Node-local slices of driver per Node of m->nodes (here[k], and their devices[k]), counted
 * in one pass over the slices; returns how many node-local slices it has in all. */
static size_t node_slices(const struct dra_model *m, const char *driver, size_t *here,
                          size_t *devices)
{
    size_t i, k, all = 0;

    memset(here, 0, m->nodes.n * sizeof(*here));
    memset(devices, 0, m->nodes.n * sizeof(*devices));
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        if (!*s->node || !STRIEQ(s->driver, driver))
            continue;
        all++;
        if ((k = dra_node_first(m, s->node)) != SIZE_MAX) {
            here[k]++;
            devices[k] += s->ndev;
        }
    }
    return all;
}

/* Live only: a driver's plugin is Ready on a node, and publishes no slice there (it does on
 * other nodes: node-local is its way), or publishes only slices without devices. */
void rule__check_publishing_on_node(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    size_t i, k, here, devices, elsewhere, all, *nhere, *ndev;

    if (!m->live || !m->nodes.n)
        return;
    nhere = malloc(m->nodes.n * sizeof(*nhere));
    ndev = malloc(m->nodes.n * sizeof(*ndev));
    if (!nhere || !ndev) {
        ctx->out->oom = 1;
        goto out;
    }
    for (i = 0; i < m->ndrivers; i++) {
        const struct dra_driver *d = &m->drivers[i];
        /* The second name of a multi-driver DaemonSet may rightly publish nothing. */
        if (!*d->name || (d->profile && !STRIEQ(d->name, d->profile->plugins[0].driver)))
            continue;
        all = node_slices(m, d->name, nhere, ndev);
        for (k = 0; k < m->nodes.n; k++) {
            const char *node = m->nodes.v[k].name;
            const cJSON *pod = dra_plugin_pod(m, d->ds, node);
            if (!pod || !dra_pod_ready(pod))
                continue;
            /* Nodes of one name (a repeated object) count as the first of them. */
            here = nhere[dra_node_first(m, node)];
            devices = ndev[dra_node_first(m, node)];
            elsewhere = all - here;
            if ((here && devices) || (!here && !elsewhere))
                continue; /* publishing, or nowhere at all: DriverNotPublishing's */
            objname(&d->ds->o, dsn, sizeof(dsn));
            if (here)
                snprintf(msg, sizeof(msg), "Driver %s's plugin runs and is ready on node %s "
                         "(DaemonSet %s), but its %zu ResourceSlice(s) for that node list no "
                         "device: it found none there, so claims of its devices cannot be "
                         "allocated on %s (\"cannot allocate all claims\").", d->name, node, dsn,
                         here, node);
            else
                snprintf(msg, sizeof(msg), "Driver %s's plugin runs and is ready on node %s "
                         "(DaemonSet %s), and publishes node-local ResourceSlices on %zu other "
                         "node(s), but none for %s: its devices there are invisible to the "
                         "scheduler (\"cannot allocate all claims\").", d->name, node, dsn,
                         elsewhere, node);
            snprintf(fix, sizeof(fix), "Read the logs of DaemonSet %s's pod on node %s (kubectl "
                     "logs): the plugin did not find or could not publish the node's devices "
                     "(device discovery, its configuration such as a device count of 0, the "
                     "node's drivers).", dsn, node);
            scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, d->name,
                  node);
        }
    }
out:
    free(nhere);
    free(ndev);
}
