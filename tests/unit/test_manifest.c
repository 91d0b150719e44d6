/*
 * test_manifest.c - the manifest loader: positions, Lists, JSON, stdin,
 * directory walks, diagnostics, limits and scalar typing.
 */
#include "harness.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "formats/manifest.h"

static const cJSON *path_get(const cJSON *node, const char *const *keys)
{
    for (; *keys && node; keys++) {
        char *end;
        long idx = strtol(*keys, &end, 10);
        node = *end == '\0' ? cJSON_GetArrayItem(node, (int)idx)
                            : cJSON_GetObjectItemCaseSensitive(node, *keys);
    }
    return node;
}

#define GET(node, ...) path_get((node), (const char *const[]){ __VA_ARGS__, NULL })

static void assert_pos(const struct mf_set *set, const cJSON *node, int line, int col)
{
    int l = -1, c = -1;

    assert_non_null(node);
    assert_int_equal(mf_pos(set, node, &l, &c), 1);
    assert_int_equal(l, line);
    assert_int_equal(c, col);
}

static const char *diag_str(const struct mf_set *set, size_t i)
{
    static char buf[2048];

    assert_true(i < set->ndiags);
    return mf_diag_format(&set->diags[i], buf, sizeof(buf));
}

static void assert_empty(const struct mf_set *set)
{
    assert_null(set->objs);
    assert_null(set->diags);
    assert_null(set->roots);
    assert_null(set->files);
    assert_null(set->pos);
    assert_int_equal(set->n + set->ndiags + set->nroots + set->nfiles + set->nerrors, 0);
}

static enum dd_rc load_str(struct mf_set *set, const char *name, const char *text)
{
    return mf_load_buffer(set, name, text, strlen(text), NULL);
}

/* --- temporary files --- */

static char tmpdir[64];

