#include "inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/json.h"

#define PAGE 500
#define MAX_OWNER_HOPS 4 /* claim -> Pod -> ReplicaSet -> Deployment (Job -> CronJob) */

/* What the inventory lists.  owners: Pods, ReplicaSets and Jobs, read only for who owns whom. */
static const struct {
    const char *group, *resource, *kind;
    int owners;
} wanted[] = {
    { "", "nodes", "Node", 0 },
    { "resource.k8s.io", "resourceslices", "ResourceSlice", 0 },
    { "resource.k8s.io", "deviceclasses", "DeviceClass", 0 },
    { "resource.k8s.io", "resourceclaims", "ResourceClaim", 0 },
    { "resource.k8s.io", "resourceclaimtemplates", "ResourceClaimTemplate", 0 },
    { "", "pods", "Pod", 1 },
    { "apps", "replicasets", "ReplicaSet", 1 },
    { "batch", "jobs", "Job", 1 },
};

static const char *status_words(long http)
{
    switch (http) {
    case 401: return "401 Unauthorized: the kubeconfig's credentials are not accepted";
    case 403: return "403 Forbidden: grant list on it (read-only) to the kubeconfig's user";
    case 404: return "404 Not Found";
    default: return NULL;
    }
}

/* What a failed request says: "<what> at <server>: HTTP <status> ...: <message>". */
static void failed(char *msg, size_t size, const char *what, const char *server,
                   const struct kube_status *st, const struct dd_err *err)
{
    const char *words = status_words(st->http);

    if (!st->http)
        snprintf(msg, size, "cannot reach the API server %s (%s): %s", server, what,
                 st->message[0] ? st->message : err->msg);
    else if (words)
        snprintf(msg, size, "%s at %s: HTTP %s (%s)", what, server, words,
                 st->message[0] ? st->message : st->reason);
    else
        snprintf(msg, size, "%s at %s: HTTP %ld %s", what, server, st->http,
                 st->message[0] ? st->message : err->msg);
}

/* Of a Pod, ReplicaSet or Job, only what inventory_evidence reads. */
static void trim_to_owners(cJSON *o)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata"), *it, *next;

    for (it = o->child; it; it = next) {
        next = it->next;
        if (it != meta && strcmp(it->string, "kind") && strcmp(it->string, "apiVersion"))
            cJSON_Delete(cJSON_DetachItemViaPointer(o, it));
    }
    for (it = meta ? meta->child : NULL; it; it = next) {
        next = it->next;
        if (strcmp(it->string, "name") && strcmp(it->string, "namespace") &&
            strcmp(it->string, "ownerReferences"))
            cJSON_Delete(cJSON_DetachItemViaPointer(meta, it));
    }
}

/* LISTs one resource into inv->objects.  0, or -1 with msg. */
static int list_one(struct kube_client *c, const char *server, const char *group,
                    const char *version, const char *resource, int owners, struct inventory *inv,
                    char *msg, size_t size)
{
    struct kube_status st;
    struct dd_err err;
    cJSON *items = NULL, *it;
    char path[256], what[160];

    memset(&st, 0, sizeof(st));
    dd_err_clear(&err);
    kube_path(path, sizeof(path), group, version, resource, NULL, NULL, NULL);
    snprintf(what, sizeof(what), "LIST %s (%s%s%s)", resource, group, *group ? "/" : "",
             version);
    if (kube_list(c, path, NULL, PAGE, &items, NULL, &st, &err) != DD_OK) {
        failed(msg, size, what, server, &st, &err);
        cJSON_Delete(items);
        return -1;
    }
    while (items && (it = cJSON_DetachItemFromArray(items, 0))) {
        if (owners)
            trim_to_owners(it);
        cJSON_AddItemToArray(inv->objects, it);
    }
    cJSON_Delete(items);
    return 0;
}

