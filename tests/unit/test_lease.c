/*
 * test_lease.c - leader election against a mock API server (lib/client/httpd on
 * loopback) holding one Lease in memory with resourceVersion checks.
 */
#include "harness.h"

#include "client/httpd.h"
#include "formats/json.h"
#include "client/lease.h"

#include <pthread.h>
#include <time.h>

#define NS "dd-system"
#define NAME "dra-doctor"
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/" NAME
#define COLL_PATH "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases"

/* ---- mock API server ----------------------------------------------------- */

struct mock {
    pthread_mutex_t mu;
    cJSON *obj;              /* the Lease, or NULL when absent */
    long rv;                 /* its resourceVersion */
    char reject[64];         /* writes naming this holder get 500 */
    int writes, conflicts;
};

static struct mock m = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, "", 0, 0 };

static void status(struct httpd_response *resp, int code, const char *reason)
{
    char buf[256];

    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
             "\"reason\":\"%s\",\"code\":%d}",
             reason, code);
    resp->status = code;
    resp->content_type = "application/json";
    resp->body = strdup(buf);
    resp->len = strlen(buf);
}

static void reply_obj(struct httpd_response *resp, int code)
{
    resp->status = code;
    resp->content_type = "application/json";
    resp->body = cJSON_PrintUnformatted(m.obj);
    resp->len = strlen(resp->body);
}

/* Stores obj (taken) as the Lease with the next resourceVersion. */
static void store(cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    char rv[32];

    snprintf(rv, sizeof(rv), "%ld", ++m.rv);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_AddStringToObject(meta, "resourceVersion", rv);
    cJSON_Delete(m.obj);
    m.obj = obj;
    m.writes++;
}

/* 1 when the write must be refused because it names the rejected holder. */
static int rejected(const cJSON *obj)
{
    const char *h = dd_json_str(obj, "spec", "holderIdentity", NULL);

    return m.reject[0] && h && strcmp(h, m.reject) == 0;
}

static void h_lease(void *ctx, const char *method, const char *body, size_t len,
                    struct httpd_response *resp)
{
    cJSON *obj;
    const char *rv;
    char cur[32];

    (void)ctx;
    pthread_mutex_lock(&m.mu);
    if (strcmp(method, "GET") == 0) {
        if (m.obj)
            reply_obj(resp, 200);
        else
            status(resp, 404, "NotFound");
    } else if (strcmp(method, "PUT") == 0) {
        obj = body ? cJSON_ParseWithLength(body, len) : NULL;
        rv = dd_json_str(obj, "metadata", "resourceVersion", NULL);
        snprintf(cur, sizeof(cur), "%ld", m.rv);
        if (!obj || !cJSON_GetObjectItemCaseSensitive(obj, "metadata")) {
            status(resp, 400, "BadRequest");
            cJSON_Delete(obj);
        } else if (rejected(obj)) {
            status(resp, 500, "InternalError");
            cJSON_Delete(obj);
        } else if (!m.obj) {
            status(resp, 404, "NotFound");
            cJSON_Delete(obj);
        } else if (!rv || strcmp(rv, cur) != 0) {
            m.conflicts++;
            status(resp, 409, "Conflict");
            cJSON_Delete(obj);
        } else {
            store(obj);
            reply_obj(resp, 200);
        }
    } else {
        status(resp, 405, "MethodNotAllowed");
    }
    pthread_mutex_unlock(&m.mu);
}

static void h_coll(void *ctx, const char *method, const char *body, size_t len,
                   struct httpd_response *resp)
{
    cJSON *obj;

    (void)ctx;
    pthread_mutex_lock(&m.mu);
    obj = body ? cJSON_ParseWithLength(body, len) : NULL;
    if (strcmp(method, "POST") != 0) {
        status(resp, 405, "MethodNotAllowed");
        cJSON_Delete(obj);
    } else if (!obj || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata")) ||
               !dd_json_str(obj, "metadata", "name", NULL) ||
               strcmp(dd_json_str(obj, "metadata", "name", NULL), NAME) != 0 ||
               dd_json_str(obj, "metadata", "resourceVersion", NULL)) {
        status(resp, 400, "BadRequest");
        cJSON_Delete(obj);
    } else if (rejected(obj)) {
        status(resp, 500, "InternalError");
        cJSON_Delete(obj);
    } else if (m.obj) {
        m.conflicts++;
        status(resp, 409, "AlreadyExists");
        cJSON_Delete(obj);
    } else {
        store(obj);
        reply_obj(resp, 201);
    }
    pthread_mutex_unlock(&m.mu);
}

