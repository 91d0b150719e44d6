/*
 * test_review.c - admission decisions without HTTP: a view of a small
 * cluster (one driver publishing two GPUs, its class, a quota that is full)
 * and AdmissionReviews about DeviceClasses, claims, templates and pods.
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include "formats/json.h"
#include "review.h"
#include "webhook.h"

#define SLICE                                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":" \
    "\"node-1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"node-1\","         \
    "\"pool\":{\"name\":\"node-1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["    \
    "{\"name\":\"gpu-0\",\"attributes\":{\"model\":{\"string\":\"LATEST-GPU-MODEL\"},"        \
    "\"index\":{\"int\":0}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}},"                   \
    "{\"name\":\"gpu-1\",\"attributes\":{\"model\":{\"string\":\"LATEST-GPU-MODEL\"},"        \
    "\"index\":{\"int\":1}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}]}}"

#define CLASS(name, driver)                                                                   \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"" \
    name "\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == '" driver  \
    "'\"}}]}}"

#define QUOTA QUOTA_IN("gpu-quota", "team")
#define QUOTA_IN(name, ns)                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"" name "\","   \
    "\"namespace\":\"" ns "\"},\"spec\":{\"hard\":{\"count/resourceclaims.resource.k8s.io\":"   \
    "\"2\",\"gpu.example.com.deviceclass.resource.k8s.io/devices\":\"1\"}},\"status\":{"       \
    "\"hard\":{},\"used\":{\"count/resourceclaims.resource.k8s.io\":\"1\","                    \
    "\"gpu.example.com.deviceclass.resource.k8s.io/devices\":\"1\"}}}"

#define TEMPLATE                                                                              \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{" \
    "\"name\":\"one-gpu\",\"namespace\":\"team\"},\"spec\":{\"spec\":{\"devices\":{"          \
    "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}}"

/* An allocated claim: it takes one of the two GPUs. */
#define TAKEN                                                                                 \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":" \
    "\"taken\",\"namespace\":\"other\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\"," \
    "\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}},\"status\":{\"allocation\":{"   \
    "\"devices\":{\"results\":[]}}}}"

#define DAEMONSET                                                                             \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"nic-plugin\"," \
    "\"namespace\":\"nic\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":"      \
    "\"plugin\",\"image\":\"x\",\"env\":[{\"name\":\"DRIVER_NAME\",\"value\":\"nic.example.org\"}]," \
    "\"volumeMounts\":[{\"name\":\"plugins\",\"mountPath\":\"/var/lib/kubelet/plugins\"}]}],"    \
    "\"volumes\":[{\"name\":\"plugins\",\"hostPath\":{\"path\":\"/var/lib/kubelet/plugins/"     \
    "nic.example.org\"}},{\"name\":\"reg\",\"hostPath\":{\"path\":"                          \
    "\"/var/lib/kubelet/plugins_registry\"}},{\"name\":\"cdi\",\"hostPath\":{\"path\":"       \
    "\"/var/run/cdi\"}}]}}}}"

struct fx {
    cJSON *objs[8];
    size_t n;
    struct wh_view *v;
    struct wh_options opt;
    const char *known[1];
};

static int setup(void **state)
{
    static const char *const src[] = { SLICE, CLASS("gpu.example.com", "gpu.example.com"),
                                       QUOTA, TEMPLATE, TAKEN, DAEMONSET };
    struct fx *f = calloc(1, sizeof(*f));
    size_t i;

    assert_non_null(f);
    for (i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
        f->objs[f->n] = cJSON_Parse(src[i]);
        assert_non_null(f->objs[f->n]);
        f->n++;
    }
    f->known[0] = "fpga.example.net";
    f->opt.known_drivers = f->known;
    f->opt.nknown_drivers = 1;
    f->v = wh_view_build((const cJSON *const *)f->objs, f->n, &f->opt, NULL);
    assert_non_null(f->v);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    size_t i;

    /* The view borrows the objects: they go after it. */
    wh_view_free(f->v);
    for (i = 0; i < f->n; i++)
        cJSON_Delete(f->objs[i]);
    free(f);
    return 0;
}

/* Reviews an object with these pending class names; returns the parsed response
 * (cJSON_Delete it). */
static cJSON *review_pending(const struct wh_view *v, const char *const *pending,
                             size_t npending, const char *group, const char *version,
                             const char *kind, const char *op, const char *ns, const char *obj,
                             const char *old, struct wh_result *res)
{
    char body[16384];
    struct dd_err err;
    cJSON *out;

    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"kind\":{\"group\":\"%s\","
             "\"version\":\"%s\",\"kind\":\"%s\"},\"operation\":\"%s\",\"namespace\":\"%s\","
             "\"object\":%s%s%s}}",
             group, version, kind, op, ns, obj, old ? ",\"oldObject\":" : "", old ? old : "");
    dd_err_clear(&err);
    assert_int_equal(wh_review(v, pending, npending, body, strlen(body), res, &err), DD_OK);
    assert_non_null(res->body);
    assert_int_equal(strlen(res->body), res->len);
    out = cJSON_Parse(res->body);
    assert_non_null(out);
    assert_string_equal(dd_json_str(out, "apiVersion", NULL), "admission.k8s.io/v1");
    assert_string_equal(dd_json_str(out, "kind", NULL), "AdmissionReview");
    assert_string_equal(dd_json_str(out, "response", "uid", NULL),
                        "705ab4f5-6393-11e8-b7cc-42010a800002");
    return out;
}

