/* test_informer.c - the store's semantics, and the reflector's list/watch/relist/backoff
 * behaviour against a small plain-HTTP mock API server running in a thread. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/informer.h"
#include "formats/json.h"

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static cJSON *obj(const char *ns, const char *name, const char *rv)
{
    char buf[512];
    cJSON *o;

    if (ns)
        snprintf(buf, sizeof buf,
                 "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"%s\","
                 "\"name\":\"%s\",\"resourceVersion\":\"%s\"}}", ns, name, rv);
    else
        snprintf(buf, sizeof buf,
                 "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
                 "\"resourceVersion\":\"%s\"}}", name, rv);
    o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static const char *rv_of(const cJSON *o)
{
    return dd_json_str(o, "metadata", "resourceVersion", NULL);
}

/* ---- store ----------------------------------------------------------- */

static void key_forms(void **state)
{
    char buf[64], tiny[4];
    cJSON *a = obj("ns", "a", "1"), *n = obj(NULL, "node1", "1"), *bad = cJSON_Parse("{}");

    (void)state;
    assert_string_equal(inf_key(a, buf, sizeof buf), "ns/a");
    assert_string_equal(inf_key(n, buf, sizeof buf), "node1");
    assert_null(inf_key(bad, buf, sizeof buf));
    assert_null(inf_key(a, tiny, sizeof tiny));
    cJSON_Delete(a);
    cJSON_Delete(n);
    cJSON_Delete(bad);
}

struct visit {
    char seen[16][64];
    int n;
    int stop_after;
};

static int visit_fn(void *ctx, const cJSON *o)
{
    struct visit *v = ctx;

    if (v->n < 16)
        inf_key(o, v->seen[v->n], sizeof v->seen[0]);
    v->n++;
    return v->stop_after && v->n >= v->stop_after;
}

static int visited(const struct visit *v, const char *key)
{
    int i;

    for (i = 0; i < v->n && i < 16; i++)
        if (!strcmp(v->seen[i], key))
            return 1;
    return 0;
}

static void store_semantics(void **state)
{
    struct inf_store *s = inf_store_new();
    struct visit v;
    cJSON *o, *got;
    uint64_t g0, g1;

    (void)state;
    assert_non_null(s);
    g0 = inf_store_generation(s);
    assert_int_equal(inf_store_len(s), 0);
    assert_null(inf_store_get(s, "x/a"));

    o = obj("x", "a", "1");
    assert_int_equal(inf_store_put(s, o), DD_OK);
    cJSON_Delete(o); /* the store copied it */
    o = obj("x", "b", "2");
    assert_int_equal(inf_store_put(s, o), DD_OK);
    cJSON_Delete(o);
    o = obj("y", "a", "3");
    assert_int_equal(inf_store_put(s, o), DD_OK);
    cJSON_Delete(o);
    o = obj(NULL, "node1", "4");
    assert_int_equal(inf_store_put(s, o), DD_OK);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{}}");
    assert_int_equal(inf_store_put(s, o), DD_EINVAL);
    cJSON_Delete(o);
    assert_int_equal(inf_store_len(s), 4);
    g1 = inf_store_generation(s);
    assert_true(g1 >= g0 + 4);

    /* get returns a copy: changing it leaves the store alone. */
    got = inf_store_get(s, "x/a");
    assert_non_null(got);
    assert_string_equal(rv_of(got), "1");
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(got, "metadata"), "resourceVersion",
                              cJSON_CreateString("99"));
    cJSON_Delete(got);
    got = inf_store_get(s, "x/a");
    assert_string_equal(rv_of(got), "1");
    cJSON_Delete(got);

    /* update replaces, does not add */
    o = obj("x", "a", "5");
    assert_int_equal(inf_store_put(s, o), DD_OK);
    cJSON_Delete(o);
    assert_int_equal(inf_store_len(s), 4);
    assert_true(inf_store_generation(s) > g1);
    got = inf_store_get(s, "x/a");
    assert_string_equal(rv_of(got), "5");
    cJSON_Delete(got);

    memset(&v, 0, sizeof v);
    inf_store_foreach(s, visit_fn, &v);
    assert_int_equal(v.n, 4);
    assert_true(visited(&v, "x/a") && visited(&v, "x/b") && visited(&v, "y/a") &&
                visited(&v, "node1"));
    memset(&v, 0, sizeof v);
    v.stop_after = 2;
    inf_store_foreach(s, visit_fn, &v);
    assert_int_equal(v.n, 2);

    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "x", visit_fn, &v);
    assert_int_equal(v.n, 2);
    assert_true(visited(&v, "x/a") && visited(&v, "x/b"));
    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "", visit_fn, &v);
    assert_int_equal(v.n, 1);
    assert_true(visited(&v, "node1"));
    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "nope", visit_fn, &v);
    assert_int_equal(v.n, 0);

    /* delete, including the last of a namespace (its index entry goes too) */
    g1 = inf_store_generation(s);
    assert_int_equal(inf_store_delete(s, "y/a"), 1);
    assert_int_equal(inf_store_delete(s, "y/a"), 0);
    assert_true(inf_store_generation(s) > g1);
    assert_null(inf_store_get(s, "y/a"));
    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "y", visit_fn, &v);
    assert_int_equal(v.n, 0);
    assert_int_equal(inf_store_delete(s, "x/a"), 1);
    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "x", visit_fn, &v);
    assert_int_equal(v.n, 1);
    assert_true(visited(&v, "x/b"));
    /* the namespace comes back after emptying */
    o = obj("y", "c", "7");
    assert_int_equal(inf_store_put(s, o), DD_OK);
    cJSON_Delete(o);
    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "y", visit_fn, &v);
    assert_int_equal(v.n, 1);
    assert_int_equal(inf_store_len(s), 3);
    /* a borrowed look at one object: fn's answer, or -1 when there is none */
    memset(&v, 0, sizeof v);
    v.stop_after = 1;
    assert_int_equal(inf_store_with(s, "y/c", visit_fn, &v), 1);
    assert_true(visited(&v, "y/c"));
    assert_int_equal(inf_store_with(s, "y/nope", visit_fn, &v), -1);
    assert_int_equal(v.n, 1);
    inf_store_free(s);
}

