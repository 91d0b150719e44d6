/*
 * test_cel_eval.c - evaluation against dra-example-driver devices: operators,
 * error absorption, missing attributes, functions, semver, quantity, cost.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#include "cel/cel.h"
#include "formats/yaml.h"

#include <cjson/cJSON.h>
#include "cel/cel_int.h"

/* gpu-3 as the example driver publishes it (dra-facts.md section 5). */
static const struct cel_attr example_attrs[] = {
    { .domain = "gpu.example.com", .name = "model", .kind = CEL_ATTR_STRING, .s = "LATEST-GPU-MODEL" },
    { .domain = "gpu.example.com", .name = "index", .kind = CEL_ATTR_INT, .i = 3 },
    { .domain = "gpu.example.com", .name = "uuid", .kind = CEL_ATTR_STRING, .s = "gpu-18db0e85-99e9-c746-8531-ffeb86328b39" },
    { .domain = "gpu.example.com", .name = "driverVersion", .kind = CEL_ATTR_VERSION, .s = "1.0.0" },
    { .domain = "other.vendor.io", .name = "healthy", .kind = CEL_ATTR_BOOL, .b = 1 },
};
static const struct cel_capacity example_caps[] = {
    {"gpu.example.com", "memory", "80Gi"},
    {"gpu.example.com", "compute", "100"},
};
static const struct cel_device example = {
    "gpu.example.com", example_attrs, 5, example_caps, 2, 0,
};

/*
 * The shared case file: every case also runs through Kubernetes' own CEL code
 * (scripts/cel-differential.sh with e2e/peers/celoracle), so each expectation
 * here is what the API server and the scheduler do, not what we think.
 */
#define CASES "tests/data/cel/cases.json"

struct json_device {
    struct cel_device dev;
    struct cel_attr attrs[32];
    struct cel_capacity caps[32];
    int64_t ints[32][8];
    int bools[32][8];
    const char *strs[32][8];
};

/* The resource.k8s.io/v1 device JSON of the case file, as lib/model/dra.c reads a slice. */
static void device_from_json(const cJSON *j, struct json_device *d)
{
    const cJSON *it;
    size_t na = 0, nc = 0;

    memset(d, 0, sizeof(*d));
    d->dev.driver = cJSON_GetObjectItem(j, "driver")->valuestring;
    d->dev.allow_multiple_allocations = cJSON_IsTrue(cJSON_GetObjectItem(j, "allowMultipleAllocations"));
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "attributes")) {
        struct cel_attr *a = &d->attrs[na];
        const cJSON *v = it->child;
        const char *slash = strchr(it->string, '/');
        assert_true(na < 32 && v);
        if (slash) {
            a->domain = strndup(it->string, (size_t)(slash - it->string));
            a->name = slash + 1;
        } else {
            a->name = it->string;
        }
        if (!strcmp(v->string, "int")) {
            a->kind = CEL_ATTR_INT;
            a->i = v->valuestring ? strtoll(v->valuestring, NULL, 10) : (int64_t)v->valuedouble;
        } else if (!strcmp(v->string, "bool")) {
            a->kind = CEL_ATTR_BOOL;
            a->b = cJSON_IsTrue(v);
        } else if (!strcmp(v->string, "string") || !strcmp(v->string, "version")) {
            a->kind = v->string[0] == 's' ? CEL_ATTR_STRING : CEL_ATTR_VERSION;
            a->s = v->valuestring;
        } else {
            const cJSON *e;
            size_t k = 0;
            a->kind = !strcmp(v->string, "ints") ? CEL_ATTR_INTS
                      : !strcmp(v->string, "bools") ? CEL_ATTR_BOOLS
                      : !strcmp(v->string, "strings") ? CEL_ATTR_STRINGS : CEL_ATTR_VERSIONS;
            cJSON_ArrayForEach(e, v) {
                assert_true(k < 8);
                d->ints[na][k] = (int64_t)e->valuedouble;
                d->bools[na][k] = cJSON_IsTrue(e);
                d->strs[na][k++] = e->valuestring;
            }
            a->nv = (unsigned)k;
            if (a->kind == CEL_ATTR_INTS)
                a->iv = d->ints[na];
            else if (a->kind == CEL_ATTR_BOOLS)
                a->bv = d->bools[na];
            else
                a->sv = d->strs[na];
        }
        na++;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "capacity")) {
        assert_true(nc < 32);
        d->caps[nc].name = it->string;
        d->caps[nc++].quantity = cJSON_GetObjectItem(it, "value")->valuestring;
    }
    d->dev.attrs = d->attrs;
    d->dev.nattrs = na;
    d->dev.caps = d->caps;
    d->dev.ncaps = nc;
}

