/*
 * test_rules_claims.c - a claim's asks against what it will get: AdminAccessNamespaceLabelMissing,
 * OpaqueConfigDriverMismatch, NodePrepareFailed (parameters), DeviceTaintNotTolerated,
 * PrioritizedListExhausted, AllocationModeAllUnsatisfiable.
 */
#include "rules_fixtures.h"
#include "model/kubever.h"

#define EXAMPLE_CLASS CLASS("gpu", "device.driver == 'gpu.example.com'")
#define NS(name, labels)                                                                       \
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" name "\","        \
    "\"labels\":{" labels "}}}"
#define CLAIM_X(name, exactly, config)                                                         \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"" \
    name "\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","         \
    "\"exactly\":{\"deviceClassName\":\"gpu\"" exactly "}}]" config "}}}"

static void admin_access(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, NS("t", ""),
                      CLAIM_X("a", ",\"adminAccess\":true", "")),
             "AdminAccessNamespaceLabelMissing", 1);
    assert_contains(f->message, "admin access to devices requires the "
                                "`resource.kubernetes.io/admin-access: true` label");
    assert_contains(f->fix, "kubectl label namespace t resource.kubernetes.io/admin-access=true");
    assert_contains(f->message, "the API server refuses the claim (\"spec.devices.requests[0]."
                                "adminAccess: Forbidden");
    snap_free(&s);
    /* Live, a template admitted before the label went: its pods' claims are refused. */
    snap_load(&s, objs("[%s,%s,%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                       "\"ResourceClaimTemplate\",\"metadata\":{\"name\":\"tm\",\"namespace\":"
                       "\"t\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
                       "\"exactly\":{\"deviceClassName\":\"gpu\",\"adminAccess\":true}}]}}}}]",
                       EXAMPLE_CLASS, SLICE2, NS("t", "")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "AdminAccessNamespaceLabelMissing"), 1);
    f = snap_get(&s, "AdminAccessNamespaceLabelMissing");
    assert_contains(f->message, "refuses each claim made from it");
    assert_contains(f->message, "FailedResourceClaimCreation");
    snap_free(&s);
    /* The 1.33 key no longer counts, and the message says it changed. */
    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                      NS("t", "\"resource.k8s.io/admin-access\":\"true\""),
                      CLAIM_X("a", ",\"adminAccess\":true", "")),
             "AdminAccessNamespaceLabelMissing", 1);
    assert_contains(f->message, "Kubernetes 1.34 renamed it");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                  NS("t", "\"resource.kubernetes.io/admin-access\":\"true\""),
                  CLAIM_X("a", ",\"adminAccess\":true", "")),
         "AdminAccessNamespaceLabelMissing", 0);
    snap_free(&s);
    /* Without the Namespace object, nothing to judge. */
    only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2, CLAIM_X("a", ",\"adminAccess\":true", "")),
         "AdminAccessNamespaceLabelMissing", 0);
    snap_free(&s);
}

#define OPAQUE(driver, params)                                                                 \
    ",\"config\":[{\"opaque\":{\"driver\":\"" driver "\",\"parameters\":" params "}}]"
#define GPUCONFIG(strategy)                                                                    \
    "{\"apiVersion\":\"gpu.resource.example.com/v1alpha1\",\"kind\":\"GpuConfig\",\"sharing\":"  \
    "{\"strategy\":\"" strategy "\"}}"

static void opaque_config(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                      CLAIM_X("c", "", OPAQUE("gpu.exmaple.com", GPUCONFIG("TimeSlicing")))),
             "OpaqueConfigDriverMismatch", 1);
    assert_contains(f->message, "skip the configuration of other drivers");
    assert_contains(f->message, "Did you mean 'gpu.example.com'?");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                  CLAIM_X("c", "", OPAQUE("gpu.example.com", GPUCONFIG("TimeSlicing")))),
         "OpaqueConfigDriverMismatch", 0);
    snap_free(&s);
    /* A parameter value the example driver refuses when it prepares the claim. */
    f = only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                      CLAIM_X("c", "", OPAQUE("gpu.example.com", GPUCONFIG("Timeslicing")))),
             "NodePrepareFailed", 1);
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_contains(f->message, "unknown GPU sharing strategy: Timeslicing");
    snap_free(&s);
}