static const struct httpd_route routes[] = {
    { LEASE_PATH, h_lease, NULL, NULL },
    { COLL_PATH, h_coll, NULL, NULL },
};

static struct httpd *srv;
static struct kube_config cfg;
static char server_url[64];

static void mock_reset(void)
{
    pthread_mutex_lock(&m.mu);
    cJSON_Delete(m.obj);
    m.obj = NULL;
    m.rv = 100;
    m.reject[0] = '\0';
    m.writes = m.conflicts = 0;
    pthread_mutex_unlock(&m.mu);
}

static void mock_reject(const char *holder)
{
    pthread_mutex_lock(&m.mu);
    snprintf(m.reject, sizeof(m.reject), "%s", holder ? holder : "");
    pthread_mutex_unlock(&m.mu);
}

/* A copy of the stored spec field (string), or "" / "(absent)". */
static void mock_str(const char *field, char *buf, size_t size)
{
    const char *s;

    pthread_mutex_lock(&m.mu);
    s = m.obj ? dd_json_str(m.obj, "spec", field, NULL) : NULL;
    snprintf(buf, size, "%s", s ? s : "(absent)");
    pthread_mutex_unlock(&m.mu);
}

static int64_t mock_int(const char *field)
{
    int64_t v = -1;

    pthread_mutex_lock(&m.mu);
    if (m.obj)
        dd_json_int(m.obj, &v, "spec", field, NULL);
    pthread_mutex_unlock(&m.mu);
    return v;
}

/* ---- helpers ------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

static struct lease *start(const char *identity, int dur, int deadline, int retry)
{
    struct lease_opts o = { NS, NAME, identity, dur, deadline, retry };
    struct dd_err err = { 0 };
    struct lease *l = lease_start(&cfg, &o, &err);

    if (!l)
        fail_msg("lease_start(%s): %s", identity, err.msg);
    return l;
}

/* Waits until pred-like condition on l flips to want; returns elapsed ms or -1. */
static double wait_leader_state(struct lease *l, int want, double timeout)
{
    double t0 = now_ms();

    while (now_ms() - t0 < timeout) {
        if (lease_is_leader(l) == want)
            return now_ms() - t0;
        sleep_ms(5);
    }
    return -1;
}

static int is_micro_time(const char *s)
{
    /* 2006-01-02T15:04:05.000000Z */
    size_t i;

    if (strlen(s) != 27)
        return 0;
    for (i = 0; i < 27; i++) {
        char c = s[i];
        int ok;

        switch (i) {
        case 4: case 7: ok = c == '-'; break;
        case 10: ok = c == 'T'; break;
        case 13: case 16: ok = c == ':'; break;
        case 19: ok = c == '.'; break;
        case 26: ok = c == 'Z'; break;
        default: ok = c >= '0' && c <= '9';
        }
        if (!ok)
            return 0;
    }
    return 1;
}

/* ---- tests --------------------------------------------------------------- */

static void test_single_candidate(void **state)
{
    struct lease *l;
    char buf[64], renew1[64], renew2[64];
    double t0;

    (void)state;
    mock_reset();
    l = start("alpha", 0, 0, 0); /* the defaults: 15 s / 10 s / 2 s */
    assert_int_equal(lease_wait_leader(l, 3000), 1);
    assert_int_equal(lease_is_leader(l), 1);
    mock_str("holderIdentity", buf, sizeof(buf));
    assert_string_equal(buf, "alpha");
    assert_int_equal(mock_int("leaseDurationSeconds"), 15);
    assert_int_equal(mock_int("leaseTransitions"), 0);
    mock_str("acquireTime", buf, sizeof(buf));
    assert_true(is_micro_time(buf));
    mock_str("renewTime", renew1, sizeof(renew1));
    assert_true(is_micro_time(renew1));
    /* stopping is prompt even though the thread sleeps for a 2 s retry period */
    t0 = now_ms();
    lease_stop(l);
    assert_true(now_ms() - t0 < 1000);
    mock_str("holderIdentity", buf, sizeof(buf));
    assert_string_equal(buf, "");
    assert_int_equal(mock_int("leaseDurationSeconds"), 1);

    /* a fast candidate renews every period: renewTime moves, the holder does not change */
    mock_reset();
    l = start("alpha", 600, 400, 100);
    assert_int_equal(lease_wait_leader(l, 2000), 1);
    mock_str("renewTime", renew1, sizeof(renew1));
    sleep_ms(350);
    mock_str("renewTime", renew2, sizeof(renew2));
    assert_string_not_equal(renew1, renew2);
    assert_true(is_micro_time(renew2));
    assert_int_equal(mock_int("leaseTransitions"), 0);
    assert_int_equal(lease_is_leader(l), 1);
    lease_stop(l);
}

