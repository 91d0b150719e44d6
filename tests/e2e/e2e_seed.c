/*
 * e2e_seed.c - the seed scenario on a real control plane (see e2e/README.md).
 *
 * Run by scripts/e2e.sh, which brings up the cluster, the simulated node, the
 * node agent and the controller (under its own least-privilege RBAC), and
 * exports KUBECONFIG (admin), DD_CLUSTER_DIR and DD_HOST_ROOT (the simulated
 * node's filesystem).  The test applies the broken manifests, checks what the
 * controller wrote on each pod, then applies the write-up's fixes in order
 * and checks after each one that the diagnosis moved to the next remaining
 * cause, until both pods run with their GPU injected through CDI.
 */
#include "harness.h"

#include "e2e.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define SEED "tests/data/lint/seed/"
#define NS "dra-tutorial"
#define WAIT_S 90


static void apply(const char *file)
{
    if (sh("kubectl apply -f %s 2>&1", file))
        fail_msg("kubectl apply -f %s failed: %s", file, out);
}

/* The containerd config the simulated node reads (and the node agent publishes). */
static void node_config(const char *file)
{
    const char *root = getenv("DD_HOST_ROOT");

    assert_non_null(root);
    if (sh("mkdir -p %s/etc/containerd && cp %s %s/etc/containerd/config.toml 2>&1", root, file,
           root))
        fail_msg("cannot write the node's containerd config: %s", out);
}

static char *pod_annotation(const char *pod, const char *key)
{
    cJSON *o;
    const cJSON *v;
    char *r = NULL;

    if (sh("kubectl get pod -n " NS " %s -o json 2>/dev/null", pod) || !(o = cJSON_Parse(out)))
        return NULL;
    v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "annotations"),
                            key);
    if (cJSON_IsString(v))
        r = strdup(v->valuestring);
    cJSON_Delete(o);
    return r;
}

/* Waits until pod's root cause is want (NULL: no annotation), and its findings contain
 * every code of also (comma-separated, may be NULL) and none of absent. */
static void expect(const char *pod, const char *want, const char *also, const char *absent)
{
    time_t end = time(NULL) + WAIT_S;
    char *root = NULL, *list = NULL;

    for (;;) {
        int ok;
        free(root);
        free(list);
        root = pod_annotation(pod, "dra-doctor.io/root-cause");
        list = pod_annotation(pod, "dra-doctor.io/findings");
        ok = want ? root && !strcmp(root, want) : !root;
        if (ok && also && list) {
            char buf[512], *tok, *save = NULL;
            snprintf(buf, sizeof(buf), "%s", also);
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                ok &= strstr(list, tok) != NULL;
        } else if (ok && also) {
            ok = 0;
        }
        if (ok && absent && list && strstr(list, absent))
            ok = 0;
        if (ok)
            break;
        if (time(NULL) > end)
            fail_msg("pod %s: expected root cause %s (with %s, without %s), have %s [%s]", pod,
                     want ? want : "(none)", also ? also : "-", absent ? absent : "-",
                     root ? root : "(none)", list ? list : "");
        sleep(1);
    }
    fprintf(stderr, "  pod %s: root cause %s [%s]\n", pod, root ? root : "(none: healthy)",
            list ? list : "");
    free(root);
    free(list);
}

static void expect_event(const char *pod, const char *reason)
{
    time_t end = time(NULL) + WAIT_S;

    while (sh("kubectl get events -n " NS " --field-selector involvedObject.name=%s,reason=%s "
              "-o name 2>&1", pod, reason) || !strstr(out, "event")) {
        if (time(NULL) > end)
            fail_msg("no %s event on pod %s: %s", reason, pod, out);
        sleep(1);
    }
}

static void expect_phase(const char *pod, const char *phase)
{
    time_t end = time(NULL) + WAIT_S;

    while (sh("kubectl get pod -n " NS " %s -o jsonpath='{.status.phase}' 2>&1", pod) ||
           strcmp(out, phase)) {
        if (time(NULL) > end)
            fail_msg("pod %s: expected phase %s, have %s", pod, phase, out);
        sleep(1);
    }
}

/* The env the simulated runtime gave the pod's container (sim.dra-doctor.io/env). */
static void expect_env(const char *pod, const char *var, const char *value)
{
    char *env = pod_annotation(pod, "sim.dra-doctor.io/env");
    char want[256];

    if (!env)
        fail_msg("pod %s has no recorded env", pod);
    snprintf(want, sizeof(want), value ? "\"%s\":\"%s\"" : "\"%s\"", var, value);
    if (!strstr(env, want))
        fail_msg("pod %s: env has no %s: %s", pod, want, env);
    free(env);
}