static void write_file(const char *rel, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *rel)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
    assert_int_equal(mkdir(path, 0700), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int tmp_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mf-test-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int tmp_teardown(void **state)
{
    (void)state;
    return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* --- tests --- */

static const char multi_doc[] =
    "# a DeviceClass and a ResourceClaim\n"   /* 1 */
    "apiVersion: resource.k8s.io/v1beta1\n"   /* 2 */
    "kind: DeviceClass\n"                     /* 3 */
    "metadata:\n"                             /* 4 */
    "  name: gpu.example.com\n"               /* 5 */
    "spec:\n"                                 /* 6 */
    "  selectors:\n"                          /* 7 */
    "  - cel:\n"                              /* 8 */
    "      expression: device.driver == 'x'\n" /* 9 */
    "---\n"                                   /* 10 */
    "apiVersion: resource.k8s.io/v1beta1\n"   /* 11 */
    "kind: ResourceClaim\n"                   /* 12 */
    "metadata:\n"                             /* 13 */
    "  namespace: ns1\n"                      /* 14 */
    "  generateName: claim-\n"                /* 15 */
    "spec:\n"                                 /* 16 */
    "  devices:\n"                            /* 17 */
    "    requests: [ {name: a}, {name: b} ]\n"; /* 18 */

static void test_multi_doc_positions(void **state)
{
    struct mf_set set = MF_SET_INIT;
    const cJSON *o;

    (void)state;
    assert_int_equal(load_str(&set, "multi.yaml", multi_doc), DD_OK);
    assert_int_equal(set.n, 2);
    assert_int_equal(set.ndiags, 0);

    assert_string_equal(set.objs[0].file, "multi.yaml");
    assert_int_equal(set.objs[0].line, 2);
    assert_int_equal(set.objs[0].col, 1);
    assert_string_equal(set.objs[0].api_version, "resource.k8s.io/v1beta1");
    assert_string_equal(set.objs[0].kind, "DeviceClass");
    assert_string_equal(set.objs[0].namespace_, "");
    assert_string_equal(set.objs[0].name, "gpu.example.com");
    o = set.objs[0].json;
    assert_pos(&set, o, 2, 1);
    assert_pos(&set, GET(o, "kind"), 3, 7);
    assert_pos(&set, GET(o, "spec", "selectors"), 8, 3);
    assert_pos(&set, GET(o, "spec", "selectors", "0"), 8, 5);
    assert_pos(&set, GET(o, "spec", "selectors", "0", "cel", "expression"), 9, 19);
    assert_string_equal(GET(o, "spec", "selectors", "0", "cel", "expression")->valuestring,
                        "device.driver == 'x'");

    assert_int_equal(set.objs[1].line, 11);
    assert_int_equal(set.objs[1].col, 1);
    assert_string_equal(set.objs[1].kind, "ResourceClaim");
    assert_string_equal(set.objs[1].namespace_, "ns1");
    assert_string_equal(set.objs[1].name, "claim-");
    o = set.objs[1].json;
    assert_pos(&set, GET(o, "spec", "devices", "requests"), 18, 15);
    assert_pos(&set, GET(o, "spec", "devices", "requests", "1"), 18, 28);
    assert_pos(&set, GET(o, "spec", "devices", "requests", "1", "name"), 18, 35);

    /* A node the loader did not make has no position. */
    {
        cJSON *other = cJSON_CreateNull();
        int l = 7;
        assert_int_equal(mf_pos(&set, other, &l, NULL), 0);
        assert_int_equal(l, 7);
        cJSON_Delete(other);
    }
    mf_set_release(&set);
    assert_empty(&set);
}

static void test_list_expansion(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\n"          /* 1 */
                               "kind: List\n"              /* 2 */
                               "metadata: {name: ignored}\n" /* 3 */
                               "items:\n"                  /* 4 */
                               "- apiVersion: v1\n"        /* 5 */
                               "  kind: ConfigMap\n"       /* 6 */
                               "  metadata:\n"             /* 7 */
                               "    name: one\n"           /* 8 */
                               "- just: data\n"            /* 9 */
                               "-   apiVersion: apps/v1\n" /* 10 */
                               "    kind: Deployment\n"    /* 11 */
                               "    spec: {replicas: 2}\n"; /* 12 */

    (void)state;
    assert_int_equal(load_str(&set, "list.yaml", text), DD_OK);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.objs[0].kind, "ConfigMap");
    assert_string_equal(set.objs[0].name, "one");
    assert_int_equal(set.objs[0].line, 5);
    assert_int_equal(set.objs[0].col, 3);
    assert_string_equal(set.objs[1].kind, "Deployment");
    /* Items inherit nothing from the List. */
    assert_string_equal(set.objs[1].name, "");
    assert_string_equal(set.objs[1].namespace_, "");
    assert_int_equal(set.objs[1].line, 10);
    assert_int_equal(set.objs[1].col, 5);
    assert_pos(&set, GET(set.objs[1].json, "spec", "replicas"), 12, 22);
    assert_int_equal(set.ndiags, 1);
    assert_int_equal(set.nerrors, 0);
    assert_string_equal(diag_str(&set, 0), "list.yaml:9:3: note: list item 1 is not a "
                                           "Kubernetes object (no apiVersion and kind), so it is "
                                           "skipped");
    assert_int_equal(set.diags[0].kind, MF_DIAG_NOT_K8S);
    mf_set_release(&set);
}

static void test_json_file_with_list(void **state)
{
    struct mf_set set = MF_SET_INIT;
    char path[512];
    const cJSON *v;

    (void)state;
    write_file("list.json", "{\n"                                              /* 1 */
                            "\t\"apiVersion\": \"v1\",\t\"kind\": \"List\",\n" /* 2 */
                            "  \"items\": [\n"                                 /* 3 */
                            "    {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\n" /* 4 */
                            "     \"metadata\":{\"name\":\"caf\\u00e9\"},\n"   /* 5 */
                            "     \"data\":{\"url\":\"http:\\/\\/x\\/y\",\"n\":\"1\",\"t\":true,"
                            "\"q\":\"a\\\"b\\tc\\\\d\",\"m\":-1.5e2,\"z\":null}},\n" /* 6 */
                            "    {\"apiVersion\":\"v1\", \"kind\":\"Secret\"}\n" /* 7 */
                            "  ]\n"
                            "}\n");
    snprintf(path, sizeof(path), "%s/list.json", tmpdir);
    assert_int_equal(mf_load_path(&set, path, NULL), DD_OK);
    assert_int_equal(set.ndiags, 0);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.objs[0].file, path);
    assert_string_equal(set.objs[0].name, "caf\xc3\xa9");
    assert_int_equal(set.objs[0].line, 4);
    assert_int_equal(set.objs[0].col, 5);
    v = GET(set.objs[0].json, "data");
    assert_string_equal(GET(v, "url")->valuestring, "http://x/y");
    assert_true(cJSON_IsString(GET(v, "n")));
    assert_true(cJSON_IsTrue(GET(v, "t")));
    assert_string_equal(GET(v, "q")->valuestring, "a\"b\tc\\d");
    assert_true(cJSON_IsNumber(GET(v, "m")));
    assert_true(GET(v, "m")->valuedouble == -150.0);
    assert_true(cJSON_IsNull(GET(v, "z")));
    assert_pos(&set, GET(v, "url"), 6, 20);
    assert_int_equal(set.objs[1].line, 7);
    assert_int_equal(set.objs[1].col, 5);
    assert_string_equal(set.objs[1].kind, "Secret");
    mf_set_release(&set);
}

static void test_stdin(void **state)
{
    struct mf_set set = MF_SET_INIT;
    char path[512];
    int fd, saved;

    (void)state;
    write_file("stdin.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: from-stdin}\n");
    snprintf(path, sizeof(path), "%s/stdin.yaml", tmpdir);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    saved = dup(0);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 0), 0);
    close(fd);
    assert_int_equal(mf_load_path(&set, "-", NULL), DD_OK);
    assert_int_equal(dup2(saved, 0), 0);
    close(saved);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.objs[0].file, "<stdin>");
    assert_string_equal(set.objs[0].name, "from-stdin");
    mf_set_release(&set);
}

