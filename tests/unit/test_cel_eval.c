/*
 * test_cel_eval.c - evaluation against dra-example-driver devices: operators,
 * error absorption, missing attributes, functions, semver, quantity, cost.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#include "cel.h"
#include "cel/cel_int.h"

/* gpu-3 as the example driver publishes it (dra-facts.md section 5). */
static const struct cel_attr example_attrs[] = {
    {"gpu.example.com", "model", CEL_ATTR_STRING, 0, 0, "LATEST-GPU-MODEL"},
    {"gpu.example.com", "index", CEL_ATTR_INT, 3, 0, NULL},
    {"gpu.example.com", "uuid", CEL_ATTR_STRING, 0, 0, "gpu-18db0e85-99e9-c746-8531-ffeb86328b39"},
    {"gpu.example.com", "driverVersion", CEL_ATTR_VERSION, 0, 0, "1.0.0"},
    {"other.vendor.io", "healthy", CEL_ATTR_BOOL, 0, 1, NULL},
    {"other.vendor.io", "fw", CEL_ATTR_VERSION, 0, 0, "not-a-version"},
};
static const struct cel_capacity example_caps[] = {
    {"gpu.example.com", "memory", "80Gi"},
    {"gpu.example.com", "compute", "100"},
};
static const struct cel_device example = {
    "gpu.example.com", example_attrs, 6, example_caps, 2, 0,
};

struct eval_case {
    const char *src;
    enum cel_verdict want;
    const char *err; /* substring of the runtime error, CEL_ERROR only */
};

