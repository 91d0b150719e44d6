/*
 * httpd.c - the one seam to libmicrohttpd (see httpd.h).
 *
 * MHD runs its own threads (an epoll loop, or a pool of them); we give it an
 * access handler that routes by exact path, accumulates the request body
 * under a cap, calls the route's handler and queues its response.  Stopping
 * drains: MHD_stop_daemon would drop a response whose handler is still
 * running, so httpd_stop first stops accepting, then waits for the requests
 * already started to be answered (counted from the first access-handler call
 * to MHD's completion callback), parked ones included.  A parked request's
 * connection is suspended (MHD_ALLOW_SUSPEND_RESUME; each pool thread has its
 * own ITC to be woken by MHD_resume_connection), so waiting holds no thread.
 */
#include "client/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY ((size_t)1 << 20)
#define DEFAULT_THREADS 2u
/* More pool threads than this buys nothing for health/metrics/webhook traffic. */
#define MAX_THREADS 64u
/* PEM certificate chains and keys are a few KiB; 1 MiB rejects mistakes early. */
#define PEM_MAX ((size_t)1 << 20)
/* Idle connections are dropped after this many seconds (slowloris bound). */
#define CONN_TIMEOUT_S 30u
#define DEFAULT_CONN_LIMIT 256u
#define MAX_CONN_LIMIT 16384u
/* Past the cap, a chunked body is read (and dropped) this far to answer 413; then we hang up. */
#define DISCARD_MAX ((size_t)1 << 20)
/* How long httpd_stop waits for started requests; as long as an idle connection may live. */
#define DRAIN_MS 30000L
/* ...and for connections to close once no request runs: clients that keep idle
 * connections (the API server keeps them 90 s) would otherwise hold the exit up. */
#define LINGER_MS 5000L
/* Only TLS 1.2 and 1.3 with forward-secret AEAD suites: what the API server speaks, and
 * what audits accept. */
#define TLS_PRIORITIES                                                                     \
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:" \
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"
#define DEFAULT_RELOAD_MS 1000u
#define MAX_CHAIN 8

/*
 * A certificate chain and its key, as GnuTLS hands them to a handshake.
 * Handshakes may still read a replaced pair, so pairs are kept (in a list)
 * until the server stops; certificates rotate a few times a year.
 */
struct creds {
    gnutls_pcert_st pcert[MAX_CHAIN];
    unsigned npcert;
    gnutls_privkey_t key;
    struct creds *older;
};

