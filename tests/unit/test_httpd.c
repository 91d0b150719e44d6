/*
 * test_httpd.c - lib/client/httpd against a real client (libcurl) on loopback:
 * routing, bodies and their cap, concurrency, draining on stop, TLS.
 */
#include "harness.h"

#include "client/httpd.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

/* ---- handlers ------------------------------------------------------------ */

static atomic_int calls;

static void h_healthz(void *ctx, const char *method, const char *body, size_t len,
                      struct httpd_response *resp)
{
    (void)ctx;
    (void)body;
    (void)len;
    atomic_fetch_add(&calls, 1);
    resp->status = strcmp(method, "GET") == 0 ? 200 : 405;
    resp->body = strdup(resp->status == 200 ? "ok\n" : "method not allowed\n");
    resp->len = strlen(resp->body);
}

static void h_teapot(void *ctx, const char *method, const char *body, size_t len,
                     struct httpd_response *resp)
{
    (void)ctx;
    (void)method;
    (void)body;
    (void)len;
    resp->status = 418;
    resp->content_type = "application/json";
    resp->body = strdup("{\"short\":\"stout\"}");
    resp->len = strlen(resp->body);
}

/* Echoes "METHOD len\n" followed by the body. */
static void h_echo(void *ctx, const char *method, const char *body, size_t len,
                   struct httpd_response *resp)
{
    char head[64];
    int n;

    (void)ctx;
    atomic_fetch_add(&calls, 1);
    n = snprintf(head, sizeof(head), "%s %zu\n", method, len);
    resp->body = malloc((size_t)n + len);
    memcpy(resp->body, head, (size_t)n);
    if (len)
        memcpy(resp->body + n, body, len);
    resp->len = (size_t)n + len;
}

/* Leaves everything at its defaults: 200, text/plain, empty body. */
static void h_empty(void *ctx, const char *method, const char *body, size_t len,
                    struct httpd_response *resp)
{
    (void)ctx;
    (void)method;
    (void)body;
    (void)len;
    (void)resp;
}

static atomic_int slow_entered;

static void h_slow(void *ctx, const char *method, const char *body, size_t len,
                   struct httpd_response *resp)
{
    struct timespec ts = { 0, 600 * 1000 * 1000 };

    (void)ctx;
    (void)method;
    (void)body;
    (void)len;
    atomic_store(&slow_entered, 1);
    nanosleep(&ts, NULL);
    resp->body = strdup("finished\n");
    resp->len = strlen(resp->body);
}

/*
 * Parks each request park_times times, then answers "parked N times".  The calls wait in
 * parked_calls for the test to resume them; with park_self set, the handler resumes its
 * own request before returning (httpd_resume coming before the connection is suspended).
 */
#define MAX_PARKED 64
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static struct httpd_call *parked_calls[MAX_PARKED];
static int nparked;            /* guarded by park_mu */
static atomic_int park_times, park_self, parks_total;

static void h_park(void *ctx, const char *method, const char *body, size_t len,
                   struct httpd_response *resp)
{
    int *times = resp->parked;

    (void)ctx;
    (void)method;
    (void)body;
    (void)len;
    if (!times && !(times = calloc(1, sizeof(*times)))) {
        resp->status = 500;
        return;
    }
    if (*times < atomic_load(&park_times)) {
        ++*times;
        resp->park = times;
        atomic_fetch_add(&parks_total, 1);
        if (atomic_load(&park_self)) {
            httpd_resume(resp->call);
            return;
        }
        pthread_mutex_lock(&park_mu);
        assert_true(nparked < MAX_PARKED);
        parked_calls[nparked++] = resp->call;
        pthread_mutex_unlock(&park_mu);
        return;
    }
    resp->body = malloc(32);
    resp->len = (size_t)snprintf(resp->body, 32, "parked %d times\n", *times);
    free(times);
}

