/*
 * test_report.c - the lint output formats, checked structurally: JSON and
 * SARIF are parsed back, GitHub and text compared line by line.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../lint/report.h"

#define DOCS "https://github.com/dra-doctor/dra-doctor/blob/main/docs/rules.md"

/* A hand-made table, so these tests do not depend on the real rules. */
static const struct dd_rule test_rules[] = {
    { "DriverNotInstalled", DD_SEV_ERROR, DD_STEP_DRIVER, DD_LINT, "No DRA driver publishes the class's devices", NULL, DD_SCOPE_CLUSTER, NULL },
    { "SelectorMatchesNoDriver", DD_SEV_ERROR, DD_STEP_SELECTOR, DD_LINT, "A CEL selector names a driver nobody runs", NULL, DD_SCOPE_CLUSTER, NULL },
    { "ClaimUnused", DD_SEV_WARNING, DD_STEP_NONE, DD_LINT, "A ResourceClaim is referenced by no pod", NULL, DD_SCOPE_CLUSTER, NULL },
    { "AdminAccessSet", DD_SEV_INFO, DD_STEP_NONE, DD_LINT, "The claim requests admin access", NULL, DD_SCOPE_CLUSTER, NULL },
};
#define NRULES (sizeof(test_rules) / sizeof(test_rules[0]))

struct fixture {
    struct dd_findings fs;
    struct report_input in;
};

static void add(struct dd_findings *fs, const char *code, enum dd_severity sev, const char *kind,
                const char *ns, const char *name, const char *file, int line, const char *msg,
                const char *fix)
{
    assert_non_null(dd_findings_add(fs, code, sev, ns ? "resource.k8s.io/v1" : "", kind,
                                    ns ? ns : "", name, file, line, msg, fix));
}

static void input_init(struct fixture *fx, size_t objects)
{
    memset(&fx->in, 0, sizeof(fx->in));
    fx->in.findings = &fx->fs;
    fx->in.rules = test_rules;
    fx->in.nrules = NRULES;
    fx->in.objects = objects;
    fx->in.tool_version = "0.1.0";
    fx->in.docs_uri = DOCS;
}

/*
 * The common case: an error with a hostile message, a live finding without
 * file or line, a warning with a line-less file, an info on a cluster-scoped
 * object, and a code that is not in the table.
 */
static int setup_mixed(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    add(&fx->fs, "SelectorMatchesNoDriver", DD_SEV_ERROR, "ResourceClaim", "ml", "gpu-claim",
        "manifests/claim.yaml", 12,
        "selector says \"gpu.nvdia.com\"\nline two, 100% sure: really",
        "use driver \"gpu.nvidia.com\"");
    add(&fx->fs, "DriverNotInstalled", DD_SEV_ERROR, "DeviceClass", NULL, "gpu", NULL, 0,
        "no ResourceSlice for gpu.nvidia.com", "install the driver");
    add(&fx->fs, "ClaimUnused", DD_SEV_WARNING, "ResourceClaim", "ml", "gpu-claim",
        "manifests/claim.yaml", 0, "no pod references it", "");
    add(&fx->fs, "AdminAccessSet", DD_SEV_INFO, "DeviceClass", NULL, "gpu", "./dir a/x:y.yaml", 3,
        "admin", "drop adminAccess");
    add(&fx->fs, "LiveOnlyCode", DD_SEV_WARNING, "Pod", "default", "p", "/abs/p.yaml", 7, "m",
        "f");
    input_init(fx, 42);
    *state = fx;
    return 0;
}

static int setup_empty(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    input_init(fx, 42);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    dd_findings_release(&fx->fs);
    free(fx);
    return 0;
}

static char *render(enum report_format f, const struct report_input *in)
{
    char *s = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&s, &n);

    assert_non_null(m);
    assert_int_equal(report_write(m, f, in), 0);
    assert_int_equal(fclose(m), 0);
    assert_non_null(s);
    assert_int_equal(strlen(s), n); /* no NUL bytes in the output */
    return s;
}

static cJSON *get(const cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    if (!v)
        fail_msg("missing key \"%s\"", key);
    return v;
}

static void assert_str_item(const cJSON *o, const char *key, const char *want)
{
    cJSON *v = get(o, key);

    assert_true(cJSON_IsString(v));
    assert_string_equal(v->valuestring, want);
}

