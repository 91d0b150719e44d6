/*
 * test_snapshot.c - the controller's caches keep objects trimmed (keep_trim) and
 * filtered (keep_object); that must change no diagnosis.  Every fixture -- the lint
 * cases of tests/data/lint/, and objects a real API server served
 * (tests/data/live/bench-sample.json, managedFields and all), also with the statuses a
 * kubelet writes -- is diagnosed from whole objects and from trimmed ones: the findings
 * and every pod's diagnosis must be equal.  Also: diag_pod_indexed (the index of
 * findings the controller uses) agrees with diag_pod, and the trim drops what it should.
 */
#include "harness.h"

#include <dirent.h>
#include <malloc.h>
#include <sys/stat.h>

#include "model/cri.h"
#include "rules/diagnose.h"
#include "formats/json.h"
#include "formats/manifest.h"
#include "model/keep.h"
#include "rules/snapshot.h"

#define LINT_DATA "tests/data/lint"
#define LIVE_SAMPLE "tests/data/live/bench-sample.json"

/* Deep copies of the objects of objs: whole, or trimmed, filtered and packed as the
 * controller's caches keep them. */
static cJSON *copy_all(const cJSON *objs, int trim)
{
    cJSON *out = cJSON_CreateArray(), *it;

    assert_non_null(out);
    cJSON_ArrayForEach(it, objs) {
        cJSON *c = cJSON_Duplicate(it, 1);
        assert_non_null(c);
        if (trim) {
            keep_trim(c);
            if (!keep_object(c)) {
                cJSON_Delete(c);
                continue;
            }
            c = dd_json_pack(c); /* as a store keeps it, lists alike shared (dd_json_share) */
        }
        cJSON_AddItemToArray(out, c);
    }
    return out;
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void same_findings(const struct dd_findings *a, const struct dd_findings *b,
                          const char *what)
{
    size_t i;

    if (a->n != b->n)
        fail_msg("%s: %zu findings from whole objects, %zu from trimmed ones", what, a->n, b->n);
    for (i = 0; i < a->n; i++) {
        const struct dd_finding *x = &a->v[i], *y = &b->v[i];
        if (strcmp(x->code, y->code) || x->severity != y->severity ||
            strcmp(x->obj.api_version, y->obj.api_version) || strcmp(x->obj.kind, y->obj.kind) ||
            strcmp(x->obj.namespace_, y->obj.namespace_) || strcmp(x->obj.name, y->obj.name) ||
            strcmp(x->message, y->message) || strcmp(x->fix, y->fix) ||
            !same_str(x->scope_class, y->scope_class) ||
            !same_str(x->scope_driver, y->scope_driver) || !same_str(x->scope_node, y->scope_node))
            fail_msg("%s: finding %zu differs:\n  whole:   %s %s/%s: %s\n  trimmed: %s %s/%s: %s",
                     what, i, x->code, x->obj.namespace_, x->obj.name, x->message, y->code,
                     y->obj.namespace_, y->obj.name, y->message);
    }
}

static void same_result(const struct diag_result *a, const struct diag_result *b,
                        const char *what, const char *pod)
{
    if (a->healthy != b->healthy || strcmp(a->list, b->list) || strcmp(a->message, b->message))
        fail_msg("%s: pod %s: \"%s\" (%s) vs \"%s\" (%s)", what, pod, a->list, a->message,
                 b->list, b->message);
}

/* Live snapshots of the whole and of the trimmed objects, as the controller builds them.
 * Returns the number of pods compared. */
static size_t compare_live(const cJSON *objs, const char *what)
{
    struct snapshot *a, *b;
    struct dd_err err;
    size_t i, npods = 0;

    dd_err_clear(&err);
    a = snapshot_build(copy_all(objs, 0), NULL, 0, NULL, NULL, NULL, &err);
    b = snapshot_build(copy_all(objs, 1), NULL, 0, NULL, NULL, NULL, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(b->ix);
    same_findings(&a->f, &b->f, what);
    for (i = 0; i < a->m.npods; i++) {
        const struct dra_podspec *pa = a->m.pods[i], *pb;
        struct diag_result ra, rb, rc;
        if (strcmp(pa->o.kind, "Pod"))
            continue;
        if (!(pb = snapshot_pod(b, pa->o.ns, pa->o.name)))
            fail_msg("%s: pod %s/%s is missing from the trimmed snapshot", what, pa->o.ns,
                     pa->o.name);
        diag_pod(&a->m, &a->f, pa, &ra);
        diag_pod(&b->m, &b->f, pb, &rb);
        diag_pod_indexed(&b->m, &b->f, b->ix, pb, &rc);
        same_result(&ra, &rb, what, pa->o.name);
        same_result(&rb, &rc, what, pa->o.name);
        npods++;
    }
    assert_int_equal(a->m.nclaims, b->m.nclaims);
    assert_int_equal(a->m.nslices, b->m.nslices);
    assert_int_equal(a->m.ndrivers, b->m.ndrivers);
    assert_int_equal(a->m.nruntimes, b->m.nruntimes);
    snapshot_free(a);
    snapshot_free(b);
    return npods;
}

/* The model and rules alone, as lint runs them (not live). */
static void compare_offline(const cJSON *objs, const char *what)
{
    cJSON *whole = copy_all(objs, 0), *trimmed = copy_all(objs, 1);
    struct dra_model a, b;
    struct dd_findings fa = DD_FINDINGS_INIT, fb = DD_FINDINGS_INIT;
    const cJSON *it;

    dra_model_init(&a, NULL, NULL);
    dra_model_init(&b, NULL, NULL);
    cJSON_ArrayForEach(it, whole)
        assert_int_equal(dra_model_add(&a, it, NULL, 0), DD_OK);
    cJSON_ArrayForEach(it, trimmed)
        assert_int_equal(dra_model_add(&b, it, NULL, 0), DD_OK);
    assert_int_equal(dra_model_finish(&a), DD_OK);
    assert_int_equal(dra_model_finish(&b), DD_OK);
    assert_int_equal(dd_rules_run(&a, NULL, &fa), 0);
    assert_int_equal(dd_rules_run(&b, NULL, &fb), 0);
    same_findings(&fa, &fb, what);
    dd_findings_release(&fa);
    dd_findings_release(&fb);
    dra_model_release(&a);
    dra_model_release(&b);
    cJSON_Delete(whole);
    cJSON_Delete(trimmed);
}

/* Every object of a manifest directory, as a new array. */
static cJSON *load_dir(const char *dir)
{
    struct mf_set set = MF_SET_INIT;
    cJSON *out = cJSON_CreateArray();
    size_t i;

    mf_set_init(&set);
    mf_load_path(&set, dir, NULL);
    for (i = 0; i < set.n; i++)
        cJSON_AddItemToArray(out, cJSON_Duplicate(set.objs[i].json, 1));
    mf_set_release(&set);
    return out;
}

static int is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Compares every directory under dir that holds manifests (the lint cases). */
static size_t compare_lint_dirs(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024];
    size_t n = 0;
    cJSON *objs;

    assert_non_null(d);
    objs = load_dir(dir);
    if (cJSON_GetArraySize(objs) > 0) {
        compare_offline(objs, dir);
        compare_live(objs, dir);
        n++;
    }
    cJSON_Delete(objs);
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (is_dir(path))
            n += compare_lint_dirs(path);
    }
    closedir(d);
    return n;
}