static void test_stdin_pipe_too_big(void **state)
{
    struct mf_set set = MF_SET_INIT;
    struct mf_limits lim = { 16, 0, 0, 0 };
    int p[2], saved;
    static const char text[] = "apiVersion: v1\nkind: Namespace\n";

    (void)state;
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
    close(p[1]);
    saved = dup(0);
    assert_int_equal(dup2(p[0], 0), 0);
    close(p[0]);
    assert_int_equal(mf_load_path(&set, "-", &lim), DD_ETOOBIG);
    assert_int_equal(dup2(saved, 0), 0);
    close(saved);
    assert_int_equal(set.n, 0);
    assert_int_equal(set.nerrors, 1);
    assert_string_equal(diag_str(&set, 0), "<stdin>: error: file is larger than 16 bytes");
    mf_set_release(&set);
}

static void test_directory_walk(void **state)
{
    struct mf_set set = MF_SET_INIT;
    char path[512], want[512];
    static const char obj[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n";
    char text[256];

    (void)state;
    make_dir("repo");
    make_dir("repo/sub");
    make_dir("repo/sub/deeper");
    make_dir("repo/.git");
#define PUT(rel, name)                            \
    do {                                          \
        snprintf(text, sizeof(text), obj, name);  \
        write_file(rel, text);                    \
    } while (0)
    PUT("repo/b.yaml", "b");
    PUT("repo/a.yml", "a");
    write_file("repo/aa-broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n");
    PUT("repo/sub/c.json", "c");
    PUT("repo/sub/deeper/d.yaml", "d");
    PUT("repo/.git/hidden.yaml", "hidden");
    PUT("repo/.hidden.yaml", "hidden2");
    PUT("repo/notes.txt", "txt");
    PUT("repo/sub/e.yaml.bak", "bak");
    write_file("repo/z.json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                              "\"metadata\":{\"name\":\"z\"}}");
#undef PUT
    snprintf(path, sizeof(path), "%s/repo", tmpdir);
    /* The broken file is reported, and every later file is still loaded. */
    assert_int_equal(mf_load_path(&set, path, NULL), DD_EPARSE);
    assert_int_equal(set.n, 5);
    assert_string_equal(set.objs[0].name, "a");
    assert_string_equal(set.objs[1].name, "b");
    assert_string_equal(set.objs[2].name, "c");
    assert_string_equal(set.objs[3].name, "d");
    assert_string_equal(set.objs[4].name, "z");
    snprintf(want, sizeof(want), "%s/repo/sub/deeper/d.yaml", tmpdir);
    assert_string_equal(set.objs[3].file, want);
    assert_int_equal(set.ndiags, 1);
    assert_int_equal(set.nerrors, 1);
    snprintf(want, sizeof(want), "%s/repo/aa-broken.yaml", tmpdir);
    assert_string_equal(set.diags[0].file, want);
    assert_int_equal(set.diags[0].line, 4);
    mf_set_release(&set);
}

/*
 * Templates: every file under a chart's templates/ is one (parseable or not); elsewhere a file
 * is one when "{{" starts a YAML value and the file does not parse; "{{" inside a string or a
 * block scalar (a PrometheusRule's annotations) is text.  A chart's own Chart.yaml and values
 * are not "not a Kubernetes object".
 */
static void test_templates(void **state)
{
    struct mf_set set = MF_SET_INIT;
    char path[512], want[512];
    size_t i, templates = 0;

    (void)state;
    make_dir("tpl");
    make_dir("tpl/chart");
    make_dir("tpl/chart/templates");
    make_dir("tpl/chart/templates/sub");
    make_dir("tpl/other");
    write_file("tpl/chart/Chart.yaml", "apiVersion: v2\nname: chart\nversion: 0.1.0\n");
    write_file("tpl/chart/values.yaml", "replicas: 1\n");
    write_file("tpl/chart/templates/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                             "  name: {{ .Release.Name }}\n");
    /* Parses as YAML, still a template of the chart. */
    write_file("tpl/chart/templates/sub/b.yaml", "apiVersion: v1\nkind: ConfigMap\n"
                                                 "metadata: {name: static}\n");
    write_file("tpl/other/loose.yaml", "{{- if .Values.on }}\napiVersion: v1\nkind: Pod\n"
                                       "{{- end }}\n");
    write_file("tpl/other/prom.yaml", "apiVersion: monitoring.coreos.com/v1\n"
                                      "kind: PrometheusRule\nmetadata: {name: r}\nspec:\n"
                                      "  description: |\n    {{ $labels.instance }} is down\n"
                                      "  summary: \"{{ $value }}\"\n");
    snprintf(path, sizeof(path), "%s/tpl", tmpdir);
    assert_int_equal(mf_load_path(&set, path, NULL), DD_OK);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.objs[0].kind, "PrometheusRule");
    assert_int_equal(set.nerrors, 0);
    for (i = 0; i < set.ndiags; i++) {
        const struct mf_diag *d = &set.diags[i];
        assert_int_equal(d->kind, MF_DIAG_TEMPLATE);
        templates++;
        if (strstr(d->file, "/chart/templates/")) {
            snprintf(want, sizeof(want), "%s/tpl/chart", tmpdir);
            assert_non_null(d->chart);
            assert_string_equal(d->chart, want);
        } else {
            assert_null(d->chart);
            assert_int_equal(d->line, 1);
            assert_int_equal(d->col, 1);
        }
        if (strstr(d->file, "/a.yaml")) {
            assert_int_equal(d->line, 4);
            assert_int_equal(d->col, 9);
        }
    }
    assert_int_equal(templates, 3);
    mf_set_release(&set);
}

static void test_not_k8s_and_empty(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "---\n"            /* 1: empty */
                               "---\n"            /* 2: only a comment */
                               "# nothing\n"      /* 3 */
                               "---\n"            /* 4 */
                               "foo: bar\n"       /* 5 */
                               "---\n"            /* 6 */
                               "~\n"              /* 7: null, ignored */
                               "---\n"            /* 8 */
                               "kind: Pod\n"      /* 9: no apiVersion */
                               "---\n"            /* 10 */
                               "apiVersion: 1\n"  /* 11: not a string */
                               "kind: Pod\n"
                               "...\n";

    (void)state;
    assert_int_equal(load_str(&set, "x.yaml", text), DD_OK);
    assert_int_equal(set.n, 0);
    assert_int_equal(set.nerrors, 0);
    assert_int_equal(set.ndiags, 3);
    assert_string_equal(diag_str(&set, 0), "x.yaml:5:1: note: document is not a Kubernetes "
                                           "object (no apiVersion and kind), so it is skipped");
    assert_int_equal(set.diags[0].kind, MF_DIAG_NOT_K8S);
    /* A kind without apiVersion was meant to be an object: kubectl refuses it. */
    assert_int_equal(set.diags[1].line, 9);
    assert_int_equal(set.diags[1].kind, MF_DIAG_K8S_LIKE);
    assert_int_equal(set.diags[2].line, 11);
    assert_int_equal(set.diags[2].kind, MF_DIAG_K8S_LIKE);
    mf_set_release(&set);
    assert_int_equal(load_str(&set, "y.yaml", ""), DD_OK);
    assert_int_equal(set.n + set.ndiags, 0);
    mf_set_release(&set);
}

static void test_malformed_position(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\n"
                               "kind: ConfigMap\n"
                               "data:\n"
                               "  a: b\n"
                               " c: d\n";

    (void)state;
    assert_int_equal(load_str(&set, "bad.yaml", text), DD_EPARSE);
    assert_int_equal(set.n, 0);
    assert_int_equal(set.nerrors, 1);
    assert_true(set.diags[0].is_error);
    assert_string_equal(diag_str(&set, 0),
                        "bad.yaml:5:2: error: did not find expected key while parsing a block "
                        "mapping that started at line 1, column 1");
    mf_set_release(&set);
}

static void test_error_then_next_document(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\n"          /* 1 */
                               "kind: A\n"                 /* 2 */
                               "---\n"                     /* 3 */
                               "apiVersion: v1\n"          /* 4 */
                               "kind: B\n"                 /* 5 */
                               "data: [1, 2\n"             /* 6 */
                               "---\n"                     /* 7 */
                               "apiVersion: v1\n"          /* 8 */
                               "kind: C\n"                 /* 9 */
                               "---\n"                     /* 10 */
                               "apiVersion: v1\n"          /* 11 */
                               "kind: D\n"                 /* 12 */
                               "spec: {depth: [[[1]]]}\n"  /* 13 */
                               "---\n"                     /* 14 */
                               "apiVersion: v1\n"          /* 15 */
                               "kind: E\n";                /* 16 */
    struct mf_limits lim = { 0, 4, 0, 0 };

    (void)state;
    assert_int_equal(mf_load_buffer(&set, "s.yaml", text, strlen(text), &lim), DD_EPARSE);
    assert_int_equal(set.n, 3);
    assert_string_equal(set.objs[0].kind, "A");
    assert_string_equal(set.objs[1].kind, "C");
    assert_int_equal(set.objs[1].line, 8);
    assert_pos(&set, GET(set.objs[1].json, "kind"), 9, 7);
    assert_string_equal(set.objs[2].kind, "E");
    assert_int_equal(set.objs[2].line, 15);
    assert_int_equal(set.nerrors, 2);
    assert_int_equal(set.diags[0].line, 7);
    assert_int_equal(set.diags[0].col, 1);
    assert_string_equal(diag_str(&set, 1), "s.yaml:13:17: error: nesting exceeds 4 levels");
    mf_set_release(&set);
}

/* A repeated key is read as kubectl reads it: the last value wins, and a warning says what was
 * lost.  The object is checked, not dropped. */
static void test_duplicate_key(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\nkind: A\nmetadata: {name: a}\nkind: B\n";
    char big[2048];
    const cJSON *v;
    size_t n = 0;
    int i, line = 0;

    (void)state;
    assert_int_equal(load_str(&set, "d.yaml", text), DD_OK);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.objs[0].kind, "B");
    assert_int_equal(set.nerrors, 0);
    assert_int_equal(set.diags[0].kind, MF_DIAG_DUPLICATE);
    assert_string_equal(diag_str(&set, 0), "d.yaml:4:1: warning: duplicate key \"kind\": kubectl "
                                           "keeps this value and drops the earlier one");
    /* The kept value has its own position; the dropped one none. */
    v = cJSON_GetObjectItem(set.objs[0].json, "kind");
    assert_true(mf_pos(&set, v, &line, NULL));
    assert_int_equal(line, 4);
    mf_set_release(&set);

    /* Past the small-mapping scan, duplicates are found through the hash. */
    n += (size_t)snprintf(big + n, sizeof(big) - n, "apiVersion: v1\nkind: A\ndata:\n");
    for (i = 0; i < 40; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "  k%d: v\n", i);
    n += (size_t)snprintf(big + n, sizeof(big) - n, "  k17: again\n  k41: after\n");
    assert_int_equal(load_str(&set, "big.yaml", big), DD_OK);
    assert_string_equal(diag_str(&set, 0), "big.yaml:44:3: warning: duplicate key \"k17\": "
                                           "kubectl keeps this value and drops the earlier one");
    v = cJSON_GetObjectItem(set.objs[0].json, "data");
    assert_int_equal(cJSON_GetArraySize(v), 41);
    assert_string_equal(cJSON_GetObjectItem(v, "k17")->valuestring, "again");
    assert_string_equal(cJSON_GetObjectItem(v, "k41")->valuestring, "after");
    mf_set_release(&set);

    /* An alias into the value a repeated key replaced still reads it. */
    assert_int_equal(load_str(&set, "a.yaml", "apiVersion: v1\nkind: A\nx: &a {p: 1}\n"
                                              "x: 2\ny: *a\n"), DD_OK);
    assert_int_equal(set.n, 1);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(set.objs[0].json, "y"), "p")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(set.objs[0].json, "x")->valueint, 2);
    mf_set_release(&set);

    /* The same key in different mappings is fine. */
    assert_int_equal(load_str(&set, "ok.yaml", "apiVersion: v1\nkind: A\nx: {kind: 1}\n"), DD_OK);
    assert_int_equal(set.n, 1);
    mf_set_release(&set);
}