static const struct eval_case cases[] = {
    /* Selectors from the field. */
    {"device.driver == 'gpu.example.com'", CEL_TRUE, NULL},
    {"device.driver == \"gpu.intel.com\"", CEL_FALSE, NULL},
    {"device.capacity['gpu.example.com'].memory.compareTo(quantity('4Gi')) >= 0", CEL_TRUE, NULL},
    {"device.capacity['gpu.example.com'].memory.compareTo(quantity('81Gi')) >= 0", CEL_FALSE, NULL},
    {"device.attributes[\"gpu.example.com\"].driverVersion.isGreaterThan(semver(\"0.0.1\"))",
     CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].driverVersion.isLessThan(semver('1.0.1'))", CEL_TRUE,
     NULL},
    {"device.attributes['gpu.example.com'].driverVersion.compareTo(semver('1.0.0')) == 0",
     CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].driverVersion.major() == 1", CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'", CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].index == 3", CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].index < 4u", CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].uuid.startsWith('gpu-')", CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com']['model'].endsWith('MODEL')", CEL_TRUE, NULL},
    {"device.attributes['other.vendor.io'].healthy", CEL_TRUE, NULL},
    {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
     CEL_FALSE, NULL},
    {"!device.allowMultipleAllocations", CEL_TRUE, NULL},
    /* Missing attributes and domains. */
    {"device.attributes['gpu.example.com'].productName == 'x'", CEL_ERROR,
     "no such key: productName"},
    {"has(device.attributes['gpu.example.com'].productName)", CEL_FALSE, NULL},
    {"has(device.attributes['gpu.example.com'].model)", CEL_TRUE, NULL},
    {"'productName' in device.attributes['gpu.example.com']", CEL_FALSE, NULL},
    {"'model' in device.attributes['gpu.example.com']", CEL_TRUE, NULL},
    {"'no-such-domain' in device.attributes", CEL_FALSE, NULL},
    {"'gpu.example.com' in device.attributes", CEL_TRUE, NULL},
    {"device.attributes['d'].x == 1", CEL_ERROR, "no such key: x"},
    {"size(device.attributes['nope']) == 0", CEL_TRUE, NULL},
    {"has(device.attributes['nope'].x)", CEL_FALSE, NULL},
    {"device.capacity['gpu.example.com'].gpus.isGreaterThan(quantity('1'))", CEL_ERROR,
     "no such key: gpus"},
    {"device.attributes['other.vendor.io'].fw.major() == 1", CEL_ERROR,
     "attribute fw: parse semantic version"},
    {"has(device.attributes['other.vendor.io'].fw)", CEL_TRUE, NULL},
    /* Error absorption. */
    {"false && device.attributes['x'].y", CEL_FALSE, NULL},
    {"device.attributes['x'].y && false", CEL_FALSE, NULL},
    {"device.attributes['x'].y || true", CEL_TRUE, NULL},
    {"true || device.attributes['x'].y", CEL_TRUE, NULL},
    {"true && device.attributes['x'].y", CEL_ERROR, "no such key: y"},
    {"device.attributes['x'].y || false", CEL_ERROR, "no such key: y"},
    {"device.attributes['x'].y && device.attributes['x'].z", CEL_ERROR, "no such key: y"},
    {"(1 / 0 == 1) || true", CEL_TRUE, NULL},
    {"false ? device.attributes['x'].y : true", CEL_TRUE, NULL},
    {"device.attributes['x'].y ? true : true", CEL_ERROR, "no such key"},
    /* Arithmetic. */
    {"1 + 2 * 3 == 7", CEL_TRUE, NULL},
    {"(1 + 2) * 3 == 9", CEL_TRUE, NULL},
    {"7 / 2 == 3 && 7 % 2 == 1 && -7 / 2 == -3 && -7 % 2 == -1", CEL_TRUE, NULL},
    {"1 / 0 == 0", CEL_ERROR, "division by zero"},
    {"1 % 0 == 0", CEL_ERROR, "modulus by zero"},
    {"9223372036854775807 + 1 > 0", CEL_ERROR, "return error for overflow"},
    {"-9223372036854775808 - 1 < 0", CEL_ERROR, "return error for overflow"},
    {"9223372036854775807 * 2 > 0", CEL_ERROR, "return error for overflow"},
    {"-9223372036854775808 / -1 > 0", CEL_ERROR, "return error for overflow"},
    {"-(-9223372036854775808) > 0", CEL_ERROR, "return error for overflow"},
    {"0u - 1u > 0u", CEL_ERROR, "return error for overflow"},
    {"18446744073709551615u + 1u > 0u", CEL_ERROR, "return error for overflow"},
    {"2.5 * 2.0 == 5.0", CEL_TRUE, NULL},
    {"1.0 / 0.0 > 1e308", CEL_TRUE, NULL},
    {"dyn(1) + dyn(1u) == 2", CEL_ERROR, "no such overload"},
    {"dyn(1) + dyn(1.5) == 2.5", CEL_ERROR, "no such overload"},
    {"'ab' + 'cd' == 'abcd'", CEL_TRUE, NULL},
    {"b'ab' + b'cd' == b'abcd'", CEL_TRUE, NULL},
    {"[1, 2] + [3] == [1, 2, 3]", CEL_TRUE, NULL},
    /* Comparison, including across numeric types. */
    {"1 == 1.0 && 1u == 1 && 2 > 1u && 1.5 > 1 && 1u < 1.5", CEL_TRUE, NULL},
    {"dyn(1) == dyn('1')", CEL_FALSE, NULL},
    {"-1 < 0u", CEL_TRUE, NULL},
    {"18446744073709551615u > 9223372036854775807", CEL_TRUE, NULL},
    {"'abc' < 'abd' && 'ab' < 'abc' && !('b' < 'a')", CEL_TRUE, NULL},
    {"b'\\x00' < b'\\x01'", CEL_TRUE, NULL},
    {"false < true", CEL_TRUE, NULL},
    {"[1, 'a'] == [1, 'a'] && [1] != [2] && {'a': 1} == {'a': dyn(1.0)}", CEL_TRUE, NULL},
    {"null == null && dyn(null) != 1", CEL_TRUE, NULL},
    /* Indexing and membership. */
    {"[10, 20, 30][1] == 20", CEL_TRUE, NULL},
    {"[10, 20][2] == 0", CEL_ERROR, "index out of range"},
    {"[10, 20][-1] == 0", CEL_ERROR, "index out of range"},
    {"{'a': 1}['b'] == 1", CEL_ERROR, "no such key: b"},
    {"{1: 'x'}[1] == 'x' && {1: 'x'}[1u] == 'x' && {1: 'x'}[1.0] == 'x'", CEL_TRUE, NULL},
    {"2 in [1, 2, 3] && !(4 in [1, 2, 3]) && 'a' in {'a': 1}", CEL_TRUE, NULL},
    {"2.0 in [1, 2]", CEL_TRUE, NULL},
    {"{'a': 1, 'a': 2}.size() == 1", CEL_ERROR, "repeated key"},
    /* Strings. */
    {"size('h\\u00e9llo') == 5 && 'h\\u00e9llo'.size() == 5", CEL_TRUE, NULL},
    {"size(b'h\\xc3\\xa9') == 3", CEL_TRUE, NULL},
    {"'hello'.contains('ell') && !'hello'.contains('xyz') && 'a'.contains('')", CEL_TRUE, NULL},
    {"'gpu.example.com'.matches('^gpu\\\\.[a-z]+\\\\.com$')", CEL_TRUE, NULL},
    {"matches('abc', 'b')", CEL_TRUE, NULL},
    {"'abc'.matches('^b')", CEL_FALSE, NULL},
    {"'abc'.matches('(')", CEL_ERROR, "invalid regular expression"},
    {"'MiXeD'.lowerAscii() == 'mixed' && 'MiXeD'.upperAscii() == 'MIXED'", CEL_TRUE, NULL},
    /* Conversions and types. */
    {"int('42') == 42 && int(3.9) == 3 && int(-3.9) == -3 && int(5u) == 5", CEL_TRUE, NULL},
    {"int('x') == 1", CEL_ERROR, "cannot convert"},
    {"int(1e19) == 1", CEL_ERROR, "overflow"},
    {"uint(-1) == 1u", CEL_ERROR, "overflow"},
    {"uint('7') == 7u && double('2.5') == 2.5 && double(2) == 2.0", CEL_TRUE, NULL},
    {"string(12) == '12' && string(1.5) == '1.5' && string(true) == 'true'", CEL_TRUE, NULL},
    {"string(b'abc') == 'abc' && bytes('abc') == b'abc'", CEL_TRUE, NULL},
    {"string(b'\\xff') == ''", CEL_ERROR, "invalid UTF-8"},
    {"bool('true') && !bool('false')", CEL_TRUE, NULL},
    {"type(1) == int && type('a') == string && type(1u) != int", CEL_TRUE, NULL},
    {"type(device.attributes['gpu.example.com'].index) == int", CEL_TRUE, NULL},
    /* Macros. */
    {"[1, 2, 3].all(x, x > 0)", CEL_TRUE, NULL},
    {"[1, 2, 3].all(x, x > 1)", CEL_FALSE, NULL},
    {"[1, 2, 3].exists(x, x == 3)", CEL_TRUE, NULL},
    {"[].exists(x, x == 3)", CEL_FALSE, NULL},
    {"[1, 2, 3].exists_one(x, x > 2)", CEL_TRUE, NULL},
    {"[1, 2, 3].exists_one(x, x > 1)", CEL_FALSE, NULL},
    {"[1, 2, 3].map(x, x * 2) == [2, 4, 6]", CEL_TRUE, NULL},
    {"[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]", CEL_TRUE, NULL},
    {"[1, 2, 3].filter(x, x % 2 == 1) == [1, 3]", CEL_TRUE, NULL},
    {"[0, 1].exists(x, 1 / x == 1)", CEL_TRUE, NULL},
    {"[0, 1].all(x, 1 / x == 1)", CEL_ERROR, "division by zero"},
    {"[1, 0].all(x, 1 / x == 2)", CEL_FALSE, NULL},
    {"device.attributes.exists(d, d == 'other.vendor.io')", CEL_TRUE, NULL},
    {"device.attributes['gpu.example.com'].all(k, k.size() > 2)", CEL_TRUE, NULL},
    {"[[1, 2], [3]].all(l, l.all(x, x > 0))", CEL_TRUE, NULL},
    {"[1, 2].exists(x, [3].exists(y, x + y == 5))", CEL_TRUE, NULL},
    /* Quantities. */
    {"quantity('1Gi').isGreaterThan(quantity('1G'))", CEL_TRUE, NULL},
    {"quantity('500m').isLessThan(quantity('1'))", CEL_TRUE, NULL},
    {"quantity('1k').compareTo(quantity('1000')) == 0", CEL_TRUE, NULL},
    {"quantity('1Ki') == quantity('1024')", CEL_TRUE, NULL},
    {"quantity('1.5Gi').compareTo(quantity('1536Mi')) == 0", CEL_TRUE, NULL},
    {"quantity('1e3').compareTo(quantity('1k')) == 0", CEL_TRUE, NULL},
    {"quantity('1E').compareTo(quantity('1000P')) == 0", CEL_TRUE, NULL},
    {"quantity('1Ei').isGreaterThan(quantity('1E'))", CEL_TRUE, NULL},
    {"quantity('100n').isLessThan(quantity('1u'))", CEL_TRUE, NULL},
    {"quantity('-1').sign() == -1 && quantity('0').sign() == 0 && quantity('2m').sign() == 1",
     CEL_TRUE, NULL},
    {"quantity('2Ki').isInteger() && !quantity('1500m').isInteger()", CEL_TRUE, NULL},
    {"quantity('2Ki').asInteger() == 2048", CEL_TRUE, NULL},
    {"quantity('1500m').asInteger() == 1", CEL_ERROR, "cannot convert"},
    {"quantity('1500m').asApproximateFloat() == 1.5", CEL_TRUE, NULL},
    {"quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')", CEL_TRUE, NULL},
    {"quantity('1').add(2) == quantity('3') && quantity('1').sub(quantity('500m')) == "
     "quantity('0.5')",
     CEL_TRUE, NULL},
    {"isQuantity('80Gi') && !isQuantity('80GB') && !isQuantity('') && !isQuantity('.')",
     CEL_TRUE, NULL},
    {"quantity('abc').sign() == 0", CEL_ERROR, "quantities must match"},
    {"device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('1Ki'))", CEL_TRUE, NULL},
    {"device.capacity['gpu.example.com'].compute.asInteger() == 100", CEL_TRUE, NULL},
    /* Semantic versions. */
    {"semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))", CEL_TRUE, NULL},
    {"semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", CEL_TRUE, NULL},
    {"semver('1.0.0-alpha.beta').isLessThan(semver('1.0.0-beta'))", CEL_TRUE, NULL},
    {"semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))", CEL_TRUE, NULL},
    {"semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", CEL_TRUE, NULL},
    {"semver('1.0.0+build.5').compareTo(semver('1.0.0')) == 0", CEL_TRUE, NULL},
    {"semver('1.10.0').isGreaterThan(semver('1.9.9'))", CEL_TRUE, NULL},
    {"semver('2.3.4').minor() == 3 && semver('2.3.4').patch() == 4", CEL_TRUE, NULL},
    {"isSemver('1.2.3') && !isSemver('1.2') && !isSemver('01.2.3') && !isSemver('v1.2.3')",
     CEL_TRUE, NULL},
    {"isSemver('v1.2', true) && semver('v1.02', true) == semver('1.2.0')", CEL_TRUE, NULL},
    {"semver('1.2').major() == 1", CEL_ERROR, "could not parse semver"},
    {"semver('1.0.0-01').major() == 1", CEL_ERROR, "could not parse semver"},
    /* Runtime type mismatches through dyn. */
    {"dyn('a') && true", CEL_ERROR, "no such overload"},
    {"dyn(1) < dyn('a')", CEL_ERROR, "no such overload"},
    {"dyn(1).startsWith('a')", CEL_ERROR, "no such overload"},
    {"dyn(1) ? true : false", CEL_ERROR, "no such overload"},
};

