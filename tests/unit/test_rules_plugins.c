/*
 * test_rules_plugins.c - where the kubelet plugins run: DriverDaemonSetMissingOnNode,
 * StaleResourceSlices; what drivers and schedulers may write: ClaimStatusRBACDenied.
 */
#include "rules_fixtures.h"
#include "model/kubever.h"

#define NODE(name, labels, spec)                                                               \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\",\"labels\":"  \
    "{" labels "}},\"spec\":{" spec "}}"
/* The example driver's DaemonSet with a nodeSelector. */
#define DS_SEL(sel)                                                                            \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"plugin\","    \
    "\"namespace\":\"drv\"},\"spec\":{\"template\":{\"spec\":{\"serviceAccountName\":\"sa\","   \
    "\"nodeSelector\":{" sel "},\"containers\":[{\"name\":\"plugin\",\"image\":"                 \
    "\"registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0\",\"env\":[" GOOD_ENV "],"   \
    "\"volumeMounts\":[{\"name\":\"cdi\",\"mountPath\":\"/var/run/cdi\"}]}],\"volumes\":[{"      \
    "\"name\":\"cdi\",\"hostPath\":{\"path\":\"/var/run/cdi\"}},{\"name\":\"reg\",\"hostPath\":"  \
    "{\"path\":\"/var/lib/kubelet/plugins_registry\"}}]}}}}"

static void daemonset_missing(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* NVIDIA-like: the DaemonSet wants NFD's PCI label, which no node has. */
    f = only(&s, objs("[%s,%s,%s]",
                      DS_SEL("\"feature.node.kubernetes.io/pci-10de.present\":\"true\""),
                      ROLE("[\"*\"]"), NODE("n1", "", "")),
             "DriverDaemonSetMissingOnNode", 1);
    assert_contains(f->message, "none of the 1 node(s)");
    assert_contains(f->message, "feature.node.kubernetes.io/pci-10de.present=true");
    /* Live, its DaemonSet has no pod to publish with: the placement is the cause, not a
     * failing plugin (DriverNotPublishing). */
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DriverDaemonSetMissingOnNode"), 1);
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishing"), 0);
    snap_free(&s);
    /* Yet slices of the driver for n1 exist: something publishes there (a plugin the input
     * does not show, or stale slices), so "no node publishes" would be false. */
    only(&s, objs("[%s,%s,%s,%s]",
                  DS_SEL("\"feature.node.kubernetes.io/pci-10de.present\":\"true\""),
                  ROLE("[\"*\"]"), NODE("n1", "", ""), SLICE2),
         "DriverDaemonSetMissingOnNode", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s,%s]", DS_SEL("\"gpu\":\"yes\""), ROLE("[\"*\"]"),
                  NODE("n1", "\"gpu\":\"yes\"", "")),
         "DriverDaemonSetMissingOnNode", 0);
    snap_free(&s);
    /* A DaemonSet tolerates the node-condition taints by itself; another taint it must. */
    only(&s, objs("[%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"),
                  NODE("n1", "", "\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\","
                                 "\"effect\":\"NoExecute\"}]")),
         "DriverDaemonSetMissingOnNode", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"),
                  NODE("n1", "", "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}]")),
         "DriverDaemonSetMissingOnNode", 1);
    snap_free(&s);
    /* The plugin runs on n1, the pod may only go to n2. */
    f = only(&s, objs("[%s,%s,%s,%s,%s,%s,{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
                      "{\"name\":\"p\",\"namespace\":\"t\"},\"spec\":{\"nodeSelector\":{\"zone\":"
                      "\"b\"},\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"
                      "\"tmpl\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":"
                      "{\"claims\":[{\"name\":\"gpu\"}]}}]}}]",
                      DS_SEL("\"zone\":\"a\""), ROLE("[\"*\"]"),
                      NODE("n1", "\"zone\":\"a\"", ""), NODE("n2", "\"zone\":\"b\"", ""),
                      CLASS("gpu", "device.driver == 'gpu.example.com'"), TEMPLATE("tmpl", "gpu")),
             "DriverDaemonSetMissingOnNode", 1);
    assert_contains(f->message, "Pod p may use (node n2:");
    snap_free(&s);
}

/* The plugin's DaemonSet for zone ds_zone, nodes n1 (zone a) and n2 (zone b), and a Pod that
 * may go to zone pod_zone only. */
