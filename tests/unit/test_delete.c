/*
 * test_delete.c - `dra-doctor delete` ($DD_BIN) against a mock API server
 * (lib/client/httpd on loopback): objects go in the order given, each gone before the
 * next is touched; an absent object is gone already; one made again (another uid) is
 * reported, as is one that never goes (--timeout) and a refused DELETE, after which
 * nothing more is deleted; bad arguments are refused before any request.
 */
#include "mock_api.h"

#include "formats/json.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>

#define VWC "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/dd"
#define DEP "/apis/apps/v1/namespaces/ns/deployments/dd-controller"
#define LEASE "/apis/coordination.k8s.io/v1/namespaces/ns/leases/dd-controller"
#define SECRET "/api/v1/namespaces/ns/secrets/dd-tls"

/* One object of the mock: present or not, its uid, and how it behaves once deleted. */
struct obj {
    const char *path;
    int present;
    int lingers;   /* GETs after its DELETE that still find it (dependents going first) */
    int recreated; /* after its DELETE, GETs find another object of that name */
    int refuse;    /* DELETE answers 403 */
    int deleted;
};

static struct obj objs[] = {
    { VWC, 0, 0, 0, 0, 0 }, { DEP, 0, 0, 0, 0, 0 }, { LEASE, 0, 0, 0, 0, 0 },
    { SECRET, 0, 0, 0, 0, 0 },
};

#define NOBJS (sizeof(objs) / sizeof(objs[0]))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char log_[8192]; /* "DELETE vwc", "GET vwc 404", ... one per line */
static struct mock_api api;

static const char *short_name(const char *path)
{
    return strrchr(path, '/') + 1;
}

static void reply(struct httpd_response *r, int code, const char *body)
{
    r->status = code;
    r->content_type = "application/json";
    r->body = strdup(body);
    r->len = strlen(body);
}

static void handler(void *ctx, const char *method, const char *body, size_t len,
                    struct httpd_response *r)
{
    struct obj *o = ctx;
    char buf[256];
    size_t n = strlen(log_);

    (void)body;
    (void)len;
    pthread_mutex_lock(&mu);
    if (!strcmp(method, "DELETE")) {
        snprintf(log_ + n, sizeof(log_) - n, "DELETE %s\n", short_name(o->path));
        if (o->refuse)
            reply(r, 403, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\","
                          "\"message\":\"nope\",\"code\":403}");
        else if (!o->present)
            reply(r, 404, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}");
        else {
            o->deleted = 1;
            reply(r, 200, "{\"kind\":\"Status\",\"status\":\"Success\"}");
        }
    } else if (!strcmp(method, "GET")) {
        int found = o->present && (!o->deleted || o->recreated || o->lingers-- > 0);
        snprintf(log_ + n, sizeof(log_) - n, "GET %s %d\n", short_name(o->path), found ? 200 : 404);
        if (found) {
            snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"}}",
                     short_name(o->path), o->deleted && o->recreated ? "uid-2" : "uid-1");
            reply(r, 200, buf);
        } else {
            reply(r, 404, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}");
        }
    } else {
        reply(r, 405, "{}");
    }
    pthread_mutex_unlock(&mu);
}

static void reset(void)
{
    size_t i;

    pthread_mutex_lock(&mu);
    for (i = 0; i < NOBJS; i++) {
        objs[i].present = 1;
        objs[i].lingers = objs[i].recreated = objs[i].refuse = objs[i].deleted = 0;
    }
    log_[0] = '\0';
    pthread_mutex_unlock(&mu);
}

/* Runs $DD_BIN delete ARGS... against the mock; stdout and stderr together. */
static void run(struct mock_run *r, ...)
{
    const char *const pre[] = { "delete", "--kubeconfig", api.kubeconfig };
    va_list ap;

    va_start(ap, r);
    mock_vrun(r, pre, 3, ap);
    va_end(ap);
}