static void store_many_keys(void **state)
{
    struct inf_store *s = inf_store_new();
    struct visit v;
    char name[32], ns[32];
    cJSON *o;
    int i;

    (void)state;
    for (i = 0; i < 2000; i++) {
        snprintf(ns, sizeof ns, "ns%d", i % 7);
        snprintf(name, sizeof name, "p%d", i);
        o = obj(ns, name, "1");
        assert_int_equal(inf_store_put(s, o), DD_OK);
        cJSON_Delete(o);
    }
    assert_int_equal(inf_store_len(s), 2000);
    for (i = 0; i < 2000; i += 2) {
        snprintf(name, sizeof name, "ns%d/p%d", i % 7, i);
        assert_int_equal(inf_store_delete(s, name), 1);
    }
    assert_int_equal(inf_store_len(s), 1000);
    memset(&v, 0, sizeof v);
    inf_store_foreach_ns(s, "ns3", visit_fn, &v);
    assert_true(v.n > 130 && v.n < 150); /* odd i with i % 7 == 3: 143 */
    assert_int_equal(v.n, 143);
    inf_store_free(s);
}

/* ---- mock API server --------------------------------------------------- */

#define MAXREQ 128
#define MAXQ 64
#define MAXCONN 64

struct mock {
    int lfd, port;
    pthread_t acceptor;
    pthread_t conns[MAXCONN];
    int nconns;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int shutdown;

    cJSON *objects;                 /* served by LIST */
    char list_rv[32];
    int list_fail;                  /* answer this many more LISTs with 500 */
    int watch_gone;                 /* answer the next WATCH with HTTP 410 */

    int nlists;                     /* LIST requests so far */
    int64_t list_at[MAXREQ];
    char list_query[MAXREQ][256];
    int nwatches;                   /* WATCH requests so far */
    char watch_query[MAXREQ][256];
    int watch_open;                 /* a watch response is being streamed */

    char *q[MAXQ];                  /* lines for the open watch; "CLOSE" ends it */
    int qh, qt;
};

static struct mock M;

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int send_response(int fd, int code, const char *reason, const char *body)
{
    char head[256];

    snprintf(head, sizeof head,
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
             code, reason, strlen(body));
    return send_all(fd, head, strlen(head)) || send_all(fd, body, strlen(body));
}

static int send_chunk(int fd, const char *data)
{
    char head[32];

    snprintf(head, sizeof head, "%zx\r\n", strlen(data));
    return send_all(fd, head, strlen(head)) || send_all(fd, data, strlen(data)) ||
           send_all(fd, "\r\n", 2);
}

/* The value of query parameter name into out, or "" */
static void query_param(const char *query, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    const char *p = query;

    out[0] = '\0';
    while (p && *p) {
        if (!strncmp(p, name, n) && p[n] == '=') {
            const char *v = p + n + 1, *end = strchr(v, '&');
            size_t len = end ? (size_t)(end - v) : strlen(v);

            snprintf(out, size, "%.*s", (int)len, v);
            return;
        }
        p = strchr(p, '&');
        if (p)
            p++;
    }
}

/* 1 when the peer closed (or the socket failed), polled without blocking. */
static int peer_gone(int fd)
{
    struct pollfd pf = { fd, POLLIN, 0 };
    char c;

    if (poll(&pf, 1, 0) <= 0)
        return 0;
    if (pf.revents & (POLLHUP | POLLERR))
        return 1;
    return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static int serve_list(int fd, const char *query)
{
    char lim[32], cont[32], *body;
    cJSON *list, *items, *md;
    long limit, off, total, i;
    int rc;

    pthread_mutex_lock(&M.mu);
    if (M.nlists < MAXREQ) {
        M.list_at[M.nlists] = now_ms();
        snprintf(M.list_query[M.nlists], sizeof M.list_query[0], "%s", query);
    }
    M.nlists++;
    if (M.list_fail > 0) {
        M.list_fail--;
        pthread_mutex_unlock(&M.mu);
        return send_response(fd, 500, "Internal Server Error",
                             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                             "\"reason\":\"InternalError\",\"code\":500,\"message\":\"boom\"}");
    }
    query_param(query, "limit", lim, sizeof lim);
    query_param(query, "continue", cont, sizeof cont);
    limit = lim[0] ? strtol(lim, NULL, 10) : 0;
    off = cont[0] ? strtol(cont, NULL, 10) : 0;
    total = cJSON_GetArraySize(M.objects);
    if (limit <= 0)
        limit = total;
    list = cJSON_CreateObject();
    cJSON_AddStringToObject(list, "kind", "PodList");
    cJSON_AddStringToObject(list, "apiVersion", "v1");
    md = cJSON_AddObjectToObject(list, "metadata");
    cJSON_AddStringToObject(md, "resourceVersion", M.list_rv);
    if (off + limit < total) {
        snprintf(cont, sizeof cont, "%ld", off + limit);
        cJSON_AddStringToObject(md, "continue", cont);
    }
    items = cJSON_AddArrayToObject(list, "items");
    for (i = off; i < off + limit && i < total; i++) {
        cJSON *it = cJSON_Duplicate(cJSON_GetArrayItem(M.objects, (int)i), 1);

        /* As the API server does: kind and apiVersion only on the list. */
        cJSON_DeleteItemFromObject(it, "kind");
        cJSON_DeleteItemFromObject(it, "apiVersion");
        cJSON_AddItemToArray(items, it);
    }
    pthread_mutex_unlock(&M.mu);
    body = cJSON_PrintUnformatted(list);
    rc = send_response(fd, 200, "OK", body);
    free(body);
    cJSON_Delete(list);
    return rc;
}

/* Streams the queued lines; returns 0 to keep the connection, -1 to drop it. */
static int serve_watch(int fd, const char *query)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    int rc = 0;

    pthread_mutex_lock(&M.mu);
    if (M.nwatches < MAXREQ)
        snprintf(M.watch_query[M.nwatches], sizeof M.watch_query[0], "%s", query);
    M.nwatches++;
    if (M.watch_gone) {
        M.watch_gone = 0;
        pthread_mutex_unlock(&M.mu);
        return send_response(fd, 410, "Gone",
                             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                             "\"reason\":\"Expired\",\"code\":410,\"message\":\"too old\"}");
    }
    M.watch_open = 1;
    pthread_mutex_unlock(&M.mu);
    if (send_all(fd, head, sizeof head - 1))
        goto drop;
    for (;;) {
        struct timespec ts;
        char *line = NULL;

        pthread_mutex_lock(&M.mu);
        while (!M.shutdown && M.qh == M.qt) {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&M.cond, &M.mu, &ts);
            if (M.qh == M.qt && peer_gone(fd))
                break;
        }
        if (!M.shutdown && M.qh != M.qt)
            line = M.q[M.qh++ % MAXQ];
        pthread_mutex_unlock(&M.mu);
        if (!line)
            goto drop; /* shutdown or the client went away */
        if (!strcmp(line, "CLOSE")) {
            free(line);
            rc = send_all(fd, "0\r\n\r\n", 5);
            break;
        }
        rc = send_chunk(fd, line);
        free(line);
        if (rc)
            goto drop;
    }
    pthread_mutex_lock(&M.mu);
    M.watch_open = 0;
    pthread_mutex_unlock(&M.mu);
    return rc;