static void assert_num_item(const cJSON *o, const char *key, double want)
{
    cJSON *v = get(o, key);

    assert_true(cJSON_IsNumber(v));
    assert_true(v->valuedouble == want);
}

static void assert_null_item(const cJSON *o, const char *key)
{
    assert_true(cJSON_IsNull(get(o, key)));
}

static int nkeys(const cJSON *o)
{
    return cJSON_GetArraySize(o);
}

/* ---- format names ---- */

static void test_format_parse(void **state)
{
    (void)state;
    assert_int_equal(report_format_parse("text"), REPORT_TEXT);
    assert_int_equal(report_format_parse("json"), REPORT_JSON);
    assert_int_equal(report_format_parse("sarif"), REPORT_SARIF);
    assert_int_equal(report_format_parse("github"), REPORT_GITHUB);
    assert_int_equal(report_format_parse("JSON"), -1);
    assert_int_equal(report_format_parse(""), -1);
    assert_int_equal(report_format_parse("yaml"), -1);
    assert_int_equal(report_format_parse(NULL), -1);
    assert_string_equal(report_format_names(), "text, json, sarif, github");
}

/* ---- json ---- */

static void test_json_structure(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_JSON, &fx->in);
    cJSON *root, *arr, *f, *obj, *sum;

    /* One line: scripts may read it as a JSON Lines record. */
    assert_non_null(strchr(s, '\n'));
    assert_true(strchr(s, '\n') == s + strlen(s) - 1);
    root = cJSON_Parse(s);
    assert_non_null(root);
    assert_int_equal(nkeys(root), 2);

    arr = get(root, "findings");
    assert_true(cJSON_IsArray(arr));
    assert_int_equal(cJSON_GetArraySize(arr), 5);

    f = cJSON_GetArrayItem(arr, 0);
    assert_int_equal(nkeys(f), 8);
    assert_str_item(f, "code", "SelectorMatchesNoDriver");
    assert_str_item(f, "severity", "error");
    obj = get(f, "object");
    assert_int_equal(nkeys(obj), 4);
    assert_str_item(obj, "apiVersion", "resource.k8s.io/v1");
    assert_str_item(obj, "kind", "ResourceClaim");
    assert_str_item(obj, "namespace", "ml");
    assert_str_item(obj, "name", "gpu-claim");
    assert_str_item(f, "file", "manifests/claim.yaml");
    assert_num_item(f, "line", 12);
    assert_true(cJSON_IsNull(get(f, "column")));
    assert_str_item(f, "message", "selector says \"gpu.nvdia.com\"\nline two, 100% sure: really");
    assert_str_item(f, "fix", "use driver \"gpu.nvidia.com\"");
    /* The escapes are cJSON's, not raw bytes that would break the line. */
    assert_contains(s, "\\\"gpu.nvdia.com\\\"\\nline two");

    f = cJSON_GetArrayItem(arr, 1);
    assert_int_equal(nkeys(f), 8);
    assert_str_item(f, "code", "DriverNotInstalled");
    obj = get(f, "object");
    assert_str_item(obj, "apiVersion", "");
    assert_str_item(obj, "kind", "DeviceClass");
    assert_str_item(obj, "namespace", "");
    assert_str_item(obj, "name", "gpu");
    assert_null_item(f, "file");
    assert_null_item(f, "line");

    f = cJSON_GetArrayItem(arr, 2);
    assert_str_item(f, "severity", "warning");
    assert_str_item(f, "file", "manifests/claim.yaml");
    assert_null_item(f, "line");
    assert_str_item(f, "fix", "");

    f = cJSON_GetArrayItem(arr, 3);
    assert_str_item(f, "severity", "info");
    assert_str_item(f, "file", "./dir a/x:y.yaml"); /* JSON keeps the path as given */

    sum = get(root, "summary");
    assert_int_equal(nkeys(sum), 4);
    assert_num_item(sum, "errors", 2);
    assert_num_item(sum, "warnings", 2);
    assert_num_item(sum, "infos", 1);
    assert_num_item(sum, "objects", 42);
    cJSON_Delete(root);
    free(s);
}

