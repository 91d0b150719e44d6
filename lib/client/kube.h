/*
 * kube.h - the Kubernetes API client: configuration, requests, watches.
 *
 * This is the only module that talks HTTP to an API server, and the only
 * file that calls libcurl is lib/client/kube.c.  Objects travel as cJSON trees (the
 * same form lib/model/dra.h reads), so what the client fetches can go straight into
 * a snapshot.
 *
 * Thread-safety: a struct kube_client may be used by one thread at a time
 * (it owns one connection-reusing libcurl handle).  Threads that need to talk
 * concurrently (reflectors, workers) each take their own client made from the
 * same struct kube_config with kube_client_new; connections are reused within
 * each client.
 */
#ifndef DD_KUBE_H
#define DD_KUBE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "err.h"
#include "client/execcred.h"

/* ---- configuration ------------------------------------------------------- */

struct kube_config {
    char *server;        /* "https://127.0.0.1:6443", no trailing slash */
    char *ca_pem;        /* CA bundle, PEM text (from certificate-authority-data or the file) */
    char *cert_pem;      /* client certificate, PEM; NULL when not using one */
    char *key_pem;       /* client key, PEM */
    char *token;         /* bearer token; NULL when none */
    char *token_file;    /* re-read when it changes (service-account token rotation); or NULL */
    char *namespace_;    /* the context's namespace, "default" when unset */
    char *context;       /* name of the context used; NULL in-cluster */
    int insecure;        /* insecure-skip-tls-verify: true */
    struct execcred_spec *exec; /* owned: the user's exec credential plugin, or NULL; run by
                                   the client when it needs a credential (lib/client/execcred) */
};

/*
 * Parses a kubeconfig (YAML or JSON) held in buf[0..len) and fills c from the
 * context named `context` (NULL: current-context).  Relative file paths in it
 * are resolved against dir (the kubeconfig's directory; may be NULL).  Files
 * it names (certificate-authority, client-certificate, client-key) are read
 * now; tokenFile is kept as a path.  Errors: DD_EPARSE (malformed, with
 * position), DD_ENOTFOUND (no such context/cluster/user), DD_EIO, DD_EINVAL
 * (unsupported auth such as auth-provider plugins, with the reason).  An exec
 * credential plugin is kept as a spec (c->exec), run only when a client needs a credential.
 */
enum dd_rc kube_config_parse(struct kube_config *c, const char *buf, size_t len, const char *dir,
                             const char *context, struct dd_err *err);

/*
 * Loads configuration the way kubectl does: path if given (--kubeconfig), else
 * the first file of $KUBECONFIG (colon-separated lists: first existing file),
 * else ~/.kube/config, else in-cluster.  context may be NULL.
 */
enum dd_rc kube_config_load(struct kube_config *c, const char *path, const char *context,
                            struct dd_err *err);

/*
 * In-cluster configuration: KUBERNETES_SERVICE_HOST/PORT, the service-account
 * token file (kept as token_file so rotation is picked up), CA and namespace
 * under root (NULL: /var/run/secrets/kubernetes.io/serviceaccount).
 */
enum dd_rc kube_config_in_cluster(struct kube_config *c, const char *root, struct dd_err *err);

/* Frees what c owns and zeroes it. */
void kube_config_release(struct kube_config *c);

/* ---- client -------------------------------------------------------------- */

struct kube_client_opts {
    long connect_timeout_ms; /* default 5000 */
    long request_timeout_ms; /* whole request, not watches; default 30000 */
    int max_retries;         /* on 429, 5xx and connection errors; default 5; < 0: none */
    long backoff_base_ms;    /* first retry delay, doubled each time (with jitter); default 200 */
    long backoff_max_ms;     /* default 10000; a Retry-After header overrides the computed delay */
    size_t max_body;         /* largest response body accepted; default 64 MiB */
    const char *user_agent;  /* default "dra-doctor/<version>" */
};

