/*
 * e2e_seed.c - the seed scenario on the real node (see e2e/README.md).
 *
 * Run by scripts/e2e.sh: a real control plane, a real node (kubelet, containerd 1.7,
 * runc, CNI), the real DRA example driver as the seed's DaemonSet, dra-doctor deployed
 * from deploy/ (webhook, controller, node agent).  KUBECONFIG is the admin's,
 * DD_CLUSTER_DIR the cluster's state dir (e2e/cluster containerd-config changes the
 * node's containerd config and restarts containerd, as an administrator would).
 *
 * First each of the six faults alone, on the fixed scenario (tests/data/lint/seed/
 * fault-N-*): what dra-doctor writes on the pods, then the write-up's fix, then what it
 * says next, until both pods run with a GPU injected through CDI (`kubectl exec ... env`).
 * Then all six together, as the contestants got them, fixed in the write-up's order.
 * On the real node neither CDI fix heals a pod that exists: dra-doctor must say to
 * recreate it, and the test does.
 */
#include "harness.h"

#include "e2e.h"
#include "seed.h"

/* ---- each fault alone ------------------------------------------------------------- */

static void fault_rbac(void **state)
{
    int regs;

    (void)state;
    apply_scenario("fault-1-rbac");
    expect("pod0", "DriverRBACDenied", NULL, NULL, "cannot create");
    expect("pod1", "DriverRBACDenied", NULL, NULL, NULL);
    expect_event("pod0", "DriverRBACDenied");
    apply(SEED "fixed/driver-rbac.yaml");
    expect_gone("pod0", "DriverRBACDenied");
    /* As the fix says: the refused plugin retries with a growing delay; restart it. */
    regs = registrations();
    assert_int_equal(sh("kubectl rollout restart -n " NS " daemonset/" DS " 2>&1"), 0);
    wait_registered(regs);
    healthy_with_gpus();
    remove_scenario();
}

static void fault_typo(void **state)
{
    (void)state;
    apply_scenario("fault-2-typo");
    expect("pod0", "SelectorMatchesNoDriver", NULL, NULL, "Did you mean 'gpu.example.com'?");
    expect("pod1", "SelectorMatchesNoDriver", NULL, NULL, NULL);
    apply(SEED "fixed/deviceclass.yaml");
    healthy_with_gpus();
    expect_event("pod0", "Resolved");
    remove_scenario();
}

static void fault_cdi_off(void **state)
{
    (void)state;
    apply_scenario("fault-3-cdi-off");
    expect_phase("pod0", "Running");
    expect_phase("pod1", "Running");
    expect("pod0", "CDIDisabled", NULL, NULL, "enable_cdi = false");
    expect("pod1", "CDIDisabled", NULL, NULL, NULL);
    expect_no_gpu("pod0");
    containerd_config(SEED "fixed/containerd-config.toml");
    /* containerd restarted with CDI on: the running pods still have no GPU. */
    expect("pod0", "CDIInjectionFailed", NULL, "CDIDisabled", "recreate pod pod0");
    expect("pod1", "CDIInjectionFailed", NULL, "CDIDisabled", "recreate pod pod1");
    expect_no_gpu("pod0");
    capture("cdi-off-fixed", "fault 3 alone: enable_cdi = true, containerd restarted; pod0 and "
            "pod1 started before, and run without their GPU");
    recreate("pod0");
    recreate("pod1");
    healthy_with_gpus();
    remove_scenario();
}

