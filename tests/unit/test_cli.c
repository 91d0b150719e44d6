/*
 * test_cli.c - the dra-doctor binary as users and scripts see it: help,
 * version, exit codes, output formats, stdin, and clear errors on bad input.
 * The binary is $DD_BIN (set by scripts/run-tests.sh).
 */
#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEED "tests/data/lint/seed/"
#define OUTMAX (256 * 1024)

struct run {
    int status;
    char out[OUTMAX];
    char err[OUTMAX];
};

static void drain(int fd, char *buf, size_t *len)
{
    ssize_t n = read(fd, buf + *len, OUTMAX - 1 - *len);

    if (n > 0)
        *len += (size_t)n;
    buf[*len] = '\0';
}

/* Runs $DD_BIN with argv (NULL-terminated), feeding input on stdin. */
static void run(struct run *r, const char *input, const char *const *argv)
{
    const char *bin = getenv("DD_BIN");
    int in[2], out[2], err[2], st;
    const char *args[32];
    size_t i, olen = 0, elen = 0;
    pid_t pid;

    assert_non_null(bin);
    args[0] = bin;
    for (i = 0; argv[i] && i < 30; i++)
        args[i + 1] = argv[i];
    args[i + 1] = NULL;
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(in[1]);
        close(out[0]);
        close(err[0]);
        execv(bin, (char *const *)args);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (input && write(in[1], input, strlen(input)) < 0)
        fail_msg("write to child failed");
    close(in[1]);
    for (;;) {
        struct pollfd p[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
        size_t o = olen, e = elen;
        if (poll(p, 2, 10000) <= 0)
            break;
        if (p[0].revents)
            drain(out[0], r->out, &olen);
        if (p[1].revents)
            drain(err[0], r->err, &elen);
        if (o == olen && e == elen)
            break;
    }
    r->out[olen] = r->err[elen] = '\0';
    close(out[0]);
    close(err[0]);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define RUN(r, input, ...)                                  \
    do {                                                    \
        const char *const a_[] = { __VA_ARGS__, NULL };     \
        run((r), (input), a_);                              \
    } while (0)

static struct run R;

static void help_and_version(void **state)
{
    (void)state;
    RUN(&R, NULL, "--version");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "dra-doctor " DD_VERSION);
    RUN(&R, NULL, "--help");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "lint");
    RUN(&R, NULL, "lint", "--help");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "--fail-on");
    assert_contains(R.out, "exit status");
    RUN(&R, NULL, "frobnicate");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "not a command");
}

static void webhook_usage(void **state)
{
    (void)state;
    RUN(&R, NULL, "webhook", "--help");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "--unknown-driver MODE");
    assert_contains(R.out, "Exit status");
    RUN(&R, NULL, "webhook");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "--tls-cert-file and --tls-key-file are required");
    RUN(&R, NULL, "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--unknown-driver", "maybe");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "invalid value \"maybe\" for --unknown-driver");
    RUN(&R, NULL, "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--port", "70000");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "for --port");
    RUN(&R, NULL, "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--max-waiting", "3");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "invalid value \"3\" for --max-waiting");
    RUN(&R, NULL, "webhook", "--help");
    assert_contains(R.out, "--max-waiting N");
    /* Runtime failures exit 1 and name the file. */
    RUN(&R, NULL, "webhook", "--tls-cert-file", "/nonexistent/tls.crt", "--tls-key-file", "k",
        "--objects", SEED "fixed", "--port", "0", "--bind", "127.0.0.1");
    assert_int_equal(R.status, 1);
    assert_contains(R.err, "/nonexistent/tls.crt");
    RUN(&R, NULL, "webhook", "--tls-cert-file", "c", "--tls-key-file", "k", "--objects",
        "/nonexistent/objects.yaml");
    assert_int_equal(R.status, 1);
    assert_contains(R.err, "/nonexistent/objects.yaml");
}