static void seed_end_to_end(void **state)
{
    (void)state;
    /* The scenario as the contestants got it. */
    node_config(SEED "broken/containerd-config.toml");
    apply(SEED "broken/namespace.yaml");
    apply(SEED "broken/driver-rbac.yaml");
    apply(SEED "broken/driver-daemonset.yaml");
    apply(SEED "broken/deviceclass.yaml");
    apply(SEED "broken/quota.yaml");
    apply(SEED "broken/resourceclaim-first.yaml");
    /* The real quota admission rejects the second claim. */
    assert_int_not_equal(sh("kubectl apply -f " SEED "broken/resourceclaim-second.yaml 2>&1"), 0);
    assert_contains(out, "exceeded quota");
    apply(SEED "broken/pods.yaml");

    expect("pod0", "DriverRBACDenied", "SelectorMatchesNoDriver,CDIDisabled,CDISpecDirNotShared",
           NULL);
    expect("pod1", "QuotaExceeded", NULL, NULL);
    expect_event("pod0", "DriverRBACDenied");
    expect_event("pod1", "QuotaExceeded");
    assert_int_equal(sh("kubectl describe pod -n " NS " pod0 2>&1"), 0);
    assert_contains(out, "dra-doctor.io/root-cause: DriverRBACDenied");
    assert_contains(out, "DriverRBACDenied");

    /* 1. RBAC: the driver publishes its slice; the typo is next. */
    apply(SEED "fixed/driver-rbac.yaml");
    expect("pod0", "SelectorMatchesNoDriver", NULL, "DriverRBACDenied");

    /* 2. The typo: pod0 allocates and starts, but without its GPU (CDI off). */
    apply(SEED "fixed/deviceclass.yaml");
    expect_phase("pod0", "Running");
    expect("pod0", "CDIDisabled", "CDISpecDirNotShared", "SelectorMatchesNoDriver");

    /* 3. CDI on (and the pod recreated, as a runtime restart would): the spec is not found. */
    node_config(SEED "fixed/containerd-config.toml");
    assert_int_equal(sh("kubectl delete pod -n " NS " pod0 --wait=true --timeout=60s 2>&1"), 0);
    apply(SEED "fixed/pods.yaml");
    expect("pod0", "CDISpecDirNotShared", NULL, "CDIDisabled");

    /* 4. CDI_ROOT on the shared hostPath: pod0 is healthy and sees its GPU. */
    apply(SEED "fault-5-devices/driver-daemonset.yaml"); /* fixed but for NUM_DEVICES=1 */
    expect_phase("pod0", "Running");
    expect("pod0", NULL, NULL, NULL);
    expect_event("pod0", "Resolved");
    expect("pod1", "QuotaExceeded", "InsufficientDevices", NULL);

    /* 5. Two devices: only the quota remains for pod1. */
    apply(SEED "fixed/driver-daemonset.yaml");
    expect("pod1", "QuotaExceeded", NULL, "InsufficientDevices");

    /* 6. The quota, and the second claim applied again. */
    apply(SEED "fixed/quota.yaml");
    apply(SEED "fixed/resourceclaim-second.yaml");
    expect_phase("pod1", "Running");
    expect("pod1", NULL, NULL, NULL);
    expect("pod0", NULL, NULL, NULL);

    /* Both GPUs arrived through the simulated CDI path, one each. */
    expect_env("pod0", "GPU_DEVICE_0", "gpu-0");
    expect_env("pod0", "GPU_DEVICE_0_SHARING_STRATEGY", "TimeSlicing");
    expect_env("pod0", "GPU_DEVICE_0_TIMESLICE_INTERVAL", "Default");
    expect_env("pod0", "GPU_DEVICE_0_RESOURCE_CLAIM", NULL);
    expect_env("pod1", "GPU_DEVICE_1", "gpu-1");
    expect_env("pod1", "GPU_DEVICE_1_SHARING_STRATEGY", "TimeSlicing");
    expect_env("pod1", "GPU_DEVICE_1_RESOURCE_CLAIM", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_end_to_end),
    };
    return cmocka_run_group_tests_name("e2e-seed", tests, NULL, NULL);
}
