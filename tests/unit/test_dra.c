/*
 * test_dra.c - the snapshot model: every served version normalises to the same
 * structures, workloads stand for the right number of pods, and driver
 * installations are recognised (and CSI plugins are not).
 */
#include "snap.h"

#include "formats/json.h"

static void quantities(void **state)
{
    int64_t v;
    (void)state;
    assert_true(dd_quantity_int("2", &v));
    assert_int_equal(v, 2);
    assert_true(dd_quantity_int("1k", &v));
    assert_int_equal(v, 1000);
    assert_true(dd_quantity_int("3Ki", &v));
    assert_int_equal(v, 3072);
    assert_true(dd_quantity_int("1e3", &v));
    assert_int_equal(v, 1000);
    assert_false(dd_quantity_int("500m", &v));
    assert_false(dd_quantity_int("1.5", &v));
    assert_false(dd_quantity_int("", &v));
    assert_false(dd_quantity_int("9Ei", &v)); /* overflows int64 */
    assert_false(dd_quantity_int("abc", &v));
}

#define SLICE(av, devices)                                                                     \
    "{\"apiVersion\":\"resource.k8s.io/" av "\",\"kind\":\"ResourceSlice\",\"metadata\":{"     \
    "\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n\",\"pool\":{"    \
    "\"name\":\"n\"},\"devices\":" devices "}}"

static void slice_versions(void **state)
{
    struct snap s;
    const struct cel_device *d;
    (void)state;

    snap_load(&s, "[" SLICE("v1", "[{\"name\":\"gpu-0\",\"attributes\":{\"model\":{\"string\":"
                                  "\"A\"},\"index\":{\"int\":3},\"example.com/flag\":{\"bool\":"
                                  "true},\"driverVersion\":{\"version\":\"1.2.3\"}},\"capacity\":"
                                  "{\"memory\":{\"value\":\"80Gi\"}}}]") ","
                  SLICE("v1beta1", "[{\"name\":\"gpu-1\",\"basic\":{\"attributes\":{\"model\":"
                                   "{\"string\":\"B\"}},\"capacity\":{\"memory\":{\"value\":"
                                   "\"40Gi\"}}}}]") ","
                  SLICE("v1alpha3", "[{\"name\":\"gpu-2\",\"basic\":{\"capacity\":{\"memory\":"
                                    "\"8Gi\"}}}]") "]");
    assert_int_equal(s.m.nslices, 3);
    d = &s.m.slices[0].dev[0].dev;
    assert_string_equal(d->driver, "gpu.example.com");
    assert_int_equal(d->nattrs, 4);
    assert_string_equal(d->attrs[0].domain, "gpu.example.com"); /* unqualified: the driver's */
    assert_int_equal(d->attrs[1].kind, CEL_ATTR_INT);
    assert_int_equal(d->attrs[1].i, 3);
    assert_string_equal(d->attrs[2].domain, "example.com"); /* qualified: its own domain */
    assert_string_equal(d->attrs[2].name, "flag");
    assert_int_equal(d->attrs[2].kind, CEL_ATTR_BOOL);
    assert_int_equal(d->attrs[3].kind, CEL_ATTR_VERSION);
    assert_string_equal(d->caps[0].quantity, "80Gi");
    d = &s.m.slices[1].dev[0].dev;
    assert_string_equal(d->attrs[0].s, "B");
    assert_string_equal(d->caps[0].quantity, "40Gi");
    assert_string_equal(s.m.slices[2].dev[0].dev.caps[0].quantity, "8Gi");
    snap_free(&s);
}

/* DRAListTypeAttributes: each list kind is read into its own member of the attribute (they
 * share one word), every value in order. */
