/*
 * test_rules_pods.c - the pod's side of its claims: ContainerClaimNameUnknown,
 * ClaimNotConsumedByContainer, PodBypassesScheduler, DeviceUnhealthy.
 */
#include "rules_fixtures.h"

#define EXAMPLE_CLASS CLASS("gpu", "device.driver == 'gpu.example.com'")
#define NET_CLASS CLASS("net", "device.driver == 'dra.net'")

/* A pod with claim "gpu" (from template tmpl) and containers given as JSON. */
#define POD_CTRS(name, extra, ctrs)                                                            \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\","             \
    "\"namespace\":\"t\"},\"spec\":{" extra "\"resourceClaims\":[{\"name\":\"gpu\","            \
    "\"resourceClaimTemplateName\":\"tmpl\"}],\"containers\":" ctrs "}}"
#define USES(claim) "{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"claims\":[" claim "]}}"

static void container_claim_name_unknown(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      POD_CTRS("p", "", "[" USES("{\"name\":\"gpu\"},{\"name\":\"gpus\"}") "]")),
             "ContainerClaimNameUnknown", 1);
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_contains(f->message, "\"gpus\"");
    assert_contains(f->message, "spec.containers[0].resources.claims[1]: Not found");
    assert_contains(f->fix, "(gpu)");
    snap_free(&s);
    /* The API server refuses such a pod: a live one cannot have it. */
    snap_load(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                       POD_CTRS("p", "", "[" USES("{\"name\":\"gpu\"},{\"name\":\"gpus\"}") "]")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "ContainerClaimNameUnknown"), 0);
    snap_free(&s);
}

static void claim_not_consumed(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* No container lists the claim. */
    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      POD_CTRS("p", "", "[{\"name\":\"c\",\"image\":\"i\"}]")),
             "ClaimNotConsumedByContainer", 1);
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_contains(f->message, "no container lists claim \"gpu\"");
    snap_free(&s);
    /* One container does: enough. */
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                  POD_CTRS("p", "", "[{\"name\":\"side\",\"image\":\"i\"}," USES("{\"name\":\"gpu\"}")
                           "]")),
         "ClaimNotConsumedByContainer", 0);
    snap_free(&s);
    /* A request the template lacks gives the container nothing. */
    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      POD_CTRS("p", "", "[" USES("{\"name\":\"gpu\",\"request\":\"gpus\"}") "]")),
             "ClaimNotConsumedByContainer", 1);
    assert_contains(f->message, "request \"gpus\"");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                  POD_CTRS("p", "", "[" USES("{\"name\":\"gpu\",\"request\":\"gpu\"}") "]")),
         "ClaimNotConsumedByContainer", 0);
    snap_free(&s);
    /* dranet moves interfaces into the pod's namespace: its pods list no claim, rightly. */
    snap_load(&s, objs("[%s,%s,%s]", NET_CLASS, TEMPLATE("tmpl", "net"),
                       POD_CTRS("p", "", "[{\"name\":\"c\",\"image\":\"i\"}]")));
    assert_int_equal(snap_run(&s, &defaults, "ClaimNotConsumedByContainer"), 0);
    snap_free(&s);
    /* A driver nothing tells about: no judgement. */
    snap_load(&s, objs("[%s,%s,%s]", CLASS("x", "device.driver == 'x.acme.io'"),
                       TEMPLATE("tmpl", "x"), POD_CTRS("p", "", "[{\"name\":\"c\",\"image\":\"i\"}]")));
    assert_int_equal(snap_run(&s, &defaults, "ClaimNotConsumedByContainer"), 0);
    snap_free(&s);
}

