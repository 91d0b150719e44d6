/*
 * execcred.c - kubeconfig exec credential plugins (see execcred.h).
 *
 * The plugin is started with posix_spawnp, never through a shell, so nothing in the
 * kubeconfig is interpreted twice.  Its stdout is read with a cap and a deadline: a
 * plugin that hangs (waiting for a browser login, say) or floods its output would
 * otherwise hang or exhaust the caller, which may be a merge gate or the controller.
 */
#include "client/execcred.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void free_strv(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static char **dup_strv(char *const *v, int *nomem)
{
    size_t n = 0;
    char **out;

    if (!v)
        return NULL;
    while (v[n])
        n++;
    if (!(out = calloc(n + 1, sizeof(*out)))) {
        *nomem = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(out[i] = strdup(v[i]))) {
            free_strv(out);
            *nomem = 1;
            return NULL;
        }
    return out;
}

static char *dup_or_null(const char *s, int *nomem)
{
    char *p;

    if (!s)
        return NULL;
    if (!(p = strdup(s)))
        *nomem = 1;
    return p;
}

void execcred_spec_release(struct execcred_spec *s)
{
    if (!s)
        return;
    free(s->api_version);
    free(s->command);
    free_strv(s->argv);
    free_strv(s->env);
    free(s->install_hint);
    memset(s, 0, sizeof(*s));
}

enum dd_rc execcred_spec_dup(struct execcred_spec *dst, const struct execcred_spec *src,
                             struct dd_err *err)
{
    int nomem = 0;

    memset(dst, 0, sizeof(*dst));
    dst->api_version = dup_or_null(src->api_version, &nomem);
    dst->command = dup_or_null(src->command, &nomem);
    dst->argv = dup_strv(src->argv, &nomem);
    dst->env = dup_strv(src->env, &nomem);
    dst->install_hint = dup_or_null(src->install_hint, &nomem);
    dst->provide_cluster_info = src->provide_cluster_info;
    dst->interactive_always = src->interactive_always;
    dst->timeout_s = src->timeout_s;
    if (nomem) {
        execcred_spec_release(dst);
        return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    return DD_OK;
}

void execcred_release(struct execcred *c)
{
    if (!c)
        return;
    free(c->token);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof(*c));
}

int execcred_expired(const struct execcred *c, time_t now)
{
    return c->expires != 0 && now >= c->expires;
}

/* RFC 3339 as Kubernetes writes metav1.Time ("2026-12-02T10:00:00Z", fractions and
 * offsets allowed).  Returns 0 and *t, or -1. */
static int parse_rfc3339(const char *s, time_t *t)
{
    struct tm tm;
    const char *p;
    long off = 0;

    memset(&tm, 0, sizeof(tm));
    p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
               isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
               isdigit((unsigned char)p[5])) {
        off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
        if (*p == '+')
            off = -off;
        p += 6;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    *t = timegm(&tm) + off;
    return 0;
}

/* A string member, or NULL; DD_EPARSE when present but not a string. */
static enum dd_rc str_field(const cJSON *o, const char *key, const char **out, struct dd_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return DD_OK;
    if (!cJSON_IsString(v))
        return dd_failf(err, DD_EPARSE, "exec plugin output: %s is not a string", key);
    *out = v->valuestring;
    return DD_OK;
}

enum dd_rc execcred_parse(const char *api_version, const char *buf, size_t len,
                          struct execcred *out, struct dd_err *err)
{
    const char *kind, *av, *token, *cert, *key, *exp;
    const cJSON *status;
    cJSON *j;
    enum dd_rc rc;
    int nomem = 0;

