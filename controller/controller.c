/*
 * controller.c - `dra-doctor controller`: informers -> snapshot -> work queue
 * -> per-pod diagnosis -> annotations and Events.
 *
 * Threads: one reflector per watched resource (lib/client/informer), one snapshot
 * builder, N workers, the leader-election candidate, the HTTP server, and
 * the main thread waiting for SIGTERM.  Reflector handlers only record what
 * changed (see "informer handlers"); the builder batches changes into a new
 * snapshot at most every SNAPSHOT_MIN_MS and then enqueues the pods they may
 * affect (a pod's own change: that pod; a class, claim or slice: every pod
 * whose diagnosis differs from its annotations); a worker compares the
 * diagnosis with the pod's annotations and patches only on a difference, so
 * the loop converges.
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
#include "client/httpd.h"
#include "client/informer.h"
#include "formats/json.h"
#include "client/lease.h"
#include "snapshot.h"
#include "cluster.h"
#include "client/workqueue.h"

#define SNAPSHOT_MIN_MS 100  /* batch bursts of changes into one rebuild */
#define SNAPSHOT_SETTLE_MS 20 /* the first change after a quiet spell waits for its burst */
#define LEADER_POLL_MS 250   /* how often the builder looks for a gain of leadership */
#define LIST_PAGE 100        /* objects per LIST page: the untrimmed page is the largest
                                transient allocation */
#define SAR_TTL_MS 60000     /* SubjectAccessReview answers are asked again at least this often */
#define KEY_MAX WQ_KEY_SIZE
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
};

struct ctl {
    struct ctl_opts o;
    struct kube_config cfg;
    struct cluster_info cluster; /* the API server's release, served versions and gates */
    struct rule_options ropt;  /* the rule engine's options for them */
    size_t nstores;            /* snap_resources, then extra[] */
    struct snap_resource extra[4]; /* what the API server has beyond them: DeviceTaintRules in
                                     the version they are served in, workloads' FailedCreate
                                     Events, mutating webhooks and policies */
    struct posted { char key[320]; } *posted; /* Events posted on objects that are no pods */
    size_t nposted, capposted;
    struct inf_store *stores[16];
    struct inf_reflector *refl[16];
    struct wq *q;
    struct lease *lease;
    struct httpd *http;
    pthread_mutex_t mu;        /* guards snap, dirty */
    pthread_cond_t cv;
    struct snapshot *snap;     /* current snapshot; refs guarded by mu */
    int dirty;                 /* the caches changed since the last snapshot */
    int requeue_all;           /* ...in a way any pod's diagnosis may depend on */
    char **pending;            /* pods whose own state changed since the last snapshot */
    size_t npending, cappending;
    /* Snapshots borrow the informers' objects instead of copying them; an object a store
     * lets go of waits in the graveyard until no snapshot that may hold it is alive. */
    pthread_mutex_t gmu;       /* guards everything below */
    struct grave { cJSON *obj; uint64_t epoch; } *graves;
    size_t ngraves, capgraves;
    uint64_t collect_id;       /* id of the newest snapshot that started collecting */
    uint64_t alive[256];       /* ids of snapshots not yet freed */
    size_t nalive;
    int led;                   /* builder thread only: leading at its last look */
    struct snapshot_cache cache; /* builder thread only: what the next snapshots reuse */
    uint64_t sar_stamp;        /* builder thread only: RBAC and DaemonSet caches when asked */
    int64_t sar_at_ms;
    atomic_int stop;
    atomic_ulong reconciles, errors, patches, events, builds;
    atomic_ulong build_us, build_max_us, build_cpu_us; /* time spent building snapshots */
};

/* ---- informer handlers ---------------------------------------------------- */
/*
 * Handlers only record what changed.  A pod's own change (or an Event about
 * it) re-diagnoses that pod once the next snapshot holds the change; a
 * change to anything else (a class, a slice, a quota...) re-diagnoses every
 * pod.  Node heartbeats change nothing a rule reads and are ignored, or a
 * cluster with many nodes would rebuild forever.
 */

#define MAX_PENDING 10000 /* beyond that, re-diagnosing everything is cheaper to track */

/* A pod the diagnosis reads: one with claims, or one asking for extended resources that a
 * DeviceClass may back (the scheduler makes its claim). */
