/*
 * e2e_containerd2.c - the real node on containerd 2.x (v2.4.2, e2e/node/build.sh), where
 * CDI follows the runtime's version, not the config file:
 *   - the node's containerd is swapped (e2e/cluster node down, node up --containerd 2):
 *     the Node reports containerd://2.4.x, dra-doctor's pods come back on it, and the
 *     node agent (deploy/'s DaemonSet) publishes the version 3 config it reads;
 *   - `enable_cdi = false` in that config: containerd 2.4 ignores the key (CDI is always
 *     on), the agent says so, no CDIDisabled anywhere, and the pods see their GPU;
 *   - the seed's CDI_ROOT fault: the same real error text as on 1.7, CDISpecDirNotShared,
 *     then after the fix CDIInjectionFailed until the pods are recreated.
 * Then the node goes back to containerd 1.7 for the programs that follow.
 */
#include "harness.h"

#include "e2e.h"
#include "seed.h"

static char dir[256];

/* The real node again, with containerd 1 or 2; waits until dra-doctor's pods are back. */
static void node_on(int containerd)
{
    double t0 = now_s();

    if (sh("e2e/cluster node down 2>&1"))
        fail_msg("e2e/cluster node down: %s", out);
    if (sh("e2e/cluster node up --containerd %d 2>&1", containerd))
        fail_msg("e2e/cluster node up --containerd %d: %s", containerd, out);
    step("node on containerd %d (%.1f s): %s", containerd, now_s() - t0,
         strstr(out, "node ") ? strstr(out, "node ") : out);
    if (sh("kubectl rollout status -n dra-doctor deployment/dra-doctor-webhook --timeout=120s && "
           "kubectl rollout status -n dra-doctor deployment/dra-doctor-controller --timeout=120s && "
           "kubectl rollout status -n dra-doctor daemonset/dra-doctor-node --timeout=120s 2>&1"))
        fail_msg("dra-doctor's pods did not come back: %s", out);
}

static char *node_facts(void)
{
    if (sh("kubectl get node %s -o jsonpath='{.metadata.annotations.dra-doctor\\.io/cdi}' 2>&1",
           getenv("DD_NODE_NAME")))
        fail_msg("node: %s", out);
    return out;
}

static void runtime_2(void **state)
{
    double end = now_s() + WAIT_S;

    (void)state;
    node_on(2);
    assert_int_equal(sh("kubectl get node %s -o "
                        "jsonpath='{.status.nodeInfo.containerRuntimeVersion}'",
                        getenv("DD_NODE_NAME")), 0);
    assert_contains(out, "containerd://2.");
    while (!strstr(node_facts(), "\"runtime\":\"containerd://2.")) {
        if (now_s() > end)
            fail_msg("the node agent does not report containerd 2: %s", out);
        usleep(250000);
    }
    assert_contains(out, "\"version\":3");
    step("node agent: %s", out);
}

/* enable_cdi = false, which containerd 2.4 no longer reads. */
static void cdi_off_ignored(void **state)
{
    char cfg[512];
    double end = now_s() + WAIT_S;

    (void)state;
    snprintf(cfg, sizeof(cfg), "%s/config-cdi-off.toml", dir);
    if (sh("sed 's/^\\(\\[plugins.\"io.containerd.cri.v1.runtime\"\\]\\)$/\\1\\n  enable_cdi = false/' "
           "e2e/node/containerd-2.toml >%s && grep -n 'enable_cdi = false' %s", cfg, cfg))
        fail_msg("config: %s", out);
    apply_scenario("fixed");
    containerd_config(cfg);
    while (!strstr(node_facts(), "\"enableCDIIgnored\":true")) {
        if (now_s() > end)
            fail_msg("the node agent does not say enable_cdi is ignored: %s", out);
        usleep(250000);
    }
    assert_contains(out, "\"enableCDI\":true");
    assert_int_equal(sh("grep -c 'Ignoring unknown key in TOML.*enable_cdi' '%s/logs/containerd.log'",
                        getenv("DD_CLUSTER_DIR")), 0);
    step("containerd 2.4 ignores enable_cdi = false; node agent: %s", node_facts());
    capture("cdi-off-ignored-containerd2", "containerd 2.4.2 running a config with enable_cdi = "
            "false, which it ignores; pod0 and pod1 run with their GPU");
    recreate("pod0");
    recreate("pod1");
    healthy_with_gpus();
    remove_scenario();
}

static void cdi_root_2(void **state)
{
    int regs;

    (void)state;
    containerd_config("e2e/node/containerd-2.toml");
    apply_scenario("fault-4-cdi-root");
    expect_waiting("pod0", "CreateContainerError",
                   "failed to create containerd container: CDI device injection failed: "
                   "unresolvable CDI devices k8s.gpu.example.com/gpu=");
    expect("pod0", "CDISpecDirNotShared", NULL, "CDIInjectionFailed", "CDI_ROOT");
    capture("cdi-root-containerd2", "fault 4 alone on containerd 2.4: the driver writes its "
            "CDI specs to /etc/cdi in its container");
    regs = registrations();
    apply(SEED "fixed/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    expect("pod0", "CDIInjectionFailed", NULL, "CDISpecDirNotShared", "recreate pod pod0");
    recreate("pod0");
    recreate("pod1");
    healthy_with_gpus();
    remove_scenario();
}

static int setup(void **state)
{
    (void)state;
    if (!getenv("KUBECONFIG") || !getenv("DD_CLUSTER_DIR") || !getenv("DD_NODE_NAME")) {
        fprintf(stderr, "e2e_containerd2: run me through scripts/e2e.sh\n");
        return -1;
    }
    t_start = now_s();
    snprintf(dir, sizeof(dir), "/tmp/dd-e2e-ctrd2-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    int rc;

    (void)state;
    remove_scenario();
    rc = sh("e2e/cluster node down 2>&1 && e2e/cluster node up --containerd 1 2>&1 && "
            "kubectl rollout status -n dra-doctor deployment/dra-doctor-webhook --timeout=120s "
            "2>&1 && kubectl rollout status -n dra-doctor deployment/dra-doctor-controller "
            "--timeout=120s 2>&1 && kubectl rollout status -n dra-doctor daemonset/dra-doctor-node "
            "--timeout=120s 2>&1");
    if (rc)
        fprintf(stderr, "back to containerd 1.7 failed: %s\n", out);
    sh("rm -rf %s", dir);
    return rc ? -1 : 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_2),
        cmocka_unit_test(cdi_off_ignored),
        cmocka_unit_test(cdi_root_2),
    };
    return cmocka_run_group_tests_name("e2e-containerd2", tests, setup, teardown);
}
