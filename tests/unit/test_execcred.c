/*
 * test_execcred.c - exec credential plugins (lib/client/execcred): the ExecCredential
 * parser, and plugins run for real (shell scripts in a temporary directory): what they are
 * given (args, env, KUBERNETES_EXEC_INFO, no stdin) and every way they can fail.
 */
#include "harness.h"

#include "client/execcred.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define V1 "client.authentication.k8s.io/v1"

static enum dd_rc parse(const char *text, struct execcred *c, struct dd_err *err)
{
    return execcred_parse(V1, text, strlen(text), c, err);
}

static void test_parse_ok(void **state)
{
    struct execcred c = { 0 };
    struct dd_err err;

    (void)state;
    assert_int_equal(parse("{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
                           "{\"token\":\"abc\",\"expirationTimestamp\":\"2026-12-02T10:00:00Z\"}}",
                           &c, &err), DD_OK);
    assert_string_equal(c.token, "abc");
    assert_null(c.cert_pem);
    assert_int_equal(c.expires, 1796205600);
    assert_false(execcred_expired(&c, 1796205599));
    assert_true(execcred_expired(&c, 1796205600));
    /* Fractions and offsets, as metav1.Time may carry them. */
    assert_int_equal(parse("{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
                           "{\"token\":\"t\",\"expirationTimestamp\":\"2026-12-02T12:00:00.5+02:00\"}}",
                           &c, &err), DD_OK);
    assert_int_equal(c.expires, 1796205600);
    assert_int_equal(parse("{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
                           "{\"clientCertificateData\":\"CERT\",\"clientKeyData\":\"KEY\"}}",
                           &c, &err), DD_OK);
    assert_null(c.token);
    assert_string_equal(c.cert_pem, "CERT");
    assert_string_equal(c.key_pem, "KEY");
    assert_int_equal(c.expires, 0);
    assert_false(execcred_expired(&c, 4000000000));
    execcred_release(&c);
}

static void test_parse_bad(void **state)
{
    static const struct {
        const char *text, *want;
        enum dd_rc rc;
    } bad[] = {
        { "", "not a JSON object", DD_EPARSE },
        { "[1]", "not a JSON object", DD_EPARSE },
        { "{\"kind\":\"Secret\",\"apiVersion\":\"" V1 "\",\"status\":{\"token\":\"t\"}}",
          "Secret", DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
          "\"status\":{\"token\":\"t\"}}", "v1beta1", DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\"}", "no status", DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{}}", "neither",
          DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{\"token\":7}}",
          "token is not a string", DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
          "{\"clientCertificateData\":\"C\"}}", "without clientKeyData", DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
          "{\"token\":\"a\\nb\"}}", "control characters", DD_EPARSE },
        { "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
          "{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}}", "tomorrow", DD_EPARSE },
    };
    struct execcred c = { 0 };
    struct dd_err err;
    char *big;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i].text, &c, &err), bad[i].rc);
        assert_contains(err.msg, bad[i].want);
        assert_null(c.token);
    }
    big = malloc(EXECCRED_OUT_MAX + 2);
    assert_non_null(big);
    memset(big, ' ', EXECCRED_OUT_MAX + 1);
    assert_int_equal(execcred_parse(V1, big, EXECCRED_OUT_MAX + 1, &c, &err), DD_ETOOBIG);
    free(big);
}

struct plug {
    char dir[64];
    char cmd[128];
    char *argv[4];
    char *env[3];
    struct execcred_spec spec;
};

/* A plugin whose shell body is body, args and env as the tests use them. */
static void plug_new(struct plug *p, const char *body)
{
    FILE *f;

    memset(p, 0, sizeof(*p));
    snprintf(p->dir, sizeof(p->dir), "/tmp/dd-execcred-XXXXXX");
    assert_non_null(mkdtemp(p->dir));
    snprintf(p->cmd, sizeof(p->cmd), "%s/plugin", p->dir);
    assert_non_null(f = fopen(p->cmd, "w"));
    fprintf(f, "#!/bin/sh\n%s", body);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(p->cmd, 0700), 0);
    p->argv[0] = p->cmd;
    p->argv[1] = (char *)"get-token";
    p->argv[2] = (char *)"--cluster=prod east";
    p->env[0] = (char *)"DD_TEST_PROFILE=ops";
    p->spec.api_version = (char *)V1;
    p->spec.command = p->cmd;
    p->spec.argv = p->argv;
    p->spec.env = p->env;
    p->spec.install_hint = (char *)"see https://example.com/install";
}

static void plug_free(struct plug *p)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/seen", p->dir);
    unlink(path);
    unlink(p->cmd);
    rmdir(p->dir);
}