    execcred_release(out);
    if (len > EXECCRED_OUT_MAX)
        return dd_failf(err, DD_ETOOBIG, "exec plugin output is larger than %zu bytes",
                        EXECCRED_OUT_MAX);
    j = cJSON_ParseWithLength(buf, len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return dd_failf(err, DD_EPARSE, "exec plugin output is not a JSON object (an "
                        "ExecCredential was expected)");
    }
    if ((rc = str_field(j, "kind", &kind, err)) != DD_OK ||
        (rc = str_field(j, "apiVersion", &av, err)) != DD_OK)
        goto out;
    if (!kind || strcmp(kind, "ExecCredential") != 0) {
        rc = dd_failf(err, DD_EPARSE, "exec plugin output has kind \"%s\", not ExecCredential",
                      kind ? kind : "");
        goto out;
    }
    /* client-go refuses an answer in another version than it asked for. */
    if (!av || strcmp(av, api_version) != 0) {
        rc = dd_failf(err, DD_EPARSE, "exec plugin answered apiVersion \"%s\"; the kubeconfig "
                      "asked for \"%s\"", av ? av : "", api_version);
        goto out;
    }
    status = cJSON_GetObjectItemCaseSensitive(j, "status");
    if (!cJSON_IsObject(status)) {
        rc = dd_failf(err, DD_EPARSE, "exec plugin output has no status");
        goto out;
    }
    if ((rc = str_field(status, "token", &token, err)) != DD_OK ||
        (rc = str_field(status, "clientCertificateData", &cert, err)) != DD_OK ||
        (rc = str_field(status, "clientKeyData", &key, err)) != DD_OK ||
        (rc = str_field(status, "expirationTimestamp", &exp, err)) != DD_OK)
        goto out;
    if (token && !token[0])
        token = NULL;
    if (cert && !cert[0])
        cert = NULL;
    if (key && !key[0])
        key = NULL;
    if (!cert != !key) {
        rc = dd_failf(err, DD_EPARSE, "exec plugin output has %s without %s",
                      cert ? "clientCertificateData" : "clientKeyData",
                      cert ? "clientKeyData" : "clientCertificateData");
        goto out;
    }
    if (!token && !cert) {
        rc = dd_failf(err, DD_EPARSE, "exec plugin output has neither status.token nor "
                      "status.clientCertificateData and clientKeyData");
        goto out;
    }
    for (const char *p = token; p && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            rc = dd_failf(err, DD_EPARSE, "exec plugin output: status.token contains control "
                          "characters");
            goto out;
        }
    if (exp && exp[0] && parse_rfc3339(exp, &out->expires) != 0) {
        rc = dd_failf(err, DD_EPARSE, "exec plugin output: status.expirationTimestamp \"%s\" is "
                      "not an RFC 3339 time", exp);
        goto out;
    }
    out->token = dup_or_null(token, &nomem);
    out->cert_pem = dup_or_null(cert, &nomem);
    out->key_pem = dup_or_null(key, &nomem);
    rc = nomem ? dd_failf(err, DD_ENOMEM, "out of memory") : DD_OK;
out:
    if (rc != DD_OK)
        execcred_release(out);
    cJSON_Delete(j);
    return rc;
}

