/*
 * certs.c - `dra-doctor certs`: the webhook's CA and serving certificate.
 *
 * Layout: OpenSSL helpers (keys, certificates, PEM), the two stores (a
 * directory, a Secret), the plan (what to keep, what to make), publishing in
 * the safe order, and the command line.  Every OpenSSL call is checked; its
 * error queue becomes part of the message (ossl_failf).
 */
#include "certs.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "client/kube.h"

#define CA_CN "dra-doctor-ca"
#define FILE_MAX ((size_t)1 << 20)   /* a PEM file of ours is a few KiB */
#define BUNDLE_MAX 16                /* certificates read from a ca.crt */
#define OLD_CAS_KEPT 4               /* old CAs kept in the bundle besides the current one */
#define EXTRA_NAMES_MAX 100
#define SKEW_SECONDS 300             /* notBefore is backdated by this much for clock skew */
#define DAYS_MAX 36500
#define DURATION_MAX (100LL * 365 * 86400)
#define DELAY_MAX 600
#define DELAY_WEBHOOK 5              /* default propagation delay with --webhook-config */
#define SECRET_TYPE "kubernetes.io/tls"
#define MANAGED_BY "dra-doctor"

/* The four files (the names a kubernetes.io/tls Secret uses); publish() fixes the write order. */
enum { F_CA_CRT, F_CA_KEY, F_TLS_CRT, F_TLS_KEY, NFILES };
static const char *const file_names[NFILES] = { "ca.crt", "ca.key", "tls.crt", "tls.key" };
static const int file_secret[NFILES] = { 0, 1, 0, 1 }; /* mode 0600 when set */

/* ---- errors and small helpers ------------------------------------------- */

/* Records "<what>: <OpenSSL's queued errors>" and empties the queue. */
static enum dd_rc ossl_failf(struct dd_err *err, enum dd_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum dd_rc ossl_failf(struct dd_err *err, enum dd_rc rc, const char *fmt, ...)
{
    char what[512], reason[480] = "", one[256];
    unsigned long e;
    size_t n;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    while ((e = ERR_get_error()) != 0) {
        ERR_error_string_n(e, one, sizeof(one));
        n = strlen(reason);
        if (n + 3 < sizeof(reason))
            snprintf(reason + n, sizeof(reason) - n, "%s%s", n ? "; " : "", one);
    }
    return dd_failf(err, rc, "%.500s: %s", what, reason[0] ? reason : "no reason given by OpenSSL");
}

/* Records "<what>: <the message err already holds>" (the API client's reason). */
static enum dd_rc fail_wrap(struct dd_err *err, enum dd_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum dd_rc fail_wrap(struct dd_err *err, enum dd_rc rc, const char *fmt, ...)
{
    char prev[DD_ERR_MSG_MAX], what[256];
    va_list ap;

    snprintf(prev, sizeof(prev), "%s", err && err->msg[0] ? err->msg : "failed");
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return dd_failf(err, rc, "%s: %s", what, prev);
}

static void say(const struct certs_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct certs_opts *o, const char *fmt, ...)
{
    va_list ap;

    if (!o->log)
        return;
    va_start(ap, fmt);
    vfprintf(o->log, fmt, ap);
    va_end(ap);
    fputc('\n', o->log);
    fflush(o->log);
}

static char *memdup0(const char *p, size_t n)
{
    char *s = malloc(n + 1);

    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* "2026-05-01T12:00:00Z" */
static const char *fmt_time(time_t t, char *buf, size_t n)
{
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, n, "@%lld", (long long)t);
    return buf;
}

/* The largest unit that states secs exactly: "30d", "36h", "90s". */
static const char *fmt_duration(long long secs, char *buf, size_t n)
{
    if (secs && secs % 86400 == 0)
        snprintf(buf, n, "%lldd", secs / 86400);
    else if (secs && secs % 3600 == 0)
        snprintf(buf, n, "%lldh", secs / 3600);
    else if (secs && secs % 60 == 0)
        snprintf(buf, n, "%lldm", secs / 60);
    else
        snprintf(buf, n, "%llds", secs);
    return buf;
}

int certs_parse_duration(const char *s, long long *secs)
{
    long long total = 0, v;
    int any = 0;

    if (!s || !*s)
        return -1;
    if (!strcmp(s, "0")) {
        *secs = 0;
        return 0;
    }
    while (*s) {
        if (*s < '0' || *s > '9')
            return -1;
        for (v = 0; *s >= '0' && *s <= '9'; s++) {
            v = v * 10 + (*s - '0');
            if (v > DURATION_MAX)
                return -1;
        }
        switch (*s++) {
        case 's': break;
        case 'm': v *= 60; break;
        case 'h': v *= 3600; break;
        case 'd': v *= 86400; break;
        default: return -1;
        }
        total += v;
        if (total > DURATION_MAX)
            return -1;
        any = 1;
    }
    if (!any)
        return -1;
    *secs = total;
    return 0;
}

static time_t asn1_time(const ASN1_TIME *t)
{
    struct tm tm;

    memset(&tm, 0, sizeof(tm));
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return (time_t)-1;
    return timegm(&tm);
}

static time_t cert_not_after(const X509 *x)
{
    return asn1_time(X509_get0_notAfter(x));
}

/* ---- names and subject alternative names -------------------------------- */

/* A DNS label: 1..63 of [a-z0-9-], alphanumeric at both ends; alpha first when alpha_first. */
static int label_ok(const char *s, size_t n, int alpha_first)
{
    size_t i;

    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return 0;
    if (alpha_first && !(s[0] >= 'a' && s[0] <= 'z'))
        return 0;
    for (i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return 1;
}

/* A DNS-1123 subdomain (object names), or with wildcard a SAN that may start with "*.". */
static int dns_name_ok(const char *s, int wildcard)
{
    const char *dot;
    size_t n = strlen(s);

    if (n == 0 || n > 253)
        return 0;
    if (wildcard && s[0] == '*' && s[1] == '.')
        s += 2;
    for (;;) {
        dot = strchr(s, '.');
        if (!label_ok(s, dot ? (size_t)(dot - s) : strlen(s), 0))
            return 0;
        if (!dot)
            return 1;
        s = dot + 1;
    }
}

/* Names of the serving certificate's SANs: "DNS:<name>" or "IP:<canonical address>". */
struct sans {
    char **v;
    size_t n;
};

static void sans_release(struct sans *s)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* Appends "<kind>:<val>" unless present. */
static enum dd_rc sans_add(struct sans *s, const char *kind, const char *val, struct dd_err *err)
{
    size_t i, n = strlen(kind) + strlen(val) + 2;
    char *e = malloc(n), **v;

    if (!e)
        return dd_failf(err, DD_ENOMEM, "out of memory");
    snprintf(e, n, "%s:%s", kind, val);
    for (i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], e)) {
            free(e);
            return DD_OK;
        }
    v = realloc(s->v, (s->n + 1) * sizeof(*v));
    if (!v) {
        free(e);
        return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    s->v = v;
    s->v[s->n++] = e;
    return DD_OK;
}

/* Parses an IPv4 or IPv6 literal: address length (4 or 16) into addr, 0 when it is neither. */
static int parse_ip(const char *s, unsigned char addr[16])
{
    if (inet_pton(AF_INET, s, addr) == 1)
        return 4;
    if (inet_pton(AF_INET6, s, addr) == 1)
        return 16;
    return 0;
}

static void ip_text(const unsigned char *addr, int len, char *buf, size_t n)
{
    if (!inet_ntop(len == 4 ? AF_INET : AF_INET6, addr, buf, (socklen_t)n))
        snprintf(buf, n, "(bad address)");
}

/*
 * The SANs o asks for, validated: the four in-cluster names of the Service,
 * then --dns (lower-cased), then --ip (canonical text).  Duplicates dropped.
 */
static enum dd_rc wanted_sans(const struct certs_opts *o, struct sans *s, struct dd_err *err)
{
    static const char *const forms[] = { "%s.%s.svc", "%s.%s.svc.cluster.local", "%s.%s", "%s" };
    char name[512], text[INET6_ADDRSTRLEN];
    unsigned char addr[16];
    enum dd_rc rc = DD_OK;
    size_t i, j;
    int len;

    memset(s, 0, sizeof(*s));
    for (i = 0; i < sizeof(forms) / sizeof(forms[0]) && rc == DD_OK; i++) {
        snprintf(name, sizeof(name), forms[i], o->service, o->namespace_);
        rc = sans_add(s, "DNS", name, err);
    }
    for (i = 0; i < o->ndns && rc == DD_OK; i++) {
        const char *d = o->dns[i] ? o->dns[i] : "";
        size_t n = strlen(d);

        if (n >= sizeof(name)) {
            rc = dd_failf(err, DD_EINVAL, "--dns \"%.64s...\": longer than 253 characters", d);
            break;
        }
        for (j = 0; j <= n; j++)
            name[j] = (char)tolower((unsigned char)d[j]);
        if (!dns_name_ok(name, 1)) {
            rc = dd_failf(err, DD_EINVAL,
                          "--dns \"%s\": not a DNS name (labels of a-z, 0-9 and '-', each 1-63 "
                          "characters and not starting or ending with '-', separated by dots; "
                          "\"*.\" allowed first)",
                          d);
            break;
        }
        rc = sans_add(s, "DNS", name, err);
    }
    for (i = 0; i < o->nips && rc == DD_OK; i++) {
        const char *ip = o->ips[i] ? o->ips[i] : "";

        if (!(len = parse_ip(ip, addr))) {
            rc = dd_failf(err, DD_EINVAL,
                          "--ip \"%.100s\": not an IPv4 address (192.0.2.10) or an IPv6 address "
                          "(2001:db8::10)",
                          ip);
            break;
        }
        ip_text(addr, len, text, sizeof(text));
        rc = sans_add(s, "IP", text, err);
    }
    if (rc != DD_OK)
        sans_release(s);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether two SAN lists hold the same set (order and duplicates aside). */
static int sans_equal(const struct sans *a, char **b, size_t nb)
{
    struct sans u = { NULL, 0 };
    char **x = NULL;
    size_t i;
    int eq = 0;

    /* Dedupe b (a is deduped by construction), then compare sorted copies. */
    for (i = 0; i < nb; i++) {
        const char *colon = strchr(b[i], ':');
        char kind[8];

        if (!colon || (size_t)(colon - b[i]) >= sizeof(kind))
            goto out;
        memcpy(kind, b[i], (size_t)(colon - b[i]));
        kind[colon - b[i]] = '\0';
        if (sans_add(&u, kind, colon + 1, NULL) != DD_OK)
            goto out;
    }
    if (u.n != a->n)
        goto out;
    if (a->n) {
        if (!(x = malloc(a->n * sizeof(*x))))
            goto out;
        memcpy(x, a->v, a->n * sizeof(*x));
        qsort(x, a->n, sizeof(*x), cmp_str);
        qsort(u.v, u.n, sizeof(*u.v), cmp_str);
        for (i = 0; i < a->n; i++)
            if (strcmp(x[i], u.v[i]))
                goto out;
    }
    eq = 1;
out:
    free(x);
    sans_release(&u);
    return eq;
}

/* ---- options ------------------------------------------------------------ */

void certs_opts_init(struct certs_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->days = 365;
    o->ca_days = 3650;
    o->key_type = CERTS_KEY_ECDSA;
    o->rsa_bits = 2048;
    o->rotate_before = 30LL * 86400;
    o->propagation_delay = -1;
}

enum dd_rc certs_opts_check(const struct certs_opts *o, struct dd_err *err)
{
    struct sans s;
    enum dd_rc rc;

    if (!o->service || !label_ok(o->service, strlen(o->service), 1))
        return dd_failf(err, DD_EINVAL,
                        o->service ? "--service \"%s\": not a Service name (a DNS-1035 label: "
                                     "1-63 characters of a-z, 0-9 and '-', starting with a letter)"
                                   : "--service is required%s",
                        o->service ? o->service : "");
    if (!o->namespace_ || !label_ok(o->namespace_, strlen(o->namespace_), 0))
        return dd_failf(err, DD_EINVAL,
                        o->namespace_ ? "--namespace \"%s\": not a namespace name (a DNS-1123 "
                                        "label: 1-63 characters of a-z, 0-9 and '-')"
                                      : "--namespace is required%s",
                        o->namespace_ ? o->namespace_ : "");
    if (o->ndns > EXTRA_NAMES_MAX || o->nips > EXTRA_NAMES_MAX)
        return dd_failf(err, DD_EINVAL, "at most %d --dns and %d --ip", EXTRA_NAMES_MAX,
                        EXTRA_NAMES_MAX);
    if (o->days < 1 || o->days > DAYS_MAX)
        return dd_failf(err, DD_EINVAL, "--days %d: must be 1..%d", o->days, DAYS_MAX);
    if (o->ca_days < 1 || o->ca_days > DAYS_MAX)
        return dd_failf(err, DD_EINVAL, "--ca-days %d: must be 1..%d", o->ca_days, DAYS_MAX);
    if (o->key_type != CERTS_KEY_ECDSA && o->key_type != CERTS_KEY_RSA)
        return dd_failf(err, DD_EINVAL, "--key-type: must be ecdsa or rsa");
    if (o->rsa_bits < 2048 || o->rsa_bits > 8192 || o->rsa_bits % 1024)
        return dd_failf(err, DD_EINVAL, "--rsa-bits %d: must be 2048, 3072, 4096 ... 8192",
                        o->rsa_bits);
    if (o->rotate_before < 0 || o->rotate_before > DURATION_MAX)
        return dd_failf(err, DD_EINVAL, "--rotate-before: must be 0 to 100 years");
    if (o->propagation_delay < -1 || o->propagation_delay > DELAY_MAX)
        return dd_failf(err, DD_EINVAL, "--propagation-delay %d: must be 0..%d seconds",
                        o->propagation_delay, DELAY_MAX);
    if (!o->out_dir && !o->secret_name)
        return dd_failf(err, DD_EINVAL,
                        "nowhere to keep the certificates: give --out-dir and/or --secret");
    if (o->out_dir && !o->out_dir[0])
        return dd_failf(err, DD_EINVAL, "--out-dir: empty path");
    if (o->secret_name && (!dns_name_ok(o->secret_name, 0) || !o->secret_ns ||
                           !label_ok(o->secret_ns, strlen(o->secret_ns), 0)))
        return dd_failf(err, DD_EINVAL,
                        "--secret \"%s/%s\": not NAMESPACE/NAME (a DNS-1123 label, then a "
                        "DNS-1123 subdomain)",
                        o->secret_ns ? o->secret_ns : "", o->secret_name);
    if (o->webhook_config && !dns_name_ok(o->webhook_config, 0))
        return dd_failf(err, DD_EINVAL,
                        "--webhook-config \"%s\": not an object name (a DNS-1123 subdomain)",
                        o->webhook_config);
    rc = wanted_sans(o, &s, err);
    sans_release(&s);
    return rc;
}

/* ---- keys --------------------------------------------------------------- */

static EVP_PKEY *new_key(enum certs_key_type t, int bits, struct dd_err *err)
{
    EVP_PKEY *k;

    if (t == CERTS_KEY_RSA)
        k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
    else
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!k)
        ossl_failf(err, DD_EIO, "generating a%s key",
                   t == CERTS_KEY_RSA ? "n RSA" : "n ECDSA P-256");
    return k;
}

/* "ECDSA P-256", "RSA 2048", "EC secp384r1", or the algorithm's name. */
static void key_describe(const EVP_PKEY *k, char *buf, size_t n)
{
    char group[64];
    size_t glen = 0;

    if (EVP_PKEY_is_a(k, "RSA")) {
        snprintf(buf, n, "RSA %d", EVP_PKEY_get_bits(k));
    } else if (EVP_PKEY_is_a(k, "EC")) {
        if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                           &glen) != 1) {
            ERR_clear_error();
            snprintf(buf, n, "EC (unknown curve)");
        } else if (!strcmp(group, "prime256v1") || !strcmp(group, "P-256")) {
            snprintf(buf, n, "ECDSA P-256");
        } else {
            snprintf(buf, n, "EC %.24s", group);
        }
    } else {
        const char *name = EVP_PKEY_get0_type_name(k);

        snprintf(buf, n, "%s", name ? name : "unknown");
    }
}