drop:
    pthread_mutex_lock(&M.mu);
    M.watch_open = 0;
    pthread_mutex_unlock(&M.mu);
    return -1;
}

static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t n = 0;

    for (;;) {
        char *end, *sp1, *sp2, *query;
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t r;
        int keep;

        buf[n] = '\0';
        if (!(end = strstr(buf, "\r\n\r\n"))) {
            int shut;

            pthread_mutex_lock(&M.mu);
            shut = M.shutdown;
            pthread_mutex_unlock(&M.mu);
            if (shut || n == sizeof buf - 1)
                break;
            if (poll(&pf, 1, 20) <= 0)
                continue;
            r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
            if (r <= 0)
                break;
            n += (size_t)r;
            continue;
        }
        *end = '\0';
        sp1 = strchr(buf, ' ');
        sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp1 || !sp2)
            break;
        *sp2 = '\0';
        query = strchr(sp1 + 1, '?');
        query = query ? query + 1 : sp2; /* "" */
        if (strstr(query, "watch=1"))
            keep = !serve_watch(fd, query);
        else
            keep = !serve_list(fd, query);
        /* Drop the request just served; GETs carry no body. */
        memmove(buf, end + 4, n - (size_t)(end + 4 - buf));
        n -= (size_t)(end + 4 - buf);
        if (!keep)
            break;
    }
    close(fd);
    return NULL;
}

static void *acceptor_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd pf = { M.lfd, POLLIN, 0 };
        int fd, shut;

        pthread_mutex_lock(&M.mu);
        shut = M.shutdown;
        pthread_mutex_unlock(&M.mu);
        if (shut)
            break;
        if (poll(&pf, 1, 20) <= 0)
            continue;
        fd = accept(M.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&M.mu);
        if (M.nconns < MAXCONN &&
            !pthread_create(&M.conns[M.nconns], NULL, conn_main, (void *)(intptr_t)fd))
            M.nconns++;
        else
            close(fd);
        pthread_mutex_unlock(&M.mu);
    }
    return NULL;
}

static void mock_start(void)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int one = 1;

    memset(&M, 0, sizeof M);
    pthread_mutex_init(&M.mu, NULL);
    pthread_cond_init(&M.cond, NULL);
    M.objects = cJSON_CreateArray();
    snprintf(M.list_rv, sizeof M.list_rv, "10");
    M.lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(M.lfd >= 0);
    setsockopt(M.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(M.lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(M.lfd, 16), 0);
    assert_int_equal(getsockname(M.lfd, (struct sockaddr *)&a, &alen), 0);
    M.port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&M.acceptor, NULL, acceptor_main, NULL), 0);
}

static void mock_stop(void)
{
    int i, n;

    pthread_mutex_lock(&M.mu);
    M.shutdown = 1;
    pthread_cond_broadcast(&M.cond);
    pthread_mutex_unlock(&M.mu);
    pthread_join(M.acceptor, NULL);
    pthread_mutex_lock(&M.mu);
    n = M.nconns;
    pthread_mutex_unlock(&M.mu);
    for (i = 0; i < n; i++)
        pthread_join(M.conns[i], NULL);
    close(M.lfd);
    while (M.qh != M.qt)
        free(M.q[M.qh++ % MAXQ]);
    cJSON_Delete(M.objects);
    pthread_cond_destroy(&M.cond);
    pthread_mutex_destroy(&M.mu);
}

static void mock_set_objects(const char *rv, int n, ...)
{
    va_list ap;
    int i;

    pthread_mutex_lock(&M.mu);
    cJSON_Delete(M.objects);
    M.objects = cJSON_CreateArray();
    va_start(ap, n);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(M.objects, va_arg(ap, cJSON *));
    va_end(ap);
    snprintf(M.list_rv, sizeof M.list_rv, "%s", rv);
    pthread_mutex_unlock(&M.mu);
}