#define ZONES(ds_zone, pod_zone)                                                               \
    "[" DS_SEL("\"zone\":\"" ds_zone "\"") "," ROLE("[\"*\"]") ","                              \
    NODE("n1", "\"zone\":\"a\"", "") ","                                                       \
    NODE("n2", "\"zone\":\"b\"", "") ","                                                       \
    CLASS("gpu", "device.driver == 'gpu.example.com'") "," TEMPLATE("tmpl", "gpu") ","          \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"t\"},"  \
    "\"spec\":{\"nodeSelector\":{\"zone\":\"" pod_zone "\"},\"resourceClaims\":[{\"name\":\"gpu\","  \
    "\"resourceClaimTemplateName\":\"tmpl\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\","    \
    "\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]}}]"

/* What the cache keeps of a model's nodes serves that model and models patched from it (other
 * Pods), and no other: there the rule works it out anew. */
static void plugin_sites_cache(void **state)
{
    static const char code[] = "DriverDaemonSetMissingOnNode";
    struct snap a, b, c;
    struct dra_model patched;
    struct rule_cache *rc;
    (void)state;

    snap_load(&a, ZONES("a", "b")); /* the pod may only go where the plugin cannot */
    snap_load(&b, ZONES("b", "b")); /* the plugin runs where the pod goes */
    snap_load(&c, ZONES("a", "a")); /* likewise */
    assert_non_null(rc = dd_rules_cache_new(&a.m));
    assert_int_equal(run_cached(&a.m, code, NULL), 1);
    assert_int_equal(run_cached(&a.m, code, rc), 1);
    assert_int_equal(run_cached(&b.m, code, NULL), 0);
    assert_int_equal(run_cached(&b.m, code, rc), 0); /* a's plugin placement would say 1 */
    assert_int_equal(run_cached(&c.m, code, rc), 0);
    patched = patched_model(&a.m, &c.m);
    assert_int_equal(run_cached(&patched, code, rc), 0); /* the Pod's part is never kept */
    free(patched.pods);
    dd_rules_cache_free(rc);
    snap_free(&a);
    snap_free(&b);
    snap_free(&c);
}

#define PLUGIN_POD(node, ready)                                                                \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"plugin-x\",\"namespace\":" \
    "\"drv\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"plugin\"}]},\"spec\":"      \
    "{\"nodeName\":\"" node "\",\"volumes\":[{\"name\":\"reg\",\"hostPath\":{\"path\":"            \
    "\"/var/lib/kubelet/plugins_registry\"}}]},\"status\":{\"conditions\":[{\"type\":\"Ready\","  \
    "\"status\":\"" ready "\"}]}}"

static void stale_slices(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* The plugin pod on n1 is not ready: n1's slice is stale. */
    snap_load(&s, objs("[%s,%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"), SLICE2,
                       PLUGIN_POD("n1", "False")));
    assert_int_equal(s.m.plugin_pods.n, 1);
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "StaleResourceSlices"), 1);
    f = snap_get(&s, "StaleResourceSlices");
    assert_contains(f->message, "no Ready pod of its DaemonSet drv/plugin runs there");
    assert_string_equal(f->scope_node, "n1");
    snap_free(&s);
    snap_load(&s, objs("[%s,%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"), SLICE2,
                       PLUGIN_POD("n1", "True")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "StaleResourceSlices"), 0);
    snap_free(&s);
    /* The driver is gone altogether. */
    snap_load(&s, objs("[%s]", SLICE2));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "StaleResourceSlices"), 1);
    assert_contains(snap_get(&s, "StaleResourceSlices")->message, "no kubelet plugin of that driver");
    snap_free(&s);
    /* lint: slices in a repository are examples. */
    only(&s, objs("[%s]", SLICE2), "StaleResourceSlices", 0);
    snap_free(&s);
}

#define EMPTY_SLICE(node)                                                                      \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"  \
    "\"s-" node "\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"" node "\","        \
    "\"pool\":{\"name\":\"" node "\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[]}}"
#define NODE_N(name) "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\"}}"

