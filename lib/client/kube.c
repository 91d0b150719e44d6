/*
 * kube.c - the Kubernetes API client: kubeconfig and in-cluster
 * configuration, requests with retries, LIST pagination and WATCH streams.
 *
 * This is the one seam to libcurl: nothing else in the tree includes
 * <curl/curl.h>.  Each client owns a multi handle holding one easy handle;
 * both are kept between requests, so libcurl's connection cache reuses the
 * connection.  Transfers are driven through the multi handle (rather than
 * curl_easy_perform) because curl_multi_wakeup is the one libcurl call that
 * may be made from another thread: kube_client_interrupt uses it to end a
 * blocked watch, or a retry sleep, at once instead of at the next progress
 * tick.
 */
#include "client/kube.h"
#include "formats/yaml.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef DD_VERSION
#define DD_VERSION "0.0.0"
#endif

/* A kubeconfig is a few KiB; 16 MiB leaves room for embedded CA bundles. */
#define KUBECONFIG_MAX ((size_t)16 << 20)
/* Files a kubeconfig names: PEM bundles (a full system bundle is ~200 KiB). */
#define PEM_FILE_MAX ((size_t)4 << 20)
/* Service-account tokens are ~1 KiB JWTs; 64 KiB is generous. */
#define TOKEN_MAX ((size_t)64 << 10)
/* The body of an error response is only read for its Status message. */
#define ERR_BODY_MAX ((size_t)64 << 10)
/* API paths plus query strings; continue tokens are a few hundred bytes. */
#define URL_MAX 16384
/* LIST pages followed at most: 10000 pages of 500 is 5 million objects. */
#define LIST_MAX_PAGES 10000
/* A server asking for a longer pause than this is treated as asking for this. */
#define RETRY_AFTER_MAX_S 60
/* Interruptible sleeps and transfer polls wake at least this often. */
#define POLL_SLICE_MS 1000
#define SA_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- small helpers ------------------------------------------------------- */


static char *xstrndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A growable byte buffer that refuses to exceed max; always NUL-terminated when non-empty. */
struct kbuf {
    char *p;
    size_t n, cap; /* n < cap whenever p != NULL (room for the NUL) */
    size_t max;    /* largest n accepted */
};

