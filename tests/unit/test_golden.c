/*
 * test_golden.c - `lint` over the fixture cases in tests/data/lint/: each
 * case must yield exactly the findings its `expected` file lists, no more
 * and no fewer (see tests/data/lint/README.md for the layout).
 */
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "lint.h"

#define DATA "tests/data/lint/"
#define MAXF 64

struct files {
    char *v[MAXF];
    size_t n;
};

static int is_manifest(const char *name)
{
    size_t n = strlen(name);

    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml")) ||
           (n > 5 && !strcmp(name + n - 5, ".json"));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists manifest files of dir, skipping names that overlay (a dir) replaces. */
static void list_dir(const char *dir, const char *overlay, struct files *out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024];
    struct stat st;

    assert_non_null(d);
    while ((e = readdir(d))) {
        if (!is_manifest(e->d_name))
            continue;
        if (overlay) {
            snprintf(path, sizeof(path), "%s/%s", overlay, e->d_name);
            if (stat(path, &st) == 0)
                continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        assert_true(out->n < MAXF);
        out->v[out->n++] = strdup(path);
    }
    closedir(d);
}

static void free_files(struct files *f)
{
    while (f->n)
        free(f->v[--f->n]);
}

static void run_case(void **state)
{
    const char *name = *state;
    char dir[512], cfg[600], exp_path[600], *expected, got[8192] = "", line[600];
    const char *overlay = NULL, *paths[MAXF];
    struct files files = { { 0 }, 0 };
    struct lint_input in;
    struct lint_result res;
    struct stat st;
    size_t i, len = 0;
    char *lines[256];
    size_t nlines = 0;
    static const struct rule_options ropt = RULE_OPTIONS_INIT;

    snprintf(dir, sizeof(dir), DATA "%s", name);
    if (strstr(name, "seed/fault-")) {
        overlay = dir;
        list_dir(DATA "seed/fixed", overlay, &files);
    }
    list_dir(dir, NULL, &files);
    snprintf(cfg, sizeof(cfg), "%s/containerd-config.toml", dir);
    if (stat(cfg, &st) && overlay)
        snprintf(cfg, sizeof(cfg), DATA "seed/fixed/containerd-config.toml");
    for (i = 0; i < files.n; i++)
        paths[i] = files.v[i];
    memset(&in, 0, sizeof(in));
    in.paths = paths;
    in.npaths = files.n;
    in.containerd_config = stat(cfg, &st) == 0 ? cfg : NULL;
    in.rules = ropt;
    assert_int_equal(lint_collect(&in, &res), 0);
    assert_int_equal(res.input_errors, 0);
    assert_true(res.objects > 0);
    for (i = 0; i < res.findings.n && nlines < 256; i++) {
        const struct dd_finding *f = &res.findings.v[i];
        snprintf(line, sizeof(line), "%s %s %s/%s", f->code, f->obj.kind,
                 *f->obj.namespace_ ? f->obj.namespace_ : "-", f->obj.name);
        lines[nlines++] = strdup(line);
        /* Every finding must explain itself and say what to change. */
        assert_true(strlen(f->message) > 20);
        assert_true(strlen(f->fix) > 10);
    }
    qsort(lines, nlines, sizeof(lines[0]), cmp_str);
    for (i = 0; i < nlines; i++) {
        len += (size_t)snprintf(got + len, sizeof(got) - len, "%s\n", lines[i]);
        free(lines[i]);
    }
    snprintf(exp_path, sizeof(exp_path), "%s/expected", dir);
    expected = test_read_file(exp_path);
    if (strcmp(got, expected)) {
        for (i = 0; i < res.findings.n; i++)
            fprintf(stderr, "  %s: %s\n", res.findings.v[i].code, res.findings.v[i].message);
        fail_msg("case %s:\n--- expected\n%s--- got\n%s", name, expected, got);
    }
    free(expected);
    lint_result_release(&res);
    free_files(&files);
}

/* The seed's findings carry the evidence a reviewer needs. */
static void seed_messages(void **state)
{
    const char *paths[MAXF];
    struct files files = { { 0 }, 0 };
    struct lint_input in;
    struct lint_result res;
    static const struct rule_options ropt = RULE_OPTIONS_INIT;
    size_t i;

    (void)state;
    list_dir(DATA "seed/broken", NULL, &files);
    for (i = 0; i < files.n; i++)
        paths[i] = files.v[i];
    memset(&in, 0, sizeof(in));
    in.paths = paths;
    in.npaths = files.n;
    in.containerd_config = DATA "seed/broken/containerd-config.toml";
    in.rules = ropt;
    assert_int_equal(lint_collect(&in, &res), 0);
    for (i = 0; i < res.findings.n; i++) {
        const struct dd_finding *f = &res.findings.v[i];
        assert_non_null(f->file);
        assert_true(f->line > 0);
        if (!strcmp(f->code, "SelectorMatchesNoDriver")) {
            assert_contains(f->message, "gpu.exmaple.com");
            assert_contains(f->message, "Did you mean 'gpu.example.com'?");
            assert_int_equal(f->severity, DD_SEV_ERROR);
        } else if (!strcmp(f->code, "DriverRBACDenied")) {
            assert_contains(f->message, "create, update, delete");
            assert_contains(f->fix, "dra-example-driver-role");
        } else if (!strcmp(f->code, "QuotaExceeded")) {
            assert_contains(f->message, "gpu.example.com.deviceclass.resource.k8s.io/devices");
            assert_contains(f->fix, "to at least 2");
        } else if (!strcmp(f->code, "CDIDisabled")) {
            assert_contains(f->fix, "enable_cdi = true");
            assert_contains(f->file, "containerd-config.toml");
        } else if (!strcmp(f->code, "CDISpecDirNotShared")) {
            assert_contains(f->message, "/etc/cdi");
            assert_contains(f->fix, "CDI_ROOT=/var/run/cdi");
        }
    }
    assert_int_equal(res.findings.n, 5);
    lint_result_release(&res);
    free_files(&files);
}

/* The seed's fixed manifests on nodes with each sample containerd config: CDIDisabled fires
 * exactly when that containerd would run with CDI off, on the line that says so. */
static void containerd_layouts(void **state)
{
    static const struct { const char *file; int off; int line; } cfgs[] = {
        { "config-1.7-default.toml", 1, 54 }, { "config-1.7-cdi-on.toml", 0, 0 },
        { "config-1.7-cdi-off.toml", 1, 0 },  { "config-2.0-default.toml", 0, 0 },
        { "config-2.0-cdi-off.toml", 1, 72 }, { "config-2.0-minimal.toml", 0, 0 },
        { "config-1.4-v1.toml", 1, 0 },
    };
    static const struct rule_options ropt = RULE_OPTIONS_INIT;
    const char *paths[] = { DATA "seed/fixed/deviceclass.yaml" };
    char cfg[256];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
        struct lint_input in;
        struct lint_result res;

        snprintf(cfg, sizeof(cfg), "tests/data/containerd/%s", cfgs[i].file);
        memset(&in, 0, sizeof(in));
        in.paths = paths;
        in.npaths = 1;
        in.containerd_config = cfg;
        in.rules = ropt;
        in.rules.known_drivers = (const char *const[]){ "gpu.example.com" };
        in.rules.nknown_drivers = 1;
        assert_int_equal(lint_collect(&in, &res), 0);
        assert_int_equal(res.input_errors, 0);
        if (res.findings.n != (size_t)cfgs[i].off)
            fail_msg("%s: expected %d finding(s), got %zu", cfgs[i].file, cfgs[i].off,
                     res.findings.n);
        if (cfgs[i].off) {
            assert_string_equal(res.findings.v[0].code, "CDIDisabled");
            assert_int_equal(res.findings.v[0].line, cfgs[i].line);
        }
        lint_result_release(&res);
    }
}