static void free_domains(struct json_device *d)
{
    for (size_t i = 0; i < d->dev.nattrs; i++)
        free((char *)d->attrs[i].domain);
}

static enum dd_rc keep_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    (void)pos; (void)npos;
    *(cJSON **)ctx = root;
    return DD_OK;
}

/* Reads the case file through lib/formats/yaml, as lint reads a manifest (exact integers). */
static cJSON *load_cases(void)
{
    struct ydoc_limits lim = { 64, 2, 100 };
    cJSON *doc = NULL;
    struct ydoc_sink sink = { &doc, keep_doc, NULL, NULL, NULL };
    FILE *f = fopen(CASES, "rb");
    static char buf[1 << 20];
    size_t len;

    assert_non_null(f);
    len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_true(len < sizeof(buf));
    assert_int_equal(ydoc_parse_stream(buf, len, &lim, &sink), DD_OK);
    assert_non_null(doc);
    return doc;
}

static void test_case_file(void **state)
{
    cJSON *doc = load_cases(), *c;
    size_t n = 0;

    (void)state;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
        const char *src = cJSON_GetObjectItem(c, "expression")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "expect")->valuestring;
        const cJSON *detail = cJSON_GetObjectItem(c, "detail"), *gates = cJSON_GetObjectItem(c, "gates");
        const char *devname = cJSON_GetObjectItem(c, "device")->valuestring;
        struct cel_env env = CEL_ENV_DEFAULT;
        struct json_device d;
        struct dd_err err;
        struct cel_program *p;
        const char *got;

        if (cJSON_IsTrue(cJSON_GetObjectItem(gates, "DRAListTypeAttributes")))
            env.features |= CEL_FEATURE_LIST_ATTRIBUTES;
        device_from_json(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "devices"), devname), &d);
        p = cel_compile_env(src, strlen(src), NULL, &env, &err);
        if (!p) {
            got = "compile_error";
        } else {
            enum cel_verdict v = cel_eval_device(p, &d.dev, NULL, &err);
            /* A device built once (as a model builds its devices) answers alike, whatever the
             * program's gates, with the same text. */
            struct cel_device_set *set = cel_device_set_new();
            const struct cel_device_value *val = set ? cel_device_value(set, &d.dev) : NULL;
            struct dd_err err2;
            assert_non_null(val);
            assert_int_equal(cel_eval_value(p, val, NULL, &err2), v);
            if (v == CEL_ERROR)
                assert_string_equal(err2.msg, err.msg);
            cel_device_set_free(set);
            got = v == CEL_TRUE ? "true" : v == CEL_FALSE ? "false" : "runtime_error";
            if (v != CEL_ERROR)
                err.msg[0] = '\0';
        }
        if (strcmp(got, want) != 0)
            fail_msg("case %zu \"%s\": got %s (%s), want %s", n, src, got, err.msg, want);
        if (detail && !strstr(err.msg, detail->valuestring))
            fail_msg("case %zu \"%s\": \"%s\" does not contain \"%s\"", n, src, err.msg,
                     detail->valuestring);
        cel_program_free(p);
        free_domains(&d);
        n++;
    }
    assert_true(n > 100);
    cJSON_Delete(doc);
}

/* Compiled as the scheduler does (a stored object: no estimated-cost check), so the
 * runtime limits are what is tested. */
static enum cel_verdict eval_with(const char *src, const struct cel_device *dev,
                                  const struct cel_limits *lim, struct dd_err *err)
{
    struct cel_env env = CEL_ENV_DEFAULT;
    struct cel_program *p;

    env.stored = 1;
    p = cel_compile_env(src, strlen(src), lim, &env, err);
    enum cel_verdict v;

    if (!p)
        fail_msg("compile \"%s\": %s", src, err->msg);
    v = cel_eval_device(p, dev, lim, err);
    cel_program_free(p);
    return v;
}