/* Returns 0, or -1 when n would exceed max (nothing appended) or on ENOMEM. */
static int kbuf_add(struct kbuf *b, const char *s, size_t n)
{
    size_t want, ncap;
    char *np;

    if (n > b->max || b->n > b->max - n)
        return -1;
    want = b->n + n + 1;
    if (want > b->cap) {
        ncap = b->cap ? b->cap : 256;
        while (ncap < want)
            ncap = ncap > SIZE_MAX / 2 ? want : ncap * 2;
        np = realloc(b->p, ncap);
        if (!np)
            return -1;
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int kbuf_str(struct kbuf *b, const char *s)
{
    return kbuf_add(b, s, strlen(s));
}

static void kbuf_release(struct kbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Percent-encodes everything but RFC 3986 unreserved characters. */
static int kbuf_add_escaped(struct kbuf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char e[3];

    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            if (kbuf_add(b, s, 1))
                return -1;
            continue;
        }
        e[0] = '%';
        e[1] = hex[ch >> 4];
        e[2] = hex[ch & 15];
        if (kbuf_add(b, e, 3))
            return -1;
    }
    return 0;
}

/* Reads a whole file (at most cap bytes) into a new NUL-terminated buffer. */
static enum dd_rc read_file_capped(const char *path, size_t cap, char **out, size_t *outlen,
                                   struct dd_err *err)
{
    struct kbuf b = { NULL, 0, 0, cap };
    char chunk[8192];
    enum dd_rc rc = DD_EIO;
    ssize_t r;
    int fd;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dd_failf(err, errno == ENOENT ? DD_ENOTFOUND : DD_EIO, "%s: %s", path,
                        strerror(errno));
    for (;;) {
        r = read(fd, chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            dd_failf(err, DD_EIO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        if (kbuf_add(&b, chunk, (size_t)r)) {
            rc = b.n + (size_t)r > cap ? DD_ETOOBIG : DD_ENOMEM;
            dd_failf(err, rc, "%s: %s", path,
                     rc == DD_ETOOBIG ? "file is too large" : "out of memory");
            goto out;
        }
    }
    if (!b.p && kbuf_add(&b, "", 0)) {
        rc = dd_failf(err, DD_ENOMEM, "out of memory");
        goto out;
    }
    *out = b.p;
    if (outlen)
        *outlen = b.n;
    b.p = NULL;
    rc = DD_OK;
out:
    close(fd);
    kbuf_release(&b);
    return rc;
}

/* Strips trailing whitespace (token and namespace files end with a newline). */
static void rtrim(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* A bearer token goes into a header line: control characters would split it. */
static int token_ok(const char *t)
{
    for (; *t; t++)
        if ((unsigned char)*t < 0x20 || *t == 0x7f)
            return 0;
    return 1;
}

/* ---- base64 -------------------------------------------------------------- */

static int b64_val(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

/*
 * Decodes standard padded base64 (RFC 4648 section 4), which is what Go's
 * encoding/json expects for the kubeconfig's []byte fields; like Go, line
 * breaks are skipped.  Returns a new NUL-terminated buffer, or NULL with
 * *why and *at (offset into in) describing the first bad byte; *why is NULL
 * when memory ran out.
 */
static char *b64_decode(const char *in, size_t len, size_t *outlen, const char **why, size_t *at)
{
    char *out = malloc(len / 4 * 3 + 4);
    size_t i, n = 0, q = 0, pad = 0;
    unsigned long acc = 0;
    int v;

    *why = NULL;
    *at = 0;
    if (!out)
        return NULL;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == '\r' || ch == '\n')
            continue;
        if (ch == '=') {
            if (q < 2) {
                *why = "misplaced '=' padding";
                goto bad;
            }
            pad++;
            v = 0;
        } else {
            if (pad) {
                *why = "data after '=' padding";
                goto bad;
            }
            v = b64_val(ch);
            if (v < 0) {
                *why = "invalid base64 character";
                goto bad;
            }
        }
        acc = acc << 6 | (unsigned long)v;
        if (++q == 4) {
            out[n++] = (char)(acc >> 16 & 0xff);
            if (pad < 2)
                out[n++] = (char)(acc >> 8 & 0xff);
            if (pad < 1)
                out[n++] = (char)(acc & 0xff);
            q = 0;
            acc = 0;
            if (pad)
                pad = 3; /* any later symbol is "data after padding" */
        }
    }
    if (q != 0) {
        *why = "truncated base64 (length is not a multiple of 4)";
        i = len;
        goto bad;
    }
    out[n] = '\0';
    *outlen = n;
    return out;
bad:
    *at = i;
    free(out);
    return NULL;
}

/* ---- configuration ------------------------------------------------------- */

/* The parsed kubeconfig and what is needed to point at its nodes in messages. */
struct kc_doc {
    const char *name;      /* shown in messages: the file, or "kubeconfig" */
    const char *dir;       /* for relative paths; may be NULL */
    cJSON *root;           /* the first non-empty document */
    struct ydoc_pos *pos;  /* pos[0..npos): positions of root's nodes */
    size_t npos;
    struct dd_err perr;    /* the first syntax error */
};

static enum dd_rc kc_on_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    struct kc_doc *d = ctx;

    /* kubectl reads one document; later ones are ignored rather than merged. */
    if (!root || d->root) {
        cJSON_Delete(root);
        return DD_OK;
    }
    d->pos = malloc((npos ? npos : 1) * sizeof(*pos));
    if (!d->pos) {
        cJSON_Delete(root);
        return DD_ENOMEM;
    }
    memcpy(d->pos, pos, npos * sizeof(*pos));
    d->npos = npos;
    d->root = root;
    return DD_OK;
}

static enum dd_rc kc_on_error(void *ctx, const struct dd_err *e)
{
    struct kc_doc *d = ctx;

    d->perr = *e;
    return e->rc == DD_OK ? DD_EPARSE : e->rc;
}

/* Linear: only used to place an error message. */
static void kc_pos(const struct kc_doc *d, const cJSON *node, int *line, int *col)
{
    size_t i;

    *line = *col = 0;
    for (i = 0; node && i < d->npos; i++)
        if (d->pos[i].node == node) {
            *line = d->pos[i].line;
            *col = d->pos[i].col;
            return;
        }
}

static enum dd_rc kc_fail(const struct kc_doc *d, const cJSON *node, struct dd_err *err,
                          enum dd_rc rc, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum dd_rc kc_fail(const struct kc_doc *d, const cJSON *node, struct dd_err *err,
                          enum dd_rc rc, const char *fmt, ...)
{
    char text[DD_ERR_MSG_MAX - 64];
    int line, col;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    kc_pos(d, node, &line, &col);
    if (line)
        return dd_failf_at(err, rc, line, col, "%s:%d:%d: %s", d->name, line, col, text);
    return dd_failf(err, rc, "%s: %s", d->name, text);
}

/* OUT: *out borrows the string at key, or NULL when the key is absent or null. */
static enum dd_rc kc_str(const struct kc_doc *d, const cJSON *obj, const char *key,
                         const char **out, struct dd_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return DD_OK;
    if (!cJSON_IsString(v))
        return kc_fail(d, v, err, DD_EPARSE, "%s must be a string", key);
    *out = v->valuestring;
    return DD_OK;
}

/* The mapping at key (absent or null: NULL, fine unless the caller minds). */
static enum dd_rc kc_obj(const struct kc_doc *d, const cJSON *obj, const char *key,
                         const cJSON **out, struct dd_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return DD_OK;
    if (!cJSON_IsObject(v))
        return kc_fail(d, v, err, DD_EPARSE, "%s must be a mapping", key);
    *out = v;
    return DD_OK;
}

/*
 * Finds the entry called name in the list at d->root[list] (clusters, users,
 * contexts: each item { name: ..., <field>: {...} }) and returns its <field>
 * mapping in *out.  DD_ENOTFOUND when no entry has that name.
 */
static enum dd_rc kc_named(const struct kc_doc *d, const char *list, const char *field,
                           const char *name, const cJSON **out, struct dd_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(d->root, list), *item;
    const char *iname;
    enum dd_rc rc;

    *out = NULL;
    if (arr && !cJSON_IsNull(arr) && !cJSON_IsArray(arr))
        return kc_fail(d, arr, err, DD_EPARSE, "%s must be a list", list);
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsObject(item))
            return kc_fail(d, item, err, DD_EPARSE, "each item of %s must be a mapping", list);
        if ((rc = kc_str(d, item, "name", &iname, err)) != DD_OK)
            return rc;
        if (!iname || strcmp(iname, name) != 0)
            continue;
        if ((rc = kc_obj(d, item, field, out, err)) != DD_OK)
            return rc;
        if (!*out)
            return kc_fail(d, item, err, DD_EPARSE, "%s entry \"%s\" has no %s mapping", list,
                           name, field);
        return DD_OK;
    }
    return kc_fail(d, arr, err, DD_ENOTFOUND, "no %s named \"%s\" in %s", field, name, list);
}

/* A path from the kubeconfig, made absolute against its directory. */
static char *kc_resolve(const struct kc_doc *d, const char *path)
{
    struct kbuf b = { NULL, 0, 0, PATH_MAX };

    if (path[0] == '/' || !d->dir || !d->dir[0])
        return strdup(path);
    if (kbuf_str(&b, d->dir) || kbuf_str(&b, "/") || kbuf_str(&b, path)) {
        kbuf_release(&b);
        return NULL;
    }
    return b.p;
}

/*
 * PEM text for one credential: <key>-data (base64) wins over <key> (a file),
 * as in client-go.  *out: a new string, or NULL when neither is set.
 */
static enum dd_rc kc_pem(const struct kc_doc *d, const cJSON *obj, const char *key,
                         char **out, struct dd_err *err)
{
    char data_key[64];
    const char *data, *file, *why;
    const cJSON *node;
    char *path = NULL, *pem = NULL;
    size_t n = 0, at;
    enum dd_rc rc;

    *out = NULL;
    snprintf(data_key, sizeof(data_key), "%s-data", key);
    if ((rc = kc_str(d, obj, data_key, &data, err)) != DD_OK ||
        (rc = kc_str(d, obj, key, &file, err)) != DD_OK)
        return rc;
    if (data && data[0]) {
        node = cJSON_GetObjectItemCaseSensitive(obj, data_key);
        pem = b64_decode(data, strlen(data), &n, &why, &at);
        if (!pem && !why)
            return dd_failf(err, DD_ENOMEM, "out of memory");
        if (!pem)
            return kc_fail(d, node, err, DD_EPARSE, "%s: %s at offset %zu", data_key, why, at);
        if (strlen(pem) != n) {
            free(pem);
            return kc_fail(d, node, err, DD_EPARSE, "%s: decoded data is not PEM text", data_key);
        }
        *out = pem;
        return DD_OK;
    }
    if (!file || !file[0])
        return DD_OK;
    node = cJSON_GetObjectItemCaseSensitive(obj, key);
    path = kc_resolve(d, file);
    if (!path)
        return dd_failf(err, DD_ENOMEM, "out of memory");
    rc = read_file_capped(path, PEM_FILE_MAX, &pem, &n, err);
    if (rc == DD_OK && strlen(pem) != n)
        rc = dd_failf(err, DD_EPARSE, "%s: not PEM text", path);
    if (rc != DD_OK) {
        char msg[DD_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
        free(pem);
        free(path);
        return kc_fail(d, node, err, rc == DD_ENOTFOUND ? DD_EIO : rc, "%s: %s", key, msg);
    }
    free(path);
    *out = pem;
    return DD_OK;
}

/* Credentials dra-doctor cannot honour are refused rather than silently ignored. */
static enum dd_rc kc_unsupported_user(const struct kc_doc *d, const cJSON *user, const char *name,
                                      struct dd_err *err)
{
    static const struct {
        const char *key, *why;
    } no[] = {
        { "auth-provider", "an auth-provider plugin, which dra-doctor does not support" },
        { "username", "basic authentication, which dra-doctor does not support" },
        { "password", "basic authentication, which dra-doctor does not support" },
        { "as", "impersonation, which dra-doctor does not support" },
        { "as-user-extra", "impersonation, which dra-doctor does not support" },
        { "as-groups", "impersonation, which dra-doctor does not support" },
        { "as-uid", "impersonation, which dra-doctor does not support" },
    };
    const cJSON *v;
    size_t i;

    for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        v = cJSON_GetObjectItemCaseSensitive(user, no[i].key);
        if (v && !cJSON_IsNull(v))
            return kc_fail(d, v, err, DD_EINVAL,
                           "user \"%s\" uses %s (%s); use a token, tokenFile or client "
                           "certificate instead",
                           name, no[i].why, no[i].key);
    }
    return DD_OK;
}

static enum dd_rc kc_cluster(const struct kc_doc *d, const cJSON *cl, const char *name,
                             struct kube_config *c, struct dd_err *err)
{
    const cJSON *v;
    const char *server;
    size_t n;
    enum dd_rc rc;

    if ((rc = kc_str(d, cl, "server", &server, err)) != DD_OK)
        return rc;
    if (!server || !server[0])
        return kc_fail(d, cl, err, DD_EINVAL, "cluster \"%s\" has no server", name);
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return kc_fail(d, cJSON_GetObjectItemCaseSensitive(cl, "server"), err, DD_EINVAL,
                       "cluster \"%s\": server \"%s\" is not an http(s) URL", name, server);
    if ((v = cJSON_GetObjectItemCaseSensitive(cl, "tls-server-name")) && !cJSON_IsNull(v))
        return kc_fail(d, v, err, DD_EINVAL,
                       "cluster \"%s\" sets tls-server-name, which dra-doctor does not support",
                       name);
    if ((v = cJSON_GetObjectItemCaseSensitive(cl, "proxy-url")) && !cJSON_IsNull(v))
        return kc_fail(d, v, err, DD_EINVAL,
                       "cluster \"%s\" sets proxy-url, which dra-doctor does not support", name);
    v = cJSON_GetObjectItemCaseSensitive(cl, "insecure-skip-tls-verify");
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
        return kc_fail(d, v, err, DD_EPARSE, "insecure-skip-tls-verify must be true or false");
    c->insecure = cJSON_IsTrue(v);
    n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    if (n <= strlen(server[4] == 's' ? "https://" : "http://"))
        return kc_fail(d, cJSON_GetObjectItemCaseSensitive(cl, "server"), err, DD_EINVAL,
                       "cluster \"%s\": server \"%s\" names no host", name, server);
    c->server = xstrndup(server, n);
    if (!c->server)
        return dd_failf(err, DD_ENOMEM, "out of memory");
    return kc_pem(d, cl, "certificate-authority", &c->ca_pem, err);
}

/* A list of strings at key (absent: none), as a new NULL-terminated vector of NAME=value
 * pairs (env: items {name, value}) or of the strings themselves (argv, after first). */
static enum dd_rc kc_strv(const struct kc_doc *d, const cJSON *obj, const char *key, int env,
                          const char *first, char ***out, struct dd_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key), *it;
    size_t n = 0, k = 0;
    char **v;

    *out = NULL;
    if (arr && !cJSON_IsNull(arr) && !cJSON_IsArray(arr))
        return kc_fail(d, arr, err, DD_EPARSE, "exec %s must be a list", key);
    n = (size_t)cJSON_GetArraySize(arr);
    if (!(v = calloc(n + 2, sizeof(*v))))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    *out = v;
    if (first && !(v[k++] = strdup(first)))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    cJSON_ArrayForEach(it, arr) {
        const char *name, *value;
        enum dd_rc rc;
        if (!env) {
            if (!cJSON_IsString(it))
                return kc_fail(d, it, err, DD_EPARSE, "each item of exec %s must be a string",
                               key);
            if (!(v[k++] = strdup(it->valuestring)))
                return dd_failf(err, DD_ENOMEM, "out of memory");
            continue;
        }
        if (!cJSON_IsObject(it))
            return kc_fail(d, it, err, DD_EPARSE, "each item of exec env must be a mapping with "
                           "name and value");
        if ((rc = kc_str(d, it, "name", &name, err)) != DD_OK ||
            (rc = kc_str(d, it, "value", &value, err)) != DD_OK)
            return rc;
        if (!name || !name[0] || strchr(name, '='))
            return kc_fail(d, it, err, DD_EINVAL, "exec env item has no usable name");
        size_t len = strlen(name) + strlen(value ? value : "") + 2;
        if (!(v[k] = malloc(len)))
            return dd_failf(err, DD_ENOMEM, "out of memory");
        snprintf(v[k++], len, "%s=%s", name, value ? value : "");
    }
    return DD_OK;
}

/* users[].user.exec, validated as client-go's clientcmd does. */
static enum dd_rc kc_exec(const struct kc_doc *d, const cJSON *ex, const char *name,
                          struct kube_config *c, struct dd_err *err)
{
    const char *av, *cmd, *hint, *mode;
    const cJSON *pci;
    struct execcred_spec *s;
    enum dd_rc rc;