static const struct httpd_route routes[] = {
    { "/healthz", h_healthz, NULL, NULL },
    { "/teapot", h_teapot, NULL, NULL },
    { "/echo", h_echo, NULL, NULL },
    { "/empty", h_empty, NULL, NULL },
    { "/slow", h_slow, NULL, NULL },
    { "/json", h_echo, NULL, "application/json" },
    { "/park", h_park, NULL, NULL },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* ---- client -------------------------------------------------------------- */

struct fetch {
    /* in */
    const char *url;
    const char *body;      /* POST when set */
    size_t len;
    int chunked;           /* send the body chunked, with no Content-Length */
    const char *cainfo;
    long sslversion;       /* CURLOPT_SSLVERSION, 0 for the default */
    const char *header;    /* one extra request header, e.g. "Content-Type: ..." */
    long timeout_ms;       /* default 10000 */
    /* out */
    CURLcode rc;
    long status;
    char *resp;
    size_t resp_len;
    char ctype[128];
    /* internal */
    size_t sent;
};

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
    struct fetch *f = arg;
    char *q = realloc(f->resp, f->resp_len + size * n + 1);

    if (!q)
        return 0;
    memcpy(q + f->resp_len, p, size * n);
    f->resp = q;
    f->resp_len += size * n;
    f->resp[f->resp_len] = '\0';
    return size * n;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
    struct fetch *f = arg;
    size_t k = f->len - f->sent;

    if (k > size * n)
        k = size * n;
    if (k > 1000) /* many small chunks */
        k = 1000;
    memcpy(p, f->body + f->sent, k);
    f->sent += k;
    return k;
}

static void fetch_run(struct fetch *f)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hdr = NULL;
    char *ct = NULL;

    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, f->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, f->timeout_ms ? f->timeout_ms : 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
    if (f->body && f->chunked) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, f);
        hdr = curl_slist_append(hdr, "Transfer-Encoding: chunked");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    } else if (f->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, f->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)f->len);
    }
    if (f->header) {
        hdr = curl_slist_append(hdr, f->header);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    }
    if (f->cainfo)
        curl_easy_setopt(c, CURLOPT_CAINFO, f->cainfo);
    if (f->sslversion) {
        curl_easy_setopt(c, CURLOPT_SSLVERSION, f->sslversion);
        /* OpenSSL 3 refuses TLS < 1.2 at its default security level: lower it so that a
         * refusal can only come from the server. */
        curl_easy_setopt(c, CURLOPT_SSL_CIPHER_LIST, "DEFAULT:@SECLEVEL=0");
    }
    f->rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
    if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
        snprintf(f->ctype, sizeof(f->ctype), "%s", ct);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
}

static void fetch_release(struct fetch *f)
{
    free(f->resp);
    f->resp = NULL;
    f->resp_len = 0;
}

static void url_of(char *buf, size_t size, const char *scheme, const char *host,
                   const struct httpd *h, const char *path)
{
    snprintf(buf, size, "%s://%s:%u%s", scheme, host, (unsigned)httpd_port(h), path);
}

static struct httpd *start_local(size_t max_body, unsigned threads)
{
    struct httpd_opts o = { "127.0.0.1", 0, max_body, threads, NULL, NULL, 0, 0 };
    struct dd_err err = { 0 };
    struct httpd *h = httpd_start(&o, routes, NROUTES, &err);

    if (!h)
        fail_msg("httpd_start: %s", err.msg);
    assert_int_not_equal(httpd_port(h), 0);
    return h;
}

/* ---- tests --------------------------------------------------------------- */

static void test_get_routes(void **state)
{
    struct httpd *h = start_local(0, 0);
    struct fetch f = { 0 };
    char url[128];

    (void)state;
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/healthz");
    f.url = url;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 200);
    assert_string_equal(f.resp, "ok\n");
    assert_string_equal(f.ctype, "text/plain; charset=utf-8");
    fetch_release(&f);

    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/teapot");
    memset(&f, 0, sizeof(f));
    f.url = url;
    fetch_run(&f);
    assert_int_equal(f.status, 418);
    assert_string_equal(f.resp, "{\"short\":\"stout\"}");
    assert_string_equal(f.ctype, "application/json");
    fetch_release(&f);

    /* the handler sees the method and decides */
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/healthz");
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = "x";
    f.len = 1;
    fetch_run(&f);
    assert_int_equal(f.status, 405);
    fetch_release(&f);

    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/empty");
    memset(&f, 0, sizeof(f));
    f.url = url;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 200);
    assert_int_equal(f.resp_len, 0);
    fetch_release(&f);
    httpd_stop(h);
}