static void fault_cdi_root(void **state)
{
    int regs;

    (void)state;
    apply_scenario("fault-4-cdi-root");
    expect_waiting("pod0", "CreateContainerError",
                   "failed to create containerd container: CDI device injection failed: "
                   "unresolvable CDI devices k8s.gpu.example.com/gpu=");
    expect("pod0", "CDISpecDirNotShared", NULL, "CDIInjectionFailed", "CDI_ROOT");
    expect("pod1", "CDISpecDirNotShared", NULL, NULL, NULL);
    capture("cdi-root", "fault 4 alone: the driver writes its CDI specs to /etc/cdi in its "
            "container; pod0 and pod1 in CreateContainerError");
    regs = registrations();
    apply(SEED "fixed/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    /* The claims were prepared before: nothing writes their specs now. */
    expect("pod0", "CDIInjectionFailed", NULL, "CDISpecDirNotShared", "recreate pod pod0");
    capture("cdi-root-fixed", "fault 4 alone, CDI_ROOT=/var/run/cdi set, the driver restarted: "
            "pod0 and pod1 still in CreateContainerError");
    recreate("pod0");
    recreate("pod1");
    healthy_with_gpus();
    remove_scenario();
}

static void fault_devices(void **state)
{
    const char *run, *wait;
    double end;
    int regs;

    (void)state;
    apply_scenario("fault-5-devices");
    end = now_s() + WAIT_S;
    /* One device: whichever pod the scheduler took first has it. */
    for (;;) {
        char *r0 = pod_annotation("pod0", "dra-doctor.io/root-cause");
        char *r1 = pod_annotation("pod1", "dra-doctor.io/root-cause");
        int d0 = r0 && !strcmp(r0, "DevicesDoNotFit"), d1 = r1 && !strcmp(r1, "DevicesDoNotFit");
        free(r0);
        free(r1);
        if (d0 != d1) {
            run = d0 ? "pod1" : "pod0";
            wait = d0 ? "pod0" : "pod1";
            break;
        }
        if (now_s() > end)
            fail_msg("neither pod (or both) diagnosed DevicesDoNotFit");
        usleep(250000);
    }
    expect(wait, "DevicesDoNotFit", NULL, NULL, "fits on no node");
    expect_phase(run, "Running");
    expect_gpu(run);
    regs = registrations();
    apply(SEED "fixed/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    healthy_with_gpus();
    remove_scenario();
}

static void fault_quota(void **state)
{
    (void)state;
    apply_scenario("fault-6-quota");
    expect("pod1", "QuotaExceeded", NULL, NULL, "gpu-quota");
    expect_event("pod1", "QuotaExceeded");
    expect_phase("pod0", "Running");
    expect("pod0", NULL, NULL, NULL, NULL);
    apply(SEED "fixed/quota.yaml");
    apply(SEED "fixed/resourceclaim-second.yaml");
    healthy_with_gpus();
    remove_scenario();
}

/*
 * The driver's plugin gone from the node while its slices still stand (the kubelet wipes
 * them 30 s after the plugin unregistered): a pod whose claim is allocated from them
 * reaches the node, and the kubelet cannot prepare it.
 */
static void driver_not_registered(void **state)
{
    int regs;

    (void)state;
    apply_scenario("fixed");
    healthy_with_gpus();
    sh("kubectl delete pod -n " NS " pod1 --wait=true --timeout=60s 2>&1");
    sh("kubectl delete daemonset -n " NS " " DS " --wait=true 2>&1");
    sh("kubectl wait --for=delete pod -n " NS " -l app.kubernetes.io/name=dra-example-driver "
       "--timeout=60s 2>&1");
    apply(SEED "fixed/pods.yaml");
    expect("pod1", "KubeletPluginNotRegistered", NULL, NULL, "DRA driver gpu.example.com is not registered");
    expect_event("pod1", "FailedPrepareDynamicResources");
    capture("not-registered", "the driver DaemonSet deleted, its slices not yet wiped; pod1 "
            "created again, allocated, bound");
    /* The plugin back: as the diagnosis says, recreate the pod rather than wait. */
    regs = registrations();
    apply(SEED "fixed/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    recreate("pod1");
    healthy_with_gpus();
    remove_scenario();
}

/* ---- all six, as the contestants got them ----------------------------------------- */

static void all_six(void **state)
{
    int regs;

    (void)state;
    apply_scenario("broken");
    expect("pod0", "DriverRBACDenied", "SelectorMatchesNoDriver,CDIDisabled,CDISpecDirNotShared",
           NULL, NULL);
    expect("pod1", "QuotaExceeded", NULL, NULL, NULL);
    expect_event("pod0", "DriverRBACDenied");
    expect_event("pod1", "QuotaExceeded");
    capture("seed-broken", "the seed scenario as the contestants got it, all six faults");
    assert_int_equal(sh("kubectl describe pod -n " NS " pod0 2>&1"), 0);
    assert_contains(out, "dra-doctor.io/root-cause: DriverRBACDenied");
    assert_contains(out, "FailedScheduling");

    /* 1. RBAC (and the plugin restarted, as the fix says): the typo is next. */
    apply(SEED "fixed/driver-rbac.yaml");
    regs = registrations();
    assert_int_equal(sh("kubectl rollout restart -n " NS " daemonset/" DS " 2>&1"), 0);
    wait_registered(regs);
    expect("pod0", "SelectorMatchesNoDriver", NULL, "DriverRBACDenied", NULL);

    /* 2. The typo: pod0 allocates and starts, but without its GPU (CDI off). */
    apply(SEED "fixed/deviceclass.yaml");
    expect_phase("pod0", "Running");
    expect("pod0", "CDIDisabled", "CDISpecDirNotShared", "SelectorMatchesNoDriver", NULL);
    expect_no_gpu("pod0");

    /* 3. CDI on, containerd restarted: pod0 keeps running without its GPU until it is
     * recreated; then the spec is not found. */
    containerd_config(SEED "fixed/containerd-config.toml");
    expect("pod0", "CDIInjectionFailed", "CDISpecDirNotShared", "CDIDisabled", "recreate pod pod0");
    recreate("pod0");
    expect_waiting("pod0", "CreateContainerError", "unresolvable CDI devices");
    expect("pod0", "CDISpecDirNotShared", NULL, "CDIDisabled", NULL);

    /* 4. CDI_ROOT on the shared hostPath (still one device): recreate pod0, as dra-doctor
     * says; it sees its GPU. */
    regs = registrations();
    apply(SEED "fault-5-devices/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    expect("pod0", "CDIInjectionFailed", NULL, "CDISpecDirNotShared", "recreate pod pod0");
    recreate("pod0");
    expect_phase("pod0", "Running");
    expect("pod0", NULL, NULL, NULL, NULL);
    assert_int_equal(expect_gpu("pod0"), 0);
    expect("pod1", "QuotaExceeded", "DevicesDoNotFit", NULL, NULL);

    /* 5. Two devices: only the quota remains for pod1. */
    regs = registrations();
    apply(SEED "fixed/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    expect("pod1", "QuotaExceeded", NULL, "DevicesDoNotFit", NULL);

    /* 6. The quota, and the second claim applied again: both pods run, one GPU each, as in
     * the contest's goal state. */
    apply(SEED "fixed/quota.yaml");
    apply(SEED "fixed/resourceclaim-second.yaml");
    expect_phase("pod1", "Running");
    expect("pod1", NULL, NULL, NULL, NULL);
    expect("pod0", NULL, NULL, NULL, NULL);
    assert_int_equal(expect_gpu("pod0"), 0);
    assert_int_equal(expect_gpu("pod1"), 1);
    remove_scenario();
}

static int setup(void **state)
{
    (void)state;
    if (!getenv("KUBECONFIG") || !getenv("DD_CLUSTER_DIR")) {
        fprintf(stderr, "e2e_seed: run me through scripts/e2e.sh\n");
        return -1;
    }
    t_start = now_s();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_scenario();
    /* The node's default config back, for the programs that follow. */
    sh("e2e/cluster containerd-config e2e/node/containerd-1.7.toml 2>&1");
    return 0;
}

/* The controller and the webhook know the cluster's release and read its feature gates
 * from the API server (their ServiceAccounts may get /metrics), and say so at start. */
static void release_discovered(void **state)
{
    static const char *const parts[] = { "controller", "webhook" };
    const char *ver = getenv("DD_K8S_VERSION");
    char want[128];
    size_t i;

    (void)state;
    assert_non_null(ver);
    snprintf(want, sizeof(want), ": Kubernetes %s; resource.k8s.io v1", ver);
    for (i = 0; i < 2; i++) {
        if (sh("kubectl logs -n dra-doctor deployment/dra-doctor-%s 2>&1", parts[i]))
            fail_msg("logs of %s: %s", parts[i], out);
        assert_contains(out, want);
        assert_contains(out, "feature gates: the API server's");
        step("%s: %.*s", parts[i], (int)strcspn(strstr(out, "Kubernetes v"), "\n"),
             strstr(out, "Kubernetes v"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(release_discovered),
        cmocka_unit_test(fault_rbac),
        cmocka_unit_test(fault_typo),
        cmocka_unit_test(fault_cdi_off),
        cmocka_unit_test(fault_cdi_root),
        cmocka_unit_test(fault_devices),
        cmocka_unit_test(fault_quota),
        cmocka_unit_test(driver_not_registered),
        cmocka_unit_test(all_six),
    };
    return cmocka_run_group_tests_name("e2e-seed", tests, setup, teardown);
}
