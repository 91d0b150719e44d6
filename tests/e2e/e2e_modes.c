/*
 * e2e_modes.c - the failure modes beyond the seed (docs/rules.md, "Coverage"), each planted
 * on the real cluster and node (see e2e/README.md) and diagnosed where the user looks.
 *
 * The seed's driver (the real dra-example-driver, NUM_DEVICES 2) and DeviceClass are set up
 * once, without the quota; each test applies tests/e2e/modes/<mode>.yaml (objects labelled
 * dd-mode), waits for what the webhook says on apply and what the controller writes on the
 * pod, checks the real component's own text where there is one, and removes its objects.
 * Faults the API or the node show need no imitation: the scheduler, the kubelet, the API
 * server and the driver produce them.  Only the second node of the shared-claim test is
 * simulated (e2e/sim/nodesim.c): one machine has one real node.
 */
#include "harness.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "e2e.h"
#include "seed.h"

#define MODES "tests/e2e/modes/"

/* kubectl apply -f MODES<mode>.yaml, which must succeed; its output (webhook warnings)
 * stays in out. */
static void plant(const char *mode)
{
    if (sh("kubectl apply -f " MODES "%s.yaml 2>&1", mode))
        fail_msg("kubectl apply -f %s.yaml failed: %s", mode, out);
    step("%s planted", mode);
}

/* What a test left: its pods first (their generated claims go with them), then the rest. */
static void unplant(void)
{
    sh("kubectl delete pod -n " NS " -l dd-mode --wait=true --timeout=90s 2>&1");
    sh("kubectl delete resourceclaimtemplate,resourceclaim -n " NS " --all --wait=true "
       "--timeout=60s 2>&1");
    sh("kubectl delete resourceslice,deviceclass -l dd-mode --wait=true --timeout=60s 2>&1");
}

/* The last Event of reason on pod, into out ("" when none). */
static void event_text(const char *pod, const char *reason, const char *want)
{
    double end = now_s() + WAIT_S;

    /* The kubelet's reasons change as the pod's claims appear: every event counts. */
    while (sh("kubectl get events -n " NS " --field-selector involvedObject.name=%s,reason=%s "
              "-o jsonpath='{range .items[*]}{.message}{\"\\n\"}{end}' 2>&1", pod, reason) ||
           !*out || (want && !strstr(out, want))) {
        if (now_s() > end)
            fail_msg("no %s event on pod %s%s%s: %s", reason, pod, want ? " with " : "",
                     want ? want : "", out);
        usleep(500000);
    }
    step("%s on %s: %s", reason, pod, out);
}

/* Waits until no ResourceSlice of driver is left. */
static void wait_no_slices(const char *driver)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get resourceslices --field-selector spec.driver=%s -o name 2>&1", driver) ||
           *out) {
        if (now_s() > end)
            fail_msg("slices of %s still there: %s", driver, out);
        usleep(500000);
    }
    step("no slices of %s left", driver);
}

/* M04: the container lists no claim; the pod runs, its device reaches nobody. */
static void claim_not_consumed(void **state)
{
    (void)state;
    plant("claim-not-consumed");
    assert_contains(out, "Warning: ClaimNotConsumedByContainer: ");
    expect_phase("nouse", "Running");
    expect("nouse", "ClaimNotConsumedByContainer", NULL, NULL,
           "no container lists claim \"gpu\" in resources.claims");
    expect_no_gpu("nouse");
    unplant();
}

/* M36: created with nodeName, the scheduler never allocates its claim. */
static void pod_bypasses_scheduler(void **state)
{
    (void)state;
    plant("pod-bypasses-scheduler");
    assert_contains(out, "Warning: PodBypassesScheduler: ");
    expect("pinned", "PodBypassesScheduler", NULL, NULL, "sets spec.nodeName (vm)");
    event_text("pinned", "FailedPrepareDynamicResources", "is not allowed to use ResourceClaim");
    unplant();
}