static void key_wanted(const struct certs_opts *o, char *buf, size_t n)
{
    if (o->key_type == CERTS_KEY_RSA)
        snprintf(buf, n, "RSA %d", o->rsa_bits);
    else
        snprintf(buf, n, "ECDSA P-256");
}

/* The private key matches the certificate's public key (no error left queued). */
static int key_pairs(X509 *x, EVP_PKEY *k)
{
    int ok = X509_check_private_key(x, k) == 1;

    ERR_clear_error();
    return ok;
}

/* ---- certificates ------------------------------------------------------- */

struct cert_req {
    const char *cn;          /* subject CN */
    EVP_PKEY *key;           /* the subject's key (its public half goes in) */
    X509 *issuer;            /* NULL: self-signed */
    EVP_PKEY *issuer_key;    /* signs; the subject's key when self-signed */
    int days;
    time_t now;
    int ca;                  /* a CA certificate, else a serving one */
    const struct sans *sans; /* serving certificates only */
};

/* A random positive 128-bit serial (RFC 5280: at most 20 octets, unpredictable). */
static enum dd_rc set_serial(X509 *x, struct dd_err *err)
{
    unsigned char b[16];
    ASN1_INTEGER *ai = NULL;
    BIGNUM *bn = NULL;
    enum dd_rc rc = DD_OK;

    if (RAND_bytes(b, sizeof(b)) != 1)
        return ossl_failf(err, DD_EIO, "generating a serial number");
    b[0] &= 0x7f; /* positive, so the DER INTEGER takes 16 octets */
    b[0] |= 0x01; /* never zero, and never shorter than 16 octets */
    if (!(bn = BN_bin2bn(b, sizeof(b), NULL)) || !(ai = BN_to_ASN1_INTEGER(bn, NULL)) ||
        X509_set_serialNumber(x, ai) != 1)
        rc = ossl_failf(err, DD_EIO, "setting the serial number");
    ASN1_INTEGER_free(ai);
    BN_free(bn);
    return rc;
}

static enum dd_rc add_ext(X509 *x, X509 *issuer, int nid, const char *value, struct dd_err *err)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;
    int ok;

    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    if (!(e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)))
        return ossl_failf(err, DD_EIO, "extension %s = %s", OBJ_nid2sn(nid), value);
    ok = X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    if (ok != 1)
        return ossl_failf(err, DD_EIO, "adding extension %s", OBJ_nid2sn(nid));
    return DD_OK;
}

/*
 * subjectAltName built from GENERAL_NAMEs rather than the "DNS:a,IP:b" config
 * syntax, so no name can smuggle in another entry.
 */
static enum dd_rc add_sans(X509 *x, const struct sans *s, struct dd_err *err)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    GENERAL_NAME *g = NULL;
    unsigned char addr[16];
    enum dd_rc rc = DD_OK;
    size_t i;
    int len;

    if (!gens)
        return ossl_failf(err, DD_ENOMEM, "subjectAltName");
    for (i = 0; i < s->n; i++) {
        const char *v = s->v[i];

        if (!(g = GENERAL_NAME_new()))
            goto fail;
        if (!strncmp(v, "DNS:", 4)) {
            ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();

            if (!ia5 || ASN1_STRING_set(ia5, v + 4, (int)strlen(v + 4)) != 1) {
                ASN1_IA5STRING_free(ia5);
                goto fail;
            }
            GENERAL_NAME_set0_value(g, GEN_DNS, ia5);
        } else {
            ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();

            len = parse_ip(v + 3, addr);
            if (!os || !len || ASN1_OCTET_STRING_set(os, addr, len) != 1) {
                ASN1_OCTET_STRING_free(os);
                goto fail;
            }
            GENERAL_NAME_set0_value(g, GEN_IPADD, os);
        }
        if (!sk_GENERAL_NAME_push(gens, g))
            goto fail;
        g = NULL;
    }
    if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1)
        goto fail;
    goto out;