static void trimmed_lint_cases_diagnose_alike(void **state)
{
    (void)state;
    /* seed, nvidia, intel, v1beta1 (broken, clean and each seed fix), list. */
    assert_true(compare_lint_dirs(LINT_DATA) >= 15);
}

static cJSON *live_sample(void)
{
    char *text = test_read_file(LIVE_SAMPLE);
    cJSON *objs = cJSON_Parse(text);

    free(text);
    assert_non_null(objs);
    return objs;
}

static void trimmed_live_objects_diagnose_alike(void **state)
{
    cJSON *objs = live_sample();

    (void)state;
    /* 18 pods: healthy ones and two or three of every fault the benchmark makes. */
    assert_int_equal(compare_live(objs, LIVE_SAMPLE), 18);
    compare_offline(objs, LIVE_SAMPLE);
    cJSON_Delete(objs);
}

static cJSON *find(cJSON *objs, const char *kind, const char *ns, const char *name)
{
    cJSON *it;

    cJSON_ArrayForEach(it, objs)
        if (same_str(dd_json_str(it, "kind", NULL), kind) &&
            same_str(dd_json_str(it, "metadata", "namespace", NULL), ns) &&
            same_str(dd_json_str(it, "metadata", "name", NULL), name))
            return it;
    fail_msg("no %s %s/%s in the sample", kind, ns ? ns : "", name);
    return NULL;
}

static void set_member(cJSON *o, const char *key, const char *json)
{
    cJSON *v = cJSON_Parse(json);

    assert_non_null(v);
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    else
        cJSON_AddItemToObject(o, key, v);
}

/*
 * The sample with what a kubelet, the node agent and other tools add: running and
 * failing containers (a CDI error), conditions, a generated claim recorded in
 * resourceClaimStatuses, a node whose containerd has CDI off (inferred) and one whose
 * agent says it is on, events of every reason, foreign annotations and labels, and the
 * denied driver's permission granted through an aggregated ClusterRole (matched by
 * labels).
 */
