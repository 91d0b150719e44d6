/*
 * runtime.c - the container runtime and CDI: whether the devices a driver prepared reach the
 * containers, and stay healthy there.
 *
 *   CDIDisabled          the runtime has CDI off (containerd's enable_cdi, by release)
 *   CDISpecDirNotShared  the driver writes CDI specs where the runtime does not read them
 *   DeviceUnhealthy      the kubelet reports a running container's device Unhealthy
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/cri.h"

/* ---- CDI ----------------------------------------------------------------- */

static int uses_dra(const struct dra_model *m)
{
    return m->ndrivers || m->nclasses || m->nclaims || m->nslices;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static void cdi_enabled_one(struct rule_ctx *ctx, const struct dra_runtime *r)
{
    const struct cri_config *c = &r->cfg;
    struct dra_obj file;
    const struct dra_obj *o = r->obj;
    char msg[MSG_MAX], fix[MSG_MAX], where[300];
    enum dd_severity sev = ctx->rule->severity;
    size_t len = 0;

    if (c->enable_cdi)
        return;
    if (!o) {
        memset(&file, 0, sizeof(file));
        file.api_version = "";
        file.kind = "ContainerdConfig";
        file.ns = "";
        file.name = c->file ? base_name(c->file) : "config.toml";
        file.file = c->file;
        file.line = c->enable_cdi_line;
        o = &file;
        snprintf(where, sizeof(where), "containerd (config version %d)", c->version);
    } else {
        snprintf(where, sizeof(where), "containerd on node %s (%s)", r->node,
                 r->src == DRA_RT_AGENT ? "reported by the dra-doctor node agent" : c->file);
    }
    if (r->src == DRA_RT_INFERRED) {
        /* The runtime version only tells the default; the node's file may override it. */
        sev = DD_SEV_WARNING;
        cat(msg, sizeof(msg), &len,
            "Inferred: %s defaults enable_cdi to false in [%s], so pods would start without "
            "their DRA devices, with no error and no event. Run the dra-doctor node agent (or "
            "lint with --containerd-config) to read the node's real config.", where, c->table);
    } else if (c->enable_cdi_line) {
        cat(msg, sizeof(msg), &len,
            "%s sets enable_cdi = false in [%s]%s: it ignores the CDI devices DRA drivers "
            "prepare, so pods start without their devices, with no error and no event.",
            where, c->table, r->obj && c->file ? " of its config" : "");
        if (c->version == 3 && !c->runtime) {
            /* containerd 2.4 removed the key (lib/cri.c): only 2.0 to 2.3 obey it. */
            sev = DD_SEV_WARNING;
            cat(msg, sizeof(msg), &len, " Assumed: containerd 2.0 to 2.3; 2.4 and later ignore "
                "enable_cdi and always inject.");
        }
    } else {
        cat(msg, sizeof(msg), &len,
            "%s does not set enable_cdi in [%s], and containerd 1.7 defaults it to false: pods "
            "start without their DRA devices, with no error and no event (containerd 2.x would "
            "default it to true).", where, c->table);
    }
    /* Measured on a real node: a restart injects nothing into running containers. */
    snprintf(fix, sizeof(fix), "Set enable_cdi = true in [%s]%s%s and restart containerd, then "
             "delete and recreate the pods that started meanwhile: running containers never "
             "get their devices.", c->table, r->obj ? " of node " : "", r->obj ? r->node : "");
    scope(ctx, emit(ctx, sev, o, r->obj ? 0 : c->enable_cdi_line, msg, fix), NULL, NULL, r->node);
}

void rule__check_cdi_enabled(struct rule_ctx *ctx)
{
    size_t i;

    if (!uses_dra(ctx->m))
        return;
    for (i = 0; i < ctx->m->nruntimes; i++)
        cdi_enabled_one(ctx, &ctx->m->runtimes[i]);
}

/* 1 when path equals dir or lies below it, comparing whole components. */
static size_t path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (strncmp(path, dir, n) || (path[n] && path[n] != '/' && !(n == 1 && dir[0] == '/')))
        return 0;
    return n;
}

static const struct dra_volume *find_volume(const struct dra_podspec *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->nvol; i++)
        if (STRIEQ(p->vol[i].name, name))
            return &p->vol[i];
    return NULL;
}

/* 1 when every known runtime reads CDI specs from host directory dir (containerd's
 * default directories when no runtime is known). */
static int spec_dir_ok(const struct dra_model *m, const char *dir)
{
    static const char *const dflt[] = { "/etc/cdi", "/var/run/cdi" };
    size_t i;

    if (m->nruntimes) {
        for (i = 0; i < m->nruntimes; i++)
            if (!cri_config_has_spec_dir(&m->runtimes[i].cfg, dir))
                return 0;
        return 1;
    }
    for (i = 0; i < 2; i++)
        if (path_under(dir, dflt[i]) && strlen(dir) - path_under(dir, dflt[i]) <= 1)
            return 1;
    return 0;
}