fail:
    rc = ossl_failf(err, DD_EIO, "building subjectAltName");
out:
    GENERAL_NAME_free(g);
    GENERAL_NAMES_free(gens);
    return rc;
}

/* A new certificate as r says, signed with SHA-256.  Free with X509_free. */
static X509 *make_cert(const struct cert_req *r, struct dd_err *err)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    time_t now = r->now;
    int rsa = EVP_PKEY_is_a(r->key, "RSA");
    enum dd_rc rc = DD_OK;

    if (!x || !name || X509_set_version(x, X509_VERSION_3) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)r->cn, -1, -1,
                                   0) != 1 ||
        X509_set_subject_name(x, name) != 1 ||
        X509_set_issuer_name(x, r->issuer ? X509_get_subject_name(r->issuer) : name) != 1 ||
        !X509_time_adj_ex(X509_getm_notBefore(x), 0, -SKEW_SECONDS, &now) ||
        !X509_time_adj_ex(X509_getm_notAfter(x), r->days, 0, &now) ||
        X509_set_pubkey(x, r->key) != 1) {
        rc = ossl_failf(err, DD_EIO, "building certificate %s", r->cn);
        goto out;
    }
    if ((rc = set_serial(x, err)) != DD_OK)
        goto out;
    if (r->ca) {
        if ((rc = add_ext(x, NULL, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", err)) ||
            (rc = add_ext(x, NULL, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature",
                          err)) ||
            (rc = add_ext(x, NULL, NID_subject_key_identifier, "hash", err)))
            goto out;
    } else {
        if ((rc = add_ext(x, r->issuer, NID_basic_constraints, "critical,CA:FALSE", err)) ||
            (rc = add_ext(x, r->issuer, NID_key_usage,
                          rsa ? "critical,digitalSignature,keyEncipherment"
                              : "critical,digitalSignature",
                          err)) ||
            (rc = add_ext(x, r->issuer, NID_ext_key_usage, "serverAuth", err)) ||
            (rc = add_ext(x, r->issuer, NID_subject_key_identifier, "hash", err)) ||
            (rc = add_ext(x, r->issuer, NID_authority_key_identifier, "keyid:always", err)) ||
            (rc = add_sans(x, r->sans, err)))
            goto out;
    }
    if (X509_sign(x, r->issuer_key, EVP_sha256()) <= 0)
        rc = ossl_failf(err, DD_EIO, "signing certificate %s", r->cn);
out:
    X509_NAME_free(name);
    if (rc != DD_OK) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* ---- PEM ---------------------------------------------------------------- */

/* The bytes written to a memory BIO, as a new NUL-terminated string. */
static char *bio_text(BIO *b, size_t *len, struct dd_err *err)
{
    char *p = NULL, *s;
    long n = BIO_get_mem_data(b, &p);

    if (n <= 0 || !p) {
        ossl_failf(err, DD_EIO, "PEM encoding produced nothing");
        return NULL;
    }
    if (!(s = memdup0(p, (size_t)n))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    *len = (size_t)n;
    return s;
}

/* PEM of every certificate of sk (or of x alone when sk is NULL). */
static char *certs_pem(STACK_OF(X509) *sk, X509 *x, size_t *len, struct dd_err *err)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *s = NULL;
    int i, n = sk ? sk_X509_num(sk) : 1;

    if (!b) {
        ossl_failf(err, DD_ENOMEM, "PEM encoding");
        return NULL;
    }
    for (i = 0; i < n; i++)
        if (PEM_write_bio_X509(b, sk ? sk_X509_value(sk, i) : x) != 1) {
            ossl_failf(err, DD_EIO, "PEM encoding a certificate");
            goto out;
        }
    s = bio_text(b, len, err);
out:
    BIO_free(b);
    return s;
}

/* PKCS#8 PEM ("PRIVATE KEY"), unencrypted: the files are mode 0600, the Secret is a Secret. */
static char *key_pem(EVP_PKEY *k, size_t *len, struct dd_err *err)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *s = NULL;

    if (!b) {
        ossl_failf(err, DD_ENOMEM, "PEM encoding");
        return NULL;
    }
    if (PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) != 1)
        ossl_failf(err, DD_EIO, "PEM encoding a private key");
    else
        s = bio_text(b, len, err);
    BIO_free(b);
    return s;
}

/* Refuses to prompt for a passphrase: an encrypted key is an error, not a question. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* Every certificate of text (at least one, at most BUNDLE_MAX).  where names it in errors. */
static enum dd_rc read_certs(const char *text, size_t len, const char *where,
                             STACK_OF(X509) **out, struct dd_err *err)
{
    STACK_OF(X509) *sk = NULL;
    BIO *b = NULL;
    X509 *x;
    unsigned long e;
    enum dd_rc rc = DD_OK;

    *out = NULL;
    if (len > FILE_MAX)
        return dd_failf(err, DD_EPARSE, "%s: larger than %zu bytes", where, FILE_MAX);
    sk = sk_X509_new_null();
    b = BIO_new_mem_buf(text, (int)len);
    if (!sk || !b) {
        rc = ossl_failf(err, DD_ENOMEM, "%s", where);
        goto out;
    }
    ERR_clear_error();
    while ((x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL)) != NULL) {
        if (sk_X509_num(sk) >= BUNDLE_MAX || !sk_X509_push(sk, x)) {
            X509_free(x);
            rc = dd_failf(err, DD_EPARSE, "%s: more than %d certificates", where, BUNDLE_MAX);
            goto out;
        }
    }
    /* The loop ends at "no start line" after the last certificate; anything else is damage. */
    e = ERR_peek_last_error();
    if (sk_X509_num(sk) == 0 || (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)) {
        rc = ossl_failf(err, DD_EPARSE, "%s: not a PEM certificate%s (remove it to start over)",
                        where, sk_X509_num(sk) ? " list" : "");
        goto out;
    }
    ERR_clear_error();
    *out = sk;
    sk = NULL;
out:
    sk_X509_pop_free(sk, X509_free);
    BIO_free(b);
    return rc;
}

static enum dd_rc read_key(const char *text, size_t len, const char *where, EVP_PKEY **out,
                           struct dd_err *err)
{
    BIO *b;

    *out = NULL;
    if (len > FILE_MAX)
        return dd_failf(err, DD_EPARSE, "%s: larger than %zu bytes", where, FILE_MAX);
    if (!(b = BIO_new_mem_buf(text, (int)len)))
        return ossl_failf(err, DD_ENOMEM, "%s", where);
    ERR_clear_error();
    *out = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
    BIO_free(b);
    if (!*out)
        return ossl_failf(err, DD_EPARSE,
                          "%s: not an unencrypted PEM private key (remove it to start over)",
                          where);
    return DD_OK;
}

/* ---- inspection --------------------------------------------------------- */

static enum dd_rc cert_sans(X509 *x, char ***out, size_t *nout, struct dd_err *err)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    struct sans s = { NULL, 0 };
    enum dd_rc rc = DD_OK;
    char text[INET6_ADDRSTRLEN], *dns;
    int i;

    for (i = 0; gens && i < sk_GENERAL_NAME_num(gens) && rc == DD_OK; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        const ASN1_STRING *str;

        if (g->type == GEN_DNS) {
            str = g->d.dNSName;
            if (!(dns = memdup0((const char *)ASN1_STRING_get0_data(str),
                                (size_t)ASN1_STRING_length(str)))) {
                rc = dd_failf(err, DD_ENOMEM, "out of memory");
                break;
            }
            rc = sans_add(&s, "DNS", dns, err);
            free(dns);
        } else if (g->type == GEN_IPADD) {
            str = g->d.iPAddress;
            if (ASN1_STRING_length(str) == 4 || ASN1_STRING_length(str) == 16)
                ip_text(ASN1_STRING_get0_data(str), ASN1_STRING_length(str), text, sizeof(text));
            else
                snprintf(text, sizeof(text), "(%d-byte address)", ASN1_STRING_length(str));
            rc = sans_add(&s, "IP", text, err);
        } else {
            rc = sans_add(&s, "OTHER", "?", err);
        }
    }
    GENERAL_NAMES_free(gens);
    ERR_clear_error(); /* no SAN extension is not an error */
    if (rc != DD_OK) {
        sans_release(&s);
        return rc;
    }
    *out = s.v;
    *nout = s.n;
    return DD_OK;
}

/* Whether ca issued x: names/key identifiers agree and ca's key verifies x's signature. */
static int issued_by(X509 *ca, X509 *x)
{
    EVP_PKEY *pub = X509_get0_pubkey(ca);
    int ok = pub && X509_check_issued(ca, x) == X509_V_OK && X509_verify(x, pub) == 1;

    ERR_clear_error();
    return ok;
}

void certs_info_release(struct certs_info *info)
{
    size_t i;

    if (!info)
        return;
    for (i = 0; i < info->nsans; i++)
        free(info->sans[i]);
    free(info->sans);
    memset(info, 0, sizeof(*info));
}

enum dd_rc certs_inspect(const char *pem, size_t len, const char *issuer_pem, size_t issuer_len,
                         struct certs_info *info, struct dd_err *err)
{
    STACK_OF(X509) *sk = NULL, *issuers = NULL;
    const ASN1_INTEGER *serial;
    BIGNUM *bn = NULL;
    char *hex = NULL;
    X509 *x;
    int i;
    enum dd_rc rc;

