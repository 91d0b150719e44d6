/*
 * test_rules_scheduling.c - where the pod may go against where its devices are:
 * PodConstraintsExcludeDeviceNodes, ClaimAllocatedOnOtherNode.
 */
#include "rules_fixtures.h"
#include "rules/diagnose.h"

#define EXAMPLE_CLASS CLASS("gpu", "device.driver == 'gpu.example.com'")
#define NODE(name, labels, spec)                                                               \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\",\"labels\":"  \
    "{" labels "}},\"spec\":{" spec "}}"
#define GPU_TAINT "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}]"
#define PENDING(extra)                                                                         \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"t\"},"  \
    "\"spec\":{" extra "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"      \
    "\"tmpl\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"claims\":"      \
    "[{\"name\":\"gpu\"}]}}]}}"

static void pod_constraints(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* The GPU node is tainted; the pod has no toleration (a device plugin pod would). */
    f = only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      NODE("n1", "", GPU_TAINT), PENDING("")),
             "PodConstraintsExcludeDeviceNodes", 1);
    assert_contains(f->message, "n1: node(s) had untolerated taint {nvidia.com/gpu: present}");
    assert_contains(f->message, "ExtendedResourceToleration");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                  NODE("n1", "", GPU_TAINT),
                  PENDING("\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],")),
         "PodConstraintsExcludeDeviceNodes", 0);
    snap_free(&s);
    /* A nodeSelector for labels the GPU node lacks. */
    f = only(&s, objs("[%s,%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      NODE("n1", "\"zone\":\"a\"", ""), NODE("n2", "\"zone\":\"b\"", ""),
                      PENDING("\"nodeSelector\":{\"zone\":\"b\"},")),
             "PodConstraintsExcludeDeviceNodes", 1);
    assert_contains(f->message, "n1: node(s) didn't match Pod's node affinity/selector");
    assert_null(strstr(f->message, "n2:"));
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                  NODE("n1", "\"zone\":\"a\"", ""), PENDING("\"nodeSelector\":{\"zone\":\"a\"},")),
         "PodConstraintsExcludeDeviceNodes", 0);
    snap_free(&s);
    /* Node affinity, and a cordoned node. */
    only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                  NODE("n1", "\"zone\":\"a\"", ""),
                  PENDING("\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnored"
                          "DuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
                          "\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}]}}},")),
         "PodConstraintsExcludeDeviceNodes", 1);
    snap_free(&s);
    f = only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"),
                      NODE("n1", "", "\"unschedulable\":true"), PENDING("")),
             "PodConstraintsExcludeDeviceNodes", 1);
    assert_contains(f->message, "unschedulable");
    snap_free(&s);
    /* No Node objects: nothing to judge. */
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, TEMPLATE("tmpl", "gpu"), PENDING("")),
         "PodConstraintsExcludeDeviceNodes", 0);
    snap_free(&s);
}

/* The example class's devices on node dev_node (of n1 in zone a, n2 in zone b), and a pending
 * pod that may go to zone pod_zone only. */
#define DEVICES_ON(dev_node, pod_zone)                                                         \
    "[" EXAMPLE_CLASS ",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","     \
    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\""      \
    dev_node "\",\"pool\":{\"name\":\"p\",\"generation\":0,\"resourceSliceCount\":1},"          \
    "\"devices\":[" DEV(0) "]}}," TEMPLATE("tmpl", "gpu") "," NODE("n1", "\"zone\":\"a\"", "") ","  \
    NODE("n2", "\"zone\":\"b\"", "") "," PENDING("\"nodeSelector\":{\"zone\":\"" pod_zone "\"},") "]"

/* Where a class has devices, kept once per model (rule_options.cache), serves that model and
 * models patched from it (other Pods), and no other. */
static void class_sites_cache(void **state)
{
    static const char code[] = "PodConstraintsExcludeDeviceNodes";
    struct snap a, b, c;
    struct dra_model patched;
    struct rule_cache *rc;
    (void)state;

    snap_load(&a, DEVICES_ON("n1", "b")); /* the pod may go only where no device is */
    snap_load(&b, DEVICES_ON("n2", "b")); /* where the devices are */
    snap_load(&c, DEVICES_ON("n1", "a")); /* likewise */
    assert_non_null(rc = dd_rules_cache_new(&a.m));
    assert_int_equal(run_cached(&a.m, code, NULL), 1);
    assert_int_equal(run_cached(&a.m, code, rc), 1);
    assert_int_equal(run_cached(&b.m, code, NULL), 0);
    assert_int_equal(run_cached(&b.m, code, rc), 0); /* a's devices would say 1 */
    assert_int_equal(run_cached(&c.m, code, rc), 0);
    patched = patched_model(&a.m, &c.m);
    assert_int_equal(run_cached(&patched, code, rc), 0); /* the Pod's part is never kept */
    free(patched.pods);
    dd_rules_cache_free(rc);
    snap_free(&a);
    snap_free(&b);
    snap_free(&c);
}