/* M15: the pod's nodeSelector rules out the one node with devices. */
static void pod_constraints(void **state)
{
    (void)state;
    plant("pod-constraints");
    expect("elsewhere", "PodConstraintsExcludeDeviceNodes", NULL, NULL,
           "vm: node(s) didn't match Pod's node affinity/selector");
    event_text("elsewhere", "FailedScheduling", "didn't match Pod's node affinity/selector");
    unplant();
}

/* M09: config for a misspelled driver, which the real driver ignores: the pod runs with the
 * driver's defaults. */
static void opaque_config_mismatch(void **state)
{
    (void)state;
    plant("opaque-config");
    assert_contains(out, "Warning: OpaqueConfigDriverMismatch: ");
    expect_phase("configured", "Running");
    expect("configured", "OpaqueConfigDriverMismatch", NULL, NULL, "Did you mean 'gpu.example.com'?");
    expect_gpu("configured");
    unplant();
}

/* M34: parameters the real driver rejects when the kubelet asks it to prepare the claim. */
static void prepare_failed(void **state)
{
    (void)state;
    plant("prepare-failed");
    assert_contains(out, "Warning: NodePrepareFailed: ");
    event_text("refused", "FailedPrepareDynamicResources",
               "NodePrepareResources failed for ResourceClaim");
    assert_contains(out, "unknown GPU sharing strategy: Sometimes");
    expect("refused", "NodePrepareFailed", NULL, NULL, "unknown GPU sharing strategy: Sometimes");
    capture("prepare-failed", "a claim whose GpuConfig names sharing strategy Sometimes; pod "
            "refused in ContainerCreating");
    unplant();
}

/* M18: neither alternative of a firstAvailable list can be had (8 GPUs; an H100). */
static void first_available_exhausted(void **state)
{
    (void)state;
    plant("first-available");
    expect("choosy", "PrioritizedListExhausted", NULL, NULL, NULL);
    event_text("choosy", "FailedScheduling", "cannot allocate all claims");
    unplant();
}

/* M20: all devices of a selector that matches none. */
static void all_mode_unsatisfiable(void **state)
{
    (void)state;
    plant("all-mode");
    expect("greedy", "AllocationModeAllUnsatisfiable", NULL, NULL, NULL);
    event_text("greedy", "FailedScheduling", NULL);
    unplant();
}

/* M05: admin access in a namespace without the label.  The API server refuses the template
 * itself; one admitted while the namespace had the label makes pods whose claims
 * kube-controller-manager cannot create once it is gone. */
static void admin_access_label(void **state)
{
    (void)state;
    assert_int_not_equal(sh("kubectl apply -f " MODES "admin-access.yaml 2>&1"), 0);
    assert_contains(out, "\"admin-gpu\" is invalid: spec.devices.requests[0].adminAccess: "
                         "Forbidden: admin access to devices requires the "
                         "`resource.kubernetes.io/admin-access: true` label on the containing "
                         "namespace");
    assert_int_not_equal(sh("%s lint " SEED "fixed/namespace.yaml " MODES "admin-access.yaml 2>&1",
                            getenv("DD_BIN")), 0);
    assert_contains(out, "error[AdminAccessNamespaceLabelMissing]");
    assert_contains(out, "the API server refuses the template");
    assert_int_equal(sh("kubectl label namespace " NS " resource.kubernetes.io/admin-access=true "
                        "2>&1"), 0);
    plant("admin-access");
    sh("kubectl delete pod -n " NS " admin --wait=true 2>&1");
    assert_int_equal(sh("kubectl label namespace " NS " resource.kubernetes.io/admin-access- 2>&1"),
                     0);
    plant("admin-access");
    event_text("admin", "FailedResourceClaimCreation", NULL);
    assert_contains(out, "admin access to devices requires the "
                         "`resource.kubernetes.io/admin-access: true` label");
    expect("admin", "AdminAccessNamespaceLabelMissing", NULL, NULL,
           "lacks the label resource.kubernetes.io/admin-access");
    unplant();
}