static int pod_has_claims(const cJSON *pod)
{
    return cJSON_GetArraySize(dd_json_arr(pod, "spec", "resourceClaims", NULL)) > 0 ||
           dra_requests_extended(dd_json_path(pod, "spec", NULL));
}

static void mark_dirty_locked(struct ctl *c, int all)
{
    c->dirty = 1;
    c->requeue_all |= all;
    pthread_cond_signal(&c->cv);
}

static void mark_dirty(struct ctl *c)
{
    pthread_mutex_lock(&c->mu);
    mark_dirty_locked(c, 0);
    pthread_mutex_unlock(&c->mu);
}

static void note_pod(struct ctl *c, const char *ns, const char *name)
{
    char key[KEY_MAX], *dup;

    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    pthread_mutex_lock(&c->mu);
    if (c->npending == c->cappending && c->npending < MAX_PENDING) {
        size_t cap = c->cappending ? c->cappending * 2 : 64;
        char **v = realloc(c->pending, cap * sizeof(*v));
        if (v) {
            c->pending = v;
            c->cappending = cap;
        }
    }
    if (c->npending < c->cappending && (dup = strdup(key)))
        c->pending[c->npending++] = dup;
    else
        c->requeue_all = 1;
    mark_dirty_locked(c, 0);
    pthread_mutex_unlock(&c->mu);
}

static void on_any(struct ctl *c);

/* A pod with claims matters to itself; a kubelet plugin's pod (whether its driver runs on a
 * node) to every pod. */
static void on_pod(struct ctl *c, const cJSON *pod)
{
    if (pod_has_claims(pod))
        note_pod(c, dd_json_str(pod, "metadata", "namespace", NULL),
                 dd_json_str(pod, "metadata", "name", NULL));
    else if (dra_pod_registers_plugin(pod))
        on_any(c);
}