static void controller_usage(void **state)
{
    (void)state;
    RUN(&R, NULL, "controller", "--help");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "--rebuild afresh|beside");
    RUN(&R, NULL, "controller", "--rebuild", "sometimes");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "invalid value \"sometimes\" for --rebuild");
    RUN(&R, NULL, "controller", "--workers=0");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "invalid value \"0\" for --workers");
}

static void exit_codes(void **state)
{
    (void)state;
    RUN(&R, NULL, "lint", SEED "fixed", "--containerd-config", SEED "fixed/containerd-config.toml");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "no findings in 11 objects");
    RUN(&R, NULL, "lint", SEED "broken", "--containerd-config", SEED "broken/containerd-config.toml");
    assert_int_equal(R.status, 1);
    assert_contains(R.out, "error[SelectorMatchesNoDriver]");
    RUN(&R, NULL, "lint", SEED "broken", "--fail-on", "never");
    assert_int_equal(R.status, 0);
    /* Devices that fit on no node: a warning while the input may not be the whole cluster
     * (fails only with --fail-on warning), an error with --complete. */
    RUN(&R, NULL, "lint", "tests/data/lint/alloc/two-nodes-one-gpu-each/broken/cluster.yaml");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "warning[DevicesDoNotFit]");
    RUN(&R, NULL, "lint", "--fail-on", "warning",
        "tests/data/lint/alloc/two-nodes-one-gpu-each/broken/cluster.yaml");
    assert_int_equal(R.status, 1);
    RUN(&R, NULL, "lint", "--complete",
        "tests/data/lint/alloc/two-nodes-one-gpu-each/broken/cluster.yaml");
    assert_int_equal(R.status, 1);
    assert_contains(R.out, "error[DevicesDoNotFit]");
    RUN(&R, NULL, "lint", "--complete",
        "tests/data/lint/alloc/two-nodes-one-gpu-each/fixed/cluster.yaml");
    assert_int_equal(R.status, 0);
    /* explain shows the allocator's verdict on each node. */
    RUN(&R, NULL, "explain", "pod", "trainer", "-n", "two-nodes-one-gpu-each", "-f",
        "tests/data/lint/alloc/two-nodes-one-gpu-each/broken/cluster.yaml");
    assert_contains(R.out, "fits on 0 of 2 node(s)");
    assert_contains(R.out, "tnogeb-n2: does not fit: claim two-gpus, request gpu asks for 2 "
                           "devices");
    RUN(&R, NULL, "explain", "pod", "trainer", "-n", "two-nodes-one-gpu-each-fixed", "-f",
        "tests/data/lint/alloc/two-nodes-one-gpu-each/fixed/cluster.yaml");
    assert_contains(R.out, "fits on 1 of 2 node(s)");
    assert_contains(R.out, "two-gpus/gpu -> gpu.example.com/tnogef-n1/gpu-1");
}

static void formats(void **state)
{
    (void)state;
    RUN(&R, NULL, "lint", "-o", "json", SEED "broken", "--containerd-config",
        SEED "broken/containerd-config.toml");
    assert_int_equal(R.status, 1);
    assert_contains(R.out, "\"summary\":{\"errors\":5,\"warnings\":0");
    assert_contains(R.out, "\"code\":\"QuotaExceeded\"");
    RUN(&R, NULL, "lint", "-o", "sarif", SEED "broken");
    assert_contains(R.out, "\"version\":\t\"2.1.0\"");
    assert_contains(R.out, "\"ruleId\":\t\"DriverRBACDenied\"");
    RUN(&R, NULL, "lint", "-o", "github", SEED "broken");
    assert_contains(R.out, "::error file=tests/data/lint/seed/broken/deviceclass.yaml,line=8,"
                           "title=SelectorMatchesNoDriver::");
    RUN(&R, NULL, "lint", "-o", "yaml", SEED "broken");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "unknown output format 'yaml'");
    /* No colour when stdout is not a terminal. */
    RUN(&R, NULL, "lint", SEED "broken");
    assert_null(strchr(R.out, '\033'));
    RUN(&R, NULL, "lint", "--color", "always", SEED "broken");
    assert_non_null(strchr(R.out, '\033'));
}