static void test_tab_indentation(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\nkind: A\nmetadata:\n\tname: x\n";

    (void)state;
    assert_int_equal(load_str(&set, "tab.yaml", text), DD_EPARSE);
    assert_int_equal(set.n, 0);
    assert_int_equal(set.nerrors, 1);
    assert_int_equal(set.diags[0].line, 4);
    assert_int_equal(set.diags[0].col, 1);
    assert_contains(set.diags[0].text, "found character that cannot start any token");
    mf_set_release(&set);
}

static void test_billion_laughs(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] =
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: After\n";
    clock_t t0 = clock();

    (void)state;
    assert_int_equal(load_str(&set, "lol.yaml", text), DD_ETOOBIG);
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
    assert_int_equal(set.nerrors, 1);
    assert_contains(set.diags[0].text, "alias expansion exceeds 10000 nodes");
    assert_true(set.diags[0].line >= 6 && set.diags[0].line <= 8);
    /* The next document still loads; it has no aliases of its own. */
    assert_int_equal(set.n, 1);
    assert_string_equal(set.objs[0].kind, "After");
    mf_set_release(&set);
}

static void test_depth_bomb(void **state)
{
    struct mf_set set = MF_SET_INIT;
    size_t n = 10000, i;
    char *text = malloc(2 * n + 1);

    (void)state;
    assert_non_null(text);
    for (i = 0; i < n; i++) {
        text[i] = '[';
        text[n + i] = ']';
    }
    text[2 * n] = '\0';
    assert_int_equal(load_str(&set, "deep.yaml", text), DD_ETOOBIG);
    assert_string_equal(diag_str(&set, 0), "deep.yaml:1:65: error: nesting exceeds 64 levels");
    free(text);
    mf_set_release(&set);
}

