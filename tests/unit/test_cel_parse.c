/*
 * test_cel_parse.c - syntax errors, limits, type checking and the static
 * driver/attribute analyses of cel_compile.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#include "cel/cel.h"

static struct cel_program *compile(const char *src, struct dd_err *err)
{
    return cel_compile(src, strlen(src), NULL, err);
}

static void expect_fail(const char *src, enum dd_rc rc, int line, int col, const char *what)
{
    struct dd_err err;
    struct cel_program *p = compile(src, &err);

    if (p) {
        cel_program_free(p);
        fail_msg("\"%s\" compiled, want %s", src, dd_strerror(rc));
    }
    if (err.rc != rc)
        fail_msg("\"%s\": rc %d (%s), want %d", src, err.rc, err.msg, rc);
    if (line && (err.line != line || err.col != col))
        fail_msg("\"%s\": at %d:%d, want %d:%d (%s)", src, err.line, err.col, line, col,
                 err.msg);
    assert_contains(err.msg, what);
}

static void test_syntax_error_caret(void **state)
{
    struct dd_err err;
    struct cel_program *p = compile("device.driver = 'x'", &err);

    (void)state;
    assert_null(p);
    assert_int_equal(err.rc, DD_EPARSE);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 15);
    assert_string_equal(err.msg, "1:15: Syntax error: token recognition error at: '='\n"
                                 " | device.driver = 'x'\n"
                                 " |               ^");
}

static void test_syntax_error_second_line(void **state)
{
    struct dd_err err;
    struct cel_program *p = compile("device.driver == 'a' &&\n  device.attributes[ 'x' ", &err);

    (void)state;
    assert_null(p);
    assert_int_equal(err.rc, DD_EPARSE);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 26);
    assert_string_equal(err.msg, "2:26: Syntax error: mismatched input '<EOF>' expecting ']'\n"
                                 " |   device.attributes[ 'x' \n"
                                 " |                          ^");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    expect_fail("device.driver == ", DD_EPARSE, 1, 18, "mismatched input '<EOF>'");
    expect_fail("(true", DD_EPARSE, 1, 6, "expecting ')'");
    expect_fail("true)", DD_EPARSE, 1, 5, "mismatched input ')' expecting <EOF>");
    expect_fail("[1, 2", DD_EPARSE, 1, 6, "expecting {',', ']'}");
    expect_fail("{'a' 1}", DD_EPARSE, 1, 6, "expecting ':'");
    expect_fail("device.", DD_EPARSE, 1, 8, "expecting IDENTIFIER");
    expect_fail("device.driver == 'unterminated", DD_EPARSE, 1, 18, "token recognition error");
    expect_fail("true && && false", DD_EPARSE, 1, 9, "mismatched input '&&'");
    expect_fail("1 == 1 ? true", DD_EPARSE, 1, 14, "expecting ':'");
    expect_fail("if == 1", DD_EPARSE, 1, 1, "reserved identifier: if");
    expect_fail("'\\q' == 'q'", DD_EPARSE, 1, 2, "invalid escape sequence");
    expect_fail("'ab\\u12' == 'x'", DD_EPARSE, 1, 4, "invalid escape sequence");
    expect_fail("9223372036854775808 > 0", DD_EPARSE, 1, 1, "out of range");
    expect_fail("18446744073709551616u > 0u", DD_EPARSE, 1, 1, "out of range");
    expect_fail("has(device)", DD_EPARSE, 1, 1, "invalid argument to has() macro");
    expect_fail("has(device.attributes['d'])", DD_EPARSE, 1, 1, "has() macro");
    expect_fail("[1].all(1, true)", DD_EPARSE, 1, 9, "simple name");
    expect_fail("Msg{a: 1}.a == 1", DD_EPARSE, 1, 4, "not supported");
    expect_fail("device.driver == \"x\" ||", DD_EPARSE, 1, 24, "<EOF>");
    expect_fail("", DD_EPARSE, 1, 1, "mismatched input '<EOF>'");
}

static void test_length_cap(void **state)
{
    struct cel_limits lim = CEL_LIMITS_DEFAULT;
    struct dd_err err;
    char *src = malloc(10242);
    struct cel_program *p;

    (void)state;
    assert_non_null(src);
    memset(src, ' ', 10241);
    memcpy(src, "true", 4);
    src[10241] = '\0';
    p = cel_compile(src, 10241, &lim, &err);
    assert_null(p);
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_string_equal(err.msg, "expression is 10241 characters long; the limit is 10240");
    /* Exactly at the limit is fine. */
    p = cel_compile(src, 10240, &lim, &err);
    assert_non_null(p);
    cel_program_free(p);
    free(src);
}