static void list_attributes(void **state)
{
    struct snap s;
    const struct cel_device *d;
    (void)state;

    snap_load(&s, "[" SLICE("v1", "[{\"name\":\"gpu-0\",\"attributes\":{"
                                  "\"links\":{\"ints\":[3,-1,7]},\"ok\":{\"bools\":[false,true]},"
                                  "\"zones\":{\"strings\":[\"a\",\"b\"]},"
                                  "\"fw\":{\"versions\":[\"1.2.3\"]},\"none\":{\"ints\":[]}}}]") "]");
    d = &s.m.slices[0].dev[0].dev;
    assert_int_equal(d->nattrs, 5);
    assert_int_equal(d->attrs[0].kind, CEL_ATTR_INTS);
    assert_int_equal(d->attrs[0].nv, 3);
    assert_int_equal(d->attrs[0].iv[0], 3);
    assert_int_equal(d->attrs[0].iv[1], -1);
    assert_int_equal(d->attrs[0].iv[2], 7);
    assert_int_equal(d->attrs[1].kind, CEL_ATTR_BOOLS);
    assert_int_equal(d->attrs[1].nv, 2);
    assert_false(d->attrs[1].bv[0]);
    assert_true(d->attrs[1].bv[1]);
    assert_int_equal(d->attrs[2].kind, CEL_ATTR_STRINGS);
    assert_int_equal(d->attrs[2].nv, 2);
    assert_string_equal(d->attrs[2].sv[0], "a");
    assert_string_equal(d->attrs[2].sv[1], "b");
    assert_int_equal(d->attrs[3].kind, CEL_ATTR_VERSIONS);
    assert_int_equal(d->attrs[3].nv, 1);
    assert_string_equal(d->attrs[3].sv[0], "1.2.3");
    assert_int_equal(d->attrs[4].kind, CEL_ATTR_INTS);
    assert_int_equal(d->attrs[4].nv, 0);
    snap_free(&s);
}

static void claim_versions(void **state)
{
    struct snap s;
    const struct dra_request *r;
    (void)state;

    snap_load(&s, "[{\"apiVersion\":\"resource.k8s.io/v1beta2\",\"kind\":\"ResourceClaimTemplate\","
                  "\"metadata\":{\"name\":\"t\",\"namespace\":\"n\"},\"spec\":{\"spec\":{\"devices\":"
                  "{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\","
                  "\"allocationMode\":\"All\",\"selectors\":[{\"cel\":{\"expression\":\"true\"}}]}},"
                  "{\"name\":\"b\",\"firstAvailable\":[{\"name\":\"x\",\"deviceClassName\":\"big\"},"
                  "{\"name\":\"y\",\"deviceClassName\":\"small\",\"count\":2}]}]}}}}]");
    assert_int_equal(s.m.nclaims, 1);
    assert_true(s.m.claims[0].is_template);
    r = s.m.claims[0].spec.req;
    assert_int_equal(s.m.claims[0].spec.nreq, 2);
    assert_string_equal(r[0].class_name, "gpu");
    assert_true(r[0].all);
    assert_int_equal(r[0].nsel, 1);
    assert_non_null(r[0].sel[0].prog);
    assert_int_equal(r[1].nsub, 2);
    assert_null(r[1].class_name);
    assert_string_equal(r[1].sub[1].class_name, "small");
    assert_int_equal(r[1].sub[1].count, 2);
    assert_non_null(dra_find_claim(&s.m, "n", "t", 1));
    assert_null(dra_find_claim(&s.m, "n", "t", 0));
    assert_null(dra_find_claim(&s.m, "other", "t", 1));
    snap_free(&s);
}

#define WL(av, kind, spec)                                                                     \
    "{\"apiVersion\":\"" av "\",\"kind\":\"" kind "\",\"metadata\":{\"name\":\"w\","          \
    "\"namespace\":\"n\"},\"spec\":" spec "}"
#define PODT "{\"spec\":{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimTemplateName\":\"t\"}]," \
             "\"containers\":[{\"name\":\"c\"}]}}"

static void workload_replicas(void **state)
{
    struct snap s;
    (void)state;

    snap_load(&s, "[" WL("apps/v1", "Deployment", "{\"template\":" PODT "}") ","
                  WL("apps/v1", "StatefulSet", "{\"replicas\":5,\"template\":" PODT "}") ","
                  WL("batch/v1", "Job", "{\"parallelism\":3,\"template\":" PODT "}") ","
                  WL("batch/v1", "CronJob", "{\"jobTemplate\":{\"spec\":{\"template\":" PODT "}}}") ","
                  WL("apps/v1", "ReplicaSet", "{\"replicas\":0,\"template\":" PODT "}") ","
                  WL("apps/v1", "Deployment", "{\"replicas\":4,\"template\":{\"spec\":{"
                                              "\"containers\":[{\"name\":\"c\"}]}}}") ","
                  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":"
                  "{\"serviceAccountName\":\"sa\",\"resourceClaims\":[{\"name\":\"g\","
                  "\"resourceClaimName\":\"c\"}]}}]");
    /* The Deployment without claims is not kept: it cannot hold a DRA fault. */
    assert_int_equal(s.m.npods, 6);
    assert_int_equal(s.m.pods[0]->replicas, 1);
    assert_int_equal(s.m.pods[1]->replicas, 5);
    assert_int_equal(s.m.pods[2]->replicas, 3);
    assert_int_equal(s.m.pods[3]->replicas, 1);
    assert_int_equal(s.m.pods[4]->replicas, 0);
    assert_int_equal(s.m.pods[5]->replicas, 1);
    assert_string_equal(s.m.pods[5]->service_account, "sa");
    assert_string_equal(s.m.pods[0]->service_account, "default");
    assert_string_equal(s.m.pods[0]->claims[0].tmpl, "t");
    assert_null(s.m.pods[0]->claims[0].claim);
    assert_int_equal(s.m.nobjects, 7);
    snap_free(&s);
}