static char *b64_encode(const char *in, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    const unsigned char *p = (const unsigned char *)in;
    size_t i;

    if (!out)
        return NULL;
    for (i = 0; i + 2 < n; i += 3) {
        *o++ = tab[p[i] >> 2];
        *o++ = tab[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
        *o++ = tab[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
        *o++ = tab[p[i + 2] & 63];
    }
    if (i < n) {
        *o++ = tab[p[i] >> 2];
        if (i + 1 < n) {
            *o++ = tab[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
            *o++ = tab[(p[i + 1] & 15) << 2];
        } else {
            *o++ = tab[(p[i] & 3) << 4];
            *o++ = '=';
        }
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* KUBERNETES_EXEC_INFO=<the ExecCredential the plugin is asked to complete>. */
static char *exec_info(const struct execcred_spec *s, const char *server, const char *ca_pem,
                       int insecure)
{
    cJSON *root = cJSON_CreateObject(), *spec, *cl;
    char *json = NULL, *var = NULL, *ca = NULL;
    int bad = !root;

    if (!bad) {
        bad |= !cJSON_AddStringToObject(root, "kind", "ExecCredential");
        bad |= !cJSON_AddStringToObject(root, "apiVersion", s->api_version);
        bad |= !(spec = cJSON_AddObjectToObject(root, "spec"));
        bad |= !bad && !cJSON_AddBoolToObject(spec, "interactive", 0);
        if (!bad && s->provide_cluster_info) {
            bad |= !(cl = cJSON_AddObjectToObject(spec, "cluster"));
            bad |= !bad && !cJSON_AddStringToObject(cl, "server", server ? server : "");
            if (!bad && ca_pem) {
                bad |= !(ca = b64_encode(ca_pem, strlen(ca_pem)));
                bad |= !bad && !cJSON_AddStringToObject(cl, "certificate-authority-data", ca);
            }
            if (!bad && insecure)
                bad |= !cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify", 1);
        }
    }
    if (!bad && (json = cJSON_PrintUnformatted(root))) {
        size_t n = strlen("KUBERNETES_EXEC_INFO=") + strlen(json) + 1;
        if ((var = malloc(n)))
            snprintf(var, n, "KUBERNETES_EXEC_INFO=%s", json);
    }
    free(ca);
    free(json);
    cJSON_Delete(root);
    return var;
}

/* The name part of "NAME=value" equals that of another such string. */
static int same_name(const char *a, const char *b)
{
    size_t n = strcspn(a, "=");

    return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* The plugin's environment: ours, then the kubeconfig's env (which wins), then the info. */
static char **make_env(const struct execcred_spec *s, char *info)
{
    size_t n = 0, k = 0, extra = 0;
    char **e;

    for (char **p = environ; p && *p; p++)
        n++;
    for (char **p = s->env; p && *p; p++)
        extra++;
    if (!(e = calloc(n + extra + 2, sizeof(*e))))
        return NULL;
    for (char **p = environ; p && *p; p++) {
        int over = same_name(*p, "KUBERNETES_EXEC_INFO=");
        for (char **q = s->env; !over && q && *q; q++)
            over = same_name(*p, *q);
        if (!over)
            e[k++] = *p;
    }
    for (char **q = s->env; q && *q; q++)
        e[k++] = *q;
    e[k++] = info;
    e[k] = NULL;
    return e;
}

static double mono_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum dd_rc not_started(const struct execcred_spec *s, int e, struct dd_err *err)
{
    return dd_failf(err, DD_EIO, "exec credential plugin \"%s\" cannot be started: %s%s%s",
                    s->command, strerror(e), s->install_hint ? "\n" : "",
                    s->install_hint ? s->install_hint : "");
}

enum dd_rc execcred_run(const struct execcred_spec *s, const char *server, const char *ca_pem,
                        int insecure, struct execcred *out, struct dd_err *err)
{
    posix_spawn_file_actions_t fa;
    char *info = NULL, **env = NULL, *buf = NULL;
    size_t n = 0, cap = 0;
    int fds[2] = { -1, -1 }, status = 0, e, too_big = 0, timed_out = 0, limit;
    double deadline;
    enum dd_rc rc;
    pid_t pid;

    execcred_release(out);
    if (s->interactive_always)
        return dd_failf(err, DD_EINVAL, "exec credential plugin \"%s\" needs interactiveMode "
                        "Always, and dra-doctor never runs one interactively; log in with kubectl "
                        "first, or use a plugin mode that needs no terminal", s->command);
    if (!(info = exec_info(s, server, ca_pem, insecure)) || !(env = make_env(s, info))) {
        free(info);
        return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        rc = dd_failf(err, DD_EIO, "exec credential plugin: pipe: %s", strerror(errno));
        goto out;
    }
    if ((e = posix_spawn_file_actions_init(&fa)) != 0) {
        rc = dd_failf(err, DD_ENOMEM, "out of memory");
        goto out;
    }
    /* stdin closed: an interactive prompt must fail, not wait for a user who is not there. */
    e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!e)
        e = posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    if (!e)
        e = posix_spawnp(&pid, s->command, &fa, NULL, s->argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    fds[1] = -1;
    if (e) {
        rc = not_started(s, e, err);
        goto out;
    }
    limit = s->timeout_s > 0 ? s->timeout_s : EXECCRED_TIMEOUT_S;
    deadline = mono_now() + limit;
    for (;;) {
        struct pollfd pfd = { fds[0], POLLIN, 0 };
        double left = deadline - mono_now();
        ssize_t r;

        if (left <= 0) {
            timed_out = 1;
            break;
        }
        if (poll(&pfd, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (!pfd.revents)
            continue;
        if (n + 4096 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 8192;
            char *nb;
            if (ncap > EXECCRED_OUT_MAX + 4096 + 1)
                ncap = EXECCRED_OUT_MAX + 4096 + 1;
            if (n + 4096 + 1 > ncap) {
                too_big = 1;
                break;
            }
            if (!(nb = realloc(buf, ncap))) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                rc = dd_failf(err, DD_ENOMEM, "out of memory");
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        r = read(fds[0], buf + n, 4096);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n > EXECCRED_OUT_MAX) {
            too_big = 1;
            break;
        }
    }
    if (too_big || timed_out)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        rc = dd_failf(err, DD_EIO, "exec credential plugin \"%s\" gave no credential within %d s "
                      "(is it waiting for a login? dra-doctor runs it without a terminal)",
                      s->command, limit);
    } else if (too_big) {
        rc = dd_failf(err, DD_ETOOBIG, "exec credential plugin \"%s\" wrote more than %zu bytes",
                      s->command, EXECCRED_OUT_MAX);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && n == 0) {
        /* posix_spawnp reports a missing command as exit 127 on some libcs. */
        rc = not_started(s, ENOENT, err);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = dd_failf(err, DD_EIO, "exec credential plugin \"%s\" %s %d (its own message is on "
                      "stderr above)", s->command,
                      WIFEXITED(status) ? "exited with status" : "was killed by signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    } else {
        rc = execcred_parse(s->api_version, buf ? buf : "", n, out, err);
        if (rc != DD_OK && err) {
            char msg[DD_ERR_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            dd_failf(err, rc, "exec credential plugin \"%s\": %s", s->command, msg);
        }
    }
out:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    free(buf);
    free(env);
    free(info);
    return rc;
}

/* ---- one credential per (spec, cluster) in the process --------------------------------- */

/* More distinct plugins than a process talks to: beyond it the oldest is forgotten. */
#define CACHE_MAX 16

struct cached {
    char *key;
    size_t keylen;
    struct execcred cred;
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cached cache[CACHE_MAX];
static size_t ncache;

/* Appends s and its terminating NUL (or a lone 0x01 for NULL) to buf[*n..cap). */
static int key_add(char **buf, size_t *n, size_t *cap, const char *s)
{
    size_t len = s ? strlen(s) + 1 : 1;

    if (*n + len > *cap) {
        size_t c = (*cap + len) * 2;
        char *b = realloc(*buf, c);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *n, s ? s : "\x01", len);
    *n += len;
    return 0;
}

/* Everything that makes two plugin runs give different credentials, NUL-separated. */
static char *cache_key(const struct execcred_spec *s, const char *server, const char *ca_pem,
                       int insecure, size_t *len)
{
    char *buf = NULL, *const *v, count[32];
    size_t n = 0, cap = 0, k;
    int bad = 0;

    bad |= key_add(&buf, &n, &cap, s->api_version);
    bad |= key_add(&buf, &n, &cap, s->command);
    /* Each list after its length, so no argument can pass for an environment entry. */
    for (k = 0; s->argv && s->argv[k]; k++)
        ;
    snprintf(count, sizeof(count), "%zu", k);
    bad |= key_add(&buf, &n, &cap, count);
    for (v = s->argv; v && *v; v++)
        bad |= key_add(&buf, &n, &cap, *v);
    for (k = 0; s->env && s->env[k]; k++)
        ;
    snprintf(count, sizeof(count), "%zu", k);
    bad |= key_add(&buf, &n, &cap, count);
    for (v = s->env; v && *v; v++)
        bad |= key_add(&buf, &n, &cap, *v);
    bad |= key_add(&buf, &n, &cap, s->provide_cluster_info ? server : NULL);
    bad |= key_add(&buf, &n, &cap, s->provide_cluster_info ? ca_pem : NULL);
    bad |= key_add(&buf, &n, &cap, s->provide_cluster_info && insecure ? "insecure" : NULL);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int same_cred(const struct execcred *a, const struct execcred *b)
{
    return same_str(a->token, b->token) && same_str(a->cert_pem, b->cert_pem) &&
           same_str(a->key_pem, b->key_pem) && a->expires == b->expires;
}

static enum dd_rc cred_copy(struct execcred *dst, const struct execcred *src, struct dd_err *err)
{
    int nomem = 0;

    execcred_release(dst);
    dst->token = dup_or_null(src->token, &nomem);
    dst->cert_pem = dup_or_null(src->cert_pem, &nomem);
    dst->key_pem = dup_or_null(src->key_pem, &nomem);
    dst->expires = src->expires;
    if (nomem) {
        execcred_release(dst);
        return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    return DD_OK;
}

static void cached_release(struct cached *e)
{
    free(e->key);
    execcred_release(&e->cred);
    memset(e, 0, sizeof(*e));
}

enum dd_rc execcred_get(const struct execcred_spec *s, const char *server, const char *ca_pem,
                        int insecure, const struct execcred *stale, struct execcred *out,
                        struct dd_err *err)
{
    struct cached *e = NULL;
    struct execcred fresh = { 0 };
    size_t len, i;
    char *key;
    enum dd_rc rc;

    execcred_release(out);
    if (!(key = cache_key(s, server, ca_pem, insecure, &len)))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    /* Held across the run: clients that need the same credential wait for it, not rerun it. */
    pthread_mutex_lock(&cache_mu);
    for (i = 0; i < ncache && !e; i++)
        if (cache[i].keylen == len && !memcmp(cache[i].key, key, len))
            e = &cache[i];
    if (e && !execcred_expired(&e->cred, time(NULL)) && !(stale && same_cred(stale, &e->cred))) {
        rc = cred_copy(out, &e->cred, err);
        goto out;
    }
    if ((rc = execcred_run(s, server, ca_pem, insecure, &fresh, err)) != DD_OK) {
        if (e) { /* what was refused or expired is no use to the next caller either */
            cached_release(e);
            *e = cache[--ncache];
            memset(&cache[ncache], 0, sizeof(cache[0]));
        }
        goto out;
    }
    if (!e) {
        if (ncache == CACHE_MAX) {
            cached_release(&cache[0]);
            memmove(&cache[0], &cache[1], (CACHE_MAX - 1) * sizeof(cache[0]));
            ncache--;
        }
        e = &cache[ncache++];
        e->key = key;
        e->keylen = len;
        key = NULL;
    }
    execcred_release(&e->cred);
    e->cred = fresh;
    rc = cred_copy(out, &e->cred, err);
out:
    pthread_mutex_unlock(&cache_mu);
    free(key);
    return rc;
}

void execcred_cache_clear(void)
{
    pthread_mutex_lock(&cache_mu);
    while (ncache)
        cached_release(&cache[--ncache]);
    pthread_mutex_unlock(&cache_mu);
}