#define ALLOCATED(node)                                                                        \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"  \
    "\"shared\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","    \
    "\"exactly\":{\"deviceClassName\":\"gpu\"}}]}},\"status\":{\"allocation\":{\"devices\":"     \
    "{\"results\":[]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"      \
    "\"metadata.name\",\"operator\":\"In\",\"values\":[\"" node "\"]}]}]}}}}"
#define USER(name, extra)                                                                      \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":" \
    "\"t\"},\"spec\":{" extra "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":"       \
    "\"shared\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"claims\":"     \
    "[{\"name\":\"gpu\"}]}}]}}"

static void claim_on_other_node(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* Pod a runs on n1 with the claim; pod b may not go to n1. */
    snap_load(&s, objs("[%s,%s,%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, ALLOCATED("n1"),
                       NODE("n1", "\"zone\":\"a\"", ""), NODE("n2", "\"zone\":\"b\"", ""),
                       USER("a", "\"nodeName\":\"n1\","),
                       USER("b", "\"nodeSelector\":{\"zone\":\"b\"},")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "ClaimAllocatedOnOtherNode"), 1);
    f = snap_get(&s, "ClaimAllocatedOnOtherNode");
    assert_string_equal(f->obj.name, "b");
    assert_contains(f->message, "already allocated on node n1 (for 1 other pod(s))");
    assert_contains(f->message, "resourceclaim not available on the node");
    /* Where the allocated claim's devices are is this rule's; not a second finding. */
    assert_int_equal(snap_run(&s, &defaults, "PodConstraintsExcludeDeviceNodes"), 0);
    /* And the pod's diagnosis says so, though its one claim is allocated. */
    {
        struct diag_result r;
        size_t k;
        for (k = 0; strcmp(s.m.pods[k]->o.name, "b"); k++)
            ;
        diag_pod(&s.m, &s.f, s.m.pods[k], &r);
        assert_false(r.healthy);
        assert_string_equal(r.codes[0], "ClaimAllocatedOnOtherNode");
    }
    snap_free(&s);
    /* b may go to n1: fine. */
    snap_load(&s, objs("[%s,%s,%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, ALLOCATED("n1"),
                       NODE("n1", "\"zone\":\"a\"", ""), USER("a", "\"nodeName\":\"n1\","),
                       USER("b", "")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "ClaimAllocatedOnOtherNode"), 0);
    snap_free(&s);
    /* A Deployment whose replicas all name one claim of node-local devices share the device
     * and its node, as Kubernetes' own examples share one: nothing to report (the 53 false
     * warnings on bench/gen-repo.py's repository, whose shared claims are meant so)... */
#define REPLICAS(labels, spec)                                                                 \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","         \
    "\"namespace\":\"t\"},\"spec\":{\"replicas\":3,\"template\":{\"metadata\":{\"labels\":"      \
    labels "},\"spec\":{" spec "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":"    \
    "\"c\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"claims\":"       \
    "[{\"name\":\"gpu\"}]}" PORTS "}]}}}}"
#define PORTS ""
#define APART(op) "\"affinity\":{\"podAntiAffinity\":{\"" op "\":[{\"topologyKey\":"            \
    "\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":\"d\"}}}]}},"
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, CLAIM("c", "gpu"),
                  REPLICAS("{\"app\":\"d\"}", "")), "ClaimAllocatedOnOtherNode", 0);
    snap_free(&s);
    /* ... nor when they only prefer to be apart, or repel other pods than themselves ... */
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, CLAIM("c", "gpu"),
                  REPLICAS("{\"app\":\"d\"}",
                           "\"affinity\":{\"podAntiAffinity\":{"
                           "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"
                           "\"podAffinityTerm\":{\"topologyKey\":\"kubernetes.io/hostname\","
                           "\"labelSelector\":{\"matchLabels\":{\"app\":\"d\"}}}}]}},")),
         "ClaimAllocatedOnOtherNode", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, CLAIM("c", "gpu"),
                  REPLICAS("{\"app\":\"other\"}", APART("requiredDuringSchedulingIgnoredDuringExecution"))),
         "ClaimAllocatedOnOtherNode", 0);
    snap_free(&s);
    /* ... but replicas that may not share a node cannot all run where the claim is. */
    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, CLAIM("c", "gpu"),
                      REPLICAS("{\"app\":\"d\",\"tier\":\"x\"}",
                               APART("requiredDuringSchedulingIgnoredDuringExecution"))),
             "ClaimAllocatedOnOtherNode", 1);
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_contains(f->message, "all 3 replicas use ResourceClaim c");
    assert_contains(f->message, "required pod anti-affinity on kubernetes.io/hostname");
    snap_free(&s);