/* Reviews an object with no pending class names. */
static cJSON *review(const struct wh_view *v, const char *group, const char *version,
                     const char *kind, const char *op, const char *ns, const char *obj,
                     const char *old, struct wh_result *res)
{
    return review_pending(v, NULL, 0, group, version, kind, op, ns, obj, old, res);
}

static int allowed(const cJSON *r)
{
    return cJSON_IsTrue(dd_json_path(r, "response", "allowed", NULL));
}

/* All warnings joined by newlines ("" when none), into buf. */
static const char *warnings(const cJSON *r, char *buf, size_t size)
{
    const cJSON *w;
    size_t len = 0;

    buf[0] = '\0';
    cJSON_ArrayForEach(w, dd_json_arr(r, "response", "warnings", NULL)) {
        assert_true(cJSON_IsString(w));
        len += (size_t)snprintf(buf + len, size - len, "%s\n", w->valuestring);
        assert_true(len < size);
    }
    return buf;
}

static void test_drivers_registered(void **state)
{
    struct fx *f = *state;
    const char *const *d;
    size_t n;

    d = wh_view_drivers(f->v, &n);
    assert_int_equal(n, 3);
    assert_string_equal(d[0], "gpu.example.com");   /* publishes slices */
    assert_string_equal(d[1], "nic.example.org");   /* its DaemonSet is installed */
    assert_string_equal(d[2], "fpga.example.net");  /* --known-driver */
}

static void test_typo_class_denied(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    cJSON *r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "",
                      CLASS("gpu.example.com", "gpu.exmaple.com"), NULL, &res);
    const char *msg = dd_json_str(r, "response", "status", "message", NULL);

    assert_false(allowed(r));
    assert_int_equal(res.verdict, WH_DENIED);
    assert_string_equal(res.kind, "DeviceClass");
    assert_string_equal(res.operation, "CREATE");
    assert_string_equal(res.ns, "");
    assert_int_equal(dd_json_path(r, "response", "status", "code", NULL)->valueint, 403);
    assert_contains(msg, "'gpu.exmaple.com'");
    assert_contains(msg, "Did you mean 'gpu.example.com'?");
    assert_contains(msg, "(known: gpu.example.com, nic.example.org, fpga.example.net)");
    cJSON_Delete(r);
    free(res.body);
}

static void test_good_class_allowed(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    cJSON *r;

    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "",
               CLASS("gpu.example.com", "gpu.example.com"), NULL, &res);
    assert_true(allowed(r));
    assert_string_equal(warnings(r, w, sizeof(w)), "");
    assert_int_equal(res.verdict, WH_ALLOWED);
    cJSON_Delete(r);
    free(res.body);
    /* A driver known only by its DaemonSet (installed before it publishes) is registered. */
    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "",
               CLASS("nic", "nic.example.org"), NULL, &res);
    assert_true(allowed(r));
    cJSON_Delete(r);
    free(res.body);
    /* So is one declared with --known-driver. */
    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "",
               CLASS("fpga", "fpga.example.net"), NULL, &res);
    assert_true(allowed(r));
    cJSON_Delete(r);
    free(res.body);
}

/*
 * A vendor's chart applies its DaemonSet and DeviceClasses together, before any slice exists
 * and usually before the webhook's caches hold the DaemonSet: its classes name a driver that
 * is not registered yet.  That is never denied; it is a warning.  Only a misspelling is.
 */
static void test_vendor_classes_admitted(void **state)
{
    static const char *const vendors[] = { "gpu.nvidia.com", "compute-domain.nvidia.com",
                                           "qat.intel.com", "gpu.intel.com", "tpu.google.com",
                                           "dra.net", "dra.cpu", "dra.memory", "cpu.example.com",
                                           "sriovnetwork.k8snetworkplumbingwg.io",
                                           "ascend.project-hami.io", "acme.vendor.io" };
    struct fx *f = *state;
    struct wh_result res;
    char w[4096], obj[1024];
    size_t i;
    cJSON *r;

    for (i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++) {
        snprintf(obj, sizeof(obj), "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                 "\"metadata\":{\"name\":\"v\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
                 "\"device.driver == '%s'\"}}]}}", vendors[i]);
        r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "", obj, NULL, &res);
        if (!allowed(r))
            fail_msg("%s denied: %s", vendors[i],
                     dd_json_str(r, "response", "status", "message", NULL));
        assert_int_equal(res.verdict, WH_WARNED);
        assert_contains(warnings(r, w, sizeof(w)), "SelectorMatchesNoDriver: ");
        assert_null(strstr(w, "Did you mean"));
        cJSON_Delete(r);
        free(res.body);
    }
    /* A misspelling of a vendor's driver that nothing registered is still one. */
    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "",
               CLASS("v", "gpu.nvidai.com"), NULL, &res);
    assert_false(allowed(r));
    assert_contains(dd_json_str(r, "response", "status", "message", NULL),
                    "Did you mean 'gpu.nvidia.com'?");
    cJSON_Delete(r);
    free(res.body);
}