    if (!cJSON_IsObject(ex))
        return kc_fail(d, ex, err, DD_EPARSE, "user \"%s\": exec must be a mapping", name);
    if ((rc = kc_str(d, ex, "apiVersion", &av, err)) != DD_OK ||
        (rc = kc_str(d, ex, "command", &cmd, err)) != DD_OK ||
        (rc = kc_str(d, ex, "installHint", &hint, err)) != DD_OK ||
        (rc = kc_str(d, ex, "interactiveMode", &mode, err)) != DD_OK)
        return rc;
    if (!cmd || !cmd[0])
        return kc_fail(d, ex, err, DD_EINVAL, "user \"%s\": exec has no command", name);
    if (!av || (strcmp(av, "client.authentication.k8s.io/v1") != 0 &&
                strcmp(av, "client.authentication.k8s.io/v1beta1") != 0))
        return kc_fail(d, ex, err, DD_EINVAL, "user \"%s\": exec apiVersion \"%s\" is not "
                       "client.authentication.k8s.io/v1 or v1beta1", name, av ? av : "");
    /* v1 made interactiveMode required; v1beta1 defaults it to IfAvailable. */
    if (!mode && !strcmp(av, "client.authentication.k8s.io/v1"))
        return kc_fail(d, ex, err, DD_EINVAL, "user \"%s\": exec interactiveMode must be set "
                       "(Never, IfAvailable or Always) for apiVersion %s", name, av);
    if (mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable") && strcmp(mode, "Always"))
        return kc_fail(d, cJSON_GetObjectItemCaseSensitive(ex, "interactiveMode"), err, DD_EINVAL,
                       "user \"%s\": exec interactiveMode \"%s\" is not Never, IfAvailable or "
                       "Always", name, mode);
    pci = cJSON_GetObjectItemCaseSensitive(ex, "provideClusterInfo");
    if (pci && !cJSON_IsNull(pci) && !cJSON_IsBool(pci))
        return kc_fail(d, pci, err, DD_EPARSE, "provideClusterInfo must be true or false");
    if (!(s = calloc(1, sizeof(*s))))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    c->exec = s;
    s->provide_cluster_info = cJSON_IsTrue(pci);
    s->interactive_always = mode && !strcmp(mode, "Always");
    /* As clientcmd resolves it: a command with a '/' is a path relative to the kubeconfig,
     * a bare name is looked up in PATH. */
    s->command = strchr(cmd, '/') ? kc_resolve(d, cmd) : strdup(cmd);
    if (!s->command || !(s->api_version = strdup(av)) || (hint && !(s->install_hint = strdup(hint))))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    if ((rc = kc_strv(d, ex, "args", 0, s->command, &s->argv, err)) != DD_OK)
        return rc;
    return kc_strv(d, ex, "env", 1, NULL, &s->env, err);
}

static enum dd_rc kc_user(const struct kc_doc *d, const cJSON *u, const char *name,
                          struct kube_config *c, struct dd_err *err)
{
    const char *token, *token_file;
    const cJSON *ex;
    enum dd_rc rc;

    if ((rc = kc_unsupported_user(d, u, name, err)) != DD_OK ||
        (rc = kc_str(d, u, "token", &token, err)) != DD_OK ||
        (rc = kc_str(d, u, "tokenFile", &token_file, err)) != DD_OK ||
        (rc = kc_pem(d, u, "client-certificate", &c->cert_pem, err)) != DD_OK ||
        (rc = kc_pem(d, u, "client-key", &c->key_pem, err)) != DD_OK)
        return rc;
    if (!c->cert_pem != !c->key_pem)
        return kc_fail(d, u, err, DD_EINVAL,
                       "user \"%s\" has a client certificate without a key, or a key without "
                       "a certificate", name);
    if (token && token[0]) {
        if (!token_ok(token))
            return kc_fail(d, cJSON_GetObjectItemCaseSensitive(u, "token"), err, DD_EINVAL,
                           "user \"%s\": token contains control characters", name);
        if (!(c->token = strdup(token)))
            return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    if (token_file && token_file[0] && !(c->token_file = kc_resolve(d, token_file)))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    ex = cJSON_GetObjectItemCaseSensitive(u, "exec");
    return ex && !cJSON_IsNull(ex) ? kc_exec(d, ex, name, c, err) : DD_OK;
}

static enum dd_rc kc_build(const struct kc_doc *d, const char *context, struct kube_config *c,
                           struct dd_err *err)
{
    const cJSON *ctx, *cl, *u = NULL;
    const char *cluster, *user, *ns;
    enum dd_rc rc;

    if (!cJSON_IsObject(d->root))
        return kc_fail(d, d->root, err, DD_EPARSE, "a kubeconfig must be a mapping");
    if (!context || !context[0]) {
        if ((rc = kc_str(d, d->root, "current-context", &context, err)) != DD_OK)
            return rc;
        if (!context || !context[0])
            return kc_fail(d, NULL, err, DD_ENOTFOUND,
                           "no context given and current-context is not set");
    }
    if ((rc = kc_named(d, "contexts", "context", context, &ctx, err)) != DD_OK ||
        (rc = kc_str(d, ctx, "cluster", &cluster, err)) != DD_OK ||
        (rc = kc_str(d, ctx, "user", &user, err)) != DD_OK ||
        (rc = kc_str(d, ctx, "namespace", &ns, err)) != DD_OK)
        return rc;
    if (!cluster || !cluster[0])
        return kc_fail(d, ctx, err, DD_ENOTFOUND, "context \"%s\" names no cluster", context);
    if ((rc = kc_named(d, "clusters", "cluster", cluster, &cl, err)) != DD_OK)
        return rc;
    /* A context without a user is anonymous access, which is legitimate. */
    if (user && user[0] && (rc = kc_named(d, "users", "user", user, &u, err)) != DD_OK)
        return rc;
    if (!(c->context = strdup(context)) || !(c->namespace_ = strdup(ns && ns[0] ? ns : "default")))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    if ((rc = kc_cluster(d, cl, cluster, c, err)) != DD_OK)
        return rc;
    return u ? kc_user(d, u, user, c, err) : DD_OK;
}

static enum dd_rc config_parse_named(struct kube_config *c, const char *buf, size_t len,
                                     const char *dir, const char *context, const char *name,
                                     struct dd_err *err)
{
    /* A kubeconfig is shallow; aliases are legal YAML but have no business here. */
    struct ydoc_limits lim = { 32, 16, 1000 };
    struct kc_doc d;
    struct ydoc_sink sink = { &d, kc_on_doc, kc_on_error, NULL, NULL };
    enum dd_rc rc;

    memset(c, 0, sizeof(*c));
    memset(&d, 0, sizeof(d));
    d.name = name;
    d.dir = dir;
    if (!buf && len)
        return dd_failf(err, DD_EINVAL, "kube_config_parse: no buffer");
    if (len > KUBECONFIG_MAX) {
        rc = dd_failf(err, DD_ETOOBIG, "%s: larger than %zu bytes", name, KUBECONFIG_MAX);
        goto out;
    }
    rc = ydoc_parse_stream(buf ? buf : "", len, &lim, &sink);
    if (rc != DD_OK) {
        if (d.perr.msg[0])
            rc = dd_failf_at(err, rc, d.perr.line, d.perr.col, "%s:%d:%d: %s", name,
                             d.perr.line, d.perr.col, d.perr.msg);
        else
            dd_failf(err, rc, "%s: %s", name, dd_strerror(rc));
        goto out;
    }
    if (!d.root) {
        rc = dd_failf(err, DD_ENOTFOUND, "%s: empty kubeconfig", name);
        goto out;
    }
    rc = kc_build(&d, context, c, err);
out:
    if (rc != DD_OK)
        kube_config_release(c);
    cJSON_Delete(d.root);
    free(d.pos);
    return rc;
}

enum dd_rc kube_config_parse(struct kube_config *c, const char *buf, size_t len, const char *dir,
                             const char *context, struct dd_err *err)
{
    return config_parse_named(c, buf, len, dir, context, "kubeconfig", err);
}

void kube_config_release(struct kube_config *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->token);
    free(c->token_file);
    free(c->namespace_);
    free(c->context);
    execcred_spec_release(c->exec);
    free(c->exec);
    memset(c, 0, sizeof(*c));
}

static enum dd_rc config_load_file(struct kube_config *c, const char *path, const char *context,
                                   struct dd_err *err)
{
    const char *slash = strrchr(path, '/');
    char *buf = NULL, *dir = NULL;
    size_t len = 0;
    enum dd_rc rc;

    memset(c, 0, sizeof(*c));
    rc = read_file_capped(path, KUBECONFIG_MAX, &buf, &len, err);
    if (rc != DD_OK)
        return rc;
    if (slash) {
        dir = xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
        if (!dir) {
            free(buf);
            return dd_failf(err, DD_ENOMEM, "out of memory");
        }
    }
    rc = config_parse_named(c, buf, len, dir, context, path, err);
    free(dir);
    free(buf);
    return rc;
}

static int is_file(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

enum dd_rc kube_config_load(struct kube_config *c, const char *path, const char *context,
                            struct dd_err *err)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME"), *p, *end;
    struct kbuf b = { NULL, 0, 0, PATH_MAX };
    enum dd_rc rc;

    memset(c, 0, sizeof(*c));
    if (path && path[0])
        return config_load_file(c, path, context, err);
    /* kubectl merges every file of the list; we take the first that exists. */
    for (p = env; p && *p; p = *end ? end + 1 : end) {
        end = strchr(p, ':');
        if (!end)
            end = p + strlen(p);
        b.n = 0;
        if (end == p)
            continue;
        if (kbuf_add(&b, p, (size_t)(end - p)))
            continue; /* longer than PATH_MAX: cannot name a file */
        if (is_file(b.p)) {
            rc = config_load_file(c, b.p, context, err);
            kbuf_release(&b);
            return rc;
        }
    }
    b.n = 0;
    if (home && home[0] && !kbuf_str(&b, home) && !kbuf_str(&b, "/.kube/config") && is_file(b.p)) {
        rc = config_load_file(c, b.p, context, err);
        kbuf_release(&b);
        return rc;
    }
    kbuf_release(&b);
    if (!getenv("KUBERNETES_SERVICE_HOST"))
        return dd_failf(err, DD_ENOTFOUND,
                        "no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and "
                        "not running in a cluster");
    return kube_config_in_cluster(c, NULL, err);
}

static char *path_join(const char *dir, const char *name)
{
    struct kbuf b = { NULL, 0, 0, PATH_MAX };

    if (kbuf_str(&b, dir) || kbuf_str(&b, "/") || kbuf_str(&b, name)) {
        kbuf_release(&b);
        return NULL;
    }
    return b.p;
}

static int valid_port(const char *s)
{
    long v = 0;

    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (*s - '0');
        if (v > 65535)
            return 0;
    }
    return v > 0;
}