static void test_not_found(void **state)
{
    struct httpd *h = start_local(0, 0);
    struct fetch f = { 0 };
    char url[128];
    int before = atomic_load(&calls);

    (void)state;
    /* exact match only: neither a prefix, a longer path nor a query-less variant */
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/healthz/x");
    f.url = url;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 404);
    assert_true(f.resp_len > 0);
    assert_contains(f.ctype, "text/plain");
    fetch_release(&f);

    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/health");
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = "payload";
    f.len = 7;
    fetch_run(&f);
    assert_int_equal(f.status, 404);
    fetch_release(&f);
    assert_int_equal(atomic_load(&calls), before);
    httpd_stop(h);
}

static char *pattern(size_t n)
{
    char *p = malloc(n);
    uint32_t x = 2463534242u;
    size_t i;

    assert_non_null(p);
    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (char)(x & 0xff); /* includes NUL bytes */
    }
    return p;
}

static void check_echo(const struct fetch *f, const char *body, size_t len)
{
    char head[64];
    int n = snprintf(head, sizeof(head), "POST %zu\n", len);

    assert_int_equal(f->rc, CURLE_OK);
    assert_int_equal(f->status, 200);
    assert_int_equal(f->resp_len, (size_t)n + len);
    assert_memory_equal(f->resp, head, (size_t)n);
    assert_memory_equal(f->resp + n, body, len);
}

static void test_post_body_intact(void **state)
{
    struct httpd *h = start_local(0, 0);
    size_t len = 100 * 1024;
    char *body = pattern(len);
    struct fetch f = { 0 };
    char url[128];

    (void)state;
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/echo");
    f.url = url;
    f.body = body;
    f.len = len;
    fetch_run(&f);
    check_echo(&f, body, len);
    fetch_release(&f);

    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = body;
    f.len = len;
    f.chunked = 1;
    fetch_run(&f);
    check_echo(&f, body, len);
    fetch_release(&f);

    /* GET: no body at all */
    memset(&f, 0, sizeof(f));
    f.url = url;
    fetch_run(&f);
    assert_int_equal(f.status, 200);
    assert_string_equal(f.resp, "GET 0\n");
    fetch_release(&f);
    free(body);
    httpd_stop(h);
}

static void test_body_cap(void **state)
{
    struct httpd *h = start_local(1024, 0);
    char *body = pattern(4096), *big;
    struct fetch f = { 0 };
    char url[128];
    int before;

    (void)state;
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/echo");
    /* exactly at the cap: accepted */
    f.url = url;
    f.body = body;
    f.len = 1024;
    fetch_run(&f);
    check_echo(&f, body, 1024);
    fetch_release(&f);

    before = atomic_load(&calls);
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = body;
    f.len = 1025;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 413);
    assert_contains(f.resp, "exceeds the limit of 1024 bytes");
    fetch_release(&f);

    /* no Content-Length to refuse up front: counted as it arrives */
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = body;
    f.len = 4096;
    f.chunked = 1;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 413);
    assert_contains(f.resp, "exceeds the limit");
    fetch_release(&f);
    /* a client that keeps sending long after the cap is cut off rather than read forever */
    big = pattern(3u << 20);
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = big;
    f.len = 3u << 20;
    f.chunked = 1;
    fetch_run(&f);
    assert_int_not_equal(f.rc, CURLE_OK);
    assert_int_not_equal(f.rc, CURLE_OPERATION_TIMEDOUT);
    fetch_release(&f);
    free(big);
    assert_int_equal(atomic_load(&calls), before); /* the handler never saw them */

    /* the server is still fine afterwards */
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = body;
    f.len = 10;
    fetch_run(&f);
    check_echo(&f, body, 10);
    fetch_release(&f);
    free(body);
    httpd_stop(h);
}

#define NCLIENTS 8
#define PER_CLIENT 25

struct client_arg {
    const char *url;
    int ok;
};

static void *client_main(void *p)
{
    struct client_arg *a = p;
    char body[64];
    int i;

    for (i = 0; i < PER_CLIENT; i++) {
        struct fetch f = { 0 };
        int n = snprintf(body, sizeof(body), "client %p request %d", (void *)a, i);

        f.url = a->url;
        f.body = body;
        f.len = (size_t)n;
        fetch_run(&f);
        if (f.rc == CURLE_OK && f.status == 200 && f.resp_len > (size_t)n &&
            memcmp(f.resp + f.resp_len - (size_t)n, body, (size_t)n) == 0)
            a->ok++;
        fetch_release(&f);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    struct httpd *h = start_local(0, 4);
    pthread_t th[NCLIENTS];
    struct client_arg a[NCLIENTS];
    char url[128];
    int i;

    (void)state;
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/echo");
    for (i = 0; i < NCLIENTS; i++) {
        a[i].url = url;
        a[i].ok = 0;
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &a[i]), 0);
    }
    for (i = 0; i < NCLIENTS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].ok, PER_CLIENT);
    }
    httpd_stop(h);
}

