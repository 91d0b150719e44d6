/*
 * test_certs.c - `dra-doctor certs`: what it generates (checked with
 * OpenSSL's own verifier, not with certs.c's code), idempotence, renewal,
 * CA rotation with the overlap bundle, the file write order (observed with
 * inotify), a real TLS handshake between lib/client/httpd and lib/client/kube with the
 * generated pair, the Secret and caBundle publishing sequence against a mock
 * API server, and the command line's exit codes ($DD_BIN).
 */
#include "harness.h"
#include "certs.h"
#include "client/httpd.h"
#include "client/kube.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define DAY 86400LL
#define SVC "dra-webhook"
#define NS "dra-system"

/* ---- helpers ------------------------------------------------------------- */

static char *make_tmpdir(void)
{
    char tmpl[] = "/tmp/dd-certs-XXXXXX";
    char *d = mkdtemp(tmpl);

    assert_non_null(d);
    d = strdup(d);
    assert_non_null(d);
    return d;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_tree(char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);

    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *read_in(const char *dir, const char *name)
{
    char *p = path_in(dir, name), *text = test_read_file(p);

    free(p);
    return text;
}

static void write_in(const char *dir, const char *name, const char *text)
{
    char *p = path_in(dir, name);
    FILE *f = fopen(p, "w");

    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    free(p);
}

static mode_t mode_of(const char *dir, const char *name)
{
    char *p = path_in(dir, name);
    struct stat sb;

    assert_int_equal(stat(p, &sb), 0);
    free(p);
    return sb.st_mode & 07777;
}

static const char *const FILES[] = { "ca.crt", "ca.key", "tls.crt", "tls.key" };

/* The four files' texts. */
struct snap {
    char *t[4];
};

static void snap_take(struct snap *s, const char *dir)
{
    int i;

    for (i = 0; i < 4; i++)
        s->t[i] = read_in(dir, FILES[i]);
}

static void snap_free(struct snap *s)
{
    int i;

    for (i = 0; i < 4; i++)
        free(s->t[i]);
}

static void opts_for(struct certs_opts *o, const char *dir, time_t now)
{
    certs_opts_init(o);
    o->service = SVC;
    o->namespace_ = NS;
    o->out_dir = dir;
    o->now = now;
}

static void run_ok(const struct certs_opts *o, struct certs_result *res)
{
    struct dd_err err = { 0 };

    if (certs_run(o, res, &err) != DD_OK)
        fail_msg("certs_run: %s", err.msg);
}

/* Every certificate of a PEM text, with OpenSSL directly. */
static STACK_OF(X509) *pem_certs(const char *text)
{
    BIO *b = BIO_new_mem_buf(text, -1);
    STACK_OF(X509) *sk = sk_X509_new_null();
    X509 *x;

    assert_non_null(b);
    assert_non_null(sk);
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
        assert_true(sk_X509_push(sk, x) > 0);
    ERR_clear_error();
    BIO_free(b);
    return sk;
}

static EVP_PKEY *pem_key(const char *text)
{
    BIO *b = BIO_new_mem_buf(text, -1);
    EVP_PKEY *k;

    assert_non_null(b);
    k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(k);
    return k;
}

static int count_certs(const char *text)
{
    STACK_OF(X509) *sk = pem_certs(text);
    int n = sk_X509_num(sk);

    sk_X509_pop_free(sk, X509_free);
    return n;
}

/*
 * X509_verify_cert of leaf_pem's first certificate against a store holding
 * every certificate of bundle_pem, at time at, for a TLS server, strict, with
 * a host name and/or IP check.  Returns X509_V_OK or the verify error.
 */
static int verify_chain(const char *bundle_pem, const char *leaf_pem, time_t at, const char *host,
                        const char *ip)
{
    STACK_OF(X509) *bundle = pem_certs(bundle_pem), *leaf = pem_certs(leaf_pem);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_VERIFY_PARAM *p;
    int i, code;

    assert_non_null(store);
    assert_non_null(ctx);
    assert_true(sk_X509_num(leaf) >= 1);
    for (i = 0; i < sk_X509_num(bundle); i++)
        assert_int_equal(X509_STORE_add_cert(store, sk_X509_value(bundle, i)), 1);
    assert_int_equal(X509_STORE_CTX_init(ctx, store, sk_X509_value(leaf, 0), NULL), 1);
    p = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_time(p, at);
    assert_int_equal(X509_VERIFY_PARAM_set_purpose(p, X509_PURPOSE_SSL_SERVER), 1);
    X509_VERIFY_PARAM_set_flags(p, X509_V_FLAG_X509_STRICT);
    if (host)
        assert_int_equal(X509_VERIFY_PARAM_set1_host(p, host, 0), 1);
    if (ip)
        assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(p, ip), 1);
    code = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    ERR_clear_error();
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    sk_X509_pop_free(bundle, X509_free);
    sk_X509_pop_free(leaf, X509_free);
    return code;
}

static void assert_verifies(const char *bundle, const char *leaf, time_t at)
{
    int code = verify_chain(bundle, leaf, at, SVC "." NS ".svc", NULL);

    if (code != X509_V_OK)
        fail_msg("verification failed: %s", X509_verify_cert_error_string(code));
}

static void inspect(const char *pem, const char *issuer, struct certs_info *info)
{
    struct dd_err err = { 0 };

    if (certs_inspect(pem, strlen(pem), issuer, issuer ? strlen(issuer) : 0, info, &err) != DD_OK)
        fail_msg("certs_inspect: %s", err.msg);
}

/* ---- generation ---------------------------------------------------------- */

