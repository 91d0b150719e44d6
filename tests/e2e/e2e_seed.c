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

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define SEED "tests/data/lint/seed/"
#define NS "dra-tutorial"
#define DS "dra-example-driver-kubeletplugin"
#define WAIT_S 150 /* a kubelet retry after "driver not registered" can take 67 s */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t_start;

static void step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void step(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "  [%5.1f s] ", now_s() - t_start);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The file NAME of the scenario: the fault's own version when it has one, else fixed/'s. */
static const char *seed_file(const char *fault, const char *name)
{
    static char path[8][256];
    static int k;
    struct stat st;
    char *p = path[k++ % 8];

    snprintf(p, 256, SEED "%s/%s", fault, name);
    if (stat(p, &st))
        snprintf(p, 256, SEED "fixed/%s", name);
    return p;
}

static void apply(const char *file)
{
    if (sh("kubectl apply -f %s 2>&1", file))
        fail_msg("kubectl apply -f %s failed: %s", file, out);
}

static void containerd_config(const char *file)
{
    if (sh("e2e/cluster containerd-config %s 2>&1", file))
        fail_msg("e2e/cluster containerd-config %s: %s", file, out);
}

/* The kubelet's registrations of the example driver so far (its log, --v=2). */
static int registrations(void)
{
    if (sh("grep -c 'Connection changed.*driverName=\"gpu.example.com\".*connected=true' "
           "'%s/logs/kubelet.log' 2>/dev/null", getenv("DD_CLUSTER_DIR")))
        return 0;
    return atoi(out);
}

/* Waits until the kubelet has registered the driver more than `before` times: a restarted
 * plugin's DaemonSet rollout ends before its plugin registers, and a pod prepared in
 * between waits for the kubelet's next retry (about a minute). */
static void wait_registered(int before)
{
    double end = now_s() + WAIT_S;

    while (registrations() <= before) {
        if (now_s() > end)
            fail_msg("the kubelet did not register driver gpu.example.com again within %d s",
                     WAIT_S);
        usleep(200000);
    }
    step("driver plugin registered with the kubelet");
}

static void wait_rollout(void)
{
    if (sh("kubectl rollout status -n " NS " daemonset/" DS " --timeout=%ds 2>&1", WAIT_S))
        fail_msg("driver rollout: %s", out);
}

/* The seed's DeviceClass: the webhook refuses a typo'd one at the door (through its
 * Service); the test then creates it anyway, with the webhook's documented per-class
 * exception, so that the controller has the contest's broken class to diagnose. */
static void apply_class(const char *file)
{
    if (!sh("kubectl apply -f %s 2>&1", file))
        return;
    assert_contains(out, "admission webhook \"deviceclasses.dra-doctor.io\" denied the request");
    assert_contains(out, "Did you mean 'gpu.example.com'?");
    step("webhook refused %s: did you mean 'gpu.example.com'", file);
    if (sh("kubectl annotate --local -f %s -o yaml "
           "dra-doctor.io/allow-unregistered-driver=true 2>&1 | kubectl apply -f - 2>&1", file))
        fail_msg("DeviceClass with the webhook's exception: %s", out);
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

/* Waits until pod's root cause is want (NULL: none), its findings contain every code of
 * also (comma-separated, may be NULL) and none of absent, and its message contains msg. */
static void expect(const char *pod, const char *want, const char *also, const char *absent,
                   const char *msg)
{
    double end = now_s() + WAIT_S;
    char *root = NULL, *list = NULL, *text = NULL;

    for (;;) {
        int ok;
        free(root);
        free(list);
        free(text);
        root = pod_annotation(pod, "dra-doctor.io/root-cause");
        list = pod_annotation(pod, "dra-doctor.io/findings");
        text = pod_annotation(pod, "dra-doctor.io/message");
        ok = want ? root && !strcmp(root, want) : !root;
        if (ok && also) {
            char buf[512], *tok, *save = NULL;
            snprintf(buf, sizeof(buf), "%s", also);
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                ok &= list && strstr(list, tok) != NULL;
        }
        if (ok && absent && list && strstr(list, absent))
            ok = 0;
        if (ok && msg)
            ok = text && strstr(text, msg);
        if (ok)
            break;
        if (now_s() > end)
            fail_msg("pod %s: expected root cause %s (with %s, without %s, message with \"%s\"), "
                     "have %s [%s]: %s", pod, want ? want : "(none)", also ? also : "-",
                     absent ? absent : "-", msg ? msg : "", root ? root : "(none)",
                     list ? list : "", text ? text : "");
        usleep(250000);
    }
    step("pod %s: %s [%s]", pod, root ? root : "healthy", list ? list : "");
    free(root);
    free(list);
    free(text);
}

/* Waits until pod's root cause is no longer code. */
static void expect_gone(const char *pod, const char *code)
{
    double end = now_s() + WAIT_S;
    char *root;

    while ((root = pod_annotation(pod, "dra-doctor.io/root-cause")) && !strcmp(root, code)) {
        free(root);
        if (now_s() > end)
            fail_msg("pod %s: root cause still %s after %d s", pod, code, WAIT_S);
        usleep(250000);
    }
    step("pod %s: %s no more (now %s)", pod, code, root ? root : "healthy");
    free(root);
}

static void expect_event(const char *pod, const char *reason)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get events -n " NS " --field-selector involvedObject.name=%s,reason=%s "
              "-o name 2>&1", pod, reason) || !strstr(out, "event")) {
        if (now_s() > end)
            fail_msg("no %s event on pod %s: %s", reason, pod, out);
        usleep(500000);
    }
}

