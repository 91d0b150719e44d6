/*
 * test_rules.c - each rule alone: a snapshot that must trigger it, and the
 * same snapshot fixed, which must not.  Objects are JSON built in the test.
 */
#include "rules_fixtures.h"


static void selector_matches_no_driver(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s]", CLASS("gpu", "device.driver == 'gpu.exmaple.com'"), SLICE2),
             "SelectorMatchesNoDriver", 1);
    assert_string_equal(f->obj.kind, "DeviceClass");
    assert_string_equal(f->obj.name, "gpu");
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_contains(f->message, "Did you mean 'gpu.example.com'?");
    assert_contains(f->fix, "spec.selectors[0].cel.expression");
    snap_free(&s);
    only(&s, objs("[%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
         "SelectorMatchesNoDriver", 0);
    snap_free(&s);
    /* A driver declared with --known-driver is known. */
    snap_load(&s, objs("[%s]", CLASS("x", "device.driver == 'x.vendor.io'")));
    {
        const char *known[] = { "x.vendor.io" };
        struct rule_options o = RULE_OPTIONS_INIT;
        o.known_drivers = known;
        o.nknown_drivers = 1;
        assert_int_equal(snap_run(&s, &o, "SelectorMatchesNoDriver"), 0);
        o.nknown_drivers = 0;
        /* Unknown, and no misspelling of a known name: installed elsewhere is as likely as
         * missing, so a warning that says how to declare it; an error only with --complete. */
        assert_int_equal(snap_run(&s, &o, "SelectorMatchesNoDriver"), 1);
        assert_int_equal(s.f.v[0].severity, DD_SEV_WARNING);
        assert_contains(s.f.v[0].message, "--known-driver");
        assert_null(strstr(s.f.v[0].message, "Did you mean"));
        o.complete = 1;
        assert_int_equal(snap_run(&s, &o, "SelectorMatchesNoDriver"), 1);
        assert_int_equal(s.f.v[0].severity, DD_SEV_ERROR);
    }
    snap_free(&s);
    /* Real drivers' names are never misspellings of each other, whatever is installed: the
     * example driver's cpu profile beside its gpu one, Intel's QAT beside its GPU driver. */
    only(&s, objs("[%s,%s]", CLASS("cpu", "device.driver == 'cpu.example.com'"), SLICE2),
         "SelectorMatchesNoDriver", 1);
    assert_int_equal(s.f.v[0].severity, DD_SEV_WARNING);
    assert_null(strstr(s.f.v[0].message, "Did you mean"));
    snap_free(&s);
    /* Nothing known in the input, but a near miss of a well-known driver is a typo. */
    only(&s, objs("[%s]", CLASS("n", "device.driver == \\\"gpu.nvida.com\\\"")),
         "SelectorMatchesNoDriver", 1);
    assert_contains(s.f.v[0].message, "gpu.nvidia.com");
    snap_free(&s);
    /* A claim's request selector is checked too; && chains and `in` lists are understood. */
    f = only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2,
                      CLAIM_SEL("c", "gpu", "device.driver in ['gpu.exmple.com'] && true")),
             "SelectorMatchesNoDriver", 1);
    assert_string_equal(f->obj.kind, "ResourceClaim");
    assert_contains(f->fix, "spec.devices.requests[0].exactly.selectors[0]");
    snap_free(&s);
}

static void selector_syntax_error(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s]", CLASS("gpu", "device.driver = 'gpu.example.com'"), SLICE2),
             "SelectorSyntaxError", 1);
    assert_contains(f->message, "does not compile");
    snap_free(&s);
    f = only(&s, objs("[%s,%s]", CLASS("gpu", "device.driver"), SLICE2), "SelectorSyntaxError", 1);
    assert_contains(f->message, "bool");
    snap_free(&s);
}