static void test_escape_hatches(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    struct wh_options warn = f->opt;
    struct wh_view *v2;
    char w[4096];
    cJSON *r, *src[1];
    const char *annotated =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
        "\"x\",\"annotations\":{\"dra-doctor.io/allow-unregistered-driver\":\"true\"}},\"spec\":"
        "{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.exmaple.com'\"}}]}}";

    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "", annotated, NULL, &res);
    assert_true(allowed(r));
    assert_int_equal(res.verdict, WH_WARNED);
    assert_contains(warnings(r, w, sizeof(w)), "SelectorMatchesNoDriver: ");
    assert_contains(w, "(allowed by annotation)");
    cJSON_Delete(r);
    free(res.body);

    /* --unknown-driver=warn */
    warn.unknown_driver_warn = 1;
    src[0] = cJSON_Parse(SLICE);
    v2 = wh_view_build((const cJSON *const *)src, 1, &warn, NULL);
    assert_non_null(v2);
    r = review(v2, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "",
               CLASS("y", "gpu.exmaple.com"), NULL, &res);
    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "SelectorMatchesNoDriver: ");
    cJSON_Delete(r);
    free(res.body);
    wh_view_free(v2);
    cJSON_Delete(src[0]);
}

static void test_update_keeps_unrelated_edits(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    cJSON *r;
    const char *bad = CLASS("z", "gpu.exmaple.com");

    /* Already broken before: an edit that does not add the typo only warns. */
    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "UPDATE", "", bad, bad, &res);
    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "SelectorMatchesNoDriver");
    cJSON_Delete(r);
    free(res.body);
    /* An update that introduces it is denied. */
    r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "UPDATE", "", bad,
               CLASS("z", "gpu.example.com"), &res);
    assert_false(allowed(r));
    cJSON_Delete(r);
    free(res.body);
}

static void test_unknown_attribute_warns(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    const char *cls =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
        "\"big\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
        "'gpu.example.com' && device.attributes['gpu.example.com'].modle == 'X'\"}}]}}";
    cJSON *r = review(f->v, "resource.k8s.io", "v1", "DeviceClass", "CREATE", "", cls, NULL, &res);

    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "SelectorUnknownAttribute: ");
    assert_contains(w, "modle");
    cJSON_Delete(r);
    free(res.body);
}

static void assert_short(const char *w)
{
    const char *line = w, *nl;

    for (; (nl = strchr(line, '\n')); line = nl + 1)
        if (nl - line > WH_WARNING_MAX)
            fail_msg("warning longer than %d characters: %.*s", WH_WARNING_MAX,
                     (int)(nl - line), line);
}

static void test_claim_over_quota_warns(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    const char *claim =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"second\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.example.com\"}}]}}}";
    cJSON *r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "team", claim,
                      NULL, &res);

    assert_true(allowed(r));  /* quota admission itself refuses; we only say why first */
    assert_int_equal(res.verdict, WH_WARNED);
    assert_string_equal(res.ns, "team"); /* whose share of the waiting room it takes */
    warnings(r, w, sizeof(w));
    assert_contains(w, "QuotaExceeded: ResourceQuota gpu-quota allows 1 gpu.example.com devices, "
                       "1 in use, and claim second needs 1");
    /* The claim count (2 allowed, 1 used) is not exceeded. */
    assert_null(strstr(w, "ResourceClaims"));
    assert_short(w);
    cJSON_Delete(r);
    free(res.body);
    /* Another namespace has no quota. */
    r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "free", claim, NULL, &res);
    assert_string_equal(warnings(r, w, sizeof(w)), "");
    cJSON_Delete(r);
    free(res.body);
}

/* The view keeps quotas sorted by namespace and finds a namespace's by binary search: every
 * quota of the namespace, none of its neighbours', wherever it falls in the order. */
