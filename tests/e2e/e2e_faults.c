/*
 * e2e_faults.c - fault injection against the controller on a real control
 * plane (see e2e/README.md).
 *
 * Run by scripts/e2e.sh, which exports KUBECONFIG (admin) and DD_CLUSTER_DIR, and
 * deploys the controller as deploy/'s Deployment (two replicas, leader election with
 * short timings: lease 4 s, renew deadline 3 s, retry 1 s; e2e/deploy) on the real
 * node.  Its metrics are read at the pods' IPs (:8080), which the host reaches.
 *
 *   1. kube-apiserver is SIGKILLed and started again while the controller
 *      watches: every informer's watch restarts, and the controller goes on
 *      diagnosing: a pod created afterwards is annotated, and a claim created
 *      afterwards moves an older pod's diagnosis on.
 *   2. 410 Gone: with the API server down, etcd gets two more writes and is
 *      compacted at the second.  Every resourceVersion the informers hold is
 *      then compacted (and older than the new watch cache), so each resumed
 *      watch must get 410 and every informer must relist.
 *   3. Failover: the leader's process is SIGKILLed in its container (no release);
 *      the other replica must take the Lease within the lease duration plus 5 s
 *      and diagnose the pods, including one created while no one led.  The
 *      kubelet restarts the killed container, which rejoins as a follower.
 *
 * Everything runs in namespace dd-faults, deleted at the end.  The broken pod
 * is always the same fault: a claim reference to a ResourceClaim that does
 * not exist (root cause ClaimNotFound).
 */
#include "harness.h"

#include "e2e.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define NS "dd-faults"
#define WAIT_S 60          /* generous bound for a diagnosis after a fault */
#define RECOVER_S 60       /* diagnosing again within this (reflector backoff: up to 30 s a step) */
#define LEASE_S 4          /* --leader-elect-lease-duration in scripts/e2e.sh */
#define TAKEOVER_SLACK_S 5 /* allowed on top of the lease duration */
#define NEW_LEADER_S 5     /* a new leader diagnoses what it saw as a follower within this */
#define NWATCHES 11        /* informers of the controller (cluster_resources in controller/cluster.c) */


static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);

    if (!v || !*v)
        fail_msg("%s is not set (run through scripts/e2e.sh)", name);
    return v;
}

static double metric_or(const char *addr, const char *name);

/* ---- the controller's metrics ------------------------------------------ */

/* Value of an unlabelled metric from http://addr/metrics; -1 when unreachable. */
static double metric(const char *addr, const char *name)
{
    size_t len = strlen(name);
    const char *l;

    if (sh("curl -sf --max-time 3 http://%s/metrics 2>/dev/null", addr))
        return -1;
    for (l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, len) && l[len] == ' ')
            return strtod(l + len + 1, NULL);
    fail_msg("no metric %s at %s", name, addr);
    return -1;
}

/* metric, but -1 also when the metric is missing (a replica still starting). */
static double metric_or(const char *addr, const char *name)
{
    size_t len = strlen(name);
    const char *l;

    if (sh("curl -sf --max-time 3 http://%s/metrics 2>/dev/null", addr))
        return -1;
    for (l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, len) && l[len] == ' ')
            return strtod(l + len + 1, NULL);
    return -1;
}

/* Waits until metric name at addr is at least min; returns its value. */
static double wait_metric(const char *addr, const char *name, double min, int secs)
{
    double end = now_s() + secs, v;

    while ((v = metric(addr, name)) < min) {
        if (now_s() > end)
            fail_msg("%s at %s: expected >= %.0f within %d s, have %.0f", name, addr, min, secs, v);
        nap_ms(200);
    }
    return v;
}

static void wait_ready(const char *addr, int secs)
{
    double end = now_s() + secs;

    while (sh("curl -sf --max-time 2 http://%s/readyz 2>&1", addr)) {
        if (now_s() > end)
            fail_msg("controller at %s not ready within %d s", addr, secs);
        nap_ms(200);
    }
}

/* ---- objects ----------------------------------------------------------- */

