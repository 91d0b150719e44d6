/*
 * test_kube.c - the Kubernetes client: kubeconfig and in-cluster
 * configuration, API paths, the watch stream parser, and request behaviour
 * (retries, errors, pagination, watches, interrupts, connection reuse,
 * token rotation) against a small HTTP/1.1 server run in a thread here.
 */
#include "harness.h"
#include "client/kube.h"
#include "rules/cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts;

    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static char *make_tmpdir(void)
{
    char tmpl[] = "/tmp/dd-kube-XXXXXX";
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

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static enum dd_rc parse(struct kube_config *c, const char *text, const char *dir,
                        const char *context, struct dd_err *err)
{
    dd_err_clear(err);
    return kube_config_parse(c, text, strlen(text), dir, context, err);
}

/* ---- kubeconfig ---------------------------------------------------------- */

static const char KUBECONFIG[] =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: c1\n"
    "  cluster:\n"
    "    server: https://10.0.0.1:6443/\n"
    "    certificate-authority-data: Q0EtUEVNCg==\n"
    "- name: c2\n"
    "  cluster:\n"
    "    server: https://c2.example:443\n"
    "    insecure-skip-tls-verify: true\n"
    "users:\n"
    "- name: u1\n"
    "  user:\n"
    "    client-certificate-data: Q0VSVAo=\n"
    "    client-key-data: S0VZCg==\n"
    "- name: u2\n"
    "  user:\n"
    "    token: abc.def\n"
    "- name: execuser\n"
    "  user:\n"
    "    exec:\n"
    "      apiVersion: client.authentication.k8s.io/v1\n"
    "      command: gke-gcloud-auth-plugin\n"
    "- name: authprov\n"
    "  user:\n"
    "    auth-provider:\n"
    "      name: oidc\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: c1, user: u1, namespace: team-a}\n"
    "- name: prod\n"
    "  context: {cluster: c2, user: u2}\n"
    "- name: ghost\n"
    "  context: {cluster: nope, user: u1}\n"
    "- name: nouser\n"
    "  context: {cluster: c1, user: missing}\n"
    "- name: anon\n"
    "  context: {cluster: c1}\n"
    "- name: execctx\n"
    "  context: {cluster: c1, user: execuser}\n"
    "- name: authctx\n"
    "  context: {cluster: c1, user: authprov}\n";

static void test_config_current_context_inline_data(void **state)
{
    struct kube_config c;
    struct dd_err err;

    (void)state;
    assert_int_equal(parse(&c, KUBECONFIG, NULL, NULL, &err), DD_OK);
    assert_string_equal(c.server, "https://10.0.0.1:6443");
    assert_string_equal(c.ca_pem, "CA-PEM\n");
    assert_string_equal(c.cert_pem, "CERT\n");
    assert_string_equal(c.key_pem, "KEY\n");
    assert_null(c.token);
    assert_null(c.token_file);
    assert_string_equal(c.namespace_, "team-a");
    assert_string_equal(c.context, "dev");
    assert_int_equal(c.insecure, 0);
    kube_config_release(&c);
    assert_null(c.server);
    assert_null(c.context);
}

static void test_config_explicit_context(void **state)
{
    struct kube_config c;
    struct dd_err err;

    (void)state;
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "prod", &err), DD_OK);
    assert_string_equal(c.server, "https://c2.example:443");
    assert_null(c.ca_pem);
    assert_null(c.cert_pem);
    assert_string_equal(c.token, "abc.def");
    assert_string_equal(c.namespace_, "default");
    assert_string_equal(c.context, "prod");
    assert_int_equal(c.insecure, 1);
    kube_config_release(&c);

    /* No user at all is anonymous access. */
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "anon", &err), DD_OK);
    assert_null(c.token);
    assert_null(c.cert_pem);
    kube_config_release(&c);
}

static void test_config_not_found(void **state)
{
    static const char no_current[] =
        "clusters: [{name: a, cluster: {server: 'https://a'}}]\n"
        "contexts: [{name: x, context: {cluster: a}}]\n";
    struct kube_config c;
    struct dd_err err;

    (void)state;
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "absent", &err), DD_ENOTFOUND);
    assert_contains(err.msg, "\"absent\"");
    assert_null(c.server);
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "ghost", &err), DD_ENOTFOUND);
    assert_contains(err.msg, "\"nope\"");
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "nouser", &err), DD_ENOTFOUND);
    assert_contains(err.msg, "\"missing\"");
    assert_int_equal(parse(&c, no_current, NULL, NULL, &err), DD_ENOTFOUND);
    assert_contains(err.msg, "current-context");
    assert_int_equal(parse(&c, no_current, NULL, "x", &err), DD_OK);
    assert_string_equal(c.server, "https://a");
    kube_config_release(&c);
    assert_int_equal(parse(&c, "", NULL, NULL, &err), DD_ENOTFOUND);
}

static void test_config_unsupported_auth(void **state)
{
    struct kube_config c;
    struct dd_err err;

    (void)state;
    /* client.authentication.k8s.io/v1 requires interactiveMode, as clientcmd does. */
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "execctx", &err), DD_EINVAL);
    assert_contains(err.msg, "interactiveMode");
    assert_contains(err.msg, "execuser");
    /* The message points at the exec mapping. */
    assert_int_equal(err.line, 24);
    assert_null(c.server);
    assert_int_equal(parse(&c, KUBECONFIG, NULL, "authctx", &err), DD_EINVAL);
    assert_contains(err.msg, "auth-provider");
}

/* An exec credential plugin is kept as a spec, validated as clientcmd validates it. */
static void test_config_exec(void **state)
{
    static const char head[] =
        "clusters:\n- name: c\n  cluster: {server: https://k}\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
        "users:\n- name: u\n  user:\n    exec:\n";
    char buf[2048];
    struct kube_config c;
    struct dd_err err;

    (void)state;
    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: bin/get-token\n"
             "      args: [eks, get-token, --cluster-name, prod]\n"
             "      env: [{name: AWS_PROFILE, value: ops}, {name: EMPTY}]\n"
             "      installHint: install the aws CLI\n"
             "      provideClusterInfo: true\n"
             "      interactiveMode: Never\n");
    assert_int_equal(parse(&c, buf, "/etc/kube", NULL, &err), DD_OK);
    assert_non_null(c.exec);
    assert_null(c.token);
    assert_string_equal(c.exec->api_version, "client.authentication.k8s.io/v1");
    /* A command with a '/' is relative to the kubeconfig's directory. */
    assert_string_equal(c.exec->command, "/etc/kube/bin/get-token");
    assert_string_equal(c.exec->argv[0], "/etc/kube/bin/get-token");
    assert_string_equal(c.exec->argv[1], "eks");
    assert_string_equal(c.exec->argv[4], "prod");
    assert_null(c.exec->argv[5]);
    assert_string_equal(c.exec->env[0], "AWS_PROFILE=ops");
    assert_string_equal(c.exec->env[1], "EMPTY=");
    assert_null(c.exec->env[2]);
    assert_string_equal(c.exec->install_hint, "install the aws CLI");
    assert_true(c.exec->provide_cluster_info);
    assert_false(c.exec->interactive_always);
    kube_config_release(&c);
    assert_null(c.exec);

    /* A bare name is looked up in PATH; v1beta1 defaults interactiveMode. */
    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1beta1\n"
             "      command: gke-gcloud-auth-plugin\n");
    assert_int_equal(parse(&c, buf, "/etc/kube", NULL, &err), DD_OK);
    assert_string_equal(c.exec->command, "gke-gcloud-auth-plugin");
    assert_null(c.exec->argv[1]);
    assert_null(c.exec->env[0]);
    kube_config_release(&c);

    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n");
    assert_int_equal(parse(&c, buf, NULL, NULL, &err), DD_EINVAL);
    assert_contains(err.msg, "v1alpha1");
    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n");
    assert_int_equal(parse(&c, buf, NULL, NULL, &err), DD_EINVAL);
    assert_contains(err.msg, "no command");
    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1\n      command: x\n"
             "      interactiveMode: Sometimes\n");
    assert_int_equal(parse(&c, buf, NULL, NULL, &err), DD_EINVAL);
    assert_contains(err.msg, "Sometimes");
    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1\n      command: x\n"
             "      interactiveMode: Never\n      args: [1, {a: b}]\n");
    assert_int_equal(parse(&c, buf, NULL, NULL, &err), DD_EPARSE);
    assert_contains(err.msg, "args");
    snprintf(buf, sizeof(buf), "%s%s", head,
             "      apiVersion: client.authentication.k8s.io/v1\n      command: x\n"
             "      interactiveMode: Never\n      env: [{value: v}]\n");
    assert_int_equal(parse(&c, buf, NULL, NULL, &err), DD_EINVAL);
    assert_contains(err.msg, "env");
}