static int valid_host(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || strchr("/?#@[]", *s) || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

enum dd_rc kube_config_in_cluster(struct kube_config *c, const char *root, struct dd_err *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char *path = NULL, *ns = NULL;
    struct kbuf url = { NULL, 0, 0, 1024 };
    enum dd_rc rc = DD_ENOMEM;
    int v6;

    memset(c, 0, sizeof(*c));
    if (!root)
        root = SA_ROOT;
    if (!host || !host[0] || !port || !port[0])
        return dd_failf(err, DD_ENOTFOUND,
                        "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                        "KUBERNETES_SERVICE_PORT must be set");
    if (!valid_host(host) || !valid_port(port))
        return dd_failf(err, DD_EINVAL, "in-cluster: bad KUBERNETES_SERVICE_HOST/PORT \"%s\":\"%s\"",
                        host, port);
    v6 = strchr(host, ':') != NULL;
    if (kbuf_str(&url, "https://") || kbuf_str(&url, v6 ? "[" : "") || kbuf_str(&url, host) ||
        kbuf_str(&url, v6 ? "]:" : ":") || kbuf_str(&url, port))
        goto nomem;
    c->server = url.p;
    url.p = NULL;
    if (!(c->token_file = path_join(root, "token")))
        goto nomem;
    /* Read now so a pod without a token fails at start, as client-go does. */
    rc = read_file_capped(c->token_file, TOKEN_MAX, &c->token, NULL, err);
    if (rc != DD_OK)
        goto fail;
    rtrim(c->token);
    if (!token_ok(c->token)) {
        rc = dd_failf(err, DD_EINVAL, "%s: token contains control characters", c->token_file);
        goto fail;
    }
    if (!(path = path_join(root, "ca.crt")))
        goto nomem;
    /* Without ca.crt the system trust store applies; client-go also carries on. */
    rc = read_file_capped(path, PEM_FILE_MAX, &c->ca_pem, NULL, err);
    if (rc != DD_OK && rc != DD_ENOTFOUND)
        goto fail;
    free(path);
    if (!(path = path_join(root, "namespace")))
        goto nomem;
    rc = read_file_capped(path, 1024, &ns, NULL, err);
    if (rc != DD_OK && rc != DD_ENOTFOUND)
        goto fail;
    if (ns)
        rtrim(ns);
    if (ns && ns[0]) {
        c->namespace_ = ns;
        ns = NULL;
    } else if (!(c->namespace_ = strdup("default"))) {
        goto nomem;
    }
    free(ns);
    free(path);
    dd_err_clear(err);
    return DD_OK;
nomem:
    rc = dd_failf(err, DD_ENOMEM, "out of memory");
fail:
    free(ns);
    free(path);
    kbuf_release(&url);
    kube_config_release(c);
    return rc;
}

/* ---- client -------------------------------------------------------------- */

struct kube_client {
    CURLM *multi;               /* holds easy while a transfer runs; owns the connection cache */
    CURL *easy;                 /* reset, not recreated, between requests */
    struct kube_config cfg;     /* deep copy of the caller's */
    struct kube_client_opts o;  /* defaults filled in; o.user_agent points at ua */
    char *ua;
    atomic_int interrupted;     /* set once by kube_client_interrupt, never cleared */
    char *file_token;           /* last good read of cfg.token_file, or NULL */
    struct timespec tok_mtime;  /* of cfg.token_file when file_token was read */
    off_t tok_size;
    double tok_checked;         /* mono_s() of the last stat; < 0 before the first */
    uint64_t rng;               /* xorshift state for backoff jitter */
    struct execcred cred;       /* the exec plugin's last credential (cfg.exec), if any */
    int have_cred;
    char errbuf[CURL_ERROR_SIZE];
};

/* One attempt's response. */
struct xfer {
    struct kube_client *c;
    struct kbuf body;           /* response body, capped (max_body, or ERR_BODY_MAX in watches) */
    int too_big;                /* body exceeded its cap */
    long retry_after;           /* seconds from Retry-After, -1 when absent */
    /* watches only */
    struct kube_watch_parser *wp;
    enum dd_rc wrc;             /* the parser's failure, DD_OK otherwise */
    struct dd_err werr;
    int stopped;                /* the callback (or an ERROR event) ended the stream */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void kube_global_cleanup(void)
{
    if (curl_init_rc == CURLE_OK)
        curl_global_cleanup();
}

static enum dd_rc dup_field(char **dst, const char *src)
{
    if (!src)
        return DD_OK;
    *dst = strdup(src);
    return *dst ? DD_OK : DD_ENOMEM;
}

struct kube_client *kube_client_new(const struct kube_config *cfg,
                                    const struct kube_client_opts *opts, struct dd_err *err)
{
    static const struct kube_client_opts def = { 5000, 30000, 5, 200, 10000, (size_t)64 << 20,
                                                 "dra-doctor/" DD_VERSION };
    struct kube_client *c;
    struct timespec ts;

    if (!cfg || !cfg->server || !cfg->server[0]) {
        dd_failf(err, DD_EINVAL, "kube_client_new: no server in the configuration");
        return NULL;
    }
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        dd_failf(err, DD_EIO, "libcurl initialisation failed: %s",
                 curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        goto nomem;
    c->o = def;
    if (opts) {
        if (opts->connect_timeout_ms > 0)
            c->o.connect_timeout_ms = opts->connect_timeout_ms;
        if (opts->request_timeout_ms > 0)
            c->o.request_timeout_ms = opts->request_timeout_ms;
        if (opts->max_retries > 0)
            c->o.max_retries = opts->max_retries;
        if (opts->max_retries < 0) /* an addition: a negative count disables retries */
            c->o.max_retries = 0;
        if (opts->backoff_base_ms > 0)
            c->o.backoff_base_ms = opts->backoff_base_ms;
        if (opts->backoff_max_ms > 0)
            c->o.backoff_max_ms = opts->backoff_max_ms;
        if (opts->max_body > 0)
            c->o.max_body = opts->max_body;
        if (opts->user_agent)
            c->o.user_agent = opts->user_agent;
    }
    if (c->o.backoff_max_ms < c->o.backoff_base_ms)
        c->o.backoff_max_ms = c->o.backoff_base_ms;
    if (!(c->ua = strdup(c->o.user_agent)))
        goto nomem;
    c->o.user_agent = c->ua;
    if (dup_field(&c->cfg.server, cfg->server) || dup_field(&c->cfg.ca_pem, cfg->ca_pem) ||
        dup_field(&c->cfg.cert_pem, cfg->cert_pem) || dup_field(&c->cfg.key_pem, cfg->key_pem) ||
        dup_field(&c->cfg.token, cfg->token) || dup_field(&c->cfg.token_file, cfg->token_file) ||
        dup_field(&c->cfg.namespace_, cfg->namespace_) ||
        dup_field(&c->cfg.context, cfg->context))
        goto nomem;
    if (cfg->exec && (!(c->cfg.exec = malloc(sizeof(*c->cfg.exec))) ||
                      execcred_spec_dup(c->cfg.exec, cfg->exec, NULL) != DD_OK)) {
        free(c->cfg.exec);
        c->cfg.exec = NULL;
        goto nomem;
    }
    c->cfg.insecure = cfg->insecure;
    c->tok_checked = -1;
    atomic_init(&c->interrupted, 0);
    clock_gettime(CLOCK_REALTIME, &ts);
    c->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)c;
    if (!c->rng)
        c->rng = 0x9E3779B97F4A7C15ULL;
    c->multi = curl_multi_init();
    c->easy = curl_easy_init();
    if (!c->multi || !c->easy)
        goto nomem;
    return c;
nomem:
    dd_failf(err, DD_ENOMEM, "out of memory");
    kube_client_free(c);
    return NULL;
}

void kube_client_free(struct kube_client *c)
{
    if (!c)
        return;
    if (c->easy)
        curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    kube_config_release(&c->cfg);
    execcred_release(&c->cred);
    free(c->file_token);
    free(c->ua);
    free(c);
}

void kube_client_interrupt(struct kube_client *c)
{
    if (!c)
        return;
    atomic_store(&c->interrupted, 1);
    curl_multi_wakeup(c->multi);
}

static uint64_t rng_next(struct kube_client *c)
{
    uint64_t x = c->rng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->rng = x;
    return x;
}

/*
 * Delay before retry number attempt+1: base doubled per attempt, capped, then
 * "equal jitter" (half fixed, half random) so clients that failed together do
 * not come back together, while the delay never drops below half the step.
 */
static long backoff_ms(struct kube_client *c, int attempt)
{
    long d = c->o.backoff_base_ms;
    int i;

    for (i = 0; i < attempt && d < c->o.backoff_max_ms; i++)
        d = d > LONG_MAX / 2 ? LONG_MAX : d * 2;
    if (d > c->o.backoff_max_ms)
        d = c->o.backoff_max_ms;
    return d / 2 + (long)(rng_next(c) % (uint64_t)(d / 2 + 1));
}

/* Returns 0 after ms, or -1 as soon as the client is interrupted. */
static int sleep_ms(struct kube_client *c, long ms)
{
    double end = mono_s() + (double)ms / 1000.0, left;

    for (;;) {
        if (atomic_load(&c->interrupted))
            return -1;
        left = (end - mono_s()) * 1000.0;
        if (left <= 0)
            return 0;
        /* With no transfer attached, curl_multi_poll just waits for a wakeup or the timeout. */
        curl_multi_poll(c->multi, NULL, 0, left > POLL_SLICE_MS ? POLL_SLICE_MS : (int)left + 1,
                        NULL);
    }
}

/*
 * The bearer token for the next request.  A token file is re-read when its
 * mtime or size changed, checked at most once a second (kubelet rotates
 * projected tokens well before expiry, so a second of staleness is harmless
 * and saves a stat per request).  When a re-read fails the last good token
 * stays in use, and without any good read the kubeconfig's token applies.
 */
static const char *current_token(struct kube_client *c)
{
    struct stat sb;
    char *t = NULL;
    double now;

    if (c->cfg.token_file) {
        now = mono_s();
        if (c->tok_checked < 0 || now - c->tok_checked >= 1.0) {
            c->tok_checked = now;
            if (stat(c->cfg.token_file, &sb) == 0 &&
                (!c->file_token || sb.st_size != c->tok_size ||
                 sb.st_mtim.tv_sec != c->tok_mtime.tv_sec ||
                 sb.st_mtim.tv_nsec != c->tok_mtime.tv_nsec) &&
                read_file_capped(c->cfg.token_file, TOKEN_MAX, &t, NULL, NULL) == DD_OK) {
                rtrim(t);
                if (t[0] && token_ok(t)) {
                    free(c->file_token);
                    c->file_token = t;
                    t = NULL;
                    c->tok_mtime = sb.st_mtim;
                    c->tok_size = sb.st_size;
                }
                free(t);
            }
        }
        if (c->file_token)
            return c->file_token;
    }
    /* As client-go's exec round tripper: a token the kubeconfig gives wins over the plugin. */
    if (!c->cfg.token && c->have_cred && c->cred.token)
        return c->cred.token;
    return c->cfg.token;
}

/*
 * Gets the exec credential plugin's credential when the client has none yet, the one it has
 * expired, or the server refused it (force: a 401).  client-go does the same; a plugin is not
 * run again for every request, nor for every client (execcred_get shares one per process),
 * since it may be slow (a cloud CLI) or rate limited.
 */
static enum dd_rc exec_credential(struct kube_client *c, int force, struct dd_err *err)
{
    struct execcred fresh = { 0 };
    enum dd_rc rc;

    if (!c->cfg.exec || c->cfg.token || c->cfg.token_file)
        return DD_OK;
    if (c->have_cred && !force && !execcred_expired(&c->cred, time(NULL)))
        return DD_OK;
    rc = execcred_get(c->cfg.exec, c->cfg.server, c->cfg.ca_pem, c->cfg.insecure,
                      force && c->have_cred ? &c->cred : NULL, &fresh, err);
    execcred_release(&c->cred);
    c->cred = fresh;
    c->have_cred = rc == DD_OK;
    return rc;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n, i = 12;
    long v = 0;

    /* Each status line starts a new response (100 Continue, for one). */
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0)
        x->retry_after = -1;
    if (len > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
        while (i < len && (buf[i] == ' ' || buf[i] == '\t'))
            i++;
        if (i < len && buf[i] >= '0' && buf[i] <= '9') {
            /* Only the delta-seconds form; an HTTP-date falls back to the backoff. */
            for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++)
                if (v <= RETRY_AFTER_MAX_S)
                    v = v * 10 + (buf[i] - '0');
            x->retry_after = v > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : v;
        }
    }
    return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;

    if (kbuf_add(&x->body, buf, size * n)) {
        x->too_big = 1;
        return 0;
    }
    return size * n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct xfer *x = ud;

    (void)dt, (void)dn, (void)ut, (void)un;
    return atomic_load(&x->c->interrupted) ? 1 : 0;
}

/* Runs the prepared easy handle through the multi handle until done or interrupted. */
static CURLcode run(struct kube_client *c)
{
    CURLcode res = CURLE_FAILED_INIT;
    CURLMsg *msg;
    int running = 1, left, done = 0;

    if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK)
        return CURLE_FAILED_INIT;
    while (!done) {
        if (curl_multi_perform(c->multi, &running) != CURLM_OK)
            break;
        while ((msg = curl_multi_info_read(c->multi, &left)) != NULL)
            if (msg->msg == CURLMSG_DONE) {
                res = msg->data.result;
                done = 1;
            }
        if (done || !running)
            break;
        if (atomic_load(&c->interrupted)) {
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        if (curl_multi_poll(c->multi, NULL, 0, POLL_SLICE_MS, NULL) != CURLM_OK)
            break;
    }
    curl_multi_remove_handle(c->multi, c->easy);
    return res;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *h, int *fail)
{
    struct curl_slist *n;

    if (*fail)
        return l;
    n = curl_slist_append(l, h);
    if (!n) {
        *fail = 1;
        return l;
    }
    return n;
}

/* The attempt's headers; NULL on ENOMEM. */
static struct curl_slist *make_headers(struct kube_client *c, const char *content_type)
{
    struct kbuf b = { NULL, 0, 0, TOKEN_MAX + 64 };
    struct curl_slist *l = NULL;
    const char *tok = current_token(c);
    int fail = 0;

    l = add_header(l, "Accept: application/json", &fail);
    /* 100-continue would cost a round trip per write for nothing. */
    l = add_header(l, "Expect:", &fail);
    if (content_type) {
        if (kbuf_str(&b, "Content-Type: ") || kbuf_str(&b, content_type))
            fail = 1;
        l = add_header(l, b.p, &fail);
    }
    if (tok && tok[0]) {
        b.n = 0;
        if (kbuf_str(&b, "Authorization: Bearer ") || kbuf_str(&b, tok))
            fail = 1;
        l = add_header(l, b.p, &fail);
    }
    kbuf_release(&b);
    if (fail) {
        curl_slist_free_all(l);
        return NULL;
    }
    return l;
}

static int set_blob(CURL *h, CURLoption opt, const char *pem)
{
    struct curl_blob blob;

    blob.data = (void *)(uintptr_t)pem;
    blob.len = strlen(pem);
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(h, opt, &blob) != CURLE_OK;
}

/*
 * Prepares the easy handle for one attempt.  watch_timeout < 0 makes an
 * ordinary request with the whole-request timeout; otherwise a watch, which
 * has none (it legitimately idles), but gives up when no byte arrived for
 * the server's own timeout plus a minute, and uses TCP keepalive so a dead
 * peer is noticed sooner.
 */
static int setup(struct kube_client *c, struct xfer *x, const char *method, const char *url,
                 struct curl_slist *hdrs, const char *body, size_t len, long watch_timeout)
{
    CURL *h = c->easy;
    int bad = 0;

    curl_easy_reset(h); /* keeps the connection cache, drops the previous options */
    c->errbuf[0] = '\0';
    bad |= curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_USERAGENT, c->o.user_agent) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->o.connect_timeout_ms) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L) != CURLE_OK;
    if (watch_timeout < 0) {
        bad |= curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->o.request_timeout_ms) != CURLE_OK;
    } else {
        /* timeoutSeconds=0 lets the server pick, at most 2 x 30 min by default. */
        long idle = (watch_timeout > 0 ? watch_timeout : 3600) + 60;
        bad |= curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L) != CURLE_OK;
        bad |= curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, idle) != CURLE_OK;
    }
    bad |= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_HEADERDATA, x) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_WRITEDATA, x) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK;
    bad |= curl_easy_setopt(h, CURLOPT_XFERINFODATA, x) != CURLE_OK;
    if (c->cfg.ca_pem) {
        /* Trust exactly the cluster's CA, as client-go does, not the system store too. */
        bad |= set_blob(h, CURLOPT_CAINFO_BLOB, c->cfg.ca_pem);
        bad |= curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK;
    }
    if (c->cfg.cert_pem && c->cfg.key_pem) {
        bad |= set_blob(h, CURLOPT_SSLCERT_BLOB, c->cfg.cert_pem);
        bad |= curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM") != CURLE_OK;
        bad |= set_blob(h, CURLOPT_SSLKEY_BLOB, c->cfg.key_pem);
        bad |= curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM") != CURLE_OK;
    } else if (c->have_cred && c->cred.cert_pem && c->cred.key_pem) {
        bad |= set_blob(h, CURLOPT_SSLCERT_BLOB, c->cred.cert_pem);
        bad |= curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM") != CURLE_OK;
        bad |= set_blob(h, CURLOPT_SSLKEY_BLOB, c->cred.key_pem);
        bad |= curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM") != CURLE_OK;
    }
    if (c->cfg.insecure) {
        bad |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK;
        bad |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK;
    }
    if (strcmp(method, "GET") == 0) {
        bad |= curl_easy_setopt(h, CURLOPT_HTTPGET, 1L) != CURLE_OK;
    } else if (strcmp(method, "HEAD") == 0) {
        bad |= curl_easy_setopt(h, CURLOPT_NOBODY, 1L) != CURLE_OK;
    } else if (body || strcmp(method, "DELETE") != 0) {
        /* POSTFIELDS even when empty: without it libcurl would read stdin. */
        bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) != CURLE_OK;
        bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "") != CURLE_OK;
        if (strcmp(method, "POST") != 0)
            bad |= curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK;
    } else {
        bad |= curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK;
    }
    return bad ? -1 : 0;
}