/* A pod whose claim reference names a ResourceClaim that does not exist (yet). */
static void broken_pod(const char *pod, const char *claim)
{
    if (sh("kubectl apply -f - 2>&1 <<'EOF'\n"
           "apiVersion: v1\n"
           "kind: Pod\n"
           "metadata: {name: %s, namespace: " NS "}\n"
           "spec:\n"
           "  terminationGracePeriodSeconds: 0\n"
           "  resourceClaims: [{name: gpu, resourceClaimName: %s}]\n"
           "  containers:\n"
           "  - name: c\n"
           "    image: registry.k8s.io/pause:3.10\n"
           "    resources: {claims: [{name: gpu}]}\n"
           "EOF\n",
           pod, claim))
        fail_msg("cannot create pod %s: %s", pod, out);
}

/* A claim for a DeviceClass that does not exist. */
static void claim_without_class(const char *claim)
{
    if (sh("kubectl apply -f - 2>&1 <<'EOF'\n"
           "apiVersion: resource.k8s.io/v1\n"
           "kind: ResourceClaim\n"
           "metadata: {name: %s, namespace: " NS "}\n"
           "spec:\n"
           "  devices:\n"
           "    requests:\n"
           "    - name: gpu\n"
           "      exactly: {deviceClassName: dd-faults-no-such-class}\n"
           "EOF\n",
           claim))
        fail_msg("cannot create claim %s: %s", claim, out);
}

static char *pod_root_cause(const char *pod)
{
    if (sh("kubectl get pod -n " NS " %s -o "
           "jsonpath='{.metadata.annotations.dra-doctor\\.io/root-cause}' 2>/dev/null",
           pod))
        return NULL;
    return strdup(out);
}

/* Waits until pod's root cause is want; returns the seconds it took. */
static double expect_root(const char *pod, const char *want, int secs)
{
    double t0 = now_s(), end = t0 + secs;
    char *have = NULL;

    for (;;) {
        free(have);
        have = pod_root_cause(pod);
        if (have && !strcmp(have, want))
            break;
        if (now_s() > end)
            fail_msg("pod %s: expected root cause %s within %d s, have \"%s\"", pod, want, secs,
                     have ? have : "(pod not found)");
        nap_ms(250);
    }
    free(have);
    return now_s() - t0;
}

/* The reportingInstance (controller identity) of pod's Warning event with reason. */
static void expect_event_from(const char *pod, const char *reason, const char *identity)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get events -n " NS " --field-selector "
              "involvedObject.name=%s,reason=%s -o jsonpath='{.items[*].reportingInstance}' 2>&1",
              pod, reason) ||
           !strstr(out, identity)) {
        if (now_s() > end)
            fail_msg("no %s event on pod %s from %s: \"%s\"", reason, pod, identity, out);
        nap_ms(250);
    }
}

static char *lease_holder(void)
{
    if (sh("kubectl get lease -n dra-doctor dra-doctor-controller "
           "-o jsonpath='{.spec.holderIdentity}' 2>/dev/null"))
        return NULL;
    return strdup(out);
}

/* ---- cluster faults ---------------------------------------------------- */

static void cluster(const char *args)
{
    double t0 = now_s();

    if (sh("e2e/cluster %s 2>&1", args))
        fail_msg("e2e/cluster %s failed: %s", args, out);
    fprintf(stderr, "  e2e/cluster %s: %.1f s\n", args, now_s() - t0);
}

/* An etcd v3 JSON-gateway call; returns the response (cJSON, free it) or NULL, out says why. */
static cJSON *etcd(const char *port, const char *method, const char *body)
{
    if (sh("curl -sf --max-time 5 -X POST http://127.0.0.1:%s/v3/%s -d '%s' 2>&1", port, method,
           body))
        return NULL;
    return cJSON_Parse(out);
}

static char *etcd_port(void)
{
    if (sh(". '%s/cluster.env' && printf %%s \"$ETCD_PORT\"", env("DD_CLUSTER_DIR")) || !*out)
        fail_msg("no ETCD_PORT in %s/cluster.env", env("DD_CLUSTER_DIR"));
    return strdup(out);
}