/* The identity of a file's content, to notice a change (inode: renames and symlink swaps). */
struct fid {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

static const char text_plain[] = "text/plain; charset=utf-8";

struct httpd {
    struct MHD_Daemon *d;
    const struct httpd_route *routes;  /* borrowed */
    size_t nroutes;
    size_t max_body;
    unsigned short port;               /* bound port, read back after start */
    char *cert_file, *key_file;        /* owned copies of the paths (TLS only) */
    struct fid cert_id, key_id;        /* of the pair in use */
    unsigned reload_ms;
    pthread_t reloader;
    int has_reloader;
    pthread_mutex_t mu;                /* guards the fields below */
    pthread_cond_t wake;               /* the reloader's sleep; signalled to stop it */
    struct creds *creds;               /* the pair handshakes get; older ones hang off it */
    unsigned long reloads, reload_errors;
    char reload_err[1024];              /* last reload failure, logged once per change */
    pthread_cond_t idle;               /* signalled when inflight drops to 0 */
    unsigned inflight;                 /* requests started and not yet completed */
    int stopping;                      /* set by httpd_stop: answers close their connection */
    int quit;                          /* the reloader stops */
    char lastlog[256];                 /* MHD's last log line, to explain a failed start */
};

/*
 * Where a request stands with parking (httpd_resume may come from another thread at any
 * time after the handler handed the call out, even before the handler returned):
 * RUNNING while the handler runs and until the connection is suspended; SUSPENDED once
 * it is; WOKEN when httpd_resume came while RUNNING (the server thread then resumes it
 * itself).  MHD_resume_connection is never called on a connection not yet suspended.
 */
enum { PARK_RUNNING, PARK_SUSPENDED, PARK_WOKEN };

/* Per-request state (MHD's con_cls). */
struct httpd_call {
    const struct httpd_route *route;   /* NULL: unknown path */
    char *buf;                         /* body so far, NUL-terminated; NULL while empty */
    size_t len, cap;
    int too_big;                       /* body exceeded max_body: discarded, 413 at the end */
    size_t discarded;                  /* bytes dropped since */
    struct MHD_Connection *conn;
    void *parked;                      /* the handler's, while parked */
    atomic_int park;                   /* PARK_* */
};

static void on_log(void *cls, const char *fmt, va_list ap)
{
    struct httpd *h = cls;
    char line[sizeof(h->lastlog)];
    size_t n;

    vsnprintf(line, sizeof(line), fmt, ap);
    n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    pthread_mutex_lock(&h->mu);
    memcpy(h->lastlog, line, n + 1);
    pthread_mutex_unlock(&h->mu);
}

static const struct httpd_route *find_route(const struct httpd *h, const char *url)
{
    size_t i;

    for (i = 0; i < h->nroutes; i++)
        if (h->routes[i].path && strcmp(h->routes[i].path, url) == 0)
            return &h->routes[i];
    return NULL;
}

/* Queues a response; takes ownership of body (malloc'd, or NULL). */
static enum MHD_Result respond(struct httpd *h, struct MHD_Connection *conn, int status,
                               const char *ctype, char *body, size_t len)
{
    struct MHD_Response *resp;
    enum MHD_Result rc;
    int stopping;

    if (body)
        resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    else
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype ? ctype : text_plain);
    pthread_mutex_lock(&h->mu);
    stopping = h->stopping;
    pthread_mutex_unlock(&h->mu);
    /* Keep-alive connections would otherwise bring new requests while we drain. */
    if (stopping)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    rc = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result respond_text(struct httpd *h, struct MHD_Connection *conn, int status,
                                    const char *text)
{
    char *body = strdup(text);

    if (!body)
        return MHD_NO;
    return respond(h, conn, status, text_plain, body, strlen(body));
}

static enum MHD_Result respond_too_big(struct httpd *h, struct MHD_Connection *conn)
{
    char msg[128];

    snprintf(msg, sizeof(msg), "request body exceeds the limit of %zu bytes\n", h->max_body);
    return respond_text(h, conn, MHD_HTTP_CONTENT_TOO_LARGE, msg);
}

/* 1 when the request announces a Content-Length above the cap. */
static int announced_too_big(const struct httpd *h, struct MHD_Connection *conn)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n;
    char *end;

    if (!cl || !*cl)
        return 0;
    errno = 0;
    n = strtoull(cl, &end, 10);
    if (errno == ERANGE)
        return 1;
    return end != cl && n > h->max_body;
}