static void status_set(struct kube_status *st, long http, const char *reason, const char *msg)
{
    st->http = http;
    snprintf(st->reason, sizeof(st->reason), "%s", reason ? reason : "");
    snprintf(st->message, sizeof(st->message), "%s", msg ? msg : "");
}

/* Fills st from a Status object (or, failing that, from the body's text). */
static void status_from_body(struct kube_status *st, long http, const char *body, size_t len)
{
    cJSON *j = len ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(j, "reason");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    size_t i, n;

    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Status") == 0) {
        status_set(st, http, cJSON_IsString(reason) ? reason->valuestring : "",
                   cJSON_IsString(msg) ? msg->valuestring : "");
    } else {
        status_set(st, http, "", "");
        n = len < sizeof(st->message) - 1 ? len : sizeof(st->message) - 1;
        for (i = 0; i < n; i++) /* a proxy's HTML page: keep it printable, one line */
            st->message[i] = (unsigned char)body[i] < 0x20 ? ' ' : body[i];
        st->message[n] = '\0';
    }
    cJSON_Delete(j);
}

static enum dd_rc rc_for_http(long http)
{
    if (http == 404)
        return DD_ENOTFOUND;
    if (http >= 400 && http < 500)
        return DD_EINVAL;
    return DD_EIO;
}