static void test_json_empty(void **state)
{
    struct fixture *fx = *state;
    char *s;

    fx->in.findings = NULL; /* NULL and an empty list print alike */
    s = render(REPORT_JSON, &fx->in);
    assert_string_equal(s, "{\"findings\":[],\"summary\":{\"errors\":0,\"warnings\":0,"
                           "\"infos\":0,\"objects\":42}}\n");
    free(s);
    fx->in.findings = &fx->fs;
    s = render(REPORT_JSON, &fx->in);
    assert_string_equal(s, "{\"findings\":[],\"summary\":{\"errors\":0,\"warnings\":0,"
                           "\"infos\":0,\"objects\":42}}\n");
    free(s);
}

/* ---- sarif ---- */

static cJSON *sarif_run(const char *s, cJSON **root)
{
    cJSON *runs;

    *root = cJSON_Parse(s);
    assert_non_null(*root);
    runs = get(*root, "runs");
    assert_true(cJSON_IsArray(runs));
    assert_int_equal(cJSON_GetArraySize(runs), 1);
    return cJSON_GetArrayItem(runs, 0);
}

static void test_sarif_driver_and_rules(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_SARIF, &fx->in);
    cJSON *root, *run = sarif_run(s, &root), *driver, *rules, *r, *t;
    static const char *const levels[] = { "error", "error", "warning", "note" };
    static const char *const anchors[] = { "#drivernotinstalled", "#selectormatchesnodriver",
                                           "#claimunused", "#adminaccessset" };
    size_t i;

    assert_true(s[strlen(s) - 1] == '\n');
    assert_str_item(root, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    assert_str_item(root, "version", "2.1.0");
    driver = get(get(run, "tool"), "driver");
    assert_str_item(driver, "name", "dra-doctor");
    assert_str_item(driver, "version", "0.1.0");
    assert_str_item(driver, "informationUri", REPORT_INFORMATION_URI);
    rules = get(driver, "rules");
    assert_int_equal(cJSON_GetArraySize(rules), NRULES);
    for (i = 0; i < NRULES; i++) {
        char uri[256];

        r = cJSON_GetArrayItem(rules, (int)i);
        snprintf(uri, sizeof(uri), "%s%s", DOCS, anchors[i]);
        assert_str_item(r, "id", test_rules[i].code);
        assert_str_item(r, "name", test_rules[i].code);
        assert_str_item(get(r, "shortDescription"), "text", test_rules[i].summary);
        assert_str_item(get(r, "fullDescription"), "text", test_rules[i].summary);
        assert_str_item(r, "helpUri", uri);
        t = get(r, "help");
        assert_true(cJSON_IsString(get(t, "text")));
        assert_contains(get(t, "text")->valuestring, test_rules[i].summary);
        assert_contains(get(t, "text")->valuestring, uri);
        assert_contains(get(t, "markdown")->valuestring, uri);
        assert_str_item(get(r, "defaultConfiguration"), "level", levels[i]);
    }
    cJSON_Delete(root);
    free(s);
}