static void enrich(cJSON *objs)
{
    cJSON *pod, *node;

    pod = find(objs, "Pod", "bench-h-00", "p-0000");
    set_member(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName", "\"bench-node-001\"");
    set_member(pod, "status",
               "{\"phase\":\"Running\",\"qosClass\":\"BestEffort\",\"podIP\":\"10.0.0.5\","
               "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
               "\"containerStatuses\":[{\"name\":\"c\",\"ready\":true,\"restartCount\":0,"
               "\"image\":\"registry.k8s.io/pause:3.10\",\"imageID\":\"sha256:1\","
               "\"state\":{\"running\":{\"startedAt\":\"2026-11-30T14:49:29Z\"}}}]}");
    pod = find(objs, "Pod", "bench-h-00", "p-0001");
    set_member(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "annotations",
               "{\"dra-doctor.io/root-cause\":\"CDIInjectionFailed\",\"dra-doctor.io/findings\":"
               "\"CDIInjectionFailed\",\"kubectl.kubernetes.io/last-applied-configuration\":"
               "\"{\\\"kind\\\":\\\"Pod\\\"}\"}");
    set_member(pod, "status",
               "{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"
               "\"True\"}],\"containerStatuses\":[{\"name\":\"c\",\"ready\":false,"
               "\"restartCount\":0,\"image\":\"registry.k8s.io/pause:3.10\",\"imageID\":\"\","
               "\"state\":{\"waiting\":{\"reason\":\"CreateContainerError\",\"message\":"
               "\"failed to create containerd container: CDI device injection failed: unresolvable "
               "CDI devices k8s.gpu.example.com/gpu=dev-1\"}},\"lastState\":{}}],"
               "\"initContainerStatuses\":[]}");
    pod = find(objs, "Pod", "bench-h-00", "p-0002");
    set_member(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "resourceClaims",
               "[{\"name\":\"dev\",\"resourceClaimTemplateName\":\"tmpl\"}]");
    set_member(pod, "status",
               "{\"phase\":\"Pending\",\"resourceClaimStatuses\":[{\"name\":\"dev\","
               "\"resourceClaimName\":\"c-0002\"}]}");
    node = find(objs, "Node", NULL, "bench-node-000");
    set_member(cJSON_GetObjectItemCaseSensitive(node, "metadata"), "annotations",
               "{\"dra-doctor.io/cdi\":\"{\\\"version\\\":2,\\\"enableCDI\\\":true}\","
               "\"node.alpha.kubernetes.io/ttl\":\"0\"}");
    node = find(objs, "Node", NULL, "bench-node-001");
    cJSON_ReplaceItemInObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(node, "status"),
                                         "nodeInfo"),
        "containerRuntimeVersion", cJSON_CreateString("containerd://1.7.24"));
    cJSON_AddItemToArray(objs, cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"p.1\",\"namespace\":"
        "\"bench-quota-0\",\"uid\":\"u\",\"resourceVersion\":\"9\"},\"involvedObject\":{\"kind\":"
        "\"Pod\",\"namespace\":\"bench-quota-0\",\"name\":\"p-0000\",\"uid\":\"x\"},\"reason\":"
        "\"FailedResourceClaimCreation\",\"message\":\"PodResourceClaim dev: resource claim "
        "creation failed: exceeded quota: devices\",\"type\":\"Warning\",\"count\":3,"
        "\"source\":{\"component\":\"resource_claim\"},\"firstTimestamp\":\"2026-11-30T14:49:29Z\"}"));
    cJSON_AddItemToArray(objs, cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"p.2\",\"namespace\":"
        "\"bench-h-00\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"bench-h-00\","
        "\"name\":\"p-0001\"},\"reason\":\"Failed\",\"message\":\"Error: CDI device injection "
        "failed\",\"type\":\"Warning\"}"));
    cJSON_AddItemToArray(objs, cJSON_Parse(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"
        "{\"name\":\"slices-aggregated\",\"labels\":{\"app\":\"x\"}},\"aggregationRule\":"
        "{\"clusterRoleSelectors\":[{\"matchLabels\":{\"example.com/aggregate-to-slices\":"
        "\"true\"}}]},\"rules\":[]}"));
    cJSON_AddItemToArray(objs, cJSON_Parse(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"
        "{\"name\":\"slices-part\",\"labels\":{\"example.com/aggregate-to-slices\":\"true\"},"
        "\"annotations\":{\"rbac.authorization.kubernetes.io/autoupdate\":\"true\"}},\"rules\":"
        "[{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":[\"resourceslices\"],\"verbs\":"
        "[\"get\",\"list\",\"watch\",\"create\",\"update\",\"patch\",\"delete\"]}]}"));
    cJSON_AddItemToArray(objs, cJSON_Parse(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
        "\"metadata\":{\"name\":\"denied-aggregated\",\"labels\":{\"app\":\"x\"}},\"subjects\":"
        "[{\"kind\":\"ServiceAccount\",\"name\":\"driver-denied\",\"namespace\":"
        "\"bench-drivers\"}],\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
        "\"ClusterRole\",\"name\":\"slices-aggregated\"}}"));
    cJSON_AddItemToArray(objs, cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"plain\",\"namespace\":"
        "\"bench-h-00\",\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":"
        "\"{}\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},\"status\":"
        "{\"phase\":\"Pending\"}}"));
}

/* The root cause of pod ns/name in a snapshot of objs trimmed ("" when healthy). */
static void root_is(const cJSON *objs, const char *ns, const char *name, const char *want)
{
    struct dd_err err;
    struct snapshot *s = snapshot_build(copy_all(objs, 1), NULL, 0, NULL, NULL, NULL, &err);
    const struct dra_podspec *p;
    struct diag_result r;

    assert_non_null(s);
    assert_non_null(p = snapshot_pod(s, ns, name));
    diag_pod_indexed(&s->m, &s->f, s->ix, p, &r);
    if (strcmp(r.healthy ? "" : r.codes[0], want))
        fail_msg("pod %s/%s: root cause \"%s\", want \"%s\" (%s)", ns, name,
                 r.healthy ? "" : r.codes[0], want, r.healthy ? "" : r.message);
    snapshot_free(s);
}