static void test_generate_ecdsa(void **state)
{
    const char *dns[] = { "Extra.Example.COM", SVC "." NS ".svc", "*.hooks.example.com" };
    const char *ips[] = { "10.1.2.3", "2001:0db8:0:0::5" };
    const char *want[] = { "DNS:" SVC "." NS ".svc", "DNS:" SVC "." NS ".svc.cluster.local",
                           "DNS:" SVC "." NS, "DNS:" SVC, "DNS:extra.example.com",
                           "DNS:*.hooks.example.com", "IP:10.1.2.3", "IP:2001:db8::5" };
    char *dir = make_tmpdir(), group[64];
    time_t now = time(NULL);
    struct certs_opts o;
    struct certs_result res;
    struct certs_info ca, leaf;
    struct snap s;
    STACK_OF(X509) *sk;
    EVP_PKEY *key;
    X509 *x;
    size_t i;

    (void)state;
    opts_for(&o, dir, now);
    o.dns = dns;
    o.ndns = 3;
    o.ips = ips;
    o.nips = 2;
    run_ok(&o, &res);
    assert_int_equal(res.ca_created, 1);
    assert_int_equal(res.serving_issued, 1);
    assert_int_equal(res.files_written, 4);
    snap_take(&s, dir);
    assert_int_equal(mode_of(dir, "ca.key"), 0600);
    assert_int_equal(mode_of(dir, "tls.key"), 0600);
    assert_int_equal(mode_of(dir, "ca.crt"), 0644);
    assert_int_equal(mode_of(dir, "tls.crt"), 0644);

    /* the chain, the names and the IPs, by OpenSSL's verifier */
    assert_verifies(s.t[0], s.t[2], now);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now, SVC, NULL), X509_V_OK);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now, "a.hooks.example.com", NULL), X509_V_OK);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now, NULL, "10.1.2.3"), X509_V_OK);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now, NULL, "2001:db8::5"), X509_V_OK);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now, "other." NS ".svc", NULL),
                     X509_V_ERR_HOSTNAME_MISMATCH);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now, NULL, "10.1.2.4"),
                     X509_V_ERR_IP_ADDRESS_MISMATCH);
    /* not valid before the 5-minute backdating, nor after --days */
    assert_int_equal(verify_chain(s.t[0], s.t[2], now - 400, NULL, NULL),
                     X509_V_ERR_CERT_NOT_YET_VALID);
    assert_int_equal(verify_chain(s.t[0], s.t[2], now + 366 * DAY, NULL, NULL),
                     X509_V_ERR_CERT_HAS_EXPIRED);

    /* exactly the SANs asked for, in order, deduplicated, lower-cased */
    inspect(s.t[2], s.t[0], &leaf);
    assert_int_equal(leaf.nsans, sizeof(want) / sizeof(want[0]));
    for (i = 0; i < leaf.nsans; i++)
        assert_string_equal(leaf.sans[i], want[i]);
    assert_int_equal(leaf.issued_by, 1);
    assert_int_equal(leaf.is_ca, 0);
    assert_string_equal(leaf.subject_cn, SVC "." NS ".svc");
    assert_string_equal(leaf.key_type, "ECDSA P-256");
    assert_int_equal(leaf.not_before, now - 300);
    assert_int_equal(leaf.not_after, now + 365 * DAY);
    assert_int_equal(strlen(leaf.serial), 32); /* 128 bits */
    inspect(s.t[0], s.t[0], &ca);
    assert_int_equal(ca.is_ca, 1);
    assert_int_equal(ca.issued_by, 1); /* self-signed */
    assert_string_equal(ca.subject_cn, "dra-doctor-ca");
    assert_int_equal(ca.not_after, now + 3650 * DAY);
    assert_int_equal(ca.nsans, 0);
    assert_string_not_equal(ca.serial, leaf.serial);
    assert_int_equal(res.not_after, leaf.not_after);
    assert_int_equal(res.ca_not_after, ca.not_after);
    certs_info_release(&ca);
    certs_info_release(&leaf);

    /* the key: P-256, and the pair matches */
    key = pem_key(s.t[3]);
    assert_true(EVP_PKEY_is_a(key, "EC"));
    assert_int_equal(EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group,
                                                    sizeof(group), NULL), 1);
    assert_string_equal(group, "prime256v1");
    sk = pem_certs(s.t[2]);
    x = sk_X509_value(sk, 0);
    assert_int_equal(X509_check_private_key(x, key), 1);
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
    assert_true(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
    assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
    assert_int_equal(X509_check_ca(x), 0);
    sk_X509_pop_free(sk, X509_free);
    EVP_PKEY_free(key);
    sk = pem_certs(s.t[0]);
    assert_int_equal(sk_X509_num(sk), 1);
    assert_true(X509_get_key_usage(sk_X509_value(sk, 0)) & KU_KEY_CERT_SIGN);
    key = pem_key(s.t[1]);
    assert_int_equal(X509_check_private_key(sk_X509_value(sk, 0), key), 1);
    EVP_PKEY_free(key);
    sk_X509_pop_free(sk, X509_free);
    snap_free(&s);
    rm_tree(dir);
}

static void test_generate_rsa(void **state)
{
    char *dir = make_tmpdir();
    time_t now = time(NULL);
    struct certs_opts o;
    struct certs_info leaf;
    struct snap s;
    STACK_OF(X509) *sk;
    EVP_PKEY *key;
    X509 *x;

    (void)state;
    opts_for(&o, dir, now);
    o.key_type = CERTS_KEY_RSA;
    run_ok(&o, NULL);
    snap_take(&s, dir);
    assert_verifies(s.t[0], s.t[2], now);
    key = pem_key(s.t[3]);
    assert_true(EVP_PKEY_is_a(key, "RSA"));
    assert_int_equal(EVP_PKEY_get_bits(key), 2048);
    sk = pem_certs(s.t[2]);
    x = sk_X509_value(sk, 0);
    assert_int_equal(X509_check_private_key(x, key), 1);
    assert_int_equal(X509_get_signature_nid(x), NID_sha256WithRSAEncryption);
    assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT);
    inspect(s.t[2], NULL, &leaf);
    assert_string_equal(leaf.key_type, "RSA 2048");
    assert_int_equal(leaf.nsans, 4);
    certs_info_release(&leaf);
    sk_X509_pop_free(sk, X509_free);
    EVP_PKEY_free(key);
    snap_free(&s);

    /* back to ECDSA: same CA, a new serving key of the asked type */
    o.key_type = CERTS_KEY_ECDSA;
    {
        struct certs_result res;
        struct snap s2;

        snap_take(&s, dir);
        run_ok(&o, &res);
        snap_take(&s2, dir);
        assert_int_equal(res.ca_created, 0);
        assert_int_equal(res.serving_issued, 1);
        assert_string_equal(s.t[0], s2.t[0]);
        inspect(s2.t[2], s2.t[0], &leaf);
        assert_string_equal(leaf.key_type, "ECDSA P-256");
        assert_int_equal(leaf.issued_by, 1);
        certs_info_release(&leaf);
        snap_free(&s);
        snap_free(&s2);
    }
    rm_tree(dir);
}

/* ---- idempotence and renewal --------------------------------------------- */