static void test_sarif_results(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_SARIF, &fx->in);
    cJSON *root, *run = sarif_run(s, &root), *res, *r, *loc, *phys, *art, *ll;

    res = get(run, "results");
    assert_int_equal(cJSON_GetArraySize(res), 5);

    r = cJSON_GetArrayItem(res, 0);
    assert_str_item(r, "ruleId", "SelectorMatchesNoDriver");
    assert_num_item(r, "ruleIndex", 1);
    assert_str_item(r, "level", "error");
    assert_str_item(get(r, "message"), "text",
                    "selector says \"gpu.nvdia.com\"\nline two, 100% sure: really"
                    " Fix: use driver \"gpu.nvidia.com\"");
    loc = get(r, "locations");
    assert_int_equal(cJSON_GetArraySize(loc), 1);
    phys = get(cJSON_GetArrayItem(loc, 0), "physicalLocation");
    art = get(phys, "artifactLocation");
    assert_str_item(art, "uri", "manifests/claim.yaml");
    assert_str_item(art, "uriBaseId", "%SRCROOT%");
    assert_num_item(get(phys, "region"), "startLine", 12);
    /* SARIF 2.1.0 nests logicalLocations in the location, not the result. */
    assert_null(cJSON_GetObjectItemCaseSensitive(r, "logicalLocations"));
    ll = get(cJSON_GetArrayItem(loc, 0), "logicalLocations");
    assert_int_equal(cJSON_GetArraySize(ll), 1);
    assert_str_item(cJSON_GetArrayItem(ll, 0), "fullyQualifiedName", "ResourceClaim/ml/gpu-claim");
    assert_str_item(cJSON_GetArrayItem(ll, 0), "name", "gpu-claim");
    assert_str_item(cJSON_GetArrayItem(ll, 0), "kind", "resource");

    /* Live finding: no file, so the location names only the object. */
    r = cJSON_GetArrayItem(res, 1);
    assert_str_item(r, "ruleId", "DriverNotInstalled");
    assert_num_item(r, "ruleIndex", 0);
    assert_str_item(get(r, "message"), "text",
                    "no ResourceSlice for gpu.nvidia.com Fix: install the driver");
    loc = get(r, "locations");
    assert_int_equal(cJSON_GetArraySize(loc), 1);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(loc, 0), "physicalLocation"));
    ll = get(cJSON_GetArrayItem(loc, 0), "logicalLocations");
    assert_str_item(cJSON_GetArrayItem(ll, 0), "fullyQualifiedName", "DeviceClass/gpu");

    /* Unknown line: the file is named but region is omitted; no fix, no " Fix:". */
    r = cJSON_GetArrayItem(res, 2);
    assert_str_item(r, "level", "warning");
    assert_str_item(get(r, "message"), "text", "no pod references it");
    phys = get(cJSON_GetArrayItem(get(r, "locations"), 0), "physicalLocation");
    assert_str_item(get(phys, "artifactLocation"), "uri", "manifests/claim.yaml");
    assert_null(cJSON_GetObjectItemCaseSensitive(phys, "region"));

    /* info -> note; "./" dropped, space and ':' percent-encoded. */
    r = cJSON_GetArrayItem(res, 3);
    assert_str_item(r, "level", "note");
    assert_num_item(r, "ruleIndex", 3);
    art = get(get(cJSON_GetArrayItem(get(r, "locations"), 0), "physicalLocation"),
              "artifactLocation");
    assert_str_item(art, "uri", "dir%20a/x%3Ay.yaml");
    assert_str_item(art, "uriBaseId", "%SRCROOT%");

    /* Absolute path: a file URI with no base; code not in the table: no ruleIndex. */
    r = cJSON_GetArrayItem(res, 4);
    assert_str_item(r, "ruleId", "LiveOnlyCode");
    assert_null(cJSON_GetObjectItemCaseSensitive(r, "ruleIndex"));
    art = get(get(cJSON_GetArrayItem(get(r, "locations"), 0), "physicalLocation"),
              "artifactLocation");
    assert_str_item(art, "uri", "file:///abs/p.yaml");
    assert_null(cJSON_GetObjectItemCaseSensitive(art, "uriBaseId"));
    cJSON_Delete(root);
    free(s);
}

/* Every ruleIndex must point at the rule whose id is the result's ruleId. */
static void test_sarif_rule_index_matches(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_SARIF, &fx->in);
    cJSON *root, *run = sarif_run(s, &root), *rules, *r;
    int indexed = 0;

    rules = get(get(get(run, "tool"), "driver"), "rules");
    cJSON_ArrayForEach(r, get(run, "results"))
    {
        cJSON *idx = cJSON_GetObjectItemCaseSensitive(r, "ruleIndex");
        if (!idx)
            continue;
        assert_true(cJSON_IsNumber(idx));
        assert_in_range(idx->valueint, 0, cJSON_GetArraySize(rules) - 1);
        assert_string_equal(get(cJSON_GetArrayItem(rules, idx->valueint), "id")->valuestring,
                            get(r, "ruleId")->valuestring);
        indexed++;
    }
    assert_int_equal(indexed, 4);
    cJSON_Delete(root);
    free(s);
}

static void test_sarif_minimal_input(void **state)
{
    struct fixture *fx = *state;
    char *s;
    cJSON *root, *run, *driver, *r;

    fx->in.docs_uri = NULL;
    fx->in.tool_version = NULL;
    s = render(REPORT_SARIF, &fx->in);
    run = sarif_run(s, &root);
    driver = get(get(run, "tool"), "driver");
    assert_null(cJSON_GetObjectItemCaseSensitive(driver, "version"));
    r = cJSON_GetArrayItem(get(driver, "rules"), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(r, "helpUri"));
    assert_str_item(get(r, "help"), "text", test_rules[0].summary);
    assert_int_equal(cJSON_GetArraySize(get(run, "results")), 0);
    cJSON_Delete(root);
    free(s);

    fx->in.rules = NULL;
    fx->in.nrules = 0;
    s = render(REPORT_SARIF, &fx->in);
    run = sarif_run(s, &root);
    assert_int_equal(cJSON_GetArraySize(get(get(get(run, "tool"), "driver"), "rules")), 0);
    cJSON_Delete(root);
    free(s);
}