/* Queues a line (an event, or "CLOSE") for the open watch. */
static void mock_push(const char *line)
{
    pthread_mutex_lock(&M.mu);
    assert_true(M.qt - M.qh < MAXQ);
    M.q[M.qt++ % MAXQ] = strdup(line);
    pthread_cond_broadcast(&M.cond);
    pthread_mutex_unlock(&M.mu);
}

static void mock_event(const char *type, const cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o), line[1024];

    snprintf(line, sizeof line, "{\"type\":\"%s\",\"object\":%s}", type, s);
    free(s);
    mock_push(line);
}

static int mock_int(const int *field)
{
    int v;

    pthread_mutex_lock(&M.mu);
    v = *field;
    pthread_mutex_unlock(&M.mu);
    return v;
}

static void mock_watch_query(int i, char *out, size_t size)
{
    pthread_mutex_lock(&M.mu);
    snprintf(out, size, "%s", i < MAXREQ ? M.watch_query[i] : "");
    pthread_mutex_unlock(&M.mu);
}

/* ---- handler recorder -------------------------------------------------- */

struct rec {
    pthread_mutex_t mu;
    struct inf_store *store;
    int adds, updates, deletes;
    int lagged;             /* a handler ran before the store showed the change */
    char log[8192];
};

static void rec_log(struct rec *r, const char *fmt, const char *a, const char *b, const char *c)
{
    size_t n = strlen(r->log);

    snprintf(r->log + n, sizeof r->log - n, fmt, a, b, c);
}

static void on_add(void *ctx, const cJSON *o)
{
    struct rec *r = ctx;
    char key[256];
    cJSON *in;

    inf_key(o, key, sizeof key);
    in = inf_store_get(r->store, key);
    pthread_mutex_lock(&r->mu);
    r->adds++;
    if (!in || strcmp(rv_of(in), rv_of(o)))
        r->lagged++;
    rec_log(r, "add %s@%s%s;", key, rv_of(o), "");
    pthread_mutex_unlock(&r->mu);
    cJSON_Delete(in);
}

static void on_update(void *ctx, const cJSON *old, const cJSON *o)
{
    struct rec *r = ctx;
    char key[256];
    cJSON *in;

    inf_key(o, key, sizeof key);
    in = inf_store_get(r->store, key);
    pthread_mutex_lock(&r->mu);
    r->updates++;
    if (!in || strcmp(rv_of(in), rv_of(o)))
        r->lagged++;
    rec_log(r, "update %s@%s->%s;", key, rv_of(old), rv_of(o));
    pthread_mutex_unlock(&r->mu);
    cJSON_Delete(in);
}

static void on_delete(void *ctx, const cJSON *o)
{
    struct rec *r = ctx;
    char key[256];
    cJSON *in;

    inf_key(o, key, sizeof key);
    in = inf_store_get(r->store, key);
    pthread_mutex_lock(&r->mu);
    r->deletes++;
    if (in)
        r->lagged++;
    rec_log(r, "delete %s@%s%s;", key, rv_of(o), "");
    pthread_mutex_unlock(&r->mu);
    cJSON_Delete(in);
}

static int rec_int(struct rec *r, const int *field)
{
    int v;

    pthread_mutex_lock(&r->mu);
    v = *field;
    pthread_mutex_unlock(&r->mu);
    return v;
}

static int rec_contains(struct rec *r, const char *what)
{
    int yes;

    pthread_mutex_lock(&r->mu);
    yes = strstr(r->log, what) != NULL;
    pthread_mutex_unlock(&r->mu);
    return yes;
}