static void expect_phase(const char *pod, const char *phase)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get pod -n " NS " %s -o jsonpath='{.status.phase}' 2>&1", pod) ||
           strcmp(out, phase)) {
        if (now_s() > end)
            fail_msg("pod %s: expected phase %s, have %s", pod, phase, out);
        usleep(250000);
    }
}

/* A container's waiting reason, e.g. CreateContainerError. */
static void expect_waiting(const char *pod, const char *reason, const char *msg)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get pod -n " NS " %s -o jsonpath='{.status.containerStatuses[0].state."
              "waiting.reason} {.status.containerStatuses[0].state.waiting.message}' 2>&1", pod) ||
           strncmp(out, reason, strlen(reason)) || !strstr(out, msg)) {
        if (now_s() > end)
            fail_msg("pod %s: expected waiting %s with \"%s\", have \"%s\"", pod, reason, msg, out);
        usleep(250000);
    }
    step("pod %s: %s", pod, out);
}

/* `kubectl exec POD -- sh -c 'env | grep GPU_'`: the GPU injected through CDI (gpu-N for
 * some N, with the example driver's sharing settings), or none at all. */
static int expect_gpu(const char *pod)
{
    char want[64];
    const char *p;
    int n;

    if (sh("kubectl exec -n " NS " %s -- sh -c 'env | grep GPU_ | sort' 2>&1", pod))
        fail_msg("pod %s: no GPU_ variables: %s", pod, out);
    if (!(p = strstr(out, "GPU_DEVICE_")) || sscanf(p, "GPU_DEVICE_%d", &n) != 1)
        fail_msg("pod %s: no GPU_DEVICE_N: %s", pod, out);
    snprintf(want, sizeof(want), "GPU_DEVICE_%d=gpu-%d\n", n, n);
    assert_contains(out, want);
    snprintf(want, sizeof(want), "GPU_DEVICE_%d_SHARING_STRATEGY=TimeSlicing", n);
    assert_contains(out, want);
    snprintf(want, sizeof(want), "GPU_DEVICE_%d_RESOURCE_CLAIM=", n);
    assert_contains(out, want);
    step("pod %s sees gpu-%d through CDI", pod, n);
    return n;
}

static void expect_no_gpu(const char *pod)
{
    int rc = sh("kubectl exec -n " NS " %s -- sh -c 'env | grep GPU_' 2>&1", pod);

    if (rc == 0 || strstr(out, "GPU_DEVICE"))
        fail_msg("pod %s has GPU variables although CDI is off: %s", pod, out);
    step("pod %s runs without its GPU (env | grep GPU_: nothing)", pod);
}

/* With DD_E2E_CAPTURE=DIR, what the controller saw at this point, as a fixture of
 * tests/unit/test_evidence.c (e2e/node/capture.sh). */
static void capture(const char *name, const char *note)
{
    const char *d = getenv("DD_E2E_CAPTURE");

    if (d && *d && sh("e2e/node/capture.sh " NS " '%s/%s.json' '%s' 2>&1", d, name, note))
        fprintf(stderr, "  capture %s failed: %s\n", name, out);
}