/* ---- replicas ---------------------------------------------------------- */

/* The controller pod whose identity (hostname_pid: the pod's name) holds the Lease, or
 * any ready one when nobody leads; its name and IP. */
struct replica {
    char name[128], ip[64], container[80];
};

static int replicas(struct replica *r, int max)
{
    cJSON *o, *it;
    int n = 0;

    if (sh("kubectl get pods -n dra-doctor -l app.kubernetes.io/component=controller -o json "
           "2>/dev/null") || !(o = cJSON_Parse(out)))
        return 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "items")) {
        cJSON *st = cJSON_GetObjectItem(it, "status"), *cs;
        const char *name = cJSON_GetStringValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metadata"), "name"));
        const char *ip = cJSON_GetStringValue(cJSON_GetObjectItem(st, "podIP"));
        const char *cid;
        if (!name || !ip || n == max ||
            cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metadata"), "deletionTimestamp"))
            continue;
        cs = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "containerStatuses"), 0);
        cid = cJSON_GetStringValue(cJSON_GetObjectItem(cs, "containerID"));
        snprintf(r[n].name, sizeof(r[n].name), "%s", name);
        snprintf(r[n].ip, sizeof(r[n].ip), "%s:8080", ip);
        snprintf(r[n].container, sizeof(r[n].container), "%s",
                 cid && strncmp(cid, "containerd://", 13) == 0 ? cid + 13 : "");
        n++;
    }
    cJSON_Delete(o);
    return n;
}

static char *lease_holder(void);

/* The leader's metrics address (ADDR:PORT), waiting for one to lead. */
static const char *leader_metrics(struct replica *out_r)
{
    static char addr[64];
    double end = now_s() + WAIT_S;

    for (;;) {
        struct replica r[4];
        char *h = lease_holder();
        int n = replicas(r, 4), i;
        for (i = 0; h && i < n; i++)
            if (!strncmp(h, r[i].name, strlen(r[i].name)) && h[strlen(r[i].name)] == '_' &&
                metric_or(r[i].ip, "dra_doctor_leader") == 1) {
                snprintf(addr, sizeof(addr), "%s", r[i].ip);
                if (out_r)
                    *out_r = r[i];
                free(h);
                return addr;
            }
        free(h);
        if (now_s() > end)
            fail_msg("no controller replica leads");
        nap_ms(250);
    }
}

/* The kubelet's restart count of a pod's first container. */
static int container_restarts(const char *pod)
{
    if (sh("kubectl get pod -n dra-doctor %s -o "
           "jsonpath='{.status.containerStatuses[0].restartCount}' 2>/dev/null", pod))
        fail_msg("no pod %s", pod);
    return atoi(out);
}

/* ---- tests ------------------------------------------------------------- */

static void apiserver_restart(void **state)
{
    struct replica r;
    const char *m = leader_metrics(&r);
    double restarts0, restarts, relists0, t_up, t;
    int restarts_before = container_restarts(r.name);

    (void)state;
    broken_pod("before-restart", "claim-before-restart");
    expect_root("before-restart", "ClaimNotFound", WAIT_S);
    restarts0 = metric(m, "dra_doctor_watch_restarts_total");
    relists0 = metric(m, "dra_doctor_relists_total");

    /* A crash: no graceful close of the watches. */
    cluster("restart --kill kube-apiserver");
    t_up = now_s();
    broken_pod("after-restart", "claim-after-restart");
    claim_without_class("claim-before-restart");
    t = expect_root("after-restart", "ClaimNotFound", RECOVER_S);
    fprintf(stderr, "  new broken pod diagnosed %.1f s after the API server was back\n", t);
    /* The claim's appearance reached the claim informer: the diagnosis moved on. */
    expect_root("before-restart", "DeviceClassNotFound", WAIT_S);
    fprintf(stderr, "  the older pod's diagnosis moved on %.1f s after the API server was back\n",
            now_s() - t_up);

    /* Every informer noticed its watch break and resumed it. */
    restarts = wait_metric(m, "dra_doctor_watch_restarts_total", restarts0 + NWATCHES, WAIT_S);
    fprintf(stderr, "  watch restarts %.0f -> %.0f, relists %.0f -> %.0f\n", restarts0, restarts,
            relists0, metric(m, "dra_doctor_relists_total"));
    /* The same process recovered: the kubelet did not restart it. */
    assert_int_equal(container_restarts(r.name), restarts_before);
    wait_ready(m, 10);
}