static void rec_has(struct rec *r, const char *what)
{
    pthread_mutex_lock(&r->mu);
    if (!strstr(r->log, what)) {
        char copy[sizeof r->log];

        memcpy(copy, r->log, sizeof copy);
        pthread_mutex_unlock(&r->mu);
        fail_msg("handler log lacks \"%s\": %s", what, copy);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Polls cond every 5 ms for up to ms; returns whether it became true. */
#define WAIT_FOR(cond, ms)                                                                 \
    ({                                                                                     \
        int64_t until_ = now_ms() + (ms);                                                  \
        int ok_;                                                                           \
        while (!(ok_ = !!(cond)) && now_ms() < until_)                                     \
            usleep(5000);                                                                  \
        ok_;                                                                               \
    })

/* ---- reflector fixtures ------------------------------------------------ */

struct fix {
    struct rec rec;
    struct inf_store *store;
    struct inf_reflector *r;
    void (*transform)(cJSON *obj);  /* reflector options a test may set before start */
    int (*keep)(const cJSON *obj);
};

static struct inf_reflector *start(struct fix *f, int max_retries)
{
    struct kube_config cfg;
    struct kube_client_opts co = KUBE_CLIENT_OPTS_INIT;
    struct inf_reflector_opts o;
    struct inf_handlers h;
    struct dd_err err;
    char server[64];

    memset(&cfg, 0, sizeof cfg);
    snprintf(server, sizeof server, "http://127.0.0.1:%d", M.port);
    cfg.server = server;
    co.max_retries = max_retries;
    co.backoff_base_ms = 5;
    co.backoff_max_ms = 20;
    memset(&o, 0, sizeof o);
    o.path = "/api/v1/pods";
    o.page_size = 1;
    o.min_watch_timeout_s = 3;
    o.max_watch_timeout_s = 4;
    o.client = &co;
    o.transform = f->transform;
    o.keep = f->keep;
    h.ctx = &f->rec;
    h.on_add = on_add;
    h.on_update = on_update;
    h.on_delete = on_delete;
    f->r = inf_reflector_start(&cfg, &o, f->store, &h, &err);
    if (!f->r)
        fail_msg("inf_reflector_start: %s", err.msg);
    return f->r;
}

static int fix_setup(void **state)
{
    static struct fix f;

    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.rec.mu, NULL);
    f.store = inf_store_new();
    f.rec.store = f.store;
    mock_start();
    *state = &f;
    return 0;
}

static int64_t stop_timed(struct fix *f);

static int fix_teardown(void **state)
{
    struct fix *f = *state;

    stop_timed(f);
    mock_stop();
    inf_store_free(f->store);
    pthread_mutex_destroy(&f->rec.mu);
    return 0;
}

/* Starts against a, b, c at RV 10 and waits for the first watch. */
static struct fix *started(void **state, int max_retries)
{
    struct fix *f = *state;

    mock_set_objects("10", 3, obj("ns", "a", "5"), obj("ns", "b", "6"), obj(NULL, "n1", "7"));
    start(f, max_retries);
    assert_true(WAIT_FOR(inf_reflector_synced(f->r), 5000));
    assert_true(WAIT_FOR(mock_int(&M.watch_open), 5000));
    return f;
}

static void obj_rv_is(struct inf_store *s, const char *key, const char *rv)
{
    cJSON *o = inf_store_get(s, key);

    if (!o)
        fail_msg("%s is not in the store", key);
    assert_string_equal(rv_of(o), rv);
    cJSON_Delete(o);
}

/* ---- reflector tests ----------------------------------------------------- */

static void initial_list_pages_then_watch(void **state)
{
    struct fix *f = started(state, 0);
    char q[256], to[16];
    long t;
    int i;

    assert_int_equal(rec_int(&f->rec, &f->rec.adds), 3);
    assert_int_equal(rec_int(&f->rec, &f->rec.updates), 0);
    assert_int_equal(rec_int(&f->rec, &f->rec.lagged), 0);
    rec_has(&f->rec, "add ns/a@5;");
    rec_has(&f->rec, "add n1@7;");
    assert_int_equal(inf_store_len(f->store), 3);
    obj_rv_is(f->store, "ns/b", "6");
    /* Three pages of one item, following the continue tokens. */
    assert_int_equal(mock_int(&M.nlists), 3);
    assert_contains(M.list_query[0], "limit=1");
    assert_null(strstr(M.list_query[0], "continue="));
    assert_contains(M.list_query[1], "continue=1");
    assert_contains(M.list_query[2], "continue=2");
    for (i = 0; i < 3; i++)
        assert_null(strstr(M.list_query[i], "resourceVersion"));
    /* Then a watch from the list's version, with bookmarks and a timeout in range. */
    mock_watch_query(0, q, sizeof q);
    assert_contains(q, "resourceVersion=10");
    assert_contains(q, "allowWatchBookmarks=true");
    query_param(q, "timeoutSeconds", to, sizeof to);
    t = strtol(to, NULL, 10);
    assert_true(t >= 3 && t <= 4);
    assert_int_equal(inf_reflector_relists(f->r), 0);
    assert_int_equal(inf_reflector_watch_restarts(f->r), 0);
}

static void watch_events_update_store(void **state)
{
    struct fix *f = started(state, 0);
    uint64_t g = inf_store_generation(f->store);
    cJSON *o;

    o = obj("ns", "d", "11");
    mock_event("ADDED", o);
    cJSON_Delete(o);
    o = obj("ns", "a", "12");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    o = obj("ns", "b", "13");
    mock_event("DELETED", o);
    cJSON_Delete(o);
    assert_true(WAIT_FOR(rec_int(&f->rec, &f->rec.deletes) == 1, 5000));
    assert_int_equal(rec_int(&f->rec, &f->rec.adds), 4);
    assert_int_equal(rec_int(&f->rec, &f->rec.updates), 1);
    assert_int_equal(rec_int(&f->rec, &f->rec.lagged), 0);
    rec_has(&f->rec, "add ns/d@11;");
    rec_has(&f->rec, "update ns/a@5->12;");
    rec_has(&f->rec, "delete ns/b@13;");
    assert_int_equal(inf_store_len(f->store), 3);
    obj_rv_is(f->store, "ns/a", "12");
    obj_rv_is(f->store, "ns/d", "11");
    assert_null(inf_store_get(f->store, "ns/b"));
    assert_true(inf_store_generation(f->store) >= g + 3);
    /* ADDED for a known key is an update. */
    o = obj("ns", "d", "14");
    mock_event("ADDED", o);
    cJSON_Delete(o);
    assert_true(WAIT_FOR(rec_int(&f->rec, &f->rec.updates) == 2, 5000));
    rec_has(&f->rec, "update ns/d@11->14;");
    assert_int_equal(mock_int(&M.nlists), 3);
}

static void bookmark_then_close_resumes_without_relist(void **state)
{
    struct fix *f = started(state, 0);
    char q[256];
    cJSON *o;

    o = obj("ns", "a", "15");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    mock_push("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
              "\"metadata\":{\"resourceVersion\":\"20\"}}}");
    mock_push("CLOSE");
    assert_true(WAIT_FOR(mock_int(&M.nwatches) == 2, 5000));
    mock_watch_query(1, q, sizeof q);
    assert_contains(q, "resourceVersion=20");
    assert_contains(q, "allowWatchBookmarks=true");
    /* The bookmark changed nothing in the store, and nothing was listed again. */
    assert_int_equal(inf_store_len(f->store), 3);
    assert_int_equal(rec_int(&f->rec, &f->rec.updates), 1);
    assert_int_equal(mock_int(&M.nlists), 3);
    assert_true(WAIT_FOR(inf_reflector_watch_restarts(f->r) == 1, 5000));
    assert_int_equal(inf_reflector_relists(f->r), 0);

    /* Events on the new watch advance the version used by the one after. */
    o = obj("ns", "a", "21");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    mock_push("CLOSE");
    assert_true(WAIT_FOR(mock_int(&M.nwatches) == 3, 5000));
    mock_watch_query(2, q, sizeof q);
    assert_contains(q, "resourceVersion=21");
    assert_int_equal(mock_int(&M.nlists), 3);
}

static void gone_relists_and_reports_vanished(void **state)
{
    struct fix *f = started(state, 0);
    char q[256];
    int64_t t0;
    cJSON *o;
    int lists;

    /* Meanwhile on the server: a changed, b deleted, e created. */
    mock_set_objects("30", 3, obj("ns", "a", "25"), obj(NULL, "n1", "7"), obj("ns", "e", "28"));
    mock_push("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
              "\"status\":\"Failure\",\"message\":\"too old resource version: 10 (29)\","
              "\"reason\":\"Expired\",\"code\":410}}");
    assert_true(WAIT_FOR(inf_reflector_relists(f->r) == 1, 5000));
    assert_int_equal(mock_int(&M.nlists), 6);
    assert_null(strstr(M.list_query[3], "resourceVersion"));
    rec_has(&f->rec, "delete ns/b@6;");
    rec_has(&f->rec, "add ns/e@28;");
    rec_has(&f->rec, "update ns/a@5->25;");
    rec_has(&f->rec, "update n1@7->7;");
    assert_int_equal(rec_int(&f->rec, &f->rec.lagged), 0);
    assert_int_equal(inf_store_len(f->store), 3);
    assert_null(inf_store_get(f->store, "ns/b"));
    obj_rv_is(f->store, "ns/a", "25");
    assert_true(WAIT_FOR(mock_int(&M.nwatches) == 2, 5000));
    mock_watch_query(1, q, sizeof q);
    assert_contains(q, "resourceVersion=30");

    /*
     * That 410 came right after a list, so it was backed off.  Now a watch that
     * delivered an event ends, and the next one is refused with HTTP 410: that
     * relists at once.
     */
    mock_set_objects("40", 1, obj("ns", "a", "25"));
    assert_true(WAIT_FOR(mock_int(&M.watch_open), 5000));
    lists = mock_int(&M.nlists);
    o = obj("ns", "a", "35");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    assert_true(WAIT_FOR(rec_contains(&f->rec, "update ns/a@25->35;"), 5000));
    pthread_mutex_lock(&M.mu);
    M.watch_gone = 1;
    pthread_mutex_unlock(&M.mu);
    t0 = now_ms();
    mock_push("CLOSE");
    assert_true(WAIT_FOR(inf_reflector_relists(f->r) == 2, 5000));
    if (now_ms() - t0 > 600)
        fail_msg("relist after a 410 took %lld ms", (long long)(now_ms() - t0));
    assert_int_equal(mock_int(&M.nlists), lists + 1);
    rec_has(&f->rec, "delete n1@7;");
    rec_has(&f->rec, "delete ns/e@28;");
    assert_int_equal(inf_store_len(f->store), 1);
    assert_true(WAIT_FOR(mock_int(&M.nwatches) == 4, 5000));
    mock_watch_query(3, q, sizeof q);
    assert_contains(q, "resourceVersion=40");
}

static void list_error_retried_after_backoff(void **state)
{
    struct fix *f = *state;
    int64_t gap = 0;
    int i, n;

    pthread_mutex_lock(&M.mu);
    M.list_fail = 3;
    pthread_mutex_unlock(&M.mu);
    mock_set_objects("10", 1, obj("ns", "a", "5"));
    /* The client retries once itself; the reflector's backoff covers the rest. */
    start(f, 1);
    assert_true(WAIT_FOR(inf_reflector_synced(f->r), 8000));
    n = mock_int(&M.nlists);
    assert_true(n >= 4);
    for (i = 1; i < n && i < MAXREQ; i++)
        if (M.list_at[i] - M.list_at[i - 1] > gap)
            gap = M.list_at[i] - M.list_at[i - 1];
    /* 800 ms, jittered upwards by up to 100 %. */
    if (gap < 780 || gap > 2000)
        fail_msg("longest pause between LISTs was %lld ms, expected 800..1600",
                 (long long)gap);
    assert_int_equal(rec_int(&f->rec, &f->rec.adds), 1);
    assert_int_equal(inf_reflector_relists(f->r), 0);
}

struct stopper {
    struct inf_reflector *r;
    atomic_int done;
};

static void *stopper_main(void *arg)
{
    struct stopper *s = arg;

    inf_reflector_stop(s->r);
    atomic_store(&s->done, 1);
    return NULL;
}

/* Stops f->r and returns how long that took (ms). */
static int64_t stop_timed(struct fix *f)
{
    struct stopper s;
    pthread_t th;
    int64_t t0 = now_ms();

    if (!f->r)
        return 0;
    s.r = f->r;
    atomic_init(&s.done, 0);
    f->r = NULL;
    assert_int_equal(pthread_create(&th, NULL, stopper_main, &s), 0);
    if (!WAIT_FOR(atomic_load(&s.done), 1000)) {
        /* End the watch from the server's side so the test fails instead of hanging. */
        mock_push("CLOSE");
    }
    pthread_join(th, NULL);
    return now_ms() - t0;
}

/* Stops f->r, failing when that takes a second or more. */
static void stop_promptly(struct fix *f)
{
    int64_t took = stop_timed(f);

    if (took >= 1000)
        fail_msg("stop took %lld ms", (long long)took);
}

static void stop_interrupts_hanging_watch(void **state)
{
    struct fix *f = started(state, 0);

    usleep(100000); /* let the watch settle into waiting */
    stop_promptly(f);
}

static void stop_interrupts_backoff(void **state)
{
    struct fix *f = *state;

    pthread_mutex_lock(&M.mu);
    M.list_fail = 1000;
    pthread_mutex_unlock(&M.mu);
    start(f, -1);
    assert_true(WAIT_FOR(mock_int(&M.nlists) >= 2, 5000)); /* second list: after a backoff */
    usleep(50000);                                          /* now in the next backoff */
    stop_promptly(f);
}

/* Records how many list pages the server had served when the object was transformed. */
static void mark_pages(cJSON *o)
{
    cJSON_AddNumberToObject(o, "pages", mock_int(&M.nlists));
}

/* Unwanted: names starting with x, and resourceVersion 66. */
static int keep_some(const cJSON *o)
{
    const char *name = dd_json_str(o, "metadata", "name", NULL);

    return name && name[0] != 'x' && strcmp(rv_of(o), "66");
}

static int64_t pages_of(struct inf_store *s, const char *key)
{
    cJSON *o = inf_store_get(s, key);
    int64_t n = -1;

    if (o)
        dd_json_int(o, &n, "pages", NULL);
    cJSON_Delete(o);
    return n;
}

static void transform_per_page_and_keep(void **state)
{
    struct fix *f = *state;
    cJSON *o;

    f->transform = mark_pages;
    f->keep = keep_some;
    mock_set_objects("10", 4, obj("ns", "a", "5"), obj("ns", "x1", "6"), obj("ns", "b", "7"),
                     obj(NULL, "n1", "8"));
    start(f, 0);
    assert_true(WAIT_FOR(inf_reflector_synced(f->r), 5000));
    assert_true(WAIT_FOR(mock_int(&M.watch_open), 5000));
    /* Pages of one: each object was transformed as its page arrived, not after the list. */
    assert_int_equal(mock_int(&M.nlists), 4);
    assert_int_equal(pages_of(f->store, "ns/a"), 1);
    assert_int_equal(pages_of(f->store, "ns/b"), 3);
    assert_int_equal(pages_of(f->store, "n1"), 4);
    /* Unwanted objects are not stored and not reported. */
    assert_int_equal(inf_store_len(f->store), 3);
    assert_null(inf_store_get(f->store, "ns/x1"));
    assert_int_equal(rec_int(&f->rec, &f->rec.adds), 3);
    o = obj("ns", "x2", "11");
    mock_event("ADDED", o);
    cJSON_Delete(o);
    o = obj("ns", "x1", "12");
    mock_event("DELETED", o);
    cJSON_Delete(o);
    /* An update that makes a stored object unwanted removes it: a delete. */
    o = obj("ns", "a", "66");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    o = obj("ns", "b", "13");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    assert_true(WAIT_FOR(rec_int(&f->rec, &f->rec.updates) == 1, 5000));
    rec_has(&f->rec, "delete ns/a@66;");
    rec_has(&f->rec, "update ns/b@7->13;");
    assert_int_equal(rec_int(&f->rec, &f->rec.deletes), 1);
    assert_int_equal(rec_int(&f->rec, &f->rec.adds), 3);
    assert_int_equal(rec_int(&f->rec, &f->rec.lagged), 0);
    assert_null(inf_store_get(f->store, "ns/a"));
    assert_null(inf_store_get(f->store, "ns/x2"));
    assert_int_equal(inf_store_len(f->store), 2);
    /* Watched objects are transformed too. */
    assert_int_equal(pages_of(f->store, "ns/b"), 4);
}

/* What a cache keeps of an object: not its resourceVersion (nor a Node's heartbeat); here
 * one for all, which the recorders read. */
static void drop_rv(cJSON *o)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "metadata"), "resourceVersion",
                              cJSON_CreateString("kept"));
}

