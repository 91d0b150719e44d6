#include "inventory.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/json.h"
#include "model/keep.h"

#define PAGE 500
#define MAX_OWNER_HOPS 4 /* claim -> Pod -> ReplicaSet -> Deployment (Job -> CronJob) */

static void trim_to_owners(cJSON *o);
static void trim_bookkeeping(cJSON *o);

/* What the inventory lists, and what is kept of each object as its page arrives. */
static const struct {
    const char *group, *resource;
    void (*trim)(cJSON *obj);
} wanted[] = {
    /* What the live cache keeps (lib/model/keep): a Node's images and managed fields are most
     * of it. */
    { "", "nodes", keep_trim },
    { "resource.k8s.io", "resourceslices", trim_bookkeeping },
    { "resource.k8s.io", "deviceclasses", trim_bookkeeping },
    /* Not keep_trim: a claim's ownerReferences are read. */
    { "resource.k8s.io", "resourceclaims", trim_bookkeeping },
    { "resource.k8s.io", "resourceclaimtemplates", trim_bookkeeping },
    /* Read only for who owns whom. */
    { "", "pods", trim_to_owners },
    { "apps", "replicasets", trim_to_owners },
    { "batch", "jobs", trim_to_owners },
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

/* The API server's and kubectl's bookkeeping, which no rule reads and which is often the
 * larger part of a claim: managedFields, kubectl's last-applied-configuration. */
static void trim_bookkeeping(cJSON *o)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");

    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
        "kubectl.kubernetes.io/last-applied-configuration");
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
                    const char *version, const char *resource, void (*trim)(cJSON *obj),
                    struct inventory *inv, char *msg, size_t size)
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
    if (kube_list_transformed(c, path, NULL, PAGE, trim, &items, NULL, &st, &err) != DD_OK) {
        failed(msg, size, what, server, &st, &err);
        cJSON_Delete(items);
        return -1;
    }
    while (items && (it = cJSON_DetachItemFromArray(items, 0)))
        cJSON_AddItemToArray(inv->objects, it);
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
        if (list_one(c, cfg.server, wanted[i].group, "v1", wanted[i].resource, wanted[i].trim,
                     inv, msg, size))
            goto out;
    if (inv->ci.taint_rules[0] && list_one(c, cfg.server, "resource.k8s.io", inv->ci.taint_rules,
                                           "devicetaintrules", trim_bookkeeping, inv, msg,
                                           size))
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
};

static void group_of(const char *api_version, const char **g, size_t *len)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;

    *g = api_version ? api_version : "";
    *len = slash ? (size_t)(slash - api_version) : 0;
}

/* Two independent 64-bit FNV-1a hashes of the identity (a NUL after each part, so that parts
 * cannot run into each other): 128 bits stand for the identity in the tables below, so a
 * lookup reads one slot and no string.  Two identities that differ collide in both with a
 * probability of about 2^-128 per pair. */
struct key {
    uint64_t a, b;
};

static void key_part(struct key *k, const char *s, size_t n)
{
    for (; n && *s; s++, n--) {
        k->a = (k->a ^ (unsigned char)*s) * 1099511628211ULL;
        k->b = (k->b ^ (unsigned char)*s) * 0x100000000000223ULL;
    }
    k->a = (k->a ^ 0xff) * 1099511628211ULL;
    k->b = (k->b ^ 0xfe) * 0x100000000000223ULL;
}

static struct key key_of(const struct ident *id)
{
    struct key k = { 14695981039346656037ULL, 0x6c62272e07bb0142ULL };

    key_part(&k, id->group, id->glen);
    key_part(&k, id->kind, (size_t)-1);
    key_part(&k, id->ns, (size_t)-1);
    key_part(&k, id->name, (size_t)-1);
    /* FNV carries bits only upwards: fold the high ones into the low ones the mask keeps. */
    k.a ^= (k.a >> 29) ^ (k.a >> 47);
    return k;
}

/* Identities by key, open addressing, at most half full: one lookup per object, so the cost
 * grows with the cluster, not faster. */
struct slot {
    struct key k;
    const cJSON *obj; /* an owner's object (Pod, ReplicaSet, Job); NULL for the manifests' */
    int used;
};

struct idents {
    struct slot *slot;
    size_t cap;
};

static int idents_init(struct idents *t, size_t n)
{
    for (t->cap = 16; t->cap < 2 * n; t->cap *= 2)
        ;
    return (t->slot = calloc(t->cap, sizeof(*t->slot))) ? 0 : -1;
}

static struct slot *slot_of(const struct idents *t, struct key k)
{
    size_t i;

    for (i = (size_t)k.a & (t->cap - 1); t->slot[i].used; i = (i + 1) & (t->cap - 1))
        if (t->slot[i].k.a == k.a && t->slot[i].k.b == k.b)
            break;
    return &t->slot[i];
}

static void idents_put(struct idents *t, struct key k, const cJSON *obj)
{
    struct slot *s = slot_of(t, k);

    if (!s->used)
        *s = (struct slot){ k, obj, 1 };
}

static const struct slot *find(const struct idents *t, struct key k)
{
    const struct slot *s = slot_of(t, k);

    return s->used ? s : NULL;
}