static void selector_unknown_attribute(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s]",
                      CLASS("gpu", "device.driver == 'gpu.example.com' && "
                                   "device.attributes['gpu.example.com'].modle == 'x'"),
                      SLICE2),
             "SelectorUnknownAttribute", 1);
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_contains(f->message, "no such key: modle");
    assert_contains(f->message, "Did you mean 'model'?");
    snap_free(&s);
    /* Guarded with has(): a missing key is false, not an error. */
    only(&s, objs("[%s,%s]",
                  CLASS("gpu", "device.driver == 'gpu.example.com' && "
                               "has(device.attributes['gpu.example.com'].modle) && "
                               "device.attributes['gpu.example.com'].modle == 'x'"),
                  SLICE2),
         "SelectorUnknownAttribute", 0);
    snap_free(&s);
    /* Capacity names are checked against capacity. */
    only(&s, objs("[%s,%s]",
                  CLASS("gpu", "device.capacity['gpu.example.com'].memory.compareTo("
                               "quantity('1Gi')) >= 0"),
                  SLICE2),
         "SelectorUnknownAttribute", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s]",
                  CLASS("gpu", "device.capacity['gpu.example.com'].model.compareTo(quantity('1')) > 0"), SLICE2),
         "SelectorUnknownAttribute", 1);
    snap_free(&s);
    /* Without published devices there is nothing to compare with. */
    only(&s, objs("[%s]", CLASS("gpu", "device.attributes['gpu.example.com'].modle == 'x'")),
         "SelectorUnknownAttribute", 0);
    snap_free(&s);
}

static void selector_runtime_error(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* index 0 divides by zero on gpu-0: the scheduler aborts, whatever gpu-1 says. */
    f = only(&s, objs("[%s,%s]",
                      CLASS("gpu", "device.driver == 'gpu.example.com' && "
                                   "10 / device.attributes['gpu.example.com'].index > 1"),
                      SLICE2),
             "SelectorRuntimeError", 1);
    assert_int_equal(f->severity, DD_SEV_ERROR);
    /* 1.37's scheduler names the device (dynamic-resource-allocation v0.37 allocator). */
    assert_contains(f->message, "class gpu: selector #0 on device gpu.example.com/n1/gpu-0: CEL "
                                "runtime error: division by zero");
    assert_contains(f->message, "1 of the 2 published device(s)");
    assert_contains(f->message, "device n1/gpu-0 of driver gpu.example.com");
    snap_free(&s);
    /* Up to 1.36 it does not. */
    {
        struct rule_options o = RULE_OPTIONS_INIT;
        o.kube_minor = 36;
        snap_load(&s, objs("[%s,%s]",
                           CLASS("gpu", "device.driver == 'gpu.example.com' && "
                                        "10 / device.attributes['gpu.example.com'].index > 1"),
                           SLICE2));
        assert_int_equal(snap_run(&s, &o, "SelectorRuntimeError"), 1);
        assert_contains(snap_get(&s, "SelectorRuntimeError")->message,
                        "class gpu: selector #0: CEL runtime error: division by zero");
        snap_free(&s);
    }
    /* A string attribute used as a bool. */
    f = only(&s, objs("[%s,%s]", CLASS("gpu", "device.attributes['gpu.example.com'].model"),
                      SLICE2),
             "SelectorRuntimeError", 1);
    assert_contains(f->message, "could not be converted to bool");
    snap_free(&s);
    /* The error is absorbed where the other side decides: no finding. */
    only(&s, objs("[%s,%s]",
                  CLASS("gpu", "device.attributes['gpu.example.com'].index == 7 && "
                               "10 / device.attributes['gpu.example.com'].index > 1"),
                  SLICE2),
         "SelectorRuntimeError", 0);
    snap_free(&s);
    /* A request's selector runs only on the devices its class admits (gpu-1 here). */
    only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.attributes['gpu.example.com'].index == 1"),
                  CLAIM_SEL("c", "gpu", "10 / device.attributes['gpu.example.com'].index == 10"),
                  SLICE2),
         "SelectorRuntimeError", 0);
    snap_free(&s);
    f = only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.attributes['gpu.example.com'].index == 0"),
                      CLAIM_SEL("c", "gpu", "10 / device.attributes['gpu.example.com'].index == 10"),
                      SLICE2),
             "SelectorRuntimeError", 1);
    assert_contains(f->message, "claim t/c: selector #0 on device gpu.example.com/n1/gpu-0: CEL "
                                "runtime error: division by zero");
    snap_free(&s);
    /* A missing key stays SelectorUnknownAttribute's: one finding, not two. */
    only(&s, objs("[%s,%s]", CLASS("gpu", "device.attributes['gpu.example.com'].modle == 'x'"),
                  SLICE2),
         "SelectorUnknownAttribute", 1);
    snap_free(&s);
}