/* dra_object_relevant is what lint drops early: 0 only where dra_model_add reads nothing. */
static void object_relevance(void **state)
{
    static const struct {
        const char *json;
        int relevant;
    } cases[] = {
        { WL("apps/v1", "Deployment", "{\"template\":" PODT "}"), 1 },
        { WL("apps/v1", "Deployment", "{\"template\":{\"spec\":{\"containers\":[]}}}"), 0 },
        { WL("apps/v1", "Deployment", "{\"template\":{\"spec\":{\"resourceClaims\":{}}}}"), 0 },
        { WL("apps/v1", "StatefulSet", "{\"template\":" PODT "}"), 1 },
        { WL("apps/v1", "ReplicaSet", "{}"), 0 },
        { WL("batch/v1", "Job", "{\"template\":" PODT "}"), 1 },
        { WL("batch/v1", "Job", "{\"resourceClaims\":[],\"template\":{}}"), 0 },
        { WL("batch/v1", "CronJob", "{\"jobTemplate\":{\"spec\":{\"template\":" PODT "}}}"), 1 },
        { WL("batch/v1", "CronJob", "{\"template\":" PODT "}"), 0 },
        { WL("apps/v1", "DaemonSet", "{}"), 1 },
        { WL("apps/v1", "ControllerRevision", "{}"), 0 },
        { WL("v1", "ConfigMap", "{}"), 0 },
        { WL("v1", "Service", "{}"), 0 },
        { WL("v1", "Pod", "{}"), 1 },
        { WL("v1", "ServiceAccount", "{}"), 1 },
        { WL("v1", "Namespace", "{}"), 1 },
        { WL("v1", "ResourceQuota", "{}"), 1 },
        { WL("v1", "Node", "{}"), 1 },
        { WL("v1", "Event", "{}"), 1 },
        { WL("events.k8s.io/v1", "Event", "{}"), 1 },
        { WL("events.k8s.io/v1", "Other", "{}"), 0 },
        { WL("resource.k8s.io/v1", "ResourceSlice", "{}"), 1 },
        { WL("resource.k8s.io/v1beta1", "DeviceClass", "{}"), 1 },
        /* Every resource.k8s.io object: its apiVersion is judged (APIVersionNotServed). */
        { WL("resource.k8s.io/v1", "DeviceTaintRule", "{}"), 1 },
        { WL("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "{}"), 1 },
        { WL("rbac.authorization.k8s.io/v1", "Other", "{}"), 0 },
        { WL("apps/v1beta9", "Deployment", "{\"template\":" PODT "}"), 1 },
        { WL("networking.k8s.io/v1", "Ingress", "{}"), 0 },
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *obj = cJSON_Parse(cases[i].json);
        struct dra_model m, empty;
        assert_non_null(obj);
        if (dra_object_relevant(obj) != cases[i].relevant)
            fail_msg("dra_object_relevant(%s) != %d", cases[i].json, cases[i].relevant);
        /* An object called irrelevant leaves the model as it was (but counted). */
        dra_model_init(&m, NULL, NULL);
        dra_model_init(&empty, NULL, NULL);
        assert_int_equal(dra_model_add(&m, obj, "f", 1), DD_OK);
        if (!cases[i].relevant) {
            m.nobjects = 0;
            if (memcmp(&m, &empty, sizeof(m)) != 0)
                fail_msg("irrelevant object changed the model: %s", cases[i].json);
        }
        dra_model_release(&m);
        cJSON_Delete(obj);
    }
    assert_int_equal(dra_kind_relevant("apps/v1", "Deployment"), DRA_KIND_USED_WITH_CLAIMS);
    assert_int_equal(dra_kind_relevant("v1", "ConfigMap"), DRA_KIND_IGNORED);
    assert_int_equal(dra_kind_relevant(NULL, "Pod"), DRA_KIND_IGNORED);
}

#define DSET(image, env, vols)                                                                 \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\","         \
    "\"namespace\":\"n\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","  \
    "\"image\":\"" image "\",\"args\":[\"--cdi-root\",\"/flag/cdi\"],\"env\":" env "}],"        \
    "\"volumes\":" vols "}}}}"
#define HP(name, path) "{\"name\":\"" name "\",\"hostPath\":{\"path\":\"" path "\"}}"
#define DSET_ARGS(image, env, args, vols)                                                      \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\","         \
    "\"namespace\":\"n\"},\"spec\":{\"template\":{\"spec\":{\"serviceAccountName\":\"sa\","    \
    "\"containers\":[{\"name\":\"c\",\"image\":\"" image "\",\"args\":" args ",\"env\":" env "}],"  \
    "\"volumes\":" vols "}}}}"
/* A ClusterRole with these verbs on resourceslices, bound to n/sa. */
#define SLICE_ROLE(verbs)                                                                      \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"    \
    "{\"name\":\"r\"},\"rules\":[{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":"          \
    "[\"resourceslices\"],\"verbs\":" verbs "}]},"                                           \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","          \
    "\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","   \
    "\"kind\":\"ClusterRole\",\"name\":\"r\"},\"subjects\":[{\"kind\":\"ServiceAccount\","     \
    "\"name\":\"sa\",\"namespace\":\"n\"}]}"
#define CLASS_OF(name, driver)                                                                 \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"" \
    name "\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == '" driver  \
    "'\"}}]}}"
#define NVIDIA_IMG "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0-dev"
#define NVIDIA_DS                                                                              \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"nv\","        \
    "\"namespace\":\"n\"},\"spec\":{\"template\":{\"spec\":{\"initContainers\":[{\"name\":"   \
    "\"init-container\",\"image\":\"" NVIDIA_IMG "\",\"command\":[\"bash\","                   \
    "\"/usr/bin/kubelet-plugin-prestart.sh\"]}],\"containers\":[{\"name\":\"compute-domains\","  \
    "\"image\":\"" NVIDIA_IMG "\",\"command\":[\"bash\",\"-c\"],\"args\":[\"if true; then\\n"  \
    "fi\\ncompute-domain-kubelet-plugin -v $(LOG_VERBOSITY)\"],\"env\":[{\"name\":\"CDI_ROOT\","  \
    "\"value\":\"/var/run/cdi\"}]},{\"name\":\"gpus\",\"image\":\"" NVIDIA_IMG "\","           \
    "\"command\":[\"bash\",\"-c\"],\"args\":[\"gpu-kubelet-plugin -v $(LOG_VERBOSITY)\"],"      \
    "\"env\":[{\"name\":\"CDI_ROOT\",\"value\":\"/var/run/cdi\"}]}]}}}}"

static void driver_detection(void **state)
{
    struct snap s;
    (void)state;

    /* By profile: the example driver's image; env overrides its defaults. */
    snap_load(&s, "[" DSET("registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0",
                           "[{\"name\":\"NUM_DEVICES\",\"value\":\"3\"}]", "[]") "]");
    assert_int_equal(s.m.ndrivers, 1);
    assert_string_equal(s.m.drivers[0].name, "gpu.example.com");
    assert_int_equal(s.m.drivers[0].num_devices, 3);
    assert_string_equal(s.m.drivers[0].cdi_root, "/flag/cdi");
    assert_int_equal(s.m.drivers[0].cdi_src, DRA_CDI_FLAG);
    snap_free(&s);
    /* CDI_ROOT beats the flag; DRIVER_NAME renames the driver. */
    snap_load(&s, "[" DSET("example/dra-example-driver:v1",
                           "[{\"name\":\"CDI_ROOT\",\"value\":\"/var/run/cdi\"},{\"name\":"
                           "\"DRIVER_NAME\",\"value\":\"gpu.acme.io\"}]", "[]") "]");
    assert_string_equal(s.m.drivers[0].name, "gpu.acme.io");
    assert_string_equal(s.m.drivers[0].cdi_root, "/var/run/cdi");
    assert_int_equal(s.m.drivers[0].num_devices, 8); /* the binary's default */
    snap_free(&s);
    /* NVIDIA: one DaemonSet, two driver names. */
    snap_load(&s, "[" DSET("nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.0", "[]", "[]") "]");
    assert_int_equal(s.m.ndrivers, 2);
    assert_string_equal(s.m.drivers[1].name, "compute-domain.nvidia.com");
    assert_int_equal(s.m.drivers[0].num_devices, -1);
    snap_free(&s);
    /* Unknown image: registration + CDI dir + plugin directory name. */
    snap_load(&s, "[" DSET("acme/plugin:1", "[]",
                           "[" HP("r", "/var/lib/kubelet/plugins_registry") ","
                           HP("p", "/var/lib/kubelet/plugins/fpga.acme.io") ","
                           HP("cdi", "/var/run/cdi") "]") "]");
    assert_int_equal(s.m.ndrivers, 1);
    assert_string_equal(s.m.drivers[0].name, "fpga.acme.io");
    assert_null(s.m.drivers[0].profile);
    snap_free(&s);
    /* A CSI node plugin registers too, but writes no CDI specs, names no DRA driver and may
     * do nothing to resourceslices: not a DRA driver. */
    snap_load(&s, "[" DSET_ARGS("k8s.gcr.io/csi-node-driver:1", "[]", "[\"--v=2\"]",
                                "[" HP("r", "/var/lib/kubelet/plugins_registry") ","
                                HP("p", "/var/lib/kubelet/plugins/ebs.csi.aws.com") "]") "]");
    assert_int_equal(s.m.ndrivers, 0);
    snap_free(&s);
    /* The same DaemonSet whose ServiceAccount may touch resourceslices is a DRA plugin (dranet
     * writes no CDI and sets no DRIVER_NAME); its name comes from the plugin directory. */
    snap_load(&s, "[" DSET_ARGS("acme/net-plugin:1", "[]", "[\"--v=2\"]",
                                "[" HP("r", "/var/lib/kubelet/plugins_registry") ","
                                HP("p", "/var/lib/kubelet/plugins/net.acme.io") "]") ","
                  SLICE_ROLE("[\"list\",\"watch\"]") "]");
    assert_int_equal(s.m.ndrivers, 1);
    assert_string_equal(s.m.drivers[0].name, "net.acme.io");
    assert_int_equal(s.m.drivers[0].writes_cdi, -1);
    assert_null(s.m.drivers[0].cdi_root);
    snap_free(&s);
    /* Registered through the whole plugins directory, no name anywhere: the DeviceClass shipped
     * beside it (same directory) names it. */
    snap_load(&s, "[" DSET_ARGS("acme/net-plugin:1", "[]", "[\"--v=2\"]",
                                "[" HP("p", "/var/lib/kubelet/plugins") "]") ","
                  SLICE_ROLE("[\"*\"]") "," CLASS_OF("acme", "net.acme.io") "]");
    assert_int_equal(s.m.ndrivers, 1);
    assert_string_equal(s.m.drivers[0].name, "net.acme.io");
    assert_string_equal(s.m.drivers[0].name_from, "DeviceClass beside it");
    assert_int_equal((int)s.m.ninstall_names, 1);
    snap_free(&s);
    /* No name in the DaemonSet, none beside it: the role that lets it write claim status
     * for its driver names it (dranet's chart). */
    snap_load(&s, "[" DSET_ARGS("acme/net-plugin:1", "[]", "[\"--v=2\"]",
                                "[" HP("p", "/var/lib/kubelet/plugins") "]") ","
                  SLICE_ROLE("[\"list\",\"watch\",\"create\",\"update\",\"delete\"]}," 
                             "{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":"
                             "[\"resourceclaims/driver\"],\"resourceNames\":[\"net.acme.io\"],"
                             "\"verbs\":[\"associated-node:patch\"]") "]");
    assert_int_equal(s.m.ndrivers, 1);
    assert_string_equal(s.m.drivers[0].name, "net.acme.io");
    assert_string_equal(s.m.drivers[0].name_from, "RBAC on resourceclaims/driver");
    snap_free(&s);
    /* NVIDIA's current chart: one image, two plugins under `bash -c`, an init container of the
     * same image that is neither. */
    snap_load(&s, "[" NVIDIA_DS "]");
    assert_int_equal(s.m.ndrivers, 2);
    assert_string_equal(s.m.drivers[0].name, "compute-domain.nvidia.com");
    assert_string_equal(s.m.drivers[0].ctr->name, "compute-domains");
    assert_string_equal(s.m.drivers[1].name, "gpu.nvidia.com");
    assert_string_equal(s.m.drivers[1].ctr->name, "gpus");
    assert_string_equal(s.m.drivers[1].cdi_root, "/var/run/cdi");
    snap_free(&s);
    /* The example driver's device profile names the driver (v0.3.0 and later). */
    snap_load(&s, "[" DSET("registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0",
                           "[{\"name\":\"DEVICE_PROFILE\",\"value\":\"cpu\"}]", "[]") "]");
    assert_string_equal(s.m.drivers[0].name, "cpu.example.com");
    snap_free(&s);
    /* dranet prepares devices through NRI: no CDI root, whatever it mounts. */
    snap_load(&s, "[" DSET_ARGS("registry.k8s.io/networking/dranet:stable", "[]",
                                "[\"/dranet\"]", "[" HP("c", "/var/run/cdi") "]") "]");
    assert_string_equal(s.m.drivers[0].name, "dra.net");
    assert_int_equal(s.m.drivers[0].writes_cdi, 0);
    assert_null(s.m.drivers[0].cdi_root);
    snap_free(&s);
}

static void env_and_flags(void **state)
{
    struct snap s;
    const struct dra_container *c;
    int line = -1;
    (void)state;

    snap_load(&s, "[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
                  "\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"c\"}],\"containers\":"
                  "[{\"name\":\"c\",\"command\":[\"plugin\",\"--cdi-root=/x\"],\"env\":["
                  "{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"A\",\"value\":\"2\"},"
                  "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}}]}]}}]");
    c = &s.m.pods[0]->ctr[0];
    assert_string_equal(dra_container_env(c, "A", &line), "2"); /* last wins, as in the kubelet */
    assert_null(dra_container_env(c, "B", NULL));
    assert_null(dra_container_env(c, "C", NULL));
    assert_string_equal(dra_container_flag(c, "--cdi-root"), "/x");
    assert_null(dra_container_flag(c, "--num-devices"));
    snap_free(&s);
}

/* Claims and classes added after dra_model_finish (the controller's stand-ins) are found
 * through the index too, however many; the first of two objects with one name wins. */
static void lookups_after_finish(void **state)
{
    struct snap s;
    cJSON *late = cJSON_CreateArray(), *it;
    char buf[256];
    int i;

    (void)state;
    snap_load(&s, "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                  "\"metadata\":{\"name\":\"gpu\"}},"
                  "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                  "\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"selectors\":[]}},"
                  "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                  "\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"}}]");
    assert_ptr_equal(dra_find_class(&s.m, "gpu"), &s.m.classes[0]);
    for (i = 0; i < 200; i++) {
        snprintf(buf, sizeof(buf), "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                 "\"ResourceClaim\",\"metadata\":{\"name\":\"late-%d\",\"namespace\":\"n\"}}", i);
        cJSON_AddItemToArray(late, cJSON_Parse(buf));
        snprintf(buf, sizeof(buf), "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                 "\"DeviceClass\",\"metadata\":{\"name\":\"late-%d\"}}", i);
        cJSON_AddItemToArray(late, cJSON_Parse(buf));
    }
    cJSON_ArrayForEach(it, late)
        assert_int_equal(dra_model_add(&s.m, it, NULL, 0), DD_OK);
    assert_non_null(dra_find_claim(&s.m, "n", "c", 0));
    for (i = 0; i < 200; i++) {
        snprintf(buf, sizeof(buf), "late-%d", i);
        assert_string_equal(dra_find_claim(&s.m, "n", buf, 0)->o.name, buf);
        assert_null(dra_find_claim(&s.m, "m", buf, 0));
        assert_string_equal(dra_find_class(&s.m, buf)->o.name, buf);
    }
    assert_int_equal(s.m.nclaims_indexed, s.m.nclaims);
    assert_int_equal(s.m.nclasses_indexed, s.m.nclasses);
    assert_ptr_equal(dra_find_class(&s.m, "gpu"), &s.m.classes[0]);
    assert_null(dra_find_class(&s.m, "late-200"));
    snap_free(&s);
    cJSON_Delete(late);
}

/* What a pod's claims resolve to is remembered at dra_model_finish, forgotten when a claim is
 * added after (a stand-in may be the one a pod names), and not taken for another model's. */
static void claims_resolved_once(void **state)
{
    static const char pod[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
        "\"n\"},\"spec\":{\"resourceClaims\":[{\"name\":\"a\",\"resourceClaimName\":\"c\"},{"
        "\"name\":\"b\",\"resourceClaimName\":\"late\"}],\"containers\":[{\"name\":\"x\","
        "\"image\":\"x\"}]}}";
    struct snap s, other;
    const struct dra_podspec *p;
    cJSON *late = cJSON_Parse("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                              "\"ResourceClaim\",\"metadata\":{\"name\":\"late\","
                              "\"namespace\":\"n\"}}");
    char text[1024];

    (void)state;
    snprintf(text, sizeof(text), "[%s,{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
             "\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"}}]", pod);
    snap_load(&s, text);
    snap_load(&other, "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                      "\"metadata\":{\"name\":\"late\",\"namespace\":\"n\"}}]");
    assert_int_equal(s.m.npods, 1);
    p = s.m.pods[0];
    assert_true(s.m.claims_gen != 0 && p->claims[0].gen == s.m.claims_gen);
    assert_ptr_equal(dra_pod_claim_resolve(&s.m, p, &p->claims[0]), &s.m.claims[0]);
    assert_null(dra_pod_claim_resolve(&s.m, p, &p->claims[1]));
    /* Another model's claims: looked up there, not remembered from s's. */
    assert_ptr_equal(dra_pod_claim_resolve(&other.m, p, &p->claims[1]), &other.m.claims[0]);
    assert_null(dra_pod_claim_resolve(&other.m, p, &p->claims[0]));
    assert_int_equal(dra_model_add(&s.m, late, NULL, 0), DD_OK);
    assert_int_equal(s.m.claims_gen, 0);
    assert_string_equal(dra_pod_claim_resolve(&s.m, p, &p->claims[1])->o.name, "late");
    dra_model_resolve_claims(&s.m, s.m.pods, s.m.npods);
    assert_true(s.m.claims_gen != 0 && p->claims[1].gen == s.m.claims_gen);
    assert_ptr_equal(p->claims[1].resolved, &s.m.claims[1]);
    assert_ptr_equal(dra_pod_claim_resolve(&s.m, p, &p->claims[1]), &s.m.claims[1]);
    snap_free(&s);
    snap_free(&other);
    cJSON_Delete(late);
}

static size_t add_all(struct dra_model *m, const cJSON *objs)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, objs)
        assert_int_equal(dra_model_add(m, it, NULL, 0), DD_OK);
    assert_int_equal(dra_model_finish(m), DD_OK);
    return m->nclasses;
}