/* ---- github ---- */

static void test_github_lines(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_GITHUB, &fx->in);

    assert_string_equal(
        s,
        "::error file=manifests/claim.yaml,line=12,title=SelectorMatchesNoDriver::"
        "selector says \"gpu.nvdia.com\"%0Aline two, 100%25 sure: really"
        " Fix: use driver \"gpu.nvidia.com\"\n"
        "::error title=DriverNotInstalled::no ResourceSlice for gpu.nvidia.com"
        " Fix: install the driver\n"
        "::warning file=manifests/claim.yaml,title=ClaimUnused::no pod references it\n"
        "::notice file=./dir a/x%3Ay.yaml,line=3,title=AdminAccessSet::admin Fix: drop adminAccess\n"
        "::warning file=/abs/p.yaml,line=7,title=LiveOnlyCode::m Fix: f\n");
    free(s);
}

static void test_github_property_escaping(void **state)
{
    struct fixture *fx = *state;
    char *s;

    add(&fx->fs, "X", DD_SEV_ERROR, "K", NULL, "n", "a,b:c%d\r\ne", 1, "m\r\n%:,", "f%\n");
    s = render(REPORT_GITHUB, &fx->in);
    assert_string_equal(s, "::error file=a%2Cb%3Ac%25d%0D%0Ae,line=1,title=X::m%0D%0A%25:, Fix: f%25%0A\n");
    free(s);
}

static void test_github_empty(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_GITHUB, &fx->in);

    assert_string_equal(s, "");
    free(s);
}

/* ---- text ---- */

static void test_text_grouping(void **state)
{
    struct fixture *fx = *state;
    char *s;

    fx->in.objects = 1;
    s = render(REPORT_TEXT, &fx->in);
    assert_string_equal(s,
                        "ResourceClaim ml/gpu-claim (manifests/claim.yaml:12)\n"
                        "  error[SelectorMatchesNoDriver]: selector says \"gpu.nvdia.com\"\n"
                        "    line two, 100% sure: really\n"
                        "    fix: use driver \"gpu.nvidia.com\"\n"
                        "  warning[ClaimUnused]: no pod references it\n"
                        "\n"
                        "DeviceClass gpu\n"
                        "  error[DriverNotInstalled]: no ResourceSlice for gpu.nvidia.com\n"
                        "    fix: install the driver\n"
                        "\n"
                        "DeviceClass gpu (./dir a/x:y.yaml:3)\n"
                        "  info[AdminAccessSet]: admin\n"
                        "    fix: drop adminAccess\n"
                        "\n"
                        "Pod default/p (/abs/p.yaml:7)\n"
                        "  warning[LiveOnlyCode]: m\n"
                        "    fix: f\n"
                        "\n"
                        "2 errors, 2 warnings, 1 info in 1 object\n");
    assert_null(strchr(s, '\033'));
    free(s);
}

/* The header names the earliest known line of the object, whatever the order. */
static void test_text_header_line(void **state)
{
    struct fixture *fx = *state;
    char *s;

    add(&fx->fs, "ClaimUnused", DD_SEV_WARNING, "ResourceClaim", "ns", "c", "f.yaml", 0, "a", "");
    add(&fx->fs, "ClaimUnused", DD_SEV_WARNING, "ResourceClaim", "ns", "c", "f.yaml", 9, "b", "");
    add(&fx->fs, "ClaimUnused", DD_SEV_WARNING, "ResourceClaim", "ns", "c", "f.yaml", 5, "c", "");
    add(&fx->fs, "ClaimUnused", DD_SEV_WARNING, "ResourceClaim", "ns", "d", "f.yaml", 0, "d", "");
    s = render(REPORT_TEXT, &fx->in);
    assert_string_equal(s, "ResourceClaim ns/c (f.yaml:5)\n"
                           "  warning[ClaimUnused]: a\n"
                           "  warning[ClaimUnused]: b\n"
                           "  warning[ClaimUnused]: c\n"
                           "\n"
                           "ResourceClaim ns/d (f.yaml)\n"
                           "  warning[ClaimUnused]: d\n"
                           "\n"
                           "4 warnings in 42 objects\n");
    free(s);
}