/* Pods, ReplicaSets and Jobs: read only for who owns whom. */
static int owner_kind(const char *kind)
{
    return !strcmp(kind, "Pod") || !strcmp(kind, "ReplicaSet") || !strcmp(kind, "Job");
}

static int ident_of(const cJSON *o, struct ident *id)
{
    id->kind = dd_json_str(o, "kind", NULL);
    id->name = dd_json_str(o, "metadata", "name", NULL);
    id->ns = dd_json_str(o, "metadata", "namespace", NULL);
    if (!id->ns)
        id->ns = "";
    group_of(dd_json_str(o, "apiVersion", NULL), &id->group, &id->glen);
    return id->kind && id->name;
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
        return id->kind && id->name;
    }
    return 0;
}

/* Whether claim's owner chain reaches an object of the manifests (mine). */
static int owned_by_manifests(const cJSON *claim, const struct idents *mine,
                              const struct idents *owners)
{
    const char *ns = dd_json_str(claim, "metadata", "namespace", NULL);
    const cJSON *o = claim;
    struct ident up;
    const struct slot *hit;
    int hop;

    for (hop = 0; hop < MAX_OWNER_HOPS && ns && controller_of(o, ns, &up); hop++) {
        if (find(mine, key_of(&up)))
            return 1;
        if (!(hit = find(owners, key_of(&up))))
            return 0;
        o = hit->obj;
    }
    return 0;
}

/* How far ahead of its lookup a slot is fetched: the tables outgrow the caches on a large
 * cluster, and a lookup is one cache miss that the fetch hides behind the next ones. */
#define AHEAD 8

static void prefetch(const struct idents *t, const struct key *k)
{
    __builtin_prefetch(&t->slot[(size_t)k->a & (t->cap - 1)]);
}

/* A cluster object and its identity's key (kind NULL: it has none). */
struct entry {
    const cJSON *o;
    const char *kind;
    struct key k;
};

int inventory_evidence(const cJSON *cluster, const struct mf_set *set, const cJSON ***out,
                       size_t *n, struct inventory_counts *counts)
{
    size_t nc = (size_t)cJSON_GetArraySize(cluster), nm = 0, nowners = 0, i;
    struct idents mine = { NULL, 0 }, owners = { NULL, 0 };
    struct entry *e = calloc(nc + 1, sizeof(*e));
    struct key *mk = calloc(set->n + 1, sizeof(*mk));
    const cJSON **keep = calloc(nc + 1, sizeof(*keep));
    const cJSON *o;
    struct ident id;
    int rc = -1;

    memset(counts, 0, sizeof(*counts));
    *out = NULL;
    *n = 0;
    if (!e || !mk || !keep)
        goto out;
    /* The keys first, in one pass over each input; then the tables, each lookup's slot
     * fetched AHEAD lookups before it. */
    i = 0;
    cJSON_ArrayForEach(o, cluster) {
        e[i].o = o;
        if (ident_of(o, &id)) {
            e[i].kind = id.kind;
            e[i].k = key_of(&id);
            nowners += owner_kind(id.kind);
        }
        i++;
    }
    for (i = 0; i < set->n; i++) {
        const struct mf_object *m = &set->objs[i];
        if (!*m->name)
            continue;
        group_of(m->api_version, &id.group, &id.glen);
        id.kind = m->kind;
        id.ns = m->namespace_;
        id.name = m->name;
        mk[nm++] = key_of(&id);
    }
    if (idents_init(&mine, nm) || idents_init(&owners, nowners))
        goto out;
    for (i = 0; i < nm; i++) {
        if (i + AHEAD < nm)
            prefetch(&mine, &mk[i + AHEAD]);
        idents_put(&mine, mk[i], NULL);
    }
    for (i = 0; i < nc; i++) {
        if (i + AHEAD < nc && e[i + AHEAD].kind && owner_kind(e[i + AHEAD].kind))
            prefetch(&owners, &e[i + AHEAD].k);
        if (e[i].kind && owner_kind(e[i].kind))
            idents_put(&owners, e[i].k, e[i].o);
    }
    for (i = 0; i < nc; i++) {
        const char *kind = e[i].kind;
        if (i + AHEAD < nc)
            prefetch(&mine, &e[i + AHEAD].k);
        if (!kind || owner_kind(kind))
            continue;
        if (find(&mine, e[i].k)) {
            counts->replaced++;
            continue;
        }
        if (!strcmp(kind, "ResourceClaim") && owned_by_manifests(e[i].o, &mine, &owners)) {
            counts->set_aside++;
            continue;
        }
        counts->nodes += !strcmp(kind, "Node");
        counts->slices += !strcmp(kind, "ResourceSlice");
        counts->classes += !strcmp(kind, "DeviceClass");
        counts->claims += !strcmp(kind, "ResourceClaim");
        counts->templates += !strcmp(kind, "ResourceClaimTemplate");
        counts->taint_rules += !strcmp(kind, "DeviceTaintRule");
        keep[(*n)++] = e[i].o;
    }
    *out = keep;
    keep = NULL;
    rc = 0;
out:
    free(e);
    free(mk);
    free(mine.slot);
    free(owners.slot);
    free(keep);
    return rc;
}