static void test_two_candidates_one_leader(void **state)
{
    struct lease *a, *b;
    int i, both = 0, none = 0, seen = 0;
    char holder[64];

    (void)state;
    mock_reset();
    a = start("alpha", 600, 400, 100);
    b = start("beta", 600, 400, 100);
    for (i = 0; i < 60; i++) { /* 3 s, every 50 ms */
        int la = lease_is_leader(a), lb = lease_is_leader(b);

        if (la && lb)
            both++;
        if (la || lb)
            seen = 1;
        else if (seen)
            none++;
        sleep_ms(50);
    }
    assert_int_equal(both, 0);
    assert_true(seen);
    assert_int_equal(none, 0); /* the leader renews in time: no gaps */
    assert_int_equal(mock_int("leaseTransitions"), 0);
    mock_str("holderIdentity", holder, sizeof(holder));
    assert_int_equal(lease_is_leader(a) + lease_is_leader(b), 1);
    assert_string_equal(holder, lease_is_leader(a) ? "alpha" : "beta");

    /* stopping the follower releases nothing */
    if (lease_is_leader(a)) {
        lease_stop(b);
        b = a;
    } else {
        lease_stop(a);
    }
    mock_str("holderIdentity", holder, sizeof(holder));
    assert_string_not_equal(holder, "");
    assert_int_equal(lease_is_leader(b), 1);
    lease_stop(b);
}

static void test_release_hands_over_at_once(void **state)
{
    struct lease *a, *b;
    char holder[64];
    double t0, took;

    (void)state;
    mock_reset();
    /* a long lease: only a release lets beta in quickly */
    a = start("alpha", 3000, 2000, 100);
    assert_int_equal(lease_wait_leader(a, 2000), 1);
    b = start("beta", 3000, 2000, 100);
    sleep_ms(300);
    assert_int_equal(lease_is_leader(b), 0);
    t0 = now_ms();
    lease_stop(a);
    assert_int_equal(lease_wait_leader(b, 2500), 1);
    took = now_ms() - t0;
    if (took > 1000)
        fail_msg("takeover after release took %.0f ms (retry period 100 ms)", took);
    mock_str("holderIdentity", holder, sizeof(holder));
    assert_string_equal(holder, "beta");
    assert_int_equal(mock_int("leaseTransitions"), 1);
    assert_int_equal(mock_int("leaseDurationSeconds"), 3);
    lease_stop(b);
}

static void test_takeover_after_expiry(void **state)
{
    struct lease *a, *b;
    char holder[64];
    double t0, took;

    (void)state;
    mock_reset();
    a = start("alpha", 600, 400, 100);
    assert_int_equal(lease_wait_leader(a, 2000), 1);
    b = start("beta", 600, 400, 100);
    sleep_ms(300);
    assert_int_equal(lease_is_leader(b), 0);
    t0 = now_ms();
    lease_abandon(a); /* no release: the Lease still names alpha */
    mock_str("holderIdentity", holder, sizeof(holder));
    assert_string_equal(holder, "alpha");
    assert_int_equal(lease_wait_leader(b, 3000), 1);
    took = now_ms() - t0;
    /* alpha's last renewal is at most one period old: beta waits ~500..600 ms at least */
    if (took < 400 || took > 1500)
        fail_msg("takeover after %.0f ms; expected about the 600 ms lease duration", took);
    mock_str("holderIdentity", holder, sizeof(holder));
    assert_string_equal(holder, "beta");
    assert_int_equal(mock_int("leaseTransitions"), 1);
    lease_stop(b);
}