    memset(info, 0, sizeof(*info));
    if ((rc = read_certs(pem, len, "certificate", &sk, err)) != DD_OK)
        return rc;
    x = sk_X509_value(sk, 0);
    info->not_before = asn1_time(X509_get0_notBefore(x));
    info->not_after = cert_not_after(x);
    serial = X509_get0_serialNumber(x);
    if (!(bn = ASN1_INTEGER_to_BN(serial, NULL)) || !(hex = BN_bn2hex(bn))) {
        rc = ossl_failf(err, DD_ENOMEM, "reading the serial number");
        goto out;
    }
    snprintf(info->serial, sizeof(info->serial), "%s", hex);
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, info->subject_cn,
                                  (int)sizeof(info->subject_cn)) < 0) {
        info->subject_cn[0] = '\0';
        ERR_clear_error();
    }
    info->is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
    if (X509_get0_pubkey(x))
        key_describe(X509_get0_pubkey(x), info->key_type, sizeof(info->key_type));
    if ((rc = cert_sans(x, &info->sans, &info->nsans, err)) != DD_OK)
        goto out;
    if (issuer_pem) {
        if ((rc = read_certs(issuer_pem, issuer_len, "issuer", &issuers, err)) != DD_OK)
            goto out;
        for (i = 0; i < sk_X509_num(issuers) && !info->issued_by; i++)
            info->issued_by = issued_by(sk_X509_value(issuers, i), x);
    }
out:
    OPENSSL_free(hex);
    BN_free(bn);
    sk_X509_pop_free(issuers, X509_free);
    sk_X509_pop_free(sk, X509_free);
    return rc;
}

/* ---- base64 (Secret data, caBundle) ------------------------------------- */

static char *b64_encode(const char *p, size_t n)
{
    char *s;

    if (n > (size_t)INT_MAX / 2 || !(s = malloc(4 * ((n + 2) / 3) + 1)))
        return NULL;
    EVP_EncodeBlock((unsigned char *)s, (const unsigned char *)p, (int)n);
    return s;
}

/* Decodes s into a new NUL-terminated buffer; -1 when s is not base64. */
static int b64_decode(const char *s, char **out, size_t *outlen)
{
    size_t n = strlen(s);
    EVP_ENCODE_CTX *ctx;
    unsigned char *buf;
    int a = 0, b = 0, ok;

    *out = NULL;
    if (n > (size_t)INT_MAX || !(buf = malloc(n / 4 * 3 + 4)))
        return -1;
    if (!(ctx = EVP_ENCODE_CTX_new())) {
        free(buf);
        return -1;
    }
    EVP_DecodeInit(ctx);
    ok = EVP_DecodeUpdate(ctx, buf, &a, (const unsigned char *)s, (int)n) >= 0 &&
         EVP_DecodeFinal(ctx, buf + a, &b) == 1;
    EVP_ENCODE_CTX_free(ctx);
    ERR_clear_error();
    if (!ok) {
        free(buf);
        return -1;
    }
    buf[a + b] = '\0';
    *out = (char *)buf;
    *outlen = (size_t)(a + b);
    return 0;
}

/* ---- stores ------------------------------------------------------------- */

/* What one store (directory or Secret) holds: raw bytes per file, NULL when absent. */
struct store {
    char *text[NFILES];
    size_t len[NFILES];
    mode_t mode[NFILES];       /* directory files: permission bits */
    int any;                   /* holds at least one of the four */
    /* Secret only: */
    int exists;
    char *rv;                  /* resourceVersion of the last read or write */
};

static void store_release(struct store *s)
{
    int f;

    for (f = 0; f < NFILES; f++)
        free(s->text[f]);
    free(s->rv);
    memset(s, 0, sizeof(*s));
}

static int same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    if (!a || !b)
        return !a && !b;
    return alen == blen && !memcmp(a, b, alen);
}

/*
 * Empty (or whitespace-only) material counts as absent: charts often create a
 * placeholder kubernetes.io/tls Secret with empty keys so a volume can mount.
 */
static void drop_blank(char **text, size_t *len)
{
    size_t i;

    for (i = 0; *text && i < *len; i++)
        if (!isspace((unsigned char)(*text)[i]))
            return;
    free(*text);
    *text = NULL;
    *len = 0;
}

static enum dd_rc read_whole(const char *path, char **out, size_t *len, mode_t *mode,
                             struct dd_err *err)
{
    struct stat sb;
    char *buf;
    size_t got = 0;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *out = NULL;
    if (fd < 0) {
        if (errno == ENOENT)
            return DD_OK;
        return dd_failf(err, DD_EIO, "%s: %s", path, strerror(errno));
    }
    if (fstat(fd, &sb) != 0) {
        int e = errno;

        close(fd);
        return dd_failf(err, DD_EIO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode) || (size_t)sb.st_size > FILE_MAX) {
        close(fd);
        if (!S_ISREG(sb.st_mode))
            return dd_failf(err, DD_EIO, "%s: not a regular file", path);
        return dd_failf(err, DD_EPARSE, "%s: larger than %zu bytes", path, FILE_MAX);
    }
    if (!(buf = malloc((size_t)sb.st_size + 1))) {
        close(fd);
        return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    while (got < (size_t)sb.st_size && (n = read(fd, buf + got, (size_t)sb.st_size - got)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            free(buf);
            close(fd);
            return dd_failf(err, DD_EIO, "%s: %s", path, strerror(errno));
        }
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    *mode = sb.st_mode & 07777;
    return DD_OK;
}

static void file_path(const char *dir, int f, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", dir, file_names[f]);
}

static enum dd_rc dir_load(const char *dir, struct store *s, struct dd_err *err)
{
    char path[PATH_MAX];
    enum dd_rc rc;
    int f;

    memset(s, 0, sizeof(*s));
    if (strlen(dir) + 16 >= sizeof(path))
        return dd_failf(err, DD_EINVAL, "--out-dir: path too long");
    for (f = 0; f < NFILES; f++) {
        file_path(dir, f, path, sizeof(path));
        if ((rc = read_whole(path, &s->text[f], &s->len[f], &s->mode[f], err)) != DD_OK)
            return rc;
        drop_blank(&s->text[f], &s->len[f]);
        s->any |= s->text[f] != NULL;
    }
    return DD_OK;
}

/* Writes path atomically: a temporary file in the same directory, fsync, rename, fsync dir. */
static enum dd_rc write_atomic(const char *dir, const char *path, const char *text, size_t len,
                               mode_t mode, struct dd_err *err)
{
    char tmp[PATH_MAX + 16];
    size_t off = 0;
    ssize_t n;
    int fd, dfd, e;

    snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path);
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
        return dd_failf(err, DD_EIO, "%s: creating a temporary file: %s", path, strerror(errno));
    if (fchmod(fd, mode) != 0)
        goto fail;
    while (off < len) {
        n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        off += (size_t)n;
    }
    if (fsync(fd) != 0)
        goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto fail;
    /* The rename itself is durable only once the directory is synced. */
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return DD_OK;
fail:
    e = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return dd_failf(err, DD_EIO, "%s: %s", path, strerror(e ? e : EIO));
}

static enum dd_rc secret_path(const struct certs_opts *o, char *buf, size_t n, int item,
                              struct dd_err *err)
{
    if (!kube_path(buf, n, "", "v1", "secrets", o->secret_ns, item ? o->secret_name : NULL, NULL))
        return dd_failf(err, DD_EINVAL, "--secret %s/%s: not a valid object path", o->secret_ns,
                        o->secret_name);
    return DD_OK;
}

/* Reads the Secret's four keys and resourceVersion; a missing Secret is an empty store. */
static enum dd_rc secret_load(const struct certs_opts *o, struct store *s, struct dd_err *err)
{
    struct kube_status st;
    const cJSON *data, *rv, *v;
    cJSON *obj = NULL;
    char path[1024];
    enum dd_rc rc;
    int f;

    memset(s, 0, sizeof(*s));
    if ((rc = secret_path(o, path, sizeof(path), 1, err)) != DD_OK)
        return rc;
    rc = kube_get(o->kube, path, &obj, &st, err);
    if (rc == DD_ENOTFOUND && st.http == 404) {
        dd_err_clear(err);
        return DD_OK;
    }
    if (rc != DD_OK)
        return fail_wrap(err, DD_EIO, "reading Secret %s/%s", o->secret_ns, o->secret_name);
    s->exists = 1;
    rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                          "resourceVersion");
    if (cJSON_IsString(rv) && !(s->rv = strdup(rv->valuestring))) {
        rc = dd_failf(err, DD_ENOMEM, "out of memory");
        goto out;
    }
    data = cJSON_GetObjectItemCaseSensitive(obj, "data");
    for (f = 0; f < NFILES; f++) {
        v = cJSON_GetObjectItemCaseSensitive(data, file_names[f]);
        if (!v)
            continue;
        if (!cJSON_IsString(v) || b64_decode(v->valuestring, &s->text[f], &s->len[f]) != 0 ||
            s->len[f] > FILE_MAX) {
            rc = dd_failf(err, DD_EPARSE, "Secret %s/%s key %s: not base64 of at most %zu bytes",
                          o->secret_ns, o->secret_name, file_names[f], FILE_MAX);
            goto out;
        }
        drop_blank(&s->text[f], &s->len[f]);
        s->any |= s->text[f] != NULL;
    }
out:
    cJSON_Delete(obj);
    return rc;
}

/* ---- the current material, parsed --------------------------------------- */

struct material {
    STACK_OF(X509) *bundle;  /* ca.crt in file order; NULL when absent */
    EVP_PKEY *ca_key;
    X509 *tls;               /* first certificate of tls.crt */
    EVP_PKEY *tls_key;
};

