/*
 * seed.h - the seed scenario on the real node, for the e2e programs that run it
 * (e2e_seed.c, e2e_containerd2.c): applying it fault by fault, waiting for what
 * dra-doctor writes on the pods, the GPU a pod sees through CDI.  Included by one .c
 * file each (static definitions), after e2e.h and harness.h.
 */
#ifndef DD_E2E_SEED_H
#define DD_E2E_SEED_H

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

static __attribute__((unused)) double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((unused)) double t_start;

static __attribute__((unused)) void step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static __attribute__((unused)) void step(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "  [%5.1f s] ", now_s() - t_start);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The file NAME of the scenario: the fault's own version when it has one, else fixed/'s. */
static __attribute__((unused)) const char *seed_file(const char *fault, const char *name)
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

static __attribute__((unused)) void apply(const char *file)
{
    if (sh("kubectl apply -f %s 2>&1", file))
        fail_msg("kubectl apply -f %s failed: %s", file, out);
}

static __attribute__((unused)) void containerd_config(const char *file)
{
    if (sh("e2e/cluster containerd-config %s 2>&1", file))
        fail_msg("e2e/cluster containerd-config %s: %s", file, out);
}

/* The kubelet's registrations of the example driver so far (its log, --v=2). */
static __attribute__((unused)) int registrations(void)
{
    if (sh("grep -c 'Connection changed.*driverName=\"gpu.example.com\".*connected=true' "
           "'%s/logs/kubelet.log' 2>/dev/null", getenv("DD_CLUSTER_DIR")))
        return 0;
    return atoi(out);
}

/* Waits until the kubelet has registered the driver more than `before` times: a restarted
 * plugin's DaemonSet rollout ends before its plugin registers, and a pod prepared in
 * between waits for the kubelet's next retry (about a minute). */
static __attribute__((unused)) void wait_registered(int before)
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

static __attribute__((unused)) void wait_rollout(void)
{
    if (sh("kubectl rollout status -n " NS " daemonset/" DS " --timeout=%ds 2>&1", WAIT_S))
        fail_msg("driver rollout: %s", out);
}

/* The seed's DeviceClass: the webhook refuses a typo'd one at the door (through its
 * Service); the test then creates it anyway, with the webhook's documented per-class
 * exception, so that the controller has the contest's broken class to diagnose. */
static __attribute__((unused)) void apply_class(const char *file)
{
    double end = now_s() + WAIT_S;

    /* A node that just restarted (a new containerd) restarts the webhook's pods too: until
     * they are back in the Service's endpoints the API server cannot call it at all
     * (failurePolicy Fail), which is not the answer this waits for. */
    while (sh("kubectl apply -f %s 2>&1", file) && strstr(out, "failed calling webhook") &&
           now_s() < end)
        usleep(500000);
    if (!sh("kubectl apply -f %s 2>&1", file))
        return;
    assert_contains(out, "admission webhook \"deviceclasses.dra-doctor.io\" denied the request");
    assert_contains(out, "Did you mean 'gpu.example.com'?");
    step("webhook refused %s: did you mean 'gpu.example.com'", file);
    if (sh("kubectl annotate --local -f %s -o yaml "
           "dra-doctor.io/allow-unregistered-driver=true 2>&1 | kubectl apply -f - 2>&1", file))
        fail_msg("DeviceClass with the webhook's exception: %s", out);
}

static __attribute__((unused)) char *pod_annotation(const char *pod, const char *key)
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
static __attribute__((unused)) void expect(const char *pod, const char *want, const char *also, const char *absent,
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
        if (now_s() > end) {
            /* What the diagnosis read, for a failure seen only in CI's log. */
            sh("kubectl get pod -n " NS " %s -o jsonpath='{.status.phase} "
               "{.status.containerStatuses}{\"\\n\"}' 2>&1; kubectl get nodes -o "
               "jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations."
               "dra-doctor\\.io/cdi}{\"\\n\"}{end}' 2>&1; kubectl logs -n dra-doctor "
               "deploy/dra-doctor-controller --tail=15 2>&1", pod);
            fprintf(stderr, "---- pod %s, the nodes' CDI facts, the controller's log:\n%s\n", pod,
                    out);
            fail_msg("pod %s: expected root cause %s (with %s, without %s, message with \"%s\"), "
                     "have %s [%s]: %s", pod, want ? want : "(none)", also ? also : "-",
                     absent ? absent : "-", msg ? msg : "", root ? root : "(none)",
                     list ? list : "", text ? text : "");
        }
        usleep(250000);
    }
    step("pod %s: %s [%s]", pod, root ? root : "healthy", list ? list : "");
    free(root);
    free(list);
    free(text);
}

/* Waits until pod's root cause is no longer code. */
static __attribute__((unused)) void expect_gone(const char *pod, const char *code)
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

static __attribute__((unused)) void expect_event(const char *pod, const char *reason)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get events -n " NS " --field-selector involvedObject.name=%s,reason=%s "
              "-o name 2>&1", pod, reason) || !strstr(out, "event")) {
        if (now_s() > end)
            fail_msg("no %s event on pod %s: %s", reason, pod, out);
        usleep(500000);
    }
}

static __attribute__((unused)) void expect_phase(const char *pod, const char *phase)
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
static __attribute__((unused)) void expect_waiting(const char *pod, const char *reason, const char *msg)
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
static __attribute__((unused)) int expect_gpu(const char *pod)
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

static __attribute__((unused)) void expect_no_gpu(const char *pod)
{
    int rc = sh("kubectl exec -n " NS " %s -- sh -c 'env | grep GPU_' 2>&1", pod);

    if (rc == 0 || strstr(out, "GPU_DEVICE"))
        fail_msg("pod %s has GPU variables although CDI is off: %s", pod, out);
    step("pod %s runs without its GPU (env | grep GPU_: nothing)", pod);
}

/* With DD_E2E_CAPTURE=DIR, what the controller saw at this point, as a fixture of
 * tests/unit/test_evidence.c (e2e/node/capture.sh). */
static __attribute__((unused)) void capture(const char *name, const char *note)
{
    const char *d = getenv("DD_E2E_CAPTURE");

    if (d && *d && sh("e2e/node/capture.sh " NS " '%s/%s.json' '%s' 2>&1", d, name, note))
        fprintf(stderr, "  capture %s failed: %s\n", name, out);
}

static __attribute__((unused)) void recreate(const char *pod)
{
    if (sh("kubectl delete pod -n " NS " %s --wait=true --timeout=60s 2>&1", pod))
        fail_msg("delete pod %s: %s", pod, out);
    apply(SEED "fixed/pods.yaml");
    step("pod %s recreated", pod);
}

/* A scenario's objects, in the order the contest's files were applied.  fault is the
 * directory whose files replace fixed/'s ("broken": all of them). */
static __attribute__((unused)) void remove_scenario(void);

static __attribute__((unused)) void apply_scenario(const char *fault)
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
    /* The webhook judges the second claim by the quota and the first claim in its caches,
     * which the watch delivers some milliseconds after they were created: until then it has
     * nothing to warn about (an "allowed" never waits for the caches, docs/webhook.md). */
    {
        double end = now_s() + 10;
        while (sh("kubectl create --dry-run=server -f %s 2>&1",
                  seed_file(fault, "resourceclaim-second.yaml")) &&
               strstr(out, "exceeded quota") && !strstr(out, "Warning: QuotaExceeded") &&
               now_s() < end)
            usleep(200000);
    }
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
static __attribute__((unused)) void remove_scenario(void)
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

static __attribute__((unused)) void healthy_with_gpus(void)
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

#endif