#define NV_CLASS CLASS("gpu", "device.driver == 'gpu.nvidia.com'")
#define NVCONFIG(strategy)                                                                     \
    "{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"GpuConfig\",\"sharing\":"        \
    "{\"strategy\":\"" strategy "\"}}"
#define NV_DS(env)                                                                             \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"nv\","         \
    "\"namespace\":\"nv\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"gpus\","  \
    "\"image\":\"registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0\",\"command\":"   \
    "[\"bash\",\"-c\"],\"args\":[\"gpu-kubelet-plugin\"],\"env\":[" env "]}]}}}}"

/* NVIDIA's sharing strategies need the driver's own feature gates, off by default. */
static void driver_gates(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    snap_load(&s, objs("[%s,%s]", NV_CLASS, CLAIM_X("c", "", OPAQUE("gpu.nvidia.com",
                                                                    NVCONFIG("MPS")))));
    assert_int_equal(snap_run(&s, &defaults, "NodePrepareFailed"), 1);
    f = snap_get(&s, "NodePrepareFailed");
    assert_int_equal(f->severity, DD_SEV_WARNING); /* its DaemonSet is not in the input */
    assert_contains(f->message, "\"MPS\" is selected as the GPU sharing strategy, but the "
                                "\"MPSSupport\" feature gate is not enabled");
    assert_contains(f->message, "Assumed");
    snap_free(&s);
    snap_load(&s, objs("[%s,%s,%s]", NV_CLASS, NV_DS(""),
                       CLAIM_X("c", "", OPAQUE("gpu.nvidia.com", NVCONFIG("MPS")))));
    assert_int_equal(snap_run(&s, &defaults, "NodePrepareFailed"), 1);
    assert_int_equal(snap_get(&s, "NodePrepareFailed")->severity, DD_SEV_ERROR);
    snap_free(&s);
    snap_load(&s, objs("[%s,%s,%s]", NV_CLASS,
                       NV_DS(ENV("FEATURE_GATES", "TimeSlicingSettings=false,MPSSupport=true")),
                       CLAIM_X("c", "", OPAQUE("gpu.nvidia.com", NVCONFIG("MPS")))));
    assert_int_equal(snap_run(&s, &defaults, "NodePrepareFailed"), 0);
    snap_free(&s);
}

#define TAINTED_SLICE(effect)                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":" \
    "\"s\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":"    \
    "\"n1\",\"generation\":0,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"gpu-0\","       \
    "\"taints\":[{\"key\":\"example.com/unhealthy\",\"value\":\"true\",\"effect\":\"" effect "\"}]}]}}"

#define TAINT_RULE(v)                                                                          \
    "{\"apiVersion\":\"resource.k8s.io/" v "\",\"kind\":\"DeviceTaintRule\",\"metadata\":"        \
    "{\"name\":\"all\"},\"spec\":{\"taint\":{\"key\":\"maintenance\",\"effect\":\"NoExecute\"}}}"

/* A NoExecute rule without a selector evicts every DRA pod; one narrowed to a pool does not,
 * unless that pool is all there is. */