/* objs() of a class, a claim with a selector, and one slice of ndev devices gpu-<i> of
 * index i: past 64, what a class admits spans words. */
static char *class_claim_slice(const char *class_expr, const char *claim_expr, int ndev)
{
    static char buf[BUF];
    int n, i;

    n = snprintf(buf, sizeof(buf),
                 "[" CLASS("gpu", "%s") "," CLAIM_SEL("c", "gpu", "%s") ","
                 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
                 "\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.example.com\","
                 "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":0,"
                 "\"resourceSliceCount\":1},\"devices\":[",
                 class_expr, claim_expr);
    for (i = 0; i < ndev && n > 0 && (size_t)n < sizeof(buf); i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n,
                      "%s{\"name\":\"gpu-%d\",\"attributes\":{\"index\":{\"int\":%d}}}",
                      i ? "," : "", i, i);
    if (n > 0 && (size_t)n < sizeof(buf))
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "]}}]");
    assert_true(n > 0 && (size_t)n < sizeof(buf));
    return buf;
}

/* A request's selector runs on exactly the devices its class admits, however many the
 * slices publish. */
static void request_selector_on_admitted_devices(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, class_claim_slice("device.attributes['gpu.example.com'].index == 100",
                                   "10 / (device.attributes['gpu.example.com'].index - 100) == 1",
                                   130),
             "SelectorRuntimeError", 1);
    assert_contains(f->message, "on device gpu.example.com/n1/gpu-100: CEL runtime error: "
                                "division by zero");
    snap_free(&s);
    /* Every device but gpu-100 divides by something else. */
    only(&s, class_claim_slice("device.attributes['gpu.example.com'].index != 100",
                               "10 / (device.attributes['gpu.example.com'].index - 100) == 1",
                               130),
         "SelectorRuntimeError", 0);
    snap_free(&s);
}

static void not_found_rules(void **state)
{
    struct snap s;
    struct rule_options complete = RULE_OPTIONS_INIT;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s]", POD("p", "resourceClaimName", "missing")), "ClaimNotFound", 1);
    assert_int_equal(f->severity, DD_SEV_WARNING);
    complete.complete = 1;
    assert_int_equal(snap_run(&s, &complete, "ClaimNotFound"), 1);
    assert_int_equal(s.f.v[0].severity, DD_SEV_ERROR);
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s]", POD("p", "resourceClaimName", "c"), CLAIM("c", "gpu"),
                  CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
         "ClaimNotFound", 0);
    snap_free(&s);
    f = only(&s, objs("[%s]", DEPLOY("d", "2", "tmpl")), "ClaimTemplateNotFound", 1);
    assert_string_equal(f->obj.kind, "Deployment");
    snap_free(&s);
    f = only(&s, objs("[%s,%s,%s]", CLAIM("c", "gpu.exampel.com"),
                      CLASS("gpu.example.com", "device.driver == 'gpu.example.com'"), SLICE2),
             "DeviceClassNotFound", 1);
    assert_contains(f->fix, "gpu.example.com");
    snap_free(&s);
}