static void test_idempotent(void **state)
{
    const char *ips[] = { "192.0.2.7" };
    char *dir = make_tmpdir(), *p;
    time_t now = time(NULL);
    struct certs_opts o;
    struct certs_result res;
    struct snap a, b;
    struct stat before[4], after[4];
    int i;

    (void)state;
    opts_for(&o, dir, now);
    o.ips = ips;
    o.nips = 1;
    run_ok(&o, NULL);
    snap_take(&a, dir);
    for (i = 0; i < 4; i++) {
        p = path_in(dir, FILES[i]);
        assert_int_equal(stat(p, &before[i]), 0);
        free(p);
    }
    /* a second and a third run, the third a day later: nothing changes */
    run_ok(&o, &res);
    o.now = now + DAY;
    run_ok(&o, &res);
    assert_int_equal(res.ca_created + res.serving_issued + res.files_written, 0);
    snap_take(&b, dir);
    for (i = 0; i < 4; i++) {
        assert_string_equal(a.t[i], b.t[i]);
        p = path_in(dir, FILES[i]);
        assert_int_equal(stat(p, &after[i]), 0);
        free(p);
        assert_int_equal(before[i].st_ino, after[i].st_ino); /* not even rewritten */
    }
    /* nothing else left in the directory (no temporary files) */
    {
        int n = 0;
        DIR *d = opendir(dir);
        struct dirent *e;

        assert_non_null(d);
        while ((e = readdir(d)) != NULL)
            n += e->d_name[0] != '.';
        closedir(d);
        assert_int_equal(n, 4);
    }
    /* a key file whose mode was loosened is fixed without new material */
    p = path_in(dir, "tls.key");
    assert_int_equal(chmod(p, 0644), 0);
    free(p);
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued, 0);
    assert_int_equal(res.files_written, 1);
    assert_int_equal(mode_of(dir, "tls.key"), 0600);
    snap_free(&a);
    snap_free(&b);
    rm_tree(dir);
}

static void test_renew_serving(void **state)
{
    char *dir = make_tmpdir();
    time_t now = time(NULL);
    struct certs_opts o;
    struct certs_result res;
    struct certs_info i1, i2;
    struct snap a, b;

    (void)state;
    opts_for(&o, dir, now);
    run_ok(&o, NULL);
    snap_take(&a, dir);
    inspect(a.t[2], NULL, &i1);

    /* --rotate-before longer than the 365 days left: renewed, same CA */
    o.rotate_before = 400 * DAY;
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued, 1);
    assert_int_equal(res.ca_created, 0);
    assert_int_equal(res.files_written, 2);
    snap_take(&b, dir);
    assert_string_equal(a.t[0], b.t[0]);
    assert_string_equal(a.t[1], b.t[1]);
    assert_string_not_equal(a.t[3], b.t[3]); /* a new key too */
    inspect(b.t[2], b.t[0], &i2);
    assert_string_not_equal(i1.serial, i2.serial);
    assert_int_equal(i2.issued_by, 1);
    assert_verifies(b.t[0], b.t[2], now);
    certs_info_release(&i1);
    certs_info_release(&i2);
    snap_free(&a);
    snap_free(&b);

    /* time passes: 300 days on (65 left) nothing to do; 340 days on (25 left) renewed */
    o.rotate_before = 30 * DAY;
    snap_take(&a, dir);
    o.now = now + 300 * DAY;
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued + res.files_written, 0);
    o.now = now + 340 * DAY;
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued, 1);
    assert_int_equal(res.ca_created, 0);
    snap_take(&b, dir);
    assert_string_equal(a.t[0], b.t[0]);
    assert_string_not_equal(a.t[2], b.t[2]);
    assert_verifies(b.t[0], b.t[2], now + 340 * DAY);
    assert_verifies(b.t[0], b.t[2], now + 700 * DAY);
    snap_free(&a);
    snap_free(&b);

    /* --force renews a good certificate */
    snap_take(&a, dir);
    o.force = 1;
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued, 1);
    assert_int_equal(res.ca_created, 0);
    snap_take(&b, dir);
    assert_string_not_equal(a.t[2], b.t[2]);
    assert_string_equal(a.t[0], b.t[0]);
    snap_free(&a);
    snap_free(&b);
    rm_tree(dir);
}

/* SANs other than those asked for, and a key that is not the certificate's, are renewed. */
static void test_renew_on_mismatch(void **state)
{
    const char *dns[] = { "hook.example.com" };
    char *dir = make_tmpdir();
    time_t now = time(NULL);
    struct certs_opts o;
    struct certs_result res;
    struct certs_info info;
    struct snap a, b;

    (void)state;
    opts_for(&o, dir, now);
    run_ok(&o, NULL);
    snap_take(&a, dir);
    o.dns = dns;
    o.ndns = 1;
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued, 1);
    assert_int_equal(res.ca_created, 0);
    snap_take(&b, dir);
    inspect(b.t[2], b.t[0], &info);
    assert_int_equal(info.nsans, 5);
    assert_string_equal(info.sans[4], "DNS:hook.example.com");
    certs_info_release(&info);
    assert_string_equal(a.t[0], b.t[0]);
    snap_free(&a);

    /* tls.key replaced by another valid key: the pair no longer matches */
    write_in(dir, "tls.key", b.t[1]);
    run_ok(&o, &res);
    assert_int_equal(res.serving_issued, 1);
    assert_int_equal(res.ca_created, 0);
    snap_free(&b);
    snap_take(&b, dir);
    {
        STACK_OF(X509) *sk = pem_certs(b.t[2]);
        EVP_PKEY *k = pem_key(b.t[3]);

        assert_int_equal(X509_check_private_key(sk_X509_value(sk, 0), k), 1);
        EVP_PKEY_free(k);
        sk_X509_pop_free(sk, X509_free);
    }
    snap_free(&b);
    rm_tree(dir);
}

/* ---- CA rotation ---------------------------------------------------------- */