static void on_any(struct ctl *c)
{
    pthread_mutex_lock(&c->mu);
    mark_dirty_locked(c, 1);
    pthread_mutex_unlock(&c->mu);
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Only Events the diagnosis reads matter, and only to the pod they are about (the cache
 * keeps no others, see snapshot_keep). */
static void on_event(struct ctl *c, const cJSON *e)
{
    const cJSON *about = dd_json_path(e, "involvedObject", NULL);

    if (!diag_event_reason_used(dd_json_str(e, "reason", NULL)))
        return;
    if (same(dd_json_str(about, "kind", NULL), "Pod"))
        note_pod(c, dd_json_str(about, "namespace", NULL), dd_json_str(about, "name", NULL));
    else
        on_any(c); /* a workload's: judged on the workload (PodClaimFieldsRemoved) */
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

static void h_pod_add(void *ctx, const cJSON *o) { on_pod(ctx, o); }

static void h_pod_upd(void *ctx, const cJSON *a, const cJSON *b)
{
    struct ctl *c = ctx;
    char key[KEY_MAX];

    switch (pod_change(a, b)) {
    case 0:
        return;
    case 2:
        /* Nothing the diagnosis reads changed: the current snapshot serves, a worker only
         * compares the diagnosis with the new annotations. */
        if (pod_has_claims(b) && inf_key(b, key, sizeof(key)))
            wq_add(c->q, key);
        return;
    default:
        on_pod(c, b);
    }
}
static void h_pod_del(void *ctx, const cJSON *o) { on_pod(ctx, o); }
static void h_ev_add(void *ctx, const cJSON *o) { on_event(ctx, o); }
static void h_ev_upd(void *ctx, const cJSON *a, const cJSON *b) { (void)a; on_event(ctx, b); }
static void h_ev_del(void *ctx, const cJSON *o) { (void)ctx; (void)o; }
static void h_any_add(void *ctx, const cJSON *o) { (void)o; on_any(ctx); }
static void h_any_upd(void *ctx, const cJSON *a, const cJSON *b) { (void)a; (void)b; on_any(ctx); }
static void h_any_del(void *ctx, const cJSON *o) { (void)o; on_any(ctx); }

static void h_node_upd(void *ctx, const cJSON *a, const cJSON *b)
{
    if (same(dd_json_str(a, "metadata", "annotations", DRA_NODE_CDI_ANNOTATION, NULL),
             dd_json_str(b, "metadata", "annotations", DRA_NODE_CDI_ANNOTATION, NULL)) &&
        same(dd_json_str(a, "status", "nodeInfo", "containerRuntimeVersion", NULL),
             dd_json_str(b, "status", "nodeInfo", "containerRuntimeVersion", NULL)))
        return;
    on_any(ctx);
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

/* The informers' drop hook: objects may still be borrowed by a snapshot collected before. */
static void on_drop(void *ctx, cJSON *obj)
{
    struct ctl *c = ctx;

    pthread_mutex_lock(&c->gmu);
    if (c->ngraves == c->capgraves) {
        size_t cap = c->capgraves ? c->capgraves * 2 : 256;
        struct grave *g = realloc(c->graves, cap * sizeof(*g));
        if (!g) {
            /* Cannot defer: leaking one object beats freeing one a snapshot may hold. */
            pthread_mutex_unlock(&c->gmu);
            return;
        }
        c->graves = g;
        c->capgraves = cap;
    }
    c->graves[c->ngraves].obj = obj;
    c->graves[c->ngraves++].epoch = c->collect_id;
    pthread_mutex_unlock(&c->gmu);
}

/* Frees the dropped objects no alive snapshot can hold (all of them when none is alive). */
static void sweep(struct ctl *c)
{
    uint64_t min = UINT64_MAX;
    size_t i, k = 0;

    pthread_mutex_lock(&c->gmu);
    for (i = 0; i < c->nalive; i++)
        if (c->alive[i] < min)
            min = c->alive[i];
    for (i = 0; i < c->ngraves; i++) {
        /* A snapshot with id <= epoch may have collected the object before it was dropped. */
        if (c->graves[i].epoch < min)
            cJSON_Delete(c->graves[i].obj);
        else
            c->graves[k++] = c->graves[i];
    }
    c->ngraves = k;
    pthread_mutex_unlock(&c->gmu);
}

/* Registers a new snapshot id before it collects objects; 0 when too many are alive. */
static uint64_t snap_begin(struct ctl *c)
{
    uint64_t id = 0;

    pthread_mutex_lock(&c->gmu);
    if (c->nalive < sizeof(c->alive) / sizeof(c->alive[0])) {
        id = ++c->collect_id;
        c->alive[c->nalive++] = id;
    }
    pthread_mutex_unlock(&c->gmu);
    return id;
}

static void snap_end(struct ctl *c, uint64_t id)
{
    size_t i;

    pthread_mutex_lock(&c->gmu);
    for (i = 0; i < c->nalive; i++)
        if (c->alive[i] == id) {
            c->alive[i] = c->alive[--c->nalive];
            break;
        }
    pthread_mutex_unlock(&c->gmu);
    sweep(c);
}

static struct snapshot *snap_get(struct ctl *c)
{
    struct snapshot *s;

    pthread_mutex_lock(&c->mu);
    if ((s = c->snap))
        s->refs++;
    pthread_mutex_unlock(&c->mu);
    return s;
}

static void snap_put(struct ctl *c, struct snapshot *s)
{
    uint64_t id;
    int last;

    if (!s)
        return;
    pthread_mutex_lock(&c->mu);
    last = --s->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last)
        return;
    id = s->id;
    snapshot_free(s);
    snap_end(c, id);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static void timed_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's default clock */
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t clock_us(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The index of snap_resources entry resource. */
static size_t resource_index(const char *resource)
{
    size_t i;

    for (i = 0; i < snap_nresources; i++)
        if (!strcmp(snap_resources[i].resource, resource))
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
        if ((r = resource_index(deps[i])) < snap_nresources)
            stamp += inf_store_generation(c->stores[r]);
    if (stamp != c->sar_stamp || now - c->sar_at_ms >= SAR_TTL_MS) {
        snapshot_cache_forget_sars(&c->cache);
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
    size_t i, n = 0;

    for (i = 0; i < s->m.npods; i++) {
        const struct dra_podspec *p = &s->m.pods[i];
        struct diag_result r;
        char key[KEY_MAX];

        if (!p->status || atomic_load(&c->stop))
            continue;
        diag_pod_indexed(&s->m, &s->f, s->ix, p, &r);
        snprintf(key, sizeof(key), "%s/%s", p->o.ns, p->o.name);
        if (inf_store_with(c->stores[0], key, look_annotated, &r) == 0) {
            wq_add(c->q, key);
            n++;
        }
    }
    return n;
}

static int synced(struct ctl *c);

static void post_object_findings(struct ctl *c, struct kube_client *k, const struct snapshot *s);

static void *builder(void *arg)
{
    struct ctl *c = arg;
    struct kube_client *client;
    struct dd_err err;
    size_t i;

    dd_err_clear(&err);
    client = kube_client_new(&c->cfg, NULL, &err);
    while (!atomic_load(&c->stop)) {
        const cJSON **objs = NULL;
        size_t nobjs = 0;
        uint64_t id;
        struct snapshot *s, *old;
        char **keys;
        size_t nkeys;
        int64_t t0, cpu0;
        int all, idle = 0;

        pthread_mutex_lock(&c->mu);
        while (!c->dirty && !atomic_load(&c->stop)) {
            int led;
            idle = 1;
            if (!c->lease) {
                pthread_cond_wait(&c->cv, &c->mu);
                continue;
            }
            /*
             * Workers drop the keys they get while not leading, so a
             * replica that becomes leader (at start, after a failover, or
             * after losing the Lease for a while) must go over every pod
             * once: a fresh snapshot enqueues them all.
             */
            timed_wait_ms(&c->cv, &c->mu, LEADER_POLL_MS);
            led = lease_is_leader(c->lease);
            if (led && !c->led)
                mark_dirty_locked(c, 1);
            c->led = led;
        }
        if (idle && !atomic_load(&c->stop)) {
            /* The first change after a quiet spell rarely comes alone (a claim, then its
             * pod; a kubectl apply of several objects): let the burst arrive. */
            pthread_mutex_unlock(&c->mu);
            sleep_ms(SNAPSHOT_SETTLE_MS);
            pthread_mutex_lock(&c->mu);
        }
        /*
         * Not before every cache has its first list: a snapshot with the pods but not yet
         * their claims would say the claims do not exist (seen on the real node, installing
         * the controller into a cluster whose pods were already stuck).
         */
        if (!synced(c) && !atomic_load(&c->stop)) {
            pthread_mutex_unlock(&c->mu);
            sleep_ms(50);
            continue; /* still dirty: the loop comes back here */
        }
        /* What changed before the copy below is in this snapshot; later changes mark
         * the next one dirty. */
        c->dirty = 0;
        all = c->requeue_all || !c->snap;
        c->requeue_all = 0;
        keys = c->pending;
        nkeys = c->npending;
        c->pending = NULL;
        c->npending = c->cappending = 0;
        pthread_mutex_unlock(&c->mu);
        if (atomic_load(&c->stop)) {
            while (nkeys)
                free(keys[--nkeys]);
            free(keys);
            break;
        }
        t0 = clock_us(CLOCK_MONOTONIC);
        cpu0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
        refresh_sars(c);
        id = snap_begin(c);
        s = NULL;
        if (id && !inf_stores_collect(c->stores, c->nstores, &objs, &nobjs))
            s = snapshot_build(NULL, objs, nobjs, client, &c->cache, &c->ropt,
                               &err); /* takes objs */
        else if (id)
            dd_failf(&err, DD_ENOMEM, "out of memory collecting the caches");
        if (!s) {
            if (id)
                snap_end(c, id);
            fprintf(stderr, "dra-doctor controller: %s\n", id ? err.msg : "too many snapshots");
            while (nkeys)
                free(keys[--nkeys]);
            free(keys);
            on_any(c);
            sleep_ms(1000);
            continue;
        }
        s->id = id;
        atomic_fetch_add(&c->builds, 1);
        t0 = clock_us(CLOCK_MONOTONIC) - t0;
        atomic_fetch_add(&c->build_cpu_us,
                         (unsigned long)(clock_us(CLOCK_THREAD_CPUTIME_ID) - cpu0));
        atomic_fetch_add(&c->build_us, (unsigned long)t0);
        if ((unsigned long)t0 > atomic_load(&c->build_max_us))
            atomic_store(&c->build_max_us, (unsigned long)t0);
        pthread_mutex_lock(&c->mu);
        old = c->snap;
        c->snap = s;
        pthread_mutex_unlock(&c->mu);
        snap_put(c, old);
        /* The workers compare each affected pod's diagnosis with its annotations: first
         * the pods whose own state changed, then, when anything else changed, every pod
         * whose annotations differ (check_all_pods). */
        for (i = 0; i < nkeys; i++) {
            wq_add(c->q, keys[i]);
            free(keys[i]);
        }
        free(keys);
        t0 = mono_ms();
        if (all && (!c->lease || lease_is_leader(c->lease))) {
            check_all_pods(c, s);
            post_object_findings(c, client, s);
        }
        /* Rest, so that a burst of changes makes one more snapshot, not dozens. */
        t0 = mono_ms() - t0;
        if (t0 < SNAPSHOT_MIN_MS)
            sleep_ms(SNAPSHOT_MIN_MS - t0);
    }
    kube_client_free(client);
    return NULL;
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
static void post_object_findings(struct ctl *c, struct kube_client *k, const struct snapshot *s)
{
    static const char *const codes[] = { "PodClaimFieldsRemoved", "DeviceTaintRuleEvictsAll" };
    char key[320], text[4096];
    size_t i, j, p;

    for (i = 0; i < s->f.n; i++) {
        const struct dd_finding *f = &s->f.v[i];
        for (j = 0; j < sizeof(codes) / sizeof(codes[0]) && strcmp(f->code, codes[j]); j++)
            ;
        if (j == sizeof(codes) / sizeof(codes[0]))
            continue;
        snprintf(key, sizeof(key), "%s/%s/%s/%s", f->code, f->obj.kind, f->obj.namespace_,
                 f->obj.name);
        for (p = 0; p < c->nposted && strcmp(c->posted[p].key, key); p++)
            ;
        if (p < c->nposted)
            continue;
        if (c->nposted == c->capposted) {
            size_t cap = c->capposted ? c->capposted * 2 : 16;
            struct posted *v = realloc(c->posted, cap * sizeof(*v));
            if (!v)
                return;
            c->posted = v;
            c->capposted = cap;
        }
        snprintf(text, sizeof(text), "%s Fix: %s", f->message, f->fix);
        if (!post_event_about(c, k, f->obj.api_version, f->obj.kind, f->obj.namespace_,
                              f->obj.name, NULL, "Warning", f->code, text))
            snprintf(c->posted[c->nposted++].key, sizeof(key), "%s", key);
    }
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
        if (inf_store_with(c->stores[0], key, look_claims, NULL) > 0)
            note_pod(c, ns, name);
        return 0;
    }
    diag_pod_indexed(&s->m, &s->f, s->ix, p, &r);
    snap_put(c, s);
    /* Most pods a snapshot re-queues are annotated as they should be already: a look at
     * the cached pod (newer than the snapshot's, with our own last patch) says so without
     * copying it.  -1: it is gone. */
    if (inf_store_with(c->stores[0], key, look_annotated, &r))
        return 0;
    if (!(pod = inf_store_get(c->stores[0], key)))
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

static int synced(struct ctl *c)
{
    size_t i;

    for (i = 0; i < c->nstores; i++)
        if (!c->refl[i] || !inf_reflector_synced(c->refl[i]))
            return 0;
    return 1;
}

static void text(struct httpd_response *r, int status, const char *s)
{
    r->status = status;
    r->body = strdup(s);
    r->len = r->body ? strlen(r->body) : 0;
}

static void h_healthz(void *ctx, const char *m, const char *b, size_t n, struct httpd_response *r)
{
    (void)ctx; (void)m; (void)b; (void)n;
    text(r, 200, "ok\n");
}

static void h_readyz(void *ctx, const char *m, const char *b, size_t n, struct httpd_response *r)
{
    struct ctl *c = ctx;
    char msg[sizeof(c->cluster.says) + 32];

    (void)m; (void)b; (void)n;
    if (!c->cluster.supported) {
        snprintf(msg, sizeof(msg), "unsupported cluster: %s\n", c->cluster.says);
        text(r, 503, msg);
    } else if (synced(ctx))
        text(r, 200, "ok\n");
    else
        text(r, 503, "caches not synced\n");
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
    size_t len = 0, cap = 32768, i, j, nrules;
    const struct dd_rule *rules = dd_rules(&nrules);
    unsigned long restarts = 0, relists = 0;
    char *buf = malloc(cap);
    struct stuck *st = calloc(1, sizeof(*st));

    (void)m; (void)b; (void)n;
    for (i = 0; i < c->nstores; i++)
        if (c->refl[i]) {
            restarts += inf_reflector_watch_restarts(c->refl[i]);
            relists += inf_reflector_relists(c->refl[i]);
        }
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
    OUT("# HELP dra_doctor_snapshots_total Snapshots built.\n# TYPE dra_doctor_snapshots_total counter\n"
        "dra_doctor_snapshots_total %lu\n", atomic_load(&c->builds));
    OUT("# HELP dra_doctor_snapshot_build_seconds_total Time spent building snapshots.\n"
        "# TYPE dra_doctor_snapshot_build_seconds_total counter\n"
        "dra_doctor_snapshot_build_seconds_total %.6f\n", atomic_load(&c->build_us) / 1e6);
    OUT("# HELP dra_doctor_snapshot_build_cpu_seconds_total CPU time of the snapshot builds.\n"
        "# TYPE dra_doctor_snapshot_build_cpu_seconds_total counter\n"
        "dra_doctor_snapshot_build_cpu_seconds_total %.6f\n", atomic_load(&c->build_cpu_us) / 1e6);
    OUT("# HELP dra_doctor_snapshot_build_max_seconds The longest snapshot build.\n"
        "# TYPE dra_doctor_snapshot_build_max_seconds gauge\n"
        "dra_doctor_snapshot_build_max_seconds %.6f\n", atomic_load(&c->build_max_us) / 1e6);
    OUT("# HELP dra_doctor_workqueue_depth Keys waiting.\n# TYPE dra_doctor_workqueue_depth gauge\n"
        "dra_doctor_workqueue_depth %zu\n", wq_len(c->q));
    OUT("# HELP dra_doctor_watch_restarts_total Watches restarted.\n"
        "# TYPE dra_doctor_watch_restarts_total counter\ndra_doctor_watch_restarts_total %lu\n",
        restarts);
    OUT("# HELP dra_doctor_relists_total Full relists (410 Gone and errors).\n"
        "# TYPE dra_doctor_relists_total counter\ndra_doctor_relists_total %lu\n", relists);
    OUT("# HELP dra_doctor_leader 1 when this replica holds the lease.\n"
        "# TYPE dra_doctor_leader gauge\ndra_doctor_leader %d\n",
        !c->lease || lease_is_leader(c->lease));
    OUT("# HELP dra_doctor_findings Findings of the current snapshot, by rule code.\n"
        "# TYPE dra_doctor_findings gauge\n");
    for (i = 0; i < nrules; i++) {
        size_t cnt = 0;
        for (j = 0; s && j < s->f.n; j++)
            cnt += s->f.v[j].code == rules[i].code;
        OUT("dra_doctor_findings{code=\"%s\"} %zu\n", rules[i].code, cnt);
    }
    if (st) {
        for (i = 0; i < nrules && i < STUCK_CODES_MAX; i++)
            st->code[st->n++] = rules[i].code;
        inf_store_foreach(c->stores[0], count_stuck, st);
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
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    char host[100] = "dra-doctor";
    const char *colon;
    int ch;
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
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'k': o->kubeconfig = optarg; break;
        case 'c': o->context = optarg; break;
        case 'N': o->lease_ns = optarg; break;
        case 'n': o->lease_name = optarg; break;
        case 'i': snprintf(o->identity, sizeof(o->identity), "%s", optarg); break;
        case 'G': o->feature_gates = optarg; break;
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
    fprintf(stderr, "dra-doctor controller: bad option value (see --help)\n");
    return -1;
}

static void shutdown_all(struct ctl *c, pthread_t *threads, int nthreads, const pthread_t *b)
{
    size_t i;
    int t;

    atomic_store(&c->stop, 1);
    wq_shutdown(c->q);
    mark_dirty(c);
    for (t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    if (b)
        pthread_join(*b, NULL);
    if (c->lease)
        lease_stop(c->lease); /* releases the Lease so a successor takes over at once */
    if (c->http)
        httpd_stop(c->http);
    for (i = 0; i < c->nstores; i++)
        if (c->refl[i])
            inf_reflector_stop(c->refl[i]);
    for (i = 0; i < c->nstores; i++)
        inf_store_free(c->stores[i]); /* their objects go to the graveyard */
    if (c->snap)
        snap_put(c, c->snap);
    sweep(c);
    free(c->graves);
    free(c->posted);
    snapshot_cache_release(&c->cache); /* after the last snapshot */
    while (c->npending)
        free(c->pending[--c->npending]);
    free(c->pending);
    wq_free(c->q);
    kube_config_release(&c->cfg);
}

/*
 * What the API server is (cluster.h): said once at start, and in /readyz when it is too old.
 * DeviceTaintRules are watched in the version it serves them in, if any.
 */
static int discover(struct ctl *c)
{
    c->ropt = (struct rule_options)RULE_OPTIONS_INIT;
    if (cluster_start(&c->cfg, "controller", c->o.feature_gates, 1, &c->cluster, &c->ropt))
        return -1;
    c->nstores = snap_nresources + cluster_extra_resources(&c->cluster, c->extra, 4);
    return 0;
}

int controller_main(int argc, char **argv)
{
    struct ctl *c = calloc(1, sizeof(*c));
    struct inf_handlers pods, events, nodes, others;
    struct httpd_route routes[3];
    pthread_t threads[64], b;
    struct httpd_opts hopts;
    struct lease_opts lopts;
    struct dd_err err;
    sigset_t sigs;
    char path[256];
    int nthreads = 0, have_builder = 0, code = 2, sig, rc;
    size_t i;

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
    pthread_mutex_init(&c->gmu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->q = wq_new(NULL);
    pods = (struct inf_handlers){ c, h_pod_add, h_pod_upd, h_pod_del };
    events = (struct inf_handlers){ c, h_ev_add, h_ev_upd, h_ev_del };
    nodes = (struct inf_handlers){ c, h_any_add, h_node_upd, h_any_del };
    others = (struct inf_handlers){ c, h_any_add, h_any_upd, h_any_del };
    if (discover(c))
        goto out;
    for (i = 0; i < c->nstores; i++) {
        const struct snap_resource *r = i < snap_nresources ? &snap_resources[i]
                                                             : &c->extra[i - snap_nresources];
        struct inf_reflector_opts ro;
        if (!(c->stores[i] = inf_store_new()))
            goto out;
        inf_store_set_drop(c->stores[i], on_drop, c);
        memset(&ro, 0, sizeof(ro));
        kube_path(path, sizeof(path), r->group, r->version, r->resource, NULL, NULL, NULL);
        ro.path = path;
        ro.selector = r->selector;
        ro.transform = snapshot_trim;
        ro.keep = snapshot_keep;
        ro.page_size = LIST_PAGE; /* pages are trimmed one by one: keep them small */
        if (!(c->refl[i] = inf_reflector_start(
                  &c->cfg, &ro, c->stores[i],
                  !strcmp(r->resource, "pods")     ? &pods
                  : !strcmp(r->resource, "events") ? &events
                  : !strcmp(r->resource, "nodes")  ? &nodes
                                                   : &others,
                  &err))) {
            fprintf(stderr, "dra-doctor controller: watching %s: %s\n", r->resource, err.msg);
            goto out;
        }
    }
    if (c->o.port) {
        routes[0] = (struct httpd_route){ "/healthz", h_healthz, c, NULL };
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
    if (pthread_create(&b, NULL, builder, c))
        goto out;
    have_builder = 1;
    for (; nthreads < c->o.workers; nthreads++)
        if (pthread_create(&threads[nthreads], NULL, worker, c))
            goto out;
    fprintf(stderr, "dra-doctor controller: running as %s (%d workers)\n", c->o.identity,
            c->o.workers);
    sigwait(&sigs, &sig);
    fprintf(stderr, "dra-doctor controller: %s: shutting down\n", strsignal(sig));
    code = 0;
out:
    shutdown_all(c, threads, nthreads, have_builder ? &b : NULL);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->gmu);
    pthread_cond_destroy(&c->cv);
    free(c);
    return code;
}