#define KUBE_CLIENT_OPTS_INIT { 0, 0, 0, 0, 0, 0, NULL }

struct kube_client;

/* A new client for cfg (copied: cfg need not outlive it).  opts may be NULL. */
struct kube_client *kube_client_new(const struct kube_config *cfg,
                                    const struct kube_client_opts *opts, struct dd_err *err);

void kube_client_free(struct kube_client *c);

/*
 * Releases libcurl's process-wide state.  Only for programs that must end
 * with nothing allocated (tests under a leak checker): call it once, at
 * exit, after every client is freed; no client may be made afterwards.
 */
void kube_global_cleanup(void);

/*
 * Makes the request running on c (a watch, typically) return promptly with
 * DD_EIO and st->message "interrupted"; later requests fail the same way.
 * The only function that may be called from another thread while c is busy.
 */
void kube_client_interrupt(struct kube_client *c);

/*
 * The outcome of a request that reached the server.  For errors the server's
 * Status object is decoded: reason ("NotFound", "Forbidden", "Conflict",
 * "Expired", "TooManyRequests", ...), code and message.
 */
struct kube_status {
    long http;          /* HTTP status; 0 when no response arrived */
    char reason[64];    /* Status.reason, "" when absent */
    char message[1024]; /* Status.message, or a transport error text */
};

/*
 * Builds an API path into buf: group "" means the core API (/api/v1),
 * otherwise /apis/<group>/<version>.  ns and name may be NULL; subresource
 * may be NULL.  Returns buf, or NULL when it does not fit, or when a part is
 * not a plain path segment (empty, ".", "..", or holding '/', '?', '#', '%',
 * spaces or control characters), or a name/subresource has no resource.
 */
const char *kube_path(char *buf, size_t size, const char *group, const char *version,
                      const char *resource, const char *ns, const char *name,
                      const char *subresource);

/*
 * One request with retries.  body may be NULL; content_type defaults to
 * application/json.  On a 2xx response *out (if out is not NULL) receives the
 * parsed body (free with cJSON_Delete; NULL when empty) and DD_OK is returned.
 * Otherwise: DD_ENOTFOUND for 404, DD_EINVAL for other 4xx, DD_EIO for 5xx or
 * transport failures after the retries; st (may be NULL) tells which.  Also
 * DD_ETOOBIG for a body over max_body, DD_EPARSE for a 2xx body that is not
 * JSON.
 *
 * Retries (at most max_retries, exponential backoff from backoff_base_ms to
 * backoff_max_ms with jitter; a Retry-After of N seconds, capped at 60,
 * replaces the computed delay; the sleep ends early on an interrupt):
 *   - GET, HEAD, PUT, DELETE: on 429, on 5xx except 501, and on transient
 *     transport failures (connect, timeout, reset, empty reply);
 *   - POST, PATCH (not idempotent): only when the server certainly did not
 *     act: 429, a 5xx carrying Retry-After (as client-go), or a connection
 *     that was never established.
 * The bearer token comes from token_file when set (re-read when its mtime or
 * size changed, checked at most once a second; a failed re-read keeps the
 * last good token), else from token.
 */
enum dd_rc kube_request(struct kube_client *c, const char *method, const char *path,
                        const char *content_type, const char *body, size_t len, cJSON **out,
                        struct kube_status *st, struct dd_err *err);

enum dd_rc kube_get(struct kube_client *c, const char *path, cJSON **out, struct kube_status *st,
                    struct dd_err *err);

/* GET of a body that is not JSON (/metrics, /version's siblings): *text receives it,
 * NUL-terminated (free it), *len its length.  Errors as kube_request. */
enum dd_rc kube_get_text(struct kube_client *c, const char *path, char **text, size_t *len,
                         struct kube_status *st, struct dd_err *err);

/* POST of obj to a collection path. */
enum dd_rc kube_create(struct kube_client *c, const char *path, const cJSON *obj, cJSON **out,
                       struct kube_status *st, struct dd_err *err);