static void test_quotas_by_namespace(void **state)
{
    static const char *const src[] = {
        SLICE, CLASS("gpu.example.com", "gpu.example.com"), QUOTA_IN("q-alpha", "alpha"),
        QUOTA_IN("q-team-2", "team"), QUOTA_IN("q-mid", "mid"), QUOTA_IN("q-team-1", "team"),
        QUOTA_IN("q-zulu", "zulu"),
    };
    static const struct { const char *ns, *want[2], *not; } cases[] = {
        { "team", { "q-team-1 ", "q-team-2 " }, "q-mid" },
        { "alpha", { "q-alpha ", NULL }, "q-team" },
        { "zulu", { "q-zulu ", NULL }, "q-team" },
        { "beta", { NULL, NULL }, "QuotaExceeded" }, /* between two namespaces with quotas */
        { "zzz", { NULL, NULL }, "QuotaExceeded" },  /* after the last */
        { "aaa", { NULL, NULL }, "QuotaExceeded" },  /* before the first */
    };
    const char *claim =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"c\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.example.com\"}}]}}}";
    struct wh_options opt = { 0 };
    cJSON *objs[sizeof(src) / sizeof(src[0])], *r;
    struct wh_result res;
    struct wh_view *v;
    char w[4096];
    size_t i, j;

    (void)state;
    for (i = 0; i < sizeof(src) / sizeof(src[0]); i++)
        assert_non_null(objs[i] = cJSON_Parse(src[i]));
    v = wh_view_build((const cJSON *const *)objs, i, &opt, NULL);
    assert_non_null(v);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = review(v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", cases[i].ns, claim,
                   NULL, &res);
        warnings(r, w, sizeof(w));
        for (j = 0; j < 2 && cases[i].want[j]; j++)
            if (!strstr(w, cases[i].want[j]))
                fail_msg("namespace %s: no warning from %s in \"%s\"", cases[i].ns,
                         cases[i].want[j], w);
        if (strstr(w, cases[i].not))
            fail_msg("namespace %s: unexpected \"%s\" in \"%s\"", cases[i].ns, cases[i].not, w);
        cJSON_Delete(r);
        free(res.body);
    }
    wh_view_free(v);
    for (i = 0; i < sizeof(src) / sizeof(src[0]); i++)
        cJSON_Delete(objs[i]);
}

static void test_claim_missing_class_and_devices(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    cJSON *r;
    const char *typo =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"c\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.exmaple.com\"}}]}}}";
    const char *three =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"three\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.example.com\",\"count\":2}}]}}}";

    r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "free", typo, NULL, &res);
    assert_true(allowed(r));
    /* The whole sentence is too long for a warning line: the fix says it. */
    assert_string_equal(warnings(r, w, sizeof(w)),
                        "DeviceClassNotFound: Set deviceClassName to \"gpu.example.com\".\n");
    cJSON_Delete(r);
    free(res.body);
    /* Two GPUs published, one taken by an allocated claim: two more do not fit, but devices
     * are allocated to pods, all of a pod's claims on one node together: the claim alone is
     * not judged (a pod that uses it is, DevicesDoNotFit). */
    r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "free", three, NULL, &res);
    assert_string_equal(warnings(r, w, sizeof(w)), "");
    cJSON_Delete(r);
    free(res.body);
}

/* A claim's opaque configuration is judged as it arrives: another driver's name is ignored by
 * the driver, and a parameter the example driver rejects fails NodePrepareResources later. */
static void test_claim_config_warns(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    cJSON *r;
#define CONFIG_CLAIM(driver, strategy)                                                         \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"  \
    "\"c\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"                 \
    "\"deviceClassName\":\"gpu.example.com\"}}],\"config\":[{\"requests\":[\"gpu\"],\"opaque\":{" \
    "\"driver\":\"" driver "\",\"parameters\":{\"apiVersion\":"                                   \
    "\"gpu.resource.example.com/v1alpha1\",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":"    \
    "\"" strategy "\"}}}}]}}}"

    r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "free",
               CONFIG_CLAIM("gpu.exmaple.com", "TimeSlicing"), NULL, &res);
    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "OpaqueConfigDriverMismatch: ");
    assert_null(strstr(w, "NodePrepareFailed"));
    assert_short(w);
    cJSON_Delete(r);
    free(res.body);
    r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "free",
               CONFIG_CLAIM("gpu.example.com", "Sometimes"), NULL, &res);
    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "NodePrepareFailed: ");
    assert_null(strstr(w, "OpaqueConfigDriverMismatch"));
    cJSON_Delete(r);
    free(res.body);
    r = review(f->v, "resource.k8s.io", "v1", "ResourceClaim", "CREATE", "free",
               CONFIG_CLAIM("gpu.example.com", "TimeSlicing"), NULL, &res);
    assert_string_equal(warnings(r, w, sizeof(w)), "");
    cJSON_Delete(r);
    free(res.body);
#undef CONFIG_CLAIM
}

/* A Pod or a workload whose claims fit on no node now: DevicesDoNotFit, as the controller
 * would say once it is Pending (the view's allocator, built once per view). */
