/*
 * test_cri.c - containerd CDI facts: layouts per config version, defaults,
 * explicit settings with their lines, type errors and file loading.
 * Runs from the repository root (data under tests/data/containerd/).
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "model/cri.h"

#define DATA "tests/data/containerd/"

/* Parses src and extracts; returns the rc of cri_config_from_toml. */
static enum dd_rc from_src(const char *src, struct cri_config *c, struct dd_err *err)
{
    struct toml_value *root = toml_parse(src, strlen(src), err);
    enum dd_rc rc;

    if (!root)
        fail_msg("parse failed: %s", err->msg);
    rc = cri_config_from_toml(root, c, err);
    toml_free(root);
    return rc;
}

static void assert_zeroed(const struct cri_config *c)
{
    static const struct cri_config zero;

    assert_memory_equal(c, &zero, sizeof(zero));
}

static void assert_default_dirs(const struct cri_config *c)
{
    assert_int_equal(c->nspec_dirs, 2);
    assert_string_equal(c->spec_dirs[0], "/etc/cdi");
    assert_string_equal(c->spec_dirs[1], "/var/run/cdi");
    assert_int_equal(c->spec_dirs_line, 0);
}

static void load_ok(const char *path, struct cri_config *c)
{
    struct dd_err err;

    if (cri_config_load(path, c, &err) != DD_OK)
        fail_msg("load %s: %s", path, err.msg);
    assert_int_equal(err.rc, DD_OK);
    assert_string_equal(c->file, path);
}

/* ---- sample configs ---------------------------------------------------- */

static void test_v2_explicit_off(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-1.7-default.toml", &c);
    assert_int_equal(c.version, 2);
    assert_string_equal(c.plugin, "io.containerd.grpc.v1.cri");
    assert_string_equal(c.table, "plugins.\"io.containerd.grpc.v1.cri\"");
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 54);
    assert_int_equal(c.nspec_dirs, 2);
    assert_string_equal(c.spec_dirs[0], "/etc/cdi");
    assert_string_equal(c.spec_dirs[1], "/var/run/cdi");
    assert_int_equal(c.spec_dirs_line, 46);
    cri_config_release(&c);
    assert_zeroed(&c);
}

static void test_v2_without_key_defaults_off(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-1.7-cdi-off.toml", &c);
    assert_int_equal(c.version, 2);
    assert_string_equal(c.plugin, "io.containerd.grpc.v1.cri");
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 0);
    assert_default_dirs(&c);
    cri_config_release(&c);
    assert_zeroed(&c);
}

static void test_v2_explicit_on(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-1.7-cdi-on.toml", &c);
    assert_int_equal(c.version, 2);
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 54);
    cri_config_release(&c);
}

static void test_v3_default_file(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-2.0-default.toml", &c);
    assert_int_equal(c.version, 3);
    assert_string_equal(c.plugin, "io.containerd.cri.v1.runtime");
    assert_string_equal(c.table, "plugins.\"io.containerd.cri.v1.runtime\"");
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 72);
    assert_int_equal(c.spec_dirs_line, 73);
    assert_int_equal(c.nspec_dirs, 2);
    cri_config_release(&c);
}

static void test_v3_explicit_off(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-2.0-cdi-off.toml", &c);
    assert_int_equal(c.version, 3);
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 72);
    cri_config_release(&c);
}

static void test_v3_without_key_defaults_on(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-2.0-minimal.toml", &c);
    assert_int_equal(c.version, 3);
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 0);
    assert_int_equal(c.nspec_dirs, 3);
    assert_string_equal(c.spec_dirs[2], "/opt/vendor/cdi/");
    assert_int_equal(c.spec_dirs_line, 13);
    assert_true(cri_config_has_spec_dir(&c, "/opt/vendor/cdi"));
    assert_true(cri_config_has_spec_dir(&c, "/opt/vendor/cdi//"));
    assert_true(cri_config_has_spec_dir(&c, "/var/run/cdi/"));
    assert_false(cri_config_has_spec_dir(&c, "/var/run"));
    assert_false(cri_config_has_spec_dir(&c, "/etc/cdi2"));
    assert_false(cri_config_has_spec_dir(&c, "/etc/cd"));
    cri_config_release(&c);
}