/* One selector over a list-valued attribute in release 1.<minor>, as a new object. */
static enum cel_verdict eval_release(int minor, const char *src, const struct cel_device *dev,
                                     uint64_t *cost, struct dd_err *err)
{
    struct cel_env env = CEL_ENV_DEFAULT;
    struct cel_program *p;
    enum cel_verdict v;

    env.kube_minor = minor;
    env.features |= CEL_FEATURE_LIST_ATTRIBUTES;
    p = cel_compile_env(src, strlen(src), NULL, &env, err);
    if (!p)
        fail_msg("compile \"%s\" for 1.%d: %s", src, minor, err->msg);
    v = cel_eval_device_cost(p, dev, NULL, cost, err);
    cel_program_free(p);
    return v;
}

/* 1.37 hands list values to every selector whatever DRAListTypeAttributes says, and its
 * includes() (the lists library's) has no 48-value limit and costs a traversal. */
static void test_list_attributes_by_release(void **state)
{
    static const char *const names[] = { "fish", "bird" };
    static const char *many[60];
    struct cel_attr a = { .name = "names", .kind = CEL_ATTR_STRINGS, .nv = 2, .sv = names };
    struct cel_device dev = { "dra.example.com", &a, 1, NULL, 0, 0 };
    struct cel_env env = CEL_ENV_DEFAULT;
    const char *src = "device.attributes['dra.example.com'].names.size() == 2";
    struct cel_program *p;
    struct dd_err err;
    uint64_t c36, c37;
    size_t i;

    (void)state;
    for (int minor = 36; minor <= 37; minor++) {
        env.kube_minor = minor;
        p = cel_compile_env(src, strlen(src), NULL, &env, &err);
        assert_non_null(p);
        assert_int_equal(cel_eval_device(p, &dev, NULL, &err),
                         minor == 36 ? CEL_ERROR : CEL_TRUE);
        if (minor == 36)
            assert_string_equal(err.msg, "attribute names: unsupported attribute value");
        cel_program_free(p);
    }
    for (i = 0; i < 60; i++)
        many[i] = i == 59 ? "bird" : "a fish of twenty....";
    a.nv = 60;
    a.sv = many;
    src = "device.attributes['dra.example.com'].names.includes('bird')";
    assert_int_equal(eval_release(36, src, &dev, &c36, &err), CEL_ERROR);
    assert_string_equal(err.msg, "'includes' function cannot be applied to lists longer than "
                                 "48 values");
    assert_int_equal(eval_release(37, src, &dev, &c37, &err), CEL_TRUE);
    (void)c36;
    /* The traversal: 59 strings of 20 bytes at 0.1 each. */
    assert_true(c37 >= 59 * 2);
    assert_true(c37 < 59 * 2 + 20);
}

static void test_exact_missing_key_message(void **state)
{
    struct dd_err err;

    (void)state;
    assert_int_equal(eval_with("device.attributes['gpu.example.com'].productName == 'A100'",
                               &example, NULL, &err),
                     CEL_ERROR);
    assert_string_equal(err.msg, "no such key: productName");
}

static void test_cost_limit(void **state)
{
    struct cel_limits lim = {10240, 100, 20};
    struct dd_err err;

    (void)state;
    assert_int_equal(eval_with("device.driver == 'gpu.example.com'", &example, &lim, &err),
                     CEL_TRUE);
    assert_int_equal(eval_with("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0 && x < 100)",
                               &example, &lim, &err),
                     CEL_ERROR);
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_string_equal(err.msg, "operation cancelled: actual cost limit exceeded");
    /* The cost error is not absorbed by || . */
    assert_int_equal(eval_with("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0) || true",
                               &example, &lim, &err),
                     CEL_ERROR);
    assert_int_equal(err.rc, DD_ETOOBIG);
    /* Exponential blow-up by nested macros is cut off by the default limit. */
    assert_int_equal(
        eval_with("[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, "
                  "[1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, "
                  "[1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, true))))))",
                  &example, NULL, &err),
        CEL_ERROR);
    assert_contains(err.msg, "actual cost limit exceeded");
    /* So is string doubling. */
    assert_int_equal(
        eval_with("[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25].map(x, "
                  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' + "
                  "'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb').size() == 25",
                  &example, &lim, &err),
        CEL_ERROR);
}

/* Evaluated in full and through a device value (which skips devices the driver tests
 * exclude): the same verdict and text. */