static void quota_exceeded(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s,%s,%s]",
                      QUOTA("gpu.deviceclass.resource.k8s.io/devices", "1"),
                      CLAIM("first", "gpu"), CLAIM("second", "gpu"),
                      CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
             "QuotaExceeded", 1);
    assert_string_equal(f->obj.name, "second");
    assert_contains(f->fix, "at least 2");
    snap_free(&s);
    /* A rejected claim charges nothing: with room for one, the second and third are rejected. */
    only(&s, objs("[%s,%s,%s,%s,%s,%s]", QUOTA("gpu.deviceclass.resource.k8s.io/devices", "1"),
                  CLAIM("first", "gpu"), CLAIM("second", "gpu"), CLAIM("third", "gpu"),
                  CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
         "QuotaExceeded", 2);
    assert_string_equal(s.f.v[0].obj.name, "second");
    assert_string_equal(s.f.v[1].obj.name, "third");
    assert_contains(s.f.v[1].fix, "at least 2"); /* second was never admitted */
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s,%s]", QUOTA("gpu.deviceclass.resource.k8s.io/devices", "2"),
                  CLAIM("first", "gpu"), CLAIM("second", "gpu"),
                  CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
         "QuotaExceeded", 0);
    snap_free(&s);
    /* Claims generated from a template: one per replica. */
    f = only(&s, objs("[%s,%s,%s,%s,%s]", QUOTA("count/resourceclaims.resource.k8s.io", "1"),
                      TEMPLATE("tmpl", "gpu"), DEPLOY("d", "2", "tmpl"),
                      CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
             "QuotaExceeded", 1);
    assert_string_equal(f->obj.kind, "Deployment");
    assert_contains(f->message, "2 claim(s)");
    snap_free(&s);
}

/* A template asking for n devices of class cls. */
#define TEMPLATE_N(name, cls, n)                                                               \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":"   \
    "{\"name\":\"" name "\",\"namespace\":\"t\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":"  \
    "[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"" cls "\",\"count\":" n "}}]}}}}"

/* A claim asking for n devices of class cls. */
#define CLAIM_N(name, cls, n)                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"" \
    name "\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","         \
    "\"exactly\":{\"deviceClassName\":\"" cls "\",\"count\":" n "}}]}}}"

/* Each pod is allocated as the scheduler allocates it, on one node: the node of SLICE2 has
 * two GPUs. */
static void devices_do_not_fit(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"),
                      SLICE2, TEMPLATE_N("tmpl", "gpu", "3"), DEPLOY("d", "1", "tmpl")),
             "DevicesDoNotFit", 1);
    assert_string_equal(f->obj.kind, "Deployment");
    assert_contains(f->message, "n1: claim tmpl, request gpu asks for 3 devices");
    assert_contains(f->message, "no Node objects");
    assert_int_equal(f->severity, DD_SEV_WARNING); /* nodes assumed from the slices */
    assert_contains(f->fix, "at most 2 device(s)");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2,
                  TEMPLATE_N("tmpl", "gpu", "2"), DEPLOY("d", "3", "tmpl")),
         "DevicesDoNotFit", 0);
    snap_free(&s);
    /* The class selector narrows the inventory: only index 1 matches. */
    only(&s, objs("[%s,%s,%s,%s]",
                  CLASS("gpu", "device.attributes['gpu.example.com'].index == 1"), SLICE2,
                  TEMPLATE_N("tmpl", "gpu", "2"), DEPLOY("d", "1", "tmpl")),
         "DevicesDoNotFit", 1);
    snap_free(&s);
    /* Inventory from the example driver's profile: NUM_DEVICES per node, --nodes nodes. */
    f = only(&s, objs("[%s,%s,%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"),
                      DS(ENV("NUM_DEVICES", "1") "," ENV("CDI_ROOT", "/var/run/cdi"),
                         "/var/run/cdi"),
                      ROLE("[\"list\",\"watch\",\"create\",\"update\",\"delete\"]"),
                      TEMPLATE_N("tmpl", "gpu", "2"), DEPLOY("d", "1", "tmpl")),
             "DevicesDoNotFit", 1);
    assert_contains(f->message, "1 device(s) per node are assumed, on 1 node(s)");
    snap_free(&s);
    /* Live, the scheduler has only the slices: none of the driver's devices are assumed, and
     * the pod that needs them is left to DriverNotPublishing. */
    snap_load(&s, objs("[%s,%s,%s,%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"),
                       DS(ENV("NUM_DEVICES", "1") "," ENV("CDI_ROOT", "/var/run/cdi"),
                          "/var/run/cdi"),
                       ROLE("[\"list\",\"watch\",\"create\",\"update\",\"delete\"]"),
                       "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                       "\"n1\"}}",
                       CLAIM_N("c", "gpu", "2"), POD("p", "resourceClaimName", "c")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishing"), 1);
    assert_int_equal(snap_run(&s, &defaults, "DevicesDoNotFit"), 0);
    s.m.live = 0; /* the same objects as lint input: the profile's one device per node */
    assert_int_equal(snap_run(&s, &defaults, "DevicesDoNotFit"), 1);
    snap_free(&s);
}

