/*
 * webhook.c - `dra-doctor webhook`: the HTTPS validating admission webhook.
 *
 * A live cache (lib/client/live) keeps the objects decisions read (classes,
 * slices, claims, templates, quotas, DaemonSets) and turns them into an
 * immutable view (review.h) when they change, at most every BUILD_MIN_MS;
 * request threads judge AdmissionReviews against the current view and the
 * DeviceClasses created since it was built (struct pending).  No API call on
 * the request path.  A request that would be denied or warned is parked (its
 * connection suspended, no thread held) in a waiting room (client/settle.h)
 * and judged again once the caches caught up; a waker thread resumes it.
 * SIGTERM: /readyz fails for --shutdown-delay
 * (so endpoints drop this replica), then the server stops accepting and
 * answers every request already started.
 */
#include "webhook.h"

#include <ctype.h>
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

#include "client/httpd.h"
#include "client/informer.h"
#include "client/kube.h"
#include "client/live.h"
#include "client/settle.h"
#include "formats/json.h"
#include "formats/manifest.h"
#include "model/keep.h"
#include "review.h"
#include "rules/cluster.h"

#define BUILD_MIN_MS 200           /* batches bursts of cache changes into one view */
#define DEFAULT_MAX_BODY (4u << 20) /* an AdmissionReview carries object and oldObject */
#define MAX_KNOWN 64
#define MAX_PENDING 256            /* class names awaiting a view; past it, the old warning */
#define DEFAULT_MAX_WAITING 128    /* requests waiting for the caches at once (--max-waiting) */
/* Connections beside the waiting ones: the API server's (one per concurrent call), probes. */
#define CONNS_BESIDE_WAITING 256u

/*
 * Of the claims, the view reads only the devices allocated ones take (quota
 * usage comes from the quotas' status): unallocated claims, the bulk of a
 * busy cluster, are not cached at all.
 */
static int keep_allocated(const cJSON *claim)
{
    return dd_json_path(claim, "status", "allocation", NULL) != NULL;
}

/* What the webhook watches: what review.c's view reads. */
static const struct live_resource watched[] = {
    { "resource.k8s.io", "v1", "deviceclasses", NULL, NULL },
    { "resource.k8s.io", "v1", "resourceslices", NULL, NULL },
    { "resource.k8s.io", "v1", "resourceclaims", NULL, keep_allocated },
    { "resource.k8s.io", "v1", "resourceclaimtemplates", NULL, NULL },
    { "", "v1", "resourcequotas", NULL, NULL },
    { "apps", "v1", "daemonsets", NULL, NULL },
};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))

/* The DeviceClasses, whose names are pending from their creation until a view holds them. */
#define W_CLASSES 0

int wh_watches(const cJSON *obj)
{
    const char *kind = dd_json_str(obj, "kind", NULL), *av = dd_json_str(obj, "apiVersion", NULL);
    const char *slash = av ? strchr(av, '/') : NULL;
    char plural[64];
    size_t i, n;

    if (!kind || !av || !(n = strlen(kind)) || n + 3 > sizeof(plural))
        return 0;
    /* A kind's resource: lower case, plural as these kinds' are ("deviceclasses"). */
    for (i = 0; i < n; i++)
        plural[i] = (char)tolower((unsigned char)kind[i]);
    snprintf(plural + n, sizeof(plural) - n, "%s", plural[n - 1] == 's' ? "es" : "s");
    for (i = 0; i < NWATCHED; i++)
        if (!strcmp(watched[i].resource, plural) &&
            (slash ? (size_t)(slash - av) == strlen(watched[i].group) &&
                         !strncmp(av, watched[i].group, (size_t)(slash - av))
                   : !*watched[i].group))
            return !watched[i].keep || watched[i].keep(obj);
    return 0;
}

/* Metrics labels: the kinds the webhook is registered for, then everything else. */
static const char *const kinds[] = { "DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                                     "Pod", "Deployment", "StatefulSet", "DaemonSet",
                                     "ReplicaSet", "Job", "CronJob", "other" };
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))
static const char *const ops[] = { "CREATE", "UPDATE", "DELETE", "CONNECT", "other" };
#define NOPS (sizeof(ops) / sizeof(ops[0]))
static const char *const verdicts[] = { "allowed", "warned", "denied", "error" };
#define NVERDICTS 4
static const double buckets[] = { 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1, 1 };
/* The waiting room's lanes and what became of a request that would have waited. */
static const char *const lanes[SETTLE_NLANES] = { [SETTLE_SHARED] = "claims",
                                                  [SETTLE_GATE] = "deviceclasses" };