static enum cel_verdict eval_both(const char *src, const struct cel_limits *lim, int excluded,
                                  struct dd_err *err)
{
    struct cel_env env = CEL_ENV_DEFAULT;
    struct cel_device_set *set = cel_device_set_new();
    const struct cel_device_value *val = set ? cel_device_value(set, &example) : NULL;
    struct cel_program *p;
    struct dd_err err2;
    enum cel_verdict v;

    env.stored = 1; /* no estimated-cost check at compile time: the runtime limit decides */
    if (!(p = cel_compile_env(src, strlen(src), lim, &env, err)))
        fail_msg("compile \"%s\": %s", src, err->msg);
    assert_non_null(val);
    assert_int_equal(cel_program_excludes_driver(p, example.driver, lim), excluded);
    v = cel_eval_device(p, &example, lim, err);
    assert_int_equal(cel_eval_value(p, val, lim, &err2), v);
    if (v == CEL_ERROR)
        assert_string_equal(err2.msg, err->msg);
    cel_program_free(p);
    cel_device_set_free(set);
    return v;
}

/* A device of a driver the selector's driver tests exclude is false whatever the rest says,
 * errors included (`false && error` is false in CEL), unless the cost limit may stop the
 * evaluation first. */
static void test_driver_excluded(void **state)
{
    struct cel_limits lim = {10240, 100, 20};
    struct dd_err err;

    (void)state;
    assert_int_equal(eval_both("device.attributes['x.io'].y == 1 && device.driver == 'x.io'",
                               NULL, 1, &err),
                     CEL_FALSE);
    assert_int_equal(eval_both("(device.driver == 'a.io' && 1 / 0 == 1) || "
                               "(device.driver in ['b.io', 'c.io'] && "
                               "device.attributes['b.io'].z)", NULL, 1, &err),
                     CEL_FALSE);
    assert_int_equal(eval_both("device.driver == 'a.io' && device.driver == 'b.io'", NULL, 1,
                               &err),
                     CEL_FALSE);
    /* Its own driver is evaluated: the error stands. */
    assert_int_equal(eval_both("device.attributes['x.io'].y == 1 && "
                               "device.driver == 'gpu.example.com'", NULL, 0, &err),
                     CEL_ERROR);
    assert_string_equal(err.msg, "no such key: y");
    /* Not a driver test all the way up: evaluated. */
    assert_int_equal(eval_both("device.driver == 'x.io' || device.attributes['x.io'].y == 1",
                               NULL, 0, &err),
                     CEL_ERROR);
    /* Past the cost limit the evaluation stops before the driver test decides. */
    assert_int_equal(eval_both("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0 && x < 100) && "
                               "device.driver == 'x.io'", &lim, 0, &err),
                     CEL_ERROR);
    assert_int_equal(err.rc, DD_ETOOBIG);
}

static void test_empty_device(void **state)
{
    struct cel_device dev = {"gpu.example.com", NULL, 0, NULL, 0, 1};
    struct dd_err err;

    (void)state;
    assert_int_equal(eval_with("device.allowMultipleAllocations", &dev, NULL, &err), CEL_TRUE);
    assert_int_equal(eval_with("size(device.attributes) == 0", &dev, NULL, &err), CEL_TRUE);
    assert_int_equal(eval_with("device.attributes['gpu.example.com'].model == 'x'", &dev, NULL,
                               &err),
                     CEL_ERROR);
    assert_string_equal(err.msg, "no such key: model");
}

static void test_unqualified_domain(void **state)
{
    /* A NULL domain means the driver's own domain. */
    static const struct cel_attr attrs[] = {{ .domain = NULL, .name = "type", .kind = CEL_ATTR_STRING, .s = "gpu" }};
    struct cel_device dev = {"gpu.nvidia.com", attrs, 1, NULL, 0, 0};
    struct dd_err err;

    (void)state;
    assert_int_equal(
        eval_with("device.driver == 'gpu.nvidia.com' && "
                  "device.attributes['gpu.nvidia.com'].type == 'gpu'",
                  &dev, NULL, &err),
        CEL_TRUE);
}

/* Attributes and capacities of several domains, interleaved, one without a name and one
 * named twice: each domain is a map of its own (its size what the device has in it), the
 * first definition wins, and a device value built once answers as a device built per call. */