static void test_config_malformed(void **state)
{
    struct kube_config c;
    struct dd_err err;

    (void)state;
    assert_int_equal(parse(&c, "clusters:\n- name: a\n  cluster: [\n", NULL, NULL, &err),
                     DD_EPARSE);
    assert_true(err.line >= 3);
    assert_contains(err.msg, "kubeconfig:");
    assert_int_equal(parse(&c, "clusters: 5\ncurrent-context: x\ncontexts: [{name: x, "
                               "context: {cluster: a}}]\n",
                           NULL, NULL, &err),
                     DD_EPARSE);
    assert_contains(err.msg, "clusters must be a list");
    assert_int_equal(err.line, 1);
    assert_int_equal(parse(&c, "- just\n- a list\n", NULL, NULL, &err), DD_EPARSE);
    assert_int_equal(parse(&c, "current-context: [x]\n", NULL, NULL, &err), DD_EPARSE);
    assert_contains(err.msg, "current-context must be a string");
    assert_int_equal(parse(&c, "current-context: x\nclusters: [{name: a, cluster: {server: "
                               "'https:///'}}]\ncontexts: [{name: x, context: {cluster: a}}]\n",
                           NULL, NULL, &err),
                     DD_EINVAL);
    assert_contains(err.msg, "names no host");
    assert_int_equal(parse(&c, "current-context: x\nclusters: [{name: a, cluster: {server: "
                               "'ftp://a'}}]\ncontexts: [{name: x, context: {cluster: a}}]\n",
                           NULL, NULL, &err),
                     DD_EINVAL);
    assert_contains(err.msg, "not an http(s) URL");
    assert_null(c.server);
}

static void test_config_json(void **state)
{
    static const char json[] =
        "{\"current-context\":\"j\",\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":"
        "\"http://127.0.0.1:8080\"}}],\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"t\"}}],"
        "\"contexts\":[{\"name\":\"j\",\"context\":{\"cluster\":\"c\",\"user\":\"u\","
        "\"namespace\":\"ns\"}}]}";
    struct kube_config c;
    struct dd_err err;

    (void)state;
    assert_int_equal(parse(&c, json, NULL, NULL, &err), DD_OK);
    assert_string_equal(c.server, "http://127.0.0.1:8080");
    assert_string_equal(c.token, "t");
    assert_string_equal(c.namespace_, "ns");
    kube_config_release(&c);
}

/* A kubeconfig with one cluster whose certificate-authority-data is `data`. */
static enum dd_rc parse_ca(struct kube_config *c, const char *data, struct dd_err *err)
{
    char buf[1024];

    snprintf(buf, sizeof(buf),
             "current-context: x\n"
             "clusters:\n- name: a\n  cluster:\n    server: https://a\n"
             "    certificate-authority-data: %s\n"
             "contexts:\n- name: x\n  context: {cluster: a}\n",
             data);
    return parse(c, buf, NULL, NULL, err);
}

static void test_config_base64(void **state)
{
    static const struct {
        const char *data;
        const char *why;
    } bad[] = {
        { "aGVsbG8", "truncated" },
        { "aGV$bG8=", "invalid base64 character at offset 3" },
        { "aGVsbG8=aGVs", "data after '=' padding at offset 8" },
        { "a===", "misplaced '=' padding at offset 1" },
        { "aGVsbG=8", "data after '=' padding at offset 7" },
        { "'aGVs bG8='", "invalid base64 character at offset 4" },
        { "AAAA", "not PEM text" }, /* decodes to NUL bytes */
    };
    struct kube_config c;
    struct dd_err err;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse_ca(&c, bad[i].data, &err), DD_EPARSE);
        assert_contains(err.msg, "certificate-authority-data");
        assert_contains(err.msg, bad[i].why);
        assert_int_equal(err.line, 6);
        assert_null(c.server);
    }
    /* Go's decoder skips line breaks, and so does ours. */
    assert_int_equal(parse_ca(&c, "\"aGVs\\nbG8=\"", &err), DD_OK);
    assert_string_equal(c.ca_pem, "hello");
    kube_config_release(&c);
    assert_int_equal(parse_ca(&c, "aGk=", &err), DD_OK);
    assert_string_equal(c.ca_pem, "hi");
    kube_config_release(&c);
    assert_int_equal(parse_ca(&c, "aGVsbG8h", &err), DD_OK);
    assert_string_equal(c.ca_pem, "hello!");
    kube_config_release(&c);
}