/* kubectl's namespace for objects that name none; the release and its gates. */
static void namespace_and_release(void **state)
{
    (void)state;
    RUN(&R, NULL, "lint", "-n", "team", "-o", "json", "tests/data/lint/precision/variants");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "\"namespace\":\"team\",\"name\":\"train\"");
    /* The template names default: in namespace team its pod finds none. */
    assert_contains(R.out, "\"code\":\"ClaimTemplateNotFound\"");
    RUN(&R, NULL, "lint", "--kube-version", "1.38", SEED "fixed");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "(1.34 to 1.37)");
    RUN(&R, NULL, "lint", "--kube-version", "1.35", "--feature-gates", "DRAListTypeAttributes=true",
        SEED "fixed");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "unrecognized feature gate: DRAListTypeAttributes");
    RUN(&R, NULL, "lint", "--feature-gates", "DRAAdminAccess=false", SEED "fixed");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "locked to true");
}

static void stdin_and_bad_input(void **state)
{
    (void)state;
    RUN(&R,
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: x\nspec:\n"
        "  selectors:\n  - cel:\n      expression: \"device.driver == 'gpu.exmaple.com'\"\n",
        "lint", "-", "--known-driver", "gpu.example.com");
    assert_int_equal(R.status, 1);
    assert_contains(R.out, "Did you mean 'gpu.example.com'?");
    assert_contains(R.out, "<stdin>");
    /* Malformed YAML: a position, exit 2, and the good file is still linted. */
    RUN(&R, "kind: Pod\n  bad: [\n", "lint", "-", SEED "broken/deviceclass.yaml",
        "--known-driver", "gpu.example.com");
    assert_int_equal(R.status, 2);
    assert_contains(R.out, "Manifest <stdin> (<stdin>:2:");
    assert_contains(R.out, "error[InputUnreadable]");
    assert_contains(R.out, "SelectorMatchesNoDriver");
    /* Every format carries the input problem, so a SARIF upload shows it. */
    RUN(&R, "kind: Pod\n  bad: [\n", "lint", "-", "-o", "json");
    assert_int_equal(R.status, 2);
    assert_contains(R.out, "\"code\":\"InputUnreadable\"");
    assert_contains(R.out, "\"file\":\"<stdin>\",\"line\":2,\"column\":");
    RUN(&R, "kind: Pod\n  bad: [\n", "lint", "-", "-o", "sarif");
    assert_contains(R.out, "\"ruleId\":\t\"InputUnreadable\"");
    RUN(&R, NULL, "lint", "/nonexistent/dir");
    assert_int_equal(R.status, 2);
    assert_contains(R.out, "/nonexistent/dir");
    assert_contains(R.out, "InputUnreadable");
    RUN(&R, NULL, "lint", SEED "fixed", "--containerd-config", SEED "fixed/pods.yaml");
    assert_int_equal(R.status, 2);
    assert_contains(R.out, "ContainerdConfig pods.yaml");
    /* A document that is no object is a finding, not a failure. */
    RUN(&R, "apiversion: v1\nkind: Pod\nmetadata: {name: p}\n", "lint", "-");
    assert_int_equal(R.status, 0);
    assert_contains(R.out, "warning[InputNotKubernetes]");
    assert_contains(R.out, "'apiversion'");
    RUN(&R, NULL, "lint", "--nodes", "zero", SEED "fixed");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "--nodes");
    RUN(&R, NULL, "lint", "--fail-on", "info", SEED "fixed");
    assert_int_equal(R.status, 2);
    RUN(&R, NULL, "lint", "--bogus");
    assert_int_equal(R.status, 2);
    assert_contains(R.err, "dra-doctor lint --help");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(help_and_version),
        cmocka_unit_test(webhook_usage),
        cmocka_unit_test(controller_usage),
        cmocka_unit_test(exit_codes),
        cmocka_unit_test(formats),
        cmocka_unit_test(stdin_and_bad_input),
        cmocka_unit_test(namespace_and_release),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
