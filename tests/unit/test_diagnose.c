/*
 * test_diagnose.c - a pod's diagnosis over live snapshots of the seed
 * scenario, one per step of the write-up's fixes: the root cause must move to
 * the next remaining fault after each fix, and vanish when the pod is healthy.
 */
#include "harness.h"

#include <stdarg.h>

#include "formats/manifest.h"
#include "rules/diagnose.h"
#include "rules/rules.h"

#define NS "dra-tutorial"
#define CDI_ANN(on) "\"dra-doctor.io/cdi\":\"{\\\"version\\\":2,\\\"enableCDI\\\":" on "}\""

/* What is fixed so far, in the write-up's order. */
struct state {
    int rbac, typo, cdi_on, cdi_root, devices, quota;
    int pod0_phase; /* 0 Pending, 1 Running, 2 CreateContainerError */
};

static char *objects(const struct state *s)
{
    static char buf[32768];
    size_t len = 0;

#define ADD(...) (len += (size_t)snprintf(buf + len, sizeof(buf) - len, __VA_ARGS__))
    ADD("[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-1\","
        "\"annotations\":{%s}},\"status\":{\"nodeInfo\":{\"containerRuntimeVersion\":"
        "\"containerd://1.7.24\"}}}",
        s->cdi_on ? CDI_ANN("true") : CDI_ANN("false"));
    ADD(",{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":"
        "\"dra-example-driver-kubeletplugin\",\"namespace\":\"" NS "\"},\"spec\":{\"template\":"
        "{\"spec\":{\"serviceAccountName\":\"dra-example-driver-service-account\",\"containers\":"
        "[{\"name\":\"plugin\",\"image\":\"registry.k8s.io/dra-example-driver/dra-example-driver:"
        "v0.2.0\",\"env\":[{\"name\":\"NUM_DEVICES\",\"value\":\"%d\"}%s],\"volumeMounts\":"
        "[{\"name\":\"cdi\",\"mountPath\":\"/var/run/cdi\"}]}],\"volumes\":[{\"name\":\"cdi\","
        "\"hostPath\":{\"path\":\"/var/run/cdi\"}},{\"name\":\"reg\",\"hostPath\":{\"path\":"
        "\"/var/lib/kubelet/plugins_registry\"}}]}}},\"status\":{\"numberReady\":1,"
        "\"desiredNumberScheduled\":1}}",
        s->devices ? 2 : 1, s->cdi_root ? ",{\"name\":\"CDI_ROOT\",\"value\":\"/var/run/cdi\"}" : "");
    ADD(",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
        "\"gpu.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
        "\"device.driver == '%s'\"}}]}}",
        s->typo ? "gpu.example.com" : "gpu.exmaple.com");
    if (s->rbac) {
        int i, n = s->devices ? 2 : 1;
        ADD(",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
            "{\"name\":\"node-1-gpu.example.com-x\"},\"spec\":{\"driver\":\"gpu.example.com\","
            "\"nodeName\":\"node-1\",\"pool\":{\"name\":\"node-1\",\"generation\":0,"
            "\"resourceSliceCount\":1},\"devices\":[");
        for (i = 0; i < n; i++)
            ADD("%s{\"name\":\"gpu-%d\",\"attributes\":{\"index\":{\"int\":%d}}}", i ? "," : "", i, i);
        ADD("]}}");
    }
    ADD(",{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"gpu-quota\","
        "\"namespace\":\"" NS "\"},\"spec\":{\"hard\":{\"gpu.example.com.deviceclass.resource.k8s.io/"
        "devices\":\"%d\"}},\"status\":{\"hard\":{\"gpu.example.com.deviceclass.resource.k8s.io/"
        "devices\":\"%d\"},\"used\":{\"gpu.example.com.deviceclass.resource.k8s.io/devices\":\"%d\"}}}",
        s->quota ? 2 : 1, s->quota ? 2 : 1, s->quota ? 2 : 1);
    ADD(",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"first-gpu\",\"namespace\":\"" NS "\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":"
        "\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}%s}",
        s->typo && s->rbac ? ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"
                             "\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"node-1\","
                             "\"device\":\"gpu-0\"}]}}}" : "");
    if (s->quota)
        ADD(",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
            "{\"name\":\"second-gpu\",\"namespace\":\"" NS "\"},\"spec\":{\"devices\":{\"requests\":"
            "[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}");
    ADD(",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod0\",\"namespace\":"
        "\"" NS "\"},\"spec\":{%s\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":"
        "\"first-gpu\"}],\"containers\":[{\"name\":\"ctr0\",\"image\":\"ubuntu:22.04\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},"
        "\"status\":{\"phase\":\"%s\"%s}}",
        s->pod0_phase ? "\"nodeName\":\"node-1\"," : "", s->pod0_phase == 1 ? "Running" : "Pending",
        s->pod0_phase == 2
            ? ",\"containerStatuses\":[{\"name\":\"ctr0\",\"state\":{\"waiting\":{\"reason\":"
              "\"CreateContainerError\",\"message\":\"failed to create containerd container: CDI device "
              "injection failed: unresolvable CDI devices k8s.gpu.example.com/gpu=common\"}}}]"
            : "");
    ADD(",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod1\",\"namespace\":"
        "\"" NS "\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":"
        "\"second-gpu\"}],\"containers\":[{\"name\":\"ctr0\",\"image\":\"ubuntu:22.04\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},"
        "\"status\":{\"phase\":\"Pending\"}}");
    ADD(",{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e1\",\"namespace\":"
        "\"" NS "\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"" NS "\",\"name\":\"pod0\"},"
        "\"reason\":\"FailedScheduling\",\"type\":\"Warning\",\"message\":\"0/1 nodes are "
        "available: 1 cannot allocate all claims.\"}]");
#undef ADD
    return buf;
}