/* Input findings know their column: every format carries it, and only with its line. */
static void test_columns(void **state)
{
    struct fixture *fx = *state;
    cJSON *root, *f, *region;
    char *s;

    add(&fx->fs, "ClaimUnused", DD_SEV_ERROR, "Manifest", NULL, "x.yaml", "x.yaml", 4, "bad", "");
    fx->fs.v[0].col = 9;
    add(&fx->fs, "ClaimUnused", DD_SEV_ERROR, "Manifest", NULL, "y.yaml", "y.yaml", 0, "io", "");
    fx->fs.v[1].col = 3; /* a column without a line means nothing */
    s = render(REPORT_TEXT, &fx->in);
    assert_contains(s, "Manifest x.yaml (x.yaml:4:9)\n");
    assert_contains(s, "Manifest y.yaml (y.yaml)\n");
    free(s);
    s = render(REPORT_JSON, &fx->in);
    assert_non_null(root = cJSON_Parse(s));
    f = cJSON_GetArrayItem(get(root, "findings"), 0);
    assert_num_item(f, "column", 9);
    assert_true(cJSON_IsNull(get(cJSON_GetArrayItem(get(root, "findings"), 1), "column")));
    cJSON_Delete(root);
    free(s);
    s = render(REPORT_SARIF, &fx->in);
    assert_non_null(root = cJSON_Parse(s));
    region = get(get(cJSON_GetArrayItem(get(cJSON_GetArrayItem(get(cJSON_GetArrayItem(get(
                 root, "runs"), 0), "results"), 0), "locations"), 0), "physicalLocation"),
                 "region");
    assert_num_item(region, "startLine", 4);
    assert_num_item(region, "startColumn", 9);
    cJSON_Delete(root);
    free(s);
    s = render(REPORT_GITHUB, &fx->in);
    assert_contains(s, "::error file=x.yaml,line=4,col=9,title=ClaimUnused::bad\n");
    assert_contains(s, "::error file=y.yaml,title=ClaimUnused::io\n");
    free(s);
}

static void expect_summary(struct fixture *fx, size_t objects, const char *want)
{
    char *s, *last;

    fx->in.objects = objects;
    s = render(REPORT_TEXT, &fx->in);
    assert_true(strlen(s) > 0 && s[strlen(s) - 1] == '\n');
    s[strlen(s) - 1] = '\0';
    last = strrchr(s, '\n');
    assert_string_equal(last ? last + 1 : s, want);
    free(s);
}

static void test_text_summary_plurals(void **state)
{
    struct fixture *fx = *state;

    expect_summary(fx, 42, "no findings in 42 objects");
    expect_summary(fx, 1, "no findings in 1 object");
    expect_summary(fx, 0, "no findings in 0 objects");
    add(&fx->fs, "X", DD_SEV_ERROR, "K", NULL, "a", NULL, 0, "m", "");
    expect_summary(fx, 1, "1 error in 1 object");
    add(&fx->fs, "X", DD_SEV_ERROR, "K", NULL, "a", NULL, 0, "m", "");
    add(&fx->fs, "X", DD_SEV_WARNING, "K", NULL, "a", NULL, 0, "m", "");
    expect_summary(fx, 42, "2 errors, 1 warning in 42 objects");
    add(&fx->fs, "X", DD_SEV_INFO, "K", NULL, "a", NULL, 0, "m", "");
    add(&fx->fs, "X", DD_SEV_INFO, "K", NULL, "a", NULL, 0, "m", "");
    expect_summary(fx, 3, "2 errors, 1 warning, 2 infos in 3 objects");
    dd_findings_release(&fx->fs);
    add(&fx->fs, "X", DD_SEV_WARNING, "K", NULL, "a", NULL, 0, "m", "");
    add(&fx->fs, "X", DD_SEV_INFO, "K", NULL, "a", NULL, 0, "m", "");
    expect_summary(fx, 2, "1 warning, 1 info in 2 objects");
}

static void test_text_empty_is_one_line(void **state)
{
    struct fixture *fx = *state;
    char *s = render(REPORT_TEXT, &fx->in);

    assert_string_equal(s, "no findings in 42 objects\n");
    free(s);
}

