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
        /* DeviceTaintRule: v1beta2 from 1.36 (off), v1 from 1.37 (on); never in v1beta1. */
        assert_int_equal(kv_resource_serving(minor, "v1beta2", "DeviceTaintRule", &removed),
                         minor >= 36 ? KV_OFF_BY_DEFAULT : KV_NOT_SERVED);
        assert_int_equal(kv_resource_serving(minor, "v1", "DeviceTaintRule", &removed),
                         minor >= 37 ? KV_SERVED : KV_NOT_SERVED);
        assert_int_equal(kv_resource_serving(minor, "v1beta1", "DeviceTaintRule", &removed),
                         KV_NOT_SERVED);
        assert_string_equal(kv_resource_preferred_for(minor, "DeviceTaintRule"),
                            minor >= 37 ? "v1" : minor == 36 ? "v1beta2" : "v1alpha3");
        assert_int_equal(kv_resource_serving(minor, "v1alpha3", "ResourcePoolStatusRequest",
                                             &removed),
                         minor >= 36 ? KV_OFF_BY_DEFAULT : KV_NOT_SERVED);
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

/* The gate table against each release's pkg/features/kube_features.go (read for v1.34.3,
 * v1.35.4, v1.36.3, v1.37.2). */
static void gates(void **state)
{
    struct kv_gates g;
    struct dd_err err;
    char buf[128];
    (void)state;

    kv_gates_init(&g, 34);
    assert_false(g.on[KV_GATE_DEVICE_TAINTS]);
    assert_false(g.on[KV_GATE_CONSUMABLE_CAPACITY]);
    assert_true(g.on[KV_GATE_PRIORITIZED_LIST]);
    assert_false(kv_gate_exists(34, KV_GATE_DEVICE_TAINT_RULES));
    assert_false(kv_gate_exists(35, KV_GATE_LIST_TYPE_ATTRIBUTES));
    kv_gates_init(&g, 36);
    assert_true(g.on[KV_GATE_DEVICE_TAINTS]);
    assert_false(g.on[KV_GATE_DEVICE_TAINT_RULES]);
    assert_true(g.on[KV_GATE_GRANULAR_STATUS_AUTHZ]);
    assert_true(g.on[KV_GATE_EXTENDED_RESOURCE]);
    assert_string_equal(kv_gate_says(&g, KV_GATE_DEVICE_TAINT_RULES, buf, sizeof(buf)),
                        "DRADeviceTaintRules off (1.36's default)");
    kv_gates_init(&g, 37);
    assert_true(g.on[KV_GATE_DEVICE_TAINT_RULES]);
    assert_false(g.on[KV_GATE_LIST_TYPE_ATTRIBUTES]);
    /* kube-apiserver's --feature-gates, with its refusals. */
    assert_int_equal(kv_gates_set(&g, "DRAListTypeAttributes=true, DRADeviceTaintRules=false",
                                  KV_FROM_FLAG, NULL), DD_OK);
    assert_true(g.on[KV_GATE_LIST_TYPE_ATTRIBUTES]);
    assert_false(g.on[KV_GATE_DEVICE_TAINT_RULES]);
    assert_string_equal(kv_gate_says(&g, KV_GATE_DEVICE_TAINT_RULES, buf, sizeof(buf)),
                        "DRADeviceTaintRules off (--feature-gates)");
    dd_err_clear(&err);
    assert_int_equal(kv_gates_set(&g, "DRAExtendedResource=false", KV_FROM_FLAG, &err),
                     DD_EINVAL);
    assert_contains(err.msg, "cannot set feature gate DRAExtendedResource to false, feature is "
                             "locked to true");
    kv_gates_init(&g, 35);
    assert_int_equal(kv_gates_set(&g, "DRAListTypeAttributes=true", KV_FROM_FLAG, &err),
                     DD_EINVAL);
    assert_contains(err.msg, "unrecognized feature gate: DRAListTypeAttributes");
    assert_int_equal(kv_gates_set(&g, "DRADeviceTaintRule=true", KV_FROM_FLAG, &err), DD_EINVAL);
    assert_int_equal(kv_gates_set(&g, "DRADeviceTaints", KV_FROM_FLAG, &err), DD_EINVAL);
    assert_int_equal(kv_gates_set(&g, "DRADeviceTaints=maybe", KV_FROM_FLAG, &err), DD_EINVAL);
    /* Gates outside DRA change nothing here, and are accepted. */
    assert_int_equal(kv_gates_set(&g, "InPlacePodVerticalScaling=true", KV_FROM_FLAG, &err),
                     DD_OK);
    /* DeviceTaintRules take effect where their version is served and their gate is on. */
    kv_gates_init(&g, 37);
    assert_true(kv_taint_rules_effective(&g, "v1"));
    assert_false(kv_taint_rules_effective(&g, "v1alpha3"));
    kv_gates_init(&g, 36);
    assert_false(kv_taint_rules_effective(&g, "v1beta2"));
    kv_gates_set(&g, "DRADeviceTaintRules=true", KV_FROM_FLAG, NULL);
    assert_true(kv_taint_rules_effective(&g, "v1beta2"));
    assert_false(kv_taint_rules_effective(&g, "v1"));
    kv_gates_init(&g, 34);
    kv_gates_set(&g, "DRADeviceTaints=true", KV_FROM_FLAG, NULL);
    assert_true(kv_taint_rules_effective(&g, "v1alpha3"));
}

/* What the components say, per release. */
static void texts(void **state)
{
    char buf[512];
    (void)state;

    kv_cel_runtime_text(36, "gpu", NULL, 1, "d", "p", "x", "no such key: m", buf, sizeof(buf));
    assert_string_equal(buf, "class gpu: selector #1: CEL runtime error: no such key: m");
    kv_cel_runtime_text(37, "gpu", NULL, 1, "d", "p", "x", "no such key: m", buf, sizeof(buf));
    assert_string_equal(buf, "class gpu: selector #1 on device d/p/x: CEL runtime error: no such "
                             "key: m. consider using CEL optional chaining (.? followed by "
                             "orValue()) or guarding the check with has() for optional fields");
    kv_cel_runtime_text(37, NULL, "ns/c", 0, "d", "p", "x", "division by zero", buf, sizeof(buf));
    assert_string_equal(buf, "claim ns/c: selector #0 on device d/p/x: CEL runtime error: "
                             "division by zero");
    kv_invalid_pool_text(34, "p", "d0", buf, sizeof(buf));
    assert_string_equal(buf, "pool p is invalid: duplicate device name d0");
    kv_invalid_pool_text(35, "p", "d0", buf, sizeof(buf));
    assert_string_equal(buf, "invalid resource pools were encountered");
    assert_string_equal(kv_release_version(37), "v1.37.2");
    assert_string_equal(kv_release_version(35), "v1.35.4");
    assert_int_equal(kv_minor_of("v1.36.3-gke.100"), 36);
    assert_int_equal(kv_minor_of("2.0"), 0);
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
        cmocka_unit_test(gates),
        cmocka_unit_test(texts),
        cmocka_unit_test(serving),
        cmocka_unit_test(default_is_the_e2e_release),
        cmocka_unit_test(rules),
    };
    return cmocka_run_group_tests_name("kubever", tests, NULL, NULL);
}