/* M16: the only devices of a class are on a node that does not exist. */
static void slice_node_unknown(void **state)
{
    (void)state;
    plant("slice-node-unknown");
    expect("ghost", "SliceNodeSelectionMatchesNoNode", NULL, NULL, "ghost");
    unplant();
}

/* M17: the only device carries a taint the claim does not tolerate. */
static void device_taint(void **state)
{
    (void)state;
    plant("device-taint");
    expect("tainted", "DeviceTaintNotTolerated", NULL, NULL, "example.com/unhealthy");
    event_text("tainted", "FailedScheduling", "cannot allocate all claims");
    unplant();
}

/* M23 and M24: a pool missing a slice, and a pool with a device twice. */
static void pools(void **state)
{
    (void)state;
    plant("pool-incomplete");
    plant("pool-invalid");
    expect("incomplete", "PoolIncomplete", NULL, NULL, "resourceSliceCount 2");
    expect("invalid", "PoolInvalid", NULL, NULL, "dev-0 twice");
    event_text("invalid", "FailedScheduling", NULL);
    step("1.36's scheduler on an invalid pool: %s", out);
    unplant();
}

/* M33 and M32: node-local devices of a driver no plugin serves; the scheduler places the pod
 * there, and the kubelet cannot have the claim prepared. */
static void stale_slices_not_registered(void **state)
{
    (void)state;
    plant("stale-slices");
    expect("stranded", "KubeletPluginNotRegistered", "StaleResourceSlices", NULL,
           "no DaemonSet of driver stale.example.com is installed");
    event_text("stranded", "FailedPrepareDynamicResources",
               "DRA driver stale.example.com is not registered");
    unplant();
}

/* M30: the driver's DaemonSet wants a label no node has (NVIDIA's NFD labels): its pod goes,
 * the kubelet wipes the slices, and a pod waits for devices nobody publishes. */
static void daemonset_missing_on_node(void **state)
{
    (void)state;
    if (sh("kubectl patch daemonset -n " NS " " DS " --type merge -p '{\"spec\":{\"template\":"
           "{\"spec\":{\"nodeSelector\":{\"feature.node.kubernetes.io/pci-10de.present\":"
           "\"true\"}}}}}' 2>&1"))
        fail_msg("patch: %s", out);
    sh("kubectl wait --for=delete pod -n " NS " -l app.kubernetes.io/name=dra-example-driver "
       "--timeout=60s 2>&1");
    /* The kubelet wipes a gone plugin's slices 30 s after it unregistered; until then a pod
     * is scheduled onto them (KubeletPluginNotRegistered, tested above). */
    wait_no_slices("gpu.example.com");
    plant("claim-not-consumed");
    expect("nouse", "DriverDaemonSetMissingOnNode", NULL, NULL,
           "feature.node.kubernetes.io/pci-10de.present=true");
}

/* Puts the DaemonSet back on the node, also when the test failed half-way. */
static int daemonset_back(void **state)
{
    int regs = registrations();

    (void)state;
    unplant();
    sh("kubectl patch daemonset -n " NS " " DS " --type merge -p '{\"spec\":{\"template\":"
       "{\"spec\":{\"nodeSelector\":null}}}}' 2>&1");
    wait_rollout();
    wait_registered(regs);
    return 0;
}

/* The driver's plugin runs, registered and ready, but finds no device (NUM_DEVICES 0): an
 * empty slice for the node, and a pod waiting for devices nobody can give. */