static void material_release(struct material *m)
{
    sk_X509_pop_free(m->bundle, X509_free);
    EVP_PKEY_free(m->ca_key);
    X509_free(m->tls);
    EVP_PKEY_free(m->tls_key);
    memset(m, 0, sizeof(*m));
}

static void where_name(const char *src, int f, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", src, file_names[f]);
}

/* src prefixes names in errors: "<dir>/" or "Secret ns/name key ". */
static enum dd_rc material_parse(const struct store *s, const char *src, struct material *m,
                                 struct dd_err *err)
{
    STACK_OF(X509) *tls = NULL;
    char where[PATH_MAX + 128]; /* srcname (PATH_MAX + 64) + a file name */
    enum dd_rc rc = DD_OK;

    memset(m, 0, sizeof(*m));
    if (s->text[F_CA_CRT]) {
        where_name(src, F_CA_CRT, where, sizeof(where));
        if ((rc = read_certs(s->text[F_CA_CRT], s->len[F_CA_CRT], where, &m->bundle, err)))
            goto fail;
    }
    if (s->text[F_CA_KEY]) {
        where_name(src, F_CA_KEY, where, sizeof(where));
        if ((rc = read_key(s->text[F_CA_KEY], s->len[F_CA_KEY], where, &m->ca_key, err)))
            goto fail;
    }
    if (s->text[F_TLS_CRT]) {
        where_name(src, F_TLS_CRT, where, sizeof(where));
        if ((rc = read_certs(s->text[F_TLS_CRT], s->len[F_TLS_CRT], where, &tls, err)))
            goto fail;
        m->tls = sk_X509_shift(tls);
        sk_X509_pop_free(tls, X509_free);
    }
    if (s->text[F_TLS_KEY]) {
        where_name(src, F_TLS_KEY, where, sizeof(where));
        if ((rc = read_key(s->text[F_TLS_KEY], s->len[F_TLS_KEY], where, &m->tls_key, err)))
            goto fail;
    }
    return DD_OK;
fail:
    material_release(m);
    return rc;
}

/* ---- the plan ----------------------------------------------------------- */

struct plan {
    X509 *ca;                /* the current CA (owned reference) */
    EVP_PKEY *ca_key;        /* owned reference */
    int ca_new;              /* made in this run */
    int tls_new;             /* serving certificate made in this run */
    time_t tls_not_after;
    char *want[NFILES];      /* the bytes each file must hold (owned) */
    size_t wlen[NFILES];
};

static void plan_release(struct plan *p)
{
    int f;

    X509_free(p->ca);
    EVP_PKEY_free(p->ca_key);
    for (f = 0; f < NFILES; f++)
        free(p->want[f]);
    memset(p, 0, sizeof(*p));
}

static enum dd_rc keep_text(struct plan *p, const struct store *s, int f, struct dd_err *err)
{
    if (!(p->want[f] = memdup0(s->text[f], s->len[f])))
        return dd_failf(err, DD_ENOMEM, "out of memory");
    p->wlen[f] = s->len[f];
    return DD_OK;
}

/* The certificate of the bundle the CA key belongs to, if it is a CA; NULL otherwise. */
static X509 *find_ca(const struct material *m)
{
    int i;

    if (!m->bundle || !m->ca_key)
        return NULL;
    for (i = 0; i < sk_X509_num(m->bundle); i++) {
        X509 *x = sk_X509_value(m->bundle, i);

        if (X509_check_ca(x) >= 1 && key_pairs(x, m->ca_key))
            return x;
    }
    return NULL;
}

/* Decides the CA: keep the current one if it outlives --rotate-before, else make one. */
static enum dd_rc plan_ca(const struct certs_opts *o, time_t now, const struct material *m,
                          const struct store *src, struct plan *p, struct dd_err *err)
{
    X509 *cur = find_ca(m);
    char t[32], d[32], why[256], kt[32];
    struct cert_req r;
    time_t na = cur ? cert_not_after(cur) : 0;

    if (cur && !o->new_ca && na != (time_t)-1 && na - now > o->rotate_before) {
        if (!X509_up_ref(cur))
            return ossl_failf(err, DD_ENOMEM, "CA reference");
        p->ca = cur;
        if (!EVP_PKEY_up_ref(m->ca_key))
            return ossl_failf(err, DD_ENOMEM, "CA key reference");
        p->ca_key = m->ca_key;
        return keep_text(p, src, F_CA_KEY, err);
    }
    if (!m->bundle && !m->ca_key)
        snprintf(why, sizeof(why), "no CA yet");
    else if (!cur)
        snprintf(why, sizeof(why), "ca.key is missing or belongs to no CA certificate in ca.crt");
    else if (o->new_ca)
        snprintf(why, sizeof(why), "--new-ca");
    else
        snprintf(why, sizeof(why), "the CA expires %s, within --rotate-before %s",
                 fmt_time(na, t, sizeof(t)), fmt_duration(o->rotate_before, d, sizeof(d)));
    if (!(p->ca_key = new_key(o->key_type, o->rsa_bits, err)))
        return err ? err->rc : DD_EIO;
    memset(&r, 0, sizeof(r));
    r.cn = CA_CN;
    r.key = p->ca_key;
    r.issuer_key = p->ca_key;
    r.days = o->ca_days;
    r.now = now;
    r.ca = 1;
    if (!(p->ca = make_cert(&r, err)))
        return err ? err->rc : DD_EIO;
    if (!(p->want[F_CA_KEY] = key_pem(p->ca_key, &p->wlen[F_CA_KEY], err)))
        return err ? err->rc : DD_EIO;
    p->ca_new = 1;
    key_describe(p->ca_key, kt, sizeof(kt));
    say(o, "created CA %s (%s, valid until %s): %s", CA_CN, kt,
        fmt_time(cert_not_after(p->ca), t, sizeof(t)), why);
    return DD_OK;
}

/*
 * The bundle: the current CA, then each other CA of the old bundle that has
 * not expired (so certificates they issued stay trusted during the overlap).
 * The old text is kept when the list is the same, so foreign formatting does
 * not count as a change.
 */
static enum dd_rc plan_bundle(const struct certs_opts *o, time_t now, const struct material *m,
                              const struct store *src, struct plan *p, struct dd_err *err)
{
    STACK_OF(X509) *sk = sk_X509_new_null();
    enum dd_rc rc = DD_OK;
    char t[32];
    int i, j, same, kept = 0;

    if (!sk || !sk_X509_push(sk, p->ca))
        goto nomem;
    for (i = 0; m->bundle && i < sk_X509_num(m->bundle); i++) {
        X509 *x = sk_X509_value(m->bundle, i);
        time_t na = cert_not_after(x);
        int dup = 0;

        for (j = 0; j < sk_X509_num(sk); j++)
            dup |= X509_cmp(x, sk_X509_value(sk, j)) == 0;
        if (dup || X509_check_ca(x) < 1 || na == (time_t)-1 || na <= now)
            continue;
        if (kept == OLD_CAS_KEPT)
            break;
        if (!sk_X509_push(sk, x))
            goto nomem;
        kept++;
        if (p->ca_new)
            say(o, "kept the old CA in ca.crt until it expires %s", fmt_time(na, t, sizeof(t)));
    }
    same = m->bundle && sk_X509_num(m->bundle) == sk_X509_num(sk);
    for (i = 0; same && i < sk_X509_num(sk); i++)
        same = X509_cmp(sk_X509_value(sk, i), sk_X509_value(m->bundle, i)) == 0;
    if (same)
        rc = keep_text(p, src, F_CA_CRT, err);
    else if (!(p->want[F_CA_CRT] = certs_pem(sk, NULL, &p->wlen[F_CA_CRT], err)))
        rc = err ? err->rc : DD_EIO;
    sk_X509_free(sk); /* borrowed entries */
    return rc;
nomem:
    sk_X509_free(sk);
    return dd_failf(err, DD_ENOMEM, "out of memory");
}

/* Why the current serving certificate cannot stay, or NULL when it can. */
static const char *serving_problem(const struct certs_opts *o, time_t now, const struct sans *want,
                                   const struct material *m, const struct plan *p, char *buf,
                                   size_t n)
{
    char have[32], wanted[32], t[32], d[32];
    char **sans = NULL;
    size_t nsans = 0, i;
    int eq;
    time_t na;

    if (!m->tls || !m->tls_key)
        return "no serving certificate yet";
    if (p->ca_new)
        return "the CA is new";
    if (!key_pairs(m->tls, m->tls_key))
        return "tls.key does not belong to tls.crt";
    if (!issued_by(p->ca, m->tls))
        return "tls.crt was not issued by the current CA";
    key_describe(m->tls_key, have, sizeof(have));
    key_wanted(o, wanted, sizeof(wanted));
    if (strcmp(have, wanted)) {
        snprintf(buf, n, "the key is %s, %s is asked for", have, wanted);
        return buf;
    }
    if (cert_sans(m->tls, &sans, &nsans, NULL) != DD_OK)
        return "cannot read the SANs of tls.crt";
    eq = sans_equal(want, sans, nsans);
    for (i = 0; i < nsans; i++)
        free(sans[i]);
    free(sans);
    if (!eq)
        return "its SANs differ from those asked for";
    na = cert_not_after(m->tls);
    if (na == (time_t)-1 || na - now <= o->rotate_before) {
        snprintf(buf, n, "it expires %s, within --rotate-before %s", fmt_time(na, t, sizeof(t)),
                 fmt_duration(o->rotate_before, d, sizeof(d)));
        return buf;
    }
    if (o->force || o->new_ca)
        return "--force";
    return NULL;
}

static enum dd_rc plan_serving(const struct certs_opts *o, time_t now, const struct sans *want,
                               const struct material *m, const struct store *src, struct plan *p,
                               struct dd_err *err)
{
    char buf[256], name[300], t[32], kt[32];
    const char *why = serving_problem(o, now, want, m, p, buf, sizeof(buf));
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    struct cert_req r;
    struct certs_info info;
    enum dd_rc rc;