static int get_ptr(void *ctx, const cJSON *o)
{
    *(const cJSON **)ctx = o;
    return 0;
}

static const cJSON *stored(struct inf_store *s, const char *key)
{
    const cJSON *o = NULL;

    assert_int_equal(inf_store_with(s, key, get_ptr, &o), 0);
    return o;
}

static size_t count_nodes(const cJSON *o)
{
    size_t n = 0;

    for (; o; o = o->next)
        n += 1 + count_nodes(o->child);
    return n;
}

static int nodes_within(const cJSON *o, const cJSON *lo, const cJSON *hi)
{
    for (; o; o = o->next)
        if (o < lo || o >= hi || !nodes_within(o->child, lo, hi))
            return 0;
    return 1;
}

/* One block per stored object (dd_json_pack): its root first, every node after it. */
static void assert_packed(const cJSON *o)
{
    assert_non_null(o);
    assert_true(o->type & cJSON_IsReference);
    assert_true(nodes_within(o->child, o + 1, o + count_nodes(o)));
}

/* Listed and watched objects alike are stored packed, transformed first; the store frees
 * them (the ASan run: a packed object freed node by node is a bad free). */
static void stored_objects_are_packed(void **state)
{
    struct fix *f = *state;
    cJSON *o;

    f->transform = drop_rv;
    mock_set_objects("10", 1, obj("ns", "a", "5"));
    start(f, 0);
    assert_true(WAIT_FOR(inf_reflector_synced(f->r), 5000));
    assert_true(WAIT_FOR(mock_int(&M.watch_open), 5000));
    assert_packed(stored(f->store, "ns/a"));
    assert_string_equal(dd_json_str(stored(f->store, "ns/a"), "metadata", "resourceVersion",
                                    NULL), "kept");
    o = obj("ns", "b", "11");
    mock_event("ADDED", o);
    cJSON_Delete(o);
    o = obj("ns", "a", "12");
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "uid", "u1");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    assert_true(WAIT_FOR(rec_int(&f->rec, &f->rec.updates) == 1, 5000));
    assert_true(WAIT_FOR(rec_int(&f->rec, &f->rec.adds) == 2, 5000));
    assert_packed(stored(f->store, "ns/b"));
    assert_packed(stored(f->store, "ns/a"));
    assert_string_equal(dd_json_str(stored(f->store, "ns/a"), "metadata", "uid", NULL), "u1");
}

