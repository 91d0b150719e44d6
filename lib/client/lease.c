/*
 * lease.c - leader election on a coordination.k8s.io/v1 Lease (see lease.h).
 *
 * One thread per candidate runs client-go's loop: every retry period, GET
 * the Lease and, when it is free, ours or expired, write it back (POST when
 * absent, else PUT carrying the resourceVersion read, so the API server lets
 * exactly one of several racing writers win).  Expiry is judged on this
 * process's monotonic clock from the moment the holder's record was last
 * seen to change, never from the timestamps in the object: clocks of
 * different nodes disagree, ours only has to measure durations.
 *
 * Leadership is a promise that nobody else acts: it is kept only while the
 * last successful write is younger than the renew deadline, which is shorter
 * than the lease duration a rival must wait.  lease_is_leader checks that age
 * itself, so it turns false on time even while the thread is stuck in a
 * request.
 */
#include "client/lease.h"

#include "formats/json.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_DURATION_MS 15000
#define DEFAULT_DEADLINE_MS 10000
#define DEFAULT_RETRY_MS 2000
#define CONNECT_TIMEOUT_MS 5000L

enum attempt {
    ATTEMPT_OK,       /* we hold the Lease (acquired or renewed) */
    ATTEMPT_HELD,     /* someone else holds it and has not expired */
    ATTEMPT_FAILED    /* transport or API error, conflict: try again next period */
};

struct lease {
    char *ns, *name, *identity;
    int duration_ms, deadline_ms, retry_ms;
    char path[512];              /* the Lease */
    char coll[512];              /* its collection, for the create */
    struct kube_client *kc;      /* the candidate thread's */
    struct kube_client *rel;     /* for the release: kc is interrupted by then */
    pthread_t th;
    pthread_mutex_t mu;          /* guards leader, renewed, stopping */
    pthread_cond_t cv;           /* leadership changed, or stop requested (CLOCK_MONOTONIC) */
    int leader;
    double renewed_ms;           /* when our last successful write was sent */
    int stopping;
    /* the thread's own: the holder's record as last seen, and since when */
    char *obs_holder, *obs_renew, *obs_rv;
    double obs_ms;
};

static double mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits. */
static void micro_time(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%06ldZ", ts.tv_nsec / 1000);
}

static int str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
}

/* Restarts the expiry clock whenever the holder's record changes. */
static void observe(struct lease *l, const cJSON *obj)
{
    const char *holder = dd_json_str(obj, "spec", "holderIdentity", NULL);
    const char *renew = dd_json_str(obj, "spec", "renewTime", NULL);
    const char *rv = dd_json_str(obj, "metadata", "resourceVersion", NULL);

    if (l->obs_ms > 0 && str_eq(holder, l->obs_holder) && str_eq(renew, l->obs_renew) &&
        str_eq(rv, l->obs_rv))
        return;
    set_str(&l->obs_holder, holder);
    set_str(&l->obs_renew, renew);
    set_str(&l->obs_rv, rv);
    l->obs_ms = mono_ms();
}

/* Replaces (or adds) key in obj; returns 0 when out of memory. */
static int put_item(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return 0;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item) ? 1 : 0;
    return cJSON_AddItemToObject(obj, key, item) ? 1 : 0;
}

static int lease_seconds(const struct lease *l)
{
    return (l->duration_ms + 999) / 1000;
}

/*
 * Makes spec say we hold the Lease as of now.  A change of holder counts a
 * transition and restarts acquireTime, as client-go does.
 */
static int claim_spec(struct lease *l, cJSON *spec, int was_ours)
{
    char now[48];
    int64_t transitions = 0;

    micro_time(now, sizeof(now));
    if (!put_item(spec, "holderIdentity", cJSON_CreateString(l->identity)) ||
        !put_item(spec, "leaseDurationSeconds", cJSON_CreateNumber(lease_seconds(l))) ||
        !put_item(spec, "renewTime", cJSON_CreateString(now)))
        return 0;
    if (was_ours)
        return 1;
    dd_json_int(spec, &transitions, "leaseTransitions", NULL);
    return put_item(spec, "acquireTime", cJSON_CreateString(now)) &&
           put_item(spec, "leaseTransitions", cJSON_CreateNumber((double)transitions + 1));
}

static enum attempt create_lease(struct lease *l, double *sent_ms)
{
    cJSON *obj = cJSON_CreateObject(), *meta, *spec, *out = NULL;
    enum attempt r = ATTEMPT_FAILED;
    char now[48];