static void test_pod_devices_do_not_fit(void **state)
{
    static const char *const src[] = {
        SLICE, CLASS("gpu.example.com", "gpu.example.com"), TEMPLATE,
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{"
        "\"name\":\"three-gpus\",\"namespace\":\"team\"},\"spec\":{\"spec\":{\"devices\":{"
        "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\","
        "\"count\":3}}]}}}}",
        /* holds both GPUs once added */
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"both\",\"namespace\":\"other\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
        "\"exactly\":{\"deviceClassName\":\"gpu.example.com\",\"count\":2}}]}},\"status\":{"
        "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
        "\"gpu.example.com\",\"pool\":\"node-1\",\"device\":\"gpu-0\"},{\"request\":\"gpu\","
        "\"driver\":\"gpu.example.com\",\"pool\":\"node-1\",\"device\":\"gpu-1\"}]}}}}" };
#define GPU_POD(tmpl)                                                                          \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"         \
    "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"claims\":[{"        \
    "\"name\":\"gpu\"}]}}],\"resourceClaims\":[{\"name\":\"gpu\","                               \
    "\"resourceClaimTemplateName\":\"" tmpl "\"}]}}"
    const char *deploy =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
        "\"spec\":{\"replicas\":1,\"selector\":{},\"template\":{\"spec\":{\"containers\":[{"
        "\"name\":\"c\",\"image\":\"x\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],"
        "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"three-gpus\"}]}}}}";
    cJSON *objs[5], *r, *copy;
    const cJSON *twin[5];
    struct wh_view *v, *v2;
    struct wh_result res;
    char w[4096];
    size_t i;

    (void)state;
    for (i = 0; i < 5; i++)
        assert_non_null(objs[i] = cJSON_Parse(src[i]));
    /* Two GPUs on node-1, none held. */
    assert_non_null(v = wh_view_build((const cJSON *const *)objs, 4, NULL, NULL));
    r = review(v, "", "v1", "Pod", "CREATE", "team", GPU_POD("three-gpus"), NULL, &res);
    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "DevicesDoNotFit: fits on no node: node-1: claim "
                                               "three-gpus, request gpu asks for 3 devices");
    assert_short(w);
    cJSON_Delete(r);
    free(res.body);
    r = review(v, "apps", "v1", "Deployment", "CREATE", "team", deploy, NULL, &res);
    assert_contains(warnings(r, w, sizeof(w)), "DevicesDoNotFit: ");
    cJSON_Delete(r);
    free(res.body);
    r = review(v, "", "v1", "Pod", "CREATE", "team", GPU_POD("one-gpu"), NULL, &res);
    assert_string_equal(warnings(r, w, sizeof(w)), "");
    cJSON_Delete(r);
    free(res.body);
    /* Another claim holds both: one GPU does not fit now either.  The same slice: the next
     * view shares the devices, and outlives the view it had them from; a copy of the slice
     * (another object) is built anew, with the same answer. */
    assert_non_null(v2 = wh_view_update(v, (const cJSON *const *)objs, 5, NULL, NULL));
    assert_non_null(wh_view_devices(v2));
    assert_ptr_equal(wh_view_devices(v2), wh_view_devices(v));
    wh_view_free(v);
    assert_non_null(copy = cJSON_Duplicate(objs[0], 1));
    twin[0] = copy;
    for (i = 1; i < 5; i++)
        twin[i] = objs[i];
    assert_non_null(v = wh_view_update(v2, twin, 5, NULL, NULL));
    assert_ptr_not_equal(wh_view_devices(v), wh_view_devices(v2));
    for (i = 0; i < 2; i++) {
        r = review(i ? v : v2, "", "v1", "Pod", "CREATE", "team", GPU_POD("one-gpu"), NULL, &res);
        assert_contains(warnings(r, w, sizeof(w)), "DevicesDoNotFit: fits on no node: node-1: "
                                                   "claim one-gpu, request gpu asks for 1 device");
        assert_short(w);
        cJSON_Delete(r);
        free(res.body);
    }
    wh_view_free(v2);
    wh_view_free(v);
    cJSON_Delete(copy);
    for (i = 0; i < 5; i++)
        cJSON_Delete(objs[i]);
#undef GPU_POD
}

/*
 * Selectors on the view's devices, which the view judges by the classes when it is built and
 * keeps no CEL value of: a template whose request has a selector of its own (matching neither
 * GPU; no class has it) is judged on each device by itself, the value built again; a class matching
 * neither GPU and one matching both, by theirs.  The same on the first request and the
 * second, and from a later view that shares the devices (and starts with copies of the
 * verdicts).
 */