static void cdi_dir_one(struct rule_ctx *ctx, const struct dra_driver *d)
{
    const struct dra_model *m = ctx->m;
    const struct dra_container *c = d->ctr;
    const struct dra_mount *best = NULL, *shared = NULL;
    const struct dra_volume *vol = NULL;
    size_t i, bestlen = 0, len = 0;
    char host[1024] = "", msg[MSG_MAX], fix[MSG_MAX], dsn[300];
    const char *how = d->cdi_src == DRA_CDI_ENV ? "CDI_ROOT"
                    : d->cdi_src == DRA_CDI_FLAG ? "--cdi-root" : "its default; CDI_ROOT is unset";

    if (!d->cdi_root || !c)
        return;
    for (i = 0; i < c->nmounts; i++) {
        size_t n = path_under(d->cdi_root, c->mounts[i].path);
        const struct dra_volume *v = find_volume(d->ds, c->mounts[i].volume);
        if (n && n >= bestlen) {
            best = &c->mounts[i];
            bestlen = n;
        }
        if (!shared && v && v->host_path && spec_dir_ok(m, v->host_path))
            shared = &c->mounts[i];
    }
    if (best && (vol = find_volume(d->ds, best->volume)) && vol->host_path) {
        snprintf(host, sizeof(host), "%s%s", vol->host_path, d->cdi_root + bestlen);
        if (spec_dir_ok(m, host))
            return;
    }
    objname(&d->ds->o, dsn, sizeof(dsn));
    cat(msg, sizeof(msg), &len, "DaemonSet %s (driver %s) writes CDI specs to %s (%s)", dsn,
        rule__driver_label(d), d->cdi_root, how);
    if (*host)
        cat(msg, sizeof(msg), &len, ", which is host directory %s, not one of containerd's "
            "cdi_spec_dirs", host);
    else
        cat(msg, sizeof(msg), &len, ", which is inside the container, not on a hostPath volume");
    cat(msg, sizeof(msg), &len, ": the runtime cannot find the specs and the pod fails with "
        "CreateContainerError \"CDI device injection failed: unresolvable CDI devices\".");
    /* Measured on a real node: the kubelet does not prepare an already prepared claim
     * again, so the restarted driver never rewrites the failed pods' specs. */
    if (shared)
        snprintf(fix, sizeof(fix), "Set env CDI_ROOT=%s on container %s (volume %s is the "
                 "host's %s, which containerd reads), then delete and recreate the pods that "
                 "failed: their claims are not prepared again.", shared->path, c->name,
                 shared->volume, find_volume(d->ds, shared->volume)->host_path);
    else
        snprintf(fix, sizeof(fix), "Mount hostPath /var/run/cdi into container %s and set env "
                 "CDI_ROOT to its mountPath, then delete and recreate the pods that failed: "
                 "their claims are not prepared again.", c->name);
    scope(ctx, emit(ctx, ctx->rule->severity, &d->ds->o, d->cdi_line, msg, fix), NULL,
          rule__driver_scope(d),
          NULL);
}

void rule__check_cdi_dir(struct rule_ctx *ctx)
{
    size_t i, j;

    for (i = 0; i < ctx->m->ndrivers; i++) {
        int seen = 0;
        for (j = 0; j < i; j++)
            seen |= ctx->m->drivers[j].ctr == ctx->m->drivers[i].ctr;
        if (!seen)
            cdi_dir_one(ctx, &ctx->m->drivers[i]);
    }
}

/* The kubelet reports device health per container (ResourceHealthStatus, beta in 1.36) from
 * the driver's NodeWatchResources stream: status.containerStatuses[].allocatedResourcesStatus
 * [{name: "claim:<pod claim>[/<request>]", resources: [{resourceID, health}]}]. Nothing else
 * shows it: the container keeps running with a device its driver calls broken. */
void rule__check_device_health(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        const cJSON *cs, *ars, *res;

        cJSON_ArrayForEach(cs, dd_json_arr(p->status, "containerStatuses", NULL))
            cJSON_ArrayForEach(ars, dd_json_arr(cs, "allocatedResourcesStatus", NULL)) {
                const char *name = dd_json_str(ars, "name", NULL);
                if (!name || strncmp(name, "claim:", 6))
                    continue;
                cJSON_ArrayForEach(res, dd_json_arr(ars, "resources", NULL)) {
                    const char *h = dd_json_str(res, "health", NULL);
                    const char *id = dd_json_str(res, "resourceID", NULL);
                    if (!h || !STRIEQ(h, "Unhealthy"))
                        continue;
                    snprintf(msg, sizeof(msg),
                             "Pod %s: container %s runs with device %s (pod claim %s), which "
                             "its DRA driver reports Unhealthy; the kubelet only records it, "
                             "so the container keeps the device.",
                             objname(&p->o, on, sizeof(on)),
                             dd_json_str(cs, "name", NULL) ? dd_json_str(cs, "name", NULL) : "?",
                             id ? id : "?", name + 6);
                    snprintf(fix, sizeof(fix), "Check the device on node %s (the driver's "
                             "logs say why); recreate the pod once it is repaired, or taint "
                             "the device (a DeviceTaintRule) so no claim gets it meanwhile.",
                             *p->node ? p->node : "?");
                    scope(ctx, emit(ctx, ctx->rule->severity, &p->o, 0, msg, fix), NULL, NULL,
                          p->node);
                }
            }
    }
}