static void plugin_publishes_empty(void **state)
{
    int regs = registrations();
    double end;

    (void)state;
    if (sh("kubectl set env daemonset -n " NS " " DS " NUM_DEVICES=0 2>&1"))
        fail_msg("set env: %s", out);
    wait_rollout();
    wait_registered(regs);
    end = now_s() + WAIT_S;
    while (sh("kubectl get resourceslices --field-selector spec.driver=gpu.example.com -o "
              "jsonpath='{range .items[*]}{.metadata.name}:{.spec.devices}{\"\\n\"}{end}' 2>&1") ||
           !*out || strstr(out, "gpu-")) {
        if (now_s() > end)
            fail_msg("no empty slice of gpu.example.com: %s", out);
        usleep(500000);
    }
    step("slices of gpu.example.com without devices: %s", out);
    plant("claim-not-consumed");
    expect("nouse", "DriverNotPublishingOnNode", NULL, NULL, "list no device");
    event_text("nouse", "FailedScheduling", "cannot allocate all claims");
}

/* The driver's two devices again, also when the test failed half-way. */
static int devices_back(void **state)
{
    int regs = registrations();

    (void)state;
    unplant();
    sh("kubectl set env daemonset -n " NS " " DS " NUM_DEVICES=2 2>&1");
    wait_rollout();
    wait_registered(regs);
    return 0;
}

/* The simulated second node's process, while it runs. */
static pid_t nodesim = -1;

/* M21: a second node (simulated: nodesim publishes its devices like the example driver),
 * and a shared claim allocated on the real one; a pod that may only go to the second. */
static void claim_on_other_node(void **state)
{
    char cmd[1024];
    pid_t pid;

    (void)state;
    snprintf(cmd, sizeof(cmd), "%s", getenv("DD_BIN") ? getenv("DD_BIN") : "./dra-doctor");
    *strrchr(cmd, '/') = '\0';
    if (!(pid = fork())) {
        char bin[1100], log[1100];
        snprintf(bin, sizeof(bin), "%s/nodesim", cmd);
        snprintf(log, sizeof(log), "%s/logs/nodesim-sim-2.log", getenv("DD_CLUSTER_DIR"));
        /* Both streams: an inherited stdout would keep scripts/e2e.sh's pipe open. */
        if (!freopen(log, "a", stderr) || dup2(fileno(stderr), STDOUT_FILENO) < 0)
            _exit(126);
        execl(bin, bin, "--node", "sim-2", (char *)NULL);
        _exit(127);
    }
    nodesim = pid;
    {
        double end = now_s() + 60;
        while (sh("kubectl get node sim-2 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")]"
                  ".status}' 2>&1") || strcmp(out, "True")) {
            if (now_s() > end)
                fail_msg("simulated node sim-2 not Ready: %s", out);
            usleep(500000);
        }
    }
    step("simulated node sim-2 Ready");
    plant("shared-claim");
    expect_phase("holder", "Running");
    plant("shared-claim-latecomer");
    expect("latecomer", "ClaimAllocatedOnOtherNode", NULL, NULL,
           "already allocated on node vm");
    event_text("latecomer", "FailedScheduling", "resourceclaim not available on the node");
}

/* Stops the simulated node and removes it, also when the test failed half-way. */
static int second_node_gone(void **state)
{
    (void)state;
    /* What there was to see, for a failure's reader. */
    if (!sh("kubectl get pod -n " NS " -l dd-mode -o wide 2>&1; kubectl get resourceclaim -n " NS
            " shared -o jsonpath='{.status}' 2>&1"))
        step("pods and the shared claim: %s", out);
    unplant();
    if (nodesim > 0) {
        kill(nodesim, SIGTERM);
        waitpid(nodesim, NULL, 0);
        nodesim = -1;
    }
    /* The node first, or the DaemonSets put their pods back on it. */
    sh("kubectl delete node sim-2 --ignore-not-found --wait=true 2>&1");
    sh("kubectl delete pod -A --field-selector spec.nodeName=sim-2 --force --grace-period=0 2>&1");
    sh("kubectl delete resourceslice --field-selector spec.nodeName=sim-2 2>&1");
    return 0;
}

