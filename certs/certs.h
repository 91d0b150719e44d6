/*
 * certs.h - `dra-doctor certs`: the webhook's CA and serving certificate
 * (OpenSSL 3 EVP), written as PEM files and/or a Secret, with the
 * ValidatingWebhookConfiguration's caBundle patched, and rotation before
 * expiry that keeps the old CA in the bundle during the overlap.
 *
 * The material is four PEM texts with the names a kubernetes.io/tls Secret
 * uses: ca.crt (the CA bundle: the current CA first, then older CAs that have
 * not expired yet), ca.key, tls.crt (the serving certificate alone) and
 * tls.key.  certs_run reads what exists, decides what to keep, and publishes
 * in the order that never leaves the API server distrusting the webhook:
 * CA material and caBundle first, then (after a propagation delay) the
 * serving key, then the serving certificate.  docs/certs.md tells why.
 *
 * All OpenSSL calls live in certs.c; nothing here exposes an OpenSSL type.
 * Not thread-safe in the sense that one run must not race another on the
 * same directory or Secret (the Secret update is guarded by resourceVersion,
 * the files are not).
 */
#ifndef DD_CERTS_H
#define DD_CERTS_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "err.h"

struct kube_client;

enum certs_key_type {
    CERTS_KEY_ECDSA = 0, /* ECDSA on P-256 */
    CERTS_KEY_RSA        /* RSA of rsa_bits */
};

/*
 * What one run does.  Every pointer is borrowed for the duration of the call
 * (certs_opts_check, certs_run); nothing is freed or kept.  Fill it with
 * certs_opts_init first: zero is not the default for every field.
 */
struct certs_opts {
    const char *service;        /* Service name (DNS-1035 label); required */
    const char *namespace_;     /* its namespace (DNS-1123 label); required */
    const char *const *dns;     /* ndns extra DNS SANs (lower-cased; "*.x" allowed) */
    size_t ndns;                /* at most 100 */
    const char *const *ips;     /* nips extra IP SANs, IPv4 or IPv6 text */
    size_t nips;                /* at most 100 */
    int days;                   /* serving certificate validity, days; 1..36500, default 365 */
    int ca_days;                /* CA validity, days; 1..36500, default 3650 */
    enum certs_key_type key_type; /* serving key (and a new CA's key); default ECDSA */
    int rsa_bits;               /* RSA modulus, 2048..8192 in steps of 1024; default 2048 */
    long long rotate_before;    /* seconds: renew what expires sooner than this; default 30 d */
    int force;                  /* renew the serving certificate even if it is good */
    int new_ca;                 /* make a new CA even if the current one is good (implies force) */
    int propagation_delay;      /* seconds between publishing a new CA bundle and a serving
                                 * certificate from a new issuer, 0..600; -1 (the default):
                                 * 5 when webhook_config is set, else 0 */
    const char *out_dir;        /* directory for the four files (made if missing); NULL: none */
    const char *secret_ns;      /* Secret to read and write, with secret_name; NULL: none */
    const char *secret_name;
    const char *webhook_config; /* ValidatingWebhookConfiguration whose caBundles to set; or NULL */
    struct kube_client *kube;   /* required when secret_name or webhook_config is set */
    time_t now;                 /* the time decisions and new certificates use; 0: time(NULL) */
    FILE *log;                  /* one line per action taken; NULL: quiet */
};

/* Sets every field of o to its default (no names, no targets). */
void certs_opts_init(struct certs_opts *o);

/*
 * Checks o without touching any file or API: names, SANs (every --dns is a
 * DNS name, every --ip an address), ranges, and that there is somewhere to
 * write (out_dir and/or a Secret).  kube is not checked here (a CLI checks
 * before it connects).  Returns DD_OK or DD_EINVAL with a message that names
 * the flag, as a usage error.
 */
enum dd_rc certs_opts_check(const struct certs_opts *o, struct dd_err *err);

/* What certs_run did (OUT; zeroed by certs_run). */
struct certs_result {
    int ca_created;         /* a new CA was made (first run, rotation, or new_ca) */
    int serving_issued;     /* a new serving certificate and key were made */
    int files_written;      /* files (re)written in out_dir */
    int secret_written;     /* 1 created, 2 updated (once or twice), 0 untouched */
    int webhooks_patched;   /* caBundle entries changed in the webhook configuration */
    int waited;             /* seconds slept for propagation */
    time_t ca_not_after;    /* the current CA's notAfter */
    time_t not_after;       /* the serving certificate's notAfter */
};

/*
 * One run: reads the existing material (the Secret when it exists and holds
 * any of the four keys, else out_dir), keeps what is valid, renews what is
 * not, and publishes it to out_dir, the Secret and the webhook configuration
 * in the safe order.  Writes nothing when everything is in place (the second
 * of two identical runs changes no byte).  res may be NULL.
 *
 * Errors: DD_EINVAL (o fails certs_opts_check, or no kube client for API
 * targets), DD_EPARSE (an existing file or Secret key is not the PEM it
 * should be: the message names it; remove it to start over), DD_EIO (file
 * I/O, API failures: the message names the file or object and the reason),
 * DD_ENOTFOUND (the webhook configuration does not exist), DD_ENOMEM.  A
 * failure may leave a prefix of the sequence done, which is always a safe
 * state; the next run completes it.
 */
enum dd_rc certs_run(const struct certs_opts *o, struct certs_result *res, struct dd_err *err);

/* ---- inspection (tests, diagnostics) ------------------------------------ */

/* A certificate as certs_inspect sees it.  Release with certs_info_release. */
struct certs_info {
    time_t not_before;
    time_t not_after;
    char serial[48];        /* hex, upper case, no separators */
    char subject_cn[256];   /* "" when the subject has no CN */
    int is_ca;              /* basicConstraints CA:TRUE */
    char key_type[32];      /* "ECDSA P-256", "RSA 2048", "EC <curve>" or the algorithm */
    char **sans;            /* owned: nsans strings "DNS:<name>" or "IP:<address>", in order */
    size_t nsans;
    int issued_by;          /* 1 when issuer_pem was given and one of its certificates is
                             * this one's issuer and its key verifies this one's signature */
};

/*
 * Reads the first certificate of pem[0..len) into info (OUT; release it even
 * on failure).  issuer_pem (may be NULL) is a PEM bundle of candidate
 * issuers.  Errors: DD_EPARSE (no certificate, with OpenSSL's reason),
 * DD_ENOMEM.
 */
enum dd_rc certs_inspect(const char *pem, size_t len, const char *issuer_pem, size_t issuer_len,
                         struct certs_info *info, struct dd_err *err);

/* Frees what info owns and zeroes it; info may be NULL. */
void certs_info_release(struct certs_info *info);

/*
 * Parses a duration: one or more <number><unit> groups, units s, m, h, d
 * ("720h", "30d", "1d12h"); a bare "0" is zero.  At most 100 years.
 * Returns 0 and *secs, or -1.
 */
int certs_parse_duration(const char *s, long long *secs);

/* `dra-doctor certs`: exit 0 done (or nothing to do), 1 runtime failure, 2 usage error. */
int certs_main(int argc, char **argv);

#endif