static void test_in_order(void **state)
{
    struct mock_run r;

    (void)state;
    reset();
    objs[1].lingers = 3; /* the Deployment's pods take a while */
    run(&r, "-n", "ns", "validatingwebhookconfiguration/dd", "deployment/dd-controller",
        "lease/dd-controller", "secret/dd-tls", NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(log_,
                        "GET dd 200\nDELETE dd\nGET dd 404\n"
                        "GET dd-controller 200\nDELETE dd-controller\nGET dd-controller 200\n"
                        "GET dd-controller 200\nGET dd-controller 200\nGET dd-controller 404\n"
                        "GET dd-controller 200\nDELETE dd-controller\nGET dd-controller 404\n"
                        "GET dd-tls 200\nDELETE dd-tls\nGET dd-tls 404\n");
    assert_contains(r.out, "validatingwebhookconfiguration dd: deleted");
    assert_contains(r.out, "deployment ns/dd-controller: deleted");
    assert_contains(r.out, "secret ns/dd-tls: deleted");
}

static void test_absent_is_gone(void **state)
{
    struct mock_run r;

    (void)state;
    reset();
    objs[0].present = 0;
    run(&r, "--namespace=ns", "validatingwebhookconfigurations/dd", "Secret/dd-tls", NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(log_, "GET dd 404\nGET dd-tls 200\nDELETE dd-tls\nGET dd-tls 404\n");
    assert_contains(r.out, "validatingwebhookconfiguration dd: not found (gone already)");
}

static void test_made_again(void **state)
{
    struct mock_run r;

    (void)state;
    reset();
    objs[2].recreated = 1;
    run(&r, "-n", "ns", "lease/dd-controller", "secret/dd-tls", NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "lease ns/dd-controller was deleted, but something made it again "
                           "(uid uid-2, was uid-1)");
    assert_null(strstr(log_, "dd-tls")); /* nothing after a failure */
}

static void test_timeout(void **state)
{
    struct mock_run r;

    (void)state;
    reset();
    objs[1].lingers = 1000000;
    run(&r, "-n", "ns", "--timeout", "1", "deployment/dd-controller", "secret/dd-tls", NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "deployment ns/dd-controller is still there after 1 s");
    assert_null(strstr(log_, "dd-tls"));
}

static void test_refused(void **state)
{
    struct mock_run r;

    (void)state;
    reset();
    objs[0].refuse = 1;
    run(&r, "validatingwebhookconfiguration/dd", "secret/dd-tls", NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "deleting validatingwebhookconfiguration dd");
    assert_null(strstr(log_, "dd-tls"));
}

static void test_usage(void **state)
{
    static const char *const bad[][3] = {
        { "pod/x", "\"pod/x\": not KIND/NAME", NULL },
        { "secret", "\"secret\": not KIND/NAME", NULL },
        { "secret/a/b", "\"secret/a/b\": not KIND/NAME", NULL },
        { "--timeout", "0", "--timeout \"0\": not a number of seconds 1..3600" },
    };
    struct mock_run r;
    size_t i;

    (void)state;
    reset();
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bad[i][2])
            run(&r, bad[i][0], bad[i][1], "secret/x", NULL);
        else
            run(&r, "secret/ok", bad[i][0], NULL);
        assert_int_equal(r.status, 2);
        assert_contains(r.out, bad[i][2] ? bad[i][2] : bad[i][1]);
    }
    run(&r, NULL);
    assert_int_equal(r.status, 2);
    assert_contains(r.out, "give 1 to 64 objects as KIND/NAME");
    assert_string_equal(log_, ""); /* every argument is checked before any request */
}

static int setup(void **state)
{
    static struct httpd_route routes[NOBJS]; /* the server keeps them */
    size_t i;

    (void)state;
    for (i = 0; i < NOBJS; i++) {
        routes[i].path = objs[i].path;
        routes[i].fn = handler;
        routes[i].ctx = &objs[i];
        routes[i].content_type = NULL;
    }
    return mock_api_start(&api, "delete", routes, NOBJS);
}

static int teardown(void **state)
{
    (void)state;
    mock_api_stop(&api);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_absent_is_gone),
        cmocka_unit_test(test_made_again),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests_name("delete", tests, setup, teardown);
}
