/*
 * test_evidence.c - every text the controller matches, as the real components wrote it.
 *
 * The files of tests/data/real-node/ were captured on the real node of the e2e tests (control
 * plane and kubelet v1.37.2, containerd v1.7.35 and v2.4.2, runc 1.1.5, dra-example-driver
 * v0.2.1) by
 * e2e/node/capture.sh at the points of tests/e2e/e2e_seed.c, e2e_containerd2.c and e2e_modes.c that
 * name them (DD_E2E_CAPTURE=DIR): the pods, Events, claims, slices, DaemonSet, Node and
 * RBAC objects of the scenario, word for word, without dra-doctor's own output.  Each
 * test diagnoses a pod of one capture, from whole objects and from the controller's
 * trimmed ones, and checks the cause and that the real text reached the message.
 */
#include "harness.h"

#include "rules/diagnose.h"
#include "formats/json.h"
#include "rules/rules.h"
#include "model/keep.h"
#include "rules/snapshot.h"

#define DIR "tests/data/real-node/"

static cJSON *read_capture(const char *name);
static int is(const cJSON *o, const char *kind, const char *name);
static void diagnose_objects(const cJSON *objs, const char *pod, struct diag_result *r);

struct capture {
    cJSON *doc, *assumed;
    struct dra_model m;
    struct dd_findings f;
};

static void load(struct capture *c, const char *name, int trimmed)
{
    char path[256], *text;
    cJSON *it;

    memset(c, 0, sizeof(*c));
    snprintf(path, sizeof(path), DIR "%s.json", name);
    text = test_read_file(path);
    c->doc = cJSON_Parse(text);
    free(text);
    assert_non_null(c->doc);
    dra_model_init(&c->m, NULL, NULL);
    c->m.live = 1;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(c->doc, "objects")) {
        if (trimmed) {
            if (!keep_object(it))
                continue;
            keep_trim(it);
        }
        assert_int_equal(dra_model_add(&c->m, it, NULL, 0), DD_OK);
    }
    assert_int_equal(dra_model_finish(&c->m), DD_OK);
    c->assumed = diag_assume_rejected_claims(&c->m);
    cJSON_ArrayForEach(it, c->assumed)
        assert_int_equal(dra_model_add(&c->m, it, NULL, 0), DD_OK);
    assert_int_equal(dd_rules_run(&c->m, NULL, &c->f), 0);
}

static void release(struct capture *c)
{
    dd_findings_release(&c->f);
    dra_model_release(&c->m);
    cJSON_Delete(c->doc);
    cJSON_Delete(c->assumed);
}

static int has(const struct diag_result *r, const char *code)
{
    size_t i;

    for (i = 0; i < r->ncodes; i++)
        if (!strcmp(r->codes[i], code))
            return 1;
    return 0;
}

/*
 * Diagnoses pod of capture name, whole and trimmed: the root cause must be root, every
 * code of also (comma-separated) listed, absent not, and the message must contain each
 * of the NULL-terminated texts.
 */
static void check(const char *name, const char *pod, const char *root, const char *also,
                  const char *absent, ...)
{
    int trimmed;

    for (trimmed = 0; trimmed < 2; trimmed++) {
        struct capture c;
        struct diag_result r;
        const char *t;
        va_list ap;
        size_t i;

        load(&c, name, trimmed);
        for (i = 0; i < c.m.npods; i++)
            if (!strcmp(c.m.pods[i]->o.name, pod))
                break;
        if (i == c.m.npods)
            fail_msg("%s: no pod %s", name, pod);
        diag_pod(&c.m, &c.f, c.m.pods[i], &r);
        if (getenv("EVIDENCE_DEBUG"))
            fprintf(stderr, "%s %s%s: [%s] %s\n", name, pod, trimmed ? " (trimmed)" : "", r.list,
                    r.message);
        if (r.healthy || strcmp(r.codes[0], root))
            fail_msg("%s, %s%s: expected %s first, got [%s]: %s", name, pod,
                     trimmed ? " (trimmed)" : "", root, r.list, r.message);
        if (also) {
            char buf[256], *tok, *save = NULL;
            snprintf(buf, sizeof(buf), "%s", also);
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                if (!has(&r, tok))
                    fail_msg("%s, %s: %s not in [%s]", name, pod, tok, r.list);
        }
        if (absent && has(&r, absent))
            fail_msg("%s, %s: %s in [%s]", name, pod, absent, r.list);
        va_start(ap, absent);
        while ((t = va_arg(ap, const char *)))
            if (!strstr(r.message, t))
                fail_msg("%s, %s: the message lacks \"%s\": %s", name, pod, t, r.message);
        va_end(ap);
        release(&c);
    }
}