static void trimmed_live_objects_with_statuses_diagnose_alike(void **state)
{
    cJSON *objs = live_sample();

    (void)state;
    enrich(objs);
    /* The pod without claims is nothing to the model either way. */
    assert_int_equal(compare_live(objs, "enriched sample"), 18);
    compare_offline(objs, "enriched sample");
    /* What the additions are there for (each relies on a member the trim keeps). */
    root_is(objs, "bench-h-00", "p-0000", "CDIDisabled");         /* runtime version */
    root_is(objs, "bench-h-00", "p-0001", "CDIInjectionFailed");  /* container state */
    /* Its template does not exist, but the claim made from it (resourceClaimStatuses) is
     * allocated. */
    root_is(objs, "bench-h-00", "p-0002", "");
    /* The denied driver is granted through the aggregated role (its labels): what still
     * blocks the pod is that the driver has no slices and its DaemonSet may run on no node
     * (the sample's nodeSelector matches none), which the trim keeps. */
    root_is(objs, "bench-rbac-0", "p-0000", "DriverDaemonSetMissingOnNode");
    root_is(objs, "bench-rbac-0", "p-0001", "DriverDaemonSetMissingOnNode");
    root_is(objs, "bench-quota-0", "p-0000", "QuotaExceeded");
    root_is(objs, "bench-typo-0", "p-0000", "SelectorMatchesNoDriver");
    root_is(objs, "bench-dcnf-0", "p-0000", "DeviceClassNotFound");
    root_is(objs, "bench-cnf-0", "p-0000", "ClaimNotFound");
    /* Created with nodeName, its claim not (yet, in this capture) allocated by anyone. */
    root_is(objs, "bench-quota-0", "held", "PodBypassesScheduler");
    cJSON_Delete(objs);
}

static void trim_keeps_only_what_is_read(void **state)
{
    cJSON *objs = live_sample(), *pod, *ev, *copy;
    const cJSON *it;
    size_t n;

    (void)state;
    enrich(objs);
    pod = cJSON_Duplicate(find(objs, "Pod", "bench-h-00", "p-0001"), 1);
    cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels",
                          cJSON_Parse("{\"app\":\"x\"}"));
    assert_non_null(dd_json_path(pod, "metadata", "managedFields", NULL));
    {
        cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"), 0);
        cJSON *res = cJSON_GetObjectItemCaseSensitive(c0, "resources");
        assert_non_null(c0);
        if (!res)
            res = cJSON_AddObjectToObject(c0, "resources");
        cJSON_AddItemToObject(res, "limits", cJSON_Parse("{\"cpu\":\"1\"}"));
        cJSON_AddStringToObject(c0, "image", "busybox");
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                                "conditions");
        cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(pod, "status"), "conditions",
                              cJSON_Parse("[{\"type\":\"PodScheduled\",\"status\":\"True\"},"
                                          "{\"type\":\"DisruptionTarget\",\"status\":\"True\","
                                          "\"reason\":\"DeletionByDeviceTaintManager\","
                                          "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"},"
                                          "{\"type\":\"Ready\",\"status\":\"False\","
                                          "\"reason\":\"ContainersNotReady\"}]"));
    }
    keep_trim(pod);
    assert_true(keep_object(pod));
    n = 0;
    cJSON_ArrayForEach(it, dd_json_path(pod, "metadata", NULL))
        n++;
    /* name, namespace, uid (for the Events' involvedObject) and dra-doctor's annotations. */
    assert_int_equal(n, 4);
    assert_non_null(dd_json_str(pod, "metadata", "uid", NULL));
    assert_non_null(dd_json_str(pod, "metadata", "annotations", DIAG_ANN_ROOT_CAUSE, NULL));
    assert_null(dd_json_path(pod, "metadata", "managedFields", NULL));
    /* Of the containers, only which claims each one gets (ClaimNotConsumedByContainer). */
    it = cJSON_GetArrayItem(dd_json_arr(pod, "spec", "containers", NULL), 0);
    assert_non_null(dd_json_str(it, "name", NULL));
    assert_null(dd_json_path(it, "image", NULL));
    assert_null(dd_json_path(it, "resources", "limits", NULL));
    /* Conditions: an eviction's (DeviceTaintNotTolerated reads it), why, not when; no
     * other condition. */
    assert_int_equal(cJSON_GetArraySize(dd_json_arr(pod, "status", "conditions", NULL)), 1);
    it = cJSON_GetArrayItem(dd_json_arr(pod, "status", "conditions", NULL), 0);
    assert_string_equal(dd_json_str(it, "reason", NULL), "DeletionByDeviceTaintManager");
    assert_null(dd_json_path(it, "lastTransitionTime", NULL));
    assert_null(dd_json_path(pod, "status", "initContainerStatuses", NULL));
    assert_non_null(dd_json_arr(pod, "status", "containerStatuses", NULL));
    it = cJSON_GetArrayItem(dd_json_arr(pod, "status", "containerStatuses", NULL), 0);
    assert_contains(dd_json_str(it, "state", "waiting", "message", NULL), "CDI device injection");
    assert_null(dd_json_path(it, "image", NULL));
    assert_null(dd_json_path(it, "lastState", NULL));
    /* Common keys and values share storage, and such objects copy and free as any other
     * (the sanitizer build checks the frees). */
    assert_true(cJSON_GetObjectItemCaseSensitive(pod, "metadata")->type & cJSON_StringIsConst);
    assert_true(cJSON_GetObjectItemCaseSensitive(pod, "kind")->type & cJSON_IsReference);
    copy = cJSON_Duplicate(pod, 1);
    assert_true(cJSON_Compare(copy, pod, 1));
    keep_trim(copy); /* trimming twice changes nothing */
    assert_true(cJSON_Compare(copy, pod, 1));
    cJSON_Delete(copy);
    cJSON_Delete(pod);

    /* A pod without claims, and Events of reasons no diagnosis reads, are not kept. */
    pod = cJSON_Duplicate(find(objs, "Pod", "bench-h-00", "plain"), 1);
    keep_trim(pod);
    assert_false(keep_object(pod));
    cJSON_Delete(pod);
    ev = cJSON_Duplicate(find(objs, "Event", "bench-h-00", "p.2"), 1);
    keep_trim(ev);
    assert_false(keep_object(ev));
    cJSON_Delete(ev);
    ev = cJSON_Duplicate(find(objs, "Event", "bench-quota-0", "p.1"), 1);
    keep_trim(ev);
    assert_true(keep_object(ev));
    assert_null(dd_json_path(ev, "source", NULL));
    assert_null(dd_json_path(ev, "involvedObject", "uid", NULL));
    assert_string_equal(dd_json_str(ev, "reason", NULL), "FailedResourceClaimCreation");
    cJSON_Delete(ev);
    cJSON_Delete(objs);
}