static void test_ca_rotation_on_expiry(void **state)
{
    char *dir = make_tmpdir();
    time_t t0 = time(NULL), t1 = t0 + 3625 * DAY, t2 = t0 + 3655 * DAY;
    struct certs_opts o;
    struct certs_result res;
    struct certs_info info;
    struct snap a, b, c;
    STACK_OF(X509) *old, *bundle;

    (void)state;
    opts_for(&o, dir, t0);
    o.days = 3640; /* the first serving certificate outlives the CA rotation */
    run_ok(&o, NULL);
    snap_take(&a, dir);

    /* 25 days before the CA expires: a new CA; the bundle is new CA + old CA */
    o.now = t1;
    run_ok(&o, &res);
    assert_int_equal(res.ca_created, 1);
    assert_int_equal(res.serving_issued, 1);
    snap_take(&b, dir);
    assert_string_not_equal(a.t[1], b.t[1]);
    assert_int_equal(count_certs(b.t[0]), 2);
    old = pem_certs(a.t[0]);
    bundle = pem_certs(b.t[0]);
    assert_int_equal(X509_cmp(sk_X509_value(bundle, 1), sk_X509_value(old, 0)), 0);
    assert_int_not_equal(X509_cmp(sk_X509_value(bundle, 0), sk_X509_value(old, 0)), 0);
    {
        EVP_PKEY *k = pem_key(b.t[1]); /* ca.key is the first (current) CA's */

        assert_int_equal(X509_check_private_key(sk_X509_value(bundle, 0), k), 1);
        EVP_PKEY_free(k);
    }
    sk_X509_pop_free(old, X509_free);
    sk_X509_pop_free(bundle, X509_free);
    /* the new certificate verifies against the bundle, and not against the old CA alone */
    assert_verifies(b.t[0], b.t[2], t1);
    assert_int_not_equal(verify_chain(a.t[0], b.t[2], t1, NULL, NULL), X509_V_OK);
    /* the overlap: a webhook still serving the old certificate stays trusted */
    assert_verifies(b.t[0], a.t[2], t1);
    inspect(b.t[2], b.t[0], &info);
    assert_int_equal(info.issued_by, 1);
    assert_int_equal(info.not_after, t1 + 3640 * DAY);
    certs_info_release(&info);

    /* idempotent in the overlap */
    run_ok(&o, &res);
    assert_int_equal(res.ca_created + res.serving_issued + res.files_written, 0);

    /* once the old CA has expired, it leaves the bundle; nothing else changes */
    o.now = t2;
    run_ok(&o, &res);
    assert_int_equal(res.ca_created, 0);
    assert_int_equal(res.serving_issued, 0);
    assert_int_equal(res.files_written, 1);
    snap_take(&c, dir);
    assert_int_equal(count_certs(c.t[0]), 1);
    assert_string_equal(b.t[1], c.t[1]);
    assert_string_equal(b.t[2], c.t[2]);
    assert_verifies(c.t[0], c.t[2], t2);
    snap_free(&a);
    snap_free(&b);
    snap_free(&c);
    rm_tree(dir);
}

static void test_new_ca(void **state)
{
    char *dir = make_tmpdir();
    time_t now = time(NULL);
    struct certs_opts o;
    struct certs_result res;
    struct snap a, b, c;

    (void)state;
    opts_for(&o, dir, now);
    run_ok(&o, NULL);
    snap_take(&a, dir);
    o.new_ca = 1;
    run_ok(&o, &res);
    assert_int_equal(res.ca_created, 1);
    assert_int_equal(res.serving_issued, 1);
    snap_take(&b, dir);
    assert_int_equal(count_certs(b.t[0]), 2);
    assert_verifies(b.t[0], b.t[2], now);
    assert_verifies(b.t[0], a.t[2], now);
    /* a second --new-ca keeps both older CAs while they are valid */
    run_ok(&o, &res);
    snap_take(&c, dir);
    assert_int_equal(count_certs(c.t[0]), 3);
    assert_verifies(c.t[0], a.t[2], now);
    assert_verifies(c.t[0], b.t[2], now);
    assert_verifies(c.t[0], c.t[2], now);
    snap_free(&a);
    snap_free(&b);
    snap_free(&c);

    /* ca.key lost: a new CA, the orphaned one stays in the bundle for its certificates */
    o.new_ca = 0;
    snap_take(&a, dir);
    {
        char *p = path_in(dir, "ca.key");

        assert_int_equal(unlink(p), 0);
        free(p);
    }
    run_ok(&o, &res);
    assert_int_equal(res.ca_created, 1);
    snap_take(&b, dir);
    assert_int_equal(count_certs(b.t[0]), 4);
    assert_verifies(b.t[0], a.t[2], now);
    assert_verifies(b.t[0], b.t[2], now);
    snap_free(&a);
    snap_free(&b);
    rm_tree(dir);
}

/* ---- write order --------------------------------------------------------- */

/* The names renamed into dir while fn ran, in order, joined with ' '. */
static void renames_during(const char *dir, const struct certs_opts *o, char *out, size_t n)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    ssize_t len;
    char *p;

    assert_true(fd >= 0);
    assert_true(inotify_add_watch(fd, dir, IN_MOVED_TO) >= 0);
    run_ok(o, NULL);
    out[0] = '\0';
    while ((len = read(fd, buf, sizeof(buf))) > 0) {
        for (p = buf; p < buf + len;) {
            const struct inotify_event *e = (const struct inotify_event *)p;

            if (e->len)
                snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? " " : "", e->name);
            p += sizeof(*e) + e->len;
        }
    }
    close(fd);
}

static void test_write_order(void **state)
{
    char *dir = make_tmpdir(), order[256];
    struct certs_opts o;

    (void)state;
    opts_for(&o, dir, time(NULL));
    renames_during(dir, &o, order, sizeof(order));
    assert_string_equal(order, "ca.key ca.crt tls.key tls.crt");
    o.force = 1;
    renames_during(dir, &o, order, sizeof(order));
    assert_string_equal(order, "tls.key tls.crt");
    o.new_ca = 1;
    renames_during(dir, &o, order, sizeof(order));
    assert_string_equal(order, "ca.key ca.crt tls.key tls.crt");
    o.force = o.new_ca = 0;
    renames_during(dir, &o, order, sizeof(order));
    assert_string_equal(order, "");
    rm_tree(dir);
}

/* ---- errors ---------------------------------------------------------------- */

static void test_bad_options(void **state)
{
    const char *bad_ips[] = { "10.0.0.256" }, *zone[] = { "fe80::1%eth0" };
    const char *bad_dns[] = { "under_score.example.com" };
    char *dir = make_tmpdir(), *sub = path_in(dir, "out");
    struct certs_opts o;
    struct dd_err err = { 0 };

    (void)state;
    opts_for(&o, sub, 0);
    assert_int_equal(certs_opts_check(&o, &err), DD_OK);
    o.ips = bad_ips;
    o.nips = 1;
    assert_int_equal(certs_run(&o, NULL, &err), DD_EINVAL);
    assert_contains(err.msg, "--ip \"10.0.0.256\"");
    assert_contains(err.msg, "not an IPv4 address");
    assert_int_equal(access(sub, F_OK), -1); /* nothing written, not even the directory */
    o.ips = zone;
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    assert_contains(err.msg, "fe80::1%eth0");
    o.nips = 0;
    o.dns = bad_dns;
    o.ndns = 1;
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    assert_contains(err.msg, "--dns \"under_score.example.com\"");
    o.ndns = 0;
    o.service = "Bad.Service";
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    assert_contains(err.msg, "--service");
    o.service = SVC;
    o.namespace_ = NULL;
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    assert_contains(err.msg, "--namespace is required");
    o.namespace_ = NS;
    o.out_dir = NULL;
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    assert_contains(err.msg, "--out-dir");
    o.out_dir = sub;
    o.days = 0;
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    o.days = 365;
    o.rsa_bits = 1024;
    assert_int_equal(certs_opts_check(&o, &err), DD_EINVAL);
    o.rsa_bits = 2048;
    o.secret_ns = NS;
    o.secret_name = "tls";
    assert_int_equal(certs_opts_check(&o, &err), DD_OK);
    assert_int_equal(certs_run(&o, NULL, &err), DD_EINVAL); /* no API client */
    assert_contains(err.msg, "API client");
    free(sub);
    rm_tree(dir);
}