static void taint_rule_scope(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    const struct dd_finding *f;
    struct kv_gates g;
    (void)state;

    snap_load(&s, objs("[%s,%s," TAINT_RULE("v1") "]", EXAMPLE_CLASS, SLICE2));
    assert_int_equal(snap_run(&s, &o, "DeviceTaintRuleEvictsAll"), 1);
    f = snap_get(&s, "DeviceTaintRuleEvictsAll");
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_contains(f->message, "every device of every driver");
    assert_contains(f->message, "DRADeviceTaintRules on (1.37's default)");
    snap_free(&s);
    /* NoSchedule evicts nothing. */
    snap_load(&s, "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceTaintRule\","
                  "\"metadata\":{\"name\":\"r\"},\"spec\":{\"taint\":{\"key\":\"k\","
                  "\"effect\":\"NoSchedule\"}}}]");
    assert_int_equal(snap_run(&s, &o, "DeviceTaintRuleEvictsAll"), 0);
    snap_free(&s);
    /* A selector naming the only driver there is matches every published device too. */
    snap_load(&s, objs("[%s,%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                       "\"DeviceTaintRule\",\"metadata\":{\"name\":\"r\"},\"spec\":{"
                       "\"deviceSelector\":{\"driver\":\"gpu.example.com\"},\"taint\":{\"key\":"
                       "\"k\",\"effect\":\"NoExecute\"}}}]", EXAMPLE_CLASS, SLICE2));
    assert_int_equal(snap_run(&s, &o, "DeviceTaintRuleEvictsAll"), 1);
    assert_contains(snap_get(&s, "DeviceTaintRuleEvictsAll")->message, "all 2 of them");
    snap_free(&s);
    snap_load(&s, objs("[%s,%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                       "\"DeviceTaintRule\",\"metadata\":{\"name\":\"r\"},\"spec\":{"
                       "\"deviceSelector\":{\"device\":\"gpu-0\"},\"taint\":{\"key\":"
                       "\"k\",\"effect\":\"NoExecute\"}}}]", EXAMPLE_CLASS, SLICE2));
    assert_int_equal(snap_run(&s, &o, "DeviceTaintRuleEvictsAll"), 0);
    snap_free(&s);
    /* 1.36 ignores DeviceTaintRules by default: nothing is evicted. */
    kv_gates_init(&g, 36);
    o.kube_minor = 36;
    o.gates = &g;
    snap_load(&s, objs("[%s,%s," TAINT_RULE("v1beta2") "]", EXAMPLE_CLASS, SLICE2));
    assert_int_equal(snap_run(&s, &o, "DeviceTaintRuleEvictsAll"), 0);
    snap_free(&s);
}

static void device_taints(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, TAINTED_SLICE("NoSchedule"), CLAIM("c", "gpu")),
             "DeviceTaintNotTolerated", 1);
    assert_contains(f->message, "example.com/unhealthy=true:NoSchedule");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, TAINTED_SLICE("NoSchedule"),
                  CLAIM_X("c", ",\"tolerations\":[{\"key\":\"example.com/unhealthy\","
                               "\"operator\":\"Exists\"}]", "")),
         "DeviceTaintNotTolerated", 0);
    snap_free(&s);
    /* Effect None only informs. */
    only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, TAINTED_SLICE("None"), CLAIM("c", "gpu")),
         "DeviceTaintNotTolerated", 0);
    snap_free(&s);
    /* Before 1.36 the gate is off: taints do not filter. */
    snap_load(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, TAINTED_SLICE("NoSchedule"), CLAIM("c", "gpu")));
    o.kube_minor = 35;
    assert_int_equal(snap_run(&s, &o, "DeviceTaintNotTolerated"), 0);
    snap_free(&s);
    /* A DeviceTaintRule without a selector taints every device: in 1.37, a v1 one. */
    o.kube_minor = 0;
    snap_load(&s, objs("[%s,%s,%s," TAINT_RULE("v1") "]", EXAMPLE_CLASS, SLICE2,
                       CLAIM("c", "gpu")));
    assert_int_equal(snap_run(&s, &o, "DeviceTaintNotTolerated"), 1);
    assert_contains(snap_get(&s, "DeviceTaintNotTolerated")->message, "maintenance");
    snap_free(&s);
    /* Versions the release does not serve by default make no rule (the v1alpha3 one
     * from another project's fixtures), nor does a rule whose gate is off. */
    snap_load(&s, objs("[%s,%s,%s," TAINT_RULE("v1alpha3") "]", EXAMPLE_CLASS, SLICE2,
                       CLAIM("c", "gpu")));
    assert_int_equal(snap_run(&s, &o, "DeviceTaintNotTolerated"), 0);
    snap_free(&s);
    for (int minor = 34; minor <= 37; minor++) {
        struct kv_gates g;
        snap_load(&s, objs("[%s,%s,%s," TAINT_RULE("v1beta2") "]", EXAMPLE_CLASS, SLICE2,
                           CLAIM("c", "gpu")));
        kv_gates_init(&g, minor);
        o.kube_minor = minor;
        o.gates = &g;
        /* 1.36: DRADeviceTaintRules beta, off, its v1beta2 API off too. */
        assert_int_equal(snap_run(&s, &o, "DeviceTaintNotTolerated"), 0);
        /* Turned on, the operator serves its API: the rule counts where v1beta2 has it. */
        if (minor >= 35) {
            assert_int_equal(kv_gates_set(&g, "DRADeviceTaints=true,DRADeviceTaintRules=true",
                                          KV_FROM_FLAG, NULL), DD_OK);
            assert_int_equal(snap_run(&s, &o, "DeviceTaintNotTolerated"), minor >= 36);
        }
        snap_free(&s);
    }
    {
        struct kv_gates g;
        kv_gates_init(&g, 37);
        assert_int_equal(kv_gates_set(&g, "DRADeviceTaintRules=false", KV_FROM_FLAG, NULL), DD_OK);
        o.kube_minor = 37;
        o.gates = &g;
        snap_load(&s, objs("[%s,%s,%s," TAINT_RULE("v1") "]", EXAMPLE_CLASS, SLICE2,
                           CLAIM("c", "gpu")));
        assert_int_equal(snap_run(&s, &o, "DeviceTaintNotTolerated"), 0);
        snap_free(&s);
    }
}