enum kube_patch_type {
    KUBE_PATCH_MERGE, /* application/merge-patch+json */
    KUBE_PATCH_APPLY, /* application/apply-patch+yaml (server-side apply; JSON is valid YAML) */
    KUBE_PATCH_JSON   /* application/json-patch+json */
};

/* PATCH; for KUBE_PATCH_APPLY, field_manager is required and force sets ?force=true. */
enum dd_rc kube_patch(struct kube_client *c, const char *path, enum kube_patch_type type,
                      const char *body, const char *field_manager, int force, cJSON **out,
                      struct kube_status *st, struct dd_err *err);

enum dd_rc kube_delete(struct kube_client *c, const char *path, struct kube_status *st,
                       struct dd_err *err);

/*
 * LIST with pagination (limit per page, continue tokens).  selector may be
 * NULL or a query fragment such as "labelSelector=a%3Db&fieldSelector=...".
 * *items receives a new cJSON array of every item (kind/apiVersion filled in
 * from the list, which the API server leaves out of items; items that carry
 * their own are left alone), *rv the list's resourceVersion (free both; rv
 * may be NULL).  A continue token the server repeats, or more than 10000
 * pages, ends the list with an error rather than looping.
 */
enum dd_rc kube_list(struct kube_client *c, const char *path, const char *selector, long limit,
                     cJSON **items, char **rv, struct kube_status *st, struct dd_err *err);

/* kube_list that calls transform (may be NULL) on each item, with its kind and apiVersion,
 * as its page arrives: what a caller trims never accumulates beyond one page. */
enum dd_rc kube_list_transformed(struct kube_client *c, const char *path, const char *selector,
                                 long limit, void (*transform)(cJSON *obj), cJSON **items,
                                 char **rv, struct kube_status *st, struct dd_err *err);

/* ---- watch --------------------------------------------------------------- */

/*
 * An incremental parser for a watch stream (one JSON object per event,
 * concatenated, normally newline-separated).  It accepts the bytes in any
 * chunking and hands over each complete event.  Events larger than max_event
 * bytes are an error.  Exposed for unit tests and fuzzing.
 */
struct kube_watch_parser;

/* type: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR; object: ownership passes to the callee.
 * Return nonzero to stop the watch. */
typedef int (*kube_watch_fn)(void *ctx, const char *type, cJSON *object);

struct kube_watch_parser *kube_watch_parser_new(size_t max_event, kube_watch_fn fn, void *ctx);
/* Feeds bytes.  Returns DD_OK (with *stopped set when fn asked to stop), DD_EPARSE for a
 * malformed event, DD_ETOOBIG for an oversized one, DD_ENOMEM. */
enum dd_rc kube_watch_parser_feed(struct kube_watch_parser *p, const char *buf, size_t len,
                                  int *stopped, struct dd_err *err);
void kube_watch_parser_free(struct kube_watch_parser *p);

/*
 * Streams WATCH events of path from resource_version (allowWatchBookmarks
 * when bookmarks is set) until the server ends the watch after
 * timeout_seconds, fn asks to stop, or an error.  A 410 Gone (either as HTTP
 * status or as an ERROR event with code 410) returns DD_ENOTFOUND with
 * st->http = 410 so the caller relists.  Returns DD_OK when the server closed
 * the stream normally, or fn asked to stop.  Other ERROR events return the
 * code their Status maps to (as kube_request), with st filled from it.  A
 * watch is not retried here (the reflector owns relist/rewatch backoff); it
 * has no whole-request timeout, but TCP keepalive, and gives up (DD_EIO) when
 * no byte arrived for timeout_seconds + 60 s (3660 s when timeout_seconds is
 * 0).  Events are limited to max_body bytes each.
 */
enum dd_rc kube_watch(struct kube_client *c, const char *path, const char *selector,
                      const char *resource_version, int timeout_seconds, int bookmarks,
                      kube_watch_fn fn, void *ctx, struct kube_status *st, struct dd_err *err);

#endif