static void test_oversized(void **state)
{
    struct mf_set set = MF_SET_INIT;
    struct mf_limits lim = { 40, 0, 0, 0 };
    static const char text[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: too-big}\n";
    char path[512];

    (void)state;
    assert_int_equal(mf_load_buffer(&set, "b.yaml", text, strlen(text), &lim), DD_ETOOBIG);
    assert_int_equal(set.n, 0);
    assert_string_equal(diag_str(&set, 0), "b.yaml: error: file is larger than 40 bytes");
    mf_set_release(&set);

    write_file("big.yaml", text);
    snprintf(path, sizeof(path), "%s/big.yaml", tmpdir);
    assert_int_equal(mf_load_path(&set, path, &lim), DD_ETOOBIG);
    assert_int_equal(set.n, 0);
    assert_int_equal(set.nerrors, 1);
    assert_contains(set.diags[0].text, "file is larger than 40 bytes");
    mf_set_release(&set);

    /* Exactly at the cap is fine. */
    lim.max_file_bytes = strlen(text);
    assert_int_equal(mf_load_path(&set, path, &lim), DD_OK);
    assert_int_equal(set.n, 1);
    mf_set_release(&set);
}

static void test_max_documents(void **state)
{
    struct mf_set set = MF_SET_INIT;
    struct mf_limits lim = { 0, 0, 2, 0 };
    static const char text[] = "apiVersion: v1\nkind: A\n---\napiVersion: v1\nkind: B\n---\n"
                               "apiVersion: v1\nkind: C\n";

    (void)state;
    assert_int_equal(mf_load_buffer(&set, "m.yaml", text, strlen(text), &lim), DD_ETOOBIG);
    assert_int_equal(set.n, 2);
    assert_string_equal(diag_str(&set, 0), "m.yaml:6:1: error: more than 2 documents");
    mf_set_release(&set);
}