static void test_domains(void **state)
{
    static const struct cel_attr attrs[] = {
        { .domain = "a.com", .name = "x", .kind = CEL_ATTR_INT, .i = 1 },
        { .domain = "b.com", .name = "y", .kind = CEL_ATTR_STRING, .s = "why" },
        { .domain = "a.com", .name = "z", .kind = CEL_ATTR_BOOL, .b = 1 },
        { .domain = NULL, .name = "w", .kind = CEL_ATTR_INT, .i = 7 },
        { .domain = "c.com", .name = NULL, .kind = CEL_ATTR_INT, .i = 9 },
        { .domain = "a.com", .name = "x", .kind = CEL_ATTR_INT, .i = 2 },
    };
    static const struct cel_capacity caps[] = {
        { .domain = "b.com", .name = "mem", .quantity = "1Gi" },
        { .domain = NULL, .name = "cores", .quantity = "8" },
    };
    static const char *const yes[] = {
        "size(device.attributes) == 4 && size(device.capacity) == 2",
        "size(device.attributes['a.com']) == 2 && device.attributes['a.com'].x == 1",
        "device.attributes['a.com'].z && device.attributes['b.com'].y == 'why'",
        "device.attributes['drv.example.com'].w == 7 && size(device.attributes['c.com']) == 0",
        "device.capacity['b.com'].mem.compareTo(quantity('1Gi')) == 0",
        "device.capacity['drv.example.com'].cores.isGreaterThan(quantity('7'))",
        "size(device.capacity['nowhere.com']) == 0 && !device.allowMultipleAllocations",
        "device.driver == 'drv.example.com'",
    };
    struct cel_device dev = { "drv.example.com", attrs, 6, caps, 2, 0 };
    struct cel_device bare = { "drv.example.com", NULL, 0, NULL, 0, 0 };
    struct cel_env env = CEL_ENV_DEFAULT;
    struct cel_device_set *set = cel_device_set_new();
    const struct cel_device_value *val, *bval;
    struct dd_err err;
    size_t i;

    (void)state;
    assert_non_null(set);
    assert_non_null(val = cel_device_value(set, &dev));
    assert_non_null(bval = cel_device_value(set, &bare));
    env.stored = 1;
    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        struct cel_program *p = cel_compile_env(yes[i], strlen(yes[i]), NULL, &env, &err);
        if (!p)
            fail_msg("compile \"%s\": %s", yes[i], err.msg);
        if (cel_eval_device(p, &dev, NULL, &err) != CEL_TRUE ||
            cel_eval_value(p, val, NULL, &err) != CEL_TRUE)
            fail_msg("\"%s\" is not true: %s", yes[i], err.msg);
        cel_program_free(p);
    }
    /* A device without attributes or capacities: every domain empty, built or not. */
    assert_int_equal(eval_with("size(device.attributes['a.com']) + size(device.capacity) == 0",
                               &bare, NULL, &err),
                     CEL_TRUE);
    {
        const char *src = "size(device.attributes) == 0 && size(device.capacity['b.com']) == 0";
        struct cel_program *p = cel_compile_env(src, strlen(src), NULL, &env, &err);
        assert_non_null(p);
        assert_int_equal(cel_eval_value(p, bval, NULL, &err), CEL_TRUE);
        cel_program_free(p);
    }
    cel_device_set_free(set);
}

/* `x.orValue(y)` on a receiver that is no optional: cel-go v0.26 (Kubernetes 1.34-1.36)
 * returns x, v0.29 (1.37) fails; y is never evaluated then. */
static void test_or_value_not_optional(void **state)
{
    static const struct cel_attr attrs[] = {{ .domain = NULL, .name = "healthy", .kind = CEL_ATTR_STRING, .s = "yes" }};
    struct cel_device dev = {"dra.example.com", attrs, 1, NULL, 0, 0};
    static const char src[] = "device.attributes['dra.example.com'].healthy.orValue(1 / 0) == 0";

    (void)state;
    for (int minor = CEL_KUBE_MINOR_MIN; minor <= CEL_KUBE_MINOR_DEFAULT; minor++) {
        struct cel_env env = CEL_ENV_DEFAULT;
        struct dd_err err;
        struct cel_program *p;

        env.kube_minor = minor;
        p = cel_compile_env(src, strlen(src), NULL, &env, &err);
        assert_non_null(p);
        if (minor < 37) {
            assert_int_equal(cel_eval_device(p, &dev, NULL, &err), CEL_FALSE);
        } else {
            assert_int_equal(cel_eval_device(p, &dev, NULL, &err), CEL_ERROR);
            assert_string_equal(err.msg, "no such overload");
        }
        cel_program_free(p);
    }
}