/* 1.36's granular status authorization: a scheduler's ServiceAccount that may write claim
 * status but not resourceclaims/binding (nor resourceclaims/driver) is refused by the API
 * server with the words ClaimStatusRBACDenied quotes. */
static void claim_status_rbac(void **state)
{
    static const char binding[] = "changing status.allocation or status.reservedFor requires "
                                  "resource=\"resourceclaims/binding\", verb=\"update\" permission";
    static const char driver[] = "changing status.devices requires resource=\"resourceclaims/"
                                 "driver\", verb=";
    char claim[256];

    (void)state;
    plant("claim-not-consumed");
    expect_phase("nouse", "Running");
    plant("claim-status-rbac");
    assert_int_equal(sh("%s lint " MODES "claim-status-rbac.yaml 2>&1", getenv("DD_BIN")), 1);
    assert_contains(out, "error[ClaimStatusRBACDenied]");
    assert_contains(out, "changing status.allocation or status.reservedFor requires "
                         "resource=\\\"resourceclaims/binding\\\", verb=\\\"update\\\" "
                         "permission");
    assert_int_equal(sh("kubectl get resourceclaims -n " NS " -o jsonpath='{.items[0].metadata.name}' "
                        "2>&1"), 0);
    snprintf(claim, sizeof(claim), "%.200s", out);
    /* A reservation more, and the allocated device's status, as the ServiceAccount. */
    assert_int_not_equal(sh("kubectl get resourceclaim %s -n " NS " -o json | python3 -c "
                            "'import json,sys; c=json.load(sys.stdin); c[\"status\"][\"reservedFor\"]"
                            ".append({\"resource\":\"pods\",\"name\":\"other\",\"uid\":"
                            "\"00000000-0000-0000-0000-000000000001\"}); print(json.dumps(c))' | "
                            "kubectl replace --subresource=status -f - "
                            "--as=system:serviceaccount:" NS ":dd-binder 2>&1", claim), 0);
    step("resourceclaims/binding refused: %s", out);
    assert_contains(out, binding);
    assert_int_not_equal(sh("kubectl get resourceclaim %s -n " NS " -o json | python3 -c "
                            "'import json,sys; c=json.load(sys.stdin); r=c[\"status\"][\"allocation\"]"
                            "[\"devices\"][\"results\"][0]; c[\"status\"][\"devices\"]=[{k: r[k] "
                            "for k in (\"driver\",\"pool\",\"device\")}]; print(json.dumps(c))' | "
                            "kubectl replace --subresource=status -f - "
                            "--as=system:serviceaccount:" NS ":dd-binder 2>&1", claim), 0);
    step("resourceclaims/driver refused: %s", out);
    assert_contains(out, driver);
    sh("kubectl delete clusterrole,clusterrolebinding -l dd-mode 2>&1; "
       "kubectl delete serviceaccount -n " NS " dd-binder 2>&1");
    unplant();
}

/* An extended resource nothing serves, then a DeviceClass mapping it to the example driver:
 * the scheduler makes the pod a claim and the GPU reaches the container. */
static void extended_resource(void **state)
{
    (void)state;
    plant("extended-resource");
    expect("xres", "ExtendedResourceNotBacked", NULL, NULL, "example.com/gpu");
    event_text("xres", "FailedScheduling", "Insufficient example.com/gpu");
    plant("extended-resource-class");
    expect_phase("xres", "Running");
    expect_gpu("xres");
    expect("xres", NULL, NULL, NULL, NULL);
    unplant();
}

/* M27: a device with a binding condition nobody sets: the scheduler holds the pod before
 * binding; once the condition is True (written here, as an attach controller would), it
 * binds the pod. */