static void driver_rbac_denied(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s]", DS(GOOD_ENV, "/var/run/cdi"),
                      ROLE("[\"get\",\"list\",\"watch\"]")),
             "DriverRBACDenied", 1);
    assert_string_equal(f->obj.kind, "ClusterRole");
    assert_string_equal(f->obj.name, "driver-role");
    assert_contains(f->message, "cannot create, update, delete");
    snap_free(&s);
    f = only(&s, objs("[%s,%s]", DS(GOOD_ENV, "/var/run/cdi"),
                      ROLE("[\"get\",\"create\",\"update\"]")),
             "DriverRBACDenied", 1);
    assert_contains(f->message, "cannot list, watch, delete");
    snap_free(&s);
    /* What a plugin's library calls, no more: dranet and dra-driver-cpu grant no get or patch. */
    only(&s, objs("[%s,%s]", DS(GOOD_ENV, "/var/run/cdi"),
                  ROLE("[\"list\",\"watch\",\"create\",\"update\",\"delete\"]")),
         "DriverRBACDenied", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s]", DS(GOOD_ENV, "/var/run/cdi"), ROLE("[\"*\"]")), "DriverRBACDenied", 0);
    snap_free(&s);
    /* No RBAC in the input: it lives elsewhere; only --complete judges it. */
    snap_load(&s, objs("[%s]", DS(GOOD_ENV, "/var/run/cdi")));
    assert_int_equal(snap_run(&s, &defaults, NULL), 0);
    {
        struct rule_options o = RULE_OPTIONS_INIT;
        o.complete = 1;
        assert_int_equal(snap_run(&s, &o, "DriverRBACDenied"), 1);
    }
    snap_free(&s);
}

static void cdi_spec_dir_not_shared(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* No CDI_ROOT: the driver writes to its default /etc/cdi inside the container. */
    f = only(&s, objs("[%s,%s]", DS(ENV("NUM_DEVICES", "8"), "/var/run/cdi"), ROLE("[\"*\"]")),
             "CDISpecDirNotShared", 1);
    assert_string_equal(f->obj.kind, "DaemonSet");
    assert_contains(f->message, "/etc/cdi");
    assert_contains(f->fix, "CDI_ROOT=/var/run/cdi");
    snap_free(&s);
    /* Mounted somewhere else: /cdi in the container is the host's /var/run/cdi. */
    only(&s, objs("[%s,%s]", DS(ENV("CDI_ROOT", "/cdi"), "/cdi"), ROLE("[\"*\"]")),
         "CDISpecDirNotShared", 0);
    snap_free(&s);
    /* A subdirectory of a shared mount is not a spec dir the runtime reads. */
    only(&s, objs("[%s,%s]", DS(ENV("CDI_ROOT", "/var/run/cdi/sub"), "/var/run/cdi"),
                  ROLE("[\"*\"]")),
         "CDISpecDirNotShared", 1);
    snap_free(&s);
}