/* A claim in the model, from JSON text: trimmed and packed as a cache keeps it, or whole. */
static cJSON *claim_obj(const char *name, const char *cls, int cached)
{
    char text[512];
    cJSON *c;

    snprintf(text, sizeof(text),
             "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", "
             "\"metadata\": {\"name\": \"%s\", \"namespace\": \"specs\"}, \"spec\": "
             "{\"devices\": {\"requests\": [{\"name\": \"r\", \"exactly\": "
             "{\"deviceClassName\": \"%s\", \"count\": 2, \"selectors\": [{\"cel\": "
             "{\"expression\": \"device.driver == '%s.example.com'\"}}]}}]}}}",
             name, cls, cls);
    assert_non_null(c = cJSON_Parse(text));
    if (cached) {
        keep_trim(c);
        c = dd_json_pack(c);
    }
    return c;
}

/* Cached claims alike (their spec.devices held once) share the requests the model parses
 * from it, and read as their own would; claims of another spec, and claims not from a
 * cache, have their own. */
static void cached_claims_alike_share_their_requests(void **state)
{
    static const char *const cls[] = { "spec-a", "spec-a", "spec-a", "spec-b", "spec-a" };
    cJSON *objs[5];
    struct dra_model m;
    const struct dra_request *r;
    char name[16];
    size_t i;

    (void)state;
    dra_model_init(&m, NULL, NULL);
    for (i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "c%zu", i);
        objs[i] = claim_obj(name, cls[i], i < 4);
        assert_int_equal(dra_model_add(&m, objs[i], NULL, 0), DD_OK);
    }
    assert_int_equal(dra_model_finish(&m), DD_OK);
    assert_int_equal(m.nclaims, 5);
    /* The first sighting of a list keeps its own (dd_json_share holds it from the second). */
    assert_true(m.claims[1].spec.shared && m.claims[2].spec.shared);
    assert_ptr_equal(m.claims[1].spec.req, m.claims[2].spec.req);
    assert_false(m.claims[3].spec.req == m.claims[1].spec.req);
    assert_false(m.claims[4].spec.shared);
    for (i = 0; i < 5; i++) {
        assert_int_equal(m.claims[i].spec.nreq, 1);
        r = &m.claims[i].spec.req[0];
        assert_string_equal(r->name, "r");
        assert_string_equal(r->class_name, cls[i]);
        assert_int_equal(r->count, 2);
        assert_int_equal(r->nsel, 1);
        assert_non_null(r->sel[0].prog);
        assert_non_null(strstr(r->sel[0].expr, cls[i]));
    }
    dra_model_release(&m);
    for (i = 0; i < 5; i++)
        cJSON_Delete(objs[i]);
}