static void test_run_passes_context(void **state)
{
    struct plug p;
    struct execcred c = { 0 };
    struct dd_err err;
    char path[128], seen[4096];
    FILE *f;
    size_t n;

    (void)state;
    /* It records what it was given, reads stdin (which must be empty, not the test's), and
     * answers. */
    plug_new(&p, "d=$(dirname \"$0\")\n"
                 "{ echo \"args=$1|$2\"; echo \"profile=$DD_TEST_PROFILE\";\n"
                 "  echo \"info=$KUBERNETES_EXEC_INFO\"; echo \"stdin=$(cat)\"; } > \"$d/seen\"\n"
                 "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\","
                 "\"status\":{\"token\":\"tok\"}}'\n");
    p.spec.provide_cluster_info = 1;
    assert_int_equal(execcred_run(&p.spec, "https://k:6443", "PEM", 1, &c, &err), DD_OK);
    assert_string_equal(c.token, "tok");
    snprintf(path, sizeof(path), "%s/seen", p.dir);
    assert_non_null(f = fopen(path, "r"));
    n = fread(seen, 1, sizeof(seen) - 1, f);
    seen[n] = '\0';
    fclose(f);
    assert_contains(seen, "args=get-token|--cluster=prod east");
    assert_contains(seen, "profile=ops");
    assert_contains(seen, "\"kind\":\"ExecCredential\"");
    assert_contains(seen, "\"interactive\":false");
    assert_contains(seen, "\"server\":\"https://k:6443\"");
    assert_contains(seen, "\"certificate-authority-data\":\"UEVN\""); /* base64("PEM") */
    assert_contains(seen, "\"insecure-skip-tls-verify\":true");
    assert_contains(seen, "stdin=\n");
    /* Without provideClusterInfo the cluster is not described. */
    p.spec.provide_cluster_info = 0;
    assert_int_equal(execcred_run(&p.spec, "https://k:6443", "PEM", 0, &c, &err), DD_OK);
    assert_non_null(f = fopen(path, "r"));
    n = fread(seen, 1, sizeof(seen) - 1, f);
    seen[n] = '\0';
    fclose(f);
    assert_null(strstr(seen, "https://k:6443"));
    execcred_release(&c);
    plug_free(&p);
}

static void test_run_failures(void **state)
{
    struct plug p;
    struct execcred c = { 0 };
    struct dd_err err;

    (void)state;
    plug_new(&p, "exit 4\n");
    assert_int_equal(execcred_run(&p.spec, "https://k", NULL, 0, &c, &err), DD_EIO);
    assert_contains(err.msg, "exited with status 4");
    assert_contains(err.msg, p.cmd);
    plug_free(&p);

    plug_new(&p, "echo 'not json'\n");
    assert_int_equal(execcred_run(&p.spec, "https://k", NULL, 0, &c, &err), DD_EPARSE);
    assert_contains(err.msg, "not a JSON object");
    assert_contains(err.msg, p.cmd);
    plug_free(&p);

    /* A flood is cut at the cap, the plugin killed. */
    plug_new(&p, "exec yes\n");
    assert_int_equal(execcred_run(&p.spec, "https://k", NULL, 0, &c, &err), DD_ETOOBIG);
    plug_free(&p);

    /* One waiting for a login that never comes is killed at the deadline. */
    plug_new(&p, "exec sleep 30\n");
    p.spec.timeout_s = 1;
    assert_int_equal(execcred_run(&p.spec, "https://k", NULL, 0, &c, &err), DD_EIO);
    assert_contains(err.msg, "within 1 s");
    plug_free(&p);

    plug_new(&p, "exit 0\n");
    p.spec.interactive_always = 1;
    assert_int_equal(execcred_run(&p.spec, "https://k", NULL, 0, &c, &err), DD_EINVAL);
    assert_contains(err.msg, "interactiveMode");
    plug_free(&p);

    /* Not installed: the kubeconfig's install hint is the fix. */
    plug_new(&p, "exit 0\n");
    p.spec.command = (char *)"dd-no-such-plugin-anywhere";
    assert_int_equal(execcred_run(&p.spec, "https://k", NULL, 0, &c, &err), DD_EIO);
    assert_contains(err.msg, "dd-no-such-plugin-anywhere");
    assert_contains(err.msg, "https://example.com/install");
    assert_null(c.token);
    plug_free(&p);
}

static void test_spec_dup(void **state)
{
    struct plug p;
    struct execcred_spec d;
    struct dd_err err;

    (void)state;
    plug_new(&p, "exit 0\n");
    p.spec.provide_cluster_info = 1;
    assert_int_equal(execcred_spec_dup(&d, &p.spec, &err), DD_OK);
    assert_ptr_not_equal(d.command, p.spec.command);
    assert_string_equal(d.command, p.cmd);
    assert_string_equal(d.argv[2], "--cluster=prod east");
    assert_null(d.argv[3]);
    assert_string_equal(d.env[0], "DD_TEST_PROFILE=ops");
    assert_true(d.provide_cluster_info);
    execcred_spec_release(&d);
    assert_null(d.command);
    plug_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_run_passes_context),
        cmocka_unit_test(test_run_failures),
        cmocka_unit_test(test_spec_dup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