static void binding_conditions(void **state)
{
    char claim[256];

    (void)state;
    plant("binding-conditions");
    event_text("bound", "BindingConditionsPending",
               "waiting for binding conditions for device on node");
    expect("bound", "BindingConditionsNotMet", NULL, NULL, "dra.example.com/attached");
    assert_int_equal(sh("kubectl get pod -n " NS " bound -o jsonpath='{.status."
                        "resourceClaimStatuses[0].resourceClaimName}' 2>&1"), 0);
    snprintf(claim, sizeof(claim), "%.200s", out);
    assert_int_equal(sh("kubectl get resourceclaim %s -n " NS " -o json | python3 -c "
                        "'import json,sys; c=json.load(sys.stdin); r=c[\"status\"][\"allocation\"]"
                        "[\"devices\"][\"results\"][0]; d={k: r[k] for k in (\"driver\",\"pool\","
                        "\"device\")}; d[\"conditions\"]=[{\"type\":\"dra.example.com/attached\","
                        "\"status\":\"True\",\"reason\":\"Attached\",\"message\":\"\","
                        "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]; "
                        "c[\"status\"][\"devices\"]=[d]; print(json.dumps(c))' | "
                        "kubectl replace --subresource=status -f - 2>&1", claim), 0);
    {
        double end = now_s() + WAIT_S;
        while (sh("kubectl get pod -n " NS " bound -o jsonpath='{.spec.nodeName}' 2>&1") || !*out) {
            if (now_s() > end)
                fail_msg("pod bound not bound after its condition became True");
            usleep(500000);
        }
        step("pod bound on node %s once its binding condition was True", out);
    }
    expect_gone("bound", "BindingConditionsNotMet");
    unplant();
}

/* A mutating admission policy drops a pod's resourceClaimTemplateName: the ReplicaSet's pods
 * are refused (FailedCreate), and the controller names the policy on the ReplicaSet. */