/* Appends upload data; returns 0 when it would pass the cap (the body is then dropped). */
static int body_append(struct httpd_call *r, size_t max, const char *data, size_t n)
{
    size_t need;
    char *p;

    if (n > max || r->len > max - n)
        return 0;
    need = r->len + n + 1;
    if (need > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;

        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        if (!(p = realloc(r->buf, cap)))
            return 0;
        r->buf = p;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return 1;
}

/* 1 when the request's media type (Content-Type without parameters) is want. */
static int media_type_is(struct MHD_Connection *conn, const char *want)
{
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t n = strlen(want);

    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return !strncasecmp(ct, want, n) &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t');
}

static enum MHD_Result call_handler(struct httpd *h, struct MHD_Connection *conn,
                                    struct httpd_call *r, const char *method)
{
    struct httpd_response resp;

    for (;;) {
        int running = PARK_RUNNING;

        memset(&resp, 0, sizeof(resp));
        resp.status = 200;
        resp.parked = r->parked;
        resp.call = r;
        r->parked = NULL;
        atomic_store(&r->park, PARK_RUNNING);
        r->route->fn(r->route->ctx, method, r->len ? r->buf : NULL, r->len, &resp);
        if (!resp.park)
            break;
        free(resp.body);
        r->parked = resp.park;
        /* Woken already: no need to suspend. */
        if (atomic_load(&r->park) == PARK_WOKEN)
            continue;
        MHD_suspend_connection(conn);
        if (!atomic_compare_exchange_strong(&r->park, &running, PARK_SUSPENDED)) {
            /* Woken between the two: the connection is suspended now, so resuming is legal. */
            atomic_store(&r->park, PARK_RUNNING);
            MHD_resume_connection(conn);
        }
        return MHD_YES;
    }
    /* MHD refuses codes outside 100..999; a handler bug must not hang the client. */
    if (resp.status < 100 || resp.status > 599) {
        free(resp.body);
        return respond_text(h, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                            "handler returned an invalid HTTP status\n");
    }
    if (!resp.body)
        resp.len = 0;
    return respond(h, conn, resp.status, resp.content_type, resp.body, resp.len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct httpd *h = cls;
    struct httpd_call *r = *con_cls;

    (void)version;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        r->conn = conn;
        *con_cls = r;
        pthread_mutex_lock(&h->mu);
        h->inflight++;
        pthread_mutex_unlock(&h->mu);
        r->route = find_route(h, url);
        /* Answering before the body is read makes MHD skip it and close the connection. */
        if (!r->route)
            return respond_text(h, conn, MHD_HTTP_NOT_FOUND, "no such path\n");
        if (announced_too_big(h, conn))
            return respond_too_big(h, conn);
        if (r->route->content_type && strcmp(method, "GET") && strcmp(method, "HEAD") &&
            !media_type_is(conn, r->route->content_type)) {
            char msg[160];
            snprintf(msg, sizeof(msg), "Content-Type must be %s\n", r->route->content_type);
            return respond_text(h, conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, msg);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        /*
         * A chunked body cannot be refused up front, and MHD 0.9.75 will not
         * queue an answer mid-body: drop the rest and answer 413 at its end,
         * unless the client keeps sending well past the cap.
         */
        if (r->too_big) {
            r->discarded += *upload_data_size;
            if (r->discarded > DISCARD_MAX)
                return MHD_NO;
        } else if (!body_append(r, h->max_body, upload_data, *upload_data_size)) {
            r->too_big = 1;
            r->discarded = r->len + *upload_data_size;
            free(r->buf);
            r->buf = NULL;
            r->len = r->cap = 0;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->too_big)
        return respond_too_big(h, conn);
    return call_handler(h, conn, r, method);
}

void httpd_resume(struct httpd_call *r)
{
    struct MHD_Connection *conn = r->conn;
    int running = PARK_RUNNING;

    if (atomic_compare_exchange_strong(&r->park, &running, PARK_WOKEN))
        return; /* the server thread parking it sees this and carries on */
    /* Suspended: from here on the request (r) belongs to the server thread again. */
    atomic_store(&r->park, PARK_RUNNING);
    MHD_resume_connection(conn);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct httpd *h = cls;
    struct httpd_call *r = *con_cls;

    (void)conn;
    (void)toe;
    if (!r)
        return;
    *con_cls = NULL;
    free(r->buf);
    free(r->parked); /* resumed, but the connection failed before the handler ran again */
    free(r);
    pthread_mutex_lock(&h->mu);
    if (--h->inflight == 0)
        pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
}

static char *read_pem(const char *path, struct dd_err *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;

    if (!f) {
        dd_failf(err, DD_EIO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!(buf = malloc(PEM_MAX + 1))) {
        fclose(f);
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    n = fread(buf, 1, PEM_MAX + 1, f);
    if (ferror(f) || n == 0 || n > PEM_MAX) {
        int e = ferror(f);

        fclose(f);
        free(buf);
        if (e)
            dd_failf(err, DD_EIO, "cannot read %s", path);
        else if (n == 0)
            dd_failf(err, DD_EINVAL, "%s is empty", path);
        else
            dd_failf(err, DD_ETOOBIG, "%s is larger than %zu bytes", path, PEM_MAX);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void free_secret(char *s, size_t len)
{
    if (s) {
        explicit_bzero(s, len);
        free(s);
    }
}

/* ---- TLS: the certificate handed per handshake, reloaded on change ---------- */

static pthread_mutex_t tls_mu = PTHREAD_MUTEX_INITIALIZER; /* before any h->mu */
static struct httpd *tls_server;                           /* the one TLS server */

static int fid_of(const char *path, struct fid *id)
{
    struct stat st;

    if (stat(path, &st))
        return -1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime = st.st_mtim;
    return 0;
}

static int fid_eq(const struct fid *a, const struct fid *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void free_creds(struct creds *c)
{
    while (c) {
        struct creds *older = c->older;
        unsigned i;
        for (i = 0; i < c->npcert; i++)
            gnutls_pcert_deinit(&c->pcert[i]);
        if (c->key)
            gnutls_privkey_deinit(c->key);
        free(c);
        c = older;
    }
}

/* 1 when key is the private half of cert's public key. */
static int key_matches(gnutls_privkey_t key, gnutls_pubkey_t cert_pub)
{
    gnutls_pubkey_t pub;
    gnutls_datum_t a = { NULL, 0 }, b = { NULL, 0 };
    int same = 0;

    if (gnutls_pubkey_init(&pub) < 0)
        return 0;
    if (gnutls_pubkey_import_privkey(pub, key, 0, 0) >= 0 &&
        gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) >= 0 &&
        gnutls_pubkey_export2(cert_pub, GNUTLS_X509_FMT_DER, &b) >= 0)
        same = a.size == b.size && !memcmp(a.data, b.data, a.size);
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(pub);
    return same;
}

/* Loads a certificate chain and its key; their file identities (taken before reading, so
 * a change during the read is noticed next time) go to cid and kid. */
static struct creds *load_creds(const char *cert_file, const char *key_file, struct fid *cid,
                                struct fid *kid, struct dd_err *err)
{
    struct creds *c;
    char *cert = NULL, *key = NULL;
    size_t keylen = 0;
    gnutls_datum_t d;
    int rc;

    if (fid_of(cert_file, cid) || fid_of(key_file, kid)) {
        dd_failf(err, DD_EIO, "cannot open %s: %s", fid_of(cert_file, cid) ? cert_file : key_file,
                 strerror(errno));
        return NULL;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    if (!(cert = read_pem(cert_file, err)) || !(key = read_pem(key_file, err)))
        goto fail;
    keylen = strlen(key);
    d.data = (unsigned char *)cert;
    d.size = (unsigned)strlen(cert);
    c->npcert = MAX_CHAIN;
    if ((rc = gnutls_pcert_list_import_x509_raw(c->pcert, &c->npcert, &d, GNUTLS_X509_FMT_PEM,
                                                0)) < 0) {
        c->npcert = 0;
        dd_failf(err, DD_EPARSE, "%s: not a PEM certificate chain of at most %d: %s", cert_file,
                 MAX_CHAIN, gnutls_strerror(rc));
        goto fail;
    }
    d.data = (unsigned char *)key;
    d.size = (unsigned)keylen;
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        dd_failf(err, DD_EPARSE, "%s: not a PEM private key: %s", key_file, gnutls_strerror(rc));
        goto fail;
    }
    if (!key_matches(c->key, c->pcert[0].pubkey)) {
        dd_failf(err, DD_EPARSE, "the key in %s does not belong to the certificate in %s",
                 key_file, cert_file);
        goto fail;
    }
    free(cert);
    free_secret(key, keylen);
    return c;
fail:
    free(cert);
    free_secret(key, keylen);
    free_creds(c);
    return NULL;
}

/* GnuTLS asks for the server's certificate on every handshake. */
static int cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
                         unsigned int *npcert, gnutls_privkey_t *key)
{
    struct creds *c = NULL;

    (void)session;
    (void)req_ca_dn;
    (void)nreqs;
    (void)algos;
    (void)nalgos;
    pthread_mutex_lock(&tls_mu);
    if (tls_server) {
        pthread_mutex_lock(&tls_server->mu);
        c = tls_server->creds;
        pthread_mutex_unlock(&tls_server->mu);
    }
    pthread_mutex_unlock(&tls_mu);
    if (!c)
        return -1;
    *pcert = c->pcert;
    *npcert = c->npcert;
    *key = c->key;
    return 0;
}

static void deadline_in(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *reloader(void *arg)
{
    struct httpd *h = arg;
    struct timespec ts;

    pthread_mutex_lock(&h->mu);
    while (!h->quit) {
        struct fid c, k;
        int changed;

        deadline_in(&ts, h->reload_ms);
        while (!h->quit && pthread_cond_timedwait(&h->wake, &h->mu, &ts) != ETIMEDOUT)
            ;
        if (h->quit)
            break;
        changed = fid_of(h->cert_file, &c) || fid_of(h->key_file, &k) ||
                  !fid_eq(&c, &h->cert_id) || !fid_eq(&k, &h->key_id);
        if (changed) {
            struct dd_err err;
            struct creds *nc;

            pthread_mutex_unlock(&h->mu);
            dd_err_clear(&err);
            nc = load_creds(h->cert_file, h->key_file, &c, &k, &err);
            pthread_mutex_lock(&h->mu);
            if (nc) {
                nc->older = h->creds;
                h->creds = nc;
                h->cert_id = c;
                h->key_id = k;
                h->reloads++;
                h->reload_err[0] = '\0';
            } else {
                /* Mid-rotation the new certificate may sit beside the old key: retry. */
                h->reload_errors++;
                if (strcmp(err.msg, h->reload_err)) {
                    snprintf(h->reload_err, sizeof(h->reload_err), "%s", err.msg);
                    fprintf(stderr, "dra-doctor: keeping the current TLS certificate: %s\n",
                            err.msg);
                }
            }
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

unsigned long httpd_cert_reloads(struct httpd *h)
{
    unsigned long n;

    pthread_mutex_lock(&h->mu);
    n = h->reloads;
    pthread_mutex_unlock(&h->mu);
    return n;
}

unsigned long httpd_cert_reload_errors(struct httpd *h)
{
    unsigned long n;

    pthread_mutex_lock(&h->mu);
    n = h->reload_errors;
    pthread_mutex_unlock(&h->mu);
    return n;
}

static void httpd_free(struct httpd *h)
{
    if (h->has_reloader) {
        pthread_mutex_lock(&h->mu);
        h->quit = 1;
        pthread_cond_broadcast(&h->wake);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->reloader, NULL);
    }
    pthread_mutex_lock(&tls_mu);
    if (tls_server == h)
        tls_server = NULL;
    pthread_mutex_unlock(&tls_mu);
    free_creds(h->creds);
    free(h->cert_file);
    free(h->key_file);
    pthread_cond_destroy(&h->wake);
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

struct httpd *httpd_start(const struct httpd_opts *opts, const struct httpd_route *routes,
                          size_t nroutes, struct dd_err *err)
{
    const char *bind = opts && opts->bind ? opts->bind : "0.0.0.0";
    unsigned short port = opts ? opts->port : 0;
    unsigned threads = opts && opts->threads ? opts->threads : DEFAULT_THREADS;
    unsigned conns = opts && opts->max_conns ? opts->max_conns : DEFAULT_CONN_LIMIT;
    int tls = opts && opts->cert_file && opts->key_file;
    /*
     * poll(), not epoll: libmicrohttpd 0.9.75 removes the listen socket from its epoll set
     * both in MHD_quiesce_daemon (our thread) and in its polling thread when the connection
     * limit is reached; the two race and the loser aborts the process ("Failed to remove
     * listen FD from epoll set"), seen under ASan in test_httpd.  A health, metrics or
     * webhook server of a few hundred connections loses nothing with poll().
     */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    struct sockaddr_in6 sa6;
    struct sockaddr_in sa4;
    const struct sockaddr *sa;
    const union MHD_DaemonInfo *info;
    pthread_condattr_t ca;
    struct httpd *h;

    if (!routes && nroutes) {
        dd_failf(err, DD_EINVAL, "httpd_start: routes is NULL");
        return NULL;
    }
    if (opts && (!opts->cert_file) != (!opts->key_file)) {
        dd_failf(err, DD_EINVAL, "TLS needs both a certificate file and a key file");
        return NULL;
    }
    memset(&sa4, 0, sizeof(sa4));
    memset(&sa6, 0, sizeof(sa6));
    if (inet_pton(AF_INET, bind, &sa4.sin_addr) == 1) {
        sa4.sin_family = AF_INET;
        sa4.sin_port = htons(port);
        sa = (const struct sockaddr *)&sa4;
    } else if (inet_pton(AF_INET6, bind, &sa6.sin6_addr) == 1) {
        sa6.sin6_family = AF_INET6;
        sa6.sin6_port = htons(port);
        sa = (const struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    } else {
        dd_failf(err, DD_EINVAL, "bind address \"%s\" is not an IPv4 or IPv6 literal", bind);
        return NULL;
    }
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        dd_failf(err, DD_EINVAL, "this libmicrohttpd was built without TLS support");
        return NULL;
    }
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (conns > MAX_CONN_LIMIT)
        conns = MAX_CONN_LIMIT;
    if (!(h = calloc(1, sizeof(*h)))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_init(&ca);
    /* The drain bound must not move when the wall clock is set. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->idle, &ca);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    h->routes = routes;
    h->nroutes = nroutes;
    h->max_body = opts && opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
    h->reload_ms = opts && opts->reload_ms ? opts->reload_ms : DEFAULT_RELOAD_MS;
    if (tls) {
        int taken;

        pthread_mutex_lock(&tls_mu);
        if (!(taken = tls_server != NULL))
            tls_server = h;
        pthread_mutex_unlock(&tls_mu);
        if (taken) {
            dd_failf(err, DD_EINVAL, "only one TLS server per process");
            httpd_free(h);
            return NULL;
        }
        if (!(h->cert_file = strdup(opts->cert_file)) || !(h->key_file = strdup(opts->key_file))) {
            dd_failf(err, DD_ENOMEM, "out of memory");
            httpd_free(h);
            return NULL;
        }
        if (!(h->creds = load_creds(h->cert_file, h->key_file, &h->cert_id, &h->key_id, err))) {
            httpd_free(h);
            return NULL;
        }
        flags |= MHD_USE_TLS;
    }
    {
        struct MHD_OptionItem o[10];
        size_t k = 0;

        o[k++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *)sa };
        o[k++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S, NULL };
        o[k++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, conns, NULL };
        o[k++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h };
        o[k++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_log, h };
        if (threads > 1)
            o[k++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, threads, NULL };
        if (tls) {
            o[k++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                              (void *)cert_callback };
            o[k++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
                                              (void *)TLS_PRIORITIES };
        }
        o[k++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
        h->d = MHD_start_daemon(flags, port, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, o,
                                MHD_OPTION_END);
    }
    if (!h->d) {
        dd_failf(err, DD_EIO, "cannot start the HTTP%s server on %s port %u%s%s",
                 tls ? "S" : "", bind, (unsigned)port, h->lastlog[0] ? ": " : "", h->lastlog);
        httpd_free(h);
        return NULL;
    }
    info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info && info->port ? info->port : port;
    if (tls && !(h->has_reloader = !pthread_create(&h->reloader, NULL, reloader, h)))
        fprintf(stderr, "dra-doctor: cannot start the certificate reloader; rotation needs a "
                        "restart\n");
    return h;
}

unsigned short httpd_port(const struct httpd *h)
{
    return h ? h->port : 0;
}

/* Open connections (0 when MHD cannot say). */
static unsigned connections(struct httpd *h)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

    return i ? i->num_connections : 0;
}

void httpd_stop(struct httpd *h)
{
    struct timespec deadline, linger, now;
    MHD_socket lsock;

    if (!h)
        return;
    lsock = MHD_quiesce_daemon(h->d);
    deadline_in(&deadline, DRAIN_MS);
    deadline_in(&linger, LINGER_MS);
    /*
     * Answers from now on close their connection, so a client sends its next
     * request elsewhere; wait for the started requests and then, for up to
     * LINGER_MS, for the connections themselves, or a client that sent a
     * request on an idle keep-alive connection just now would see it closed
     * unanswered.
     */
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    for (;;) {
        while (h->inflight > 0)
            if (pthread_cond_timedwait(&h->idle, &h->mu, &deadline) == ETIMEDOUT)
                break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (h->inflight == 0 && connections(h) == 0)
            break;
        if (h->inflight == 0 && (now.tv_sec > linger.tv_sec ||
                                 (now.tv_sec == linger.tv_sec && now.tv_nsec >= linger.tv_nsec)))
            break;
        if (now.tv_sec > deadline.tv_sec ||
            (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))
            break;
        pthread_mutex_unlock(&h->mu);
        usleep(10000);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    MHD_stop_daemon(h->d);
    /* MHD's threads may poll the quiesced socket until they are stopped: close it only now. */
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    httpd_free(h);
}

void httpd_text(struct httpd_response *r, int status, const char *msg)
{
    r->status = status;
    r->body = strdup(msg);
    r->len = r->body ? strlen(r->body) : 0;
}

void httpd_ok(void *ctx, const char *method, const char *body, size_t len,
              struct httpd_response *r)
{
    (void)ctx;
    (void)method;
    (void)body;
    (void)len;
    httpd_text(r, 200, "ok\n");
}