static void test_bad_existing_files(void **state)
{
    char *dir = make_tmpdir();
    struct certs_opts o;
    struct dd_err err = { 0 };
    struct snap a;
    char *now_text;

    (void)state;
    opts_for(&o, dir, 0);
    run_ok(&o, NULL);
    snap_take(&a, dir);
    write_in(dir, "tls.crt", "not a certificate\n");
    assert_int_equal(certs_run(&o, NULL, &err), DD_EPARSE);
    assert_contains(err.msg, "/tls.crt: not a PEM certificate");
    now_text = read_in(dir, "tls.crt");
    assert_string_equal(now_text, "not a certificate\n"); /* left for a person to look at */
    free(now_text);
    /* an empty file is a placeholder, not damage: the pair is issued again */
    write_in(dir, "tls.crt", "\n");
    {
        struct certs_result res;

        run_ok(&o, &res);
        assert_int_equal(res.serving_issued, 1);
        assert_int_equal(res.ca_created, 0);
    }
    write_in(dir, "ca.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    assert_int_equal(certs_run(&o, NULL, &err), DD_EPARSE);
    assert_contains(err.msg, "/ca.key: not an unencrypted PEM private key");
    snap_free(&a);
    rm_tree(dir);
}

static void test_duration(void **state)
{
    long long s = -1;

    (void)state;
    assert_int_equal(certs_parse_duration("30d", &s), 0);
    assert_int_equal(s, 30 * DAY);
    assert_int_equal(certs_parse_duration("720h", &s), 0);
    assert_int_equal(s, 30 * DAY);
    assert_int_equal(certs_parse_duration("1d12h30m5s", &s), 0);
    assert_int_equal(s, DAY + 12 * 3600 + 30 * 60 + 5);
    assert_int_equal(certs_parse_duration("0", &s), 0);
    assert_int_equal(s, 0);
    assert_int_equal(certs_parse_duration("", &s), -1);
    assert_int_equal(certs_parse_duration("30", &s), -1);
    assert_int_equal(certs_parse_duration("d", &s), -1);
    assert_int_equal(certs_parse_duration("30x", &s), -1);
    assert_int_equal(certs_parse_duration("-1d", &s), -1);
    assert_int_equal(certs_parse_duration("36500d", &s), 0); /* 100 years: the cap */
    assert_int_equal(s, 36500 * DAY);
    assert_int_equal(certs_parse_duration("36501d", &s), -1);
    assert_int_equal(certs_parse_duration("99999999999999999999d", &s), -1);
    assert_int_equal(certs_parse_duration("40000d", &s), -1);
}

/* ---- a real TLS handshake with the generated pair ------------------------ */

static void h_ok(void *ctx, const char *method, const char *body, size_t len,
                 struct httpd_response *resp)
{
    (void)ctx, (void)method, (void)body, (void)len;
    resp->content_type = "application/json";
    resp->body = strdup("{}");
    resp->len = 2;
}

static enum dd_rc tls_get(unsigned short port, const char *host, const char *ca_pem,
                          struct dd_err *err)
{
    struct kube_client_opts ko = KUBE_CLIENT_OPTS_INIT;
    struct kube_config cfg;
    struct kube_client *c;
    char server[64];
    cJSON *out = NULL;
    enum dd_rc rc;

    memset(&cfg, 0, sizeof(cfg));
    snprintf(server, sizeof(server), "https://%s:%u", host, (unsigned)port);
    cfg.server = server;
    cfg.ca_pem = (char *)ca_pem;
    ko.max_retries = -1;
    c = kube_client_new(&cfg, &ko, err);
    assert_non_null(c);
    rc = kube_get(c, "/healthz", &out, NULL, err);
    cJSON_Delete(out);
    kube_client_free(c);
    return rc;
}

static void test_tls_handshake(void **state)
{
    const char *ips[] = { "127.0.0.1" };
    struct httpd_route routes[] = { { .path = "/healthz", .fn = h_ok, .ctx = NULL } };
    struct httpd_opts ho = { .bind = "127.0.0.1", .threads = 1 };
    char *dir = make_tmpdir(), *other = make_tmpdir(), *cert, *key;
    struct certs_opts o;
    struct dd_err err = { 0 };
    struct httpd *h;
    struct snap s, t;

    (void)state;
    opts_for(&o, dir, 0);
    o.ips = ips;
    o.nips = 1;
    run_ok(&o, NULL);
    o.out_dir = other;
    run_ok(&o, NULL);
    snap_take(&s, dir);
    snap_take(&t, other);
    cert = path_in(dir, "tls.crt");
    key = path_in(dir, "tls.key");
    ho.cert_file = cert;
    ho.key_file = key;
    h = httpd_start(&ho, routes, 1, &err);
    if (!h)
        fail_msg("httpd_start with the generated pair: %s", err.msg);
    /* libcurl trusts the bundle and checks the IP SAN; another CA is refused */
    if (tls_get(httpd_port(h), "127.0.0.1", s.t[0], &err) != DD_OK)
        fail_msg("TLS request with the generated CA: %s", err.msg);
    assert_int_not_equal(tls_get(httpd_port(h), "127.0.0.1", t.t[0], &err), DD_OK);
    httpd_stop(h);
    free(cert);
    free(key);
    snap_free(&s);
    snap_free(&t);
    rm_tree(dir);
    rm_tree(other);
}

/* ---- Secret and caBundle against a mock API server ------------------------ */

#define SECRET_PATH "/api/v1/namespaces/" NS "/secrets/webhook-tls"
#define SECRETS_PATH "/api/v1/namespaces/" NS "/secrets"
#define VWC_PATH "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/dra-doctor"

static struct {
    pthread_mutex_t mu;
    cJSON *secret;          /* NULL: absent */
    cJSON *vwc;             /* NULL: absent */
    long rv;
    char log[2048];         /* "VERB object [keys]" separated by "; " */
    int bump_after_get;     /* a concurrent writer: the Secret changes right after each GET */
} api = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 1, "", 0 };