static void claim_fields_removed(void **state)
{
    double end;

    (void)state;
    plant("claim-fields-removed");
    /* The API server's policy informer takes a moment: the workload only once a pod as its
     * ReplicaSet makes it is refused. */
    end = now_s() + WAIT_S;
    while (!sh("kubectl create --dry-run=server -f " MODES "claim-fields-removed-probe.yaml 2>&1") ||
           !strstr(out, "must specify one of")) {
        if (now_s() > end)
            fail_msg("the policy never took effect: %s", out);
        usleep(500000);
    }
    plant("claim-fields-removed-workload");
    end = now_s() + WAIT_S;
    while (sh("kubectl get events -n " NS " --field-selector involvedObject.kind=ReplicaSet,"
              "reason=FailedCreate -o jsonpath='{range .items[*]}{.message}{\"\\n\"}{end}' 2>&1") ||
           !strstr(out, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")) {
        if (now_s() > end)
            fail_msg("no FailedCreate on the ReplicaSet: %s", out);
        usleep(500000);
    }
    step("FailedCreate on the ReplicaSet: %s", out);
    end = now_s() + WAIT_S;
    while (sh("kubectl get events -n " NS " --field-selector involvedObject.kind=ReplicaSet,"
              "reason=PodClaimFieldsRemoved -o jsonpath='{range .items[*]}{.message}"
              "{\"\\n\"}{end}' 2>&1") || !strstr(out, "MutatingAdmissionPolicy dd-strip-claims")) {
        if (now_s() > end)
            fail_msg("no PodClaimFieldsRemoved Event naming the policy: %s", out);
        usleep(500000);
    }
    step("dra-doctor on the ReplicaSet: %.300s", out);
    sh("kubectl delete deployment -n " NS " stripped --wait=true 2>&1; kubectl delete "
       "mutatingadmissionpolicybinding,mutatingadmissionpolicy -l dd-mode 2>&1");
    unplant();
}

/* A v1beta1-shaped request under v1: the API server refuses it with the words lint quotes. */
static void field_not_in_version(void **state)
{
    static const char server[] = "ResourceClaimTemplate in version \"v1\" cannot be handled as a "
                                 "ResourceClaimTemplate: strict decoding error: unknown field "
                                 "\"spec.spec.devices.requests[0].deviceClassName\"";

    (void)state;
    assert_int_not_equal(sh("kubectl apply -f " MODES "field-not-in-version.yaml 2>&1"), 0);
    step("kubectl apply: %s", out);
    assert_contains(out, server);
    assert_int_equal(sh("%s lint " MODES "field-not-in-version.yaml 2>&1", getenv("DD_BIN")), 1);
    assert_contains(out, "error[FieldNotInAPIVersion]");
    assert_contains(out, server);
}

/* A NoExecute DeviceTaintRule matching every device: the webhook warns as it is created. */
static void taint_rule_evicts_all(void **state)
{
    (void)state;
    plant("taint-rule-all");
    assert_contains(out, "Warning: DeviceTaintRuleEvictsAll: ");
    sh("kubectl delete devicetaintrule dd-maintenance --wait=true 2>&1");
}

/* One run, every cause: several modes at once, each pod with its own, primary first. */
static void all_at_once(void **state)
{
    (void)state;
    plant("claim-not-consumed");
    plant("pod-constraints");
    plant("first-available");
    plant("pool-incomplete");
    plant("stale-slices");
    expect("nouse", "ClaimNotConsumedByContainer", NULL, NULL, NULL);
    expect("elsewhere", "PodConstraintsExcludeDeviceNodes", NULL, NULL, NULL);
    expect("choosy", "PrioritizedListExhausted", NULL, NULL, NULL);
    expect("incomplete", "PoolIncomplete", NULL, NULL, NULL);
    expect("stranded", "KubeletPluginNotRegistered", "StaleResourceSlices", NULL, NULL);
    unplant();
}

static int setup(void **state)
{
    int regs;

    (void)state;
    if (!getenv("KUBECONFIG") || !getenv("DD_CLUSTER_DIR")) {
        fprintf(stderr, "e2e_modes: run me through scripts/e2e.sh\n");
        return -1;
    }
    t_start = now_s();
    remove_scenario();
    regs = registrations();
    containerd_config(SEED "fixed/containerd-config.toml");
    apply(SEED "fixed/namespace.yaml");
    apply(SEED "fixed/driver-rbac.yaml");
    apply(SEED "fixed/driver-daemonset.yaml");
    apply(SEED "fixed/deviceclass.yaml");
    wait_rollout();
    wait_registered(regs);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unplant();
    remove_scenario();
    sh("e2e/cluster containerd-config e2e/node/containerd-1.7.toml 2>&1");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(claim_not_consumed),
        cmocka_unit_test(pod_bypasses_scheduler),
        cmocka_unit_test(pod_constraints),
        cmocka_unit_test(opaque_config_mismatch),
        cmocka_unit_test(prepare_failed),
        cmocka_unit_test(first_available_exhausted),
        cmocka_unit_test(all_mode_unsatisfiable),
        cmocka_unit_test(admin_access_label),
        cmocka_unit_test(slice_node_unknown),
        cmocka_unit_test(device_taint),
        cmocka_unit_test(pools),
        cmocka_unit_test(stale_slices_not_registered),
        cmocka_unit_test_teardown(daemonset_missing_on_node, daemonset_back),
        cmocka_unit_test_teardown(plugin_publishes_empty, devices_back),
        cmocka_unit_test_teardown(claim_on_other_node, second_node_gone),
        cmocka_unit_test(claim_status_rbac),
        cmocka_unit_test(extended_resource),
        cmocka_unit_test(binding_conditions),
        cmocka_unit_test(claim_fields_removed),
        cmocka_unit_test(field_not_in_version),
        cmocka_unit_test(taint_rule_evicts_all),
        cmocka_unit_test(all_at_once),
    };
    /* DD_E2E_TEST=NAME runs one test (a shell pattern of cmocka's), for a developer. */
    if (getenv("DD_E2E_TEST"))
        cmocka_set_test_filter(getenv("DD_E2E_TEST"));
    return cmocka_run_group_tests_name("e2e-modes", tests, setup, teardown);
}