static void test_v1_legacy_file(void **state)
{
    struct cri_config c;

    (void)state;
    load_ok(DATA "config-1.4-v1.toml", &c);
    assert_int_equal(c.version, 1);
    assert_string_equal(c.plugin, "cri");
    assert_string_equal(c.table, "plugins.cri");
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 0);
    assert_default_dirs(&c);
    cri_config_release(&c);
}

/* ---- from a tree ------------------------------------------------------- */

static void test_layout_follows_version(void **state)
{
    struct cri_config c;
    struct dd_err err;

    (void)state;
    /* No version: schema 1, so the v2 table is not the CRI plugin table. */
    assert_int_equal(from_src("[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n",
                              &c, &err),
                     DD_OK);
    assert_int_equal(c.version, 1);
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 0);
    assert_null(c.file);
    cri_config_release(&c);

    assert_int_equal(from_src("# legacy\n[plugins.cri]\nenable_cdi = true\n", &c, &err), DD_OK);
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 3);
    cri_config_release(&c);

    /* A v2 file carrying the v3 table name: the v3 table is ignored. */
    assert_int_equal(from_src("version = 2\n[plugins.'io.containerd.cri.v1.runtime']\n"
                              "enable_cdi = true\n",
                              &c, &err),
                     DD_OK);
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 0);
    cri_config_release(&c);

    /* Dotted keys and inline tables reach the same table. */
    assert_int_equal(from_src("version = 3\n\n"
                              "plugins.'io.containerd.cri.v1.runtime'.enable_cdi = false\n",
                              &c, &err),
                     DD_OK);
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 3);
    cri_config_release(&c);
    assert_int_equal(from_src("version = 2\n[plugins]\n"
                              "\"io.containerd.grpc.v1.cri\" = { enable_cdi = true }\n",
                              &c, &err),
                     DD_OK);
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 3);
    cri_config_release(&c);

    /* Empty config of each version: pure defaults. */
    assert_int_equal(from_src("version = 3\n", &c, &err), DD_OK);
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 0);
    assert_default_dirs(&c);
    cri_config_release(&c);
    assert_int_equal(from_src("version = 2\n[plugins]\n", &c, &err), DD_OK);
    assert_int_equal(c.enable_cdi, 0);
    assert_default_dirs(&c);
    cri_config_release(&c);
}

static void test_custom_spec_dirs(void **state)
{
    struct cri_config c;
    struct dd_err err;

    (void)state;
    assert_int_equal(from_src("version = 2\n"
                              "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
                              "  enable_cdi = true\n"
                              "  cdi_spec_dirs = [\n"
                              "    \"/etc/cdi/\",\n"
                              "    \"/run/nvidia/cdi\",\n"
                              "  ]\n",
                              &c, &err),
                     DD_OK);
    assert_int_equal(c.enable_cdi, 1);
    assert_int_equal(c.enable_cdi_line, 3);
    assert_int_equal(c.spec_dirs_line, 4);
    assert_int_equal(c.nspec_dirs, 2);
    assert_string_equal(c.spec_dirs[0], "/etc/cdi/");
    assert_string_equal(c.spec_dirs[1], "/run/nvidia/cdi");
    assert_true(cri_config_has_spec_dir(&c, "/etc/cdi"));
    assert_true(cri_config_has_spec_dir(&c, "/run/nvidia/cdi/"));
    /* Replaces the defaults rather than adding to them. */
    assert_false(cri_config_has_spec_dir(&c, "/var/run/cdi"));
    assert_false(cri_config_has_spec_dir(&c, NULL));
    assert_false(cri_config_has_spec_dir(NULL, "/etc/cdi"));
    cri_config_release(&c);

    assert_int_equal(from_src("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n"
                              "cdi_spec_dirs = []\n",
                              &c, &err),
                     DD_OK);
    assert_int_equal(c.nspec_dirs, 0);
    assert_int_equal(c.spec_dirs_line, 3);
    assert_false(cri_config_has_spec_dir(&c, "/etc/cdi"));
    cri_config_release(&c);

    assert_int_equal(from_src("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n"
                              "cdi_spec_dirs = ['/', '/cdi']\n",
                              &c, &err),
                     DD_OK);
    assert_true(cri_config_has_spec_dir(&c, "/"));
    assert_true(cri_config_has_spec_dir(&c, "//"));
    assert_false(cri_config_has_spec_dir(&c, ""));
    cri_config_release(&c);
}