/* A MODIFIED event that changes nothing the store keeps (after the transform) leaves the
 * stored object, the very same, and is not announced: a snapshot patched from one that read
 * it may still share it, and nothing is rebuilt for it. */
static void unchanged_update_keeps_the_object(void **state)
{
    struct fix *f = *state;
    const cJSON *before;
    cJSON *o;

    f->transform = drop_rv;
    mock_set_objects("10", 1, obj("ns", "a", "5"));
    start(f, 0);
    assert_true(WAIT_FOR(inf_reflector_synced(f->r), 5000));
    assert_true(WAIT_FOR(mock_int(&M.watch_open), 5000));
    before = stored(f->store, "ns/a");
    o = obj("ns", "a", "11");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    /* Then one that changes what is kept: announced, and the object replaced. */
    o = obj("ns", "a", "12");
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "uid", "u1");
    mock_event("MODIFIED", o);
    cJSON_Delete(o);
    assert_true(WAIT_FOR(rec_int(&f->rec, &f->rec.updates) == 1, 5000));
    assert_ptr_not_equal(stored(f->store, "ns/a"), before);
    assert_int_equal(rec_int(&f->rec, &f->rec.updates), 1);
    assert_int_equal(rec_int(&f->rec, &f->rec.adds), 1);
}

static void start_rejects_bad_options(void **state)
{
    struct kube_config cfg;
    struct inf_reflector_opts o;
    struct inf_store *s = inf_store_new();
    struct dd_err err;

    (void)state;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = (char *)"http://127.0.0.1:1";
    memset(&o, 0, sizeof o);
    assert_null(inf_reflector_start(&cfg, &o, s, NULL, &err));
    assert_int_equal(err.rc, DD_EINVAL);
    o.path = "/api/v1/pods";
    cfg.server = NULL;
    assert_null(inf_reflector_start(&cfg, &o, s, NULL, &err));
    inf_store_free(s);
    inf_reflector_stop(NULL);
}