    if (!why) {
        p->tls_not_after = cert_not_after(m->tls);
        if ((rc = keep_text(p, src, F_TLS_KEY, err)) != DD_OK)
            return rc;
        return keep_text(p, src, F_TLS_CRT, err);
    }
    snprintf(name, sizeof(name), "%s.%s.svc", o->service, o->namespace_);
    if (!(key = new_key(o->key_type, o->rsa_bits, err)))
        return err ? err->rc : DD_EIO;
    memset(&r, 0, sizeof(r));
    r.cn = name;
    r.key = key;
    r.issuer = p->ca;
    r.issuer_key = p->ca_key;
    r.days = o->days;
    r.now = now;
    r.sans = want;
    rc = DD_EIO;
    if ((x = make_cert(&r, err)) &&
        (p->want[F_TLS_KEY] = key_pem(key, &p->wlen[F_TLS_KEY], err)) &&
        (p->want[F_TLS_CRT] = certs_pem(NULL, x, &p->wlen[F_TLS_CRT], err)))
        rc = DD_OK;
    else if (err)
        rc = err->rc;
    if (rc == DD_OK) {
        p->tls_new = 1;
        p->tls_not_after = cert_not_after(x);
        key_describe(key, kt, sizeof(kt));
        memset(&info, 0, sizeof(info));
        if (certs_inspect(p->want[F_TLS_CRT], p->wlen[F_TLS_CRT], NULL, 0, &info, NULL) == DD_OK)
            say(o, "issued serving certificate %s (%s, serial %s, valid until %s): %s", name, kt,
                info.serial, fmt_time(p->tls_not_after, t, sizeof(t)), why);
        certs_info_release(&info);
    }
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

/* ---- publishing --------------------------------------------------------- */

/* Writes the files of order[] that differ from what the directory holds. */
static enum dd_rc dir_publish(const struct certs_opts *o, struct store *d, const struct plan *p,
                              const int *order, int n, struct certs_result *res,
                              struct dd_err *err)
{
    char path[PATH_MAX];
    mode_t mode;
    enum dd_rc rc;
    int i, f;

    for (i = 0; i < n; i++) {
        f = order[i];
        mode = file_secret[f] ? 0600 : 0644;
        if (same_bytes(d->text[f], d->len[f], p->want[f], p->wlen[f]) && d->mode[f] == mode)
            continue;
        file_path(o->out_dir, f, path, sizeof(path));
        if ((rc = write_atomic(o->out_dir, path, p->want[f], p->wlen[f], mode, err)) != DD_OK)
            return rc;
        free(d->text[f]);
        d->text[f] = NULL;
        if (!(d->text[f] = memdup0(p->want[f], p->wlen[f])))
            return dd_failf(err, DD_ENOMEM, "out of memory");
        d->len[f] = p->wlen[f];
        d->mode[f] = mode;
        res->files_written++;
        say(o, "wrote %s", path);
    }
    return DD_OK;
}

static int secret_differs(const struct store *s, const struct plan *p, int f)
{
    return !same_bytes(s->text[f], s->len[f], p->want[f], p->wlen[f]);
}

static enum dd_rc add_b64(cJSON *data, const char *key, const char *p, size_t n,
                          struct dd_err *err)
{
    char *b = b64_encode(p, n);
    cJSON *v = b ? cJSON_CreateString(b) : NULL;

    free(b);
    if (!v || !cJSON_AddItemToObject(data, key, v)) {
        cJSON_Delete(v);
        return dd_failf(err, DD_ENOMEM, "out of memory");
    }
    return DD_OK;
}

/*
 * Creates the Secret, or merge-patches the keys of mask that differ (guarded
 * by the resourceVersion read, so a concurrent writer gets a Conflict rather
 * than a silent overwrite).  Nothing happens when no key differs.
 */
static enum dd_rc secret_publish(const struct certs_opts *o, struct store *s,
                                 const struct plan *p, unsigned mask, struct certs_result *res,
                                 struct dd_err *err)
{
    cJSON *obj = cJSON_CreateObject(), *data = NULL, *meta = NULL, *out = NULL;
    const cJSON *rv;
    struct kube_status st;
    char path[1024], *body = NULL, changed[64] = "";
    enum dd_rc rc = DD_ENOMEM;
    int f;

    if (!obj || !(data = cJSON_AddObjectToObject(obj, "data")) ||
        !(meta = cJSON_AddObjectToObject(obj, "metadata")))
        goto nomem;
    for (f = 0; f < NFILES; f++) {
        if (!(mask & (1u << f)) || (s->exists && !secret_differs(s, p, f)))
            continue;
        if ((rc = add_b64(data, file_names[f], p->want[f], p->wlen[f], err)) != DD_OK)
            goto out;
        snprintf(changed + strlen(changed), sizeof(changed) - strlen(changed), "%s%s",
                 changed[0] ? ", " : "", file_names[f]);
    }
    if (!changed[0]) {
        rc = DD_OK;
        goto out;
    }
    if ((rc = secret_path(o, path, sizeof(path), s->exists, err)) != DD_OK)
        goto out;
    if (!s->exists) {
        cJSON *labels;

        if (!cJSON_AddStringToObject(obj, "apiVersion", "v1") ||
            !cJSON_AddStringToObject(obj, "kind", "Secret") ||
            !cJSON_AddStringToObject(obj, "type", SECRET_TYPE) ||
            !cJSON_AddStringToObject(meta, "name", o->secret_name) ||
            !cJSON_AddStringToObject(meta, "namespace", o->secret_ns) ||
            !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
            !cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by", MANAGED_BY))
            goto nomem;
        rc = kube_create(o->kube, path, obj, &out, &st, err);
    } else {
        if (s->rv && !cJSON_AddStringToObject(meta, "resourceVersion", s->rv))
            goto nomem;
        if (!(body = cJSON_PrintUnformatted(obj)))
            goto nomem;
        rc = kube_patch(o->kube, path, KUBE_PATCH_MERGE, body, NULL, 0, &out, &st, err);
    }
    if (rc != DD_OK) {
        rc = fail_wrap(err, DD_EIO, "%s Secret %s/%s", s->exists ? "updating" : "creating",
                       o->secret_ns, o->secret_name);
        goto out;
    }
    say(o, "%s Secret %s/%s (%s)", s->exists ? "updated" : "created", o->secret_ns,
        o->secret_name, changed);
    res->secret_written = s->exists ? 2 : 1;
    /* Remember what the Secret now holds, so a second publish sends only the rest. */
    s->exists = 1;
    rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "metadata"),
                                          "resourceVersion");
    free(s->rv);
    s->rv = cJSON_IsString(rv) ? strdup(rv->valuestring) : NULL;
    for (f = 0; f < NFILES; f++) {
        if (!(mask & (1u << f)))
            continue;
        free(s->text[f]);
        s->len[f] = p->wlen[f];
        if (!(s->text[f] = memdup0(p->want[f], p->wlen[f])))
            goto nomem;
    }
    rc = DD_OK;
    goto out;
nomem:
    rc = dd_failf(err, DD_ENOMEM, "out of memory");
out:
    free(body);
    cJSON_Delete(out);
    cJSON_Delete(obj);
    return rc;
}

/*
 * Sets caBundle on every webhook of the ValidatingWebhookConfiguration with
 * one JSON patch: per index a "test" of the webhook's name (so a list that
 * changed since the GET fails instead of patching the wrong entry) and an
 * "add" of clientConfig.caBundle (add replaces an existing member).  A merge
 * patch cannot address list entries.  A failed test is retried from a new GET.
 */
static enum dd_rc webhook_publish(const struct certs_opts *o, const struct plan *p,
                                  struct certs_result *res, struct dd_err *err)
{
    char path[1024], ptr[64], *b64 = b64_encode(p->want[F_CA_CRT], p->wlen[F_CA_CRT]);
    struct kube_status st;
    cJSON *obj = NULL, *ops = NULL, *op;
    const cJSON *hooks, *h, *cur, *name;
    char *body = NULL;
    enum dd_rc rc = DD_OK;
    int attempt, i, n;