struct live {
    cJSON *objs, *assumed;
    struct dra_model m;
    struct dd_findings f;
    struct dra_sar sar[3];
};

static void live_load(struct live *l, const struct state *s)
{
    static const char *const verbs[] = { "create", "update", "delete" };
    const cJSON *it;
    size_t i;

    memset(l, 0, sizeof(*l));
    l->objs = cJSON_Parse(objects(s));
    assert_non_null(l->objs);
    for (i = 0; i < 3; i++) {
        l->sar[i].ns = NS;
        l->sar[i].sa = "dra-example-driver-service-account";
        l->sar[i].verb = verbs[i];
        l->sar[i].allowed = s->rbac;
    }
    dra_model_init(&l->m, NULL, NULL);
    l->m.live = 1;
    l->m.sar = l->sar;
    l->m.nsar = 3;
    cJSON_ArrayForEach(it, l->objs)
        assert_int_equal(dra_model_add(&l->m, it, NULL, 0), DD_OK);
    assert_int_equal(dra_model_finish(&l->m), DD_OK);
    l->assumed = diag_assume_rejected_claims(&l->m);
    cJSON_ArrayForEach(it, l->assumed)
        assert_int_equal(dra_model_add(&l->m, it, NULL, 0), DD_OK);
    assert_int_equal(dd_rules_run(&l->m, NULL, &l->f), 0);
}

static void live_free(struct live *l)
{
    dd_findings_release(&l->f);
    dra_model_release(&l->m);
    cJSON_Delete(l->objs);
    cJSON_Delete(l->assumed);
}

static void diagnose(const struct state *s, const char *pod, struct diag_result *r)
{
    struct live l;
    size_t i;

    live_load(&l, s);
    for (i = 0; i < l.m.npods; i++)
        if (!strcmp(l.m.pods[i]->o.name, pod))
            break;
    assert_true(i < l.m.npods);
    diag_pod(&l.m, &l.f, l.m.pods[i], r);
    live_free(&l);
}

static int has_code(const struct diag_result *r, const char *code)
{
    size_t i;

    for (i = 0; i < r->ncodes; i++)
        if (!strcmp(r->codes[i], code))
            return 1;
    return 0;
}

static void expect_root(const struct state *s, const char *pod, const char *root)
{
    struct diag_result r;

    diagnose(s, pod, &r);
    if (!root) {
        if (!r.healthy)
            fail_msg("%s: expected healthy, got %s (%s)", pod, r.list, r.message);
        assert_int_equal(r.ncodes, 0);
        return;
    }
    if (r.healthy || strcmp(r.codes[0], root))
        fail_msg("%s: expected root cause %s, got [%s]: %s", pod, root, r.list, r.message);
    assert_string_equal(r.list + 0, r.list); /* list starts with the root cause */
    assert_true(strncmp(r.list, root, strlen(root)) == 0);
    assert_true(strlen(r.message) > 20);
}