static void *fetch_main(void *p)
{
    fetch_run(p);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_stop_drains(void **state)
{
    struct httpd *h = start_local(0, 0);
    struct fetch f = { 0 }, g = { 0 };
    char url[128], url2[128];
    pthread_t th;
    double t0;

    (void)state;
    atomic_store(&slow_entered, 0);
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/slow");
    url_of(url2, sizeof(url2), "http", "127.0.0.1", h, "/healthz");
    f.url = url;
    assert_int_equal(pthread_create(&th, NULL, fetch_main, &f), 0);
    t0 = now_s();
    while (!atomic_load(&slow_entered)) {
        struct timespec ts = { 0, 1000 * 1000 };

        assert_true(now_s() - t0 < 5);
        nanosleep(&ts, NULL);
    }
    httpd_stop(h);
    pthread_join(th, NULL);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 200);
    assert_string_equal(f.resp, "finished\n");
    fetch_release(&f);
    /* nothing listens any more */
    g.url = url2;
    fetch_run(&g);
    assert_int_equal(g.rc, CURLE_COULDNT_CONNECT);
    fetch_release(&g);
}

/* ---- parking -------------------------------------------------------------- */

static void park_reset(int times, int self)
{
    pthread_mutex_lock(&park_mu);
    nparked = 0;
    pthread_mutex_unlock(&park_mu);
    atomic_store(&park_times, times);
    atomic_store(&park_self, self);
    atomic_store(&parks_total, 0);
}

/* Waits (up to 5 s) until n requests are parked and waiting for the test. */
static void wait_parked(int n)
{
    double t0 = now_s();

    for (;;) {
        int k;
        pthread_mutex_lock(&park_mu);
        k = nparked;
        pthread_mutex_unlock(&park_mu);
        if (k >= n)
            return;
        if (now_s() - t0 > 5)
            fail_msg("%d of %d requests parked after 5 s", k, n);
        usleep(1000);
    }
}

/* Resumes every request parked so far, oldest first. */
static int resume_all(void)
{
    struct httpd_call *c[MAX_PARKED];
    int n, i;

    pthread_mutex_lock(&park_mu);
    n = nparked;
    memcpy(c, parked_calls, (size_t)n * sizeof(c[0]));
    nparked = 0;
    pthread_mutex_unlock(&park_mu);
    for (i = 0; i < n; i++)
        httpd_resume(c[i]);
    return n;
}

/*
 * Parked requests hold no thread: with one server thread and NPARK requests parked,
 * another request is answered at once; then each parked one is answered, after being
 * parked twice, by its handler's third call.  Once with one thread, once with a pool.
 */
#define NPARK 24
static void park_holds_no_thread(unsigned threads)
{
    struct httpd *h = start_local(0, threads);
    struct fetch f[NPARK], g = { 0 };
    pthread_t th[NPARK];
    char url[128], url2[128];
    double t0;
    int i;

    park_reset(2, 0);
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/park");
    url_of(url2, sizeof(url2), "http", "127.0.0.1", h, "/healthz");
    memset(f, 0, sizeof(f));
    for (i = 0; i < NPARK; i++) {
        f[i].url = url;
        assert_int_equal(pthread_create(&th[i], NULL, fetch_main, &f[i]), 0);
    }
    wait_parked(NPARK);
    g.url = url2;
    g.timeout_ms = 2000;
    t0 = now_s();
    fetch_run(&g);
    assert_int_equal(g.rc, CURLE_OK);
    assert_int_equal(g.status, 200);
    assert_true(now_s() - t0 < 1);
    fetch_release(&g);
    /* First resume: each is parked once more; second: answered. */
    assert_int_equal(resume_all(), NPARK);
    wait_parked(NPARK);
    for (i = 0; i < NPARK; i++)
        assert_null(f[i].resp); /* nothing answered yet */
    assert_int_equal(resume_all(), NPARK);
    for (i = 0; i < NPARK; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(f[i].rc, CURLE_OK);
        assert_int_equal(f[i].status, 200);
        assert_string_equal(f[i].resp, "parked 2 times\n");
        fetch_release(&f[i]);
    }
    assert_int_equal(atomic_load(&parks_total), 2 * NPARK);
    httpd_stop(h);
}