/* Models sharing a cache of compiled selectors share one program per expression; a
 * program goes when no model holds it at a trim; a syntax error is not cached. */
static void shared_selectors(void **state)
{
    static const char json[] =
        "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
        "{\"name\":\"a\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
        "\"device.driver == 'x.example.com'\"}}]}},"
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
        "{\"name\":\"b\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
        "\"device.driver == 'x.example.com'\"}},{\"cel\":{\"expression\":\"device.driver ==\"}}]}}]";
    struct dra_cel_cache *cache = dra_cel_cache_new();
    cJSON *objs = cJSON_Parse(json);
    struct dra_model m1, m2;

    (void)state;
    assert_non_null(cache);
    dra_model_init(&m1, NULL, NULL);
    dra_model_init(&m2, NULL, NULL);
    m1.cel_cache = m2.cel_cache = cache;
    assert_int_equal(add_all(&m1, objs), 2);
    assert_int_equal(add_all(&m2, objs), 2);
    assert_non_null(m1.classes[0].sel[0].prog);
    assert_ptr_equal(m1.classes[0].sel[0].prog, m1.classes[1].sel[0].prog);
    assert_ptr_equal(m1.classes[0].sel[0].prog, m2.classes[0].sel[0].prog);
    assert_null(m1.classes[1].sel[1].prog);
    assert_int_equal(m1.classes[1].sel[1].err.rc, DD_EPARSE);
    assert_int_equal(dra_cel_cache_trim(cache), 1);
    dra_model_release(&m1);
    assert_int_equal(dra_cel_cache_trim(cache), 1); /* m2 still holds it */
    assert_non_null(m2.classes[1].sel[0].prog);
    dra_model_release(&m2);
    assert_int_equal(dra_cel_cache_trim(cache), 0);
    dra_cel_cache_free(cache);
    cJSON_Delete(objs);
}