static void test_scalar_typing(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\n"
                               "kind: Typed\n"
                               "q1: \"1\"\n"
                               "n1: 1\n"
                               "bt: true\n"
                               "bs: 'true'\n"
                               "yes: yes\n"
                               "off: Off\n"
                               "nul: null\n"
                               "tilde: ~\n"
                               "empty:\n"
                               "qnull: \"null\"\n"
                               "oct: 0644\n"
                               "oct2: 0o17\n"
                               "hex: 0x1F\n"
                               "under: 1_000\n"
                               "neg: -42\n"
                               "flt: 2.5e3\n"
                               "inf: -.inf\n"
                               "nan: .NaN\n"
                               "ver: 1.2.3\n"
                               "time: 12:30\n"
                               "tagstr: !!str 12\n"
                               "tagint: !!int \"7\"\n"
                               "block: |\n"
                               "  true\n"
                               "qtrue: \"True\"\n";
    const cJSON *o;

    (void)state;
    assert_int_equal(load_str(&set, "t.yaml", text), DD_OK);
    assert_int_equal(set.n, 1);
    o = set.objs[0].json;
    assert_true(cJSON_IsString(GET(o, "q1")));
    assert_string_equal(GET(o, "q1")->valuestring, "1");
    assert_true(cJSON_IsNumber(GET(o, "n1")));
    assert_true(GET(o, "n1")->valuedouble == 1.0);
    assert_true(cJSON_IsTrue(GET(o, "bt")));
    assert_true(cJSON_IsString(GET(o, "bs")));
    /* go-yaml v2 (YAML 1.1) booleans; keys keep their text. */
    assert_true(cJSON_IsTrue(GET(o, "yes")));
    assert_true(cJSON_IsFalse(GET(o, "off")));
    assert_true(cJSON_IsNull(GET(o, "nul")));
    assert_true(cJSON_IsNull(GET(o, "tilde")));
    assert_true(cJSON_IsNull(GET(o, "empty")));
    assert_string_equal(GET(o, "qnull")->valuestring, "null");
    assert_true(GET(o, "oct")->valuedouble == 420.0);
    assert_true(GET(o, "oct2")->valuedouble == 15.0);
    assert_true(GET(o, "hex")->valuedouble == 31.0);
    assert_true(GET(o, "under")->valuedouble == 1000.0);
    assert_true(GET(o, "neg")->valuedouble == -42.0);
    assert_true(GET(o, "flt")->valuedouble == 2500.0);
    assert_true(isinf(GET(o, "inf")->valuedouble) && GET(o, "inf")->valuedouble < 0);
    assert_true(isnan(GET(o, "nan")->valuedouble));
    assert_string_equal(GET(o, "ver")->valuestring, "1.2.3");
    assert_string_equal(GET(o, "time")->valuestring, "12:30");
    assert_string_equal(GET(o, "tagstr")->valuestring, "12");
    assert_true(cJSON_IsNumber(GET(o, "tagint")) && GET(o, "tagint")->valuedouble == 7.0);
    assert_string_equal(GET(o, "block")->valuestring, "true\n");
    assert_string_equal(GET(o, "qtrue")->valuestring, "True");
    mf_set_release(&set);

    assert_int_equal(load_str(&set, "t.yaml", "apiVersion: v1\nkind: A\nx: !!int abc\n"),
                     DD_EPARSE);
    assert_string_equal(diag_str(&set, 0), "t.yaml:3:4: error: cannot decode \"abc\" as !!int");
    mf_set_release(&set);
}

static void test_anchors_and_aliases(void **state)
{
    struct mf_set set = MF_SET_INIT;
    static const char text[] = "apiVersion: v1\n"                  /* 1 */
                               "kind: Pod\n"                       /* 2 */
                               "base: &labels\n"                   /* 3 */
                               "  app: web\n"                      /* 4 */
                               "  tier: [front, 1]\n"              /* 5 */
                               "name: &n web-1\n"                  /* 6 */
                               "copy: *labels\n"                   /* 7 */
                               "list: [*n, *n]\n"                  /* 8 */
                               "<<: not-merged\n"                  /* 9 */
                               "---\n"
                               "apiVersion: v1\nkind: Pod\nx: *labels\n";
    const cJSON *o, *base, *copy;

    (void)state;
    assert_int_equal(load_str(&set, "a.yaml", text), DD_EPARSE);
    assert_int_equal(set.n, 1);
    o = set.objs[0].json;
    base = GET(o, "base");
    copy = GET(o, "copy");
    assert_non_null(copy);
    assert_ptr_not_equal(base, copy);
    assert_true(cJSON_Compare(base, copy, 1));
    assert_ptr_not_equal(GET(base, "tier"), GET(copy, "tier"));
    assert_string_equal(GET(copy, "tier", "0")->valuestring, "front");
    assert_string_equal(GET(o, "list", "1")->valuestring, "web-1");
    assert_string_equal(GET(o, "<<")->valuestring, "not-merged");
    /* Copies sit where the alias is. */
    assert_pos(&set, copy, 7, 7);
    assert_pos(&set, GET(copy, "tier", "1"), 7, 7);
    assert_pos(&set, GET(base, "tier", "1"), 5, 17);
    assert_pos(&set, GET(o, "list", "1"), 8, 12);
    /* Anchors do not cross documents. */
    assert_int_equal(set.nerrors, 1);
    assert_string_equal(diag_str(&set, 0), "a.yaml:13:4: error: unknown anchor \"labels\"");
    mf_set_release(&set);

    /* A node cannot refer to itself. */
    assert_int_equal(load_str(&set, "r.yaml", "a: &x [1, *x]\n"), DD_EPARSE);
    assert_contains(set.diags[0].text, "unknown anchor \"x\"");
    mf_set_release(&set);
}