static void test_park_holds_no_thread(void **state)
{
    (void)state;
    park_holds_no_thread(1);
    park_holds_no_thread(4);
}

/* One request to /park, answered after being parked `times` times. */
static void fetch_parked(const char *url, int times)
{
    struct fetch f = { 0 };
    char want[32];

    f.url = url;
    f.timeout_ms = 5000;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    snprintf(want, sizeof(want), "parked %d times\n", times);
    assert_string_equal(f.resp, want);
    fetch_release(&f);
}

/* httpd_resume before the handler has returned: the request is not left suspended. */
static void test_park_resumed_early(void **state)
{
    struct httpd *h = start_local(0, 2);
    char url[128];
    int i;

    (void)state;
    park_reset(3, 1);
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/park");
    for (i = 0; i < 20; i++)
        fetch_parked(url, 3);
    assert_int_equal(atomic_load(&parks_total), 60);
    httpd_stop(h);
}

/* Resumed from another thread racing with the suspension, many times over. */
static void *resumer_main(void *p)
{
    atomic_int *stop = p;

    while (!atomic_load(stop))
        resume_all();
    resume_all();
    return NULL;
}

static void test_park_resume_race(void **state)
{
    struct httpd *h = start_local(0, 2);
    atomic_int stop = 0;
    pthread_t rt;
    char url[128];
    int i;

    (void)state;
    park_reset(1, 0);
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/park");
    assert_int_equal(pthread_create(&rt, NULL, resumer_main, &stop), 0);
    for (i = 0; i < 300; i++)
        fetch_parked(url, 1);
    atomic_store(&stop, 1);
    pthread_join(rt, NULL);
    httpd_stop(h);
}

/* A client that gives up while parked: resuming it later frees what the handler parked
 * (ASan's leak check would say otherwise) and the server serves on. */
static void test_park_client_gone(void **state)
{
    struct httpd *h = start_local(0, 1);
    struct fetch f = { 0 };
    char url[128];

    (void)state;
    park_reset(1, 0);
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/park");
    f.url = url;
    f.timeout_ms = 300;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OPERATION_TIMEDOUT);
    fetch_release(&f);
    assert_int_equal(resume_all(), 1);
    park_reset(0, 0);
    fetch_parked(url, 0);
    httpd_stop(h);
}

struct stopper {
    struct httpd *h;
    atomic_int done;
};

static void *stopper_main(void *p)
{
    struct stopper *s = p;

    httpd_stop(s->h);
    atomic_store(&s->done, 1);
    return NULL;
}

/* httpd_stop waits for a parked request; once resumed, it is answered. */
static void test_stop_waits_for_parked(void **state)
{
    struct stopper s = { start_local(0, 2), 0 };
    struct fetch f = { 0 };
    pthread_t th, st;
    char url[128];

    (void)state;
    park_reset(1, 0);
    url_of(url, sizeof(url), "http", "127.0.0.1", s.h, "/park");
    f.url = url;
    assert_int_equal(pthread_create(&th, NULL, fetch_main, &f), 0);
    wait_parked(1);
    assert_int_equal(pthread_create(&st, NULL, stopper_main, &s), 0);
    usleep(300 * 1000);
    assert_int_equal(atomic_load(&s.done), 0);
    assert_int_equal(resume_all(), 1);
    pthread_join(th, NULL);
    pthread_join(st, NULL);
    assert_int_equal(f.rc, CURLE_OK);
    assert_string_equal(f.resp, "parked 1 times\n");
    fetch_release(&f);
}