static void test_eval_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct dd_err err;
        struct cel_program *p = cel_compile(cases[i].src, strlen(cases[i].src), NULL, &err);
        enum cel_verdict v;

        if (!p)
            fail_msg("case %zu compile \"%s\": %s", i, cases[i].src, err.msg);
        v = cel_eval_device(p, &example, NULL, &err);
        if (v != cases[i].want)
            fail_msg("case %zu \"%s\": got %d, want %d (%s)", i, cases[i].src, v,
                     cases[i].want, v == CEL_ERROR ? err.msg : "");
        if (v == CEL_ERROR) {
            assert_int_equal(err.rc, DD_ETYPE);
            assert_contains(err.msg, cases[i].err);
        } else {
            assert_int_equal(err.rc, DD_OK);
        }
        cel_program_free(p);
    }
}

static enum cel_verdict eval_with(const char *src, const struct cel_device *dev,
                                  const struct cel_limits *lim, struct dd_err *err)
{
    struct cel_program *p = cel_compile(src, strlen(src), lim, err);
    enum cel_verdict v;

    if (!p)
        fail_msg("compile \"%s\": %s", src, err->msg);
    v = cel_eval_device(p, dev, lim, err);
    cel_program_free(p);
    return v;
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
    static const struct cel_attr attrs[] = {{NULL, "type", CEL_ATTR_STRING, 0, 0, "gpu"}};
    struct cel_device dev = {"gpu.nvidia.com", attrs, 1, NULL, 0, 0};
    struct dd_err err;

    (void)state;
    assert_int_equal(
        eval_with("device.driver == 'gpu.nvidia.com' && "
                  "device.attributes['gpu.nvidia.com'].type == 'gpu'",
                  &dev, NULL, &err),
        CEL_TRUE);
}