static void test_depth_cap(void **state)
{
    struct cel_limits lim = {10240, 10, 1000};
    struct dd_err err;
    struct cel_program *p;
    char buf[512];

    (void)state;
    /* Nine pairs of parentheses fit in depth 10; 30 do not. */
    p = cel_compile("(((((((((true)))))))))", 22, &lim, &err);
    assert_non_null(p);
    cel_program_free(p);
    memset(buf, '(', 30);
    memcpy(buf + 30, "true", 4);
    memset(buf + 34, ')', 30);
    p = cel_compile(buf, 64, &lim, &err);
    assert_null(p);
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_contains(err.msg, "expression recursion limit exceeded: 10");
    /* A run of '!' is one operator in cel-go's grammar (an even run cancels), not a
     * nesting; parentheses around each one nest. */
    p = cel_compile("!!!!!!!!!!!!!!!!!!!!!!!!true", 28, &lim, &err);
    assert_non_null(p);
    cel_program_free(p);
    /* `!(` is one level of cel-go's grammar, like a parenthesis (the boundaries of every
     * construct at the default limit are in tests/data/cel/cases.json, checked against
     * Kubernetes by make test-differential). */
    p = cel_compile("!(!(!(!(!(!(!(!(!(true)))))))))", 31, &lim, &err);
    assert_non_null(p);
    cel_program_free(p);
    p = cel_compile("!(!(!(!(!(!(!(!(!(!(!(!(true))))))))))))", 40, &lim, &err);
    assert_null(p);
    assert_int_equal(err.rc, DD_ETOOBIG);
    /* A flat sum is a chain of nested operators in cel-go's tree: 13 of them and the
     * comparison are 14 levels. */
    p = cel_compile("1+1+1+1+1+1+1+1+1+1+1+1+1+1 == 14", 33, &lim, &err);
    assert_null(p);
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_contains(err.msg, "max recursion depth exceeded");
    /* A long && chain is balanced, so 40 conjuncts stay shallow. */
    buf[0] = '\0';
    for (int i = 0; i < 40; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof(buf) - l, "%strue", i ? " && " : "");
    }
    p = cel_compile(buf, strlen(buf), &lim, &err);
    assert_non_null(p);
    cel_program_free(p);
    /* The default depth rejects pathological nesting without crashing. */
    {
        size_t n = 5000;
        char *deep = malloc(2 * n + 5);
        assert_non_null(deep);
        memset(deep, '[', n);
        memcpy(deep + n, "true", 4);
        memset(deep + n + 4, ']', n);
        p = cel_compile(deep, 2 * n + 4, NULL, &err);
        assert_null(p);
        assert_int_equal(err.rc, DD_ETOOBIG);
        free(deep);
    }
}