static void test_ipv6_and_bad_options(void **state)
{
    struct httpd_opts o = { "::1", 0, 0, 1, NULL, NULL, 0, 0 };
    struct dd_err err = { 0 };
    struct httpd *h, *h2;
    struct fetch f = { 0 };
    char url[128];
    int s;

    (void)state;
    s = socket(AF_INET6, SOCK_STREAM, 0);
    if (s >= 0) {
        struct sockaddr_in6 sa = { 0 };

        sa.sin6_family = AF_INET6;
        sa.sin6_addr = in6addr_loopback;
        if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            close(s);
            s = -1;
        } else {
            close(s);
        }
    }
    if (s >= 0) {
        h = httpd_start(&o, routes, NROUTES, &err);
        if (!h)
            fail_msg("httpd_start [::1]: %s", err.msg);
        url_of(url, sizeof(url), "http", "[::1]", h, "/healthz");
        f.url = url;
        fetch_run(&f);
        assert_int_equal(f.rc, CURLE_OK);
        assert_int_equal(f.status, 200);
        assert_string_equal(f.resp, "ok\n");
        fetch_release(&f);
        httpd_stop(h);
    }

    o.bind = "localhost"; /* a name, not a literal */
    assert_null(httpd_start(&o, routes, NROUTES, &err));
    assert_int_equal(err.rc, DD_EINVAL);
    assert_contains(err.msg, "localhost");

    o.bind = "127.0.0.1";
    o.cert_file = "/nonexistent/c.pem";
    assert_null(httpd_start(&o, routes, NROUTES, &err));
    assert_int_equal(err.rc, DD_EINVAL); /* key missing */
    o.key_file = "/nonexistent/k.pem";
    assert_null(httpd_start(&o, routes, NROUTES, &err));
    assert_int_equal(err.rc, DD_EIO);
    assert_contains(err.msg, "/nonexistent/c.pem");

    /* a port already taken is an error, not a silent success */
    o.cert_file = o.key_file = NULL;
    h = start_local(0, 1);
    o.port = httpd_port(h);
    h2 = httpd_start(&o, routes, NROUTES, &err);
    assert_null(h2);
    assert_int_equal(err.rc, DD_EIO);
    httpd_stop(h);
    httpd_stop(NULL);
}

/* ---- TLS ----------------------------------------------------------------- */