static enum dd_rc fail_http(struct kube_status *st, struct dd_err *err, const char *method,
                            const char *path, enum dd_rc rc)
{
    return dd_failf(err, rc, "%s %s: HTTP %ld%s%s: %s", method, path, st->http,
                    st->reason[0] ? " " : "", st->reason,
                    st->message[0] ? st->message : "no message");
}

static enum dd_rc fail_interrupted(struct kube_status *st, struct dd_err *err, const char *method,
                                   const char *path)
{
    status_set(st, 0, "", "interrupted");
    return dd_failf(err, DD_EIO, "%s %s: interrupted", method, path);
}

/* Transport failures worth another try: nothing permanent such as TLS trust or bad URLs. */
static int transient(CURLcode res)
{
    switch (res) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

/* Failures that happen before a byte of the request reached the server. */
static int not_sent(CURLcode res)
{
    return res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_CONNECT;
}

static int idempotent(const char *method)
{
    return !strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "PUT") ||
           !strcmp(method, "DELETE");
}

static enum dd_rc make_url(struct kube_client *c, const char *path, struct kbuf *url,
                           struct dd_err *err)
{
    url->max = URL_MAX;
    if (!path || path[0] != '/')
        return dd_failf(err, DD_EINVAL, "API path \"%s\" does not start with '/'",
                        path ? path : "(null)");
    if (kbuf_str(url, c->cfg.server) || kbuf_str(url, path)) {
        kbuf_release(url);
        return dd_failf(err, DD_EINVAL, "API path is longer than %d bytes", URL_MAX);
    }
    return DD_OK;
}

/*
 * Retry policy.  Idempotent verbs (GET, HEAD, PUT, DELETE) are retried on
 * 429, on 5xx other than 501 (which will not change), and on transient
 * transport failures.  POST and PATCH may already have taken effect when a
 * 5xx or a dropped connection is seen, so they are retried only when the
 * server certainly did not act: 429 (API priority and fairness rejects
 * before processing), a 5xx that carries Retry-After (the server asking for
 * a retry, which is when client-go retries), and connections that were
 * never established.
 */
/* kube_request, and with text set the 2xx body as it is (NUL-terminated; free it) instead of
 * parsed. */
static enum dd_rc request(struct kube_client *c, const char *method, const char *path,
                          const char *content_type, const char *body, size_t len, cJSON **out,
                          char **text, size_t *text_len, struct kube_status *st,
                          struct dd_err *err)
{
    struct kube_status st_local;
    struct kbuf url = { NULL, 0, 0, URL_MAX };
    struct curl_slist *hdrs = NULL;
    struct xfer x;
    enum dd_rc rc;
    CURLcode res;
    long http, delay;
    int attempt, retry, idem, refreshed = 0;

    if (!st)
        st = &st_local;
    status_set(st, 0, "", "");
    if (out)
        *out = NULL;
    if (!c || !method)
        return dd_failf(err, DD_EINVAL, "kube_request: no client or method");
    if ((rc = make_url(c, path, &url, err)) != DD_OK)
        return rc;
    if (body && !content_type)
        content_type = "application/json";
    idem = idempotent(method);
    memset(&x, 0, sizeof(x));
    for (attempt = 0;; attempt++) {
        if (atomic_load(&c->interrupted)) {
            rc = fail_interrupted(st, err, method, path);
            break;
        }
        kbuf_release(&x.body);
        x.c = c;
        x.body.max = c->o.max_body;
        x.too_big = 0;
        x.retry_after = -1;
        curl_slist_free_all(hdrs);
        hdrs = NULL;
        if ((rc = exec_credential(c, refreshed == 1, err)) != DD_OK)
            break;
        hdrs = make_headers(c, body ? content_type : NULL);
        if (!hdrs || setup(c, &x, method, url.p, hdrs, body, body ? len : 0, -1)) {
            rc = dd_failf(err, DD_ENOMEM, "%s %s: cannot prepare the request", method, path);
            break;
        }
        curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
        res = run(c);
        http = 0;
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &http);
        if (atomic_load(&c->interrupted)) {
            rc = fail_interrupted(st, err, method, path);
            break;
        }
        if (x.too_big) {
            status_set(st, http, "", "response body too large");
            rc = dd_failf(err, DD_ETOOBIG, "%s %s: response larger than %zu bytes", method, path,
                          c->o.max_body);
            break;
        }
        if (res != CURLE_OK) {
            status_set(st, 0, "", c->errbuf[0] ? c->errbuf : curl_easy_strerror(res));
            rc = dd_failf(err, DD_EIO, "%s %s: %s", method, path, st->message);
            retry = transient(res) && (idem || not_sent(res));
        } else if (http >= 200 && http < 300) {
            st->http = http;
            if (text) {
                if (!(*text = malloc(x.body.n + 1))) {
                    rc = dd_failf(err, DD_ENOMEM, "%s %s: out of memory", method, path);
                    break;
                }
                if (x.body.n)
                    memcpy(*text, x.body.p, x.body.n);
                (*text)[x.body.n] = '\0';
                *text_len = x.body.n;
            } else if (out && x.body.n) {
                *out = cJSON_ParseWithLength(x.body.p, x.body.n);
                if (!*out) {
                    snprintf(st->message, sizeof(st->message), "response is not JSON");
                    rc = dd_failf(err, DD_EPARSE, "%s %s: response is not JSON", method, path);
                    break;
                }
            }
            rc = DD_OK;
            break;
        } else {
            status_from_body(st, http, x.body.p, x.body.n);
            rc = fail_http(st, err, method, path, rc_for_http(http));
            retry = http == 429 ||
                    (http >= 500 && http != 501 && (idem || x.retry_after >= 0));
            /* A plugin's credential the server refuses is fetched anew, once, at once. */
            if (http == 401 && c->have_cred && !refreshed) {
                refreshed = 1;
                continue;
            }
        }
        if (refreshed == 1)
            refreshed = 2;
        if (!retry || attempt >= c->o.max_retries)
            break;
        delay = x.retry_after >= 0 ? x.retry_after * 1000 : backoff_ms(c, attempt);
        if (sleep_ms(c, delay)) {
            rc = fail_interrupted(st, err, method, path);
            break;
        }
    }
    curl_slist_free_all(hdrs);
    kbuf_release(&x.body);
    kbuf_release(&url);
    return rc;
}

enum dd_rc kube_request(struct kube_client *c, const char *method, const char *path,
                        const char *content_type, const char *body, size_t len, cJSON **out,
                        struct kube_status *st, struct dd_err *err)
{
    return request(c, method, path, content_type, body, len, out, NULL, NULL, st, err);
}

enum dd_rc kube_get_text(struct kube_client *c, const char *path, char **text, size_t *len,
                         struct kube_status *st, struct dd_err *err)
{
    *text = NULL;
    *len = 0;
    return request(c, "GET", path, NULL, NULL, 0, NULL, text, len, st, err);
}

enum dd_rc kube_get(struct kube_client *c, const char *path, cJSON **out, struct kube_status *st,
                    struct dd_err *err)
{
    return kube_request(c, "GET", path, NULL, NULL, 0, out, st, err);
}

enum dd_rc kube_create(struct kube_client *c, const char *path, const cJSON *obj, cJSON **out,
                       struct kube_status *st, struct dd_err *err)
{
    char *body;
    enum dd_rc rc;

    if (!obj)
        return dd_failf(err, DD_EINVAL, "kube_create: no object");
    body = cJSON_PrintUnformatted(obj);
    if (!body)
        return dd_failf(err, DD_ENOMEM, "out of memory");
    rc = kube_request(c, "POST", path, "application/json", body, strlen(body), out, st, err);
    cJSON_free(body);
    return rc;
}

/* path, then "?" or "&" (whichever the path needs), for appending a query parameter. */
static int add_sep(struct kbuf *b, int *first)
{
    int rc = kbuf_str(b, *first && !strchr(b->p ? b->p : "", '?') ? "?" : "&");

    *first = 0;
    return rc;
}

enum dd_rc kube_patch(struct kube_client *c, const char *path, enum kube_patch_type type,
                      const char *body, const char *field_manager, int force, cJSON **out,
                      struct kube_status *st, struct dd_err *err)
{
    struct kbuf p = { NULL, 0, 0, URL_MAX };
    const char *ct;
    enum dd_rc rc;
    int first = 1;

