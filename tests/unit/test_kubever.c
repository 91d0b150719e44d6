/*
 * test_kubever.c - the Kubernetes release facts: parsing releases as users write them, what
 * each release serves, and that the default is the release the e2e really runs.
 */
#include "harness.h"

#include "model/kubever.h"
#include "snap.h"

static void parse_releases(void **state)
{
    struct dd_err err;
    int minor = 0;
    (void)state;

    assert_int_equal(kv_parse("1.36", &minor, NULL), DD_OK);
    assert_int_equal(minor, 36);
    assert_int_equal(kv_parse("v1.35.2", &minor, NULL), DD_OK);
    assert_int_equal(minor, 35);
    assert_int_equal(kv_parse("v1.34.0-rc.1", &minor, NULL), DD_OK);
    assert_int_equal(minor, 34);
    assert_int_equal(kv_parse("1.36+k3s1", &minor, NULL), DD_OK);
    dd_err_clear(&err);
    assert_int_equal(kv_parse("1.33", &minor, &err), DD_EINVAL);
    assert_contains(err.msg, "1.34 to 1.37");
    assert_int_equal(kv_parse("1.37", &minor, NULL), DD_OK);
    assert_int_equal(minor, 37);
    assert_int_equal(kv_parse("1.38", &minor, NULL), DD_EINVAL);
    assert_int_equal(kv_parse("2.0", &minor, NULL), DD_EINVAL);
    dd_err_clear(&err);
    assert_int_equal(kv_parse("latest", &minor, &err), DD_EINVAL);
    assert_contains(err.msg, "not a Kubernetes release");
    assert_int_equal(kv_parse("1.36x", &minor, NULL), DD_EINVAL);
    assert_int_equal(kv_parse("1", &minor, NULL), DD_EINVAL);
    assert_int_equal(kv_parse("", &minor, NULL), DD_EINVAL);
}

static void serving(void **state)
{
    int removed;
    (void)state;

    for (int minor = KV_MIN_MINOR; minor <= KV_MAX_MINOR; minor++) {
        assert_int_equal(kv_resource_serving(minor, "v1", "ResourceClaim", &removed), KV_SERVED);
        assert_int_equal(kv_resource_serving(minor, "v1beta1", "DeviceClass", &removed),
                         KV_OFF_BY_DEFAULT);
        assert_int_equal(kv_resource_serving(minor, "v1beta2", "ResourceSlice", &removed),
                         KV_OFF_BY_DEFAULT);
        assert_int_equal(kv_resource_serving(minor, "v1alpha3", "ResourceClaimTemplate",
                                             &removed), KV_NOT_SERVED);
        assert_int_equal(removed, 34);
        assert_int_equal(kv_resource_serving(minor, "v1alpha3", "DeviceTaintRule", &removed),
                         KV_OFF_BY_DEFAULT);
        assert_int_equal(kv_resource_serving(minor, "v1alpha2", "ResourceClaim", &removed),
                         KV_NOT_SERVED);
        assert_int_equal(removed, 31);
        assert_int_equal(kv_resource_serving(minor, "v1", "ResourceClass", &removed),
                         KV_NOT_SERVED);
        /* What the table does not know is not judged. */
        assert_int_equal(kv_resource_serving(minor, "v2", "ResourceClaim", &removed), KV_UNKNOWN);
        assert_int_equal(kv_resource_serving(minor, "v1", "FutureKind", &removed), KV_UNKNOWN);
        assert_string_equal(kv_resource_preferred(minor), "v1");
    }
}

/* The default is what the e2e runs: e2e/cluster's K8S_VERSION. */
static void default_is_the_e2e_release(void **state)
{
    char *script = test_read_file("e2e/cluster"), *p, want[64];
    (void)state;

    p = strstr(script, "\nK8S_VERSION=${K8S_VERSION:-");
    assert_non_null(p);
    snprintf(want, sizeof(want), "\nK8S_VERSION=${K8S_VERSION:-v1.%d.", KV_DEFAULT_MINOR);
    assert_true(!strncmp(p, want, strlen(want)));
    free(script);
}

#define OBJ(av, kind, name, spec)                                                              \
    "{\"apiVersion\":\"" av "\",\"kind\":\"" kind "\",\"metadata\":{\"name\":\"" name "\","     \
    "\"namespace\":\"ns\"},\"spec\":" spec "}"

/* The rules over the table: removed versions are errors, off-by-default ones warnings, pods
 * with the removed `source` errors; a live cluster never holds either. */
static void rules(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    (void)state;

    snap_load(&s, "[" OBJ("resource.k8s.io/v1alpha3", "ResourceClaimTemplate", "t",
                          "{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\","
                          "\"deviceClassName\":\"c\"}]}}}") ","
                  OBJ("resource.k8s.io/v1beta1", "ResourceClaim", "c",
                      "{\"devices\":{\"requests\":[]}}") ","
                  OBJ("resource.k8s.io/v1alpha2", "ResourceClass", "rc", "{}") ","
                  OBJ("resource.k8s.io/v1", "ResourceClaim", "ok", "{\"devices\":{}}") ","
                  OBJ("v1", "Pod", "p", "{\"resourceClaims\":[{\"name\":\"g\",\"source\":"
                      "{\"resourceClaimTemplateName\":\"t\"}}],\"containers\":[]}") "]");
    assert_int_equal(snap_run(&s, &o, "APIVersionNotServed"), 3);
    for (size_t i = 0; i < s.f.n; i++) {
        const struct dd_finding *f = &s.f.v[i];
        if (!strcmp(f->code, "APIVersionNotServed")) {
            if (!strcmp(f->obj.name, "c")) {
                assert_int_equal(f->severity, DD_SEV_WARNING);
                assert_contains(f->message, "--runtime-config=resource.k8s.io/v1beta1=true");
            } else {
                assert_int_equal(f->severity, DD_SEV_ERROR);
                assert_contains(f->message, !strcmp(f->obj.name, "rc") ? "removed in 1.31"
                                                                       : "Kubernetes 1.37");
            }
            assert_string_not_equal(f->obj.name, "ok");
        }
    }
    assert_int_equal(snap_run(&s, &o, "PodClaimSourceRemoved"), 1);
    assert_contains(snap_get(&s, "PodClaimSourceRemoved")->fix, "resourceClaimTemplateName: t");
    o.kube_minor = 34;
    snap_run(&s, &o, NULL);
    assert_contains(snap_get(&s, "APIVersionNotServed")->message, "1.34");
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &o, "APIVersionNotServed"), 0);
    assert_int_equal(snap_run(&s, &o, "PodClaimSourceRemoved"), 0);
    snap_free(&s);
}

static void kubelet_bugs(void **state)
{
    (void)state;
    assert_non_null(kv_kubelet_plugin_bug("v1.34.0"));
    assert_non_null(kv_kubelet_plugin_bug("v1.34.1+k3s1"));
    assert_non_null(strstr(kv_kubelet_plugin_bug("1.34.1"), "1.34.2"));
    assert_null(kv_kubelet_plugin_bug("v1.34.2"));
    assert_null(kv_kubelet_plugin_bug("v1.34.10"));
    assert_null(kv_kubelet_plugin_bug("v1.36.3"));
    assert_null(kv_kubelet_plugin_bug(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_releases),
        cmocka_unit_test(kubelet_bugs),
        cmocka_unit_test(serving),
        cmocka_unit_test(default_is_the_e2e_release),
        cmocka_unit_test(rules),
    };
    return cmocka_run_group_tests_name("kubever", tests, NULL, NULL);
}