enum { WAITED, LANE_FULL, NAMESPACE_FULL, NOUTCOMES };
static const char *const outcomes[NOUTCOMES] = { "waited", "lane_full", "namespace_full" };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct wh_opts {
    const char *kubeconfig, *context, *objects;
    const char *cert, *key;
    char bind[64];
    unsigned short port;
    unsigned threads;
    size_t max_body;
    int shutdown_delay_s;
    unsigned max_waiting;
    int null_baseline;
    struct wh_options review;
    const char *known[MAX_KNOWN];
    const char *feature_gates;      /* --feature-gates */
};

/*
 * DeviceClass names the class informer has seen created that the current view does not
 * hold yet: `kubectl apply -f dir/` sends a class and the claims using it back to back, well
 * within a build.  Copy-on-write, so a request borrows the set with the view (one lock, no
 * copy); it is almost always empty (NULL).  One allocation: names[] then the strings.
 */
struct pending {
    int refs;                       /* guarded by wh.mu */
    size_t n;
    const char *names[];            /* into the same allocation */
};

struct wh {
    struct wh_opts o;
    struct kube_config cfg;
    struct cluster_info cluster;    /* what the API server is (cluster.h), asked once at start */
    struct live *lc;                /* the informers and the current view (NULL: null baseline) */
    struct mf_set fixed;            /* --objects: what the fixed view borrows */
    pthread_mutex_t mu;             /* guards pending and the waiting room;
                                       taken inside the cache's lock, never around it */
    struct pending *pending;        /* owned (one reference); NULL when empty */
    atomic_int draining;
    /* Requests waiting for the caches to catch up (their httpd_call), guarded by mu;
     * settle_caught_up follows "the published view holds every change seen". */
    struct settle *settle;
    pthread_cond_t wake;            /* the waker's: a request parked, caught up, flush */
    int flush;                      /* stopping: nothing parks any more, the waker resumes all */
    atomic_ulong waits[SETTLE_NLANES][NOUTCOMES];
    struct httpd *http;             /* for its certificate reload counters */
    atomic_ulong count[NKINDS][NOPS][NVERDICTS];
    atomic_ulong hist[NBUCKETS + 1];
    atomic_ullong sum_us;
};

/* ---- views ------------------------------------------------------------------ */

/* The pending class names a request reads with the view: referenced under the cache's lock,
 * as the view is (live_view_get's with). */
static void with_pending(void *ctx, const void *view)
{
    struct pending **pend = ctx;
    struct wh *w = (struct wh *)pend[1];

    (void)view;
    pthread_mutex_lock(&w->mu);
    if ((pend[0] = w->pending))
        pend[0]->refs++;
    pthread_mutex_unlock(&w->mu);
}

/* The current view and, when pend is not NULL, the pending class names to read with it
 * (*pend NULL when there are none): taken together, so they agree. */
static struct wh_view *view_get(struct wh *w, struct pending **pend)
{
    struct pending *with[2] = { NULL, (struct pending *)(void *)w };
    struct wh_view *v;

    if (!w->lc) {
        if (pend)
            *pend = NULL;
        return NULL;
    }
    v = live_view_get(w->lc, pend ? with_pending : NULL, with);
    if (pend)
        *pend = with[0];
    return v;
}

/* Drops the references view_get gave (either may be NULL). */
static void view_put(struct wh *w, struct wh_view *v, struct pending *pend)
{
    int last_pend = 0;

    if (v)
        live_view_put(w->lc, v);
    if (!pend)
        return;
    pthread_mutex_lock(&w->mu);
    last_pend = --pend->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last_pend)
        free(pend);
}

/*
 * A copy of old (NULL: empty) without the names drop says to drop, plus add when not NULL
 * and not there yet; caller holds w->mu.  Returns old itself when nothing changes, NULL for
 * an empty set, or old again when out of memory (a name then merely keeps its old
 * treatment: pending a while longer, or warned about).
 */
static struct pending *pending_with(struct pending *old, const char *add,
                                    int (*drop)(const char *name, const void *arg),
                                    const void *arg)
{
    size_t n = old ? old->n : 0, keep = 0, bytes = 0, i;
    struct pending *p;
    char *str;

    for (i = 0; i < n; i++) {
        if (add && !strcmp(old->names[i], add))
            add = NULL; /* already pending */
        if (!drop || !drop(old->names[i], arg)) {
            keep++;
            bytes += strlen(old->names[i]) + 1;
        }
    }
    if (add && keep == MAX_PENDING)
        add = NULL;
    if (keep == n && !add)
        return old;
    if (!keep && !add)
        return NULL;
    bytes += add ? strlen(add) + 1 : 0;
    if (!(p = malloc(sizeof(*p) + (keep + !!add) * sizeof(p->names[0]) + bytes)))
        return old;
    p->refs = 1;
    p->n = 0;
    str = (char *)&p->names[keep + !!add];
    for (i = 0; i < n; i++)
        if (!drop || !drop(old->names[i], arg)) {
            p->names[p->n++] = strcpy(str, old->names[i]);
            str += strlen(str) + 1;
        }
    if (add)
        p->names[p->n++] = strcpy(str, add);
    return p;
}