/* All six faults: each pod names its first blocker and lists everything on its path. */
static void broken_seed(void **state)
{
    struct state s = { 0 };
    struct diag_result r;
    (void)state;

    diagnose(&s, "pod0", &r);
    if (getenv("DIAG_DEBUG"))
        fprintf(stderr, "pod0: [%s] %s\n", r.list, r.message);
    assert_false(r.healthy);
    assert_string_equal(r.codes[0], "DriverRBACDenied");
    assert_true(has_code(&r, "SelectorMatchesNoDriver"));
    assert_true(has_code(&r, "CDIDisabled"));
    assert_true(has_code(&r, "CDISpecDirNotShared"));
    assert_contains(r.message, "cannot create, update, delete resourceslices");
    assert_contains(r.message, "Fix:");
    diagnose(&s, "pod1", &r);
    if (getenv("DIAG_DEBUG"))
        fprintf(stderr, "pod1: [%s] %s\n", r.list, r.message);
    assert_string_equal(r.codes[0], "QuotaExceeded");
    assert_contains(r.message, "ResourceClaim dra-tutorial/second-gpu does not exist");
    assert_contains(r.message, "gpu-quota");
    /* The driver may not publish (RBAC): no device is known, so none is said not to fit. */
    assert_false(has_code(&r, "DevicesDoNotFit"));
    assert_false(has_code(&r, "ClaimNotFound")); /* the quota explains the missing claim */
}

/* The write-up's fixes in order: the root cause moves to the next remaining fault. */
static void fixes_in_order(void **state)
{
    struct state s = { 0 };
    struct diag_result r;
    (void)state;

    s.rbac = 1; /* slices appear; the typo is next */
    expect_root(&s, "pod0", "SelectorMatchesNoDriver");
    s.typo = 1; /* pod0 allocates and runs without its GPU: CDI is off */
    s.pod0_phase = 1;
    expect_root(&s, "pod0", "CDIDisabled");
    diagnose(&s, "pod0", &r);
    assert_true(has_code(&r, "CDISpecDirNotShared"));
    assert_false(has_code(&r, "SelectorMatchesNoDriver"));
    s.cdi_on = 1; /* now the runtime looks, and cannot find the spec */
    s.pod0_phase = 2;
    expect_root(&s, "pod0", "CDISpecDirNotShared");
    s.cdi_root = 1; /* pod0 is healthy */
    s.pod0_phase = 1;
    expect_root(&s, "pod0", NULL);
    expect_root(&s, "pod1", "QuotaExceeded");
    /* pod1's stand-in claim is allocated against the node as it is: pod0's claim holds its
     * only GPU. */
    diagnose(&s, "pod1", &r);
    assert_true(has_code(&r, "DevicesDoNotFit"));
    s.devices = 1; /* enough devices; only the quota remains */
    diagnose(&s, "pod1", &r);
    assert_string_equal(r.codes[0], "QuotaExceeded");
    assert_false(has_code(&r, "DevicesDoNotFit"));
    s.quota = 1; /* second-gpu re-applied: pod1 waits for the scheduler, nothing is wrong */
    expect_root(&s, "pod1", NULL);
}

/* The eight shapes of issue 21 on a live cluster: the Pod is Pending, unscheduled; the
 * controller's diagnosis names DevicesDoNotFit (an error: a live inventory is the whole
 * cluster) as the root cause, with each node's reason; no fixed twin gets it. */