/* dra-example-driver v0.2.1 refusing a claim's GpuConfig when the kubelet asks it to prepare
 * (tests/e2e/e2e_modes.c, prepare_failed): the driver's words reach the message. */
static void node_prepare_failed(void **state)
{
    (void)state;
    check("prepare-failed", "refused", "NodePrepareFailed", NULL, NULL,
          "unknown GPU sharing strategy: Sometimes", NULL);
}

/* containerd 1.7.35's CreateContainerError for a CDI device no spec file defines: with the
 * driver's CDI root unshared, the configuration explains it. */
static void cdi_unresolvable_explained(void **state)
{
    (void)state;
    check("cdi-root", "pod0", "CDISpecDirNotShared", NULL, "CDIInjectionFailed",
          "writes CDI specs to /etc/cdi", "then delete and recreate the pods that failed", NULL);
}

/* The same text once CDI_ROOT is fixed: no configuration explains it, the runtime's words
 * are quoted, and the pod must be recreated. */
static void cdi_unresolvable_after_fix(void **state)
{
    (void)state;
    check("cdi-root-fixed", "pod0", "CDIInjectionFailed", NULL, "CDISpecDirNotShared",
          "cannot start: failed to create containerd container: CDI device injection failed: "
          "unresolvable CDI devices k8s.gpu.example.com/gpu=",
          "Fix: delete and recreate pod pod0", NULL);
    check("cdi-root-fixed", "pod1", "CDIInjectionFailed", NULL, NULL,
          "unresolvable CDI devices k8s.gpu.example.com/gpu=", NULL);
}

/* containerd 2.4.2 words it exactly as 1.7.35 does. */
static void cdi_unresolvable_containerd2(void **state)
{
    (void)state;
    check("cdi-root-containerd2", "pod0", "CDISpecDirNotShared", NULL, "CDIInjectionFailed",
          "writes CDI specs to /etc/cdi", NULL);
}

/* The kubelet's startedAt of pods that started while CDI was off, against the node agent's
 * cdiEnabledAt: they must be recreated; nothing else on the cluster shows it. */
static void started_before_cdi(void **state)
{
    (void)state;
    check("cdi-off-fixed", "pod0", "CDIInjectionFailed", NULL, "CDIDisabled",
          "runs without its DRA devices: its container ctr0 started at 2026-",
          "Fix: delete and recreate pod pod0.", NULL);
}

/* The kubelet's startedAt has one-second precision: a container started in the second the
 * agent saw CDI turned on counts as started before (containerd must restart and create it
 * anew to inject), and says so; one started a second later is healthy. */
static void started_in_cdi_second(void **state)
{
    static const char *const at[] = { "2026-12-02T12:57:07Z", "2026-12-02T12:57:08Z" };
    size_t k;

    (void)state;
    for (k = 0; k < 2; k++) {
        cJSON *doc = read_capture("cdi-off-fixed"), *it;
        struct diag_result r;

        cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "objects"))
            if (is(it, "Pod", "pod0"))
                cJSON_SetValuestring(
                    cJSON_GetObjectItem(
                        cJSON_GetObjectItem(
                            cJSON_GetObjectItem(
                                cJSON_GetArrayItem(
                                    dd_json_path(it, "status", "containerStatuses", NULL), 0),
                                "state"),
                            "running"),
                        "startedAt"),
                    at[k]);
        diagnose_objects(cJSON_GetObjectItem(doc, "objects"), "pod0", &r);
        if (k == 0) {
            assert_false(r.healthy);
            assert_string_equal(r.codes[0], "CDIInjectionFailed");
            assert_non_null(strstr(r.message, "turned on at 2026-12-02T12:57:07Z; the same "
                                              "second, assumed before"));
        } else {
            assert_true(r.healthy || !has(&r, "CDIInjectionFailed"));
        }
        cJSON_Delete(doc);
    }
}

/* containerd 2.4.2 with enable_cdi = false, which it ignores (the node agent publishes
 * enableCDIIgnored and the Node reports containerd://2.4.2): no CDIDisabled. */
static void cdi_off_ignored_containerd2(void **state)
{
    int trimmed;

    (void)state;
    for (trimmed = 0; trimmed < 2; trimmed++) {
        struct capture c;
        struct diag_result r;
        size_t i;

        load(&c, "cdi-off-ignored-containerd2", trimmed);
        for (i = 0; i < c.m.nruntimes; i++) {
            assert_true(c.m.runtimes[i].cfg.enable_cdi);
            assert_true(c.m.runtimes[i].cfg.enable_cdi_ignored);
        }
        assert_int_equal(c.m.nruntimes, 1);
        for (i = 0; i < c.f.n; i++)
            assert_string_not_equal(c.f.v[i].code, "CDIDisabled");
        for (i = 0; i < c.m.npods; i++) {
            diag_pod(&c.m, &c.f, c.m.pods[i], &r);
            if (!r.healthy)
                fail_msg("pod %s: [%s] %s", c.m.pods[i]->o.name, r.list, r.message);
        }
        release(&c);
    }
}