    if (!b64)
        return dd_failf(err, DD_ENOMEM, "out of memory");
    if (!kube_path(path, sizeof(path), "admissionregistration.k8s.io", "v1",
                   "validatingwebhookconfigurations", NULL, o->webhook_config, NULL)) {
        free(b64);
        return dd_failf(err, DD_EINVAL, "--webhook-config %s: not a valid object name",
                        o->webhook_config);
    }
    for (attempt = 0; attempt < 3; attempt++) {
        cJSON_Delete(obj);
        cJSON_Delete(ops);
        free(body);
        obj = ops = NULL;
        body = NULL;
        if ((rc = kube_get(o->kube, path, &obj, &st, err)) != DD_OK) {
            if (rc == DD_ENOTFOUND && st.http == 404)
                rc = dd_failf(err, DD_ENOTFOUND, "ValidatingWebhookConfiguration %s not found",
                              o->webhook_config);
            else
                rc = fail_wrap(err, DD_EIO, "reading ValidatingWebhookConfiguration %s",
                               o->webhook_config);
            goto out;
        }
        hooks = cJSON_GetObjectItemCaseSensitive(obj, "webhooks");
        if (!(ops = cJSON_CreateArray()))
            goto nomem;
        n = 0;
        i = 0;
        cJSON_ArrayForEach(h, hooks)
        {
            cur = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(h, "clientConfig"), "caBundle");
            name = cJSON_GetObjectItemCaseSensitive(h, "name");
            if (!cJSON_IsString(cur) || strcmp(cur->valuestring, b64)) {
                if (cJSON_IsString(name)) {
                    snprintf(ptr, sizeof(ptr), "/webhooks/%d/name", i);
                    if (!(op = cJSON_CreateObject()) || !cJSON_AddItemToArray(ops, op) ||
                        !cJSON_AddStringToObject(op, "op", "test") ||
                        !cJSON_AddStringToObject(op, "path", ptr) ||
                        !cJSON_AddStringToObject(op, "value", name->valuestring))
                        goto nomem;
                }
                snprintf(ptr, sizeof(ptr), "/webhooks/%d/clientConfig/caBundle", i);
                if (!(op = cJSON_CreateObject()) || !cJSON_AddItemToArray(ops, op) ||
                    !cJSON_AddStringToObject(op, "op", "add") ||
                    !cJSON_AddStringToObject(op, "path", ptr) ||
                    !cJSON_AddStringToObject(op, "value", b64))
                    goto nomem;
                n++;
            }
            i++;
        }
        if (i == 0) {
            rc = dd_failf(err, DD_EIO, "ValidatingWebhookConfiguration %s has no webhooks",
                          o->webhook_config);
            goto out;
        }
        if (n == 0)
            goto out; /* every caBundle is already the bundle */
        if (!(body = cJSON_PrintUnformatted(ops)))
            goto nomem;
        rc = kube_patch(o->kube, path, KUBE_PATCH_JSON, body, NULL, 0, NULL, &st, err);
        if (rc == DD_OK) {
            res->webhooks_patched = n;
            say(o, "set caBundle of %d of %d webhook%s in ValidatingWebhookConfiguration %s", n,
                i, i == 1 ? "" : "s", o->webhook_config);
            goto out;
        }
        /* 422/409: the list changed under us (failed test); anything else is final. */
        if (st.http != 422 && st.http != 409)
            break;
    }
    rc = fail_wrap(err, DD_EIO, "patching caBundle of ValidatingWebhookConfiguration %s",
                   o->webhook_config);
    goto out;
nomem:
    rc = dd_failf(err, DD_ENOMEM, "out of memory");
out:
    free(body);
    free(b64);
    cJSON_Delete(ops);
    cJSON_Delete(obj);
    return rc;
}