static void test_step_down_after_deadline(void **state)
{
    struct lease *a, *b;
    double lost, t0;
    int i, both = 0;

    (void)state;
    mock_reset();
    a = start("alpha", 600, 400, 100);
    assert_int_equal(lease_wait_leader(a, 2000), 1);
    b = start("beta", 600, 400, 100);
    sleep_ms(250);
    assert_int_equal(lease_is_leader(b), 0);
    mock_reject("alpha"); /* the API server fails alpha's renewals from now on */
    t0 = now_ms();
    lost = wait_leader_state(a, 0, 2000);
    assert_true(lost >= 0);
    /* not at the first failure, but by the renew deadline (400 ms) */
    if (lost < 200 || lost > 600)
        fail_msg("alpha stepped down after %.0f ms; renew deadline 400 ms", lost);
    /* beta takes over only once alpha's record is 600 ms old; never both */
    for (i = 0; i < 40 && !lease_is_leader(b); i++) {
        if (lease_is_leader(a) && lease_is_leader(b))
            both++;
        sleep_ms(50);
    }
    assert_int_equal(both, 0);
    assert_int_equal(lease_is_leader(b), 1);
    assert_true(now_ms() - t0 >= 450);
    assert_int_equal(lease_is_leader(a), 0);
    /* alpha sees beta now holds it and stays a follower once its writes work again */
    mock_reject(NULL);
    sleep_ms(300);
    assert_int_equal(lease_is_leader(a), 0);
    assert_int_equal(lease_is_leader(b), 1);
    lease_stop(a);
    lease_stop(b);
}

static void test_single_recovers_after_outage(void **state)
{
    struct lease *a;
    double lost, t0;

    (void)state;
    mock_reset();
    a = start("alpha", 600, 400, 100);
    assert_int_equal(lease_wait_leader(a, 2000), 1);
    mock_reject("alpha");
    lost = wait_leader_state(a, 0, 2000);
    assert_true(lost >= 200 && lost <= 600);
    sleep_ms(300);
    assert_int_equal(lease_is_leader(a), 0); /* still failing: still not leading */
    mock_reject(NULL);
    t0 = now_ms();
    assert_int_equal(lease_wait_leader(a, 2000), 1); /* its own record: renewed at once */
    /* the waiter is woken by the change, not by its timeout */
    if (now_ms() - t0 > 600)
        fail_msg("lease_wait_leader returned after %.0f ms", now_ms() - t0);
    assert_int_equal(mock_int("leaseTransitions"), 0);
    lease_stop(a);
}

static void test_bad_options(void **state)
{
    struct lease_opts o = { NS, NAME, "alpha", 1000, 1000, 100 };
    struct dd_err err = { 0 };

    (void)state;
    assert_null(lease_start(&cfg, &o, &err)); /* duration must exceed the deadline */
    assert_int_equal(err.rc, DD_EINVAL);
    o.lease_duration_ms = 2000;
    o.retry_period_ms = 1000;
    assert_null(lease_start(&cfg, &o, &err));
    assert_int_equal(err.rc, DD_EINVAL);
    o.retry_period_ms = 100;
    o.identity = "";
    assert_null(lease_start(&cfg, &o, &err));
    assert_int_equal(err.rc, DD_EINVAL);
    o.identity = "alpha";
    o.name = "a/b";
    assert_null(lease_start(&cfg, &o, &err));
    assert_int_equal(err.rc, DD_EINVAL);
    assert_null(lease_start(NULL, &o, &err));
    assert_int_equal(lease_is_leader(NULL), 0);
    lease_stop(NULL);
}

static int group_setup(void **state)
{
    struct httpd_opts o = { "127.0.0.1", 0, 0, 4, NULL, NULL, 0, 0 };
    struct dd_err err = { 0 };

    (void)state;
    srv = httpd_start(&o, routes, sizeof(routes) / sizeof(routes[0]), &err);
    if (!srv) {
        fprintf(stderr, "mock API server: %s\n", err.msg);
        return -1;
    }
    snprintf(server_url, sizeof(server_url), "http://127.0.0.1:%u", (unsigned)httpd_port(srv));
    cfg.server = server_url;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    httpd_stop(srv);
    cJSON_Delete(m.obj);
    m.obj = NULL;
    kube_global_cleanup();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_candidate),
        cmocka_unit_test(test_two_candidates_one_leader),
        cmocka_unit_test(test_release_hands_over_at_once),
        cmocka_unit_test(test_takeover_after_expiry),
        cmocka_unit_test(test_step_down_after_deadline),
        cmocka_unit_test(test_single_recovers_after_outage),
        cmocka_unit_test(test_bad_options),
    };

    return cmocka_run_group_tests_name("lease", tests, group_setup, group_teardown);
}