/* The kubelet's FailedPrepareDynamicResources Event for a driver whose plugin is gone. */
static void driver_not_registered(void **state)
{
    (void)state;
    check("not-registered", "pod1", "KubeletPluginNotRegistered", NULL, NULL,
          "kubelet: \"Failed to prepare dynamic resources: prepare dynamic resources: DRA "
          "driver gpu.example.com is not registered\"",
          "no DaemonSet of driver gpu.example.com is installed (was it uninstalled?)", NULL);
}

/* Diagnoses pod `pod` of the live objects objs (borrowed) into *r. */
static void diagnose_objects(const cJSON *objs, const char *pod, struct diag_result *r)
{
    struct dd_findings f = { 0 };
    struct dra_model m;
    const cJSON *it;
    size_t i;

    dra_model_init(&m, NULL, NULL);
    m.live = 1;
    cJSON_ArrayForEach(it, objs)
        assert_int_equal(dra_model_add(&m, it, NULL, 0), DD_OK);
    assert_int_equal(dra_model_finish(&m), DD_OK);
    assert_int_equal(dd_rules_run(&m, NULL, &f), 0);
    for (i = 0; i < m.npods && strcmp(m.pods[i]->o.name, pod); i++)
        ;
    assert_true(i < m.npods);
    diag_pod(&m, &f, m.pods[i], r);
    dd_findings_release(&f);
    dra_model_release(&m);
}

/* The same Event once a later attempt got further (the pod's container is no longer
 * waiting in ContainerCreating): it is history, not a cause. */
static void driver_not_registered_stale(void **state)
{
    cJSON *doc = read_capture("not-registered"), *it;
    struct diag_result r;

    (void)state;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "objects"))
        if (is(it, "Pod", "pod1"))
            cJSON_ReplaceItemInObject(
                it, "status",
                cJSON_Parse("{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"ctr0\","
                            "\"state\":{\"waiting\":{\"reason\":\"ErrImagePull\"}}}]}"));
    diagnose_objects(cJSON_GetObjectItem(doc, "objects"), "pod1", &r);
    assert_true(r.healthy || strcmp(r.codes[0], "KubeletPluginNotRegistered"));
    cJSON_Delete(doc);
}

/*
 * The not-registered capture with the driver's DaemonSet and its plugin pod put back (both as
 * the cdi-root capture has them, on node vm), edited by how: 'c' the plugin crash-looping,
 * 'r' ready, 'x' the DaemonSet selecting no node and no pod of it; kubelet, if not NULL, the
 * node's kubelet version.  Diagnoses pod1 and returns its message in msg.
 */
static void plugin_case(char how, const char *kubelet, char *msg, size_t size)
{
    cJSON *doc = read_capture("not-registered"), *donor = read_capture("cdi-root"), *it;
    cJSON *objs = cJSON_GetObjectItem(doc, "objects");
    struct diag_result r;

    cJSON_ArrayForEach(it, cJSON_GetObjectItem(donor, "objects")) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind"));
        int plugin_pod = !strcmp(kind, "Pod") && !dd_json_path(it, "spec", "resourceClaims", NULL);
        if (!strcmp(kind, "DaemonSet")) {
            cJSON *ds = cJSON_Duplicate(it, 1);
            cJSON *tspec = cJSON_GetObjectItem(
                cJSON_GetObjectItem(cJSON_GetObjectItem(ds, "spec"), "template"), "spec");
            if (how == 'x') {
                cJSON_DeleteItemFromObject(tspec, "nodeSelector");
                cJSON_AddItemToObject(tspec, "nodeSelector",
                                      cJSON_Parse("{\"feature.node.kubernetes.io/pci-10de."
                                                  "present\":\"true\"}"));
            }
            cJSON_AddItemToArray(objs, ds);
        } else if (plugin_pod && how != 'x') {
            cJSON *pod = cJSON_Duplicate(it, 1);
            if (how == 'c')
                cJSON_ReplaceItemInObject(
                    pod, "status",
                    cJSON_Parse("{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
                                "\"status\":\"False\"}],\"containerStatuses\":[{\"name\":"
                                "\"plugin\",\"restartCount\":5,\"state\":{\"waiting\":{"
                                "\"reason\":\"CrashLoopBackOff\"}}}]}"));
            cJSON_AddItemToArray(objs, pod);
        }
    }
    cJSON_ArrayForEach(it, objs)
        if (kubelet && is(it, "Node", "vm"))
            cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "status"),
                                                          "nodeInfo"),
                                      "kubeletVersion", cJSON_CreateString(kubelet));
    diagnose_objects(objs, "pod1", &r);
    assert_false(r.healthy);
    assert_string_equal(r.codes[0], "KubeletPluginNotRegistered");
    snprintf(msg, size, "%s", r.message);
    cJSON_Delete(doc);
    cJSON_Delete(donor);
}