static void sleep_seconds(int s)
{
    struct timespec ts = { s, 0 };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static enum dd_rc ensure_dir(const char *dir, struct dd_err *err)
{
    struct stat sb;

    if (mkdir(dir, 0755) == 0)
        return DD_OK;
    if (errno == EEXIST && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
        return DD_OK;
    return dd_failf(err, DD_EIO, "--out-dir %s: %s", dir,
                    errno == EEXIST ? "not a directory" : strerror(errno));
}

/*
 * The sequence (docs/certs.md): 1. the CA key and bundle go to the directory
 * and, if it exists and the serving certificate changes too, the Secret;
 * 2. the webhook configuration's caBundle; 3. when a new issuer is about to
 * serve, wait for the API server to load the bundle; 4. tls.key, then
 * tls.crt (a webhook reloading on tls.crt finds its key already there), and
 * the Secret in one update.
 */
static enum dd_rc publish(const struct certs_opts *o, const struct plan *p, struct store *d,
                          struct store *s, struct certs_result *res, struct dd_err *err)
{
    static const int ca_order[] = { F_CA_KEY, F_CA_CRT };
    static const int tls_order[] = { F_TLS_KEY, F_TLS_CRT };
    unsigned ca_mask = (1u << F_CA_CRT) | (1u << F_CA_KEY), all = (1u << NFILES) - 1;
    int tls_changes, delay;
    enum dd_rc rc;

    tls_changes = (o->out_dir && (!same_bytes(d->text[F_TLS_CRT], d->len[F_TLS_CRT],
                                              p->want[F_TLS_CRT], p->wlen[F_TLS_CRT]) ||
                                  !same_bytes(d->text[F_TLS_KEY], d->len[F_TLS_KEY],
                                              p->want[F_TLS_KEY], p->wlen[F_TLS_KEY]))) ||
                  (o->secret_name && (!s->exists || secret_differs(s, p, F_TLS_CRT) ||
                                      secret_differs(s, p, F_TLS_KEY)));
    if (o->out_dir && (rc = dir_publish(o, d, p, ca_order, 2, res, err)) != DD_OK)
        return rc;
    if (o->secret_name && s->exists && tls_changes &&
        (rc = secret_publish(o, s, p, ca_mask, res, err)) != DD_OK)
        return rc;
    if (o->webhook_config && (rc = webhook_publish(o, p, res, err)) != DD_OK)
        return rc;
    delay = o->propagation_delay >= 0 ? o->propagation_delay
                                      : (o->webhook_config ? DELAY_WEBHOOK : 0);
    if (tls_changes && delay > 0 && (p->ca_new || res->webhooks_patched)) {
        say(o, "waiting %d s for the API server to load the new CA bundle", delay);
        sleep_seconds(delay);
        res->waited = delay;
    }
    if (o->out_dir && (rc = dir_publish(o, d, p, tls_order, 2, res, err)) != DD_OK)
        return rc;
    if (o->secret_name && (rc = secret_publish(o, s, p, all, res, err)) != DD_OK)
        return rc;
    return DD_OK;
}

enum dd_rc certs_run(const struct certs_opts *o, struct certs_result *res, struct dd_err *err)
{
    struct certs_result dummy;
    struct store d, s;
    struct material m;
    struct plan p;
    struct sans want = { NULL, 0 };
    const struct store *src = NULL;
    char srcname[PATH_MAX + 64] = "", t[32], t2[32];
    time_t now = o->now ? o->now : time(NULL);
    enum dd_rc rc;

    if (!res)
        res = &dummy;
    memset(res, 0, sizeof(*res));
    memset(&d, 0, sizeof(d));
    memset(&s, 0, sizeof(s));
    memset(&m, 0, sizeof(m));
    memset(&p, 0, sizeof(p));
    dd_err_clear(err);
    if ((rc = certs_opts_check(o, err)) != DD_OK)
        return rc;
    if ((o->secret_name || o->webhook_config) && !o->kube)
        return dd_failf(err, DD_EINVAL, "no API client for --secret/--webhook-config");
    if ((rc = wanted_sans(o, &want, err)) != DD_OK)
        return rc;
    if (o->out_dir && ((rc = ensure_dir(o->out_dir, err)) != DD_OK ||
                       (rc = dir_load(o->out_dir, &d, err)) != DD_OK))
        goto out;
    if (o->secret_name && (rc = secret_load(o, &s, err)) != DD_OK)
        goto out;
    /* The Secret is the record a Job shares with later runs; the directory may be a copy. */
    if (s.any) {
        src = &s;
        snprintf(srcname, sizeof(srcname), "Secret %s/%s key ", o->secret_ns, o->secret_name);
    } else if (d.any) {
        src = &d;
        snprintf(srcname, sizeof(srcname), "%s/", o->out_dir);
    } else {
        src = &d; /* empty */
    }
    if ((rc = material_parse(src, srcname, &m, err)) != DD_OK ||
        (rc = plan_ca(o, now, &m, src, &p, err)) != DD_OK ||
        (rc = plan_bundle(o, now, &m, src, &p, err)) != DD_OK ||
        (rc = plan_serving(o, now, &want, &m, src, &p, err)) != DD_OK)
        goto out;
    res->ca_created = p.ca_new;
    res->serving_issued = p.tls_new;
    res->ca_not_after = cert_not_after(p.ca);
    res->not_after = p.tls_not_after;
    if ((rc = publish(o, &p, &d, &s, res, err)) != DD_OK)
        goto out;
    if (!p.ca_new && !p.tls_new && !res->files_written && !res->secret_written &&
        !res->webhooks_patched)
        say(o, "certificate valid until %s, nothing to do",
            fmt_time(p.tls_not_after, t, sizeof(t)));
    else
        say(o, "done: serving certificate valid until %s, CA until %s",
            fmt_time(p.tls_not_after, t, sizeof(t)),
            fmt_time(res->ca_not_after, t2, sizeof(t2)));
out:
    sans_release(&want);
    plan_release(&p);
    material_release(&m);
    store_release(&d);
    store_release(&s);
    return rc;
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor certs --service NAME --namespace NS\n"
"                        [--out-dir DIR] [--secret NS/NAME]\n"
"                        [--webhook-config NAME] [options]\n"
"\n"
"Creates, or renews before they expire, the admission webhook's CA and serving\n"
"certificate, and publishes them: as files, as a kubernetes.io/tls Secret, and\n"
"as the caBundle of every webhook of a ValidatingWebhookConfiguration.\n"
"Idempotent: when everything is valid and in place it changes nothing, so it\n"
"can run as an init step every time.  A new CA is published (and the old one\n"
"kept in the bundle until it expires) before a certificate it issued is served.\n"
"See docs/certs.md.\n"
"\n"
"what to certify:\n"
"  --service NAME          the webhook's Service; SANs NAME.NS.svc,\n"
"                          NAME.NS.svc.cluster.local, NAME.NS and NAME\n"
"  --namespace NS          the Service's namespace\n"
"  --dns NAME              another DNS SAN (repeatable; \"*.example.com\" allowed)\n"
"  --ip ADDR               an IP SAN, IPv4 or IPv6 (repeatable)\n"
"\n"
"where to keep it (at least one of --out-dir, --secret):\n"
"  --out-dir DIR           write ca.crt (the CA bundle), ca.key, tls.key,\n"
"                          tls.crt; keys mode 0600; each file replaced atomically\n"
"  --secret NS/NAME        create or update this kubernetes.io/tls Secret\n"
"                          (tls.crt, tls.key, ca.crt, ca.key); NAME alone means\n"
"                          --namespace.  Existing material is read from here\n"
"                          first, else from --out-dir\n"
"  --webhook-config NAME   set clientConfig.caBundle of every webhook of this\n"
"                          ValidatingWebhookConfiguration to the CA bundle\n"
"  --kubeconfig FILE       default: $KUBECONFIG, else in-cluster when running\n"
"                          in a pod, else ~/.kube/config\n"
"  --context NAME          kubeconfig context (default: current-context)\n"
"\n"
"validity and rotation:\n"
"  --days N                serving certificate validity (default 365)\n"
"  --ca-days N             CA validity (default 3650)\n"
"  --key-type ecdsa|rsa    serving (and new CA) key: ECDSA P-256 (default) or RSA\n"
"  --rsa-bits N            RSA key size, 2048..8192 (default 2048)\n"
"  --rotate-before DURATION\n"
"                          renew what expires within DURATION: 720h, 30d, 1d12h\n"
"                          (units s, m, h, d; default 30d).  A CA that expires\n"
"                          within it is replaced, and the serving certificate\n"
"                          is reissued from the new CA\n"
"  --force                 renew the serving certificate even if it is valid\n"
"  --new-ca                make a new CA even if it is valid (implies --force)\n"
"  --propagation-delay SECONDS\n"
"                          after publishing a new CA bundle, wait this long\n"
"                          before serving a certificate from the new CA\n"
"                          (default 5 with --webhook-config, else 0; max 600)\n"
"  -h, --help\n"
"\n"
"exit status: 0 done, or nothing needed doing; 1 runtime failure (API error,\n"
"file I/O, unreadable existing material); 2 usage error.\n");
}

/* Parses a whole decimal number in [lo, hi]; -1 when it is not one. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/*
 * kube_config_load as controller and node use it, except that in a pod (no
 * --kubeconfig, no $KUBECONFIG) in-cluster wins over a ~/.kube/config.
 */
static enum dd_rc load_config(struct kube_config *cfg, const char *kubeconfig, const char *context,
                              struct dd_err *err)
{
    const char *env = getenv("KUBECONFIG");

    if (!kubeconfig && (!env || !env[0]) && getenv("KUBERNETES_SERVICE_HOST"))
        return kube_config_in_cluster(cfg, NULL, err);
    return kube_config_load(cfg, kubeconfig, context, err);
}

enum {
    OPT_SERVICE = 256, OPT_NAMESPACE, OPT_OUT_DIR, OPT_SECRET, OPT_WEBHOOK, OPT_KUBECONFIG,
    OPT_CONTEXT, OPT_DNS, OPT_IP, OPT_DAYS, OPT_CA_DAYS, OPT_KEY_TYPE, OPT_RSA_BITS,
    OPT_ROTATE, OPT_FORCE, OPT_NEW_CA, OPT_DELAY
};

int certs_main(int argc, char **argv)
{
    static const struct option lopts[] = {
        { "service", required_argument, NULL, OPT_SERVICE },
        { "namespace", required_argument, NULL, OPT_NAMESPACE },
        { "out-dir", required_argument, NULL, OPT_OUT_DIR },
        { "secret", required_argument, NULL, OPT_SECRET },
        { "webhook-config", required_argument, NULL, OPT_WEBHOOK },
        { "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
        { "context", required_argument, NULL, OPT_CONTEXT },
        { "dns", required_argument, NULL, OPT_DNS },
        { "ip", required_argument, NULL, OPT_IP },
        { "days", required_argument, NULL, OPT_DAYS },
        { "ca-days", required_argument, NULL, OPT_CA_DAYS },
        { "key-type", required_argument, NULL, OPT_KEY_TYPE },
        { "rsa-bits", required_argument, NULL, OPT_RSA_BITS },
        { "rotate-before", required_argument, NULL, OPT_ROTATE },
        { "force", no_argument, NULL, OPT_FORCE },
        { "new-ca", no_argument, NULL, OPT_NEW_CA },
        { "propagation-delay", required_argument, NULL, OPT_DELAY },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char **dns = calloc((size_t)argc + 1, sizeof(*dns));
    const char **ips = calloc((size_t)argc + 1, sizeof(*ips));
    const char *secret = NULL, *kubeconfig = NULL, *context = NULL, *slash;
    char *secret_ns = NULL;
    struct certs_opts o;
    struct certs_result res;
    struct kube_config cfg;
    struct kube_client *kc = NULL;
    struct dd_err err;
    int ch, code = 2, rsa_bits_set = 0, have_cfg = 0;
    char d[32];

    memset(&cfg, 0, sizeof(cfg));
    dd_err_clear(&err);
    certs_opts_init(&o);
    if (!dns || !ips) {
        fprintf(stderr, "dra-doctor certs: out of memory\n");
        code = 1;
        goto out;
    }
    o.dns = dns;
    o.ips = ips;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
        switch (ch) {
        case OPT_SERVICE: o.service = optarg; break;
        case OPT_NAMESPACE: o.namespace_ = optarg; break;
        case OPT_OUT_DIR: o.out_dir = optarg; break;
        case OPT_SECRET: secret = optarg; break;
        case OPT_WEBHOOK: o.webhook_config = optarg; break;
        case OPT_KUBECONFIG: kubeconfig = optarg; break;
        case OPT_CONTEXT: context = optarg; break;
        case OPT_DNS: dns[o.ndns++] = optarg; break;
        case OPT_IP: ips[o.nips++] = optarg; break;
        case OPT_FORCE: o.force = 1; break;
        case OPT_NEW_CA: o.new_ca = 1; break;
        case OPT_DAYS:
            if (parse_int(optarg, 1, DAYS_MAX, &o.days)) {
                fprintf(stderr, "dra-doctor certs: --days \"%s\": not a number of days 1..%d\n",
                        optarg, DAYS_MAX);
                goto out;
            }
            break;
        case OPT_CA_DAYS:
            if (parse_int(optarg, 1, DAYS_MAX, &o.ca_days)) {
                fprintf(stderr,
                        "dra-doctor certs: --ca-days \"%s\": not a number of days 1..%d\n",
                        optarg, DAYS_MAX);
                goto out;
            }
            break;
        case OPT_KEY_TYPE:
            if (!strcmp(optarg, "ecdsa")) {
                o.key_type = CERTS_KEY_ECDSA;
            } else if (!strcmp(optarg, "rsa")) {
                o.key_type = CERTS_KEY_RSA;
            } else {
                fprintf(stderr, "dra-doctor certs: --key-type \"%s\": must be ecdsa or rsa\n",
                        optarg);
                goto out;
            }
            break;
        case OPT_RSA_BITS:
            if (parse_int(optarg, 2048, 8192, &o.rsa_bits) || o.rsa_bits % 1024) {
                fprintf(stderr,
                        "dra-doctor certs: --rsa-bits \"%s\": must be 2048, 3072, 4096 ... 8192\n",
                        optarg);
                goto out;
            }
            rsa_bits_set = 1;
            break;
        case OPT_ROTATE:
            if (certs_parse_duration(optarg, &o.rotate_before)) {
                fprintf(stderr,
                        "dra-doctor certs: --rotate-before \"%s\": not a duration such as 720h, "
                        "30d or 1d12h (units s, m, h, d)\n",
                        optarg);
                goto out;
            }
            break;
        case OPT_DELAY:
            if (parse_int(optarg, 0, DELAY_MAX, &o.propagation_delay)) {
                fprintf(stderr,
                        "dra-doctor certs: --propagation-delay \"%s\": not a number of seconds "
                        "0..%d\n",
                        optarg, DELAY_MAX);
                goto out;
            }
            break;
        case 'h':
            usage(stdout);
            code = 0;
            goto out;
        default:
            fprintf(stderr, "Try 'dra-doctor certs --help'.\n");
            goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "dra-doctor certs: unexpected argument '%s'\nTry 'dra-doctor certs --help'.\n",
                argv[optind]);
        goto out;
    }
    if (rsa_bits_set && o.key_type != CERTS_KEY_RSA) {
        fprintf(stderr, "dra-doctor certs: --rsa-bits needs --key-type rsa\n");
        goto out;
    }
    if (secret) {
        if ((slash = strchr(secret, '/')) != NULL) {
            if (!(secret_ns = strndup(secret, (size_t)(slash - secret)))) {
                code = 1;
                goto out;
            }
            o.secret_ns = secret_ns;
            o.secret_name = slash + 1;
        } else {
            o.secret_ns = o.namespace_;
            o.secret_name = secret;
        }
    }
    if (certs_opts_check(&o, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor certs: %s\nTry 'dra-doctor certs --help'.\n", err.msg);
        goto out;
    }
    if (o.rotate_before >= (long long)o.days * 86400)
        fprintf(stderr,
                "dra-doctor certs: warning: --rotate-before %s is not shorter than --days %d: "
                "every run will renew the serving certificate\n",
                fmt_duration(o.rotate_before, d, sizeof(d)), o.days);
    if (o.rotate_before >= (long long)o.ca_days * 86400)
        fprintf(stderr,
                "dra-doctor certs: warning: --rotate-before %s is not shorter than --ca-days %d: "
                "every run will replace the CA\n",
                fmt_duration(o.rotate_before, d, sizeof(d)), o.ca_days);
    code = 1;
    if (o.secret_name || o.webhook_config) {
        have_cfg = 1;
        if (load_config(&cfg, kubeconfig, context, &err) != DD_OK ||
            !(kc = kube_client_new(&cfg, NULL, &err))) {
            fprintf(stderr, "dra-doctor certs: %s\n", err.msg);
            goto out;
        }
        o.kube = kc;
    }
    o.log = stdout;
    if (certs_run(&o, &res, &err) != DD_OK) {
        fflush(stdout);
        fprintf(stderr, "dra-doctor certs: %s\n", err.msg);
        goto out;
    }
    code = 0;
out:
    kube_client_free(kc);
    kube_config_release(&cfg);
    if (have_cfg)
        kube_global_cleanup();
    free(secret_ns);
    free(dns);
    free(ips);
    return code;
}