#define FIX(t) cmocka_unit_test_setup_teardown(t, fix_setup, fix_teardown)

/* Every object of several stores, borrowed; an empty set is still an array. */
static void stores_collect(void **state)
{
    struct inf_store *st[2] = { inf_store_new(), inf_store_new() };
    const cJSON **v = NULL;
    size_t n = 99, i, found = 0;
    cJSON *o;

    (void)state;
    assert_int_equal(inf_stores_collect(st, 2, &v, &n), 0);
    assert_non_null(v);
    assert_int_equal(n, 0);
    free(v);
    o = obj("x", "a", "1");
    assert_int_equal(inf_store_put(st[0], o), DD_OK);
    cJSON_Delete(o);
    o = obj("x", "b", "2");
    assert_int_equal(inf_store_put(st[1], o), DD_OK);
    cJSON_Delete(o);
    o = obj("y", "c", "3");
    assert_int_equal(inf_store_put(st[1], o), DD_OK);
    cJSON_Delete(o);
    assert_int_equal(inf_stores_collect(st, 2, &v, &n), 0);
    assert_int_equal(n, 3);
    for (i = 0; i < n; i++)
        found |= 1u << (dd_json_str(v[i], "metadata", "name", NULL)[0] - 'a');
    assert_int_equal(found, 7);
    free(v);
    /* The order they came; a replaced object keeps its place, a deleted one's goes to the
     * store's last (what lets a snapshot patch its model where a pod changed). */
    o = obj("y", "d", "4");
    assert_int_equal(inf_store_put(st[1], o), DD_OK);
    cJSON_Delete(o);
    o = obj("x", "b", "5");
    assert_int_equal(inf_store_put(st[1], o), DD_OK);
    cJSON_Delete(o);
    assert_int_equal(inf_stores_collect(st, 2, &v, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(dd_json_str(v[0], "metadata", "name", NULL), "a");
    assert_string_equal(dd_json_str(v[1], "metadata", "resourceVersion", NULL), "5");
    assert_string_equal(dd_json_str(v[2], "metadata", "name", NULL), "c");
    assert_string_equal(dd_json_str(v[3], "metadata", "name", NULL), "d");
    free(v);
    assert_int_equal(inf_store_delete(st[1], "x/b"), 1);
    assert_int_equal(inf_stores_collect(st, 2, &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(dd_json_str(v[1], "metadata", "name", NULL), "d");
    assert_string_equal(dd_json_str(v[2], "metadata", "name", NULL), "c");
    free(v);
    inf_store_free(st[0]);
    inf_store_free(st[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_forms),
        cmocka_unit_test(store_semantics),
        cmocka_unit_test(stores_collect),
        cmocka_unit_test(store_many_keys),
        cmocka_unit_test(start_rejects_bad_options),
        FIX(initial_list_pages_then_watch),
        FIX(watch_events_update_store),
        FIX(bookmark_then_close_resumes_without_relist),
        FIX(gone_relists_and_reports_vanished),
        FIX(list_error_retried_after_backoff),
        FIX(stop_interrupts_hanging_watch),
        FIX(stop_interrupts_backoff),
        FIX(transform_per_page_and_keep),
        FIX(unchanged_update_keeps_the_object),
        FIX(stored_objects_are_packed),
    };

    return cmocka_run_group_tests_name("informer", tests, NULL, NULL);
}