static void shapes_live(void **state)
{
    static const char *const shapes[] = {
        "two-nodes-one-gpu-each", "pcie-root-not-shared", "two-requests-same-model",
        "capacity-not-reached", "nic-pool-other-node", "two-claims-one-gpu-each-node",
        "all-plus-another", "class-keeps-two-of-four" };
    size_t i, j, k;
    int fixed;

    (void)state;
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        for (fixed = 0; fixed < 2; fixed++) {
            struct mf_set set = MF_SET_INIT;
            struct dd_findings f = DD_FINDINGS_INIT;
            struct diag_result r;
            struct dra_model m;
            char dir[256];
            cJSON *extra = cJSON_CreateArray(), *it;
            int err = 0;

            snprintf(dir, sizeof(dir), "tests/data/lint/alloc/%s/%s", shapes[i],
                     fixed ? "fixed" : "broken");
            mf_set_init(&set);
            mf_load_path(&set, dir, NULL);
            assert_true(set.n > 0);
            dra_model_init(&m, NULL, NULL);
            m.live = 1;
            for (j = 0; j < set.n; j++) {
                cJSON *o = set.objs[j].json, *st;
                const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
                if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "Pod")) {
                    /* The pod's claims, as kube-controller-manager creates them from the
                     * templates, unallocated. */
                    cJSON *rcs = cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(o, "spec"), "resourceClaims"), *pc;
                    cJSON *sts = cJSON_CreateArray();
                    st = cJSON_AddObjectToObject(o, "status");
                    cJSON_AddStringToObject(st, "phase", "Pending");
                    cJSON_AddItemToObject(st, "resourceClaimStatuses", sts);
                    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                            "uid", "pod-uid");
                    cJSON_ArrayForEach(pc, rcs) {
                        const char *name = cJSON_GetObjectItemCaseSensitive(pc, "name")->valuestring;
                        const char *t = cJSON_GetObjectItemCaseSensitive(
                            pc, "resourceClaimTemplateName")->valuestring;
                        char cname[128];
                        cJSON *e = cJSON_CreateObject(), *claim = NULL;
                        snprintf(cname, sizeof(cname), "trainer-%s", name);
                        cJSON_AddStringToObject(e, "name", name);
                        cJSON_AddStringToObject(e, "resourceClaimName", cname);
                        cJSON_AddItemToArray(sts, e);
                        for (k = 0; k < set.n; k++) {
                            const cJSON *tk = cJSON_GetObjectItemCaseSensitive(set.objs[k].json, "kind");
                            const cJSON *tm = cJSON_GetObjectItemCaseSensitive(set.objs[k].json, "metadata");
                            if (cJSON_IsString(tk) &&
                                !strcmp(tk->valuestring, "ResourceClaimTemplate") &&
                                !strcmp(cJSON_GetObjectItemCaseSensitive(tm, "name")->valuestring, t))
                                claim = cJSON_Duplicate(set.objs[k].json, 1);
                        }
                        assert_non_null(claim);
                        cJSON_ReplaceItemInObject(claim, "kind", cJSON_CreateString("ResourceClaim"));
                        cJSON_ReplaceItemInObject(claim, "spec", cJSON_Duplicate(
                            cJSON_GetObjectItemCaseSensitive(
                                cJSON_GetObjectItemCaseSensitive(claim, "spec"), "spec"), 1));
                        {
                            cJSON *meta = cJSON_GetObjectItemCaseSensitive(claim, "metadata");
                            cJSON *owners = cJSON_AddArrayToObject(meta, "ownerReferences");
                            cJSON *ow = cJSON_CreateObject();
                            cJSON_ReplaceItemInObject(meta, "name", cJSON_CreateString(cname));
                            cJSON_AddStringToObject(ow, "apiVersion", "v1");
                            cJSON_AddStringToObject(ow, "kind", "Pod");
                            cJSON_AddStringToObject(ow, "name", "trainer");
                            cJSON_AddStringToObject(ow, "uid", "pod-uid");
                            cJSON_AddBoolToObject(ow, "controller", 1);
                            cJSON_AddItemToArray(owners, ow);
                        }
                        cJSON_AddItemToArray(extra, claim);
                    }
                }
            }
            for (j = 0; j < set.n; j++)
                err |= dra_model_add(&m, set.objs[j].json, NULL, 0) != DD_OK;
            cJSON_ArrayForEach(it, extra)
                err |= dra_model_add(&m, it, NULL, 0) != DD_OK;
            assert_false(err);
            assert_int_equal(dra_model_finish(&m), DD_OK);
            assert_int_equal(dd_rules_run(&m, NULL, &f), 0);
            for (j = 0; j < m.npods && strcmp(m.pods[j]->o.name, "trainer"); j++)
                ;
            assert_true(j < m.npods);
            diag_pod(&m, &f, m.pods[j], &r);
            if (fixed) {
                /* (No driver DaemonSet in these files: StaleResourceSlices may apply.) */
                if (has_code(&r, "DevicesDoNotFit"))
                    fail_msg("%s: expected no DevicesDoNotFit, got [%s] %s", dir, r.list,
                             r.message);
            } else {
                if (r.healthy || strcmp(r.codes[0], "DevicesDoNotFit"))
                    fail_msg("%s: expected DevicesDoNotFit, got [%s] %s", dir, r.list, r.message);
                assert_contains(r.message, "fits on no node");
                for (k = 0; k < f.n && strcmp(f.v[k].code, "DevicesDoNotFit"); k++)
                    ;
                assert_true(k < f.n);
                assert_int_equal(f.v[k].severity, DD_SEV_ERROR);
            }
            dd_findings_release(&f);
            dra_model_release(&m);
            mf_set_release(&set);
            cJSON_Delete(extra);
        }
}

