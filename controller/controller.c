/*
 * controller.c - `dra-doctor controller`: the live cache's snapshots -> work queue ->
 * per-pod diagnosis -> annotations and Events.
 *
 * Threads: the live cache's (lib/client/live: one reflector per watched resource, one
 * snapshot builder), N workers, the leader-election candidate, the HTTP server, and the
 * main thread waiting for SIGTERM.  The cache's hooks only record what changed (see
 * "what changed"); after each burst the cache builds a snapshot and the controller then
 * enqueues the pods it may affect (a pod's own change: that pod; a class, claim or slice:
 * every pod whose diagnosis differs from its annotations); a worker compares the
 * diagnosis with the pod's annotations and patches only on a difference, so the loop
 * converges.
 */
#include "controller.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rules/diagnose.h"
#include "rules/snapshot.h"
#include "client/httpd.h"
#include "client/informer.h"
#include "client/lease.h"
#include "client/live.h"
#include "client/workqueue.h"
#include "formats/json.h"
#include "model/keep.h"
#include "rules/cluster.h"

#define SNAPSHOT_MIN_MS 100  /* batch bursts of changes into one rebuild */
#define SNAPSHOT_SETTLE_MS 20 /* the first change after a quiet spell waits for its burst */
#define LEADER_POLL_MS 250   /* how often the builder looks for a gain of leadership */
#define LIST_PAGE 100        /* objects per LIST page: the untrimmed page is the largest
                                transient allocation */
#define SAR_TTL_MS 60000     /* SubjectAccessReview answers are asked again at least this often */
#define KEY_MAX WQ_KEY_SIZE
#define MAX_WATCHED 16
#define RES_PODS 0           /* the pods' store: cluster_resources lists them first */
#define REPORTER "dra-doctor"
#define FIELD_MANAGER "dra-doctor"

struct ctl_opts {
    const char *kubeconfig, *context;
    int workers;
    int leader_elect;
    const char *lease_ns, *lease_name;
    int lease_ms, renew_ms, retry_ms;
    char bind[64];
    unsigned short port;
    char identity[128];
    const char *feature_gates; /* --feature-gates: over what the API server tells */
    int beside;                /* --rebuild beside: a snapshot built whole while the current
                                  one serves (else it goes first: LIVE_AFRESH) */
};

/* What a watched resource's changes mean to the snapshot. */
enum watch_kind { W_OTHER, W_PODS, W_EVENTS, W_NODES };

struct ctl {
    struct ctl_opts o;
    struct kube_config cfg;
    struct cluster_info cluster; /* the API server's release, served versions and gates */
    struct rule_options ropt;  /* the rule engine's options for them */
    struct live_resource res[MAX_WATCHED]; /* cluster_resources, then what the API server has
                                              beyond them (cluster_extra_resources) */
    enum watch_kind kind[MAX_WATCHED];
    size_t nres;
    struct cluster_resource extra[4];
    struct posted { char key[320]; } *posted; /* Events posted on objects that are no pods */
    size_t nposted, capposted;
    struct live *lc;           /* the informers and the current snapshot */
    struct wq *q;
    struct lease *lease;
    struct httpd *http;
    pthread_mutex_t mu;        /* guards the four below */
    int requeue_all;           /* every pod is to be looked at again (a start, a failover, a
                                  failed build, too many pending) */
    int others;                /* objects that are no pods changed: snapshot_affected_pods
                                  says whose diagnosis that may change */
    char **pending;            /* pods whose own state changed since the last snapshot */
    size_t npending, cappending;
    /* The builder thread's (the cache's build, after and idle hooks): */
    int led;                   /* leading at its last look */
    struct kube_client *client; /* SubjectAccessReviews and object Events */
    struct cluster_sars sars;  /* SubjectAccessReview answers, asked again when RBAC changed */
    struct dra_cel_cache *cel; /* compiled selectors the snapshots share */
    uint64_t sar_stamp;        /* RBAC and DaemonSet caches when the answers were asked */
    int64_t sar_at_ms;
    char **built_keys;         /* the pods the last snapshot was built for */
    size_t nbuilt, capbuilt;
    int built_all;             /* and every pod */
    int built_others;          /* it holds changes of objects that are no pods */
    atomic_int stop;
    atomic_ulong reconciles, errors, patches, events;
    atomic_ulong built[3];     /* snapshots built whole, as deltas, with the model patched */
    atomic_ulong whole[SNAPSHOT_WHOLE_N]; /* updates a patch could not make, by why */
    atomic_ulong reached, reached_all; /* pods snapshot_affected_pods named; times it said all */
};

/* ---- what changed -------------------------------------------------------------------- */
/*
 * The cache's changed hook only records what changed.  A pod's own change (or an Event
 * about it) re-diagnoses that pod once the next snapshot holds the change; a change to
 * anything else (a claim, a class, a slice, a quota...) re-diagnoses the pods whose
 * diagnosis it may change (snapshot_affected_pods: every pod, after a build from scratch).
 * Node heartbeats change nothing a rule reads and are ignored, or a cluster with many nodes
 * would rebuild forever.
 */

#define MAX_PENDING 10000 /* beyond that, re-diagnosing everything is cheaper to track */

/* A pod the diagnosis reads: one with claims, or one asking for extended resources that a
 * DeviceClass may back (the scheduler makes its claim). */
static int pod_has_claims(const cJSON *pod)
{
    return cJSON_GetArraySize(dd_json_arr(pod, "spec", "resourceClaims", NULL)) > 0 ||
           dra_requests_extended(dd_json_path(pod, "spec", NULL));
}

/* 1 when c->pending has room for one more key (grown up to MAX_PENDING); c->mu held. */
static int pending_room(struct ctl *c)
{
    if (c->npending == c->cappending && c->npending < MAX_PENDING) {
        size_t cap = c->cappending ? c->cappending * 2 : 64;
        char **v = realloc(c->pending, cap * sizeof(*v));
        if (v) {
            c->pending = v;
            c->cappending = cap;
        }
    }
    return c->npending < c->cappending;
}

static int note_pod(struct ctl *c, const char *ns, const char *name)
{
    char key[KEY_MAX], *dup;

    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    pthread_mutex_lock(&c->mu);
    if (pending_room(c) && (dup = strdup(key)))
        c->pending[c->npending++] = dup;
    else
        c->requeue_all = 1;
    pthread_mutex_unlock(&c->mu);
    return 1;
}