static int same_name(const char *name, const void *arg)
{
    return !strcmp(name, arg);
}

static int in_view(const char *name, const void *arg)
{
    return wh_view_has_class(arg, name);
}

/* Replaces w->pending by p (from pending_with); caller holds w->mu.  Returns the set to free
 * once the lock is released, or NULL. */
static struct pending *pending_swap(struct wh *w, struct pending *p)
{
    struct pending *old = w->pending;

    if (p == old)
        return NULL;
    w->pending = p;
    return old && --old->refs == 0 ? old : NULL;
}

/* The cache's published hook (under its lock). */
static void published(void *ctx, const void *view, int caught_up)
{
    struct wh *w = ctx;
    struct pending *gone;

    pthread_mutex_lock(&w->mu);
    /* In the same step, so no request reads this view with fewer pending names than the
     * last: names the view holds stop being pending; those created after its caches were
     * read stay until the next one. */
    gone = pending_swap(w, pending_with(w->pending, NULL, in_view, view));
    if (w->settle && caught_up) {
        settle_caught_up(w->settle, 1);
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mu);
    free(gone);
}

/* The cache's dirtied hook (under its lock): the current view is behind. */
static void dirtied(void *ctx)
{
    struct wh *w = ctx;

    pthread_mutex_lock(&w->mu);
    if (w->settle)
        settle_caught_up(w->settle, 0);
    pthread_mutex_unlock(&w->mu);
}

/* The cache's changed hook: every change counts; for the class informer, a class created
 * (added) or deleted (gone) enters or leaves the pending names. */
static int changed(void *ctx, size_t r, const cJSON *old, const cJSON *obj)
{
    struct wh *w = ctx;
    const char *add = r == W_CLASSES && !old ? dd_json_str(obj, "metadata", "name", NULL) : NULL;
    const char *del = r == W_CLASSES && !obj ? dd_json_str(old, "metadata", "name", NULL) : NULL;
    struct pending *drop = NULL;

    pthread_mutex_lock(&w->mu);
    if (add || (del && w->pending))
        drop = pending_swap(w, pending_with(w->pending, add, del ? same_name : NULL, del));
    pthread_mutex_unlock(&w->mu);
    free(drop);
    return 1;
}

/* The cache's build hook: a view of the caches, borrowing their objects. */
static void *build(void *ctx, struct live *lc, const void *cur, struct dd_err *err)
{
    struct wh *w = ctx;
    const cJSON **objs;
    struct wh_view *v = NULL;
    size_t nobjs;

    if (live_collect(lc, &objs, &nobjs))
        dd_failf(err, DD_ENOMEM, "out of memory collecting the caches");
    else
        v = wh_view_update(cur, objs, nobjs, &w->o.review, err);
    free(objs);
    return v;
}