static void test_type_errors(void **state)
{
    (void)state;
    expect_fail("device.driver", DD_ETYPE, 0, 0, "must evaluate to bool or the unknown type, not string");
    expect_fail("1 + 1", DD_ETYPE, 1, 3, "must evaluate to bool or the unknown type, not int");
    expect_fail("device.attributes", DD_ETYPE, 0, 0,
                "not map(string, map(string, any))");
    expect_fail("device.capacity['d'].memory", DD_ETYPE, 0, 0, "not kubernetes.Quantity");
    expect_fail("'a' + 'b'", DD_ETYPE, 0, 0, "not string");
    expect_fail("[1, 2]", DD_ETYPE, 0, 0, "not list(int)");
    expect_fail("foo == 1", DD_ETYPE, 1, 1, "undeclared reference to 'foo'");
    expect_fail("device.driver == bar", DD_ETYPE, 1, 18, "undeclared reference to 'bar'");
    expect_fail("device.foo == 'x'", DD_ETYPE, 1, 8, "undefined field 'foo'");
    expect_fail("device.Driver == 'x'", DD_ETYPE, 1, 8, "undefined field 'Driver'");
    expect_fail("frobnicate(1)", DD_ETYPE, 1, 1, "undeclared reference to 'frobnicate'");
    expect_fail("device.driver.frob()", DD_ETYPE, 1, 15, "undeclared reference to 'frob'");
    expect_fail("device.driver.startsWith(1, 2)", DD_ETYPE, 1, 15,
                "found no matching overload for 'startsWith'");
    expect_fail("(1).startsWith('x')", DD_ETYPE, 0, 0, "found no matching overload");
    expect_fail("device.driver == 1", DD_ETYPE, 1, 15,
                "found no matching overload for '_==_' applied to '(string, int)'");
    expect_fail("1 + 1u == 2", DD_ETYPE, 1, 3, "found no matching overload for '_+_'");
    expect_fail("1 && true", DD_ETYPE, 1, 1, "expected type 'bool' but found 'int'");
    expect_fail("!1", DD_ETYPE, 1, 1, "'!_'");
    expect_fail("device.driver.x == 'y'", DD_ETYPE, 1, 15, "does not support field selection");
    expect_fail("'a' < 1", DD_ETYPE, 0, 0, "'_<_'");
    expect_fail("1 in 2", DD_ETYPE, 0, 0, "'@in'");
    expect_fail("[1].all(x, x)  && y", DD_ETYPE, 1, 12, "expected type 'bool' but found 'int'");
    expect_fail("[1].all(x, 1)", DD_ETYPE, 1, 12, "expected type 'bool' but found 'int'");
}

static void expect_ok(const char *src)
{
    struct dd_err err;
    struct cel_program *p = compile(src, &err);

    if (!p)
        fail_msg("\"%s\": %s", src, err.msg);
    cel_program_free(p);
}

static void test_accepts(void **state)
{
    (void)state;
    expect_ok("device.driver == 'gpu.example.com'");
    expect_ok(".device.driver == 'x'");
    expect_ok("device.allowMultipleAllocations");
    expect_ok("device.attributes['d'].x");
    expect_ok("device.attributes['d'].x == 1 || device.attributes['d'].y == 'a'");
    expect_ok("has(device.attributes['d'].x) ? device.attributes['d'].x > 3 : false");
    expect_ok("size(device.driver) > 0 && device.driver.size() < 100");
    expect_ok("device.driver.matches('^gpu') // trailing comment");
    expect_ok("[1, 2, 3,].exists(i, i == 2)");
    expect_ok("{'a': 1, 'b': 2,}['a'] == 1");
    /* The API server estimates `==` of two values of unknown size as too costly. */
    expect_fail("type(1) == int", DD_ETOOBIG, 1, 9, "too complex, exceeds cost limit");
    expect_ok("device.attributes.exists(d, d.endsWith('.com'))");
    expect_ok("device.capacity['d'].memory.isGreaterThan(quantity('1Gi'))");
    expect_ok("device.attributes['d'].v.compareTo(semver('1.0.0')) == 0");
    expect_ok("dyn(1) == 1.0");
}

struct drv_case {
    const char *src;
    enum cel_drivers_kind kind;
    const char *names; /* space-separated, in order */
};