static void test_bad_capacity(void **state)
{
    static const struct cel_capacity caps[] = {{"d", "mem", "lots"}};
    struct cel_device dev = {"d", NULL, 0, caps, 1, 0};
    struct dd_err err;

    (void)state;
    assert_int_equal(eval_with("sign(device.capacity['d'].mem) == 1", &dev, NULL, &err),
                     CEL_ERROR);
    assert_contains(err.msg, "capacity mem");
    assert_int_equal(eval_with("has(device.capacity['d'].mem)", &dev, NULL, &err), CEL_TRUE);
}

/* resource.ParseQuantity's grammar and rounding (the oracle agrees on each: cases.json). */
static void test_quantity_parse(void **state)
{
    static const struct {
        const char *s;
        int rc;             /* 0 a quantity, -1 none, -2 one beyond what lib/cel holds */
        long long nano_hi;  /* value / 10^9 */
        long long nano_lo;  /* value % 10^9 */
    } q[] = {
        {"80Gi", 0, 85899345920LL, 0}, {"100", 0, 100, 0},      {"500m", 0, 0, 500000000},
        {"1n", 0, 0, 1},               {"0.1n", 0, 0, 1},        {"1.5", 0, 1, 500000000},
        {"+2k", 0, 2000, 0},           {"-3M", 0, -3000000, 0},  {"1e-3", 0, 0, 1000000},
        {"12E-1", 0, 1, 200000000},    {"5.", 0, 5, 0},          {".5", 0, 0, 500000000},
        {"1Ti", 0, 1099511627776LL, 0}, {"0", 0, 0, 0},          {"", -1, 0, 0},
        {"Gi", 0, 0, 0},               {"+", 0, 0, 0},           {"9Ei", 0, INT64_MAX, 0},
        {"1.5Ki", 0, 1536, 0},         {"1e-100", 0, 0, 1},      {"1GB", -1, 0, 0},
        {"1.2.3", -1, 0, 0},           {"1 Gi", -1, 0, 0},       {"1e", -1, 0, 0},
        {"1e99999", -2, 0, 0},         {"99999999999999999999999999999999999999E", -2, 0, 0},
        {"1e99999999999999999999", -1, 0, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        __int128 v = 0;
        int rc = cel__quantity_parse(q[i].s, strlen(q[i].s), &v);
        if (rc != q[i].rc)
            fail_msg("quantity \"%s\": %d, want %d", q[i].s, rc, q[i].rc);
        if (!rc && ((long long)(v / 1000000000) != q[i].nano_hi ||
                    (long long)(v % 1000000000) != q[i].nano_lo))
            fail_msg("quantity \"%s\": %lld.%09lld", q[i].s, (long long)(v / 1000000000),
                     (long long)(v % 1000000000));
    }
}

static void test_semver_order(void **state)
{
    /* The precedence chain from semver.org section 11. */
    static const char *const chain[] = {
        "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
        "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0",
    };
    struct cel__arena a = {0};
    struct cel__semver v[sizeof(chain) / sizeof(chain[0])];
    const char *why;

    (void)state;
    for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++)
        assert_int_equal(cel__semver_parse(&a, chain[i], strlen(chain[i]), 0, &v[i], &why), 0);
    for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++) {
        for (size_t j = 0; j < sizeof(chain) / sizeof(chain[0]); j++) {
            int want = i < j ? -1 : i > j;
            if (cel__semver_cmp(&v[i], &v[j]) != want)
                fail_msg("%s vs %s: want %d", chain[i], chain[j], want);
        }
    }
    assert_int_equal(cel__semver_parse(&a, "1.0", 3, 0, &v[0], &why), -1);
    assert_contains(why, "Major.Minor.Patch");
    assert_int_equal(cel__semver_parse(&a, "1.0.0-", 6, 0, &v[0], &why), -1);
    assert_int_equal(cel__semver_parse(&a, "1.0.0+", 6, 0, &v[0], &why), -1);
    assert_int_equal(cel__semver_parse(&a, "1.a.0", 5, 0, &v[0], &why), -1);
    assert_int_equal(cel__semver_parse(&a, "v1", 2, 1, &v[0], &why), 0);
    assert_string_equal(v[0].text, "1.0.0");
    cel__arena_free(&a);
}

/* One program, many threads: evaluation must not write to the program. */
struct thread_arg {
    const struct cel_program *p;
    int bad;
};