static void publishing_on_node(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* Ready on n1, whose only slice lists no device. */
    snap_load(&s, objs("[%s,%s,%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"), EMPTY_SLICE("n1"),
                       PLUGIN_POD("n1", "True"), NODE_N("n1")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishingOnNode"), 1);
    f = snap_get(&s, "DriverNotPublishingOnNode");
    assert_contains(f->message, "list no device");
    assert_string_equal(f->scope_node, "n1");
    /* lint: slices are published at run time. */
    s.m.live = 0;
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishingOnNode"), 0);
    snap_free(&s);
    /* Ready on n2, where nothing is published, while n1 has its slice. */
    snap_load(&s, objs("[%s,%s,%s,%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"), SLICE2,
                       PLUGIN_POD("n2", "True"), NODE_N("n1"), NODE_N("n2")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishingOnNode"), 1);
    assert_contains(snap_get(&s, "DriverNotPublishingOnNode")->message, "none for n2");
    snap_free(&s);
    /* Publishing where it runs: nothing. */
    snap_load(&s, objs("[%s,%s,%s,%s,%s]", DS_SEL(""), ROLE("[\"*\"]"), SLICE2,
                       PLUGIN_POD("n1", "True"), NODE_N("n1")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishingOnNode"), 0);
    snap_free(&s);
}

/* A ClusterRole for ServiceAccount drv/sa with these rules (a JSON list), bound to it. */
#define ROLE_RULES(name, rules)                                                                \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"   \
    "{\"name\":\"" name "\"},\"rules\":" rules "},"                                              \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","         \
    "\"metadata\":{\"name\":\"" name "\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"      \
    "\"" name "\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"sa\","                \
    "\"namespace\":\"drv\"}]}"
#define RULE(res, verbs) "{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":[\"" res "\"],"     \
                         "\"verbs\":" verbs "}"
#define SLICE_RULE RULE("resourceslices", "[\"*\"]")
#define STATUS_RULE RULE("resourceclaims/status", "[\"update\",\"patch\"]")
#define DRIVER_RULE                                                                            \
    "{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":[\"resourceclaims/driver\"],"          \
    "\"resourceNames\":[\"gpu.example.com\"],\"verbs\":[\"associated-node:update\","           \
    "\"associated-node:patch\"]}"
#define BIND_RULE "{\"apiGroups\":[\"\"],\"resources\":[\"pods/binding\"],\"verbs\":[\"create\"]}"

static void claim_status_rbac(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    struct kv_gates g;
    const struct dd_finding *f;
    (void)state;

    /* A driver whose role writes claim status, without resourceclaims/driver: a warning. */
    snap_load(&s, objs("[%s,%s]", DS_SEL(""), ROLE_RULES("r", "[" SLICE_RULE "," STATUS_RULE "]")));
    assert_int_equal(snap_run(&s, &o, "ClaimStatusRBACDenied"), 1);
    f = snap_get(&s, "ClaimStatusRBACDenied");
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_string_equal(f->obj.kind, "DaemonSet");
    assert_contains(f->message, "resource=\\\"resourceclaims/driver\\\"");
    assert_contains(f->fix, "resourceNames: [gpu.example.com]");
    /* 1.35 has no granular authorization: nothing to ask for. */
    kv_gates_init(&g, 35);
    o.kube_minor = 35;
    o.gates = &g;
    assert_int_equal(snap_run(&s, &o, "ClaimStatusRBACDenied"), 0);
    o.gates = NULL;
    o.kube_minor = 0;
    snap_free(&s);
    /* With it for its own name, or without status writes at all: nothing. */
    snap_load(&s, objs("[%s,%s]", DS_SEL(""),
                       ROLE_RULES("r", "[" SLICE_RULE "," STATUS_RULE "," DRIVER_RULE "]")));
    assert_int_equal(snap_run(&s, &o, "ClaimStatusRBACDenied"), 0);
    snap_free(&s);
    snap_load(&s, objs("[%s,%s]", DS_SEL(""), ROLE("[\"*\"]")));
    assert_int_equal(snap_run(&s, &o, "ClaimStatusRBACDenied"), 0);
    snap_free(&s);
    /* A scheduler (it binds pods) writing claim status without resourceclaims/binding: an
     * error on its role. */
    snap_load(&s, objs("[%s]", ROLE_RULES("sched", "[" BIND_RULE "," STATUS_RULE "]")));
    assert_int_equal(snap_run(&s, &o, "ClaimStatusRBACDenied"), 1);
    f = snap_get(&s, "ClaimStatusRBACDenied");
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_string_equal(f->obj.kind, "ClusterRole");
    assert_contains(f->message, "changing status.allocation or status.reservedFor requires "
                                "resource=\\\"resourceclaims/binding\\\"");
    snap_free(&s);
    snap_load(&s, objs("[%s]", ROLE_RULES("sched", "[" BIND_RULE "," STATUS_RULE ","
                                                  RULE("resourceclaims/binding",
                                                       "[\"update\",\"patch\"]") "]")));
    assert_int_equal(snap_run(&s, &o, "ClaimStatusRBACDenied"), 0);
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(daemonset_missing),
        cmocka_unit_test(plugin_sites_cache),
        cmocka_unit_test(stale_slices),
        cmocka_unit_test(claim_status_rbac),
        cmocka_unit_test(publishing_on_node),
    };
    return cmocka_run_group_tests_name("rules_plugins", tests, NULL, NULL);
}