    switch (type) {
    case KUBE_PATCH_MERGE: ct = "application/merge-patch+json"; break;
    case KUBE_PATCH_APPLY: ct = "application/apply-patch+yaml"; break;
    case KUBE_PATCH_JSON: ct = "application/json-patch+json"; break;
    default: return dd_failf(err, DD_EINVAL, "kube_patch: unknown patch type %d", (int)type);
    }
    if (!body || !path)
        return dd_failf(err, DD_EINVAL, "kube_patch: no path or body");
    if (type == KUBE_PATCH_APPLY && (!field_manager || !field_manager[0]))
        return dd_failf(err, DD_EINVAL, "kube_patch: server-side apply needs a field manager");
    if (kbuf_str(&p, path))
        goto toolong;
    if (field_manager && field_manager[0] &&
        (add_sep(&p, &first) || kbuf_str(&p, "fieldManager=") ||
         kbuf_add_escaped(&p, field_manager)))
        goto toolong;
    if (type == KUBE_PATCH_APPLY && force && (add_sep(&p, &first) || kbuf_str(&p, "force=true")))
        goto toolong;
    rc = kube_request(c, "PATCH", p.p, ct, body, strlen(body), out, st, err);
    kbuf_release(&p);
    return rc;
toolong:
    kbuf_release(&p);
    return dd_failf(err, DD_EINVAL, "PATCH %s: path too long", path);
}

enum dd_rc kube_delete(struct kube_client *c, const char *path, struct kube_status *st,
                       struct dd_err *err)
{
    return kube_request(c, "DELETE", path, NULL, NULL, 0, NULL, st, err);
}

/* "PodList" names its items; the generic "List" does not. */
static int list_kind(const char *kind)
{
    size_t n = kind ? strlen(kind) : 0;

    return n > 4 && strcmp(kind + n - 4, "List") == 0;
}

/* "PodList" -> "Pod"; a new string, NULL on ENOMEM. */
static char *item_kind(const char *kind)
{
    return xstrndup(kind, strlen(kind) - 4);
}

/* Moves the page's items into all, filling in apiVersion and kind where missing. */
static enum dd_rc take_items(cJSON *page, cJSON *all, const char *api_version, const char *kind,
                             void (*transform)(cJSON *obj))
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items"), *it;

    while ((it = cJSON_DetachItemFromArray(items, 0)) != NULL) {
        if (cJSON_IsObject(it)) {
            if (api_version && !cJSON_GetObjectItemCaseSensitive(it, "apiVersion") &&
                !cJSON_AddStringToObject(it, "apiVersion", api_version))
                goto nomem;
            if (kind && !cJSON_GetObjectItemCaseSensitive(it, "kind") &&
                !cJSON_AddStringToObject(it, "kind", kind))
                goto nomem;
            if (transform)
                transform(it);
        }
        if (!cJSON_AddItemToArray(all, it))
            goto nomem;
    }
    return DD_OK;
nomem:
    cJSON_Delete(it);
    return DD_ENOMEM;
}

enum dd_rc kube_list(struct kube_client *c, const char *path, const char *selector, long limit,
                     cJSON **items, char **rv, struct kube_status *st, struct dd_err *err)
{
    return kube_list_transformed(c, path, selector, limit, NULL, items, rv, st, err);
}

enum dd_rc kube_list_transformed(struct kube_client *c, const char *path, const char *selector,
                                 long limit, void (*transform)(cJSON *obj), cJSON **items,
                                 char **rv, struct kube_status *st, struct dd_err *err)
{
    struct kbuf p = { NULL, 0, 0, URL_MAX };
    char *cont = NULL, *kind = NULL, *api_version = NULL;
    cJSON *all = cJSON_CreateArray(), *page = NULL;
    const char *s;
    enum dd_rc rc = DD_ENOMEM;
    char lim[32];
    int npage, first;

    *items = NULL;
    if (rv)
        *rv = NULL;
    if (!path) {
        cJSON_Delete(all);
        return dd_failf(err, DD_EINVAL, "kube_list: no path");
    }
    if (!all)
        goto nomem;
    for (npage = 0;; npage++) {
        if (npage >= LIST_MAX_PAGES) {
            rc = dd_failf(err, DD_ETOOBIG, "LIST %s: more than %d pages", path, LIST_MAX_PAGES);
            goto out;
        }
        p.n = 0;
        first = 1;
        if (kbuf_str(&p, path))
            goto toolong;
        if (limit > 0) {
            snprintf(lim, sizeof(lim), "limit=%ld", limit);
            if (add_sep(&p, &first) || kbuf_str(&p, lim))
                goto toolong;
        }
        if (selector && selector[0] && (add_sep(&p, &first) || kbuf_str(&p, selector)))
            goto toolong;
        if (cont && (add_sep(&p, &first) || kbuf_str(&p, "continue=") ||
                     kbuf_add_escaped(&p, cont)))
            goto toolong;
        rc = kube_get(c, p.p, &page, st, err);
        if (rc != DD_OK)
            goto out;
        if (!cJSON_IsObject(page) ||
            (cJSON_GetObjectItemCaseSensitive(page, "items") &&
             !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(page, "items")) &&
             !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(page, "items")))) {
            rc = dd_failf(err, DD_EPARSE, "LIST %s: the response is not a list", path);
            goto out;
        }
        if (npage == 0) {
            s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(page, "kind"));
            if (list_kind(s) && !(kind = item_kind(s)))
                goto nomem;
            s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(page, "apiVersion"));
            if (s && !(api_version = strdup(s)))
                goto nomem;
            /* Continued pages are served from the first page's snapshot. */
            s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(page, "metadata"), "resourceVersion"));
            if (rv && !(*rv = strdup(s ? s : "")))
                goto nomem;
        }
        if (take_items(page, all, api_version, kind, transform) != DD_OK)
            goto nomem;
        s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(page, "metadata"), "continue"));
        if (!s || !s[0])
            break;
        if (cont && strcmp(cont, s) == 0) {
            rc = dd_failf(err, DD_EIO, "LIST %s: the server repeated continue token", path);
            goto out;
        }
        free(cont);
        if (!(cont = strdup(s)))
            goto nomem;
        cJSON_Delete(page);
        page = NULL;
    }
    *items = all;
    all = NULL;
    rc = DD_OK;
    goto out;
toolong:
    rc = dd_failf(err, DD_EINVAL, "LIST %s: path too long", path);
    goto out;
nomem:
    rc = dd_failf(err, DD_ENOMEM, "out of memory");
out:
    if (rc != DD_OK && rv) {
        free(*rv);
        *rv = NULL;
    }
    cJSON_Delete(page);
    cJSON_Delete(all);
    kbuf_release(&p);
    free(cont);
    free(kind);
    free(api_version);
    return rc;
}

/* A path segment must not change the path's shape: no separators, no dot segments. */
static int segment_ok(const char *s)
{
    if (!s[0] || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || strchr("/?#%", *s) || (unsigned char)*s == 0x7f)
            return 0;
    return 1;
}

const char *kube_path(char *buf, size_t size, const char *group, const char *version,
                      const char *resource, const char *ns, const char *name,
                      const char *subresource)
{
    int n;

    if (!buf || !size || !version || !segment_ok(version) || (group && group[0] && !segment_ok(group)))
        return NULL;
    if ((resource && !segment_ok(resource)) || (ns && !segment_ok(ns)) ||
        (name && !segment_ok(name)) || (subresource && !segment_ok(subresource)))
        return NULL;
    /* A name or subresource needs a resource to hang from. */
    if (!resource && (name || subresource || ns))
        return NULL;
    if (subresource && !name)
        return NULL;
    n = snprintf(buf, size, "%s%s%s%s%s%s%s%s%s%s%s", group && group[0] ? "/apis/" : "/api",
                 group && group[0] ? group : "", "/", version, ns ? "/namespaces/" : "",
                 ns ? ns : "", resource ? "/" : "", resource ? resource : "", name ? "/" : "",
                 name ? name : "", "");
    if (n < 0 || (size_t)n >= size)
        return NULL;
    if (subresource) {
        size_t used = (size_t)n;
        n = snprintf(buf + used, size - used, "/%s", subresource);
        if (n < 0 || (size_t)n >= size - used)
            return NULL;
    }
    return buf;
}

/* ---- watch --------------------------------------------------------------- */

struct kube_watch_parser {
    size_t max_event;           /* largest event, in bytes */
    kube_watch_fn fn;
    void *ctx;
    char *buf;                  /* buf[0..len): the event being assembled */
    size_t len, cap;            /* cap <= max_event */
    size_t depth;               /* {/[ nesting of the current event; 0 between events */
    int in_str, esc;            /* inside a JSON string; after a backslash in one */
    int stopped;                /* fn asked to stop: later bytes are ignored */
    unsigned long long offset;  /* bytes of the stream consumed, for messages */
    enum dd_rc failed;          /* sticky failure, DD_OK until one */
    char why[256];              /* its message */
};

struct kube_watch_parser *kube_watch_parser_new(size_t max_event, kube_watch_fn fn, void *ctx)
{
    struct kube_watch_parser *p;

    if (!fn || max_event < 2)
        return NULL;
    p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->max_event = max_event;
    p->fn = fn;
    p->ctx = ctx;
    return p;
}

void kube_watch_parser_free(struct kube_watch_parser *p)
{
    if (!p)
        return;
    free(p->buf);
    free(p);
}

static enum dd_rc wp_fail(struct kube_watch_parser *p, enum dd_rc rc, struct dd_err *err,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum dd_rc wp_fail(struct kube_watch_parser *p, enum dd_rc rc, struct dd_err *err,
                          const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->why, sizeof(p->why), fmt, ap);
    va_end(ap);
    p->failed = rc;
    return dd_failf(err, rc, "watch stream: %s", p->why);
}

static int known_type(const char *t)
{
    return !strcmp(t, "ADDED") || !strcmp(t, "MODIFIED") || !strcmp(t, "DELETED") ||
           !strcmp(t, "BOOKMARK") || !strcmp(t, "ERROR");
}

/* One complete event in p->buf: validate it and hand it over. */
static enum dd_rc wp_dispatch(struct kube_watch_parser *p, struct dd_err *err)
{
    cJSON *ev = cJSON_ParseWithLength(p->buf, p->len), *obj;
    const cJSON *type;
    unsigned long long at = p->offset - p->len;
    enum dd_rc rc = DD_OK;