static void pod_bypasses_scheduler(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      POD_CTRS("p", "\"nodeName\":\"n1\",", "[" USES("{\"name\":\"gpu\"}") "]")),
             "PodBypassesScheduler", 1);
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_contains(f->message, "is not allowed to use ResourceClaim");
    assert_contains(f->fix, "kubernetes.io/hostname: n1");
    assert_string_equal(f->scope_node, "n1");
    snap_free(&s);
    /* A claim someone else allocated already may be used (kube-controller-manager reserves it
     * for the pod). */
    snap_load(&s, objs("[%s,%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                       "\"metadata\":{\"name\":\"c\",\"namespace\":\"t\"},\"spec\":{\"devices\":"
                       "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu\"}}]}},"
                       "\"status\":{\"allocation\":{\"devices\":{\"results\":[]}}}},"
                       "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                       "\"namespace\":\"t\"},\"spec\":{\"nodeName\":\"n1\",\"resourceClaims\":"
                       "[{\"name\":\"gpu\",\"resourceClaimName\":\"c\"}],\"containers\":["
                       USES("{\"name\":\"gpu\"}") "]}}]", EXAMPLE_CLASS, SLICE2));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "PodBypassesScheduler"), 0);
    snap_free(&s);
    /* Live, the kubelet marks a pinned pod PodScheduled too: an unallocated claim is what
     * proves the scheduler never saw it. */
    snap_load(&s, objs("[%s,%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                       "\"metadata\":{\"name\":\"c\",\"namespace\":\"t\"},\"spec\":{\"devices\":"
                       "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu\"}}]}}},"
                       "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                       "\"namespace\":\"t\"},\"spec\":{\"nodeName\":\"n1\",\"resourceClaims\":"
                       "[{\"name\":\"gpu\",\"resourceClaimName\":\"c\"}],\"containers\":["
                       USES("{\"name\":\"gpu\"}") "]},\"status\":{\"phase\":\"Pending\",\"conditions\":"
                       "[{\"type\":\"PodScheduled\",\"status\":\"True\"}]}}]", EXAMPLE_CLASS, SLICE2));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "PodBypassesScheduler"), 1);
    snap_free(&s);
    /* Workloads carry no nodeName of their own pods. */
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                  POD_CTRS("p", "", "[" USES("{\"name\":\"gpu\"}") "]")),
         "PodBypassesScheduler", 0);
    snap_free(&s);
}

/* A running pod whose container status carries the kubelet's health report. */
#define RUNNING(health)                                                                        \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"t\"}," \
    "\"spec\":{\"nodeName\":\"n1\",\"resourceClaims\":[{\"name\":\"gpu\","                 \
    "\"resourceClaimTemplateName\":\"tmpl\"}],\"containers\":[" USES("{\"name\":\"gpu\"}") "]}," \
    "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"PodScheduled\"}],"           \
    "\"containerStatuses\":[{\"name\":\"c\","                \
    "\"allocatedResourcesStatus\":[{\"name\":\"claim:gpu\",\"resources\":["                   \
    "{\"resourceID\":\"k8s.gpu.example.com/gpu=gpu-0\",\"health\":\"Healthy\"},"               \
    "{\"resourceID\":\"k8s.gpu.example.com/gpu=gpu-1\",\"health\":\"" health "\"}]}]}]}}"

static void device_unhealthy(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    snap_load(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                       RUNNING("Unhealthy")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DeviceUnhealthy"), 1);
    f = snap_get(&s, "DeviceUnhealthy");
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_contains(f->message, "container c runs with device k8s.gpu.example.com/gpu=gpu-1 "
                                "(pod claim gpu)");
    assert_contains(f->fix, "node n1");
    assert_string_equal(f->scope_node, "n1");
    snap_free(&s);
    /* Unknown is what the kubelet says when the driver does not report: no judgement. */
    snap_load(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                       RUNNING("Unknown")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DeviceUnhealthy"), 0);
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(container_claim_name_unknown),
        cmocka_unit_test(claim_not_consumed),
        cmocka_unit_test(pod_bypasses_scheduler),
        cmocka_unit_test(device_unhealthy),
    };
    return cmocka_run_group_tests_name("rules_pods", tests, NULL, NULL);
}