int inventory_fetch(const char *kubeconfig, const char *context, struct inventory *inv,
                    char *msg, size_t size)
{
    struct kube_client_opts opts = KUBE_CLIENT_OPTS_INIT;
    struct kube_config cfg;
    struct kube_client *c = NULL;
    struct kube_status st;
    struct dd_err err;
    cJSON *ver = NULL;
    char at[32];
    time_t now = time(NULL);
    struct tm tm;
    size_t i;
    int rc = -1;

    memset(inv, 0, sizeof(*inv));
    memset(&cfg, 0, sizeof(cfg));
    dd_err_clear(&err);
    if (kube_config_load(&cfg, kubeconfig, context, &err) != DD_OK) {
        snprintf(msg, size, "%s", err.msg);
        goto out;
    }
    /* A gate in a pipeline: a dead server is told in about a second, not after a minute. */
    opts.max_retries = 2;
    opts.request_timeout_ms = 60000;
    if (!(c = kube_client_new(&cfg, &opts, &err))) {
        snprintf(msg, size, "%s", err.msg);
        goto out;
    }
    /* Reachable and accepting the credentials, before anything is judged on its word. */
    memset(&st, 0, sizeof(st));
    if (kube_get(c, "/version", &ver, &st, &err) != DD_OK && (!st.http || st.http == 401)) {
        failed(msg, size, "GET /version", cfg.server, &st, &err);
        goto out;
    }
    cJSON_Delete(ver);
    if (cluster_discover(c, NULL, &inv->ci, &err) != DD_OK) {
        snprintf(msg, size, "%s", err.msg);
        goto out;
    }
    if (!inv->ci.supported) {
        snprintf(msg, size, "%s: %s", cfg.server, inv->ci.says);
        goto out;
    }
    if (!(inv->objects = cJSON_CreateArray())) {
        snprintf(msg, size, "out of memory");
        goto out;
    }
    for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (list_one(c, cfg.server, wanted[i].group, "v1", wanted[i].resource, wanted[i].owners,
                     inv, msg, size))
            goto out;
    if (inv->ci.taint_rules[0] && list_one(c, cfg.server, "resource.k8s.io", inv->ci.taint_rules,
                                           "devicetaintrules", 0, inv, msg, size))
        goto out;
    gmtime_r(&now, &tm);
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(inv->from, sizeof(inv->from), "%s%s%sserver %s, Kubernetes %s, read at %s",
             cfg.context ? "context " : "", cfg.context ? cfg.context : "",
             cfg.context ? ", " : "", cfg.server,
             inv->ci.version[0] ? inv->ci.version : "of unknown version", at);
    rc = 0;
out:
    kube_client_free(c);
    kube_config_release(&cfg);
    return rc;
}

void inventory_release(struct inventory *inv)
{
    cJSON_Delete(inv->objects);
    inv->objects = NULL;
}

/* ---- evidence ---------------------------------------------------------------------------- */

/* An object's identity.  group: the API group (apiVersion up to '/'; "" for the core). */
struct ident {
    const char *group;
    size_t glen;
    const char *kind, *ns, *name;
    const cJSON *obj; /* a cluster owner (Pod, ReplicaSet, Job); NULL for the manifests' */
};

static void group_of(const char *api_version, const char **g, size_t *len)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;

    *g = api_version ? api_version : "";
    *len = slash ? (size_t)(slash - api_version) : 0;
}

static int cmp_ident(const void *pa, const void *pb)
{
    const struct ident *a = pa, *b = pb;
    size_t n = a->glen < b->glen ? a->glen : b->glen;
    int c;

    if ((c = strcmp(a->kind, b->kind)) || (c = strcmp(a->ns, b->ns)) ||
        (c = strcmp(a->name, b->name)) || (c = strncmp(a->group, b->group, n)))
        return c;
    return a->glen < b->glen ? -1 : a->glen > b->glen;
}

static int ident_of(const cJSON *o, const char *ns, struct ident *id)
{
    id->kind = dd_json_str(o, "kind", NULL);
    id->name = dd_json_str(o, "metadata", "name", NULL);
    id->ns = ns ? ns : dd_json_str(o, "metadata", "namespace", NULL);
    if (!id->ns)
        id->ns = "";
    group_of(dd_json_str(o, "apiVersion", NULL), &id->group, &id->glen);
    id->obj = o;
    return id->kind && id->name;
}