static void test_drivers(void **state)
{
    static const struct drv_case cases[] = {
        {"device.driver == 'gpu.example.com'", CEL_DRIVERS_SET, "gpu.example.com"},
        {"'gpu.example.com' == device.driver", CEL_DRIVERS_SET, "gpu.example.com"},
        {"device.driver == \"gpu.intel.com\"", CEL_DRIVERS_SET, "gpu.intel.com"},
        {"device.driver in ['a', 'b']", CEL_DRIVERS_SET, "a b"},
        {"device.driver in ['a', 'b', 'a']", CEL_DRIVERS_SET, "a b"},
        {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
         CEL_DRIVERS_SET, "gpu.nvidia.com"},
        {"device.attributes['x'].type == 'gpu' && device.driver == 'x'", CEL_DRIVERS_SET, "x"},
        {"device.driver == 'a' || device.driver == 'b'", CEL_DRIVERS_SET, "a b"},
        {"device.driver == 'a' || device.attributes['a'].t == 'x'", CEL_DRIVERS_ANY, ""},
        {"device.driver in ['a', 'b'] && device.driver == 'b'", CEL_DRIVERS_SET, "b"},
        {"device.driver in ['a', 'b'] && device.driver in ['b', 'c']", CEL_DRIVERS_SET, "b"},
        {"device.driver == 'a' && device.driver == 'b'", CEL_DRIVERS_NONE, ""},
        {"(device.driver == 'a' && device.driver == 'b') || device.driver == 'c'",
         CEL_DRIVERS_SET, "c"},
        {"device.driver in []", CEL_DRIVERS_NONE, ""},
        {"device.driver != 'a'", CEL_DRIVERS_ANY, ""},
        {"!(device.driver == 'a')", CEL_DRIVERS_ANY, ""},
        {"device.driver.startsWith('gpu.')", CEL_DRIVERS_ANY, ""},
        {"device.driver == 'a' ? true : false", CEL_DRIVERS_ANY, ""},
        {"true", CEL_DRIVERS_ANY, ""},
        {"device.driver in ['a', device.driver]", CEL_DRIVERS_ANY, ""},
        {"(device.driver == 'a' || device.driver == 'b') && device.attributes['a'].x == 1",
         CEL_DRIVERS_SET, "a b"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct dd_err err;
        struct cel_program *p = compile(cases[i].src, &err);
        const struct cel_driver_ref *refs;
        size_t n;
        char got[256] = "";

        if (!p)
            fail_msg("%s: %s", cases[i].src, err.msg);
        enum cel_drivers_kind k = cel_program_drivers(p, &refs, &n);
        for (size_t j = 0; j < n; j++) {
            size_t l = strlen(got);
            snprintf(got + l, sizeof(got) - l, "%s%s", j ? " " : "", refs[j].name);
        }
        if (k != cases[i].kind || strcmp(got, cases[i].names) != 0)
            fail_msg("%s: kind %d [%s], want %d [%s]", cases[i].src, k, got, cases[i].kind,
                     cases[i].names);
        cel_program_free(p);
    }
}

static void test_driver_positions(void **state)
{
    struct dd_err err;
    const char *src = "device.driver == 'a' ||\n  device.driver == \"b\"";
    struct cel_program *p = compile(src, &err);
    const struct cel_driver_ref *refs;
    size_t n;

    (void)state;
    assert_non_null(p);
    assert_int_equal(cel_program_drivers(p, &refs, &n), CEL_DRIVERS_SET);
    assert_int_equal(n, 2);
    assert_string_equal(refs[0].name, "a");
    assert_int_equal(refs[0].line, 1);
    assert_int_equal(refs[0].col, 18);
    assert_string_equal(refs[1].name, "b");
    assert_int_equal(refs[1].line, 2);
    assert_int_equal(refs[1].col, 20);
    cel_program_free(p);
}

static void test_attr_refs(void **state)
{
    struct dd_err err;
    const char *src =
        "device.attributes['gpu.example.com'].model == 'x' && "
        "has(device.attributes['gpu.example.com'].productName) && "
        "'uuid' in device.attributes['gpu.example.com'] && "
        "device.attributes[\"d2\"][\"index\"] > 1 && "
        "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('1Gi')) && "
        "device.attributes[device.driver].v == 1";
    struct cel_program *p = compile(src, &err);
    const struct cel_attr_ref *r;
    size_t n;

    (void)state;
    if (!p)
        fail_msg("%s", err.msg);
    cel_program_attrs(p, &r, &n);
    assert_int_equal(n, 6);
    assert_string_equal(r[0].domain, "gpu.example.com");
    assert_string_equal(r[0].name, "model");
    assert_int_equal(r[0].guarded, 0);
    assert_int_equal(r[0].capacity, 0);
    assert_int_equal(r[0].line, 1);
    assert_int_equal(r[0].col, 38);
    assert_string_equal(r[1].name, "productName");
    assert_int_equal(r[1].guarded, 1);
    assert_string_equal(r[2].name, "uuid");
    assert_int_equal(r[2].guarded, 1);
    assert_string_equal(r[2].domain, "gpu.example.com");
    assert_string_equal(r[3].domain, "d2");
    assert_string_equal(r[3].name, "index");
    assert_int_equal(r[3].guarded, 0);
    assert_string_equal(r[4].name, "memory");
    assert_int_equal(r[4].capacity, 1);
    assert_null(r[5].domain);
    assert_string_equal(r[5].name, "v");
    for (size_t i = 1; i < n; i++)
        assert_true(r[i - 1].col < r[i].col);
    cel_program_free(p);
}

static void test_no_attr_refs(void **state)
{
    struct dd_err err;
    struct cel_program *p = compile("device.driver == 'a'", &err);
    const struct cel_attr_ref *r;
    size_t n = 99;

    (void)state;
    assert_non_null(p);
    cel_program_attrs(p, &r, &n);
    assert_int_equal(n, 0);
    cel_program_free(p);
    cel_program_free(NULL);
}

/* src need not be NUL-terminated: only len bytes are read. */
static void test_not_nul_terminated(void **state)
{
    struct dd_err err;
    const char buf[] = "device.driver == 'a'GARBAGE";
    struct cel_program *p = cel_compile(buf, 20, NULL, &err);

    (void)state;
    assert_non_null(p);
    cel_program_free(p);
}

/* err may be NULL for callers that only need the verdict. */
static void test_null_err(void **state)
{
    static const struct cel_device dev = {"a", NULL, 0, NULL, 0, 0};
    struct cel_program *p;

    (void)state;
    assert_null(cel_compile("device.driver ==", 16, NULL, NULL));
    assert_null(cel_compile("foo", 3, NULL, NULL));
    p = cel_compile("device.driver == 'a'", 20, NULL, NULL);
    assert_non_null(p);
    assert_int_equal(cel_eval_device(p, &dev, NULL, NULL), CEL_TRUE);
    cel_program_free(p);
    p = cel_compile("device.attributes['a'].x == 1", 29, NULL, NULL);
    assert_non_null(p);
    assert_int_equal(cel_eval_device(p, &dev, NULL, NULL), CEL_ERROR);
    cel_program_free(p);
}

/* A comprehension variable is in scope only inside its macro. */
static void test_macro_scope(void **state)
{
    (void)state;
    expect_ok("[1, 2].all(x, x > 0) && [3].exists(y, y == 3)");
    expect_fail("[1, 2].all(x, x > 0) && x == 1", DD_ETYPE, 1, 25,
                "undeclared reference to 'x'");
    expect_fail("[1].map(x, x).size() == z", DD_ETYPE, 1, 25, "undeclared reference to 'z'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax_error_caret),
        cmocka_unit_test(test_syntax_error_second_line),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_length_cap),
        cmocka_unit_test(test_depth_cap),
        cmocka_unit_test(test_type_errors),
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_drivers),
        cmocka_unit_test(test_driver_positions),
        cmocka_unit_test(test_attr_refs),
        cmocka_unit_test(test_no_attr_refs),
        cmocka_unit_test(test_not_nul_terminated),
        cmocka_unit_test(test_null_err),
        cmocka_unit_test(test_macro_scope),
    };
    return cmocka_run_group_tests_name("cel_parse", tests, NULL, NULL);
}