#define FIRST_AVAILABLE(a, b)                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"  \
    "\"fa\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","        \
    "\"firstAvailable\":[" a "," b "]}]}}}"
#define ALT(name, cls, count) "{\"name\":\"" name "\",\"deviceClassName\":\"" cls "\",\"count\":" count "}"

static void first_available(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* 3 devices of a 2-device slice, then a class nobody made. */
    snap_load(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                       FIRST_AVAILABLE(ALT("big", "gpu", "3"), ALT("other", "nope", "1"))));
    assert_int_equal(snap_run(&s, &defaults, "PrioritizedListExhausted"), 1);
    f = snap_get(&s, "PrioritizedListExhausted");
    assert_contains(f->message, "big: it needs 3 device(s), 2 match");
    assert_contains(f->message, "other: DeviceClass nope does not exist");
    snap_free(&s);
    snap_load(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                       FIRST_AVAILABLE(ALT("big", "gpu", "3"), ALT("small", "gpu", "1"))));
    assert_int_equal(snap_run(&s, &defaults, "PrioritizedListExhausted"), 0);
    snap_free(&s);
}

static void all_mode(void **state)
{
    char devs[8192], json[16384];
    size_t len = 0, i;
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    for (i = 0; i < 33; i++)
        len += (size_t)snprintf(devs + len, sizeof(devs) - len, "%s{\"name\":\"d%zu\"}",
                                i ? "," : "", i);
    snprintf(json, sizeof(json),
             "[%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
             "{\"name\":\"big\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\","
             "\"pool\":{\"name\":\"n1\",\"generation\":0,\"resourceSliceCount\":1},\"devices\":[%s]}},"
             "%s]", EXAMPLE_CLASS, devs, CLAIM_X("all", ",\"allocationMode\":\"All\"", ""));
    f = only(&s, json, "AllocationModeAllUnsatisfiable", 1);
    assert_contains(f->message, "node n1 has 33 matching devices");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                  CLAIM_X("all", ",\"allocationMode\":\"All\"", "")),
         "AllocationModeAllUnsatisfiable", 0);
    snap_free(&s);
    f = only(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, SLICE2,
                      CLAIM_X("all", ",\"allocationMode\":\"All\",\"selectors\":[{\"cel\":"
                                     "{\"expression\":\"device.attributes['gpu.example.com']"
                                     ".index == 7\"}}]", "")),
             "AllocationModeAllUnsatisfiable", 1);
    assert_contains(f->message, "no published device matches");
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admin_access),   cmocka_unit_test(opaque_config),
        cmocka_unit_test(driver_gates),   cmocka_unit_test(device_taints),
        cmocka_unit_test(taint_rule_scope),
        cmocka_unit_test(first_available), cmocka_unit_test(all_mode),
    };
    return cmocka_run_group_tests_name("rules_claims", tests, NULL, NULL);
}