static void test_text_color(void **state)
{
    struct fixture *fx = *state;
    char *s;

    fx->in.color = 1;
    s = render(REPORT_TEXT, &fx->in);
    assert_contains(s, "  \033[1;31merror[SelectorMatchesNoDriver]\033[0m: selector says");
    assert_contains(s, "  \033[33mwarning[ClaimUnused]\033[0m: no pod");
    assert_contains(s, "  \033[36minfo[AdminAccessSet]\033[0m: admin\n");
    assert_contains(s, "    \033[2mfix: install the driver\033[0m\n");
    free(s);

    /* Colour is for text only: machine formats never carry it. */
    s = render(REPORT_JSON, &fx->in);
    assert_null(strchr(s, '\033'));
    free(s);
    s = render(REPORT_GITHUB, &fx->in);
    assert_null(strchr(s, '\033'));
    free(s);

    fx->in.color = 0;
    s = render(REPORT_TEXT, &fx->in);
    assert_null(strchr(s, '\033'));
    free(s);
}

/* Names come from untrusted manifests: they must not reach the terminal raw. */
static void test_text_control_chars(void **state)
{
    struct fixture *fx = *state;
    char *s;

    add(&fx->fs, "X", DD_SEV_ERROR, "Pod", "ns", "evil\033[2J", "f\r.yaml", 2, "m\x07\tok",
        "fix\x7f");
    s = render(REPORT_TEXT, &fx->in);
    assert_null(strchr(s, '\033'));
    assert_null(strchr(s, '\r'));
    assert_null(strchr(s, '\x07'));
    assert_string_equal(s, "Pod ns/evil\\x1b[2J (f\\x0d.yaml:2)\n"
                           "  error[X]: m\\x07\tok\n"
                           "    fix: fix\\x7f\n"
                           "\n"
                           "1 error in 42 objects\n");
    free(s);
}

/* ---- out of memory ---- */

static int alloc_budget = -1; /* allocations cJSON may still make; -1: unlimited */

static void *budget_malloc(size_t n)
{
    if (alloc_budget == 0)
        return NULL;
    if (alloc_budget > 0)
        alloc_budget--;
    return malloc(n);
}

/*
 * Fails cJSON's k-th allocation for every k until the report succeeds: each
 * failure must return -1 with ENOMEM, leak nothing (ASan build) and print
 * nothing, so a consumer never sees half a JSON document.
 */
static void check_oom(struct fixture *fx, enum report_format f)
{
    cJSON_Hooks hooks = { budget_malloc, free };
    int k, rc;

    cJSON_InitHooks(&hooks);
    for (k = 0; k < 100000; k++) {
        char *s = NULL;
        size_t n = 0;
        FILE *m = open_memstream(&s, &n);

        assert_non_null(m);
        alloc_budget = k;
        errno = 0;
        rc = report_write(m, f, &fx->in);
        alloc_budget = -1;
        fclose(m);
        if (rc == 0) {
            assert_true(n > 0);
            free(s);
            break;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(errno, ENOMEM);
        assert_int_equal(n, 0);
        free(s);
    }
    cJSON_InitHooks(NULL);
    assert_true(k > 10); /* the budget did bite */
    assert_true(k < 100000);
}

static void test_json_oom(void **state)
{
    check_oom(*state, REPORT_JSON);
}

static void test_sarif_oom(void **state)
{
    check_oom(*state, REPORT_SARIF);
}

/* ---- errors ---- */

static void test_write_error(void **state)
{
    struct fixture *fx = *state;
    enum report_format f;
    FILE *full;

    for (f = REPORT_TEXT; f <= REPORT_GITHUB; f++) {
        full = fopen("/dev/full", "w");
        if (!full)
            skip();
        assert_int_equal(report_write(full, f, &fx->in), -1);
        fclose(full);
    }
}

static void test_bad_format(void **state)
{
    struct fixture *fx = *state;
    char *s = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&s, &n);

    assert_non_null(m);
    assert_int_equal(report_write(m, (enum report_format)99, &fx->in), -1);
    fclose(m);
    assert_int_equal(n, 0);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test_setup_teardown(test_json_structure, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_json_empty, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_sarif_driver_and_rules, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_sarif_results, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_sarif_rule_index_matches, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_sarif_minimal_input, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_github_lines, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_github_property_escaping, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_github_empty, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_text_grouping, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_text_header_line, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_columns, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_text_summary_plurals, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_text_empty_is_one_line, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_text_color, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_text_control_chars, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_json_oom, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_sarif_oom, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_write_error, setup_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_bad_format, setup_mixed, teardown),
    };

    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