#define CASE(name) cmocka_unit_test_prestate(run_case, (void *)(name))

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE("seed/fixed"),
        CASE("alloc/two-nodes-one-gpu-each/broken"),
        CASE("alloc/two-nodes-one-gpu-each/fixed"),
        CASE("alloc/pcie-root-not-shared/broken"),
        CASE("alloc/pcie-root-not-shared/fixed"),
        CASE("alloc/two-requests-same-model/broken"),
        CASE("alloc/two-requests-same-model/fixed"),
        CASE("alloc/capacity-not-reached/broken"),
        CASE("alloc/capacity-not-reached/fixed"),
        CASE("alloc/nic-pool-other-node/broken"),
        CASE("alloc/nic-pool-other-node/fixed"),
        CASE("alloc/two-claims-one-gpu-each-node/broken"),
        CASE("alloc/two-claims-one-gpu-each-node/fixed"),
        CASE("alloc/all-plus-another/broken"),
        CASE("alloc/all-plus-another/fixed"),
        CASE("alloc/class-keeps-two-of-four/broken"),
        CASE("alloc/class-keeps-two-of-four/fixed"),
        CASE("seed/broken"),
        CASE("seed/fault-1-rbac"),
        CASE("seed/fault-2-typo"),
        CASE("seed/fault-3-cdi-off"),
        CASE("seed/fault-4-cdi-root"),
        CASE("seed/fault-5-devices"),
        CASE("seed/fault-6-quota"),
        CASE("nvidia/clean"),
        CASE("nvidia/broken"),
        CASE("intel/clean"),
        CASE("intel/broken"),
        CASE("v1beta1/clean"),
        CASE("v1beta1/broken"),
        CASE("list"),
        CASE("modes/admin-access-label-missing"),
        CASE("modes/all-unsatisfiable"),
        CASE("modes/base"),
        CASE("modes/claim-not-consumed"),
        CASE("modes/container-claim-name-unknown"),
        CASE("modes/daemonset-missing-on-node"),
        CASE("modes/device-taint"),
        CASE("modes/first-available-exhausted"),
        CASE("modes/gpu-node-taint"),
        CASE("modes/many"),
        CASE("modes/opaque-config"),
        CASE("modes/pod-bypasses-scheduler"),
        CASE("modes/pod-constraints"),
        CASE("modes/pool-incomplete"),
        CASE("modes/pool-invalid"),
        CASE("modes/shared-claim-replicas"),
        CASE("modes/slice-node-unknown"),
        cmocka_unit_test(seed_messages),
        cmocka_unit_test(containerd_layouts),
    };

    return cmocka_run_group_tests_name("golden", tests, NULL, NULL);
}