#undef PORTS
#define PORTS ",\"ports\":[{\"containerPort\":80,\"hostPort\":8080}]"
    f = only(&s, objs("[%s,%s,%s,%s]", EXAMPLE_CLASS, SLICE2, CLAIM("c", "gpu"),
                      REPLICAS("{\"app\":\"d\"}", "")), "ClaimAllocatedOnOtherNode", 1);
    assert_contains(f->message, "container c takes hostPort 8080");
    snap_free(&s);
#undef PORTS
#define PORTS ""
    /* Devices published for many nodes (a fabric, IMEX channels) are shared across them, and
     * without published devices nothing says where they are. */
#define DEPLOY_SHARED REPLICAS("{\"app\":\"d\"}", APART("requiredDuringSchedulingIgnoredDuringExecution"))
    snap_load(&s, objs("[%s,%s,%s]", EXAMPLE_CLASS, CLAIM("c", "gpu"), DEPLOY_SHARED));
    assert_int_equal(snap_run(&s, &defaults, "ClaimAllocatedOnOtherNode"), 0);
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
                  "\"metadata\":{\"name\":\"f\"},\"spec\":{\"driver\":\"gpu.example.com\","
                  "\"allNodes\":true,\"pool\":{\"name\":\"fabric\",\"generation\":1,"
                  "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"ch0\"}]}}]",
                  EXAMPLE_CLASS, CLAIM("c", "gpu"), DEPLOY_SHARED),
         "ClaimAllocatedOnOtherNode", 0);
    snap_free(&s);
}

/* Deployment `name` with `replicas` pods naming ResourceClaim c. */
#define SHARING(name, replicas)                                                                \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"" name "\","  \
    "\"namespace\":\"t\"},\"spec\":{\"replicas\":" replicas ",\"template\":{\"spec\":{"         \
    "\"resourceClaims\":[{\"name\":\"net\",\"resourceClaimName\":\"c\"}],\"containers\":"     \
    "[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"claims\":[{\"name\":\"net\"}]}}]}}}}"

#define FABRIC                                                                                 \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":" \
    "\"f\"},\"spec\":{\"driver\":\"gpu.example.com\",\"allNodes\":true,\"pool\":{\"name\":"    \
    "\"fabric\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"ch0\"}]}}"

static void reserved_for_limit(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    char *full, *o;
    size_t i, len = 0;
    (void)state;

    /* 200 + 100 pods on one claim: the second workload tips it over. */
    f = only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, FABRIC, CLAIM("c", "gpu"),
                      SHARING("a", "200"), SHARING("b", "100")), "ReservedForLimitReached", 1);
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_string_equal(f->obj.name, "b");
    assert_contains(f->message, "300 pods share ResourceClaim c");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s,%s]", EXAMPLE_CLASS, FABRIC, CLAIM("c", "gpu"),
                  SHARING("a", "200"), SHARING("b", "56")), "ReservedForLimitReached", 0);
    snap_free(&s);
    /* Live: reservedFor holds 256 pods and one more waits. */
    full = malloc(256 * 64 + 1024);
    assert_non_null(full);
    len += (size_t)sprintf(full, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                           "\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":"
                           "\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
                           "\"exactly\":{\"deviceClassName\":\"gpu\"}}]}},\"status\":{"
                           "\"allocation\":{\"devices\":{\"results\":[]}},\"reservedFor\":[");
    for (i = 0; i < 256; i++)
        len += (size_t)sprintf(full + len, "%s{\"resource\":\"pods\",\"name\":\"p%zu\","
                               "\"uid\":\"u%zu\"}", i ? "," : "", i, i);
    sprintf(full + len, "]}}");
    o = objs("[%s,%s,{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
             "\"late\",\"namespace\":\"t\"},\"spec\":{\"resourceClaims\":[{\"name\":"
             "\"gpu\",\"resourceClaimName\":\"c\"}],\"containers\":[{\"name\":\"c\","
             "\"image\":\"i\"}]}}]", EXAMPLE_CLASS, full);
    snap_load(&s, o);
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "ReservedForLimitReached"), 1);
    f = snap_get(&s, "ReservedForLimitReached");
    assert_string_equal(f->obj.name, "late");
    assert_contains(f->message, "already reserved for 256 pods");
    snap_free(&s);
    free(full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_constraints),
        cmocka_unit_test(class_sites_cache),
        cmocka_unit_test(claim_on_other_node),
        cmocka_unit_test(reserved_for_limit),
    };
    return cmocka_run_group_tests_name("rules_scheduling", tests, NULL, NULL);
}