static void api_log(const char *fmt, const char *a, const char *b)
{
    size_t n = strlen(api.log);

    snprintf(api.log + n, sizeof(api.log) - n, "%s", n ? "; " : "");
    n = strlen(api.log);
    snprintf(api.log + n, sizeof(api.log) - n, fmt, a, b);
}

static void reply(struct httpd_response *resp, int code, const cJSON *obj)
{
    resp->status = code;
    resp->content_type = "application/json";
    resp->body = cJSON_PrintUnformatted(obj);
    resp->len = strlen(resp->body);
}

static void reply_status(struct httpd_response *resp, int code, const char *reason)
{
    cJSON *st = cJSON_CreateObject();

    cJSON_AddStringToObject(st, "kind", "Status");
    cJSON_AddStringToObject(st, "apiVersion", "v1");
    cJSON_AddStringToObject(st, "status", "Failure");
    cJSON_AddStringToObject(st, "reason", reason);
    cJSON_AddStringToObject(st, "message", reason);
    cJSON_AddNumberToObject(st, "code", code);
    reply(resp, code, st);
    cJSON_Delete(st);
}

static void set_rv(cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItem(obj, "metadata");
    char rv[32];

    snprintf(rv, sizeof(rv), "%ld", ++api.rv);
    cJSON_DeleteItemFromObject(meta, "resourceVersion");
    cJSON_AddStringToObject(meta, "resourceVersion", rv);
}

static void data_keys(const cJSON *obj, char *buf, size_t n)
{
    const cJSON *k;

    buf[0] = '\0';
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(obj, "data"))
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? " " : "", k->string);
}

static void h_secrets(void *ctx, const char *method, const char *body, size_t len,
                      struct httpd_response *resp)
{
    cJSON *obj;
    char keys[128];

    (void)ctx, (void)len;
    pthread_mutex_lock(&api.mu);
    if (strcmp(method, "POST") || api.secret) {
        reply_status(resp, api.secret ? 409 : 405,
                     api.secret ? "AlreadyExists" : "MethodNotAllowed");
    } else {
        obj = cJSON_Parse(body);
        set_rv(obj);
        data_keys(obj, keys, sizeof(keys));
        api_log("POST secret %s%s", keys, "");
        api.secret = obj;
        reply(resp, 201, obj);
    }
    pthread_mutex_unlock(&api.mu);
}

static void h_secret(void *ctx, const char *method, const char *body, size_t len,
                     struct httpd_response *resp)
{
    cJSON *patch, *item, *data;
    const char *rv, *cur;
    char keys[128];

    (void)ctx, (void)len;
    pthread_mutex_lock(&api.mu);
    if (!strcmp(method, "GET")) {
        api_log("GET secret%s%s", "", "");
        if (api.secret)
            reply(resp, 200, api.secret);
        else
            reply_status(resp, 404, "NotFound");
        if (api.secret && api.bump_after_get)
            set_rv(api.secret);
    } else if (!strcmp(method, "PATCH") && api.secret) {
        patch = cJSON_Parse(body);
        rv = cJSON_GetStringValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(patch, "metadata"), "resourceVersion"));
        cur = cJSON_GetStringValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(api.secret, "metadata"), "resourceVersion"));
        if (!rv || strcmp(rv, cur)) {
            reply_status(resp, 409, "Conflict");
        } else {
            data = cJSON_GetObjectItem(api.secret, "data");
            cJSON_ArrayForEach(item, cJSON_GetObjectItem(patch, "data"))
            {
                cJSON_DeleteItemFromObject(data, item->string);
                cJSON_AddItemToObject(data, item->string, cJSON_Duplicate(item, 1));
            }
            set_rv(api.secret);
            data_keys(patch, keys, sizeof(keys));
            api_log("PATCH secret %s%s", keys, "");
            reply(resp, 200, api.secret);
        }
        cJSON_Delete(patch);
    } else {
        reply_status(resp, api.secret ? 405 : 404, "NotFound");
    }
    pthread_mutex_unlock(&api.mu);
}

/* Applies a JSON patch of "test" (name) and "add" (caBundle) operations, all or nothing. */
static void h_vwc(void *ctx, const char *method, const char *body, size_t len,
                  struct httpd_response *resp)
{
    cJSON *ops, *op, *copy, *hook;
    int idx, failed = 0;
    char field[64];

    (void)ctx, (void)len;
    pthread_mutex_lock(&api.mu);
    if (!api.vwc) {
        reply_status(resp, 404, "NotFound");
    } else if (!strcmp(method, "GET")) {
        api_log("GET vwc%s%s", "", "");
        reply(resp, 200, api.vwc);
    } else if (!strcmp(method, "PATCH")) {
        ops = cJSON_Parse(body);
        copy = cJSON_Duplicate(api.vwc, 1);
        cJSON_ArrayForEach(op, ops)
        {
            const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(op, "op"));
            const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(op, "path"));
            const char *value = cJSON_GetStringValue(cJSON_GetObjectItem(op, "value"));

            if (!kind || !path || !value || sscanf(path, "/webhooks/%d/%63s", &idx, field) != 2 ||
                !(hook = cJSON_GetArrayItem(cJSON_GetObjectItem(copy, "webhooks"), idx))) {
                failed = 1;
            } else if (!strcmp(kind, "test") && !strcmp(field, "name")) {
                const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(hook, "name"));

                failed |= !name || strcmp(name, value) != 0;
            } else if (!strcmp(kind, "add") && !strcmp(field, "clientConfig/caBundle")) {
                cJSON *cc = cJSON_GetObjectItem(hook, "clientConfig");

                cJSON_DeleteItemFromObject(cc, "caBundle");
                cJSON_AddStringToObject(cc, "caBundle", value);
            } else {
                failed = 1;
            }
        }
        cJSON_Delete(ops);
        if (failed) {
            cJSON_Delete(copy);
            reply_status(resp, 422, "Invalid");
        } else {
            cJSON_Delete(api.vwc);
            api.vwc = copy;
            set_rv(api.vwc);
            api_log("PATCH vwc%s%s", "", "");
            reply(resp, 200, api.vwc);
        }
    } else {
        reply_status(resp, 405, "MethodNotAllowed");
    }
    pthread_mutex_unlock(&api.mu);
}

static void api_reset(int with_vwc)
{
    pthread_mutex_lock(&api.mu);
    cJSON_Delete(api.secret);
    cJSON_Delete(api.vwc);
    api.secret = NULL;
    api.vwc = with_vwc ? cJSON_Parse(
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\","
        "\"kind\":\"ValidatingWebhookConfiguration\",\"metadata\":{\"name\":\"dra-doctor\","
        "\"resourceVersion\":\"1\"},\"webhooks\":["
        "{\"name\":\"a.dra-doctor.io\",\"clientConfig\":{\"url\":\"https://a.example\"}},"
        "{\"name\":\"b.dra-doctor.io\",\"clientConfig\":{\"url\":\"https://b.example\","
        "\"caBundle\":\"b2xk\"}}]}")
                        : NULL;
    api.log[0] = '\0';
    pthread_mutex_unlock(&api.mu);
}