static void gone_410_relist(void **state)
{
    const char *m = leader_metrics(NULL);
    char *port = etcd_port(), body[256], etcd_err[300] = "";
    const char *rev = NULL;
    double relists0, relists, t_up, t;
    cJSON *r = NULL, *c;
    int i;

    (void)state;
    relists0 = metric(m, "dra_doctor_relists_total");
    /*
     * Deterministic 410: with the API server stopped, nothing can move the
     * informers' resourceVersions; the newest any of them can hold is the
     * etcd revision N.  Two etcd writes (outside /registry, invisible to
     * Kubernetes) make revisions N+1 and N+2, and a compaction at N+2 removes
     * every revision below it.  A watch from resourceVersion rv asks for the
     * revisions after rv: rv + 1 <= N + 1 is compacted, so etcd answers 410
     * "The resourceVersion for the provided watch is too old" (events, which
     * kube-apiserver serves from etcd, not from its watch cache); and the
     * restarted watch cache starts at N+2, so it answers 410 "too old resource
     * version" for everything else.  With one write and a compaction at N+1,
     * an informer at exactly N would resume from etcd without a 410 (correctly:
     * nothing it missed was compacted), which made this test flaky.  Every
     * informer must therefore relist.
     */
    cluster("stop --kill kube-apiserver"); /* SIGTERM would take 10 s */
    /* Whatever happens with etcd, the API server is started again before failing. */
    for (i = 0; i < 2 && !etcd_err[0]; i++) {
        cJSON_Delete(r);
        r = etcd(port, "kv/put", "{\"key\":\"L2RkLWZhdWx0cy9maWxsZXI=\",\"value\":\"eA==\"}");
        rev = cJSON_GetStringValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r, "header"), "revision"));
        if (!rev)
            snprintf(etcd_err, sizeof(etcd_err), "etcd put failed: %.200s", out);
    }
    if (!etcd_err[0]) {
        snprintf(body, sizeof(body), "{\"revision\":\"%s\",\"physical\":true}", rev);
        fprintf(stderr, "  etcd compacted at revision %s\n", rev);
        cJSON_Delete(c = etcd(port, "kv/compaction", body));
        if (!c)
            snprintf(etcd_err, sizeof(etcd_err), "etcd compaction at %s failed: %.200s", rev, out);
    }
    cJSON_Delete(r);
    free(port);
    cluster("start kube-apiserver");
    t_up = now_s();
    if (etcd_err[0])
        fail_msg("%s", etcd_err);

    relists = wait_metric(m, "dra_doctor_relists_total", relists0 + NWATCHES, RECOVER_S);
    fprintf(stderr, "  relists %.0f -> %.0f (every informer), %.1f s after the API server was back\n",
            relists0, relists, now_s() - t_up);
    broken_pod("after-410", "claim-after-410");
    t = expect_root("after-410", "ClaimNotFound", WAIT_S);
    fprintf(stderr, "  new broken pod diagnosed in %.1f s after the relists\n", t);
    wait_ready(m, 10);
}