static void test_complex_key(void **state)
{
    struct mf_set set = MF_SET_INIT;

    (void)state;
    assert_int_equal(load_str(&set, "k.yaml", "apiVersion: v1\nkind: A\n? [a, b]\n: c\n"),
                     DD_EPARSE);
    assert_string_equal(diag_str(&set, 0), "k.yaml:3:3: error: mapping keys must be scalars");
    mf_set_release(&set);
}

static void test_missing_path(void **state)
{
    struct mf_set set = MF_SET_INIT;
    char path[512];

    (void)state;
    snprintf(path, sizeof(path), "%s/does-not-exist.yaml", tmpdir);
    assert_int_equal(mf_load_path(&set, path, NULL), DD_EIO);
    assert_int_equal(set.nerrors, 1);
    assert_contains(set.diags[0].text, "No such file");
    mf_set_release(&set);
}

static void test_release_and_reuse(void **state)
{
    struct mf_set set;
    int i;

    (void)state;
    mf_set_init(&set);
    assert_empty(&set);
    mf_set_release(&set);
    assert_empty(&set);
    for (i = 0; i < 2; i++) {
        assert_int_equal(load_str(&set, "m.yaml", multi_doc), DD_OK);
        assert_int_equal(load_str(&set, "n.yaml", "foo: 1\n"), DD_OK);
        assert_int_equal(set.n, 2);
        assert_int_equal(set.ndiags, 1);
        assert_pos(&set, GET(set.objs[1].json, "kind"), 12, 7);
        mf_set_release(&set);
        assert_empty(&set);
    }
}

/* keep drops ConfigMaps, and Jobs without a "claims" key; skim lets the reader skip both. */
static int keep_no_cm(void *ctx, const cJSON *obj)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    ++*(int *)ctx;
    if (strcmp(kind->valuestring, "Job") == 0)
        return GET(obj, "spec", "claims") != NULL;
    return strcmp(kind->valuestring, "ConfigMap") != 0;
}

static int skim_no_cm(void *ctx, const char *api_version, const char *kind)
{
    (void)ctx;
    (void)api_version;
    return strcmp(kind, "ConfigMap") == 0 || strcmp(kind, "Job") == 0;
}

static void test_keep_and_skim(void **state)
{
    static const char text[] =
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n"            /* 1-4: skimmed */
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"  /* 5-9: kept */
        "---\napiVersion: batch/v1\nkind: Job\nspec:\n  claims: []\n" /* 10-14: kept */
        "---\napiVersion: batch/v1\nkind: Job\nspec: {}\n"            /* 15-18: skimmed */
        "---\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"}\n"  /* 19-20: built, dropped */
        "---\napiVersion: v1\nkind: ConfigMap\nbad: [\n"               /* 21-24: an error */
        "---\nkind: ConfigMap\napiVersion: v1\n";                      /* 25-27: skimmed */
    int round;

    (void)state;
    for (round = 0; round < 4; round++) {
        struct mf_set set = MF_SET_INIT;
        int built = 0, skim = round % 2;
        set.compact = round >= 2;
        set.keep = keep_no_cm;
        set.keep_ctx = &built;
        set.skim = skim ? skim_no_cm : NULL;
        set.skim_unless = "claims";
        assert_int_equal(load_str(&set, "k.yaml", text), DD_EPARSE);
        assert_int_equal(set.n, 2);
        assert_int_equal(set.nfiltered, 4);
        assert_int_equal(set.nerrors, 1);
        assert_string_equal(set.objs[0].kind, "Secret");
        assert_int_equal(set.objs[0].line, 6);
        assert_pos(&set, GET(set.objs[0].json, "metadata", "name"), 9, 9);
        assert_string_equal(set.objs[1].kind, "Job");
        assert_pos(&set, GET(set.objs[1].json, "spec", "claims"), 14, 11);
        /* Skimmed documents never reach keep: no tree was built for them. */
        assert_int_equal(built, skim ? 3 : 6);
        mf_set_release(&set);
        assert_int_equal(set.compact, round >= 2);
    }
}

static void test_many_objects_positions(void **state)
{
    struct mf_set set = MF_SET_INIT;
    size_t cap = 5000 * 64, n = 0, i;
    char *text = malloc(cap);

    (void)state;
    assert_non_null(text);
    for (i = 0; i < 5000; i++)
        n += (size_t)snprintf(text + n, cap - n,
                              "---\napiVersion: v1\nkind: ConfigMap\ndata: {k: v%zu}\n", i);
    /* The position index grows several times (compact: the arena takes several chunks);
     * every node stays findable. */
    for (set.compact = 0; set.compact < 2; set.compact++) {
        assert_int_equal(mf_load_buffer(&set, "many.yaml", text, n, NULL), DD_OK);
        assert_int_equal(set.n, 5000);
        for (i = 0; i < set.n; i++) {
            assert_int_equal(set.objs[i].line, (int)(4 * i + 2));
            assert_pos(&set, GET(set.objs[i].json, "data", "k"), (int)(4 * i + 4), 11);
        }
        mf_set_release(&set);
    }
    free(text);
}

