/*
 * httpd.h - the one seam to libmicrohttpd: a small HTTP(S) server for
 * health, readiness and metrics endpoints (controller, node agent) and, later,
 * the admission webhook.
 *
 * A server has a table of routes (exact path -> handler).  Handlers run on
 * the server's threads and must be thread-safe; they fill a response and
 * never block: one whose answer must wait parks its request instead.
 *
 * TLS is libmicrohttpd's GnuTLS, reached only from httpd.c: the certificate
 * is handed per handshake from files watched for changes, so a rotated
 * certificate is served from the next handshake on and no connection is
 * dropped.  One TLS server per process (GnuTLS's callback has no closure).
 */
#ifndef DD_HTTPD_H
#define DD_HTTPD_H

#include <stddef.h>

#include "err.h"

/* A request being served: the handle a parked request is resumed by. */
struct httpd_call;

struct httpd_response {
    int status;              /* HTTP status; default 200 */
    const char *content_type;/* default "text/plain; charset=utf-8" (static) */
    char *body;              /* owned: malloc'd by the handler, freed by the server; may be NULL */
    size_t len;
    /*
     * Parking, for an answer that waits on something else (the webhook's caches): a
     * handler that sets park (to state of its own, malloc'd) answers nothing now.  The
     * server suspends the connection, so no thread waits for it, and once someone calls
     * httpd_resume(call) calls the handler again with the same method and body and with
     * that state in parked, now the handler's again: it answers (and frees it) or parks
     * again.  Should the connection end before that call, the server frees the state.
     */
    void *park;              /* out */
    void *parked;            /* in: NULL on a request's first call */
    struct httpd_call *call; /* in: this request, for httpd_resume */
};

/*
 * method: "GET", "POST"...; body: the request body (NULL when there is none,
 * as for GET), borrowed for the call, with a NUL after its len bytes.
 * Handlers decide what methods they accept (405 is theirs to send).
 */
typedef void (*httpd_handler)(void *ctx, const char *method, const char *body, size_t len,
                              struct httpd_response *resp);

struct httpd_route {
    const char *path;        /* exact match, e.g. "/healthz" */
    httpd_handler fn;
    void *ctx;
    const char *content_type; /* when set, a request with a body must have this media type
                                 (parameters such as charset ignored), else 415 */
};

struct httpd_opts {
    const char *bind;        /* IP literal to bind; default "0.0.0.0" */
    unsigned short port;     /* 0 picks a free port (see httpd_port) */
    size_t max_body;         /* 413 above; default 1 MiB */
    unsigned threads;        /* worker threads; default 2 */
    const char *cert_file;   /* TLS when both are set (PEM files; the first certificate is
                                the server's, the rest its chain) */
    const char *key_file;
    unsigned reload_ms;      /* how often the files are checked for changes; default 1000 */
    unsigned max_conns;      /* open connections at most, parked ones included (past it,
                                new ones wait in the listen queue); default 256 */
};

struct httpd;

/*
 * Starts serving routes (borrowed; must outlive the server).  The server
 * answers by itself: 404 for a path no route matches, 413 for a body over
 * max_body (refused before reading when Content-Length announces it), 415
 * for a body of another media type than the route's, 500 when a handler
 * sets a status outside 100..599.  TLS allows only 1.2 and 1.3 with AEAD
 * ciphers.  When the certificate or key file changes (a write, a rename, a
 * Secret volume's symlink swap), the pair is reloaded if it parses and
 * matches; otherwise the old pair stays in use and the reload is retried.
 * Errors: DD_EINVAL (bind not an IP literal, only one of cert/key, a second
 * TLS server), DD_EIO (a PEM file unreadable, MHD could not start: port
 * taken...), DD_EPARSE (certificate or key not PEM, or not a pair),
 * DD_ETOOBIG (PEM file over 1 MiB), DD_ENOMEM.
 */
struct httpd *httpd_start(const struct httpd_opts *opts, const struct httpd_route *routes,
                          size_t nroutes, struct dd_err *err);

/* The bound port (useful with port 0). */
unsigned short httpd_port(const struct httpd *h);

/* Certificate reloads so far, and failed reload attempts (for /metrics and tests). */
unsigned long httpd_cert_reloads(struct httpd *h);
unsigned long httpd_cert_reload_errors(struct httpd *h);

/*
 * Wakes a parked request: its handler runs again on a server thread.  Call it exactly
 * once per park, from any thread, at any time after the handler handed call out (even
 * before the handler has returned); call is not to be used afterwards.  Every parked
 * request must be resumed: httpd_stop waits for them as for any request in flight.
 */
void httpd_resume(struct httpd_call *call);

/* A plain-text answer: status and a copy of msg (500 without a body when out of memory is
 * left to the server: body NULL). */
void httpd_text(struct httpd_response *r, int status, const char *msg);

/* A handler answering 200 "ok" to anything: /healthz, alive while the process serves. */
void httpd_ok(void *ctx, const char *method, const char *body, size_t len,
              struct httpd_response *r);

/*
 * Stops accepting, finishes in-flight requests and waits for the open
 * connections to end (answers given meanwhile close their keep-alive
 * connection; idle ones are given 5 s), at most 30 s in all; then frees the
 * server.  h may be NULL.
 */
void httpd_stop(struct httpd *h);

#endif