/* The webhook's trim: keep_trim, and of a claim's reservedFor only whether it is empty. */
static void trim_for_admission_keeps_whether_reserved(void **state)
{
    cJSON *objs = live_sample(), *a, *b, *c;
    const cJSON *rf, *it;

    (void)state;
    a = cJSON_Duplicate(find(objs, "ResourceClaim", "bench-h-00", "c-0001"), 1);
    b = cJSON_Duplicate(a, 1);
    assert_true(cJSON_GetArraySize(dd_json_arr(a, "status", "reservedFor", NULL)) > 0);
    keep_trim(a);
    keep_trim_admission(b);
    /* [{}]: one entry, empty; from the second claim on, the list held once. */
    rf = dd_json_path(b, "status", "reservedFor", NULL);
    assert_true(cJSON_IsArray(rf));
    assert_int_equal(cJSON_GetArraySize(rf), 1);
    assert_true(cJSON_IsObject(rf->child) && !rf->child->child);
    c = cJSON_Duplicate(find(objs, "ResourceClaim", "bench-h-00", "c-0002"), 1);
    keep_trim_admission(c);
    assert_true(dd_json_path(c, "status", "reservedFor", NULL)->type & cJSON_IsReference);
    cJSON_Delete(c);
    /* Nothing else differs from keep_trim's. */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "status"),
                                            "reservedFor");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "status"),
                                            "reservedFor");
    assert_true(cJSON_Compare(a, b, 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* Trimming twice changes nothing; an empty list stays empty; other kinds are keep_trim's. */
    c = cJSON_Duplicate(find(objs, "ResourceClaim", "bench-h-00", "c-0001"), 1);
    keep_trim_admission(c);
    a = cJSON_Duplicate(c, 1);
    keep_trim_admission(a);
    assert_true(cJSON_Compare(a, c, 1));
    cJSON_Delete(a);
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "status"),
                                           "reservedFor", cJSON_CreateArray());
    keep_trim_admission(c);
    assert_int_equal(cJSON_GetArraySize(dd_json_arr(c, "status", "reservedFor", NULL)), 0);
    cJSON_Delete(c);
    /* Packed, reserved claims hold the reservation itself once: the same node. */
    a = cJSON_Duplicate(find(objs, "ResourceClaim", "bench-h-00", "c-0001"), 1);
    b = cJSON_Duplicate(find(objs, "ResourceClaim", "bench-h-00", "c-0002"), 1);
    c = cJSON_Duplicate(find(objs, "ResourceClaim", "bench-h-00", "c-0001"), 1);
    keep_trim_admission(a);
    keep_trim_admission(b);
    keep_trim_admission(c);
    a = dd_json_pack(a);
    b = dd_json_pack(b);
    c = dd_json_pack(c);
    assert_ptr_equal(dd_json_path(b, "status", "reservedFor", NULL),
                     dd_json_path(c, "status", "reservedFor", NULL));
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    cJSON_ArrayForEach(it, objs) {
        if (same_str(dd_json_str(it, "kind", NULL), "ResourceClaim"))
            continue;
        a = cJSON_Duplicate(it, 1);
        b = cJSON_Duplicate(it, 1);
        keep_trim(a);
        keep_trim_admission(b);
        assert_true(cJSON_Compare(a, b, 1));
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    cJSON_Delete(objs);
}

/* A trimmed copy of the sample's kind ns/name (the caller deletes it). */
static cJSON *trimmed(cJSON *objs, const char *kind, const char *ns, const char *name)
{
    cJSON *c = cJSON_Duplicate(find(objs, kind, ns, name), 1);

    assert_non_null(c);
    keep_trim(c);
    return c;
}

/* The children of o's member path, which must be held once (dd_json_share). */
static const cJSON *shared_list(const cJSON *o, const char *a, const char *b, const char *c)
{
    const cJSON *m = dd_json_path(o, a, b, c, NULL);

    assert_non_null(m);
    if (!(m->type & cJSON_IsReference))
        fail_msg("%s%s%s%s%s of %s is its own, not held once", a, b ? "." : "", b ? b : "",
                 c ? "." : "", c ? c : "",
                 dd_json_str(o, "metadata", "name", NULL) ? dd_json_str(o, "metadata", "name", NULL)
                                                          : dd_json_str(o, "name", NULL));
    return m->child;
}

/* What cached objects have alike is held once: the node selector of claims allocated on one
 * node, a device's attributes where they repeat, and where they do not, their values. */
/* 1 when node n lies in the block packed object o was copied into (dd_json_pack). */
static int in_block(const cJSON *n, const cJSON *o)
{
    return (const char *)n >= (const char *)o &&
           (const char *)n < (const char *)o + malloc_usable_size((void *)o);
}