static void recreate(const char *pod)
{
    if (sh("kubectl delete pod -n " NS " %s --wait=true --timeout=60s 2>&1", pod))
        fail_msg("delete pod %s: %s", pod, out);
    apply(SEED "fixed/pods.yaml");
    step("pod %s recreated", pod);
}

/* A scenario's objects, in the order the contest's files were applied.  fault is the
 * directory whose files replace fixed/'s ("broken": all of them). */
static void remove_scenario(void);

static void apply_scenario(const char *fault)
{
    int regs;

    remove_scenario(); /* what a failed test before this one left */
    regs = registrations();

    containerd_config(seed_file(fault, "containerd-config.toml"));
    apply(seed_file(fault, "namespace.yaml"));
    apply(seed_file(fault, "driver-rbac.yaml"));
    apply(seed_file(fault, "driver-daemonset.yaml"));
    apply_class(seed_file(fault, "deviceclass.yaml"));
    apply(seed_file(fault, "quota.yaml"));
    apply(seed_file(fault, "resourceclaim-first.yaml"));
    if (sh("kubectl apply -f %s 2>&1", seed_file(fault, "resourceclaim-second.yaml"))) {
        /* The quota admission refuses it; dra-doctor's webhook warned first. */
        assert_contains(out, "exceeded quota");
        assert_contains(out, "Warning: QuotaExceeded");
        step("second-gpu refused by the quota, after dra-doctor's warning");
    }
    wait_rollout();
    wait_registered(regs);
    apply(seed_file(fault, "pods.yaml"));
    step("scenario %s applied", fault);
}

/* Everything of a scenario, pods first and the driver last (a pod whose claim's driver is
 * gone stays Terminating), then the slices the kubelet would wipe 30 s later. */
static void remove_scenario(void)
{
    sh("kubectl delete pod -n " NS " pod0 pod1 --ignore-not-found --wait=true --timeout=90s 2>&1");
    sh("kubectl delete resourceclaim -n " NS " --all --wait=true --timeout=60s 2>&1");
    sh("kubectl delete daemonset -n " NS " " DS " --wait=true --timeout=60s 2>&1");
    sh("kubectl wait --for=delete pod -n " NS " -l app.kubernetes.io/name=dra-example-driver "
       "--timeout=60s 2>&1");
    sh("kubectl delete namespace " NS " --wait=true --timeout=90s 2>&1");
    sh("kubectl delete deviceclass gpu.example.com clusterrole/dra-example-driver-role "
       "clusterrolebinding/dra-example-driver-role-binding --ignore-not-found 2>&1");
    sh("kubectl delete resourceslices --all 2>&1");
}

static void healthy_with_gpus(void)
{
    int g0, g1;

    expect_phase("pod0", "Running");
    expect_phase("pod1", "Running");
    expect("pod0", NULL, NULL, NULL, NULL);
    expect("pod1", NULL, NULL, NULL, NULL);
    g0 = expect_gpu("pod0");
    g1 = expect_gpu("pod1");
    assert_int_not_equal(g0, g1);
}

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
        int d0 = r0 && !strcmp(r0, "InsufficientDevices"), d1 = r1 && !strcmp(r1, "InsufficientDevices");
        free(r0);
        free(r1);
        if (d0 != d1) {
            run = d0 ? "pod1" : "pod0";
            wait = d0 ? "pod0" : "pod1";
            break;
        }
        if (now_s() > end)
            fail_msg("neither pod (or both) diagnosed InsufficientDevices");
        usleep(250000);
    }
    expect(wait, "InsufficientDevices", NULL, NULL, "the known inventory offers 1");
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
    expect("pod1", "DriverNotRegistered", NULL, NULL, "DRA driver gpu.example.com is not registered");
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
    expect("pod1", "QuotaExceeded", "InsufficientDevices", NULL, NULL);

    /* 5. Two devices: only the quota remains for pod1. */
    regs = registrations();
    apply(SEED "fixed/driver-daemonset.yaml");
    wait_rollout();
    wait_registered(regs);
    expect("pod1", "QuotaExceeded", NULL, "InsufficientDevices", NULL);

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

int main(void)
{
    const struct CMUnitTest tests[] = {
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