static int on_any(struct ctl *c)
{
    pthread_mutex_lock(&c->mu);
    c->others = 1;
    pthread_mutex_unlock(&c->mu);
    return 1;
}

/* A pod with claims matters to itself; a kubelet plugin's pod (whether its driver runs on a
 * node) to every pod. */
static int on_pod(struct ctl *c, const cJSON *pod)
{
    if (pod_has_claims(pod))
        return note_pod(c, dd_json_str(pod, "metadata", "namespace", NULL),
                        dd_json_str(pod, "metadata", "name", NULL));
    return dra_pod_registers_plugin(pod) ? on_any(c) : 0;
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Only Events the diagnosis reads matter, and only to the pod they are about (the cache
 * keeps no others, see keep_object). */
static int on_event(struct ctl *c, const cJSON *e)
{
    const cJSON *about = dd_json_path(e, "involvedObject", NULL);

    if (!keep_event_reason(dd_json_str(e, "reason", NULL)))
        return 0;
    if (same(dd_json_str(about, "kind", NULL), "Pod"))
        return note_pod(c, dd_json_str(about, "namespace", NULL),
                        dd_json_str(about, "name", NULL));
    return on_any(c); /* a workload's: judged on the workload (PodClaimFieldsRemoved) */
}

/* 1 when objects a and b have the same members, but for member skip (may be absent). */
static int equal_except(const cJSON *a, const cJSON *b, const char *skip)
{
    const cJSON *x;
    int na = 0, nb = 0;

    if (!cJSON_IsObject(a) || !cJSON_IsObject(b))
        return cJSON_Compare(a, b, 1);
    cJSON_ArrayForEach(x, b)
        nb += !x->string || strcmp(x->string, skip);
    cJSON_ArrayForEach(x, a) {
        if (x->string && !strcmp(x->string, skip))
            continue;
        na++;
        if (!x->string || !cJSON_Compare(x, cJSON_GetObjectItemCaseSensitive(b, x->string), 1))
            return 0;
    }
    return na == nb;
}

/*
 * What changed between two versions of a cached (trimmed) pod: 1 something its
 * diagnosis reads, 2 only its annotations (our own patch, say), 0 nothing we keep (a
 * condition, a resync).
 */
static int pod_change(const cJSON *a, const cJSON *b)
{
    const cJSON *ma = dd_json_path(a, "metadata", NULL), *mb = dd_json_path(b, "metadata", NULL);

    if (!equal_except(a, b, "metadata") || !equal_except(ma, mb, "annotations"))
        return 1;
    return cJSON_Compare(dd_json_path(ma, "annotations", NULL),
                         dd_json_path(mb, "annotations", NULL), 1) ? 0 : 2;
}

static int pod_changed(struct ctl *c, const cJSON *a, const cJSON *b)
{
    char key[KEY_MAX];

    if (!a || !b)
        return on_pod(c, a ? a : b);
    switch (pod_change(a, b)) {
    case 0:
        return 0;
    case 2:
        /* Nothing the diagnosis reads changed: the current snapshot serves, a worker only
         * compares the diagnosis with the new annotations. */
        if (pod_has_claims(b) && inf_key(b, key, sizeof(key)))
            wq_add(c->q, key);
        return 0;
    default:
        return on_pod(c, b);
    }
}

/* The cache's changed hook: old NULL for an add, obj NULL for a delete. */
static int changed(void *ctx, size_t r, const cJSON *old, const cJSON *obj)
{
    struct ctl *c = ctx;

    switch (c->kind[r]) {
    case W_PODS:
        return pod_changed(c, old, obj);
    case W_EVENTS:
        return obj ? on_event(c, obj) : 0;
    case W_NODES:
        if (old && obj &&
            same(dd_json_str(old, "metadata", "annotations", DRA_NODE_CDI_ANNOTATION, NULL),
                 dd_json_str(obj, "metadata", "annotations", DRA_NODE_CDI_ANNOTATION, NULL)) &&
            same(dd_json_str(old, "status", "nodeInfo", "containerRuntimeVersion", NULL),
                 dd_json_str(obj, "status", "nodeInfo", "containerRuntimeVersion", NULL)))
            return 0;
        return on_any(c);
    default:
        return on_any(c);
    }
}

/* ---- snapshots ------------------------------------------------------------ */

static const char *ann(const cJSON *pod, const char *key)
{
    return dd_json_str(pod, "metadata", "annotations", key, NULL);
}

/* 1 when pod's annotations already say what r says. */
static int annotated(const cJSON *pod, const struct diag_result *r)
{
    const char *root = ann(pod, DIAG_ANN_ROOT_CAUSE);

    return r->healthy ? !root && !ann(pod, DIAG_ANN_FINDINGS)
                      : same(root, r->codes[0]) && same(ann(pod, DIAG_ANN_FINDINGS), r->list) &&
                            same(ann(pod, DIAG_ANN_MESSAGE), r->message);
}

static int look_annotated(void *ctx, const cJSON *pod)
{
    return annotated(pod, ctx);
}

static int look_claims(void *ctx, const cJSON *pod)
{
    (void)ctx;
    return pod_has_claims(pod);
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The index of the watched resource named resource (c->nres when none). */
static size_t resource_index(const struct ctl *c, const char *resource)
{
    size_t i;

    for (i = 0; i < c->nres; i++)
        if (!strcmp(c->res[i].resource, resource))
            break;
    return i;
}

/*
 * SubjectAccessReview answers change with RBAC objects (and which ServiceAccount a
 * driver's DaemonSet uses): asked again when those caches changed, and at least every
 * SAR_TTL_MS for what no cache shows (an authorizer webhook, say).
 */
static void refresh_sars(struct ctl *c)
{
    static const char *const deps[] = { "clusterroles", "clusterrolebindings", "daemonsets" };
    uint64_t stamp = 0;
    size_t i, r;
    int64_t now = mono_ms();

    for (i = 0; i < sizeof(deps) / sizeof(deps[0]); i++)
        if ((r = resource_index(c, deps[i])) < c->nres)
            stamp += inf_store_generation(live_store(c->lc, r));
    if (stamp != c->sar_stamp || now - c->sar_at_ms >= SAR_TTL_MS) {
        cluster_sars_forget(&c->sars);
        c->sar_stamp = stamp;
        c->sar_at_ms = now;
    }
}

/*
 * After a change any pod's diagnosis may depend on, the builder compares every pod's
 * diagnosis with its cached annotations itself (a few microseconds each, within the
 * batching window) and queues only those that differ: the workers' queue holds what
 * needs writing, and a new pod never waits behind thousands of unchanged ones.
 */
static size_t check_all_pods(struct ctl *c, const struct snapshot *s)
{
    struct inf_store *pods = live_store(c->lc, RES_PODS);
    size_t i, n = 0;

    for (i = 0; i < s->m.npods; i++) {
        const struct dra_podspec *p = s->m.pods[i];
        struct diag_result r;
        char key[KEY_MAX];

        if (!p->status || atomic_load(&c->stop))
            continue;
        diag_pod_indexed(&s->m, &s->f, s->ix, p, &r);
        snprintf(key, sizeof(key), "%s/%s", p->o.ns, p->o.name);
        if (inf_store_with(pods, key, look_annotated, &r) == 0) {
            wq_add(c->q, key);
            n++;
        }
    }
    return n;
}

static void post_object_findings(struct ctl *c, struct kube_client *k, const struct snapshot *s);

static void free_keys(char **keys, size_t n)
{
    while (n)
        free(keys[--n]);
    free(keys);
}

/* snapshot_affected_pods' callback: the pod joins those the snapshot was built for (or, out of
 * memory, every pod does). */
static void add_built(void *ctx, const char *ns, const char *name)
{
    struct ctl *c = ctx;
    char key[KEY_MAX];

    if (c->built_all)
        return;
    if (c->nbuilt == c->capbuilt) {
        size_t cap = c->capbuilt ? c->capbuilt * 2 : 64;
        char **v = realloc(c->built_keys, cap * sizeof(*v));
        if (!v) {
            c->built_all = 1;
            return;
        }
        c->built_keys = v;
        c->capbuilt = cap;
    }
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (!(c->built_keys[c->nbuilt] = strdup(key)))
        c->built_all = 1;
    else
        c->nbuilt++;
}

/* A build that gave up (LIVE_AFRESH): what it was for waits for the next one, with what was
 * noted since. */
static void unbuild(struct ctl *c)
{
    size_t i;

    pthread_mutex_lock(&c->mu);
    c->requeue_all |= c->built_all;
    c->others |= c->built_others;
    for (i = 0; i < c->nbuilt; i++) {
        if (pending_room(c)) {
            c->pending[c->npending++] = c->built_keys[i];
        } else {
            free(c->built_keys[i]);
            c->requeue_all = 1;
        }
    }
    free(c->built_keys);
    c->built_keys = NULL;
    c->nbuilt = c->capbuilt = 0;
    pthread_mutex_unlock(&c->mu);
}

/* The cache's build hook (builder thread): a snapshot of every store (an update of cur where only
 * Pods and Events changed: snapshot_update). */
static void *build(void *ctx, struct live *lc, const void *cur, struct dd_err *err)
{
    struct ctl *c = ctx;
    const struct snapshot_sars sars = { cluster_sar_ask, &c->sars };
    const cJSON **objs = NULL;
    struct snapshot *s = NULL;
    size_t nobjs = 0;

    if (!c->client && !(c->client = kube_client_new(&c->cfg, NULL, err)))
        return NULL;
    c->sars.client = c->client;
    /* What changed before this point is in this snapshot; later changes go to the next. */
    pthread_mutex_lock(&c->mu);
    free_keys(c->built_keys, c->nbuilt);
    c->built_keys = c->pending;
    c->nbuilt = c->npending;
    c->capbuilt = c->cappending;
    c->built_all = c->requeue_all || !cur;
    c->built_others = c->others;
    c->pending = NULL;
    c->npending = c->cappending = 0;
    c->requeue_all = c->others = 0;
    pthread_mutex_unlock(&c->mu);
    refresh_sars(c);
    if (live_collect(lc, &objs, &nobjs)) {
        dd_failf(err, DD_ENOMEM, "out of memory collecting the caches");
    } else {
        enum snapshot_whole why = SNAPSHOT_PATCHED;
        s = c->o.beside ? snapshot_update(cur, objs, nobjs, &sars, c->cel, &c->ropt, err)
                        : snapshot_patch(cur, objs, nobjs, &sars, c->cel, &c->ropt, &why,
                                         err); /* either takes objs */
        if (s && cur && !s->steps.patched)
            why = s->steps.whole;
        if (why != SNAPSHOT_PATCHED)
            atomic_fetch_add(&c->whole[why], 1);
        if (!s && why != SNAPSHOT_PATCHED) {
            /* A model built whole beside cur's would double the snapshot's memory at its
             * peak: cur goes first, and the next call (cur NULL) looks at every pod. */
            unbuild(c);
            return LIVE_AFRESH;
        }
    }
    /* The pods whose diagnosis the changes may reach: a pod's change may reach others (the
     * claim it shares), and a claim's the pods of its namespace, not a diagnosis of every pod
     * (at 50,000 pods, a quarter of a second of CPU in process, on this thread). */
    if (s && !c->built_all) {
        size_t before = c->nbuilt;
        if (snapshot_affected_pods(cur, s, add_built, c)) {
            c->built_all = 1;
            atomic_fetch_add(&c->reached_all, 1);
        }
        atomic_fetch_add(&c->reached, c->nbuilt - before);
    }
    if (s)
        atomic_fetch_add(&c->built[s->steps.patched ? 2 : s->steps.delta], 1);
    if (!s) {
        /* The pods it was for are looked at again after the next one. */
        pthread_mutex_lock(&c->mu);
        c->requeue_all = 1;
        pthread_mutex_unlock(&c->mu);
    }
    return s;
}

static void free_view(void *ctx, void *view)
{
    (void)ctx;
    snapshot_free(view);
}

/*
 * The cache's after hook: the workers compare each affected pod's diagnosis with its
 * annotations: first the pods whose own state changed, then, when anything else changed,
 * every pod whose annotations differ (check_all_pods).
 */
static void after(void *ctx, const void *view)
{
    struct ctl *c = ctx;
    size_t i;

    for (i = 0; i < c->nbuilt; i++)
        wq_add(c->q, c->built_keys[i]);
    free_keys(c->built_keys, c->nbuilt);
    c->built_keys = NULL;
    c->nbuilt = c->capbuilt = 0;
    if ((c->built_all || c->built_others) && (!c->lease || lease_is_leader(c->lease))) {
        if (c->built_all)
            check_all_pods(c, view);
        post_object_findings(c, c->client, view);
    }
}

/*
 * The cache's idle hook.  Workers drop the keys they get while not leading, so a replica
 * that becomes leader (at start, after a failover, or after losing the Lease for a while)
 * must go over every pod once: a fresh snapshot enqueues them all.
 */
static int idle(void *ctx)
{
    struct ctl *c = ctx;
    int led = lease_is_leader(c->lease), gained = led && !c->led;

    c->led = led;
    if (gained) {
        pthread_mutex_lock(&c->mu);
        c->requeue_all = 1;
        pthread_mutex_unlock(&c->mu);
    }
    return gained;
}

static struct snapshot *snap_get(struct ctl *c)
{
    return live_view_get(c->lc, NULL, NULL);
}

static void snap_put(struct ctl *c, struct snapshot *s)
{
    live_view_put(c->lc, s);
}

/* ---- reconcile ------------------------------------------------------------ */

static void now_rfc3339(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* An Event about object kind ns/name (apiVersion api; uid may be NULL; ns "" for a
 * cluster-scoped one, whose Events go to "default"). */
static int post_event_about(struct ctl *c, struct kube_client *k, const char *api,
                            const char *kind, const char *ns, const char *name, const char *uid,
                            const char *type, const char *reason, const char *message)
{
    cJSON *e = cJSON_CreateObject(), *meta, *inv, *src;
    char path[512], gen[300], now[32];
    enum dd_rc rc = DD_ENOMEM;

    now_rfc3339(now, sizeof(now));
    snprintf(gen, sizeof(gen), "%s.", name ? name : "object");
    if (e && (meta = cJSON_AddObjectToObject(e, "metadata")) &&
        cJSON_AddStringToObject(meta, "generateName", gen) &&
        cJSON_AddStringToObject(meta, "namespace", ns && *ns ? ns : "default") &&
        (inv = cJSON_AddObjectToObject(e, "involvedObject")) &&
        cJSON_AddStringToObject(inv, "apiVersion", api) &&
        cJSON_AddStringToObject(inv, "kind", kind) &&
        (!ns || !*ns || cJSON_AddStringToObject(inv, "namespace", ns)) &&
        cJSON_AddStringToObject(inv, "name", name ? name : "") &&
        (!uid || cJSON_AddStringToObject(inv, "uid", uid)) &&
        cJSON_AddStringToObject(e, "type", type) && cJSON_AddStringToObject(e, "reason", reason) &&
        cJSON_AddStringToObject(e, "message", message) &&
        (src = cJSON_AddObjectToObject(e, "source")) &&
        cJSON_AddStringToObject(src, "component", REPORTER) &&
        cJSON_AddStringToObject(e, "firstTimestamp", now) &&
        cJSON_AddStringToObject(e, "lastTimestamp", now) && cJSON_AddNumberToObject(e, "count", 1) &&
        cJSON_AddStringToObject(e, "reportingComponent", "dra-doctor.io/controller") &&
        cJSON_AddStringToObject(e, "reportingInstance", c->o.identity)) {
        kube_path(path, sizeof(path), "", "v1", "events", ns && *ns ? ns : "default", NULL,
                  NULL);
        rc = kube_create(k, path, e, NULL, NULL, NULL);
    }
    cJSON_Delete(e);
    if (rc == DD_OK)
        atomic_fetch_add(&c->events, 1);
    return rc == DD_OK ? 0 : -1;
}

static int post_event(struct ctl *c, struct kube_client *k, const cJSON *pod, const char *type,
                      const char *reason, const char *message)
{
    const char *ns = dd_json_str(pod, "metadata", "namespace", NULL);

    return post_event_about(c, k, "v1", "Pod", ns ? ns : "default",
                            dd_json_str(pod, "metadata", "name", NULL),
                            dd_json_str(pod, "metadata", "uid", NULL), type, reason, message);
}

/*
 * Findings about objects that are no pods and have none to annotate (a workload whose pods
 * are refused, a DeviceTaintRule that evicts every DRA pod): a Warning Event on the object,
 * once per cause (builder thread, leader only).
 */
struct object_post {
    struct ctl *c;
    struct kube_client *k;
};

static void post_object_finding(const struct dd_finding *f, void *ctx)
{
    static const char *const codes[] = { "PodClaimFieldsRemoved", "DeviceTaintRuleEvictsAll" };
    struct ctl *c = ((struct object_post *)ctx)->c;
    char key[320], text[4096];
    size_t j, p;

    for (j = 0; j < sizeof(codes) / sizeof(codes[0]) && strcmp(f->code, codes[j]); j++)
        ;
    if (j == sizeof(codes) / sizeof(codes[0]))
        return;
    snprintf(key, sizeof(key), "%s/%s/%s/%s", f->code, f->obj.kind, f->obj.namespace_,
             f->obj.name);
    for (p = 0; p < c->nposted && strcmp(c->posted[p].key, key); p++)
        ;
    if (p < c->nposted)
        return;
    if (c->nposted == c->capposted) {
        size_t cap = c->capposted ? c->capposted * 2 : 16;
        struct posted *v = realloc(c->posted, cap * sizeof(*v));
        if (!v)
            return;
        c->posted = v;
        c->capposted = cap;
    }
    snprintf(text, sizeof(text), "%s Fix: %s", f->message, f->fix);
    if (!post_event_about(c, ((struct object_post *)ctx)->k, f->obj.api_version, f->obj.kind,
                          f->obj.namespace_, f->obj.name, NULL, "Warning", f->code, text))
        snprintf(c->posted[c->nposted++].key, sizeof(key), "%s", key);
}

static void post_object_findings(struct ctl *c, struct kube_client *k, const struct snapshot *s)
{
    struct object_post op = { c, k };

    snapshot_foreach_finding(s, post_object_finding, &op);
}

/*
 * Server-side apply of the pod's annotations under our own field manager:
 * the applied configuration holds exactly the annotations we want, so
 * applying it without them (a healthy pod) removes ours and touches no one
 * else's.
 */
static char *annotation_apply(const char *ns, const char *name, const struct diag_result *r)
{
    cJSON *p = cJSON_CreateObject(), *meta, *a;
    char *s = NULL;

    if (p && cJSON_AddStringToObject(p, "apiVersion", "v1") &&
        cJSON_AddStringToObject(p, "kind", "Pod") &&
        (meta = cJSON_AddObjectToObject(p, "metadata")) &&
        cJSON_AddStringToObject(meta, "name", name) &&
        cJSON_AddStringToObject(meta, "namespace", ns) &&
        (r->healthy ||
         ((a = cJSON_AddObjectToObject(meta, "annotations")) &&
          cJSON_AddStringToObject(a, DIAG_ANN_ROOT_CAUSE, r->codes[0]) &&
          cJSON_AddStringToObject(a, DIAG_ANN_FINDINGS, r->list) &&
          cJSON_AddStringToObject(a, DIAG_ANN_MESSAGE, r->message))))
        s = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    return s;
}

/* 0 done, 1 retry later (rate-limited), -1 error (rate-limited). */
static int reconcile(struct ctl *c, struct kube_client *k, const char *key)
{
    char ns[256], name[256], path[600], msg[1200];
    const char *slash = strchr(key, '/'), *old_root, *old_msg;
    const struct dra_podspec *p;
    struct snapshot *s;
    struct diag_result r;
    cJSON *pod;
    char *patch;
    int ret = 0;

    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return 0;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    snprintf(name, sizeof(name), "%s", slash + 1);
    s = snap_get(c);
    p = s ? snapshot_pod(s, ns, name) : NULL;
    if (!p) {
        /* The snapshot predates the pod: wait for the next one, which re-queues it (a
         * deleted pod, -1, is nothing to wait for). */
        snap_put(c, s);
        if (inf_store_with(live_store(c->lc, RES_PODS), key, look_claims, NULL) > 0)
            note_pod(c, ns, name);
        return 0;
    }
    diag_pod_indexed(&s->m, &s->f, s->ix, p, &r);
    snap_put(c, s);
    /* Most pods a snapshot re-queues are annotated as they should be already: a look at
     * the cached pod (newer than the snapshot's, with our own last patch) says so without
     * copying it.  -1: it is gone. */
    if (inf_store_with(live_store(c->lc, RES_PODS), key, look_annotated, &r))
        return 0;
    if (!(pod = inf_store_get(live_store(c->lc, RES_PODS), key)))
        return 0;
    old_root = ann(pod, DIAG_ANN_ROOT_CAUSE);
    old_msg = ann(pod, DIAG_ANN_MESSAGE);
    if (annotated(pod, &r)) {
        cJSON_Delete(pod);
        return 0;
    }
    kube_path(path, sizeof(path), "", "v1", "pods", ns, name, NULL);
    if (!(patch = annotation_apply(ns, name, &r)) ||
        kube_patch(k, path, KUBE_PATCH_APPLY, patch, FIELD_MANAGER, 1, NULL, NULL, NULL) != DD_OK) {
        free(patch);
        cJSON_Delete(pod);
        return -1;
    }
    free(patch);
    atomic_fetch_add(&c->patches, 1);
    /* One Event per change of diagnosis: the annotation is the memory, so resyncs stay quiet. */
    if (!r.healthy && !(same(old_root, r.codes[0]) && same(old_msg, r.message)))
        ret = post_event(c, k, pod, "Warning", r.codes[0], r.message);
    else if (r.healthy && old_root) {
        snprintf(msg, sizeof(msg), "No DRA fault remains on pod %s (it was %s).", name, old_root);
        ret = post_event(c, k, pod, "Normal", "Resolved", msg);
    }
    cJSON_Delete(pod);
    return ret;
}

static void *worker(void *arg)
{
    struct ctl *c = arg;
    struct kube_client *k = kube_client_new(&c->cfg, NULL, NULL);
    char key[KEY_MAX];

    while (k && wq_get(c->q, key, sizeof(key), -1)) {
        int rc = 0;
        if (!c->lease || lease_is_leader(c->lease)) {
            rc = reconcile(c, k, key);
            atomic_fetch_add(&c->reconciles, 1);
        }
        if (rc) {
            if (rc < 0)
                atomic_fetch_add(&c->errors, 1);
            wq_add_rate_limited(c->q, key);
        } else {
            wq_forget(c->q, key);
        }
        wq_done(c->q, key);
    }
    kube_client_free(k);
    return NULL;
}

/* ---- health and metrics --------------------------------------------------- */

static void h_readyz(void *ctx, const char *m, const char *b, size_t n, struct httpd_response *r)
{
    struct ctl *c = ctx;
    char msg[sizeof(c->cluster.says) + 32];

    (void)m; (void)b; (void)n;
    if (!c->cluster.supported) {
        snprintf(msg, sizeof(msg), "unsupported cluster: %s\n", c->cluster.says);
        httpd_text(r, 503, msg);
    } else if (live_synced(c->lc))
        httpd_text(r, 200, "ok\n");
    else
        httpd_text(r, 503, "caches not synced\n");
}

/* Pods by the code of their dra-doctor.io/root-cause annotation, for
 * dra_doctor_pods_with_root_cause: the rule codes first (each reported, 0 or not), then
 * codes only a diagnosis gives (evidence such as DriverNotRegistered), as met. */
#define STUCK_CODES_MAX 64
#define STUCK_CODE_LEN 64

struct stuck {
    const char *code[STUCK_CODES_MAX];
    char extra[STUCK_CODES_MAX][STUCK_CODE_LEN + 1]; /* copies: the store's objects are
                                                        borrowed only during the visit */
    size_t count[STUCK_CODES_MAX], n, other;
};

/* Findings by rule (the table's order). */
struct finding_count {
    const struct dd_rule *rules;
    size_t nrules, *cnt;
};

static void count_finding(const struct dd_finding *f, void *ctx)
{
    struct finding_count *fc = ctx;
    size_t i;

    for (i = 0; i < fc->nrules; i++)
        if (fc->rules[i].code == f->code) {
            fc->cnt[i]++;
            return;
        }
}

static int count_stuck(void *ctx, const cJSON *pod)
{
    struct stuck *st = ctx;
    const char *root = ann(pod, DIAG_ANN_ROOT_CAUSE);
    size_t i, len;

    if (!root || !root[0])
        return 0;
    for (i = 0; i < st->n; i++)
        if (!strcmp(root, st->code[i])) {
            st->count[i]++;
            return 0;
        }
    /* A label value must stay a plain word, whatever an annotation says. */
    len = strlen(root);
    if (st->n < STUCK_CODES_MAX && len <= STUCK_CODE_LEN &&
        strspn(root, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == len) {
        memcpy(st->extra[st->n], root, len + 1);
        st->code[st->n] = st->extra[st->n];
        st->count[st->n++] = 1;
    } else {
        st->other++;
    }
    return 0;
}

static void h_metrics(void *ctx, const char *m, const char *b, size_t n, struct httpd_response *r)
{
    struct ctl *c = ctx;
    struct snapshot *s = snap_get(c);
    size_t len = 0, cap = 32768, i, nrules;
    const struct dd_rule *rules = dd_rules(&nrules);
    struct finding_count fc = { rules, nrules, NULL };
    char *buf = malloc(cap);
    struct stuck *st = calloc(1, sizeof(*st));

    (void)m; (void)b; (void)n;
#define OUT(...) (len += buf && len < cap ? (size_t)snprintf(buf + len, cap - len, __VA_ARGS__) : 0)
    OUT("# HELP dra_doctor_reconciles_total Pods reconciled.\n# TYPE dra_doctor_reconciles_total counter\n"
        "dra_doctor_reconciles_total %lu\n", atomic_load(&c->reconciles));
    OUT("# HELP dra_doctor_reconcile_errors_total Reconciles that failed and were retried.\n"
        "# TYPE dra_doctor_reconcile_errors_total counter\ndra_doctor_reconcile_errors_total %lu\n",
        atomic_load(&c->errors));
    OUT("# HELP dra_doctor_pod_patches_total Annotation patches written.\n"
        "# TYPE dra_doctor_pod_patches_total counter\ndra_doctor_pod_patches_total %lu\n",
        atomic_load(&c->patches));
    OUT("# HELP dra_doctor_events_total Events emitted.\n# TYPE dra_doctor_events_total counter\n"
        "dra_doctor_events_total %lu\n", atomic_load(&c->events));
    OUT("# HELP dra_doctor_snapshot_updates_total Snapshots by how they were made: built whole, "
        "rules rerun for what changed (delta), or the model patched too.\n"
        "# TYPE dra_doctor_snapshot_updates_total counter\n"
        "dra_doctor_snapshot_updates_total{how=\"whole\"} %lu\n"
        "dra_doctor_snapshot_updates_total{how=\"delta\"} %lu\n"
        "dra_doctor_snapshot_updates_total{how=\"patched\"} %lu\n",
        atomic_load(&c->built[0]), atomic_load(&c->built[1]), atomic_load(&c->built[2]));
    OUT("# HELP dra_doctor_snapshot_whole_total Updates a patch could not make (the snapshot "
        "was built whole, afresh or beside: --rebuild), by the first change it could not "
        "take.\n"
        "# TYPE dra_doctor_snapshot_whole_total counter\n");
    for (i = SNAPSHOT_PATCHED + 1; i < SNAPSHOT_WHOLE_N; i++)
        OUT("dra_doctor_snapshot_whole_total{why=\"%s\"} %lu\n",
            snapshot_whole_name((enum snapshot_whole)i), atomic_load(&c->whole[i]));
    OUT("# HELP dra_doctor_pods_reached_total Pods queued because a change may reach their "
        "diagnosis.\n# TYPE dra_doctor_pods_reached_total counter\n"
        "dra_doctor_pods_reached_total %lu\n"
        "# HELP dra_doctor_reached_all_total Changes that may reach every pod's diagnosis.\n"
        "# TYPE dra_doctor_reached_all_total counter\ndra_doctor_reached_all_total %lu\n",
        atomic_load(&c->reached), atomic_load(&c->reached_all));
    live_metrics(c->lc, buf, buf ? cap : 0, &len);
    OUT("# HELP dra_doctor_workqueue_depth Keys waiting.\n# TYPE dra_doctor_workqueue_depth gauge\n"
        "dra_doctor_workqueue_depth %zu\n", wq_len(c->q));
    OUT("# HELP dra_doctor_leader 1 when this replica holds the lease.\n"
        "# TYPE dra_doctor_leader gauge\ndra_doctor_leader %d\n",
        !c->lease || lease_is_leader(c->lease));
    OUT("# HELP dra_doctor_findings Findings of the current snapshot, by rule code.\n"
        "# TYPE dra_doctor_findings gauge\n");
    /* None while there is no snapshot (before the first, or while one is built afresh):
     * absent, not zero. */
    fc.cnt = s ? calloc(nrules + 1, sizeof(*fc.cnt)) : NULL;
    if (fc.cnt)
        snapshot_foreach_finding(s, count_finding, &fc);
    for (i = 0; fc.cnt && i < nrules; i++)
        OUT("dra_doctor_findings{code=\"%s\"} %zu\n", rules[i].code, fc.cnt[i]);
    free(fc.cnt);
    if (st) {
        for (i = 0; i < nrules && i < STUCK_CODES_MAX; i++)
            st->code[st->n++] = rules[i].code;
        inf_store_foreach(live_store(c->lc, RES_PODS), count_stuck, st);
        OUT("# HELP dra_doctor_pods_with_root_cause Pods whose dra-doctor.io/root-cause "
            "annotation names this code (stuck DRA pods).\n"
            "# TYPE dra_doctor_pods_with_root_cause gauge\n");
        for (i = 0; i < st->n; i++)
            OUT("dra_doctor_pods_with_root_cause{code=\"%s\"} %zu\n", st->code[i], st->count[i]);
        if (st->other)
            OUT("dra_doctor_pods_with_root_cause{code=\"other\"} %zu\n", st->other);
    }
#undef OUT
    free(st);
    snap_put(c, s);
    r->status = 200;
    r->content_type = "text/plain; version=0.0.4";
    r->body = buf;
    r->len = buf ? (len < cap ? len : cap - 1) : 0;
}

/* ---- main ----------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor controller [options]\n"
"\n"
"Watches pods with DRA claims and everything their allocation depends on, and\n"
"writes the root cause of every Pending or failing pod on the pod itself:\n"
"annotations dra-doctor.io/root-cause, dra-doctor.io/findings and\n"
"dra-doctor.io/message (kubectl describe pod shows them) and a Warning Event\n"
"whose reason is the rule code.  When the pod recovers the annotations go and a\n"
"Normal Event 'Resolved' is recorded.\n"
"\n"
"options:\n"
"  --kubeconfig FILE            default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
"  --context NAME\n"
"  --workers N                  concurrent reconciles (default 2)\n"
"  --leader-elect=BOOL          default true: only the Lease holder writes\n"
"  --leader-elect-namespace NS  default: the configuration's namespace\n"
"  --leader-elect-name NAME     default dra-doctor-controller\n"
"  --leader-elect-lease-duration SECONDS (default 15)\n"
"  --leader-elect-renew-deadline SECONDS (default 10)\n"
"  --leader-elect-retry-period SECONDS   (default 2)\n"
"  --metrics-bind-address ADDR:PORT      /healthz, /readyz, /metrics (default 0.0.0.0:8080;\n"
"                                        port 0 disables)\n"
"  --identity NAME              this replica's identity (default hostname_pid_random)\n"
"  --feature-gates LIST         the cluster's feature gates (A=true,B=false) over what the\n"
"                               API server's /metrics tells, or its release's defaults\n"
"  --rebuild afresh|beside      how a snapshot is rebuilt when a change cannot be patched\n"
"                               in (a claim allocated, a class or node changed): afresh\n"
"                               (default) lets the current one go first, so that one\n"
"                               snapshot's memory is held at a time, and pods wait for the\n"
"                               rebuild (about a second at 50,000 pods); beside builds it\n"
"                               while the current one serves: pods never wait, at twice\n"
"                               the snapshot's memory meanwhile\n"
"  -h, --help\n");
}

static int parse_secs(const char *s, int *ms)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end || v <= 0 || v > 3600)
        return -1;
    *ms = (int)(v * 1000);
    return 0;
}

static int parse_args(struct ctl_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "workers", required_argument, NULL, 'w' },
        { "leader-elect", optional_argument, NULL, 'L' },
        { "leader-elect-namespace", required_argument, NULL, 'N' },
        { "leader-elect-name", required_argument, NULL, 'n' },
        { "leader-elect-lease-duration", required_argument, NULL, 'd' },
        { "leader-elect-renew-deadline", required_argument, NULL, 'r' },
        { "leader-elect-retry-period", required_argument, NULL, 'p' },
        { "metrics-bind-address", required_argument, NULL, 'm' },
        { "identity", required_argument, NULL, 'i' },
        { "feature-gates", required_argument, NULL, 'G' },
        { "rebuild", required_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    char host[100] = "dra-doctor";
    const char *colon;
    int ch, li = 0;
    long v;

    memset(o, 0, sizeof(*o));
    o->workers = 2;
    o->leader_elect = 1;
    o->lease_name = "dra-doctor-controller";
    o->lease_ms = 15000;
    o->renew_ms = 10000;
    o->retry_ms = 2000;
    snprintf(o->bind, sizeof(o->bind), "0.0.0.0");
    o->port = 8080;
    gethostname(host, sizeof(host) - 1);
    {
        /* Unique per process, as client-go's hostname_UUID: in a container the pid is always
         * 1, and a restarted container reusing its identity would resume a Lease its
         * predecessor held (measured on the real node) instead of letting it expire. */
        unsigned r = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
        FILE *u = fopen("/dev/urandom", "r");
        if (u) {
            if (fread(&r, sizeof(r), 1, u) != 1)
                r ^= (unsigned)clock();
            fclose(u);
        }
        snprintf(o->identity, sizeof(o->identity), "%s_%ld_%08x", host, (long)getpid(), r);
    }
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, &li)) != -1) {
        switch (ch) {
        case 'k': o->kubeconfig = optarg; break;
        case 'c': o->context = optarg; break;
        case 'N': o->lease_ns = optarg; break;
        case 'n': o->lease_name = optarg; break;
        case 'i': snprintf(o->identity, sizeof(o->identity), "%s", optarg); break;
        case 'G': o->feature_gates = optarg; break;
        case 'R':
            if (strcmp(optarg, "afresh") && strcmp(optarg, "beside"))
                goto bad;
            o->beside = !strcmp(optarg, "beside");
            break;
        case 'w':
            v = strtol(optarg, NULL, 10);
            if (v < 1 || v > 64)
                goto bad;
            o->workers = (int)v;
            break;
        case 'L':
            if (!optarg || !strcmp(optarg, "true"))
                o->leader_elect = 1;
            else if (!strcmp(optarg, "false"))
                o->leader_elect = 0;
            else
                goto bad;
            break;
        case 'd': if (parse_secs(optarg, &o->lease_ms)) goto bad; break;
        case 'r': if (parse_secs(optarg, &o->renew_ms)) goto bad; break;
        case 'p': if (parse_secs(optarg, &o->retry_ms)) goto bad; break;
        case 'm':
            if (!(colon = strrchr(optarg, ':')) || (size_t)(colon - optarg) >= sizeof(o->bind))
                goto bad;
            memcpy(o->bind, optarg, (size_t)(colon - optarg));
            o->bind[colon - optarg] = '\0';
            if (!o->bind[0])
                snprintf(o->bind, sizeof(o->bind), "0.0.0.0");
            v = strtol(colon + 1, NULL, 10);
            if (v < 0 || v > 65535)
                goto bad;
            o->port = (unsigned short)v;
            break;
        case 'h': usage(stdout); return 1;
        default: goto bad;
        }
    }
    if (optind < argc || o->renew_ms >= o->lease_ms || o->retry_ms >= o->renew_ms) {
        fprintf(stderr, "dra-doctor controller: need lease duration > renew deadline > retry "
                "period, and no arguments\n");
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "dra-doctor controller: invalid value \"%s\" for --%s (see --help)\n",
            optarg ? optarg : "", opts[li].name);
    return -1;
}