static void cdi_disabled(void **state)
{
    struct snap s;
    struct cri_config cri;
    (void)state;

    memset(&cri, 0, sizeof(cri));
    cri.version = 2;
    cri.plugin = "io.containerd.grpc.v1.cri";
    cri.table = "plugins.\"io.containerd.grpc.v1.cri\"";
    cri.enable_cdi = 0;
    cri.enable_cdi_line = 7;
    snap_load_cri(&s, objs("[%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
                  &cri);
    assert_int_equal(snap_run(&s, &defaults, "CDIDisabled"), 1);
    assert_int_equal(s.f.v[0].line, 7);
    assert_string_equal(s.f.v[0].obj.kind, "ContainerdConfig");
    assert_contains(s.f.v[0].fix, "enable_cdi = true");
    assert_contains(s.f.v[0].fix, "[plugins.\"io.containerd.grpc.v1.cri\"]");
    snap_free(&s);
    cri.enable_cdi = 1;
    snap_load_cri(&s, objs("[%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2),
                  &cri);
    assert_int_equal(snap_run(&s, &defaults, "CDIDisabled"), 0);
    snap_free(&s);
    /* No DRA in the input: CDI off is not a DRA fault. */
    cri.enable_cdi = 0;
    snap_load_cri(&s, "[{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                      "\"x\"}}]", &cri);
    assert_int_equal(snap_run(&s, &defaults, NULL), 0);
    snap_free(&s);
}

#define NODE(name, runtime, ann)                                                               \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\","             \
    "\"annotations\":{" ann "}},\"status\":{\"nodeInfo\":{\"containerRuntimeVersion\":\""       \
    runtime "\"}}}"

/* On a cluster: the node agent's annotation is authoritative; without it, the runtime
 * version gives a warning that says it is inferred. */
static void cdi_disabled_on_nodes(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2,
                      NODE("n1", "containerd://1.7.24", "")),
             "CDIDisabled", 1);
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_string_equal(f->obj.kind, "Node");
    assert_string_equal(f->scope_node, "n1");
    assert_contains(f->message, "Inferred");
    snap_free(&s);
    only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2,
                  NODE("n1", "containerd://2.0.5", "")),
         "CDIDisabled", 0);
    snap_free(&s);
    /* The agent says CDI is on although 1.7 defaults it off: no finding. */
    only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2,
                  NODE("n1", "containerd://1.7.24",
                       "\"dra-doctor.io/cdi\":\"{\\\"version\\\":2,\\\"enableCDI\\\":true}\"")),
         "CDIDisabled", 0);
    snap_free(&s);
    f = only(&s, objs("[%s,%s,%s]", CLASS("gpu", "device.driver == 'gpu.example.com'"), SLICE2,
                      NODE("n1", "containerd://2.0.5",
                           "\"dra-doctor.io/cdi\":\"{\\\"version\\\":3,\\\"enableCDI\\\":false,"
                           "\\\"enableCDILine\\\":9,\\\"source\\\":\\\"/etc/containerd/config.toml\\\"}\"")),
             "CDIDisabled", 1);
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_contains(f->message, "node agent");
    snap_free(&s);
}

/* Live clusters: a driver that may publish but does not; SubjectAccessReview answers. */
static void live_driver_checks(void **state)
{
    struct snap s;
    const struct dra_sar deny[] = {
        { "drv", "sa", "create", 0 }, { "drv", "sa", "update", 1 }, { "drv", "sa", "delete", 1 },
    };
    (void)state;

    snap_load(&s, objs("[%s,%s]", DS(GOOD_ENV, "/var/run/cdi"), ROLE("[\"*\"]")));
    assert_int_equal(snap_run(&s, &defaults, NULL), 0); /* lint: slices are made at run time */
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, NULL), 1);
    assert_int_equal(snap_run(&s, &defaults, "DriverNotPublishing"), 1);
    assert_string_equal(s.f.v[0].scope_driver, "gpu.example.com");
    /* The SubjectAccessReview says no, whatever the RBAC objects say. */
    s.m.sar = deny;
    s.m.nsar = 3;
    assert_int_equal(snap_run(&s, &defaults, NULL), 1);
    assert_int_equal(snap_run(&s, &defaults, "DriverRBACDenied"), 1);
    assert_contains(s.f.v[0].message, "cannot create resourceslices");
    assert_contains(s.f.v[0].message, "SubjectAccessReview");
    snap_free(&s);
    /* Slices published: nothing to say. */
    snap_load(&s, objs("[%s,%s,%s]", DS(GOOD_ENV, "/var/run/cdi"), ROLE("[\"*\"]"), SLICE2));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, NULL), 0);
    snap_free(&s);
}