/* Where the driver's plugin stands on the node, and a known-bad kubelet. */
static void plugin_not_registered_states(void **state)
{
    char msg[1024];

    (void)state;
    plugin_case('c', NULL, msg, sizeof(msg));
    assert_contains(msg, "is not ready (CrashLoopBackOff, 5 restart(s))");
    assert_contains(msg, "kubectl logs -n dra-tutorial dra-example-driver-kubeletplugin-");
    plugin_case('r', NULL, msg, sizeof(msg));
    assert_contains(msg, "on node vm is ready now");
    assert_contains(msg, "recreate pod pod1");
    assert_null(strstr(msg, "kubernetes/kubernetes#133920"));
    plugin_case('x', NULL, msg, sizeof(msg));
    assert_contains(msg, "has no pod on node vm: it may not run there (node(s) didn't match "
                         "Pod's node affinity/selector");
    plugin_case('r', "v1.34.1", msg, sizeof(msg));
    assert_contains(msg, "kubernetes/kubernetes#133920");
}

/* The seed as the contestants got it, on the real node: every fault on pod0's path, the
 * quota's on pod1's. */
static void seed_broken(void **state)
{
    (void)state;
    check("seed-broken", "pod0", "DriverRBACDenied",
          "SelectorMatchesNoDriver,CDIDisabled,CDISpecDirNotShared", NULL,
          "cannot create, update, delete resourceslices", NULL);
    check("seed-broken", "pod1", "QuotaExceeded", NULL, NULL,
          "ResourceClaim dra-tutorial/second-gpu does not exist", NULL);
}

static cJSON *read_capture(const char *name)
{
    char path[256], *text;
    cJSON *doc;

    snprintf(path, sizeof(path), DIR "%s.json", name);
    text = test_read_file(path);
    doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    return doc;
}

static int is(const cJSON *o, const char *kind, const char *name)
{
    return !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "kind")), kind) &&
           !strcmp(dd_json_str(o, "metadata", "name", NULL), name);
}

/*
 * The scheduler's FailedScheduling text is quoted when no rule explains a pending claim:
 * the seed-broken capture's own Event, on the cdi-root-fixed capture's pod0 (where no
 * configuration fault is left) put back before its claim was allocated.
 */
static void scheduler_text(void **state)
{
    /* 1.37's words (1.36 had "... all claims. still not schedulable, preemption: ..."). */
    const char *want = "The scheduler cannot place pod pod0: 0/1 nodes are available: 1 cannot "
                       "allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is "
                       "not helpful for scheduling.";
    cJSON *broken = read_capture("seed-broken"), *fixed = read_capture("cdi-root-fixed");
    cJSON *objs = cJSON_GetObjectItem(fixed, "objects"), *it;
    struct diag_result r;

    (void)state;
    cJSON_ArrayForEach(it, objs) {
        if (is(it, "ResourceClaim", "first-gpu"))
            cJSON_DeleteItemFromObject(it, "status");
        if (is(it, "Pod", "pod0")) {
            cJSON_DeleteItemFromObject(cJSON_GetObjectItem(it, "spec"), "nodeName");
            cJSON_ReplaceItemInObject(it, "status", cJSON_Parse("{\"phase\":\"Pending\"}"));
        }
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(broken, "objects"))
        if (cJSON_IsString(cJSON_GetObjectItem(it, "reason")) &&
            !strcmp(cJSON_GetObjectItem(it, "reason")->valuestring, "FailedScheduling"))
            cJSON_AddItemToArray(objs, cJSON_Duplicate(it, 1));
    diagnose_objects(objs, "pod0", &r);
    assert_false(r.healthy);
    assert_string_equal(r.codes[0], "ClaimNotAllocated");
    assert_contains(r.message, want);
    cJSON_Delete(broken);
    cJSON_Delete(fixed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_prepare_failed),
        cmocka_unit_test(cdi_unresolvable_explained),
        cmocka_unit_test(cdi_unresolvable_after_fix),
        cmocka_unit_test(cdi_unresolvable_containerd2),
        cmocka_unit_test(started_before_cdi),
        cmocka_unit_test(started_in_cdi_second),
        cmocka_unit_test(cdi_off_ignored_containerd2),
        cmocka_unit_test(driver_not_registered),
        cmocka_unit_test(plugin_not_registered_states),
        cmocka_unit_test(driver_not_registered_stale),
        cmocka_unit_test(seed_broken),
        cmocka_unit_test(scheduler_text),
    };
    return cmocka_run_group_tests_name("evidence", tests, NULL, NULL);
}