static int run_openssl_to(const char *dir, const char *keyout, const char *out)
{
    pid_t pid = fork();
    int st;

    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);

        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (chdir(dir) != 0)
            _exit(126);
        execlp("openssl", "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
               "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-addext",
               "subjectAltName=IP:127.0.0.1", "-days", "1", "-keyout", keyout, "-out", out,
               (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_openssl(const char *dir)
{
    return run_openssl_to(dir, "k.pem", "c.pem");
}

static void fetch_ok(const char *url, const char *cainfo)
{
    struct fetch f = { 0 };

    f.url = url;
    f.cainfo = cainfo;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 200);
    fetch_release(&f);
}

static void wait_reload(struct httpd *h, unsigned long reloads, unsigned long errors)
{
    int i;

    for (i = 0; i < 200 && (httpd_cert_reloads(h) < reloads ||
                            httpd_cert_reload_errors(h) < errors); i++)
        usleep(20000);
    assert_true(httpd_cert_reloads(h) >= reloads);
    assert_true(httpd_cert_reload_errors(h) >= errors);
}

static void test_content_type(void **state)
{
    struct httpd_opts o = { "127.0.0.1", 0, 0, 1, NULL, NULL, 0, 0 };
    struct dd_err err = { 0 };
    struct httpd *h;
    struct fetch f = { 0 };
    char url[128];

    (void)state;
    h = httpd_start(&o, routes, NROUTES, &err);
    assert_non_null(h);
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/json");
    f.url = url;
    f.body = "{}";
    f.len = 2;
    fetch_run(&f); /* curl's default form type */
    assert_int_equal(f.status, 415);
    assert_contains(f.resp, "application/json");
    fetch_release(&f);
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.body = "{}";
    f.len = 2;
    f.header = "Content-Type: Application/JSON; charset=utf-8";
    fetch_run(&f);
    assert_int_equal(f.status, 200);
    assert_contains(f.resp, "{}");
    fetch_release(&f);
    httpd_stop(h);
}

/* A rotated pair is served from the next handshake; a mismatched pair is refused and the
 * old one kept; a second TLS server in the process is refused. */
static void test_tls_reload(void **state)
{
    char dir[] = "/tmp/dd-httpd-XXXXXX";
    char cert[64], key[64], url[128], newc[64], newk[64], keep[64], cmd[512];
    struct httpd_opts o = { "127.0.0.1", 0, 0, 2, cert, key, 20, 0 };
    struct dd_err err = { 0 };
    struct httpd *h, *h2;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(cert, sizeof(cert), "%s/c.pem", dir);
    snprintf(key, sizeof(key), "%s/k.pem", dir);
    snprintf(newc, sizeof(newc), "%s/c2.pem", dir);
    snprintf(newk, sizeof(newk), "%s/k2.pem", dir);
    snprintf(keep, sizeof(keep), "%s/c1.pem", dir);
    if (run_openssl(dir) == 127)
        skip();
    assert_int_equal(run_openssl_to(dir, "k2.pem", "c2.pem"), 0);
    snprintf(cmd, sizeof(cmd), "cp %s %s", cert, keep);
    assert_int_equal(system(cmd), 0);
    h = httpd_start(&o, routes, NROUTES, &err);
    if (!h)
        fail_msg("httpd_start (TLS): %s", err.msg);
    assert_null(h2 = httpd_start(&o, routes, NROUTES, &err));
    assert_contains(err.msg, "one TLS server");
    url_of(url, sizeof(url), "https", "127.0.0.1", h, "/healthz");
    fetch_ok(url, keep);

    /* Half a rotation: the new certificate beside the old key. */
    assert_int_equal(rename(newc, cert), 0);
    wait_reload(h, 0, 1);
    fetch_ok(url, keep);
    assert_int_equal(httpd_cert_reloads(h), 0);
    /* The rest of it. */
    assert_int_equal(rename(newk, key), 0);
    wait_reload(h, 1, 1);
    fetch_ok(url, cert);
    {
        struct fetch f = { 0 };
        f.url = url;
        f.cainfo = keep; /* the old certificate is no longer served */
        fetch_run(&f);
        assert_int_not_equal(f.rc, CURLE_OK);
        fetch_release(&f);
    }
    httpd_stop(h);
    unlink(cert);
    unlink(key);
    unlink(keep);
    rmdir(dir);
}

static void test_tls(void **state)
{
    char dir[] = "/tmp/dd-httpd-XXXXXX";
    char cert[64], key[64], url[128];
    struct httpd_opts o = { "127.0.0.1", 0, 0, 2, cert, key, 50, 0 };
    struct dd_err err = { 0 };
    struct httpd *h;
    struct fetch f = { 0 };
    int rc;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(cert, sizeof(cert), "%s/c.pem", dir);
    snprintf(key, sizeof(key), "%s/k.pem", dir);
    rc = run_openssl(dir);
    if (rc == 127) {
        rmdir(dir);
        skip(); /* no openssl CLI on this machine */
    }
    assert_int_equal(rc, 0);
    h = httpd_start(&o, routes, NROUTES, &err);
    if (!h)
        fail_msg("httpd_start (TLS): %s", err.msg);

    url_of(url, sizeof(url), "https", "127.0.0.1", h, "/healthz");
    f.url = url;
    f.cainfo = cert;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 200);
    assert_string_equal(f.resp, "ok\n");
    fetch_release(&f);

    /* TLS 1.2 only: accepted */
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.cainfo = cert;
    f.sslversion = CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2;
    fetch_run(&f);
    assert_int_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 200);
    fetch_release(&f);

    /* at most TLS 1.1: refused */
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.cainfo = cert;
    f.sslversion = CURL_SSLVERSION_TLSv1_0 | CURL_SSLVERSION_MAX_TLSv1_1;
    fetch_run(&f);
    assert_int_not_equal(f.rc, CURLE_OK);
    assert_int_equal(f.status, 0);
    fetch_release(&f);

    /* an untrusted server certificate: refused by the client (we really speak TLS) */
    memset(&f, 0, sizeof(f));
    f.url = url;
    f.cainfo = key; /* not a CA */
    fetch_run(&f);
    assert_int_not_equal(f.rc, CURLE_OK);
    fetch_release(&f);

    /* plain HTTP to the TLS port gets no HTTP answer */
    url_of(url, sizeof(url), "http", "127.0.0.1", h, "/healthz");
    memset(&f, 0, sizeof(f));
    f.url = url;
    fetch_run(&f);
    assert_int_not_equal(f.status, 200);
    fetch_release(&f);

    httpd_stop(h);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

static int group_setup(void **state)
{
    (void)state;
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    curl_global_cleanup();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_routes),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_post_body_intact),
        cmocka_unit_test(test_body_cap),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_stop_drains),
        cmocka_unit_test(test_park_holds_no_thread),
        cmocka_unit_test(test_park_resumed_early),
        cmocka_unit_test(test_park_resume_race),
        cmocka_unit_test(test_park_client_gone),
        cmocka_unit_test(test_stop_waits_for_parked),
        cmocka_unit_test(test_ipv6_and_bad_options),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_tls_reload),
    };

    return cmocka_run_group_tests_name("httpd", tests, group_setup, group_teardown);
}
