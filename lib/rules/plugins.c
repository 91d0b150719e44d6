/*
 * plugins.c - where the drivers' kubelet plugins run, against where their devices are wanted
 * and where their slices say they are.
 *
 *   DriverDaemonSetMissingOnNode  the plugin DaemonSet's nodeSelector, affinity or tolerations
 *                                 keep it off every node (or off the nodes the driver's pods
 *                                 must use): no plugin there, so no slices there
 *   StaleResourceSlices           node-local slices of a driver that no longer runs on that node:
 *                                 pods are scheduled onto capacity that can never be prepared
 */
#include "rules_int.h"

#include <stdlib.h>

#include "json.h"
#include "nodefit.h"

#define WHY_MAX 300

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

/* 1 when a node-local slice of one of DaemonSet ds's drivers is published for node (any node
 * when node is NULL): then something does publish there (a plugin the input does not show,
 * or stale slices, which StaleResourceSlices judges), and "no slices there" would be false. */
static int published_on(const struct dra_model *m, const struct dra_podspec *ds,
                        const char *node)
{
    size_t i, j;

    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        if (!*s->node || (node && !STRIEQ(s->node, node)))
            continue;
        for (j = 0; j < m->ndrivers; j++)
            if (m->drivers[j].ds == ds && STRIEQ(m->drivers[j].name, s->driver))
                return 1;
    }
    return 0;
}

void rule__check_plugin_nodes(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], dsn[300], why[WHY_MAX], names[300];
    unsigned char *ok;
    size_t i, j, k, allowed, len;

    if (!m->nodes.n)
        return;
    if (!(ok = malloc(m->nodes.n))) {
        ctx->out->oom = 1;
        return;
    }
    for (i = 0; i < m->ndrivers; i++) {
        const struct dra_driver *d = &m->drivers[i];
        if (!first_of_ds(m, i))
            continue;
        allowed = 0;
        for (k = 0; k < m->nodes.n; k++)
            allowed += ok[k] = !fit_pod_excluded(d->ds->spec, m->nodes.v[k].json, 1, why,
                                                 sizeof(why));
        objname(&d->ds->o, dsn, sizeof(dsn));
        ds_drivers(m, d->ds, names, sizeof(names));
        if (!allowed) {
            if (published_on(m, d->ds, NULL))
                continue;
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
            continue;
        }
        /* Pods that need the driver and may go only where its plugin cannot. */
        for (j = 0; *d->name && j < m->npods; j++) {
            const struct dra_podspec *p = &m->pods[j];
            size_t pod_nodes = 0, both = 0, first = (size_t)-1;
            if (*p->node || p->replicas < 0 || !pod_wants(m, p, d->name))
                continue;
            for (k = 0; k < m->nodes.n; k++)
                if (!fit_pod_excluded(p->spec, m->nodes.v[k].json, 0, why, sizeof(why))) {
                    pod_nodes++;
                    both += ok[k];
                    if (!ok[k] && first == (size_t)-1)
                        first = k;
                }
            if (!pod_nodes || both || published_on(m, d->ds, m->nodes.v[first].name))
                continue;
            fit_pod_excluded(d->ds->spec, m->nodes.v[first].json, 1, why, sizeof(why));
            snprintf(msg, sizeof(msg),
                     "DaemonSet %s (driver %s) cannot run its kubelet plugin on the %zu node(s) "
                     "%s %s may use (node %s: %s), so no device of the driver is ever published "
                     "there and the pod stays Pending (\"cannot allocate all claims\").",
                     dsn, names, pod_nodes, p->o.kind, p->o.name, m->nodes.v[first].name, why);
            snprintf(fix, sizeof(fix), "Let DaemonSet %s run on node %s (its nodeSelector, "
                     "affinity, tolerations), or send the pod where the plugin runs.", dsn,
                     m->nodes.v[first].name);
            scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, 0, msg, fix), NULL, d->name,
                  m->nodes.v[first].name);
        }
    }
    free(ok);
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
    size_t i, j, unnamed = 0;

    /* Only a live cluster shows where plugins run. */
    if (!m->live)
        return;
    for (i = 0; i < m->ndrivers; i++)
        unnamed += !*m->drivers[i].name;
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        const struct dra_driver *d = NULL;
        int seen = 0;
        if (!*s->node)
            continue;
        /* One finding per driver and node. */
        for (j = 0; j < i && !seen; j++)
            seen = STRIEQ(m->slices[j].driver, s->driver) && STRIEQ(m->slices[j].node, s->node);
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
}