    micro_time(now, sizeof(now));
    if (!obj || !cJSON_AddStringToObject(obj, "apiVersion", "coordination.k8s.io/v1") ||
        !cJSON_AddStringToObject(obj, "kind", "Lease") ||
        !(meta = cJSON_AddObjectToObject(obj, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", l->name) ||
        !cJSON_AddStringToObject(meta, "namespace", l->ns) ||
        !(spec = cJSON_AddObjectToObject(obj, "spec")) ||
        !cJSON_AddStringToObject(spec, "holderIdentity", l->identity) ||
        !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", lease_seconds(l)) ||
        !cJSON_AddStringToObject(spec, "acquireTime", now) ||
        !cJSON_AddStringToObject(spec, "renewTime", now) ||
        !cJSON_AddNumberToObject(spec, "leaseTransitions", 0))
        goto out;
    *sent_ms = mono_ms();
    /* AlreadyExists (409) means a rival created it first: we see it next period. */
    if (kube_create(l->kc, l->coll, obj, &out, NULL, NULL) == DD_OK) {
        if (out)
            observe(l, out);
        r = ATTEMPT_OK;
    }
out:
    cJSON_Delete(obj);
    cJSON_Delete(out);
    return r;
}

static enum attempt try_acquire_or_renew(struct lease *l, double *sent_ms)
{
    cJSON *cur = NULL, *out = NULL, *spec;
    enum attempt r = ATTEMPT_FAILED;
    const char *holder;
    char *body = NULL;
    enum dd_rc rc;
    int ours, vacant;

    rc = kube_get(l->kc, l->path, &cur, NULL, NULL);
    if (rc == DD_ENOTFOUND)
        return create_lease(l, sent_ms);
    if (rc != DD_OK || !cur)
        goto out;
    observe(l, cur);
    holder = dd_json_str(cur, "spec", "holderIdentity", NULL);
    ours = holder && strcmp(holder, l->identity) == 0;
    vacant = !holder || !*holder;
    /*
     * Our own configured duration, not the object's whole seconds: every
     * candidate of an election is configured alike, and sub-second durations
     * (tests) stay exact.
     */
    if (!ours && !vacant && mono_ms() - l->obs_ms < l->duration_ms) {
        r = ATTEMPT_HELD;
        goto out;
    }
    if (!(spec = cJSON_GetObjectItemCaseSensitive(cur, "spec")) || !cJSON_IsObject(spec)) {
        cJSON_DeleteItemFromObjectCaseSensitive(cur, "spec");
        if (!(spec = cJSON_AddObjectToObject(cur, "spec")))
            goto out;
    }
    /* The PUT carries metadata.resourceVersion as read: a rival's write in between is a 409. */
    if (!claim_spec(l, spec, ours) || !(body = cJSON_PrintUnformatted(cur)))
        goto out;
    *sent_ms = mono_ms();
    if (kube_request(l->kc, "PUT", l->path, NULL, body, strlen(body), &out, NULL, NULL) ==
        DD_OK) {
        if (out)
            observe(l, out);
        r = ATTEMPT_OK;
    }
out:
    free(body);
    cJSON_Delete(cur);
    cJSON_Delete(out);
    return r;
}

/* Caller holds mu. */
static int leading_locked(const struct lease *l)
{
    return l->leader && mono_ms() - l->renewed_ms < l->deadline_ms;
}

static struct timespec mono_after(double ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static void *candidate_main(void *arg)
{
    struct lease *l = arg;

    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        struct timespec next;
        enum attempt r;
        double sent = 0;
        int was;

        pthread_mutex_unlock(&l->mu);
        r = try_acquire_or_renew(l, &sent);
        pthread_mutex_lock(&l->mu);
        was = leading_locked(l);
        if (r == ATTEMPT_OK) {
            l->leader = 1;
            l->renewed_ms = sent;
        } else if (l->leader && (r == ATTEMPT_HELD || !was)) {
            /* Another holder means we were already replaced; else the deadline passed. */
            l->leader = 0;
        }
        if (was != leading_locked(l))
            pthread_cond_broadcast(&l->cv);
        /*
         * A fixed period, without client-go's jitter for non-leaders: racing
         * candidates are already serialised by resourceVersion.
         */
        next = mono_after(l->retry_ms);
        while (!l->stopping && pthread_cond_timedwait(&l->cv, &l->mu, &next) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/*
 * Hands the Lease back when the object still names us: an empty holder and
 * a 1 s duration let a successor take over at its next attempt instead of
 * waiting out the lease duration.  Read first (with the spare client), since
 * an interrupted renewal may have landed after the last version we saw.
 */
static void release(struct lease *l)
{
    cJSON *cur = NULL, *spec;
    const char *holder;
    char now[48];
    char *body = NULL;

    if (kube_get(l->rel, l->path, &cur, NULL, NULL) != DD_OK || !cur)
        goto out;
    holder = dd_json_str(cur, "spec", "holderIdentity", NULL);
    spec = cJSON_GetObjectItemCaseSensitive(cur, "spec");
    if (!holder || strcmp(holder, l->identity) != 0 || !cJSON_IsObject(spec))
        goto out;
    micro_time(now, sizeof(now));
    if (!put_item(spec, "holderIdentity", cJSON_CreateString("")) ||
        !put_item(spec, "leaseDurationSeconds", cJSON_CreateNumber(1)) ||
        !put_item(spec, "acquireTime", cJSON_CreateString(now)) ||
        !put_item(spec, "renewTime", cJSON_CreateString(now)) ||
        !(body = cJSON_PrintUnformatted(cur)))
        goto out;
    kube_request(l->rel, "PUT", l->path, NULL, body, strlen(body), NULL, NULL, NULL);
out:
    free(body);
    cJSON_Delete(cur);
}

static void lease_free(struct lease *l)
{
    kube_client_free(l->kc);
    kube_client_free(l->rel);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l->obs_holder);
    free(l->obs_renew);
    free(l->obs_rv);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

struct lease *lease_start(const struct kube_config *cfg, const struct lease_opts *opts,
                          struct dd_err *err)
{
    struct kube_client_opts ko = KUBE_CLIENT_OPTS_INIT;
    pthread_condattr_t ca;
    struct lease *l;

    if (!cfg || !opts || !opts->ns || !*opts->ns || !opts->name || !*opts->name ||
        !opts->identity || !*opts->identity) {
        dd_failf(err, DD_EINVAL, "lease_start: namespace, name and identity are required");
        return NULL;
    }
    if (!(l = calloc(1, sizeof(*l)))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_init(&ca);
    /* Timed waits must not stretch or shrink when the wall clock is set. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    l->duration_ms = opts->lease_duration_ms > 0 ? opts->lease_duration_ms : DEFAULT_DURATION_MS;
    l->deadline_ms = opts->renew_deadline_ms > 0 ? opts->renew_deadline_ms : DEFAULT_DEADLINE_MS;
    l->retry_ms = opts->retry_period_ms > 0 ? opts->retry_period_ms : DEFAULT_RETRY_MS;
    /* The rival's wait must outlast our deadline, or both could act at once. */
    if (l->duration_ms <= l->deadline_ms || l->deadline_ms <= l->retry_ms) {
        dd_failf(err, DD_EINVAL,
                 "lease timing must satisfy duration (%d ms) > renew deadline (%d ms) > "
                 "retry period (%d ms)",
                 l->duration_ms, l->deadline_ms, l->retry_ms);
        lease_free(l);
        return NULL;
    }
    if (!kube_path(l->path, sizeof(l->path), "coordination.k8s.io", "v1", "leases", opts->ns,
                   opts->name, NULL) ||
        !kube_path(l->coll, sizeof(l->coll), "coordination.k8s.io", "v1", "leases", opts->ns,
                   NULL, NULL)) {
        dd_failf(err, DD_EINVAL, "lease %s/%s: not a valid namespace and name", opts->ns,
                 opts->name);
        lease_free(l);
        return NULL;
    }
    if (!(l->ns = strdup(opts->ns)) || !(l->name = strdup(opts->name)) ||
        !(l->identity = strdup(opts->identity))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        lease_free(l);
        return NULL;
    }
    /*
     * One attempt per period, each bounded by the renew deadline: the loop is
     * the retry, and a request outliving the deadline is worthless anyway.
     */
    ko.connect_timeout_ms = l->deadline_ms < CONNECT_TIMEOUT_MS ? l->deadline_ms
                                                                : CONNECT_TIMEOUT_MS;
    ko.request_timeout_ms = l->deadline_ms;
    ko.max_retries = -1;
    if (!(l->kc = kube_client_new(cfg, &ko, err)) || !(l->rel = kube_client_new(cfg, &ko, err))) {
        lease_free(l);
        return NULL;
    }
    if (pthread_create(&l->th, NULL, candidate_main, l) != 0) {
        dd_failf(err, DD_ENOMEM, "cannot start the leader election thread");
        lease_free(l);
        return NULL;
    }
    return l;
}

int lease_is_leader(struct lease *l)
{
    int r;

    if (!l)
        return 0;
    pthread_mutex_lock(&l->mu);
    r = leading_locked(l);
    pthread_mutex_unlock(&l->mu);
    return r;
}

int lease_wait_leader(struct lease *l, int timeout_ms)
{
    struct timespec deadline;
    int r;

    if (!l)
        return 0;
    if (timeout_ms >= 0)
        deadline = mono_after(timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (!(r = leading_locked(l)) && !l->stopping) {
        if (timeout_ms < 0)
            pthread_cond_wait(&l->cv, &l->mu);
        else if (pthread_cond_timedwait(&l->cv, &l->mu, &deadline) == ETIMEDOUT)
            break;
    }
    r = leading_locked(l);
    pthread_mutex_unlock(&l->mu);
    return r;
}

static void stop(struct lease *l, int do_release)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = 1;
    l->leader = 0;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    kube_client_interrupt(l->kc);
    pthread_join(l->th, NULL);
    if (do_release)
        release(l);
    lease_free(l);
}

void lease_stop(struct lease *l)
{
    stop(l, 1);
}

void lease_abandon(struct lease *l)
{
    stop(l, 0);
}