static void test_config_files_relative(void **state)
{
    char *dir = make_tmpdir(), path[512], kc[2048];
    struct kube_config c;
    struct dd_err err;

    (void)state;
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    write_file(dir, "ca.pem", "FILE-CA\n");
    write_file(dir, "sub/client.crt", "FILE-CERT\n");
    write_file(dir, "client.key", "FILE-KEY\n");
    write_file(dir, "token", "file-token\n");
    snprintf(kc, sizeof(kc),
             "current-context: x\n"
             "clusters:\n- name: a\n  cluster:\n    server: https://a\n"
             "    certificate-authority: ca.pem\n"
             "users:\n- name: u\n  user:\n"
             "    client-certificate: sub/client.crt\n"
             "    client-key: %s/client.key\n"
             "    tokenFile: token\n"
             "contexts:\n- name: x\n  context: {cluster: a, user: u}\n",
             dir);
    assert_int_equal(parse(&c, kc, dir, NULL, &err), DD_OK);
    assert_string_equal(c.ca_pem, "FILE-CA\n");
    assert_string_equal(c.cert_pem, "FILE-CERT\n");
    assert_string_equal(c.key_pem, "FILE-KEY\n");
    snprintf(path, sizeof(path), "%s/token", dir);
    assert_string_equal(c.token_file, path);
    kube_config_release(&c);

    /* The same through kube_config_load: the directory comes from the file's path. */
    write_file(dir, "config", kc);
    snprintf(path, sizeof(path), "%s/config", dir);
    assert_int_equal(kube_config_load(&c, path, NULL, &err), DD_OK);
    assert_string_equal(c.cert_pem, "FILE-CERT\n");
    kube_config_release(&c);

    /* A referenced file that is missing: an I/O error naming it and the field. */
    snprintf(path, sizeof(path), "%s/ca.pem", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(parse(&c, kc, dir, NULL, &err), DD_EIO);
    assert_contains(err.msg, "certificate-authority");
    assert_contains(err.msg, path);
    assert_int_equal(err.line, 6);
    rm_tree(dir);
}

static void restore_env(const char *name, char *saved)
{
    if (saved) {
        setenv(name, saved, 1);
        free(saved);
    } else {
        unsetenv(name);
    }
}

static char *save_env(const char *name)
{
    const char *v = getenv(name);

    return v ? strdup(v) : NULL;
}

static void test_config_load_search(void **state)
{
    char *dir = make_tmpdir(), list[1024], path[512];
    char *kcenv = save_env("KUBECONFIG"), *home = save_env("HOME");
    char *host = save_env("KUBERNETES_SERVICE_HOST");
    struct kube_config c;
    struct dd_err err;

    (void)state;
    write_file(dir, "second", "current-context: s\nclusters: [{name: a, cluster: {server: "
                              "'https://second'}}]\ncontexts: [{name: s, context: {cluster: a}}]\n");
    snprintf(list, sizeof(list), "%s/missing::%s/second:%s/third", dir, dir, dir);
    setenv("KUBECONFIG", list, 1);
    assert_int_equal(kube_config_load(&c, NULL, NULL, &err), DD_OK);
    assert_string_equal(c.server, "https://second");
    kube_config_release(&c);

    /* ~/.kube/config when $KUBECONFIG is unset. */
    unsetenv("KUBECONFIG");
    setenv("HOME", dir, 1);
    snprintf(path, sizeof(path), "%s/.kube", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    write_file(dir, ".kube/config", "current-context: h\nclusters: [{name: a, cluster: {server: "
                                    "'https://home'}}]\ncontexts: [{name: h, context: {cluster: "
                                    "a}}]\n");
    assert_int_equal(kube_config_load(&c, NULL, NULL, &err), DD_OK);
    assert_string_equal(c.server, "https://home");
    kube_config_release(&c);

    /* Nothing at all, and not in a pod. */
    snprintf(path, sizeof(path), "%s/.kube/config", dir);
    assert_int_equal(unlink(path), 0);
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(kube_config_load(&c, NULL, NULL, &err), DD_ENOTFOUND);
    assert_contains(err.msg, "no kubeconfig found");

    restore_env("KUBECONFIG", kcenv);
    restore_env("HOME", home);
    restore_env("KUBERNETES_SERVICE_HOST", host);
    rm_tree(dir);
}

static void test_config_in_cluster(void **state)
{
    char *dir = make_tmpdir(), path[512];
    char *host = save_env("KUBERNETES_SERVICE_HOST"), *port = save_env("KUBERNETES_SERVICE_PORT");
    struct kube_config c;
    struct dd_err err;

    (void)state;
    write_file(dir, "token", "sa-token\n");
    write_file(dir, "ca.crt", "SA-CA\n");
    write_file(dir, "namespace", "kube-system\n");
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_config_in_cluster(&c, dir, &err), DD_ENOTFOUND);

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    assert_int_equal(kube_config_in_cluster(&c, dir, &err), DD_OK);
    assert_string_equal(c.server, "https://10.96.0.1:443");
    assert_string_equal(c.token, "sa-token");
    snprintf(path, sizeof(path), "%s/token", dir);
    assert_string_equal(c.token_file, path);
    assert_string_equal(c.ca_pem, "SA-CA\n");
    assert_string_equal(c.namespace_, "kube-system");
    assert_null(c.context);
    kube_config_release(&c);

    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    snprintf(path, sizeof(path), "%s/namespace", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(kube_config_in_cluster(&c, dir, &err), DD_OK);
    assert_string_equal(c.server, "https://[fd00:10:96::1]:6443");
    assert_string_equal(c.namespace_, "default");
    kube_config_release(&c);

    setenv("KUBERNETES_SERVICE_PORT", "http", 1);
    assert_int_equal(kube_config_in_cluster(&c, dir, &err), DD_EINVAL);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    snprintf(path, sizeof(path), "%s/token", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_not_equal(kube_config_in_cluster(&c, dir, &err), DD_OK);
    assert_contains(err.msg, path);
    assert_null(c.server);

    restore_env("KUBERNETES_SERVICE_HOST", host);
    restore_env("KUBERNETES_SERVICE_PORT", port);
    rm_tree(dir);
}

/* ---- kube_path ----------------------------------------------------------- */

static void test_path(void **state)
{
    char buf[256];
    char small[sizeof("/api/v1/pods")];

    (void)state;
    assert_string_equal(kube_path(buf, sizeof(buf), "", "v1", "pods", "default", "p1", NULL),
                        "/api/v1/namespaces/default/pods/p1");
    assert_string_equal(kube_path(buf, sizeof(buf), NULL, "v1", "pods", "ns", NULL, NULL),
                        "/api/v1/namespaces/ns/pods");
    assert_string_equal(kube_path(buf, sizeof(buf), "", "v1", "nodes", NULL, NULL, NULL),
                        "/api/v1/nodes");
    assert_string_equal(kube_path(buf, sizeof(buf), "", "v1", "namespaces", NULL, "kube-system",
                                  NULL),
                        "/api/v1/namespaces/kube-system");
    assert_string_equal(kube_path(buf, sizeof(buf), "resource.k8s.io", "v1", "deviceclasses",
                                  NULL, "gpu.example.com", NULL),
                        "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com");
    assert_string_equal(kube_path(buf, sizeof(buf), "resource.k8s.io", "v1", "resourceclaims",
                                  "team", "claim-1", "status"),
                        "/apis/resource.k8s.io/v1/namespaces/team/resourceclaims/claim-1/status");
    assert_string_equal(kube_path(buf, sizeof(buf), "", "v1", "pods", "ns", "p", "log"),
                        "/api/v1/namespaces/ns/pods/p/log");
    assert_string_equal(kube_path(buf, sizeof(buf), "apps", "v1", NULL, NULL, NULL, NULL),
                        "/apis/apps/v1");
    /* Exactly fitting, and one byte short. */
    assert_string_equal(kube_path(small, sizeof(small), "", "v1", "pods", NULL, NULL, NULL),
                        "/api/v1/pods");
    assert_null(kube_path(small, sizeof(small) - 1, "", "v1", "pods", NULL, NULL, NULL));
    assert_null(kube_path(buf, sizeof(buf), "", "v1", "pods", "ns", "a/b", NULL));
    assert_null(kube_path(buf, sizeof(buf), "", "v1", "pods", "..", "a", NULL));
    assert_null(kube_path(buf, sizeof(buf), "", "v1", "pods", "ns", "a?b", NULL));
    assert_null(kube_path(buf, sizeof(buf), "", "v1", "pods", "ns", "", NULL));
    assert_null(kube_path(buf, sizeof(buf), "", "v1", "pods", "ns", NULL, "status"));
}

/* ---- watch parser -------------------------------------------------------- */

#define MAX_SEEN 16

struct seen {
    int n;
    char type[MAX_SEEN][16];
    char name[MAX_SEEN][32];
    char rv[MAX_SEEN][32];
    char extra[MAX_SEEN][32]; /* the string field "s", when present */
    long code[MAX_SEEN];      /* Status.code of ERROR events */
    int stop_after;           /* return nonzero after this many events; 0: never */
};

static void copy_str(char *dst, size_t size, const cJSON *v)
{
    snprintf(dst, size, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static int collect(void *ctx, const char *type, cJSON *obj)
{
    struct seen *s = ctx;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
    int i = s->n;

    assert_true(i < MAX_SEEN);
    snprintf(s->type[i], sizeof(s->type[i]), "%s", type);
    copy_str(s->name[i], sizeof(s->name[i]), cJSON_GetObjectItemCaseSensitive(meta, "name"));
    copy_str(s->rv[i], sizeof(s->rv[i]), cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
    copy_str(s->extra[i], sizeof(s->extra[i]), cJSON_GetObjectItemCaseSensitive(obj, "s"));
    s->code[i] = cJSON_IsNumber(code) ? (long)code->valuedouble : 0;
    s->n++;
    cJSON_Delete(obj);
    return s->stop_after && s->n >= s->stop_after;
}

/* Strings full of braces, brackets, escapes and non-ASCII; whitespace of every kind between. */
static const char STREAM3[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"1\"},\"s\":\"}{\\\"x\\\\\"}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"2\"},"
    "\"arr\":[1,{\"k\":\"]\"},[]],\"s\":\"\xc3\xa9[\"}}\r\n \t"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"3\"}}}\n";

static void check_stream3(const struct seen *s)
{
    assert_int_equal(s->n, 3);
    assert_string_equal(s->type[0], "ADDED");
    assert_string_equal(s->type[1], "MODIFIED");
    assert_string_equal(s->type[2], "DELETED");
    assert_string_equal(s->name[0], "a");
    assert_string_equal(s->name[1], "b");
    assert_string_equal(s->name[2], "c");
    assert_string_equal(s->rv[2], "3");
    assert_string_equal(s->extra[0], "}{\"x\\");
    assert_string_equal(s->extra[1], "\xc3\xa9[");
}

/* Feeds STREAM3 cut at the given offsets (ascending, within the stream). */
static void feed_cut(const size_t *cuts, size_t ncuts)
{
    struct seen s;
    struct kube_watch_parser *p;
    struct dd_err err;
    size_t len = sizeof(STREAM3) - 1, from = 0, i, to;
    int stopped;

    memset(&s, 0, sizeof(s));
    p = kube_watch_parser_new(4096, collect, &s);
    assert_non_null(p);
    for (i = 0; i <= ncuts; i++) {
        to = i < ncuts ? cuts[i] : len;
        assert_int_equal(kube_watch_parser_feed(p, STREAM3 + from, to - from, &stopped, &err),
                         DD_OK);
        assert_int_equal(stopped, 0);
        from = to;
    }
    check_stream3(&s);
    kube_watch_parser_free(p);
}

static void test_watch_parser_every_split(void **state)
{
    size_t len = sizeof(STREAM3) - 1, cuts[2], i, j;
    struct kube_watch_parser *p;
    struct seen s;
    struct dd_err err;
    int stopped;

    (void)state;
    for (i = 0; i <= len; i++) {
        cuts[0] = i;
        feed_cut(cuts, 1);
    }
    /* Three pieces: every pair of cut points. */
    for (i = 0; i <= len; i++)
        for (j = i; j <= len; j += 3) {
            cuts[0] = i;
            cuts[1] = j;
            feed_cut(cuts, 2);
        }
    /* One byte at a time. */
    memset(&s, 0, sizeof(s));
    p = kube_watch_parser_new(4096, collect, &s);
    for (i = 0; i < len; i++)
        assert_int_equal(kube_watch_parser_feed(p, STREAM3 + i, 1, &stopped, &err), DD_OK);
    check_stream3(&s);
    kube_watch_parser_free(p);
}

static void test_watch_parser_bookmark_and_error(void **state)
{
    static const char in[] =
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
        "{\"resourceVersion\":\"12345\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}"
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
        "\"Failure\",\"message\":\"too old resource version: 1 (99)\",\"reason\":\"Expired\","
        "\"code\":410}}";
    struct kube_watch_parser *p;
    struct seen s;
    struct dd_err err;
    int stopped;

    (void)state;
    memset(&s, 0, sizeof(s));
    p = kube_watch_parser_new(1024, collect, &s);
    assert_int_equal(kube_watch_parser_feed(p, in, sizeof(in) - 1, &stopped, &err), DD_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.type[0], "BOOKMARK");
    assert_string_equal(s.rv[0], "12345");
    assert_string_equal(s.type[1], "ERROR");
    assert_int_equal(s.code[1], 410);
    kube_watch_parser_free(p);
}

static void expect_malformed(const char *in, enum dd_rc want, const char *why)
{
    struct kube_watch_parser *p;
    struct seen s;
    struct dd_err err;
    int stopped;
    static const char ok[] = "{\"type\":\"ADDED\",\"object\":{}}";

    memset(&s, 0, sizeof(s));
    p = kube_watch_parser_new(256, collect, &s);
    dd_err_clear(&err);
    assert_int_equal(kube_watch_parser_feed(p, in, strlen(in), &stopped, &err), want);
    assert_contains(err.msg, why);
    /* The failure is sticky: a good event afterwards does not resurrect the stream. */
    assert_int_equal(kube_watch_parser_feed(p, ok, sizeof(ok) - 1, &stopped, &err), want);
    kube_watch_parser_free(p);
}

static void test_watch_parser_malformed(void **state)
{
    (void)state;
    expect_malformed("{\"type\":\"ADDED\",\"object\":{\"a\":}}", DD_EPARSE, "malformed JSON");
    expect_malformed("[1,2]", DD_EPARSE, "expected '{' at byte 0");
    expect_malformed("  \n x", DD_EPARSE, "expected '{' at byte 4");
    expect_malformed("{\"object\":{}}", DD_EPARSE, "no valid \"type\"");
    expect_malformed("{\"type\":\"FOO\",\"object\":{}}", DD_EPARSE, "no valid \"type\"");
    expect_malformed("{\"type\":7,\"object\":{}}", DD_EPARSE, "no valid \"type\"");
    expect_malformed("{\"type\":\"ADDED\"}", DD_EPARSE, "no \"object\"");
    expect_malformed("{\"type\":\"ADDED\",\"object\":\"x\"}", DD_EPARSE, "no \"object\"");
    expect_malformed("{\"type\":\"ADDED\",\"object\":{}}}", DD_EPARSE, "expected '{' at byte 28");
    expect_malformed("{\"type\":\"ADDED\",\"object\":{]]", DD_EPARSE, "malformed JSON");
}

static void test_watch_parser_oversized(void **state)
{
    static const char ev[] = "{\"type\":\"ADDED\",\"object\":{\"s\":\"xxxxx\"}}";
    const size_t n = sizeof(ev) - 1;
    char why[64];
    struct kube_watch_parser *p;
    struct seen s;
    struct dd_err err;
    int stopped;

    (void)state;
    /* An event exactly max_event long passes; one byte more does not. */
    memset(&s, 0, sizeof(s));
    p = kube_watch_parser_new(n, collect, &s);
    assert_int_equal(kube_watch_parser_feed(p, ev, n, &stopped, &err), DD_OK);
    assert_int_equal(s.n, 1);
    kube_watch_parser_free(p);

    p = kube_watch_parser_new(n - 1, collect, &s);
    assert_int_equal(kube_watch_parser_feed(p, ev, 20, &stopped, &err), DD_OK);
    assert_int_equal(kube_watch_parser_feed(p, ev + 20, n - 20, &stopped, &err), DD_ETOOBIG);
    snprintf(why, sizeof(why), "larger than %zu bytes", n - 1);
    assert_contains(err.msg, why);
    assert_int_equal(s.n, 1);
    kube_watch_parser_free(p);

    /* An unterminated event does not grow without bound either. */
    p = kube_watch_parser_new(1000, collect, &s);
    assert_int_equal(kube_watch_parser_feed(p, "{\"s\":\"", 6, &stopped, &err), DD_OK);
    {
        char junk[300];
        int i, rc = DD_OK;
        memset(junk, 'a', sizeof(junk));
        for (i = 0; i < 10 && rc == DD_OK; i++)
            rc = kube_watch_parser_feed(p, junk, sizeof(junk), &stopped, &err);
        assert_int_equal(rc, DD_ETOOBIG);
    }
    kube_watch_parser_free(p);
}

static void test_watch_parser_stop(void **state)
{
    struct kube_watch_parser *p;
    struct seen s;
    struct dd_err err;
    int stopped;

    (void)state;
    memset(&s, 0, sizeof(s));
    s.stop_after = 1;
    p = kube_watch_parser_new(4096, collect, &s);
    assert_int_equal(kube_watch_parser_feed(p, STREAM3, sizeof(STREAM3) - 1, &stopped, &err),
                     DD_OK);
    assert_int_equal(stopped, 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(kube_watch_parser_feed(p, STREAM3, sizeof(STREAM3) - 1, &stopped, &err),
                     DD_OK);
    assert_int_equal(stopped, 1);
    assert_int_equal(s.n, 1);
    kube_watch_parser_free(p);
    assert_null(kube_watch_parser_new(4096, NULL, NULL));
}

/* ---- a tiny HTTP/1.1 server ---------------------------------------------- */

struct mreq {
    char method[16];
    char target[2048];
    char auth[256];
    char ctype[128];
    char body[2048];
    size_t blen;
};

struct mock;
/* Answers one request on fd; returns 1 to close the connection afterwards. */
typedef int (*mock_fn)(struct mock *m, const struct mreq *rq, int idx, int fd);

#define MOCK_LOG 32

struct mock {
    int lfd, port;
    int stop[2];            /* a byte written to stop[1] ends the server thread */
    pthread_t th;
    mock_fn fn;
    pthread_mutex_t mu;     /* guards the counters and the log */
    int connections, requests;
    struct mreq log[MOCK_LOG];
};

static void send_all(int fd, const char *p, size_t n)
{
    ssize_t w;

    while (n > 0) {
        w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* the client went away; the test notices */
        p += w;
        n -= (size_t)w;
    }
}

static void mock_reply(int fd, int code, const char *extra, const char *body)
{
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: "
                     "%zu\r\n\r\n",
                     code, extra ? extra : "", strlen(body));

    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

static void mock_chunked_start(int fd)
{
    static const char h[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n";
    send_all(fd, h, sizeof(h) - 1);
}

static void mock_chunk(int fd, const char *p, size_t n)
{
    char head[32];
    int k = snprintf(head, sizeof(head), "%zx\r\n", n);

    send_all(fd, head, (size_t)k);
    send_all(fd, p, n);
    send_all(fd, "\r\n", 2);
}

static void mock_chunked_end(int fd)
{
    send_all(fd, "0\r\n\r\n", 5);
}

/* Waits up to ms for the client to close fd (or the server to stop); 1 when it did. */
static int mock_wait_close(struct mock *m, int fd, int ms)
{
    struct pollfd pf[2] = { { fd, POLLIN, 0 }, { m->stop[0], POLLIN, 0 } };
    char b[256];

    while (poll(pf, 2, ms) > 0) {
        if (pf[1].revents)
            return 0;
        if (recv(fd, b, sizeof(b), 0) <= 0)
            return 1;
    }
    return 0;
}

static const char *find_header(const char *head, const char *name)
{
    const char *p = head;
    size_t n = strlen(name);

    while ((p = strstr(p, "\r\n")) != NULL) {
        p += 2;
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            p += n + 1;
            while (*p == ' ')
                p++;
            return p;
        }
    }
    return NULL;
}

static void copy_header(char *dst, size_t size, const char *v)
{
    size_t n = 0;

    while (v && v[n] && v[n] != '\r' && n + 1 < size)
        n++;
    if (v)
        memcpy(dst, v, n);
    dst[n] = '\0';
}

/* Serves requests on one connection until the client closes it. */
static void mock_serve(struct mock *m, int fd)
{
    char buf[16384];
    size_t have = 0, need;
    struct pollfd pf[2] = { { fd, POLLIN, 0 }, { m->stop[0], POLLIN, 0 } };
    struct mreq rq;
    char *end;
    ssize_t r;
    int idx, close_after;

    for (;;) {
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (!end) {
            if (have + 1 >= sizeof(buf) || poll(pf, 2, 10000) <= 0 || pf[1].revents)
                return;
            r = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
            if (r <= 0)
                return;
            have += (size_t)r;
            continue;
        }
        memset(&rq, 0, sizeof(rq));
        sscanf(buf, "%15s %2047s", rq.method, rq.target);
        *end = '\0';
        copy_header(rq.auth, sizeof(rq.auth), find_header(buf, "Authorization"));
        copy_header(rq.ctype, sizeof(rq.ctype), find_header(buf, "Content-Type"));
        {
            const char *cl = find_header(buf, "Content-Length");
            rq.blen = cl ? strtoul(cl, NULL, 10) : 0;
        }
        need = (size_t)(end + 4 - buf) + rq.blen;
        if (need >= sizeof(buf))
            return;
        while (have < need) {
            if (poll(pf, 2, 10000) <= 0 || pf[1].revents)
                return;
            r = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
            if (r <= 0)
                return;
            have += (size_t)r;
        }
        memcpy(rq.body, end + 4, rq.blen < sizeof(rq.body) - 1 ? rq.blen : sizeof(rq.body) - 1);
        memmove(buf, buf + need, have - need);
        have -= need;
        pthread_mutex_lock(&m->mu);
        idx = m->requests++;
        if (idx < MOCK_LOG)
            m->log[idx] = rq;
        pthread_mutex_unlock(&m->mu);
        close_after = m->fn(m, &rq, idx, fd);
        if (close_after)
            return;
    }
}

static void *mock_main(void *arg)
{
    struct mock *m = arg;
    struct pollfd pf[2] = { { m->lfd, POLLIN, 0 }, { m->stop[0], POLLIN, 0 } };
    int fd, one = 1;

    for (;;) {
        if (poll(pf, 2, -1) < 0 && errno == EINTR)
            continue;
        if (pf[1].revents)
            break;
        fd = accept(m->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        pthread_mutex_lock(&m->mu);
        m->connections++;
        pthread_mutex_unlock(&m->mu);
        mock_serve(m, fd);
        close(fd);
    }
    return NULL;
}

static struct mock *mock_start(mock_fn fn)
{
    struct mock *m = calloc(1, sizeof(*m));
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);

    assert_non_null(m);
    m->fn = fn;
    pthread_mutex_init(&m->mu, NULL);
    assert_int_equal(pipe(m->stop), 0);
    m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(m->lfd >= 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(m->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(m->lfd, 16), 0);
    assert_int_equal(getsockname(m->lfd, (struct sockaddr *)&a, &alen), 0);
    m->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&m->th, NULL, mock_main, m), 0);
    return m;
}

static void mock_stop(struct mock *m)
{
    assert_int_equal(write(m->stop[1], "x", 1), 1);
    pthread_join(m->th, NULL);
    close(m->lfd);
    close(m->stop[0]);
    close(m->stop[1]);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static int mock_requests(struct mock *m)
{
    int n;

    pthread_mutex_lock(&m->mu);
    n = m->requests;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static int mock_connections(struct mock *m)
{
    int n;

    pthread_mutex_lock(&m->mu);
    n = m->connections;
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* A client of the mock: fast backoff so retry tests take milliseconds. */
static struct kube_client *client_for(struct mock *m, const char *token_file)
{
    struct kube_config cfg;
    struct kube_client_opts o = KUBE_CLIENT_OPTS_INIT;
    struct kube_client *c;
    struct dd_err err;
    char server[64];

    memset(&cfg, 0, sizeof(cfg));
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", m ? m->port : 1);
    cfg.server = server;
    cfg.token = (char *)"static-token";
    cfg.token_file = (char *)token_file;
    o.backoff_base_ms = 10;
    o.backoff_max_ms = 40;
    o.max_retries = 3;
    o.request_timeout_ms = 10000;
    c = kube_client_new(&cfg, &o, &err);
    assert_non_null(c);
    return c;
}

static const char POD[] = "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\"}}";
static const char NOTFOUND[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":"
    "\"x\",\"kind\":\"pods\"},\"code\":404}";
static const char UNAVAILABLE[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"etcd is "
    "down\",\"reason\":\"ServiceUnavailable\",\"code\":503}";
static const char THROTTLED[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too many "
    "requests, please try again later\",\"reason\":\"TooManyRequests\",\"code\":429}";

/* ---- requests ------------------------------------------------------------ */

static int h_503_then_ok(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq;
    if (idx == 0)
        mock_reply(fd, 503, NULL, UNAVAILABLE);
    else
        mock_reply(fd, 200, NULL, POD);
    return 0;
}

static void test_http_retry_503(void **state)
{
    struct mock *m = mock_start(h_503_then_ok);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    cJSON *out = NULL;

    (void)state;
    assert_int_equal(kube_get(c, "/api/v1/namespaces/d/pods/p", &out, &st, &err), DD_OK);
    assert_non_null(out);
    assert_string_equal(cJSON_GetObjectItem(out, "kind")->valuestring, "Pod");
    assert_int_equal(st.http, 200);
    assert_int_equal(mock_requests(m), 2);
    assert_string_equal(m->log[1].method, "GET");
    assert_string_equal(m->log[1].target, "/api/v1/namespaces/d/pods/p");
    cJSON_Delete(out);
    kube_client_free(c);
    mock_stop(m);
}

static int h_retry_after(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq;
    if (idx == 0)
        mock_reply(fd, 503, "Retry-After: 1\r\n", UNAVAILABLE);
    else
        mock_reply(fd, 200, NULL, POD);
    return 0;
}

static void test_http_retry_after(void **state)
{
    struct mock *m = mock_start(h_retry_after);
    struct kube_client *c = client_for(m, NULL);
    struct dd_err err;
    double t0 = now_s(), dt;

    (void)state;
    assert_int_equal(kube_get(c, "/api/v1/pods", NULL, NULL, &err), DD_OK);
    dt = now_s() - t0;
    /* The computed backoff would be 10-40 ms; the server asked for a second. */
    assert_true(dt >= 0.95);
    assert_true(dt < 5.0);
    assert_int_equal(mock_requests(m), 2);
    kube_client_free(c);
    mock_stop(m);
}

static int h_429_twice(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq;
    if (idx < 2)
        mock_reply(fd, 429, NULL, THROTTLED);
    else
        mock_reply(fd, 201, NULL, POD);
    return 0;
}

static void test_http_429(void **state)
{
    struct mock *m = mock_start(h_429_twice);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    cJSON *obj = cJSON_Parse(POD), *out = NULL;

    (void)state;
    /* Even a POST is retried on 429: the server has not acted on it. */
    assert_int_equal(kube_create(c, "/api/v1/namespaces/d/pods", obj, &out, &st, &err), DD_OK);
    assert_int_equal(st.http, 201);
    assert_int_equal(mock_requests(m), 3);
    assert_string_equal(m->log[2].method, "POST");
    assert_string_equal(m->log[2].ctype, "application/json");
    assert_string_equal(m->log[0].body, m->log[2].body);
    assert_contains(m->log[2].body, "\"name\":\"p\"");
    cJSON_Delete(obj);
    cJSON_Delete(out);
    kube_client_free(c);
    mock_stop(m);
}

static int h_always(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)idx;
    if (strstr(rq->target, "code=501"))
        mock_reply(fd, 501, NULL, "{}");
    else if (strstr(rq->target, "code=500"))
        mock_reply(fd, 500, NULL, "<html>oops</html>");
    else if (strstr(rq->target, "code=403"))
        mock_reply(fd, 403, NULL,
                   "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"no\",\"code\":403}");
    else
        mock_reply(fd, 503, NULL, UNAVAILABLE);
    return 0;
}

static void test_http_no_retry(void **state)
{
    struct mock *m = mock_start(h_always);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    cJSON *obj = cJSON_Parse(POD);

    (void)state;
    /* A POST that got a 503 may have been applied: no retry. */
    assert_int_equal(kube_create(c, "/api/v1/namespaces/d/pods", obj, NULL, &st, &err), DD_EIO);
    assert_int_equal(st.http, 503);
    assert_string_equal(st.reason, "ServiceUnavailable");
    assert_int_equal(mock_requests(m), 1);
    /* GET gives up after max_retries. */
    assert_int_equal(kube_get(c, "/x?code=500", NULL, &st, &err), DD_EIO);
    assert_int_equal(st.http, 500);
    assert_string_equal(st.reason, "");
    assert_string_equal(st.message, "<html>oops</html>");
    assert_int_equal(mock_requests(m), 1 + 4);
    /* 501 will not change. */
    assert_int_equal(kube_get(c, "/x?code=501", NULL, &st, &err), DD_EIO);
    assert_int_equal(mock_requests(m), 1 + 4 + 1);
    assert_int_equal(kube_get(c, "/x?code=403", NULL, &st, &err), DD_EINVAL);
    assert_string_equal(st.reason, "Forbidden");
    assert_int_equal(mock_requests(m), 1 + 4 + 1 + 1);
    cJSON_Delete(obj);
    kube_client_free(c);
    mock_stop(m);
}

static int h_404(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq, (void)idx;
    mock_reply(fd, 404, NULL, NOTFOUND);
    return 0;
}

static void test_http_404(void **state)
{
    struct mock *m = mock_start(h_404);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    cJSON *out = (cJSON *)1;

    (void)state;
    assert_int_equal(kube_get(c, "/api/v1/namespaces/d/pods/x", &out, &st, &err), DD_ENOTFOUND);
    assert_null(out);
    assert_int_equal(st.http, 404);
    assert_string_equal(st.reason, "NotFound");
    assert_string_equal(st.message, "pods \"x\" not found");
    assert_contains(err.msg, "404 NotFound");
    assert_int_equal(mock_requests(m), 1);
    assert_int_equal(kube_delete(c, "/api/v1/namespaces/d/pods/x", &st, &err), DD_ENOTFOUND);
    assert_string_equal(m->log[1].method, "DELETE");
    kube_client_free(c);
    mock_stop(m);
}

static int h_pages(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    /* No assertions here: cmocka may only fail in the test's own thread. */
    (void)m, (void)idx;
    if (strstr(rq->target, "continue=tok%2F1%3D%3D"))
        mock_reply(fd, 200, NULL,
                   "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                   "\"77\",\"continue\":\"tok2\"},\"items\":[{\"metadata\":{\"name\":\"p3\"}},"
                   "{\"metadata\":{\"name\":\"p4\"}}]}");
    else if (strstr(rq->target, "continue=tok2"))
        mock_reply(fd, 200, NULL,
                   "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                   "\"77\"},\"items\":[{\"metadata\":{\"name\":\"p5\"}}]}");
    else if (strstr(rq->target, "continue="))
        mock_reply(fd, 410, NULL, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410}");
    else
        mock_reply(fd, 200, NULL,
                   "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                   "\"77\",\"continue\":\"tok/1==\"},\"items\":[{\"metadata\":{\"name\":\"p1\"}},"
                   "{\"kind\":\"Keep\",\"metadata\":{\"name\":\"p2\"}}]}");
    return 0;
}

static void test_http_list_pages(void **state)
{
    struct mock *m = mock_start(h_pages);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    cJSON *items = NULL, *it;
    char *rv = NULL, name[16];
    int i = 0;

    (void)state;
    assert_int_equal(kube_list(c, "/api/v1/pods", "labelSelector=app%3Dx", 2, &items, &rv, &st,
                               &err),
                     DD_OK);
    assert_int_equal(mock_requests(m), 3);
    assert_string_equal(m->log[0].target, "/api/v1/pods?limit=2&labelSelector=app%3Dx");
    assert_string_equal(m->log[1].target,
                        "/api/v1/pods?limit=2&labelSelector=app%3Dx&continue=tok%2F1%3D%3D");
    assert_string_equal(m->log[2].target,
                        "/api/v1/pods?limit=2&labelSelector=app%3Dx&continue=tok2");
    assert_string_equal(rv, "77");
    assert_int_equal(cJSON_GetArraySize(items), 5);
    cJSON_ArrayForEach(it, items) {
        snprintf(name, sizeof(name), "p%d", ++i);
        assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metadata"), "name")
                                ->valuestring,
                            name);
        assert_string_equal(cJSON_GetObjectItem(it, "apiVersion")->valuestring, "v1");
        assert_string_equal(cJSON_GetObjectItem(it, "kind")->valuestring, i == 2 ? "Keep" : "Pod");
    }
    cJSON_Delete(items);
    free(rv);
    kube_client_free(c);
    mock_stop(m);
}

static int h_reuse(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq, (void)idx;
    mock_reply(fd, 200, NULL, POD);
    return 0;
}

static void test_http_connection_reuse(void **state)
{
    struct mock *m = mock_start(h_reuse);
    struct kube_client *c = client_for(m, NULL);
    struct dd_err err;
    cJSON *out;
    int i;

    (void)state;
    for (i = 0; i < 5; i++) {
        assert_int_equal(kube_get(c, "/api/v1/nodes/n", &out, NULL, &err), DD_OK);
        cJSON_Delete(out);
    }
    assert_int_equal(mock_requests(m), 5);
    assert_int_equal(mock_connections(m), 1);
    /* The default bearer token of client_for. */
    assert_string_equal(m->log[4].auth, "Bearer static-token");
    kube_client_free(c);
    mock_stop(m);
}

static void test_http_token_reload(void **state)
{
    struct mock *m = mock_start(h_reuse);
    char *dir = make_tmpdir(), path[512];
    struct kube_client *c;
    struct dd_err err;
    double t0;

    (void)state;
    write_file(dir, "token", "tok-1\n");
    snprintf(path, sizeof(path), "%s/token", dir);
    c = client_for(m, path);
    t0 = now_s();
    assert_int_equal(kube_get(c, "/a", NULL, NULL, &err), DD_OK);
    assert_string_equal(m->log[0].auth, "Bearer tok-1");
    write_file(dir, "token", "tok-22\n");
    assert_int_equal(kube_get(c, "/b", NULL, NULL, &err), DD_OK);
    /* Within the second the file is not looked at again. */
    if (now_s() - t0 < 0.9)
        assert_string_equal(m->log[1].auth, "Bearer tok-1");
    sleep_s(1.1);
    assert_int_equal(kube_get(c, "/c", NULL, NULL, &err), DD_OK);
    assert_string_equal(m->log[2].auth, "Bearer tok-22");
    /* Same size, new content: the mtime tells. */
    sleep_s(1.1);
    write_file(dir, "token", "tok-33\n");
    assert_int_equal(kube_get(c, "/d", NULL, NULL, &err), DD_OK);
    assert_string_equal(m->log[3].auth, "Bearer tok-33");
    /* A vanished file keeps the last good token. */
    sleep_s(1.1);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(kube_get(c, "/e", NULL, NULL, &err), DD_OK);
    assert_string_equal(m->log[4].auth, "Bearer tok-33");
    kube_client_free(c);
    rm_tree(dir);
    mock_stop(m);
}

/* 401 for the first exec token, the pod for any other. */
static int h_exec(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)idx;
    if (!strcmp(rq->auth, "Bearer exec-1"))
        mock_reply(fd, 401, NULL, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
                   "\"Failure\",\"reason\":\"Unauthorized\",\"code\":401}");
    else
        mock_reply(fd, 200, NULL, POD);
    return 0;
}

/* A plugin script in dir printing token exec-<n>, n counting its runs in dir/runs. */
static void write_plugin(const char *dir, const char *expiry)
{
    char body[1024];

    snprintf(body, sizeof(body),
             "#!/bin/sh\nn=$(( $(cat %s/runs 2>/dev/null || echo 0) + 1 ))\necho $n > %s/runs\n"
             "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
             "v1\",\"status\":{\"token\":\"exec-%%s\"%s}}' $n\n",
             dir, dir, expiry);
    write_file(dir, "plugin", body);
    snprintf(body, sizeof(body), "%s/plugin", dir);
    assert_int_equal(chmod(body, 0700), 0);
}

static int plugin_runs(const char *dir)
{
    char path[512];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/runs", dir);
    if ((f = fopen(path, "r"))) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

static struct kube_client *exec_client(struct mock *m, const char *dir)
{
    struct execcred_spec spec;
    struct kube_config cfg;
    struct kube_client *c;
    struct dd_err err;
    char server[64], cmd[512];
    char *argv[2];

    memset(&cfg, 0, sizeof(cfg));
    memset(&spec, 0, sizeof(spec));
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", m->port);
    snprintf(cmd, sizeof(cmd), "%s/plugin", dir);
    argv[0] = cmd;
    argv[1] = NULL;
    spec.api_version = (char *)"client.authentication.k8s.io/v1";
    spec.command = cmd;
    spec.argv = argv;
    cfg.server = server;
    cfg.exec = &spec;
    c = kube_client_new(&cfg, NULL, &err);
    assert_non_null(c);
    return c;
}

/* The plugin runs once for many requests, again when the server refuses its token (and the
 * request then succeeds), and again for each request once its credential has expired. */
static void test_http_exec_credential(void **state)
{
    struct mock *m = mock_start(h_exec);
    char *dir = make_tmpdir(), runs[512];
    struct kube_client *c;
    struct dd_err err;

    (void)state;
    write_plugin(dir, "");
    c = exec_client(m, dir);
    assert_int_equal(plugin_runs(dir), 0); /* not before a request needs it */
    assert_int_equal(kube_get(c, "/a", NULL, NULL, &err), DD_OK);
    assert_string_equal(m->log[0].auth, "Bearer exec-1");
    assert_string_equal(m->log[1].auth, "Bearer exec-2");
    assert_int_equal(kube_get(c, "/b", NULL, NULL, &err), DD_OK);
    assert_int_equal(kube_get(c, "/c", NULL, NULL, &err), DD_OK);
    assert_string_equal(m->log[3].auth, "Bearer exec-2");
    assert_int_equal(plugin_runs(dir), 2);
    kube_client_free(c);

    /* Expired on arrival: run for every request (a new process: nothing shared yet). */
    execcred_cache_clear();
    snprintf(runs, sizeof(runs), "%s/runs", dir);
    assert_int_equal(unlink(runs), 0);
    write_plugin(dir, ",\"expirationTimestamp\":\"2020-01-01T00:00:00Z\"");
    c = exec_client(m, dir);
    assert_int_equal(kube_get(c, "/d", NULL, NULL, &err), DD_OK); /* exec-1 refused, exec-2 */
    assert_int_equal(kube_get(c, "/e", NULL, NULL, &err), DD_OK);
    assert_int_equal(plugin_runs(dir), 3);
    assert_string_equal(m->log[mock_requests(m) - 1].auth, "Bearer exec-3");
    kube_client_free(c);

    /* A plugin that fails fails the request, naming itself. */
    execcred_cache_clear();
    write_file(dir, "plugin", "#!/bin/sh\necho 'no credentials' >&2\nexit 3\n");
    c = exec_client(m, dir);
    assert_int_equal(kube_get(c, "/f", NULL, NULL, &err), DD_EIO);
    assert_contains(err.msg, "plugin");
    assert_contains(err.msg, "status 3");
    kube_client_free(c);
    rm_tree(dir);
    mock_stop(m);
}

static void *exec_get_thread(void *arg)
{
    struct dd_err err;

    return (void *)(intptr_t)kube_get(arg, "/shared", NULL, NULL, &err);
}

/* The clients of a process share the credential, as client-go's do: four clients started
 * together run the plugin once for the first credential, and once again after all four
 * were refused it (the first to ask replaces it, the others take the replacement). */
static void test_http_exec_credential_shared(void **state)
{
    struct mock *m = mock_start(h_exec);
    char *dir = make_tmpdir();
    struct kube_client *c[4];
    pthread_t th[4];
    size_t i, n;
    void *rc;

    (void)state;
    execcred_cache_clear();
    write_plugin(dir, "");
    for (i = 0; i < 4; i++)
        c[i] = exec_client(m, dir);
    for (i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, exec_get_thread, c[i]), 0);
    for (i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], &rc), 0);
        assert_int_equal((intptr_t)rc, DD_OK);
    }
    assert_int_equal(plugin_runs(dir), 2);
    n = mock_requests(m);
    for (i = 0; i < n; i++)
        if (strcmp(m->log[i].auth, "Bearer exec-1"))
            assert_string_equal(m->log[i].auth, "Bearer exec-2");
    for (i = 0; i < 4; i++)
        kube_client_free(c[i]);
    execcred_cache_clear();
    rm_tree(dir);
    mock_stop(m);
}

static int h_big(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    char body[2048];

    (void)m, (void)idx;
    if (strstr(rq->target, "bad")) {
        mock_reply(fd, 200, NULL, "not json");
        return 0;
    }
    memset(body, ' ', sizeof(body) - 1);
    body[0] = '{';
    body[sizeof(body) - 2] = '}';
    body[sizeof(body) - 1] = '\0';
    mock_reply(fd, 200, NULL, body);
    return 0;
}

static void test_http_body_limits(void **state)
{
    struct mock *m = mock_start(h_big);
    struct kube_config cfg;
    struct kube_client_opts o = KUBE_CLIENT_OPTS_INIT;
    struct kube_client *c;
    struct dd_err err;
    char server[64];
    cJSON *out = NULL;

    (void)state;
    memset(&cfg, 0, sizeof(cfg));
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", m->port);
    cfg.server = server;
    o.max_body = 1000;
    c = kube_client_new(&cfg, &o, &err);
    assert_non_null(c);
    assert_int_equal(kube_get(c, "/big", &out, NULL, &err), DD_ETOOBIG);
    assert_null(out);
    assert_int_equal(mock_requests(m), 1);
    assert_int_equal(kube_get(c, "/bad", &out, NULL, &err), DD_EPARSE);
    assert_null(out);
    /* No token configured: no Authorization header. */
    assert_string_equal(m->log[1].auth, "");
    assert_int_equal(kube_get(c, "no-slash", &out, NULL, &err), DD_EINVAL);
    kube_client_free(c);
    mock_stop(m);
}

static int h_patch(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq, (void)idx;
    mock_reply(fd, 200, NULL, POD);
    return 0;
}

static void test_http_patch(void **state)
{
    struct mock *m = mock_start(h_patch);
    struct kube_client *c = client_for(m, NULL);
    struct dd_err err;
    cJSON *out = NULL;

    (void)state;
    assert_int_equal(kube_patch(c, "/api/v1/namespaces/d/pods/p", KUBE_PATCH_APPLY,
                                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", "dra doctor", 1, &out,
                                NULL, &err),
                     DD_OK);
    assert_non_null(out);
    cJSON_Delete(out);
    assert_string_equal(m->log[0].method, "PATCH");
    assert_string_equal(m->log[0].target,
                        "/api/v1/namespaces/d/pods/p?fieldManager=dra%20doctor&force=true");
    assert_string_equal(m->log[0].ctype, "application/apply-patch+yaml");
    assert_string_equal(m->log[0].body, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}");
    assert_int_equal(kube_patch(c, "/p?dryRun=All", KUBE_PATCH_MERGE, "{}", NULL, 1, NULL, NULL,
                                &err),
                     DD_OK);
    assert_string_equal(m->log[1].target, "/p?dryRun=All");
    assert_string_equal(m->log[1].ctype, "application/merge-patch+json");
    assert_int_equal(kube_patch(c, "/p", KUBE_PATCH_JSON, "[]", "fm", 0, NULL, NULL, &err),
                     DD_OK);
    assert_string_equal(m->log[2].target, "/p?fieldManager=fm");
    assert_string_equal(m->log[2].ctype, "application/json-patch+json");
    assert_int_equal(kube_patch(c, "/p", KUBE_PATCH_APPLY, "{}", NULL, 0, NULL, NULL, &err),
                     DD_EINVAL);
    assert_int_equal(mock_requests(m), 3);
    kube_client_free(c);
    mock_stop(m);
}

static void test_http_connect_refused(void **state)
{
    struct mock *m = mock_start(h_reuse);
    int port = m->port;
    struct kube_client *c;
    struct kube_status st;
    struct dd_err err;

    (void)state;
    mock_stop(m); /* the port is closed now */
    m = calloc(1, sizeof(*m));
    m->port = port;
    c = client_for(m, NULL);
    free(m);
    assert_int_equal(kube_get(c, "/x", NULL, &st, &err), DD_EIO);
    assert_int_equal(st.http, 0);
    assert_true(st.message[0] != '\0');
    kube_client_free(c);
}

/* ---- watches ------------------------------------------------------------- */

static int h_watch_chunked(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    static const size_t sizes[] = { 1, 2, 3, 5, 7, 11, 13, 64, 17, 1, 1, 29 };
    size_t off = 0, len = sizeof(STREAM3) - 1, k = 0, n;

    (void)m, (void)rq, (void)idx;
    mock_chunked_start(fd);
    while (off < len) {
        n = sizes[k++ % (sizeof(sizes) / sizeof(sizes[0]))];
        if (n > len - off)
            n = len - off;
        mock_chunk(fd, STREAM3 + off, n);
        off += n;
        sleep_s(0.001); /* separate TCP segments, so the client sees them apart */
    }
    mock_chunked_end(fd);
    return 0;
}

static void test_watch_chunked(void **state)
{
    struct mock *m = mock_start(h_watch_chunked);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    struct seen s;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(kube_watch(c, "/apis/resource.k8s.io/v1/resourceclaims",
                                "labelSelector=a%3Db", "5", 30, 1, collect, &s, &st, &err),
                     DD_OK);
    check_stream3(&s);
    assert_int_equal(st.http, 200);
    assert_string_equal(m->log[0].target,
                        "/apis/resource.k8s.io/v1/resourceclaims?watch=1&resourceVersion=5"
                        "&allowWatchBookmarks=true&timeoutSeconds=30&labelSelector=a%3Db");
    /* The callback can end the watch early. */
    memset(&s, 0, sizeof(s));
    s.stop_after = 2;
    assert_int_equal(kube_watch(c, "/w", NULL, NULL, 0, 0, collect, &s, &st, &err), DD_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(m->log[1].target, "/w?watch=1");
    kube_client_free(c);
    mock_stop(m);
}

static int h_watch_410(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    static const char ev[] =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
        "\"Failure\",\"message\":\"too old resource version: 5 (99)\",\"reason\":\"Expired\","
        "\"code\":410}}\n";

    (void)m, (void)idx;
    if (strstr(rq->target, "resourceVersion=1&")) {
        mock_reply(fd, 410, NULL,
                   "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"gone\",\"reason\":"
                   "\"Gone\",\"code\":410}");
        return 0;
    }
    mock_chunked_start(fd);
    mock_chunk(fd, ev, sizeof(ev) - 1);
    mock_chunked_end(fd);
    return 0;
}

static void test_watch_410(void **state)
{
    struct mock *m = mock_start(h_watch_410);
    struct kube_client *c = client_for(m, NULL);
    struct kube_status st;
    struct dd_err err;
    struct seen s;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(kube_watch(c, "/w", NULL, "1", 10, 1, collect, &s, &st, &err),
                     DD_ENOTFOUND);
    assert_int_equal(st.http, 410);
    assert_string_equal(st.reason, "Gone");
    assert_int_equal(s.n, 0);

    assert_int_equal(kube_watch(c, "/w", NULL, "5", 10, 1, collect, &s, &st, &err),
                     DD_ENOTFOUND);
    assert_int_equal(st.http, 410);
    assert_string_equal(st.reason, "Expired");
    assert_string_equal(st.message, "too old resource version: 5 (99)");
    /* Events before the ERROR were delivered; the ERROR itself was not. */
    assert_int_equal(s.n, 1);
    assert_string_equal(s.type[0], "ADDED");
    kube_client_free(c);
    mock_stop(m);
}

static int h_watch_hang(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    static const char ev[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n";

    (void)rq, (void)idx;
    mock_chunked_start(fd);
    mock_chunk(fd, ev, sizeof(ev) - 1);
    /* Never finishes on its own; gives up after 5 s so a broken client fails, not hangs. */
    mock_wait_close(m, fd, 5000);
    return 1;
}

struct interrupter {
    struct kube_client *c;
    double at; /* when kube_client_interrupt was called */
};

static void *interrupt_later(void *arg)
{
    struct interrupter *in = arg;

    sleep_s(0.3);
    in->at = now_s();
    kube_client_interrupt(in->c);
    return NULL;
}

static void test_watch_interrupt(void **state)
{
    struct mock *m = mock_start(h_watch_hang);
    struct kube_client *c = client_for(m, NULL);
    struct interrupter in = { c, 0 };
    struct kube_status st;
    struct dd_err err;
    struct seen s;
    pthread_t th;
    double done;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(pthread_create(&th, NULL, interrupt_later, &in), 0);
    assert_int_equal(kube_watch(c, "/w", NULL, "1", 0, 1, collect, &s, &st, &err), DD_EIO);
    done = now_s();
    pthread_join(th, NULL);
    assert_true(in.at > 0);
    assert_true(done - in.at < 1.0);
    assert_string_equal(st.message, "interrupted");
    assert_int_equal(s.n, 1);
    /* Interrupts are sticky. */
    assert_int_equal(kube_get(c, "/x", NULL, &st, &err), DD_EIO);
    assert_string_equal(st.message, "interrupted");
    assert_int_equal(mock_requests(m), 1);
    kube_client_free(c);
    mock_stop(m);
}

static void *interrupt_sleep(void *arg)
{
    struct interrupter *in = arg;

    sleep_s(0.2);
    in->at = now_s();
    kube_client_interrupt(in->c);
    return NULL;
}

static int h_slow_retry(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    (void)m, (void)rq, (void)idx;
    mock_reply(fd, 503, "Retry-After: 30\r\n", UNAVAILABLE);
    return 0;
}

static void test_retry_sleep_interrupt(void **state)
{
    struct mock *m = mock_start(h_slow_retry);
    struct kube_client *c = client_for(m, NULL);
    struct interrupter in = { c, 0 };
    struct kube_status st;
    struct dd_err err;
    pthread_t th;

    (void)state;
    assert_int_equal(pthread_create(&th, NULL, interrupt_sleep, &in), 0);
    assert_int_equal(kube_get(c, "/x", NULL, &st, &err), DD_EIO);
    assert_true(now_s() - in.at < 0.5);
    pthread_join(th, NULL);
    assert_string_equal(st.message, "interrupted");
    assert_int_equal(mock_requests(m), 1);
    kube_client_free(c);
    mock_stop(m);
}

static int group_teardown(void **state)
{
    (void)state;
    kube_global_cleanup();
    return 0;
}

/* ---- what the API server is (controller/cluster.c) ------------------------------------ */

/* A 1.37 server: v1 and v1beta2 served, DeviceTaintRules in v1, gates on /metrics (one set
 * against its default), or, with m's first request answered 403, no /metrics. */
static int h_cluster(struct mock *m, const struct mreq *rq, int idx, int fd, int old, int nometrics)
{
    (void)m, (void)idx;
    if (!strcmp(rq->target, "/version"))
        mock_reply(fd, 200, NULL, old ? "{\"major\":\"1\",\"minor\":\"33\",\"gitVersion\":\"v1.33.4\"}"
                                      : "{\"major\":\"1\",\"minor\":\"37\",\"gitVersion\":\"v1.37.2\"}");
    else if (!strcmp(rq->target, "/apis/resource.k8s.io"))
        mock_reply(fd, 200, NULL, old ? "{\"kind\":\"APIGroup\",\"versions\":[{\"version\":"
                                        "\"v1beta2\"},{\"version\":\"v1beta1\"}]}"
                                      : "{\"kind\":\"APIGroup\",\"versions\":[{\"version\":\"v1\"},"
                                        "{\"version\":\"v1beta2\"}]}");
    else if (!strcmp(rq->target, "/apis/resource.k8s.io/v1"))
        mock_reply(fd, 200, NULL, "{\"resources\":[{\"name\":\"deviceclasses\"},{\"name\":"
                                  "\"devicetaintrules\"}]}");
    else if (!strcmp(rq->target, "/apis/resource.k8s.io/v1beta2"))
        mock_reply(fd, 200, NULL, "{\"resources\":[{\"name\":\"deviceclasses\"}]}");
    else if (!strcmp(rq->target, "/metrics") && !nometrics)
        mock_reply(fd, 200, NULL,
                   "# HELP kubernetes_feature_enabled [BETA] This metric records the data about "
                   "the stage and enablement of a k8s feature.\n"
                   "# TYPE kubernetes_feature_enabled gauge\n"
                   "kubernetes_feature_enabled{name=\"DRADeviceTaintRules\",stage=\"\"} 0\n"
                   "kubernetes_feature_enabled{name=\"DRAListTypeAttributes\",stage=\"ALPHA\"} 1\n"
                   "kubernetes_feature_enabled{name=\"InPlacePodVerticalScaling\",stage=\"\"} 1\n");
    else
        mock_reply(fd, 403, NULL, "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"code\":403}");
    return 0;
}

static int h_cluster_137(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    return h_cluster(m, rq, idx, fd, 0, 0);
}

static int h_cluster_137_nometrics(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    return h_cluster(m, rq, idx, fd, 0, 1);
}

static int h_cluster_133(struct mock *m, const struct mreq *rq, int idx, int fd)
{
    return h_cluster(m, rq, idx, fd, 1, 1);
}

static void test_cluster_discovery(void **state)
{
    struct mock *m = mock_start(h_cluster_137);
    struct kube_client *c = client_for(m, NULL);
    struct cluster_info ci;
    struct dd_err err;

    (void)state;
    dd_err_clear(&err);
    assert_int_equal(cluster_discover(c, "DRAConsumableCapacity=false", &ci, &err), DD_OK);
    assert_true(ci.supported);
    assert_int_equal(ci.minor, 37);
    assert_string_equal(ci.served, "v1 v1beta2");
    assert_string_equal(ci.taint_rules, "v1");
    assert_true(ci.gates_known);
    /* The server's gates, then the flags. */
    assert_false(ci.gates.on[KV_GATE_DEVICE_TAINT_RULES]);
    assert_int_equal(ci.gates.from[KV_GATE_DEVICE_TAINT_RULES], KV_FROM_SERVER);
    assert_true(ci.gates.on[KV_GATE_LIST_TYPE_ATTRIBUTES]);
    assert_false(ci.gates.on[KV_GATE_CONSUMABLE_CAPACITY]);
    assert_true(ci.gates.on[KV_GATE_DEVICE_TAINTS]); /* the default, not on /metrics */
    assert_contains(ci.says, "Kubernetes v1.37.2; resource.k8s.io v1 v1beta2; DeviceTaintRules "
                             "served in v1; feature gates: the API server's");
    /* Malformed flags are the caller's error. */
    assert_int_equal(cluster_discover(c, "DRADeviceTaints", &ci, &err), DD_EINVAL);
    kube_client_free(c);
    mock_stop(m);

    /* /metrics forbidden: the release's defaults, and saying so. */
    m = mock_start(h_cluster_137_nometrics);
    c = client_for(m, NULL);
    assert_int_equal(cluster_discover(c, NULL, &ci, &err), DD_OK);
    assert_false(ci.gates_known);
    assert_true(ci.gates.on[KV_GATE_DEVICE_TAINT_RULES]);
    assert_contains(ci.says, "assumed to be the release's defaults");
    kube_client_free(c);
    mock_stop(m);

    /* 1.33: no resource.k8s.io/v1, nothing dra-doctor can diagnose. */
    m = mock_start(h_cluster_133);
    c = client_for(m, NULL);
    assert_int_equal(cluster_discover(c, NULL, &ci, &err), DD_OK);
    assert_false(ci.supported);
    assert_string_equal(ci.says, "the API server (Kubernetes v1.33.4) serves resource.k8s.io "
                                 "v1beta2 v1beta1 only: dra-doctor needs resource.k8s.io/v1, "
                                 "Kubernetes 1.34 or later (DRA is GA from 1.34); it diagnoses "
                                 "nothing until the cluster is upgraded");
    kube_client_free(c);
    mock_stop(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_current_context_inline_data),
        cmocka_unit_test(test_cluster_discovery),
        cmocka_unit_test(test_config_explicit_context),
        cmocka_unit_test(test_config_not_found),
        cmocka_unit_test(test_config_unsupported_auth),
        cmocka_unit_test(test_config_exec),
        cmocka_unit_test(test_config_malformed),
        cmocka_unit_test(test_config_json),
        cmocka_unit_test(test_config_base64),
        cmocka_unit_test(test_config_files_relative),
        cmocka_unit_test(test_config_load_search),
        cmocka_unit_test(test_config_in_cluster),
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_watch_parser_every_split),
        cmocka_unit_test(test_watch_parser_bookmark_and_error),
        cmocka_unit_test(test_watch_parser_malformed),
        cmocka_unit_test(test_watch_parser_oversized),
        cmocka_unit_test(test_watch_parser_stop),
        cmocka_unit_test(test_http_retry_503),
        cmocka_unit_test(test_http_retry_after),
        cmocka_unit_test(test_http_429),
        cmocka_unit_test(test_http_no_retry),
        cmocka_unit_test(test_http_404),
        cmocka_unit_test(test_http_list_pages),
        cmocka_unit_test(test_http_connection_reuse),
        cmocka_unit_test(test_http_token_reload),
        cmocka_unit_test(test_http_exec_credential),
        cmocka_unit_test(test_http_exec_credential_shared),
        cmocka_unit_test(test_http_body_limits),
        cmocka_unit_test(test_http_patch),
        cmocka_unit_test(test_http_connect_refused),
        cmocka_unit_test(test_watch_chunked),
        cmocka_unit_test(test_watch_410),
        cmocka_unit_test(test_watch_interrupt),
        cmocka_unit_test(test_retry_sleep_interrupt),
    };

    /* The mock listens on loopback; a proxy from the environment must not get in the way. */
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("all_proxy");
    unsetenv("ALL_PROXY");
    return cmocka_run_group_tests_name("kube", tests, NULL, group_teardown);
}