static void test_pod_selectors_judged_as_themselves(void **state)
{
#define OLD_MODEL "device.attributes['gpu.example.com'].model == 'OLD-GPU-MODEL'"
#define TMPL(name, cls, sel)                                                                   \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{" \
    "\"name\":\"" name "\",\"namespace\":\"team\"},\"spec\":{\"spec\":{\"devices\":{"          \
    "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"" cls "\"" sel "}}]}}}}"
#define POD(tmpl)                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"         \
    "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"claims\":[{"        \
    "\"name\":\"gpu\"}]}}],\"resourceClaims\":[{\"name\":\"gpu\","                               \
    "\"resourceClaimTemplateName\":\"" tmpl "\"}]}}"
    static const char *const src[] = {
        SLICE, CLASS("gpu.example.com", "gpu.example.com"),
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
        "\"old-gpu\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"" OLD_MODEL "\"}}]}}",
        TMPL("own-selector", "gpu.example.com",
             ",\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.example.com']"
             ".index > 5\"}}]"),
        TMPL("old-class", "old-gpu", ""), TMPL("any-gpu", "gpu.example.com", "") };
    static const struct { const char *pod; int fits; } cases[] = {
        { POD("own-selector"), 0 }, { POD("old-class"), 0 }, { POD("any-gpu"), 1 } };
    struct wh_view *v, *v2;
    struct wh_result res;
    cJSON *objs[6], *r;
    char w[4096];
    size_t i, round;

    (void)state;
    for (i = 0; i < 6; i++)
        assert_non_null(objs[i] = cJSON_Parse(src[i]));
    assert_non_null(v = wh_view_build((const cJSON *const *)objs, 6, NULL, NULL));
    for (round = 0; round < 4; round++)
        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            if (round == 2 && !i) { /* the next view; the one it shares devices with goes */
                assert_non_null(v2 = wh_view_update(v, (const cJSON *const *)objs, 6, NULL,
                                                    NULL));
                assert_ptr_equal(wh_view_devices(v2), wh_view_devices(v));
                wh_view_free(v);
                v = v2;
            }
            r = review(v, "", "v1", "Pod", "CREATE", "team", cases[i].pod, NULL, &res);
            assert_true(allowed(r));
            warnings(r, w, sizeof(w));
            if (cases[i].fits != !strstr(w, "DevicesDoNotFit"))
                fail_msg("round %zu, case %zu: warnings \"%s\"", round, i, w);
            cJSON_Delete(r);
            free(res.body);
        }
    wh_view_free(v);
    for (i = 0; i < 6; i++)
        cJSON_Delete(objs[i]);
#undef OLD_MODEL
#undef TMPL
#undef POD
}

static void test_pod_template_over_quota(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    char w[4096];
    const char *pod =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod1\"},\"spec\":{"
        "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"claims\":[{"
        "\"name\":\"gpu\"}]}}],\"resourceClaims\":[{\"name\":\"gpu\","
        "\"resourceClaimTemplateName\":\"one-gpu\"}]}}";
    const char *missing =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod2\"},\"spec\":{"
        "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}],\"resourceClaims\":[{\"name\":"
        "\"gpu\",\"resourceClaimTemplateName\":\"nope\"}]}}";
    const char *deploy =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
        "\"spec\":{\"replicas\":3,\"selector\":{},\"template\":{\"spec\":{\"containers\":[{"
        "\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"gpu\","
        "\"resourceClaimTemplateName\":\"one-gpu\"}]}}}}";
    cJSON *r;

    /* The namespace comes from the request: a pod's object may not carry it. */
    r = review(f->v, "", "v1", "Pod", "CREATE", "team", pod, NULL, &res);
    assert_true(allowed(r));
    assert_contains(warnings(r, w, sizeof(w)), "QuotaExceeded: ResourceQuota gpu-quota allows 1 "
                                               "gpu.example.com devices, 1 in use, and Pod pod1 needs 1");
    assert_null(strstr(w, "ClaimNotConsumedByContainer"));
    assert_null(strstr(w, "PodBypassesScheduler"));
    assert_short(w);
    cJSON_Delete(r);
    free(res.body);
    {
        const char *pinned =
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod3\"},\"spec\":{"
            "\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
            "\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],\"resourceClaims\":[{\"name\":"
            "\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]}}";
        r = review(f->v, "", "v1", "Pod", "CREATE", "team", pinned, NULL, &res);
        assert_true(allowed(r));
        assert_contains(warnings(r, w, sizeof(w)), "PodBypassesScheduler: ");
        cJSON_Delete(r);
        free(res.body);
    }
    r = review(f->v, "", "v1", "Pod", "CREATE", "team", missing, NULL, &res);
    assert_contains(warnings(r, w, sizeof(w)), "ClaimTemplateNotFound: ");
    assert_contains(w, "team/nope");
    assert_short(w);
    cJSON_Delete(r);
    free(res.body);
    /* A workload's replicas multiply: 3 claims against 2 allowed, 3 devices against 1; the
     * limit that admits fewest of its claims (the devices: none) is named.  And its container
     * lists no claim: the devices would reach nobody. */
    r = review(f->v, "apps", "v1", "Deployment", "CREATE", "team", deploy, NULL, &res);
    warnings(r, w, sizeof(w));
    assert_contains(w, "ClaimNotConsumedByContainer: ");
    assert_contains(w, "allows 1 gpu.example.com devices, 1 in use, and Deployment d needs 3\n");
    cJSON_Delete(r);
    free(res.body);
    /* Without a view (caches not synced yet) everything passes. */
    r = review(NULL, "", "v1", "Pod", "CREATE", "team", pod, NULL, &res);
    assert_true(allowed(r));
    assert_string_equal(warnings(r, w, sizeof(w)), "");
    cJSON_Delete(r);
    free(res.body);
}

/* The warnings a CREATE of obj in namespace "free" (no quota) gets with these pending class
 * names, into w; the verdict must agree. */