static void test_too_many_spec_dirs(void **state)
{
    char src[1024];
    size_t i, n;
    struct cri_config c;
    struct dd_err err;

    (void)state;
    n = (size_t)snprintf(src, sizeof(src), "version = 3\n[plugins.'io.containerd.cri.v1.runtime']"
                                           "\ncdi_spec_dirs = [");
    for (i = 0; i < CRI_MAX_SPEC_DIRS + 1; i++)
        n += (size_t)snprintf(src + n, sizeof(src) - n, "'/d%zu',", i);
    snprintf(src + n, sizeof(src) - n, "]\n");
    assert_int_equal(from_src(src, &c, &err), DD_ETOOBIG);
    assert_int_equal(err.line, 3);
    assert_contains(err.msg, "line 3: cdi_spec_dirs has more than 16 entries");
    assert_zeroed(&c);
}

struct bad {
    const char *src;
    enum dd_rc rc;
    int line;
    const char *msg;
};

static void test_wrong_types_and_versions(void **state)
{
    static const struct bad cases[] = {
        {"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = \"yes\"\n", DD_ETYPE,
         3, "line 3: enable_cdi must be a boolean"},
        {"version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n\nenable_cdi = 1\n", DD_ETYPE, 4,
         "line 4: enable_cdi must be a boolean"},
        {"[plugins.cri]\nenable_cdi = [true]\n", DD_ETYPE, 2,
         "line 2: enable_cdi must be a boolean"},
        {"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\ncdi_spec_dirs = \"/etc/cdi\"\n",
         DD_ETYPE, 3, "line 3: cdi_spec_dirs must be an array of strings"},
        {"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\ncdi_spec_dirs = [\"/etc/cdi\", 1]\n",
         DD_ETYPE, 3, "line 3: cdi_spec_dirs must be an array of strings"},
        {"version = 3\n[plugins.'io.containerd.cri.v1.runtime']\ncdi_spec_dirs = [['/a']]\n",
         DD_ETYPE, 3, "cdi_spec_dirs must be an array of strings"},
        {"version = \"2\"\n", DD_ETYPE, 1, "line 1: version must be an integer"},
        {"\nversion = 2.0\n", DD_ETYPE, 2, "line 2: version must be an integer"},
        {"version = 2\nplugins = 1\n", DD_ETYPE, 2, "line 2: plugins must be a table"},
        {"version = 2\n[plugins]\n\"io.containerd.grpc.v1.cri\" = \"x\"\n", DD_ETYPE, 3,
         "line 3: plugins.\"io.containerd.grpc.v1.cri\" must be a table"},
        {"version = 4\n", DD_EINVAL, 1,
         "line 1: unsupported containerd config version 4 (known: 1, 2 and 3)"},
        {"# x\nversion = 0\n", DD_EINVAL, 2, "unsupported containerd config version 0"},
        {"version = -1\n", DD_EINVAL, 1, "unsupported containerd config version -1"},
        {"version = 9223372036854775807\n", DD_EINVAL, 1, "version 9223372036854775807"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cri_config c;
        struct dd_err err;
        enum dd_rc rc = from_src(cases[i].src, &c, &err);

        if (rc != cases[i].rc || err.rc != cases[i].rc || err.line != cases[i].line)
            fail_msg("case %zu: rc %d line %d (%s), want rc %d line %d", i, rc, err.line, err.msg,
                     cases[i].rc, cases[i].line);
        assert_contains(err.msg, cases[i].msg);
        assert_zeroed(&c);
    }
}

static void test_bad_arguments(void **state)
{
    struct cri_config c;
    struct dd_err err;
    struct toml_value *arr = toml_parse("a = [1]\n", 8, &err);

    (void)state;
    assert_int_equal(cri_config_from_toml(NULL, &c, &err), DD_EINVAL);
    assert_zeroed(&c);
    assert_int_equal(cri_config_from_toml(toml_get(arr, "a"), &c, &err), DD_EINVAL);
    assert_int_equal(cri_config_from_toml(arr, NULL, &err), DD_EINVAL);
    assert_int_equal(cri_config_from_toml(arr, &c, NULL), DD_OK);
    cri_config_release(&c);
    toml_free(arr);
    assert_int_equal(cri_config_load(NULL, &c, &err), DD_EINVAL);
    cri_config_release(NULL);
}

/* ---- loading files ----------------------------------------------------- */

static void write_tmp(char *path, const char *data, size_t len)
{
    int fd = mkstemp(path);
    FILE *f;

    assert_true(fd >= 0);
    f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void write_str(char *path, const char *s)
{
    write_tmp(path, s, strlen(s));
}

static void test_load_errors(void **state)
{
    struct cri_config c;
    struct dd_err err;
    char path[64], want[160];
    char *big;
    size_t n = ((size_t)4 << 20) + 1;

    (void)state;
    assert_int_equal(cri_config_load("tests/data/containerd/no-such.toml", &c, &err), DD_EIO);
    assert_contains(err.msg, "tests/data/containerd/no-such.toml: cannot open: ");
    assert_zeroed(&c);

    /* TOML errors become "path:line: ...". */
    snprintf(path, sizeof(path), "/tmp/dd-cri-XXXXXX");
    write_str(path, "version = 2\nroot = \"/a\"\nroot = \"/b\"\n");
    assert_int_equal(cri_config_load(path, &c, &err), DD_EPARSE);
    assert_int_equal(err.line, 3);
    snprintf(want, sizeof(want), "%s:3: duplicate key root (first defined on line 2)", path);
    assert_string_equal(err.msg, want);
    assert_zeroed(&c);
    unlink(path);

    /* Config errors too. */
    snprintf(path, sizeof(path), "/tmp/dd-cri-XXXXXX");
    write_str(path, "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = 'no'\n");
    assert_int_equal(cri_config_load(path, &c, &err), DD_ETYPE);
    assert_int_equal(err.line, 3);
    snprintf(want, sizeof(want), "%s:3: enable_cdi must be a boolean", path);
    assert_string_equal(err.msg, want);
    assert_zeroed(&c);
    unlink(path);

    /* Errors without a line read "path: ...". */
    snprintf(path, sizeof(path), "/tmp/dd-cri-XXXXXX");
    big = malloc(n);
    assert_non_null(big);
    memset(big, '\n', n);
    write_tmp(path, big, n);
    free(big);
    assert_int_equal(cri_config_load(path, &c, &err), DD_ETOOBIG);
    snprintf(want, sizeof(want), "%s: ", path);
    assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
    assert_zeroed(&c);
    unlink(path);

    /* A directory opens but cannot be read. */
    assert_int_equal(cri_config_load("tests/data/containerd", &c, &err), DD_EIO);
    assert_contains(err.msg, "tests/data/containerd: cannot read: ");
}

/* containerd 2.4 removed enable_cdi: a file saying false means nothing there, and only there. */
static void test_runtime_version_has_last_word(void **state)
{
    static const struct { const char *runtime; int on, ignored; } cases[] = {
        { "containerd://1.7.35", 0, 0 }, { "containerd://2.0.5", 0, 0 },
        { "containerd://2.3.7", 0, 0 },  { "containerd://2.4.2", 1, 1 },
        { "containerd://2.10.0", 1, 1 }, { "containerd://3.0.0", 1, 1 },
        { "cri-o://1.34.0", 0, 0 },      { "containerd://garbage", 0, 0 },
    };
    struct cri_config c;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        load_ok(DATA "config-2.0-cdi-off.toml", &c);
        assert_false(c.enable_cdi);
        assert_int_equal(cri_config_apply_runtime(&c, cases[i].runtime), DD_OK);
        if (c.enable_cdi != cases[i].on || c.enable_cdi_ignored != cases[i].ignored)
            fail_msg("%s: enable_cdi %d ignored %d, want %d %d", cases[i].runtime, c.enable_cdi,
                     c.enable_cdi_ignored, cases[i].on, cases[i].ignored);
        assert_string_equal(c.runtime, cases[i].runtime);
        assert_int_equal(c.enable_cdi_line > 0, 1); /* the line still says where the file said it */
        cri_config_release(&c);
    }
    /* NULL: nothing known, nothing changes. */
    load_ok(DATA "config-2.0-cdi-off.toml", &c);
    assert_int_equal(cri_config_apply_runtime(&c, NULL), DD_OK);
    assert_false(c.enable_cdi);
    assert_null(c.runtime);
    cri_config_release(&c);
    /* Inferred defaults follow the same table. */
    assert_int_equal(cri_config_infer("containerd://1.7.35", &c), DD_OK);
    assert_false(c.enable_cdi);
    assert_int_equal(c.version, 2);
    cri_config_release(&c);
    assert_int_equal(cri_config_infer("containerd://2.4.2", &c), DD_OK);
    assert_true(c.enable_cdi);
    assert_false(c.enable_cdi_ignored); /* nothing said false */
    assert_int_equal(c.version, 3);
    cri_config_release(&c);
    assert_int_equal(cri_config_infer("cri-o://1.34.0", &c), DD_ENOTFOUND);
}

/* The agent's annotation carries the runtime, enableCDIIgnored and cdiEnabledAt there and back;
 * a cdiEnabledAt that is not RFC 3339 UTC with seconds is dropped (the diagnosis compares it). */
static void test_facts_round_trip(void **state)
{
    struct cri_config c, back;
    cJSON *j;

    (void)state;
    load_ok(DATA "config-2.0-cdi-off.toml", &c);
    assert_int_equal(cri_config_apply_runtime(&c, "containerd://2.4.2"), DD_OK);
    memcpy(c.cdi_enabled_at, "2026-12-01T21:10:15Z", 21);
    j = cri_config_to_json(&c);
    assert_non_null(j);
    assert_int_equal(cri_config_from_json(j, &back, NULL), DD_OK);
    assert_true(back.enable_cdi);
    assert_true(back.enable_cdi_ignored);
    assert_string_equal(back.runtime, "containerd://2.4.2");
    assert_string_equal(back.cdi_enabled_at, "2026-12-01T21:10:15Z");
    cri_config_release(&back);
    cJSON_ReplaceItemInObject(j, "cdiEnabledAt", cJSON_CreateString("yesterday"));
    assert_int_equal(cri_config_from_json(j, &back, NULL), DD_OK);
    assert_string_equal(back.cdi_enabled_at, "");
    cri_config_release(&back);
    cJSON_Delete(j);
    cri_config_release(&c);
}

static void test_load_crlf_file(void **state)
{
    static const char src[] = "version = 3\r\n\r\n[plugins.'io.containerd.cri.v1.runtime']\r\n"
                              "  enable_cdi = false\r\n"
                              "  cdi_spec_dirs = ['/etc/cdi',\r\n   '/var/run/cdi']\r\n";
    struct cri_config c;
    char path[64];

    (void)state;
    snprintf(path, sizeof(path), "/tmp/dd-cri-XXXXXX");
    write_tmp(path, src, sizeof(src) - 1);
    load_ok(path, &c);
    assert_int_equal(c.enable_cdi, 0);
    assert_int_equal(c.enable_cdi_line, 4);
    assert_int_equal(c.spec_dirs_line, 5);
    assert_true(cri_config_has_spec_dir(&c, "/var/run/cdi"));
    cri_config_release(&c);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2_explicit_off),
        cmocka_unit_test(test_v2_without_key_defaults_off),
        cmocka_unit_test(test_v2_explicit_on),
        cmocka_unit_test(test_v3_default_file),
        cmocka_unit_test(test_v3_explicit_off),
        cmocka_unit_test(test_v3_without_key_defaults_on),
        cmocka_unit_test(test_v1_legacy_file),
        cmocka_unit_test(test_layout_follows_version),
        cmocka_unit_test(test_custom_spec_dirs),
        cmocka_unit_test(test_too_many_spec_dirs),
        cmocka_unit_test(test_wrong_types_and_versions),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_crlf_file),
        cmocka_unit_test(test_runtime_version_has_last_word),
        cmocka_unit_test(test_facts_round_trip),
    };

    return cmocka_run_group_tests_name("cri", tests, NULL, NULL);
}