/* Drops every third object a reader builds (so compact sets give space back between kept ones). */
static int keep_two_of_three(void *ctx, const cJSON *obj)
{
    (void)obj;
    return ++*(size_t *)ctx % 3 != 0;
}

static int skim_configmaps(void *ctx, const char *api_version, const char *kind)
{
    (void)ctx;
    (void)api_version;
    return strcmp(kind, "ConfigMap") == 0;
}

static int same_node(const struct mf_set *a, const cJSON *x, const struct mf_set *b,
                     const cJSON *y)
{
    int l1 = 0, c1 = 0, l2 = 0, c2 = 0;

    if (x->type != y->type || (x->string == NULL) != (y->string == NULL) ||
        (x->string && strcmp(x->string, y->string)) ||
        (x->valuestring == NULL) != (y->valuestring == NULL) ||
        (x->valuestring && strcmp(x->valuestring, y->valuestring)) ||
        x->valueint != y->valueint ||
        !(x->valuedouble == y->valuedouble || (isnan(x->valuedouble) && isnan(y->valuedouble))))
        return 0;
    if (!mf_pos(a, x, &l1, &c1) || !mf_pos(b, y, &l2, &c2) || l1 != l2 || c1 != c2)
        return 0;
    for (x = x->child, y = y->child; x && y; x = x->next, y = y->next)
        if (!same_node(a, x, b, y))
            return 0;
    return !x && !y;
}

/* A compact set holds what a plain one holds: objects, trees, positions, diagnostics. */
static void compare_compact(const char *path)
{
    struct mf_set a = MF_SET_INIT, b = MF_SET_INIT;
    size_t ka = 0, kb = 0, i;
    enum dd_rc ra, rb;

    a.keep = b.keep = keep_two_of_three;
    a.skim = b.skim = skim_configmaps;
    a.keep_ctx = &ka;
    b.keep_ctx = &kb;
    b.compact = 1;
    ra = mf_load_path(&a, path, NULL);
    rb = mf_load_path(&b, path, NULL);
    assert_int_equal(ra, rb);
    assert_int_equal(a.n, b.n);
    assert_int_equal(a.nfiltered, b.nfiltered);
    assert_int_equal(a.ndiags, b.ndiags);
    assert_null(b.roots);
    assert_null(b.pos);
    for (i = 0; i < a.ndiags; i++) {
        char x[2048], y[2048];
        assert_string_equal(mf_diag_format(&a.diags[i], x, sizeof(x)),
                            mf_diag_format(&b.diags[i], y, sizeof(y)));
    }
    for (i = 0; i < a.n; i++) {
        const struct mf_object *x = &a.objs[i], *y = &b.objs[i];
        assert_string_equal(x->file, y->file);
        assert_string_equal(x->kind, y->kind);
        assert_string_equal(x->api_version, y->api_version);
        assert_string_equal(x->namespace_, y->namespace_);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->line, y->line);
        assert_int_equal(x->col, y->col);
        if (!same_node(&a, x->json, &b, y->json))
            fail_msg("%s: object %zu (%s:%d) differs when compact", path, i, x->file, x->line);
        /* Each set knows its own nodes only. */
        assert_int_equal(mf_pos(&b, x->json, NULL, NULL), 0);
    }
    mf_set_release(&a);
    mf_set_release(&b);
}

static void test_compact(void **state)
{
    (void)state;
    compare_compact("tests/data");
    compare_compact("tests/fuzz/corpus");
    if (access("../shared/corpus/real", R_OK) == 0)
        compare_compact("../shared/corpus/real");
    else
        fprintf(stderr, "test_compact: ../shared/corpus/real is absent, not compared\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_doc_positions),
        cmocka_unit_test(test_list_expansion),
        cmocka_unit_test(test_json_file_with_list),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_stdin_pipe_too_big),
        cmocka_unit_test(test_directory_walk),
        cmocka_unit_test(test_templates),
        cmocka_unit_test(test_not_k8s_and_empty),
        cmocka_unit_test(test_malformed_position),
        cmocka_unit_test(test_error_then_next_document),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_tab_indentation),
        cmocka_unit_test(test_billion_laughs),
        cmocka_unit_test(test_depth_bomb),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_max_documents),
        cmocka_unit_test(test_scalar_typing),
        cmocka_unit_test(test_anchors_and_aliases),
        cmocka_unit_test(test_complex_key),
        cmocka_unit_test(test_missing_path),
        cmocka_unit_test(test_release_and_reuse),
        cmocka_unit_test(test_many_objects_positions),
        cmocka_unit_test(test_keep_and_skim),
        cmocka_unit_test(test_compact),
    };

    return cmocka_run_group_tests_name("manifest", tests, tmp_setup, tmp_teardown);
}
