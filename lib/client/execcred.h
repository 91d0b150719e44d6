/*
 * execcred.h - kubeconfig exec credential plugins (users[].user.exec), run the way
 * client-go runs them (k8s.io/client-go/plugin/pkg/client/auth/exec): the command with
 * its args and env, KUBERNETES_EXEC_INFO describing the request, stdin closed (dra-doctor
 * is never interactive), stderr passed through; stdout must be one ExecCredential of the
 * same apiVersion.  EKS (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`), AKS
 * (`kubelogin`) and OIDC (`kubectl oidc-login`) kubeconfigs use this.
 */
#ifndef DD_EXECCRED_H
#define DD_EXECCRED_H

#include "err.h"

#include <stddef.h>
#include <time.h>

/* The plugin's stdout: an ExecCredential is a few KiB (a certificate chain at most). */
#define EXECCRED_OUT_MAX ((size_t)1 << 20)
/* A plugin that neither answers nor exits in this time is killed. */
#define EXECCRED_TIMEOUT_S 120

/* What the kubeconfig says; every pointer owned (execcred_spec_release). */
struct execcred_spec {
    char *api_version;      /* client.authentication.k8s.io/v1 or /v1beta1 */
    char *command;          /* PATH-searched when it has no '/', else a path */
    char **argv;            /* argv[0] is command; NULL-terminated */
    char **env;             /* "NAME=value" added to the environment; NULL-terminated */
    char *install_hint;     /* installHint, or NULL */
    int provide_cluster_info;
    int interactive_always; /* interactiveMode: Always, which dra-doctor cannot honour */
    int timeout_s;          /* 0: EXECCRED_TIMEOUT_S (no kubeconfig field sets it) */
};

/* The credential a plugin returned; every pointer owned (execcred_release). */
struct execcred {
    char *token;      /* bearer token, or NULL */
    char *cert_pem;   /* client certificate and key, PEM, both or neither */
    char *key_pem;
    time_t expires;   /* expirationTimestamp; 0 when the plugin gave none */
};

/* A deep copy of src into *dst (zeroed first).  DD_ENOMEM leaves *dst released. */
enum dd_rc execcred_spec_dup(struct execcred_spec *dst, const struct execcred_spec *src,
                             struct dd_err *err);
void execcred_spec_release(struct execcred_spec *s);

/*
 * Runs the plugin and fills *out.  server, ca_pem (may be NULL) and insecure describe the
 * cluster, passed on only when the spec asks for it (provideClusterInfo).  Errors: DD_EIO
 * (cannot start it, it failed or timed out: the message names the command, its exit
 * status and the install hint), DD_EPARSE / DD_ETOOBIG (its output), DD_EINVAL
 * (interactiveMode Always).
 */
enum dd_rc execcred_run(const struct execcred_spec *s, const char *server, const char *ca_pem,
                        int insecure, struct execcred *out, struct dd_err *err);

/*
 * Parses a plugin's stdout buf[0..len): an ExecCredential whose apiVersion is api_version,
 * with status.token or status.clientCertificateData and status.clientKeyData, and an
 * optional status.expirationTimestamp (RFC 3339).  Fills *out (released first).
 */
enum dd_rc execcred_parse(const char *api_version, const char *buf, size_t len,
                          struct execcred *out, struct dd_err *err);

/*
 * The credential for spec s and its cluster, shared by every client of the process, as
 * client-go's exec authenticators share one per (spec, cluster): the informers of a controller
 * start together and would otherwise each run a slow cloud CLI.  The plugin runs (one run at a
 * time in the process) when nothing is cached, the cached credential expired, or it is stale:
 * the one the caller holds and the server refused (a 401), unless another client has already
 * replaced it.  A failed run caches nothing.  Copies the credential into *out (released
 * first); errors as execcred_run.  Thread-safe.
 */
enum dd_rc execcred_get(const struct execcred_spec *s, const char *server, const char *ca_pem,
                        int insecure, const struct execcred *stale, struct execcred *out,
                        struct dd_err *err);

/* Forgets every shared credential (tests; a process never needs it). */
void execcred_cache_clear(void);

/* 1 when c has expired at now (a credential without an expiry never does). */
int execcred_expired(const struct execcred *c, time_t now);

void execcred_release(struct execcred *c);

#endif