static void trim_shares_what_objects_have_alike(void **state)
{
    cJSON *objs = live_sample(), *c[3], *sl[4], *it;
    const cJSON *dev[4];
    int64_t index = -1;
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++) { /* a list is held from its second sighting */
        char name[16];
        snprintf(name, sizeof(name), "c-%04zu", i);
        c[i] = trimmed(objs, "ResourceClaim", "bench-h-00", name);
    }
    assert_ptr_equal(shared_list(c[1], "status", "allocation", "nodeSelector"),
                     shared_list(c[2], "status", "allocation", "nodeSelector"));
    /* Packed, they hold the runs of last members they have alike (dd_json_tail): their
     * apiVersion and kind, namespace, node selector and reservations' resource; the rest
     * (a result's other node's pool and another driver) is their own, and reads back. */
    for (i = 0; i < 3; i++)
        c[i] = dd_json_pack(c[i]);
    for (i = 0; i < 4; i++) {
        static const char *const path[4][4] = {
            { "kind", NULL }, { "metadata", "namespace", NULL },
            { "status", "allocation", "nodeSelector", NULL }, { "status", "reservedFor", NULL } };
        const cJSON *m1 = dd_json_path(c[1], path[i][0], path[i][1], path[i][2], NULL);
        const cJSON *m2 = dd_json_path(c[2], path[i][0], path[i][1], path[i][2], NULL);
        if (i == 3) {
            m1 = dd_json_path(cJSON_GetArrayItem(m1, 0), "resource", NULL);
            m2 = dd_json_path(cJSON_GetArrayItem(m2, 0), "resource", NULL);
        }
        assert_non_null(m1);
        if (m1 != m2)
            fail_msg("%s.%s of c-0001 and c-0002 are not held once", path[i][0],
                     path[i][1] ? path[i][1] : "");
        assert_false(in_block(m2, c[2]));
    }
    it = cJSON_GetArrayItem(dd_json_arr(c[2], "status", "allocation", "devices", "results", NULL),
                            0);
    assert_true(in_block(dd_json_path(it, "driver", NULL), c[2]));
    assert_string_equal(dd_json_str(it, "driver", NULL), "nic.example.com");
    assert_string_equal(dd_json_str(it, "pool", NULL), "bench-node-000");
    assert_string_equal(dd_json_str(it, "device", NULL), "dev-0");
    assert_string_equal(dd_json_str(c[2], "metadata", "name", NULL), "c-0002");
    assert_string_equal(dd_json_str(c[2], "metadata", "namespace", NULL), "bench-h-00");
    assert_string_equal(dd_json_str(c[2], "kind", NULL), "ResourceClaim");
    it = cJSON_GetArrayItem(dd_json_arr(c[2], "status", "reservedFor", NULL), 0);
    assert_string_equal(dd_json_str(it, "name", NULL), "p-0002");
    assert_string_equal(dd_json_str(it, "resource", NULL), "pods");
    sl[0] = trimmed(objs, "ResourceSlice", NULL, "bench-node-000-fpga");
    sl[1] = trimmed(objs, "ResourceSlice", NULL, "bench-node-000-nic");
    sl[2] = trimmed(objs, "ResourceSlice", NULL, "bench-node-000-npu");
    sl[3] = trimmed(objs, "ResourceSlice", NULL, "bench-node-000-gpu"); /* model RARE */
    for (i = 0; i < 4; i++)
        dev[i] = cJSON_GetArrayItem(dd_json_arr(sl[i], "spec", "devices", NULL), 0);
    assert_ptr_equal(shared_list(dev[1], "attributes", NULL, NULL),
                     shared_list(dev[2], "attributes", NULL, NULL));
    /* The GPU's attributes are its own, but not their values that others have. */
    assert_false(dd_json_path(dev[3], "attributes", NULL)->type & cJSON_IsReference);
    assert_non_null(shared_list(dev[3], "attributes", "index", NULL));
    assert_true(dd_json_int(dev[3], &index, "attributes", "index", "int", NULL));
    assert_int_equal(index, 0);
    assert_string_equal(dd_json_str(dev[3], "attributes", "model", "string", NULL), "RARE");
    /* The unchanged sample's findings from such copies: trimmed_live_objects_diagnose_alike. */
    for (i = 0; i < 3; i++)
        cJSON_Delete(c[i]);
    for (i = 0; i < 4; i++)
        cJSON_Delete(sl[i]);
    cJSON_Delete(objs);
}

/*
 * objs as a live cluster holds them once the resourceclaim controller has made each pod's
 * claims from its templates: a claim per template reference, controlled by the pod (by
 * UID), recorded in the pod's resourceClaimStatuses; the pod Pending.
 */
static void generate_claims(cJSON *objs)
{
    cJSON *pod, *pc, *tmpl, *add = cJSON_CreateArray();

    cJSON_ArrayForEach(pod, objs) {
        char uid[300];
        cJSON *st, *rcs;
        if (!same_str(dd_json_str(pod, "kind", NULL), "Pod"))
            continue;
        snprintf(uid, sizeof(uid), "uid-%s", dd_json_str(pod, "metadata", "name", NULL));
        cJSON_AddStringToObject(cJSON_GetObjectItem(pod, "metadata"), "uid", uid);
        st = cJSON_AddObjectToObject(pod, "status");
        cJSON_AddStringToObject(st, "phase", "Pending");
        rcs = cJSON_AddArrayToObject(st, "resourceClaimStatuses");
        cJSON_ArrayForEach(pc, dd_json_arr(pod, "spec", "resourceClaims", NULL)) {
            const char *t = dd_json_str(pc, "resourceClaimTemplateName", NULL);
            char name[300];
            cJSON *c, *ref, *rs;
            snprintf(name, sizeof(name), "%s-%s-x", dd_json_str(pod, "metadata", "name", NULL),
                     dd_json_str(pc, "name", NULL));
            tmpl = find(objs, "ResourceClaimTemplate", dd_json_str(pod, "metadata", "namespace",
                                                                   NULL), t);
            c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "apiVersion", "resource.k8s.io/v1");
            cJSON_AddStringToObject(c, "kind", "ResourceClaim");
            set_member(c, "metadata", "{}");
            cJSON_AddStringToObject(cJSON_GetObjectItem(c, "metadata"), "name", name);
            cJSON_AddStringToObject(cJSON_GetObjectItem(c, "metadata"), "namespace",
                                    dd_json_str(pod, "metadata", "namespace", NULL));
            ref = cJSON_CreateObject();
            cJSON_AddStringToObject(ref, "apiVersion", "v1");
            cJSON_AddStringToObject(ref, "kind", "Pod");
            cJSON_AddStringToObject(ref, "name", dd_json_str(pod, "metadata", "name", NULL));
            cJSON_AddStringToObject(ref, "uid", uid);
            cJSON_AddTrueToObject(ref, "controller");
            cJSON_AddTrueToObject(ref, "blockOwnerDeletion");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_GetObjectItem(c, "metadata"),
                                                        "ownerReferences"), ref);
            cJSON_AddItemToObject(c, "spec", cJSON_Duplicate(dd_json_path(tmpl, "spec", "spec",
                                                                          NULL), 1));
            cJSON_AddItemToArray(add, c);
            rs = cJSON_CreateObject();
            cJSON_AddStringToObject(rs, "name", dd_json_str(pc, "name", NULL));
            cJSON_AddStringToObject(rs, "resourceClaimName", name);
            cJSON_AddItemToArray(rcs, rs);
        }
    }
    while ((pc = cJSON_DetachItemFromArray(add, 0)))
        cJSON_AddItemToArray(objs, pc);
    cJSON_Delete(add);
}