/* Secret data key, decoded. */
static char *secret_key(const char *key)
{
    const char *b64;
    unsigned char *out;
    int n;

    pthread_mutex_lock(&api.mu);
    b64 = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(api.secret, "data"), key));
    assert_non_null(b64);
    out = calloc(strlen(b64) + 1, 1);
    assert_non_null(out);
    n = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)strlen(b64));
    assert_true(n > 0);
    pthread_mutex_unlock(&api.mu);
    return (char *)out; /* padding decodes to NULs, which end the string */
}

static char *ca_bundle(int i)
{
    const char *b64;
    unsigned char *out;

    pthread_mutex_lock(&api.mu);
    b64 = cJSON_GetStringValue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(api.vwc, "webhooks"), i),
                            "clientConfig"),
        "caBundle"));
    assert_non_null(b64);
    out = calloc(strlen(b64) + 1, 1);
    assert_non_null(out);
    assert_true(EVP_DecodeBlock(out, (const unsigned char *)b64, (int)strlen(b64)) > 0);
    pthread_mutex_unlock(&api.mu);
    return (char *)out;
}

static struct httpd *api_srv;
static struct kube_client *api_client;

static int api_setup(void **state)
{
    static const struct httpd_route routes[] = {
        { .path = SECRET_PATH, .fn = h_secret, .ctx = NULL },
        { .path = SECRETS_PATH, .fn = h_secrets, .ctx = NULL },
        { .path = VWC_PATH, .fn = h_vwc, .ctx = NULL },
    };
    struct httpd_opts ho = { .bind = "127.0.0.1", .threads = 2 };
    struct kube_client_opts ko = KUBE_CLIENT_OPTS_INIT;
    struct kube_config cfg;
    struct dd_err err = { 0 };
    char server[64];

    (void)state;
    if (!(api_srv = httpd_start(&ho, routes, 3, &err))) {
        fprintf(stderr, "mock API server: %s\n", err.msg);
        return -1;
    }
    memset(&cfg, 0, sizeof(cfg));
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", (unsigned)httpd_port(api_srv));
    cfg.server = server;
    ko.max_retries = -1;
    if (!(api_client = kube_client_new(&cfg, &ko, &err))) {
        fprintf(stderr, "client: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int api_teardown(void **state)
{
    (void)state;
    kube_client_free(api_client);
    httpd_stop(api_srv);
    api_reset(0);
    kube_global_cleanup();
    return 0;
}

static void api_opts(struct certs_opts *o, const char *dir)
{
    opts_for(o, dir, 0);
    o->out_dir = dir;
    o->secret_ns = NS;
    o->secret_name = "webhook-tls";
    o->webhook_config = "dra-doctor";
    o->kube = api_client;
}

static void test_api_publish(void **state)
{
    struct certs_opts o;
    struct certs_result res;
    struct dd_err err = { 0 };
    char *crt, *key, *ca, *cakey, *b0, *b1, *file;
    time_t now = time(NULL);

    (void)state;
    api_reset(1);
    api_opts(&o, NULL);
    o.propagation_delay = 1;
    run_ok(&o, &res);
    /* caBundle first, the delay, then the Secret with everything, created in one request */
    assert_string_equal(api.log,
                        "GET secret; GET vwc; PATCH vwc; "
                        "POST secret ca.crt ca.key tls.crt tls.key");
    assert_int_equal(res.webhooks_patched, 2);
    assert_int_equal(res.secret_written, 1);
    assert_int_equal(res.waited, 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(api.secret, "type")),
                        "kubernetes.io/tls");
    crt = secret_key("tls.crt");
    key = secret_key("tls.key");
    ca = secret_key("ca.crt");
    cakey = secret_key("ca.key");
    assert_verifies(ca, crt, now);
    {
        STACK_OF(X509) *sk = pem_certs(crt);
        EVP_PKEY *k = pem_key(key);

        assert_int_equal(X509_check_private_key(sk_X509_value(sk, 0), k), 1);
        EVP_PKEY_free(k);
        sk_X509_pop_free(sk, X509_free);
    }
    b0 = ca_bundle(0);
    b1 = ca_bundle(1);
    assert_string_equal(b0, ca);
    assert_string_equal(b1, ca);
    free(b0);
    free(b1);

    /* the second run reads and writes nothing */
    api.log[0] = '\0';
    run_ok(&o, &res);
    assert_string_equal(api.log, "GET secret; GET vwc");
    assert_int_equal(res.secret_written + res.webhooks_patched + res.waited, 0);

    /* a renewal under the same CA: no caBundle change, no delay */
    api.log[0] = '\0';
    o.force = 1;
    run_ok(&o, &res);
    assert_string_equal(api.log, "GET secret; GET vwc; PATCH secret tls.crt tls.key");
    assert_int_equal(res.waited, 0);
    o.force = 0;

    /* a new CA: the CA into the Secret, caBundle, the delay, then the serving pair */
    api.log[0] = '\0';
    o.new_ca = 1;
    run_ok(&o, &res);
    o.new_ca = 0;
    assert_string_equal(api.log, "GET secret; PATCH secret ca.crt ca.key; GET vwc; PATCH vwc; "
                                 "PATCH secret tls.crt tls.key");
    assert_int_equal(res.waited, 1);
    free(ca);
    ca = secret_key("ca.crt");
    assert_int_equal(count_certs(ca), 2);
    b0 = ca_bundle(0);
    assert_string_equal(b0, ca);
    free(b0);
    free(crt);
    crt = secret_key("tls.crt");
    assert_verifies(ca, crt, now);

    /* an out-dir added later is filled from the Secret, which stays as it is */
    {
        char *dir = make_tmpdir();

        api.log[0] = '\0';
        o.out_dir = dir;
        run_ok(&o, &res);
        assert_string_equal(api.log, "GET secret; GET vwc");
        assert_int_equal(res.files_written, 4);
        assert_int_equal(res.serving_issued, 0);
        file = read_in(dir, "tls.crt");
        assert_string_equal(file, crt);
        free(file);
        file = read_in(dir, "ca.crt");
        assert_string_equal(file, ca);
        free(file);
        o.out_dir = NULL;
        rm_tree(dir);
    }

    /* errors name the object */
    o.webhook_config = "missing";
    assert_int_equal(certs_run(&o, &res, &err), DD_ENOTFOUND);
    assert_contains(err.msg, "ValidatingWebhookConfiguration missing not found");
    free(crt);
    free(key);
    free(ca);
    free(cakey);
}

/* A chart's placeholder Secret with empty keys is filled in, CA before serving pair. */
static void test_api_placeholder_secret(void **state)
{
    struct certs_opts o;
    struct certs_result res;
    char *ca, *crt;

    (void)state;
    api_reset(1);
    pthread_mutex_lock(&api.mu);
    api.secret = cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"kubernetes.io/tls\","
        "\"metadata\":{\"name\":\"webhook-tls\",\"namespace\":\"" NS "\","
        "\"resourceVersion\":\"7\"},\"data\":{\"tls.crt\":\"\",\"tls.key\":\"\"}}");
    pthread_mutex_unlock(&api.mu);
    api_opts(&o, NULL);
    o.propagation_delay = 0;
    run_ok(&o, &res);
    assert_string_equal(api.log, "GET secret; PATCH secret ca.crt ca.key; GET vwc; PATCH vwc; "
                                 "PATCH secret tls.crt tls.key");
    assert_int_equal(res.secret_written, 2);
    assert_int_equal(res.waited, 0);
    ca = secret_key("ca.crt");
    crt = secret_key("tls.crt");
    assert_verifies(ca, crt, time(NULL));
    free(ca);
    free(crt);
    /* another writer between our GET and PATCH: a Conflict, not a silent overwrite */
    {
        struct dd_err err = { 0 };
        char *before = secret_key("tls.crt"), *after;

        o.force = 1;
        api.bump_after_get = 1;
        assert_int_equal(certs_run(&o, &res, &err), DD_EIO);
        api.bump_after_get = 0;
        assert_contains(err.msg, "updating Secret " NS "/webhook-tls");
        assert_contains(err.msg, "409");
        after = secret_key("tls.crt");
        assert_string_equal(before, after);
        free(before);
        free(after);
    }
}

/* ---- the command line ----------------------------------------------------- */

struct cli {
    int status;
    char *out;
    char *err;
};

static void cli_free(struct cli *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Runs $DD_BIN certs argv... with stdout and stderr captured in files of dir. */
static void cli(struct cli *r, const char *dir, const char *const *argv)
{
    const char *bin = getenv("DD_BIN");
    const char *args[40];
    char *out = path_in(dir, "stdout"), *errp = path_in(dir, "stderr");
    size_t i;
    pid_t pid;
    int st;

    assert_non_null(bin);
    args[0] = bin;
    args[1] = "certs";
    for (i = 0; argv[i] && i < 36; i++)
        args[i + 2] = argv[i];
    args[i + 2] = NULL;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (o < 0 || e < 0)
            _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        setenv("KUBECONFIG", "/nonexistent/kubeconfig", 1);
        setenv("HOME", "/nonexistent", 1);
        unsetenv("KUBERNETES_SERVICE_HOST");
        execv(bin, (char *const *)args);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = test_read_file(out);
    r->err = test_read_file(errp);
    free(out);
    free(errp);
}

#define CLI(r, dir, ...)                                    \
    do {                                                    \
        const char *const a_[] = { __VA_ARGS__, NULL };     \
        cli((r), (dir), a_);                                \
    } while (0)

static void test_cli(void **state)
{
    static const char *const flags[] = { "--service", "--namespace", "--out-dir", "--secret",
                                         "--webhook-config", "--kubeconfig", "--context", "--dns",
                                         "--ip", "--days", "--ca-days", "--key-type", "--rsa-bits",
                                         "--rotate-before", "--force", "--new-ca",
                                         "--propagation-delay", "exit status" };
    char *dir, *out;
    struct cli r;
    size_t i;

    (void)state;
    if (!getenv("DD_BIN"))
        skip();
    dir = make_tmpdir();
    out = path_in(dir, "pki");
    CLI(&r, dir, "--help");
    assert_int_equal(r.status, 0);
    for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        assert_contains(r.out, flags[i]);
    cli_free(&r);

    /* usage errors: 2, and a message naming the flag */
    CLI(&r, dir, "--out-dir", out);
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--service is required");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS);
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "give --out-dir and/or --secret");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--ip", "1.2.3");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--ip \"1.2.3\": not an IPv4 address");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--rotate-before", "30");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--rotate-before \"30\"");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--days", "ten");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--days \"ten\"");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--key-type", "dsa");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--key-type \"dsa\"");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--rsa-bits", "4096");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--rsa-bits needs --key-type rsa");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--frobnicate");
    assert_int_equal(r.status, 2);
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "stray");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "unexpected argument 'stray'");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--secret", "a/b/c");
    assert_int_equal(r.status, 2);
    assert_contains(r.err, "--secret");
    cli_free(&r);
    assert_int_equal(access(out, F_OK), -1); /* no usage error wrote anything */

    /* success, then nothing to do */
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--ip", "10.0.0.1");
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "created CA dra-doctor-ca");
    assert_contains(r.out, "wrote ");
    assert_contains(r.out, "/tls.crt");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out, "--ip", "10.0.0.1");
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "nothing to do");
    assert_contains(r.out, "certificate valid until ");
    cli_free(&r);

    /* runtime failures: 1, naming the file or the reason */
    write_in(out, "ca.crt", "garbage\n");
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", out);
    assert_int_equal(r.status, 1);
    assert_contains(r.err, "/ca.crt: not a PEM certificate");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--out-dir", "/proc/version/pki");
    assert_int_equal(r.status, 1);
    assert_contains(r.err, "/proc/version/pki");
    cli_free(&r);
    CLI(&r, dir, "--service", SVC, "--namespace", NS, "--secret", "webhook-tls");
    assert_int_equal(r.status, 1);
    assert_contains(r.err, "kubeconfig");
    cli_free(&r);
    free(out);
    rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_ecdsa),
        cmocka_unit_test(test_generate_rsa),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_renew_serving),
        cmocka_unit_test(test_renew_on_mismatch),
        cmocka_unit_test(test_ca_rotation_on_expiry),
        cmocka_unit_test(test_new_ca),
        cmocka_unit_test(test_write_order),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_bad_existing_files),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_tls_handshake),
        cmocka_unit_test(test_cli),
    };
    const struct CMUnitTest api_tests[] = {
        cmocka_unit_test(test_api_publish),
        cmocka_unit_test(test_api_placeholder_secret),
    };
    int failed = cmocka_run_group_tests_name("certs", tests, NULL, NULL);

    failed += cmocka_run_group_tests_name("certs_api", api_tests, api_setup, api_teardown);
    return failed ? 1 : 0;
}