static void shutdown_all(struct ctl *c, pthread_t *threads, int nthreads)
{
    int t;

    atomic_store(&c->stop, 1);
    wq_shutdown(c->q);
    for (t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    live_stop(c->lc);
    if (c->lease)
        lease_stop(c->lease); /* releases the Lease so a successor takes over at once */
    if (c->http)
        httpd_stop(c->http);
    live_free(c->lc);
    dra_cel_cache_free(c->cel); /* after the last snapshot */
    cluster_sars_forget(&c->sars);
    kube_client_free(c->client);
    free(c->posted);
    free_keys(c->pending, c->npending);
    free_keys(c->built_keys, c->nbuilt);
    wq_free(c->q);
    kube_config_release(&c->cfg);
}

/*
 * What the API server is (cluster.h): said once at start, and in /readyz when it is too old.
 * DeviceTaintRules are watched in the version it serves them in, if any.
 */
static int discover(struct ctl *c)
{
    size_t i, nextra;

    c->ropt = (struct rule_options)RULE_OPTIONS_INIT;
    if (cluster_start(&c->cfg, "controller", c->o.feature_gates, 1, &c->cluster, &c->ropt))
        return -1;
    nextra = cluster_extra_resources(&c->cluster, c->extra, 4);
    for (i = 0; i < cluster_nresources + nextra && i < MAX_WATCHED; i++) {
        const struct cluster_resource *r = i < cluster_nresources
                                               ? &cluster_resources[i]
                                               : &c->extra[i - cluster_nresources];
        c->res[i] = (struct live_resource){ r->group, r->version, r->resource, r->selector,
                                            keep_object };
        c->kind[i] = !strcmp(r->resource, "pods")     ? W_PODS
                     : !strcmp(r->resource, "events") ? W_EVENTS
                     : !strcmp(r->resource, "nodes")  ? W_NODES
                                                      : W_OTHER;
    }
    c->nres = i;
    return 0;
}

/* The snapshots' cache: every resource, objects trimmed page by page while listing (so no
 * list holds more than one page of whole objects), a snapshot after each burst. */
static int start_cache(struct ctl *c, struct dd_err *err)
{
    struct live_opts lo;
    struct live_hooks lh = { c, changed, NULL, NULL, build, free_view, NULL, after, NULL };

    memset(&lo, 0, sizeof(lo));
    lo.res = c->res;
    lo.nres = c->nres;
    lo.transform = keep_trim;
    lo.page_size = LIST_PAGE;
    lo.settle_ms = SNAPSHOT_SETTLE_MS;
    lo.rest_ms = SNAPSHOT_MIN_MS;
    lo.after_synced = 1;
    lo.trim_heap = 1;
    lo.who = "controller";
    lo.prefix = "dra_doctor_";
    lo.noun = "snapshot";
    if (c->lease) {
        lo.idle_ms = LEADER_POLL_MS;
        lh.idle = idle;
    }
    if (!(c->cel = dra_cel_cache_new()) || !(c->lc = live_new(&lo, &lh, err)))
        return -1;
    return live_start(c->lc, &c->cfg, err);
}

int controller_main(int argc, char **argv)
{
    struct ctl *c = calloc(1, sizeof(*c));
    struct httpd_route routes[3];
    pthread_t threads[64];
    struct httpd_opts hopts;
    struct lease_opts lopts;
    struct dd_err err;
    sigset_t sigs;
    int nthreads = 0, code = 2, sig, rc;

    if (!c)
        return 2;
    /* A dozen threads (reflectors, workers, builder) would each get a malloc arena of their
     * own; objects made on one and freed on another leave every arena at its peak. */
    mallopt(M_ARENA_MAX, 2);
    if ((rc = parse_args(&c->o, argc, argv))) {
        free(c);
        return rc > 0 ? 0 : 2;
    }
    dd_err_clear(&err);
    if (kube_config_load(&c->cfg, c->o.kubeconfig, c->o.context, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor controller: %s\n", err.msg);
        free(c);
        return 2;
    }
    /* Threads inherit this mask; the main thread alone takes the signals. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    pthread_mutex_init(&c->mu, NULL);
    c->q = wq_new(NULL);
    if (discover(c))
        goto out;
    if (c->o.leader_elect) {
        memset(&lopts, 0, sizeof(lopts));
        lopts.ns = c->o.lease_ns ? c->o.lease_ns
                                 : (c->cfg.namespace_ ? c->cfg.namespace_ : "default");
        lopts.name = c->o.lease_name;
        lopts.identity = c->o.identity;
        lopts.lease_duration_ms = c->o.lease_ms;
        lopts.renew_deadline_ms = c->o.renew_ms;
        lopts.retry_period_ms = c->o.retry_ms;
        if (!(c->lease = lease_start(&c->cfg, &lopts, &err))) {
            fprintf(stderr, "dra-doctor controller: leader election: %s\n", err.msg);
            goto out;
        }
    }
    if (start_cache(c, &err)) {
        fprintf(stderr, "dra-doctor controller: %s\n", err.msg);
        goto out;
    }
    if (c->o.port) {
        routes[0] = (struct httpd_route){ "/healthz", httpd_ok, c, NULL };
        routes[1] = (struct httpd_route){ "/readyz", h_readyz, c, NULL };
        routes[2] = (struct httpd_route){ "/metrics", h_metrics, c, NULL };
        memset(&hopts, 0, sizeof(hopts));
        hopts.bind = c->o.bind;
        hopts.port = c->o.port;
        if (!(c->http = httpd_start(&hopts, routes, 3, &err))) {
            fprintf(stderr, "dra-doctor controller: metrics server: %s\n", err.msg);
            goto out;
        }
    }
    for (; nthreads < c->o.workers; nthreads++)
        if (pthread_create(&threads[nthreads], NULL, worker, c))
            goto out;
    fprintf(stderr, "dra-doctor controller: running as %s (%d workers)\n", c->o.identity,
            c->o.workers);
    sigwait(&sigs, &sig);
    fprintf(stderr, "dra-doctor controller: %s: shutting down\n", strsignal(sig));
    code = 0;
out:
    shutdown_all(c, threads, nthreads);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return code;
}