static const struct ident *find(const struct ident *v, size_t n, const struct ident *key)
{
    return n ? bsearch(key, v, n, sizeof(*v), cmp_ident) : NULL;
}

/* The controller among o's ownerReferences, as an identity in namespace ns. */
static int controller_of(const cJSON *o, const char *ns, struct ident *id)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, dd_json_arr(o, "metadata", "ownerReferences", NULL)) {
        if (!dd_json_true(r, "controller", NULL))
            continue;
        id->kind = dd_json_str(r, "kind", NULL);
        id->name = dd_json_str(r, "name", NULL);
        id->ns = ns;
        group_of(dd_json_str(r, "apiVersion", NULL), &id->group, &id->glen);
        id->obj = NULL;
        return id->kind && id->name;
    }
    return 0;
}

/* Whether claim's owner chain reaches an object of the manifests (mine). */
static int owned_by_manifests(const cJSON *claim, const struct ident *mine, size_t nmine,
                              const struct ident *owners, size_t nowners)
{
    const char *ns = dd_json_str(claim, "metadata", "namespace", NULL);
    const cJSON *o = claim;
    struct ident up;
    const struct ident *hit;
    int hop;

    for (hop = 0; hop < MAX_OWNER_HOPS && ns && controller_of(o, ns, &up); hop++) {
        if (find(mine, nmine, &up))
            return 1;
        if (!(hit = find(owners, nowners, &up)))
            return 0;
        o = hit->obj;
    }
    return 0;
}

int inventory_evidence(const cJSON *cluster, const struct mf_set *set, const cJSON ***out,
                       size_t *n, struct inventory_counts *counts)
{
    size_t nc = (size_t)cJSON_GetArraySize(cluster), nmine = 0, nowners = 0, i;
    struct ident *mine = calloc(set->n + 1, sizeof(*mine));
    struct ident *owners = calloc(nc + 1, sizeof(*owners));
    const cJSON **keep = calloc(nc + 1, sizeof(*keep));
    const cJSON *o;

    memset(counts, 0, sizeof(*counts));
    *out = NULL;
    *n = 0;
    if (!mine || !owners || !keep) {
        free(mine);
        free(owners);
        free(keep);
        return -1;
    }
    for (i = 0; i < set->n; i++) {
        const struct mf_object *m = &set->objs[i];
        if (!*m->name)
            continue;
        group_of(m->api_version, &mine[nmine].group, &mine[nmine].glen);
        mine[nmine].kind = m->kind;
        mine[nmine].ns = m->namespace_;
        mine[nmine].name = m->name;
        mine[nmine++].obj = NULL;
    }
    qsort(mine, nmine, sizeof(*mine), cmp_ident);
    cJSON_ArrayForEach(o, cluster) {
        const char *kind = dd_json_str(o, "kind", NULL);
        if (kind && (!strcmp(kind, "Pod") || !strcmp(kind, "ReplicaSet") || !strcmp(kind, "Job")) &&
            ident_of(o, NULL, &owners[nowners]))
            nowners++;
    }
    qsort(owners, nowners, sizeof(*owners), cmp_ident);
    cJSON_ArrayForEach(o, cluster) {
        struct ident id;
        if (!ident_of(o, NULL, &id) || !strcmp(id.kind, "Pod") || !strcmp(id.kind, "ReplicaSet") ||
            !strcmp(id.kind, "Job"))
            continue;
        if (find(mine, nmine, &id)) {
            counts->replaced++;
            continue;
        }
        if (!strcmp(id.kind, "ResourceClaim") && owned_by_manifests(o, mine, nmine, owners,
                                                                    nowners)) {
            counts->set_aside++;
            continue;
        }
        counts->nodes += !strcmp(id.kind, "Node");
        counts->slices += !strcmp(id.kind, "ResourceSlice");
        counts->classes += !strcmp(id.kind, "DeviceClass");
        counts->claims += !strcmp(id.kind, "ResourceClaim");
        counts->templates += !strcmp(id.kind, "ResourceClaimTemplate");
        counts->taint_rules += !strcmp(id.kind, "DeviceTaintRule");
        keep[(*n)++] = o;
    }
    free(mine);
    free(owners);
    *out = keep;
    return 0;
}