/* Selectors on devices through the model: numbered devices, one result per (text, device)
 * whoever asks, the same verdicts and texts as evaluating the device anew. */
static void selectors_on_devices(void **state)
{
    struct snap s;
    struct dd_err err;
    const struct dra_class *gpu, *big;
    size_t d;
    (void)state;

    snap_load(&s, "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
                  "{\"name\":\"gpu\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
                  "\"device.driver == 'gpu.example.com'\"}}]}},"
                  "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
                  "{\"name\":\"big\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
                  "\"device.driver == 'gpu.example.com'\"}},{\"cel\":{\"expression\":"
                  "\"device.attributes['gpu.example.com'].mem > 40\"}}]}},"
                  SLICE("v1", "[{\"name\":\"a\",\"attributes\":{\"mem\":{\"int\":80}}},"
                              "{\"name\":\"b\",\"attributes\":{\"mem\":{\"int\":16}}},"
                              "{\"name\":\"c\",\"attributes\":{}}]") "]");
    gpu = dra_find_class(&s.m, "gpu");
    big = dra_find_class(&s.m, "big");
    assert_non_null(gpu);
    assert_non_null(big);
    /* One expression, one number: the two classes' first selectors share theirs. */
    assert_int_not_equal(gpu->sel[0].id, 0);
    assert_int_equal(gpu->sel[0].id, big->sel[0].id);
    assert_int_not_equal(big->sel[0].id, big->sel[1].id);
    assert_int_equal(s.m.ndevices, 3);
    for (d = 0; d < s.m.ndevices; d++) {
        assert_int_equal(s.m.devices[d]->id, d);
        assert_ptr_equal(s.m.devices[d]->slice, &s.m.slices[0]);
        assert_non_null(s.m.devices[d]->val);
        /* Asked twice (the second answer is remembered), and against evaluating anew. */
        assert_int_equal(dra_selector_match(&s.m, &big->sel[1], d, NULL),
                         cel_eval_device(big->sel[1].prog, &s.m.devices[d]->dev, NULL, &err));
        assert_int_equal(dra_selector_match(&s.m, &big->sel[1], d, NULL),
                         cel_eval_device(big->sel[1].prog, &s.m.devices[d]->dev, NULL, &err));
    }
    assert_true(dra_class_admits(&s.m, gpu, 2));
    assert_true(dra_class_admits(&s.m, big, 0));
    assert_false(dra_class_admits(&s.m, big, 1));
    /* A remembered error still tells its text when asked for it. */
    assert_int_equal(dra_selector_match(&s.m, &big->sel[1], 2, NULL), CEL_ERROR);
    dd_err_clear(&err);
    assert_int_equal(dra_selector_match(&s.m, &big->sel[1], 2, &err), CEL_ERROR);
    assert_string_equal(err.msg, "no such key: mem");
    assert_false(dra_class_admits(&s.m, big, 2));
    /* No such device. */
    assert_int_equal(dra_selector_match(&s.m, &gpu->sel[0], 3, NULL), CEL_ERROR);
    snap_free(&s);
}