static void *worker(void *arg)
{
    struct thread_arg *t = arg;

    for (int i = 0; i < 200; i++) {
        struct dd_err err;
        if (cel_eval_device(t->p, &example, NULL, &err) != CEL_TRUE)
            t->bad++;
    }
    return NULL;
}

static void test_reentrant(void **state)
{
    const char *src = "device.attributes['gpu.example.com'].model.matches('^LATEST') && "
                      "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('1Gi')) "
                      "&& [1, 2, 3].exists(x, x == device.attributes['gpu.example.com'].index)";
    struct dd_err err;
    struct cel_program *p = cel_compile(src, strlen(src), NULL, &err);
    pthread_t th[4];
    struct thread_arg args[4];

    (void)state;
    assert_non_null(p);
    for (int i = 0; i < 4; i++) {
        args[i].p = p;
        args[i].bad = 0;
        assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].bad, 0);
    }
    cel_program_free(p);
}

static void explain_is(const char *src, enum cel_verdict want, const char *text)
{
    struct dd_err err;
    struct cel_program *p = cel_compile(src, strlen(src), NULL, &err);
    char buf[1024];

    if (!p)
        fail_msg("compile \"%s\": %s", src, err.msg);
    assert_int_equal(cel_explain_device(p, &example, buf, sizeof(buf), &err), want);
    assert_string_equal(buf, text);
    cel_program_free(p);
}

/* The deciding sub-expression and the values it saw (what `dra-doctor explain` prints). */
static void test_explain(void **state)
{
    (void)state;
    explain_is("device.driver == 'gpu.example.com'", CEL_TRUE, "");
    explain_is("device.driver == 'gpu.example.com' && "
               "device.attributes['gpu.example.com'].model == 'H100'", CEL_FALSE,
               "device.attributes[\"gpu.example.com\"].model == \"H100\" is false: "
               "device.attributes[\"gpu.example.com\"].model is \"LATEST-GPU-MODEL\"");
    /* || false: both sides, each with its values. */
    explain_is("device.attributes['gpu.example.com'].index > 5 || device.driver == 'x'",
               CEL_FALSE,
               "device.attributes[\"gpu.example.com\"].index > 5 is false: "
               "device.attributes[\"gpu.example.com\"].index is 3; and "
               "device.driver == \"x\" is false: device.driver is \"gpu.example.com\"");
    /* An error: the innermost failing operand, not what absorbed nothing. */
    explain_is("device.driver == 'gpu.example.com' && "
               "10 / (device.attributes['gpu.example.com'].index - 3) > 1", CEL_ERROR,
               "10 / (device.attributes[\"gpu.example.com\"].index - 3) fails: division by zero: "
               "device.attributes[\"gpu.example.com\"].index - 3 is 0");
    explain_is("device.attributes['gpu.example.com'].modle == 'x'", CEL_ERROR,
               "device.attributes[\"gpu.example.com\"].modle fails: no such key: modle: "
               "device.attributes[\"gpu.example.com\"] is {\"model\": \"LATEST-GPU-MODEL\", "
               "\"index\": 3, \"uuid\": \"gpu-18db0e85-99e9-c746-8531-ffeb86328b39\", "
               "\"driverVersion\": semver(\"1.0.0\")}");
    explain_is("!device.attributes['other.vendor.io'].healthy", CEL_FALSE,
               "device.attributes[\"other.vendor.io\"].healthy is true");
}

static void test_null_args(void **state)
{
    struct dd_err err;

    (void)state;
    assert_int_equal(cel_eval_device(NULL, &example, NULL, &err), CEL_ERROR);
    assert_int_equal(err.rc, DD_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_case_file),
        cmocka_unit_test(test_exact_missing_key_message),
        cmocka_unit_test(test_list_attributes_by_release),
        cmocka_unit_test(test_cost_limit),
        cmocka_unit_test(test_driver_excluded),
        cmocka_unit_test(test_empty_device),
        cmocka_unit_test(test_unqualified_domain),
        cmocka_unit_test(test_domains),
        cmocka_unit_test(test_or_value_not_optional),
        cmocka_unit_test(test_bad_capacity),
        cmocka_unit_test(test_quantity_parse),
        cmocka_unit_test(test_semver_order),
        cmocka_unit_test(test_reentrant),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_null_args),
    };
    return cmocka_run_group_tests_name("cel_eval", tests, NULL, NULL);
}