/* A pod that does not fit is not the root cause of another pod of the same class: the
 * finding is about that pod (e2e_modes' choosy beside elsewhere). */
static void fit_of_another_pod(void **state)
{
    static const char json[] =
        "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}},"
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"
        "\"s1\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":"
        "\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"gpu-0\"}]}},"
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
        "\"gpu.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
        "\"device.driver == 'gpu.example.com'\"}}]}},"
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"big\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
        "\"exactly\":{\"deviceClassName\":\"gpu.example.com\",\"count\":2}}]}}},"
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"small\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
        "\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"greedy\",\"namespace\":"
        "\"t\",\"uid\":\"u1\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":"
        "\"big\"}],\"containers\":[{\"name\":\"c\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},"
        "\"status\":{\"phase\":\"Pending\"}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"modest\",\"namespace\":"
        "\"t\",\"uid\":\"u2\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":"
        "\"small\"}],\"containers\":[{\"name\":\"c\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},"
        "\"status\":{\"phase\":\"Pending\"}}]";
    cJSON *all = cJSON_Parse(json), *it;
    struct dd_findings f = DD_FINDINGS_INIT;
    struct diag_result r;
    struct dra_model m;
    size_t i;

    (void)state;
    assert_non_null(all);
    dra_model_init(&m, NULL, NULL);
    m.live = 1;
    cJSON_ArrayForEach(it, all)
        assert_int_equal(dra_model_add(&m, it, NULL, 0), DD_OK);
    assert_int_equal(dra_model_finish(&m), DD_OK);
    assert_int_equal(dd_rules_run(&m, NULL, &f), 0);
    for (i = 0; i < m.npods; i++) {
        diag_pod(&m, &f, m.pods[i], &r);
        if (!strcmp(m.pods[i]->o.name, "greedy")) {
            assert_false(r.healthy);
            assert_string_equal(r.codes[0], "DevicesDoNotFit");
            assert_contains(r.message, "Pod t/greedy fits on no node");
        } else if (has_code(&r, "DevicesDoNotFit")) {
            fail_msg("modest: another pod's DevicesDoNotFit: [%s] %s", r.list, r.message);
        }
    }
    dd_findings_release(&f);
    dra_model_release(&m);
    cJSON_Delete(all);
}

/* A CDI failure no configuration explains is still reported, with the runtime's words. */
static void unexplained_cdi_error(void **state)
{
    struct state s = { 1, 1, 1, 1, 1, 1, 2 };
    struct diag_result r;
    (void)state;

    diagnose(&s, "pod0", &r);
    assert_string_equal(r.codes[0], "CDIInjectionFailed");
    assert_contains(r.message, "unresolvable CDI devices");
}

/* A pod stuck for a reason no rule knows gets the scheduler's message. */
static void scheduler_evidence(void **state)
{
    struct state s = { 1, 1, 1, 1, 1, 1, 0 };
    struct live l;
    struct diag_result r;
    size_t i;
    (void)state;

    live_load(&l, &s);
    /* first-gpu is allocated in this state; make it pending to leave only the event. */
    for (i = 0; i < l.m.nclaims; i++)
        l.m.claims[i].allocated = 0;
    for (i = 0; i < l.m.npods; i++)
        if (!strcmp(l.m.pods[i]->o.name, "pod0"))
            diag_pod(&l.m, &l.f, l.m.pods[i], &r);
    assert_string_equal(r.codes[0], "ClaimNotAllocated");
    assert_contains(r.message, "cannot allocate all claims");
    live_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(broken_seed),
        cmocka_unit_test(shapes_live),
        cmocka_unit_test(fit_of_another_pod),
        cmocka_unit_test(fixes_in_order),
        cmocka_unit_test(unexplained_cdi_error),
        cmocka_unit_test(scheduler_evidence),
    };
    return cmocka_run_group_tests_name("diagnose", tests, NULL, NULL);
}