static void test_bad_capacity(void **state)
{
    static const struct cel_capacity caps[] = {{"d", "mem", "lots"}};
    struct cel_device dev = {"d", NULL, 0, caps, 1, 0};
    struct dd_err err;

    (void)state;
    assert_int_equal(eval_with("device.capacity['d'].mem.sign() == 1", &dev, NULL, &err),
                     CEL_ERROR);
    assert_contains(err.msg, "capacity mem");
    assert_int_equal(eval_with("has(device.capacity['d'].mem)", &dev, NULL, &err), CEL_TRUE);
}

static void test_quantity_parse(void **state)
{
    static const struct {
        const char *s;
        int ok;
        long long nano_hi; /* value / 10^9 */
        long long nano_lo; /* value % 10^9 */
    } q[] = {
        {"80Gi", 1, 85899345920LL, 0}, {"100", 1, 100, 0},      {"500m", 1, 0, 500000000},
        {"1n", 1, 0, 1},               {"0.1n", 1, 0, 1},        {"1.5", 1, 1, 500000000},
        {"+2k", 1, 2000, 0},           {"-3M", 1, -3000000, 0},  {"1e-3", 1, 0, 1000000},
        {"12E-1", 1, 1, 200000000},    {"5.", 1, 5, 0},          {".5", 1, 0, 500000000},
        {"1Ti", 1, 1099511627776LL, 0}, {"0", 1, 0, 0},          {"", 0, 0, 0},
        {"Gi", 0, 0, 0},               {"1GB", 0, 0, 0},         {"1.2.3", 0, 0, 0},
        {"1 Gi", 0, 0, 0},             {"1e", 0, 0, 0},          {"1e99999", 0, 0, 0},
        {"99999999999999999999999999999999999999E", 0, 0, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        __int128 v = 0;
        int ok = cel__quantity_parse(q[i].s, strlen(q[i].s), &v) == 0;
        if (ok != q[i].ok)
            fail_msg("quantity \"%s\": ok %d, want %d", q[i].s, ok, q[i].ok);
        if (ok && ((long long)(v / 1000000000) != q[i].nano_hi ||
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
        cmocka_unit_test(test_eval_table),
        cmocka_unit_test(test_exact_missing_key_message),
        cmocka_unit_test(test_cost_limit),
        cmocka_unit_test(test_empty_device),
        cmocka_unit_test(test_unqualified_domain),
        cmocka_unit_test(test_bad_capacity),
        cmocka_unit_test(test_quantity_parse),
        cmocka_unit_test(test_semver_order),
        cmocka_unit_test(test_reentrant),
        cmocka_unit_test(test_null_args),
    };
    return cmocka_run_group_tests_name("cel_eval", tests, NULL, NULL);
}