    p->len = 0;
    if (!ev)
        return wp_fail(p, DD_EPARSE, err, "malformed JSON in the event at byte %llu", at);
    type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!cJSON_IsString(type) || !known_type(type->valuestring))
        rc = wp_fail(p, DD_EPARSE, err, "event at byte %llu has no valid \"type\"", at);
    else if (!cJSON_IsObject(obj))
        rc = wp_fail(p, DD_EPARSE, err, "event at byte %llu has no \"object\" mapping", at);
    if (rc == DD_OK) {
        obj = cJSON_DetachItemViaPointer(ev, obj);
        if (p->fn(p->ctx, type->valuestring, obj))
            p->stopped = 1;
    }
    cJSON_Delete(ev);
    return rc;
}

static enum dd_rc wp_push(struct kube_watch_parser *p, char ch, struct dd_err *err)
{
    size_t ncap;
    char *nb;

    if (p->len >= p->max_event)
        return wp_fail(p, DD_ETOOBIG, err, "event at byte %llu is larger than %zu bytes",
                       p->offset - p->len, p->max_event);
    if (p->len == p->cap) {
        ncap = p->cap ? p->cap * 2 : 4096;
        if (ncap > p->max_event || ncap < p->cap)
            ncap = p->max_event;
        nb = realloc(p->buf, ncap);
        if (!nb)
            return wp_fail(p, DD_ENOMEM, err, "out of memory");
        p->buf = nb;
        p->cap = ncap;
    }
    p->buf[p->len++] = ch;
    return DD_OK;
}

/*
 * Events are delimited by tracking {} / [] nesting outside strings, so an
 * event is parsed once, when its last byte arrives, however it was chunked.
 */
enum dd_rc kube_watch_parser_feed(struct kube_watch_parser *p, const char *buf, size_t len,
                                  int *stopped, struct dd_err *err)
{
    enum dd_rc rc;
    size_t i;
    char ch;

    if (stopped)
        *stopped = 0;
    if (!p || (!buf && len))
        return dd_failf(err, DD_EINVAL, "kube_watch_parser_feed: no parser or buffer");
    if (p->failed)
        return dd_failf(err, p->failed, "watch stream: %s", p->why);
    for (i = 0; i < len && !p->stopped; i++) {
        ch = buf[i];
        p->offset++;
        if (p->depth == 0) {
            if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
                continue;
            if (ch != '{')
                return wp_fail(p, DD_EPARSE, err,
                               "expected '{' at byte %llu, found 0x%02x", p->offset - 1,
                               (unsigned char)ch);
            p->depth = 1;
        } else if (p->in_str) {
            if (p->esc)
                p->esc = 0;
            else if (ch == '\\')
                p->esc = 1;
            else if (ch == '"')
                p->in_str = 0;
        } else if (ch == '"') {
            p->in_str = 1;
        } else if (ch == '{' || ch == '[') {
            p->depth++;
        } else if (ch == '}' || ch == ']') {
            p->depth--;
        }
        if ((rc = wp_push(p, ch, err)) != DD_OK)
            return rc;
        if (p->depth == 0 && (rc = wp_dispatch(p, err)) != DD_OK)
            return rc;
    }
    if (stopped)
        *stopped = p->stopped;
    return DD_OK;
}

/* The in-progress state of one watch request. */
struct watch_state {
    kube_watch_fn fn;           /* the caller's */
    void *ctx;
    int user_stop;              /* fn returned nonzero */
    int error_event;            /* an ERROR event arrived; its Status is below */
    struct kube_status est;
};

/* Sits between the parser and the caller: ERROR events end the watch here. */
static int watch_event(void *ctx, const char *type, cJSON *obj)
{
    struct watch_state *ws = ctx;
    const cJSON *code;

    if (strcmp(type, "ERROR") != 0) {
        if (ws->fn(ws->ctx, type, obj))
            ws->user_stop = 1;
        return ws->user_stop;
    }
    ws->error_event = 1;
    code = cJSON_GetObjectItemCaseSensitive(obj, "code");
    status_set(&ws->est, cJSON_IsNumber(code) ? (long)code->valuedouble : 0,
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "reason")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "message")));
    cJSON_Delete(obj);
    return 1;
}

static size_t on_watch_body(char *buf, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n, room;
    long http = 0;
    int stop = 0;

    curl_easy_getinfo(x->c->easy, CURLINFO_RESPONSE_CODE, &http);
    if (http != 200) {
        /* An error body is only read for its Status; the rest can go. */
        room = x->body.max - x->body.n;
        if (kbuf_add(&x->body, buf, len < room ? len : room))
            return 0;
        return len;
    }
    x->wrc = kube_watch_parser_feed(x->wp, buf, len, &stop, &x->werr);
    if (x->wrc != DD_OK)
        return 0;
    if (stop) {
        x->stopped = 1;
        return 0;
    }
    return len;
}

enum dd_rc kube_watch(struct kube_client *c, const char *path, const char *selector,
                      const char *resource_version, int timeout_seconds, int bookmarks,
                      kube_watch_fn fn, void *ctx, struct kube_status *st, struct dd_err *err)
{
    struct kube_status st_local;
    struct watch_state ws;
    struct kbuf url = { NULL, 0, 0, URL_MAX };
    struct curl_slist *hdrs = NULL;
    struct xfer x;
    enum dd_rc rc;
    CURLcode res;
    long http = 0;
    char num[32];
    int first = 1;

    if (!st)
        st = &st_local;
    status_set(st, 0, "", "");
    memset(&x, 0, sizeof(x));
    memset(&ws, 0, sizeof(ws));
    if (!c || !fn)
        return dd_failf(err, DD_EINVAL, "kube_watch: no client or callback");
    if ((rc = make_url(c, path, &url, err)) != DD_OK)
        return rc;
    /* add_sep looks for '?' in what is built so far, which includes the server URL. */
    first = !strchr(path, '?');
    if (kbuf_str(&url, first ? "?" : "&") || kbuf_str(&url, "watch=1"))
        goto toolong;
    if (resource_version && resource_version[0] &&
        (kbuf_str(&url, "&resourceVersion=") || kbuf_add_escaped(&url, resource_version)))
        goto toolong;
    if (bookmarks && kbuf_str(&url, "&allowWatchBookmarks=true"))
        goto toolong;
    if (timeout_seconds > 0) {
        snprintf(num, sizeof(num), "&timeoutSeconds=%d", timeout_seconds);
        if (kbuf_str(&url, num))
            goto toolong;
    }
    if (selector && selector[0] && (kbuf_str(&url, "&") || kbuf_str(&url, selector)))
        goto toolong;
    if (atomic_load(&c->interrupted)) {
        rc = fail_interrupted(st, err, "WATCH", path);
        goto out;
    }
    ws.fn = fn;
    ws.ctx = ctx;
    x.c = c;
    x.body.max = ERR_BODY_MAX;
    x.retry_after = -1;
    if ((rc = exec_credential(c, 0, err)) != DD_OK) {
        status_set(st, 0, "", err ? err->msg : "exec credential plugin failed");
        goto out;
    }
    x.wp = kube_watch_parser_new(c->o.max_body, watch_event, &ws);
    hdrs = make_headers(c, NULL);
    if (!x.wp || !hdrs ||
        setup(c, &x, "GET", url.p, hdrs, NULL, 0, timeout_seconds > 0 ? timeout_seconds : 0)) {
        rc = dd_failf(err, DD_ENOMEM, "WATCH %s: cannot prepare the request", path);
        goto out;
    }
    curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_watch_body);
    res = run(c);
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &http);
    if (ws.error_event) {
        *st = ws.est;
        if (st->http == 410) {
            rc = dd_failf(err, DD_ENOTFOUND, "WATCH %s: resource version too old (410 %s): %s",
                          path, st->reason, st->message);
        } else {
            rc = dd_failf(err, rc_for_http(st->http), "WATCH %s: ERROR event %ld %s: %s", path,
                          st->http, st->reason, st->message);
        }
        goto out;
    }
    if (x.wrc != DD_OK) {
        status_set(st, http, "", x.werr.msg);
        rc = dd_failf(err, x.wrc, "WATCH %s: %s", path, x.werr.msg);
        goto out;
    }
    if (ws.user_stop) {
        st->http = http;
        rc = DD_OK;
        goto out;
    }
    if (atomic_load(&c->interrupted)) {
        rc = fail_interrupted(st, err, "WATCH", path);
        goto out;
    }
    if (res != CURLE_OK && http == 200) {
        status_set(st, http, "", c->errbuf[0] ? c->errbuf : curl_easy_strerror(res));
        rc = dd_failf(err, DD_EIO, "WATCH %s: %s", path, st->message);
        goto out;
    }
    if (res != CURLE_OK && http == 0) {
        status_set(st, 0, "", c->errbuf[0] ? c->errbuf : curl_easy_strerror(res));
        rc = dd_failf(err, DD_EIO, "WATCH %s: %s", path, st->message);
        goto out;
    }
    if (http != 200) {
        status_from_body(st, http, x.body.p, x.body.n);
        rc = fail_http(st, err, "WATCH", path, http == 410 ? DD_ENOTFOUND : rc_for_http(http));
        goto out;
    }
    st->http = http;
    if (x.wp->depth != 0) {
        snprintf(st->message, sizeof(st->message), "stream ended inside an event");
        rc = dd_failf(err, DD_EIO, "WATCH %s: the stream ended inside an event", path);
        goto out;
    }
    rc = DD_OK;
    goto out;
toolong:
    rc = dd_failf(err, DD_EINVAL, "WATCH %s: path too long", path);
out:
    kube_watch_parser_free(x.wp);
    curl_slist_free_all(hdrs);
    kbuf_release(&x.body);
    kbuf_release(&url);
    return rc;
}