/*
 * Issue 21's allocation shapes as the controller sees them live: their claims generated from
 * the templates, each controlled by its pod (the scheduler takes it only then) and with the
 * claim's constraints - both of which the trim once dropped, so that the controller never
 * found those shapes unfit.  Whole and trimmed, each broken shape's root cause is
 * DevicesDoNotFit and each fixed twin's is not; a pod or claim being deleted is not judged.
 */
static void trimmed_generated_claims_diagnose_alike(void **state)
{
    static const char *const shapes[] = {
        "all-plus-another", "capacity-not-reached", "class-keeps-two-of-four",
        "nic-pool-other-node", "pcie-root-not-shared", "two-claims-one-gpu-each-node",
        "two-nodes-one-gpu-each", "two-requests-same-model",
    };
    char dir[256], ns[128];
    size_t i;
    int fixed;

    (void)state;
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        for (fixed = 0; fixed < 2; fixed++) {
            cJSON *objs, *it;
            snprintf(dir, sizeof(dir), LINT_DATA "/alloc/%s/%s", shapes[i], fixed ? "fixed" : "broken");
            snprintf(ns, sizeof(ns), "%s%s", shapes[i], fixed ? "-fixed" : "");
            objs = load_dir(dir);
            generate_claims(objs);
            assert_int_equal(compare_live(objs, dir), 1);
            if (fixed) {
                /* No DaemonSet: the slices' driver has no plugin (StaleResourceSlices). */
                root_is(objs, ns, "trainer", "StaleResourceSlices");
                cJSON_Delete(objs);
                continue;
            }
            root_is(objs, ns, "trainer", "DevicesDoNotFit");
            /* Being deleted: the pod, then (the pod back) its claim. */
            set_member(cJSON_GetObjectItem(find(objs, "Pod", ns, "trainer"), "metadata"),
                       "deletionTimestamp", "\"2026-12-02T00:00:00Z\"");
            compare_live(objs, dir);
            root_is(objs, ns, "trainer", "StaleResourceSlices");
            cJSON_DeleteItemFromObject(cJSON_GetObjectItem(find(objs, "Pod", ns, "trainer"),
                                                           "metadata"), "deletionTimestamp");
            cJSON_ArrayForEach(it, objs)
                if (same_str(dd_json_str(it, "kind", NULL), "ResourceClaim"))
                    set_member(cJSON_GetObjectItem(it, "metadata"), "deletionTimestamp",
                               "\"2026-12-02T00:00:00Z\"");
            compare_live(objs, dir);
            cJSON_Delete(objs);
        }
}

/*
 * DevicesDoNotFit judges pods alike once: a pod whose generated claim another pod controls
 * stops at PreFilter ("was not created for Pod"), which is not the verdict of the pod that
 * owns those claims.  With that pod judged first, the owner is still found not to fit.
 */
static void pods_alike_but_the_claims_owner(void **state)
{
    const char *ns = "two-nodes-one-gpu-each";
    cJSON *objs = load_dir(LINT_DATA "/alloc/two-nodes-one-gpu-each/broken"), *other, *meta;

    (void)state;
    generate_claims(objs);
    root_is(objs, ns, "trainer", "DevicesDoNotFit");
    /* A pod of the same spec, first in the cache, naming the trainer's claims as its own. */
    other = cJSON_Duplicate(find(objs, "Pod", ns, "trainer"), 1);
    meta = cJSON_GetObjectItem(other, "metadata");
    cJSON_ReplaceItemInObject(meta, "name", cJSON_CreateString("aaa-other"));
    cJSON_ReplaceItemInObject(meta, "uid", cJSON_CreateString("uid-aaa-other"));
    cJSON_InsertItemInArray(objs, 0, other);
    root_is(objs, ns, "aaa-other", "StaleResourceSlices"); /* the fixture has no DaemonSet */
    root_is(objs, ns, "trainer", "DevicesDoNotFit");
    cJSON_Delete(objs);
}

/* The index of findings finds, for every pod of the seed's fix sequence, what a look at
 * every finding finds (test_diagnose.c checks the diagnoses themselves). */
static void indexed_diagnosis_of_lint_seed(void **state)
{
    cJSON *objs = load_dir(LINT_DATA "/seed/broken");

    (void)state;
    assert_true(compare_live(objs, "seed") >= 2);
    cJSON_Delete(objs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trim_keeps_only_what_is_read),
        cmocka_unit_test(trim_shares_what_objects_have_alike),
        cmocka_unit_test(trim_for_admission_keeps_whether_reserved),
        cmocka_unit_test(cached_claims_alike_share_their_requests),
        cmocka_unit_test(trimmed_live_objects_diagnose_alike),
        cmocka_unit_test(trimmed_live_objects_with_statuses_diagnose_alike),
        cmocka_unit_test(trimmed_lint_cases_diagnose_alike),
        cmocka_unit_test(indexed_diagnosis_of_lint_seed),
        cmocka_unit_test(trimmed_generated_claims_diagnose_alike),
        cmocka_unit_test(pods_alike_but_the_claims_owner),
    };

    return cmocka_run_group_tests_name("snapshot", tests, NULL, NULL);
}