/* Nodes of one name (two files may both define one) and plugin pods by node. */
static void node_lookups(void **state)
{
    struct snap s;
    size_t k;
    (void)state;

    snap_load(&s, "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}},"
                  "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"b\"}},"
                  "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}},"
                  "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":"
                  "\"ds\",\"namespace\":\"d\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
                  "[{\"name\":\"c\",\"image\":\"i\"}]}}}},"
                  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
                  "\"namespace\":\"d\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":"
                  "\"other\"}]},\"spec\":{\"nodeName\":\"b\",\"volumes\":[{\"name\":\"r\","
                  "\"hostPath\":{\"path\":\"/var/lib/kubelet/plugins_registry\"}}]}},"
                  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p2\","
                  "\"namespace\":\"d\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":"
                  "\"ds\"}]},\"spec\":{\"nodeName\":\"b\",\"volumes\":[{\"name\":\"r\","
                  "\"hostPath\":{\"path\":\"/var/lib/kubelet/plugins_registry\"}}]}}]");
    k = dra_node_first(&s.m, "a");
    assert_int_equal(k, 0);
    assert_int_equal(k = dra_node_next(&s.m, k), 2);
    assert_int_equal(dra_node_next(&s.m, k), SIZE_MAX);
    assert_int_equal(dra_node_first(&s.m, "b"), 1);
    assert_int_equal(dra_node_first(&s.m, "c"), SIZE_MAX);
    assert_ptr_equal(dra_find_node(&s.m, "a"), &s.m.nodes.v[0]);
    /* The second pod on node b is the DaemonSet's; node a has none. */
    assert_ptr_equal(dra_plugin_pod(&s.m, s.m.pods[0], "b"), s.m.plugin_pods.v[1].json);
    assert_null(dra_plugin_pod(&s.m, s.m.pods[0], "a"));
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantities),
        cmocka_unit_test(slice_versions),
        cmocka_unit_test(list_attributes),
        cmocka_unit_test(claim_versions),
        cmocka_unit_test(workload_replicas),
        cmocka_unit_test(object_relevance),
        cmocka_unit_test(driver_detection),
        cmocka_unit_test(env_and_flags),
        cmocka_unit_test(lookups_after_finish),
        cmocka_unit_test(claims_resolved_once),
        cmocka_unit_test(shared_selectors),
        cmocka_unit_test(selectors_on_devices),
        cmocka_unit_test(node_lookups),
    };
    return cmocka_run_group_tests_name("dra", tests, NULL, NULL);
}