static void leader_failover(void **state)
{
    struct replica dead, r[4], now;
    char *old, *holder;
    const char *m;
    double t_kill, takeover, t;
    int n, i, restarts;

    (void)state;
    /* Two replicas, one leading (it may have changed during the restarts). */
    leader_metrics(&dead);
    old = lease_holder();
    assert_non_null(old);
    n = replicas(r, 4);
    assert_int_equal(n, 2);
    for (i = 0; i < n; i++)
        if (strcmp(r[i].name, dead.name))
            assert_int_equal((int)metric(r[i].ip, "dra_doctor_leader"), 0); /* a follower */
    fprintf(stderr, "  leader: %s\n", old);
    restarts = container_restarts(dead.name);

    /*
     * SIGKILL in its container: no release, the Lease has to expire.  The kubelet restarts
     * the container at once, as a new candidate with an identity of its own: either it or
     * the follower takes the Lease, never the dead process's identity.
     */
    if (sh("e2e/cluster ctr -n k8s.io task kill -s SIGKILL %s 2>&1", dead.container))
        fail_msg("cannot kill the leader's container %s: %s", dead.container, out);
    t_kill = now_s();
    /* Broken while nobody leads: the new leader must not lose it when it takes over. */
    broken_pod("during-failover", "claim-during-failover");
    for (;;) {
        holder = lease_holder();
        if (holder && *holder && strcmp(holder, old))
            break;
        if (now_s() - t_kill > LEASE_S + TAKEOVER_SLACK_S)
            fail_msg("no replica took over from %s within %d s (holder \"%s\")", old,
                     LEASE_S + TAKEOVER_SLACK_S, holder ? holder : "");
        free(holder);
        nap_ms(100);
    }
    takeover = now_s() - t_kill;
    fprintf(stderr, "  %s SIGKILLed; %s took the Lease after %.1f s (lease duration %d s)\n",
            old, holder, takeover, LEASE_S);
    assert_true(takeover >= LEASE_S - 1); /* it waited for the Lease to expire */
    m = leader_metrics(&now);
    wait_metric(m, "dra_doctor_leader", 1, 5);

    /*
     * The new leader dropped this pod's key as a follower; on gaining the
     * Lease it must go over every pod by itself, not wait for some unrelated
     * change in the cluster to trigger a new snapshot.
     */
    t = expect_root("during-failover", "ClaimNotFound", NEW_LEADER_S + 5);
    fprintf(stderr, "  pod broken during the failover diagnosed %.1f s after the takeover\n", t);
    expect_event_from("during-failover", "ClaimNotFound", holder);
    broken_pod("after-failover", "claim-after-failover");
    t = expect_root("after-failover", "ClaimNotFound", WAIT_S);
    expect_event_from("after-failover", "ClaimNotFound", holder);
    fprintf(stderr, "  pod broken after the failover diagnosed by %s in %.1f s\n", holder, t);
    free(holder);
    free(old);

    /* The kubelet restarted the killed container: two replicas again, one leading. */
    t = now_s();
    while (container_restarts(dead.name) <= restarts || replicas(r, 4) != 2 ||
           metric_or(r[0].ip, "dra_doctor_leader") + metric_or(r[1].ip, "dra_doctor_leader") != 1) {
        if (now_s() - t > WAIT_S)
            fail_msg("the killed replica %s did not come back", dead.name);
        nap_ms(250);
    }
    fprintf(stderr, "  %s restarted by the kubelet, two replicas again after %.1f s\n", dead.name,
            now_s() - t);
}

/* ---- setup ------------------------------------------------------------- */

static int setup(void **state)
{
    double end = now_s() + WAIT_S;

    (void)state;
    if (sh("kubectl create namespace " NS " 2>&1")) {
        fprintf(stderr, "cannot create namespace " NS ": %s\n", out);
        return -1;
    }
    /* Pods are admitted only once the namespace's default ServiceAccount exists. */
    while (sh("kubectl get serviceaccount default -n " NS " 2>&1")) {
        if (now_s() > end) {
            fprintf(stderr, "no default ServiceAccount in " NS "\n");
            return -1;
        }
        nap_ms(200);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (sh("kubectl delete namespace " NS " --wait=true --timeout=60s 2>&1")) {
        fprintf(stderr, "cannot delete namespace " NS ": %s\n", out);
        return -1;
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(apiserver_restart),
        cmocka_unit_test(gone_410_relist),
        cmocka_unit_test(leader_failover),
    };
    return cmocka_run_group_tests_name("e2e-faults", tests, setup, teardown);
}