static const char *created(const struct wh_view *v, const char *const *pending, size_t npending,
                           const char *group, const char *kind, const char *obj, char *w,
                           size_t size)
{
    struct wh_result res;
    cJSON *r = review_pending(v, pending, npending, group, "v1", kind, "CREATE", "free", obj,
                              NULL, &res);

    assert_true(allowed(r));
    warnings(r, w, size);
    assert_int_equal(res.verdict, *w ? WH_WARNED : WH_ALLOWED);
    cJSON_Delete(r);
    free(res.body);
    return w;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;

    for (; (s = strstr(s, needle)); s += strlen(needle))
        n++;
    return n;
}

/*
 * kubectl apply -f dir/: the class was created, the informer saw it, the view does not hold
 * it yet.  A claim or template naming it is not warned that the class does not exist (nor
 * counted against the class's devices, which no view knows); a class that is not pending
 * still is, in the same object too.
 */
static void test_pending_class_not_warned(void **state)
{
    static const char *const pending[] = { "fpga.example.net", "new-gpu" };
    static const char *const near_miss[] = { "new-gp", "new-gpu2", "NEW-GPU" };
    struct fx *f = *state;
    char w[4096];
    const char *claim =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"c\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
        "\"deviceClassName\":\"new-gpu\",\"count\":5}}]}}}";
    const char *two =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"two\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"a\",\"exactly\":{"
        "\"deviceClassName\":\"new-gpu\"}},{\"name\":\"b\",\"firstAvailable\":[{\"name\":\"x\","
        "\"deviceClassName\":\"gpu.exmaple.com\"}]}]}}}";
    const char *tmpl =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{"
        "\"name\":\"t\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
        "\"exactly\":{\"deviceClassName\":\"new-gpu\"}}]}}}}";

    assert_true(wh_view_has_class(f->v, "gpu.example.com"));
    assert_false(wh_view_has_class(f->v, "new-gpu"));
    assert_false(wh_view_has_class(NULL, "gpu.example.com"));

    assert_contains(created(f->v, NULL, 0, "resource.k8s.io", "ResourceClaim", claim, w,
                            sizeof(w)), "DeviceClassNotFound: ");
    assert_contains(w, "new-gpu");
    assert_string_equal(created(f->v, pending, 2, "resource.k8s.io", "ResourceClaim", claim, w,
                                sizeof(w)), "");
    /* Only that name: not a prefix, an extension or another case of it. */
    assert_contains(created(f->v, near_miss, 3, "resource.k8s.io", "ResourceClaim", claim, w,
                            sizeof(w)), "DeviceClassNotFound: ");

    assert_contains(created(f->v, NULL, 0, "resource.k8s.io", "ResourceClaimTemplate", tmpl, w,
                            sizeof(w)), "DeviceClassNotFound: ");
    assert_string_equal(created(f->v, pending + 1, 1, "resource.k8s.io",
                                "ResourceClaimTemplate", tmpl, w, sizeof(w)), "");

    /* Per request: the typo in the subrequest is still named. */
    assert_int_equal(count(created(f->v, NULL, 0, "resource.k8s.io", "ResourceClaim", two, w,
                                   sizeof(w)), "DeviceClassNotFound: "), 2);
    assert_string_equal(created(f->v, pending, 2, "resource.k8s.io", "ResourceClaim", two, w,
                                sizeof(w)),
                        "DeviceClassNotFound: Set deviceClassName to \"gpu.example.com\".\n");
}

/*
 * A workload made from a template that names a pending class: a pod spec never carries its
 * template's class finding (that is the template's), so pending names change nothing here;
 * they must not hide the workload's other warnings either (the quota's claim count depends on
 * no class).
 */
static void test_pending_class_workload(void **state)
{
    static const char *const src[] = { SLICE, CLASS("gpu.example.com", "gpu.example.com"),
                                       QUOTA_IN("new-quota", "free"),
                                       "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                                       "\"ResourceClaimTemplate\",\"metadata\":{\"name\":"
                                       "\"new-one\",\"namespace\":\"free\"},\"spec\":{\"spec\":{"
                                       "\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":"
                                       "{\"deviceClassName\":\"new-gpu\",\"count\":3}}]}}}}" };
    static const char *const pending[] = { "new-gpu" };
    const char *want = "QuotaExceeded: ResourceQuota new-quota allows 2 ResourceClaims, 1 in use, and "
                       "Deployment d needs 3\n";
    const char *deploy =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
        "\"spec\":{\"replicas\":3,\"selector\":{},\"template\":{\"spec\":{\"containers\":[{"
        "\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"gpu\","
        "\"resourceClaimTemplateName\":\"new-one\"}]}}}}";
    cJSON *objs[4];
    struct wh_view *v;
    char w[4096];
    size_t i;

    (void)state;
    for (i = 0; i < 4; i++)
        assert_non_null(objs[i] = cJSON_Parse(src[i]));
    assert_non_null(v = wh_view_build((const cJSON *const *)objs, 4, NULL, NULL));
    assert_string_equal(created(v, NULL, 0, "apps", "Deployment", deploy, w, sizeof(w)), want);
    assert_string_equal(created(v, pending, 1, "apps", "Deployment", deploy, w, sizeof(w)), want);
    wh_view_free(v);
    for (i = 0; i < 4; i++)
        cJSON_Delete(objs[i]);
}

static void test_other_kinds_pass(void **state)
{
    struct fx *f = *state;
    struct wh_result res;
    cJSON *r = review(f->v, "", "v1", "ConfigMap", "CREATE", "team",
                      "{\"metadata\":{\"name\":\"cm\"}}", NULL, &res);

    assert_true(allowed(r));
    assert_null(dd_json_path(r, "response", "warnings", NULL));
    assert_int_equal(res.verdict, WH_ALLOWED);
    cJSON_Delete(r);
    free(res.body);
}

static void expect_error(const struct wh_view *v, const char *body, enum dd_rc want,
                         const char *msg)
{
    struct wh_result res;
    struct dd_err err;

    dd_err_clear(&err);
    assert_int_equal(wh_review(v, NULL, 0, body, strlen(body), &res, &err), want);
    assert_null(res.body);
    assert_contains(err.msg, msg);
}

static void test_bad_requests(void **state)
{
    struct fx *f = *state;
    char deep[512];
    size_t i;

    expect_error(f->v, "{\"apiVersion\":", DD_EPARSE, "malformed JSON at line 1, column ");
    expect_error(f->v, "{\n\"a\": tru}", DD_EPARSE, "line 2");
    expect_error(f->v, "{} x", DD_EPARSE, "unexpected data after the value");
    expect_error(f->v, "[]", DD_EINVAL, "not a JSON object");
    expect_error(f->v, "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}",
                 DD_EINVAL, "apiVersion: want \"admission.k8s.io/v1\", got \"admission.k8s.io/v1beta1\"");
    expect_error(f->v, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
                 DD_EINVAL, "request: missing");
    expect_error(f->v, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"request\":{\"kind\":{\"group\":\"\",\"kind\":\"Pod\"}}}",
                 DD_EINVAL, "request.uid: missing");
    expect_error(f->v, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"kind\":\"Pod\"}}}",
                 DD_EINVAL, "request.operation");
    /* Once answered "out of memory" (HTTP 500): the sender's fault, said as such. */
    expect_error(f->v, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"resource.k8s.io\","
                       "\"version\":\"v1\",\"kind\":\"ResourceClaim\"},\"operation\":\"CREATE\","
                       "\"namespace\":\"t\",\"object\":{\"metadata\":7}}}",
                 DD_EINVAL, "request.object.metadata: want an object");
    for (i = 0; i < 300; i++)
        deep[i] = '[';
    deep[i] = '\0';
    expect_error(f->v, deep, DD_ETOOBIG, "deeper than");
}

/* What the watching webhook caches (wh_watches, from its own watch table): its kinds in their
 * groups, of the claims the allocated; nothing else, and nothing without a kind. */
static void test_watches(void **state)
{
    static const struct { const char *json; int want; } cases[] = {
        { "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\"}", 1 },
        { "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\"}", 1 },
        { "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
          "\"status\":{\"allocation\":{}}}", 1 },
        { "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\"}", 0 },
        { "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\"}", 1 },
        { "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\"}", 1 },
        { "{\"apiVersion\":\"v1\",\"kind\":\"DaemonSet\"}", 0 },
        { "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceQuota\"}", 0 },
        { "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", 0 },
        { "{\"apiVersion\":\"v1\",\"kind\":\"\"}", 0 },
        { "{\"kind\":\"DeviceClass\"}", 0 },
        { "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
          "\"AKindNameFarLongerThanAnyResourceTheWebhookWatchesCouldEverHaveAtAll\"}", 0 },
    };
    size_t i;
    cJSON *o;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_non_null(o = cJSON_Parse(cases[i].json));
        if (wh_watches(o) != cases[i].want)
            fail_msg("case %zu (%s): %d, want %d", i, cases[i].json, wh_watches(o), cases[i].want);
        cJSON_Delete(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drivers_registered),
        cmocka_unit_test(test_typo_class_denied),
        cmocka_unit_test(test_good_class_allowed),
        cmocka_unit_test(test_escape_hatches),
        cmocka_unit_test(test_update_keeps_unrelated_edits),
        cmocka_unit_test(test_unknown_attribute_warns),
        cmocka_unit_test(test_vendor_classes_admitted),
        cmocka_unit_test(test_claim_over_quota_warns),
        cmocka_unit_test(test_quotas_by_namespace),
        cmocka_unit_test(test_claim_config_warns),
        cmocka_unit_test(test_claim_missing_class_and_devices),
        cmocka_unit_test(test_pod_devices_do_not_fit),
        cmocka_unit_test(test_pod_selectors_judged_as_themselves),
        cmocka_unit_test(test_pod_template_over_quota),
        cmocka_unit_test(test_pending_class_not_warned),
        cmocka_unit_test(test_pending_class_workload),
        cmocka_unit_test(test_other_kinds_pass),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_watches),
    };

    return cmocka_run_group_tests_name("review", tests, setup, teardown);
}