static void table_is_consistent(void **state)
{
    size_t n, i, j;
    const struct dd_rule *r = dd_rules(&n);
    (void)state;

    assert_true(n >= 11);
    for (i = 0; i < n; i++) {
        assert_ptr_equal(dd_rule_find(r[i].code), &r[i]);
        assert_true(strlen(r[i].summary) > 10);
        for (j = 0; j < i; j++)
            assert_string_not_equal(r[i].code, r[j].code);
    }
    assert_null(dd_rule_find("NoSuchRule"));
}

/* Did-you-mean: the closest name within a typo's reach (one edit up to 11 characters, two
 * from 12 on), the first of equals, nothing for names too far off or equal. */
static void nearest_name(void **state)
{
    static const char *const drivers[] = { "net.example.org", "gpu.example.com",
                                           "gpu.example.co", "fpga.example.com",
                                           "a-much-longer-driver-name.example.com" };
    static const char *const ties[] = { "abcx", "abxd", "abcd" };
    static const char *const short_names[] = { "dra.net", "dra.cpu" };
    (void)state;
    assert_string_equal(dd_rules_nearest("gpu.exmaple.com", drivers, 5), "gpu.example.com");
    /* A name is no misspelling of itself: the nearest other one. */
    assert_string_equal(dd_rules_nearest("gpu.example.com", drivers, 5), "gpu.example.co");
    assert_string_equal(dd_rules_nearest("gpu.example.cm", drivers, 5), "gpu.example.com");
    assert_string_equal(dd_rules_nearest("gpu.example.c", drivers, 5), "gpu.example.co");
    assert_string_equal(dd_rules_nearest("fgpa.exmaple.com", drivers, 5), "fpga.example.com");
    /* Three edits on 15 characters are another name, not a typo (qat.intel.com against
     * gpu.intel.com). */
    assert_null(dd_rules_nearest("tpu.eksample.io", drivers, 5));
    assert_null(dd_rules_nearest("fpga.exampel.org", drivers, 5));
    assert_string_equal(dd_rules_nearest("tpu.example.com", drivers, 5), "gpu.example.com");
    /* Short names allow one edit: dra.cup is dra.cpu; dra.nt is dra.net; dra.nat is not cpu. */
    assert_string_equal(dd_rules_nearest("dra.cup", short_names, 2), "dra.cpu");
    assert_string_equal(dd_rules_nearest("dra.nt", short_names, 2), "dra.net");
    assert_string_equal(dd_rules_nearest("dra.nat", short_names, 2), "dra.net");
    assert_null(dd_rules_nearest("dra.gpus", short_names, 2));
    assert_null(dd_rules_nearest("x", drivers, 5));
    assert_null(dd_rules_nearest("gpu.example.com", drivers, 0));
    /* Equally close: the first listed wins, whatever comes after. */
    assert_string_equal(dd_rules_nearest("abzx", ties, 3), "abcx");
    assert_null(dd_rules_nearest("abzz", ties, 3));
    assert_string_equal(dd_rules_nearest("a-much-longer-driver-name.exmaple.com", drivers, 5),
                        "a-much-longer-driver-name.example.com");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(selector_matches_no_driver),
        cmocka_unit_test(selector_syntax_error),
        cmocka_unit_test(selector_unknown_attribute),
        cmocka_unit_test(selector_runtime_error),
        cmocka_unit_test(request_selector_on_admitted_devices),
        cmocka_unit_test(not_found_rules),
        cmocka_unit_test(quota_exceeded),
        cmocka_unit_test(devices_do_not_fit),
        cmocka_unit_test(driver_rbac_denied),
        cmocka_unit_test(cdi_spec_dir_not_shared),
        cmocka_unit_test(cdi_disabled),
        cmocka_unit_test(cdi_disabled_on_nodes),
        cmocka_unit_test(live_driver_checks),
        cmocka_unit_test(table_is_consistent),
        cmocka_unit_test(nearest_name),
    };
    return cmocka_run_group_tests_name("rules", tests, NULL, NULL);
}