static void free_view(void *ctx, void *view)
{
    (void)ctx;
    wh_view_free(view);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* ---- HTTP ------------------------------------------------------------------- */

static size_t label_index(const char *const *labels, size_t n, const char *s)
{
    size_t i;

    for (i = 0; i + 1 < n; i++)
        if (!strcmp(labels[i], s))
            return i;
    return n - 1;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void observe(struct wh *w, const char *kind, const char *op, int verdict, double secs)
{
    size_t b;

    atomic_fetch_add(&w->count[label_index(kinds, NKINDS, kind)][label_index(ops, NOPS, op)]
                              [verdict], 1);
    for (b = 0; b < NBUCKETS && secs > buckets[b]; b++)
        ;
    atomic_fetch_add(&w->hist[b], 1);
    atomic_fetch_add(&w->sum_us, (unsigned long long)(secs * 1e6));
}

/*
 * The benchmark's null baseline (--null-baseline): the same server, routes and
 * TLS, answering allowed without decoding; only the uid is copied out.
 */
static void null_answer(const char *body, struct httpd_response *r)
{
    const char *u = body ? strstr(body, "\"uid\"") : NULL, *e = NULL;
    char *out;
    size_t n;

    /* JSON allows blanks around the colon (Python's json.dumps writes one; the API server
     * none). */
    if (u) {
        u += strspn(u + 5, " \t\r\n") + 5;
        if (*u == ':') {
            u += strspn(u + 1, " \t\r\n") + 1;
            if (*u == '"')
                e = strchr(++u, '"');
        }
    }
    if (!e) {
        httpd_text(r, 400, "no request.uid\n");
        return;
    }
    n = (size_t)(e - u) + 128;
    if (!(out = malloc(n))) {
        httpd_text(r, 500, "out of memory\n");
        return;
    }
    r->len = (size_t)snprintf(out, n, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                              "\"AdmissionReview\",\"response\":{\"uid\":\"%.*s\",\"allowed\":true}}",
                              (int)(e - u), u);
    r->body = out;
    r->content_type = "application/json";
}

static enum dd_rc review(struct wh *w, const char *body, size_t len, struct wh_result *res,
                         struct dd_err *err)
{
    struct pending *pend;
    struct wh_view *vr = view_get(w, &pend);
    enum dd_rc rc = wh_review(vr, pend ? pend->names : NULL,
                              pend ? pend->n : 0, body, len, res, err);

    view_put(w, vr, pend);
    return rc;
}

/*
 * Before a denial or a warning, the caches get time to catch up: `kubectl apply -f dir/` and
 * Helm send a driver's DaemonSet or slices and its DeviceClass, or a template and the pod
 * using it, milliseconds apart, sooner than the watch delivers the first and the view is
 * rebuilt.  A verdict is a promise, so one that is not "allowed" is decided again on a view
 * holding every change seen SETTLE_MS after the request came (at most MAX_WAIT_MS); allowed
 * requests never wait.  Waiting requests are parked: their connection is suspended, no
 * thread waits with them, and the waker resumes them (client/settle.h decides when).
 * DeviceClasses, whose webhook fails closed, wait in slots of their own; a namespace takes
 * at most a quarter of the others'.  A request refused a slot is answered at once.
 */
#define SETTLE_MS 500
#define MAX_WAIT_MS 3000

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A parked request's own state (httpd's `parked`). */
struct held {
    double t0;
};

/* Parks the request (call) when the waiting room has a slot for it; 1 when it did. */
static int park(struct wh *w, const struct wh_result *res, struct httpd_call *call)
{
    enum settle_lane lane = strcmp(res->kind, "DeviceClass") ? SETTLE_SHARED : SETTLE_GATE;
    enum settle_admit a = SETTLE_LANE_FULL;
    int flush;

    pthread_mutex_lock(&w->mu);
    if (!(flush = w->flush) &&
        (a = settle_park(w->settle, lane, res->ns, now_ms(), call)) == SETTLE_PARKED)
        pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    if (!flush)
        atomic_fetch_add(&w->waits[lane][a == SETTLE_PARKED      ? WAITED
                                         : a == SETTLE_LANE_FULL ? LANE_FULL
                                                                 : NAMESPACE_FULL], 1);
    return a == SETTLE_PARKED;
}

/* Resumes the parked requests when they are ready; all of them once flushing. */
static void *waker(void *arg)
{
    struct wh *w = arg;
    void *ready[64];

    pthread_mutex_lock(&w->mu);
    for (;;) {
        size_t n = w->flush ? settle_take_all(w->settle, ready, 64)
                            : settle_take_ready(w->settle, now_ms(), ready, 64), i;
        int64_t next;

        if (n) {
            pthread_mutex_unlock(&w->mu);
            for (i = 0; i < n; i++)
                httpd_resume(ready[i]);
            pthread_mutex_lock(&w->mu);
            continue;
        }
        if (w->flush)
            break;
        if ((next = settle_next(w->settle)) == INT64_MAX) {
            pthread_cond_wait(&w->wake, &w->mu);
        } else {
            struct timespec ts = { (time_t)(next / 1000), (long)(next % 1000) * 1000000L };
            pthread_cond_timedwait(&w->wake, &w->mu, &ts);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void h_validate(void *ctx, const char *method, const char *body, size_t len,
                       struct httpd_response *r)
{
    struct wh *w = ctx;
    struct held *held = r->parked;
    struct wh_result res;
    struct dd_err err;
    enum dd_rc rc;
    double t0 = held ? held->t0 : now_s();
    int resumed = held != NULL;

    free(held);
    if (strcmp(method, "POST")) {
        httpd_text(r, 405, "POST an AdmissionReview (admission.k8s.io/v1)\n");
        return;
    }
    if (w->o.null_baseline) {
        null_answer(body, r);
        return;
    }
    dd_err_clear(&err);
    rc = review(w, body ? body : "", len, &res, &err);
    if (rc == DD_OK && res.verdict != WH_ALLOWED && !resumed && w->settle &&
        (held = malloc(sizeof(*held)))) {
        held->t0 = t0;
        if (park(w, &res, r->call)) {
            r->park = held;
            free(res.body);
            return;
        }
        free(held);
    }
    if (rc == DD_OK) {
        r->body = res.body;
        r->len = res.len;
        r->content_type = "application/json";
        observe(w, res.kind, res.operation, (int)res.verdict, now_s() - t0);
        return;
    }
    observe(w, "other", "other", 3, now_s() - t0);
    if (rc == DD_ENOMEM) {
        httpd_text(r, 500, "out of memory\n");
    } else {
        char msg[sizeof(err.msg) + 64];
        snprintf(msg, sizeof(msg), "malformed AdmissionReview: %s\n", err.msg);
        httpd_text(r, 400, msg);
    }
}

static void h_readyz(void *ctx, const char *m, const char *b, size_t n, struct httpd_response *r)
{
    struct wh *w = ctx;
    struct wh_view *vr = view_get(w, NULL);

    (void)m; (void)b; (void)n;
    char msg[sizeof(w->cluster.says) + 32];

    if (atomic_load(&w->draining))
        httpd_text(r, 503, "shutting down\n");
    else if (!w->o.objects && !w->o.null_baseline && !w->cluster.supported) {
        snprintf(msg, sizeof(msg), "unsupported cluster: %s\n", w->cluster.says);
        httpd_text(r, 503, msg);
    }
    else if (!w->o.null_baseline && (!vr || !live_synced(w->lc)))
        httpd_text(r, 503, "caches not synced yet\n");
    else
        httpd_text(r, 200, "ok\n");
    view_put(w, vr, NULL);
}

static void h_metrics(void *ctx, const char *m, const char *b, size_t n, struct httpd_response *r)
{
    struct wh *w = ctx;
    size_t len = 0, cap = 65536, i, j, k;
    unsigned long long cum = 0;
    char *buf = malloc(cap);
    struct httpd *http;

    (void)m; (void)b; (void)n;
    pthread_mutex_lock(&w->mu);
    http = w->http;
    pthread_mutex_unlock(&w->mu);
    if (!buf) {
        httpd_text(r, 500, "out of memory\n");
        return;
    }
#define OUT(...) (len += len < cap ? (size_t)snprintf(buf + len, cap - len, __VA_ARGS__) : 0)
    OUT("# HELP dra_doctor_webhook_requests_total AdmissionReviews answered, by kind, operation "
        "and verdict.\n# TYPE dra_doctor_webhook_requests_total counter\n");
    for (i = 0; i < NKINDS; i++)
        for (j = 0; j < NOPS; j++)
            for (k = 0; k < NVERDICTS; k++) {
                unsigned long v = atomic_load(&w->count[i][j][k]);
                if (v)
                    OUT("dra_doctor_webhook_requests_total{kind=\"%s\",operation=\"%s\","
                        "verdict=\"%s\"} %lu\n", kinds[i], ops[j], verdicts[k], v);
            }
    OUT("# HELP dra_doctor_webhook_request_duration_seconds Time to decide an AdmissionReview.\n"
        "# TYPE dra_doctor_webhook_request_duration_seconds histogram\n");
    for (i = 0; i <= NBUCKETS; i++) {
        cum += atomic_load(&w->hist[i]);
        if (i < NBUCKETS)
            OUT("dra_doctor_webhook_request_duration_seconds_bucket{le=\"%g\"} %llu\n", buckets[i],
                cum);
        else
            OUT("dra_doctor_webhook_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    }
    OUT("dra_doctor_webhook_request_duration_seconds_sum %.6f\n"
        "dra_doctor_webhook_request_duration_seconds_count %llu\n",
        (double)atomic_load(&w->sum_us) / 1e6, cum);
    OUT("# HELP dra_doctor_webhook_waits_total Requests that would be denied or warned, by "
        "lane and by what became of them: waited for the caches to catch up, or answered at "
        "once because every slot of their lane (--max-waiting) or their namespace's share of "
        "it was taken.\n# TYPE dra_doctor_webhook_waits_total counter\n");
    for (i = 0; i < SETTLE_NLANES; i++)
        for (j = 0; j < NOUTCOMES; j++)
            OUT("dra_doctor_webhook_waits_total{lane=\"%s\",outcome=\"%s\"} %lu\n", lanes[i],
                outcomes[j], atomic_load(&w->waits[i][j]));
    OUT("# HELP dra_doctor_webhook_waiting Requests waiting for the caches now, by lane.\n"
        "# TYPE dra_doctor_webhook_waiting gauge\n");
    pthread_mutex_lock(&w->mu);
    for (i = 0; i < SETTLE_NLANES; i++)
        OUT("dra_doctor_webhook_waiting{lane=\"%s\"} %u\n", lanes[i],
            w->settle ? settle_waiting(w->settle, (enum settle_lane)i) : 0);
    pthread_mutex_unlock(&w->mu);
    if (w->lc)
        live_metrics(w->lc, buf, cap, &len);
    if (http)
        OUT("# HELP dra_doctor_webhook_cert_reloads_total Serving certificate reloads.\n"
            "# TYPE dra_doctor_webhook_cert_reloads_total counter\n"
            "dra_doctor_webhook_cert_reloads_total %lu\n"
            "# HELP dra_doctor_webhook_cert_reload_errors_total Reloads refused (unreadable, "
            "or not a pair); the previous certificate stays.\n"
            "# TYPE dra_doctor_webhook_cert_reload_errors_total counter\n"
            "dra_doctor_webhook_cert_reload_errors_total %lu\n",
            httpd_cert_reloads(http), httpd_cert_reload_errors(http));
#undef OUT
    r->body = buf;
    r->len = len < cap ? len : cap - 1;
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- command line ------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor webhook --tls-cert-file FILE --tls-key-file FILE [options]\n"
"\n"
"Validating admission webhook for DRA objects (AdmissionReview admission.k8s.io/v1\n"
"on POST /validate).  Denies a DeviceClass whose CEL selector requires a driver\n"
"that no registered DRA driver has (with a did-you-mean); warns on ResourceClaims,\n"
"ResourceClaimTemplates, Pods and workloads that a ResourceQuota will refuse, that\n"
"name a missing DeviceClass, or that need more devices than are free.  Registered\n"
"drivers: those publishing ResourceSlices, those whose kubelet-plugin DaemonSet is\n"
"installed, and --known-driver.  Decisions come from informer caches only; a\n"
"denial or warning is decided again once they caught up (0.5 s after the request,\n"
"at most 3 s: a chart's DaemonSet and its DeviceClass arrive milliseconds apart);\n"
"such a request waits holding no thread.\n"
"\n"
"  --tls-cert-file FILE      serving certificate (PEM, chain after it); reloaded\n"
"  --tls-key-file FILE       its key (PEM); both are re-read when they change\n"
"  --bind ADDR               IP to listen on (default 0.0.0.0)\n"
"  --port N                  HTTPS port (default 8443); /validate, /healthz,\n"
"                            /readyz (caches synced), /metrics (Prometheus)\n"
"  --threads N               server threads (default 4; each keeps the connections\n"
"                            it accepted, so fewer threads than cores can leave\n"
"                            a core idle: docs/benchmarks.md)\n"
"  --max-body BYTES          larger requests get 413 (default 4194304)\n"
"  --max-waiting N           claims, templates, Pods and workloads that may wait\n"
"                            for the caches at once (default 128; a namespace\n"
"                            takes at most a quarter); DeviceClasses have a\n"
"                            quarter as many slots of their own.  Past them a\n"
"                            request is answered at once (/metrics counts it)\n"
"  --unknown-driver MODE     deny (default) or warn on a selector's unregistered\n"
"                            driver; a DeviceClass annotated\n"
"                            " WH_ALLOW_ANNOTATION ": \"true\"\n"
"                            is only warned about\n"
"  --known-driver NAME       a driver to treat as registered (repeatable)\n"
"  --feature-gates LIST      the cluster's feature gates (A=true,B=false) over what the\n"
"                            API server's /metrics tells, or its release's defaults\n"
"  --shutdown-delay SECONDS  on SIGTERM, fail /readyz this long before draining\n"
"                            (default 0; give endpoints time to drop the pod)\n"
"  --kubeconfig FILE         default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
"  --context NAME            kubeconfig context\n"
"  --objects PATH            judge against these manifests (file or directory)\n"
"                            instead of watching a cluster: tests, benchmarks\n"
"  --null-baseline           answer allowed without decoding (benchmark baseline)\n"
"\n"
"Exit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 when it cannot start\n"
"(certificate, port, cluster), 2 on a usage error.  See docs/webhook.md.\n");
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > max || *s == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_args(struct wh_opts *o, int argc, char **argv)
{
    static const struct option lopts[] = {
        { "tls-cert-file", required_argument, NULL, 'c' },
        { "tls-key-file", required_argument, NULL, 'k' },
        { "bind", required_argument, NULL, 'b' },
        { "port", required_argument, NULL, 'p' },
        { "threads", required_argument, NULL, 't' },
        { "max-body", required_argument, NULL, 'm' },
        { "max-waiting", required_argument, NULL, 'W' },
        { "unknown-driver", required_argument, NULL, 'u' },
        { "known-driver", required_argument, NULL, 'K' },
        { "shutdown-delay", required_argument, NULL, 'd' },
        { "kubeconfig", required_argument, NULL, 'C' },
        { "context", required_argument, NULL, 'x' },
        { "objects", required_argument, NULL, 'o' },
        { "null-baseline", no_argument, NULL, 'n' },
        { "feature-gates", required_argument, NULL, 'G' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    unsigned long v;
    int ch, li = -1;

    memset(o, 0, sizeof(*o));
    snprintf(o->bind, sizeof(o->bind), "0.0.0.0");
    o->port = 8443;
    o->threads = 4; /* measured: with 2, all connections landed on one worker half the time */
    o->max_body = DEFAULT_MAX_BODY;
    o->max_waiting = DEFAULT_MAX_WAITING;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", lopts, &li)) != -1) {
        switch (ch) {
        case 'c': o->cert = optarg; break;
        case 'k': o->key = optarg; break;
        case 'b':
            if (strlen(optarg) >= sizeof(o->bind))
                goto bad;
            snprintf(o->bind, sizeof(o->bind), "%s", optarg);
            break;
        case 'p':
            if (parse_uint(optarg, 65535, &v))
                goto bad;
            o->port = (unsigned short)v;
            break;
        case 't':
            if (parse_uint(optarg, 64, &v) || !v)
                goto bad;
            o->threads = (unsigned)v;
            break;
        case 'm':
            if (parse_uint(optarg, 64ul << 20, &v) || v < 1024)
                goto bad;
            o->max_body = v;
            break;
        case 'W':
            if (parse_uint(optarg, SETTLE_SLOTS_MAX, &v) || v < 4)
                goto bad;
            o->max_waiting = (unsigned)v;
            break;
        case 'u':
            if (!strcmp(optarg, "warn"))
                o->review.unknown_driver_warn = 1;
            else if (strcmp(optarg, "deny"))
                goto bad;
            break;
        case 'K':
            if (o->review.nknown_drivers == MAX_KNOWN || !*optarg)
                goto bad;
            o->known[o->review.nknown_drivers++] = optarg;
            break;
        case 'd':
            if (parse_uint(optarg, 3600, &v))
                goto bad;
            o->shutdown_delay_s = (int)v;
            break;
        case 'C': o->kubeconfig = optarg; break;
        case 'G': o->feature_gates = optarg; break;
        case 'x': o->context = optarg; break;
        case 'o': o->objects = optarg; break;
        case 'n': o->null_baseline = 1; break;
        case 'h': usage(stdout); return 1;
        default: goto bad;
        }
    }
    o->review.known_drivers = o->known;
    if (optind < argc) {
        fprintf(stderr, "dra-doctor webhook: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    if (!o->cert || !o->key) {
        fprintf(stderr, "dra-doctor webhook: --tls-cert-file and --tls-key-file are required "
                        "(the API server calls webhooks over HTTPS only; see `dra-doctor certs`)\n");
        return -1;
    }
    return 0;
bad:
    if (ch != '?' && li >= 0)
        fprintf(stderr, "dra-doctor webhook: invalid value \"%s\" for --%s\n",
                optarg ? optarg : "", lopts[li].name);
    fprintf(stderr, "Try 'dra-doctor webhook --help'.\n");
    return -1;
}

/* --objects: one fixed view, no cluster. */
static int load_fixed(struct wh *w)
{
    struct mf_limits lim = MF_LIMITS_DEFAULT;
    const cJSON **objs;
    struct wh_view *v;
    struct dd_err err;
    size_t i;

    /* No API server to ask: the default release, and --feature-gates over its defaults. */
    kv_gates_init(&w->cluster.gates, KV_DEFAULT_MINOR);
    dd_err_clear(&err);
    if (w->o.feature_gates &&
        kv_gates_set(&w->cluster.gates, w->o.feature_gates, KV_FROM_FLAG, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor webhook: --feature-gates: %s\n", err.msg);
        return -1;
    }
    w->cluster.minor = KV_DEFAULT_MINOR;
    w->o.review.kube_minor = KV_DEFAULT_MINOR;
    w->o.review.gates = &w->cluster.gates;
    mf_set_init(&w->fixed);
    /* Read-only trees in one arena, about half the memory: the view only reads them. */
    w->fixed.compact = 1;
    if (mf_load_path(&w->fixed, w->o.objects, &lim) != DD_OK || w->fixed.nerrors) {
        char line[1200];
        for (i = 0; i < w->fixed.ndiags; i++)
            fprintf(stderr, "%s\n", mf_diag_format(&w->fixed.diags[i], line, sizeof(line)));
        fprintf(stderr, "dra-doctor webhook: cannot load %s\n", w->o.objects);
        return -1;
    }
    if (!(objs = calloc(w->fixed.n + 1, sizeof(*objs))))
        return -1;
    /* The view borrows them for good (the set goes at exit). */
    for (i = 0; i < w->fixed.n; i++)
        objs[i] = w->fixed.objs[i].json;
    dd_err_clear(&err);
    v = wh_view_build(objs, w->fixed.n, &w->o.review, &err);
    free(objs);
    malloc_trim(0);
    if (!v) {
        fprintf(stderr, "dra-doctor webhook: %s\n", err.msg);
        return -1;
    }
    live_start_fixed(w->lc, v);
    return 0;
}

/* What the API server is: said at start, and in /readyz when it is too old; new objects
 * are judged in its release's CEL environment and gates. */
static int discover(struct wh *w)
{
    struct rule_options ro = RULE_OPTIONS_INIT;

    if (cluster_start(&w->cfg, "webhook", w->o.feature_gates, 0, &w->cluster, &ro))
        return -1;
    w->o.review.kube_minor = ro.kube_minor;
    w->o.review.gates = ro.gates;
    return 0;
}

/* The view's cache: what review.c reads, a view at most every BUILD_MIN_MS after changes;
 * with --objects, one fixed view instead. */
static int start_cache(struct wh *w)
{
    const struct live_hooks lh = { w, changed, dirtied, NULL, build, free_view, published,
                                   NULL, NULL };
    struct live_opts lo;
    struct dd_err err;

    memset(&lo, 0, sizeof(lo));
    lo.res = watched;
    lo.nres = w->o.objects ? 0 : NWATCHED;
    lo.transform = keep_trim_admission;
    /* A view of half-listed caches could deny a class whose driver's slices are not listed
     * yet; until every list is in, requests are judged without a view (allowed).  The
     * views built meanwhile were also the startup's peak: two of them at a time. */
    lo.after_synced = 1;
    lo.rest_ms = BUILD_MIN_MS;
    lo.trim_heap = 1;
    lo.who = "webhook";
    lo.prefix = "dra_doctor_webhook_";
    lo.noun = "view";
    dd_err_clear(&err);
    if (!(w->lc = live_new(&lo, &lh, &err))) {
        fprintf(stderr, "dra-doctor webhook: %s\n", err.msg);
        return -1;
    }
    if (w->o.objects)
        return load_fixed(w);
    if (kube_config_load(&w->cfg, w->o.kubeconfig, w->o.context, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor webhook: %s\n", err.msg);
        return -1;
    }
    if (discover(w))
        return -1;
    if (live_start(w->lc, &w->cfg, &err)) {
        fprintf(stderr, "dra-doctor webhook: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int webhook_main(int argc, char **argv)
{
    struct wh *w = calloc(1, sizeof(*w));
    struct httpd_route routes[4];
    struct httpd_opts ho;
    struct httpd *http = NULL;
    struct dd_err err;
    pthread_t wt;
    int have_waker = 0, rc = 1, sig = 0;
    sigset_t set;

    if (!w)
        return 1;
    /* One arena per request thread would multiply the heap for no gain: requests allocate
     * little and briefly. */
    mallopt(M_ARENA_MAX, 2);
    if ((rc = parse_args(&w->o, argc, argv))) {
        free(w);
        return rc > 0 ? 0 : 2;
    }
    rc = 1;
    pthread_mutex_init(&w->mu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the waker's deadlines */
        pthread_cond_init(&w->wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    /* Every thread started from here on inherits the mask: only sigwait below sees them. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* A fixed view (--objects) never catches up with anything: nothing waits. */
    if (!w->o.null_baseline && !w->o.objects) {
        struct settle_opts so = { SETTLE_MS, MAX_WAIT_MS,
                                  { w->o.max_waiting, w->o.max_waiting / 4 },
                                  w->o.max_waiting / 4 };
        if (!(w->settle = settle_new(&so)) ||
            !(have_waker = !pthread_create(&wt, NULL, waker, w)))
            goto out;
    }
    if (!w->o.null_baseline && start_cache(w))
        goto out;
    routes[0] = (struct httpd_route){ "/validate", h_validate, w, "application/json" };
    routes[1] = (struct httpd_route){ "/healthz", httpd_ok, w, NULL };
    routes[2] = (struct httpd_route){ "/readyz", h_readyz, w, NULL };
    routes[3] = (struct httpd_route){ "/metrics", h_metrics, w, NULL };
    memset(&ho, 0, sizeof(ho));
    ho.bind = w->o.bind;
    ho.port = w->o.port;
    ho.threads = w->o.threads;
    ho.max_body = w->o.max_body;
    ho.max_conns = CONNS_BESIDE_WAITING + w->o.max_waiting + w->o.max_waiting / 4;
    ho.cert_file = w->o.cert;
    ho.key_file = w->o.key;
    dd_err_clear(&err);
    if (!(http = httpd_start(&ho, routes, 4, &err))) {
        fprintf(stderr, "dra-doctor webhook: %s\n", err.msg);
        goto out;
    }
    pthread_mutex_lock(&w->mu);
    w->http = http;
    pthread_mutex_unlock(&w->mu);
    fprintf(stderr, "dra-doctor webhook: serving https://%s:%u/validate\n", w->o.bind,
            (unsigned)httpd_port(http));
    while (sigwait(&set, &sig) == EINTR)
        ;
    fprintf(stderr, "dra-doctor webhook: signal %d: %s\n", sig,
            w->o.shutdown_delay_s ? "failing /readyz, then draining" : "draining");
    atomic_store(&w->draining, 1);
    sleep_ms(w->o.shutdown_delay_s * 1000L);
    rc = 0;
out:
    /* Nothing waits from here on: the waiting requests are answered, then the server drains. */
    pthread_mutex_lock(&w->mu);
    w->flush = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    if (have_waker)
        pthread_join(wt, NULL);
    httpd_stop(http);
    live_free(w->lc);
    free(w->pending);
    settle_free(w->settle);
    mf_set_release(&w->fixed);
    kube_config_release(&w->cfg);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return rc;
}
