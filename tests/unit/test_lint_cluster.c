/*
 * test_lint_cluster.c - `dra-doctor lint --cluster-inventory` ($DD_BIN) against a mock API
 * server (lib/client/httpd on loopback): the shape two-nodes-one-gpu-each of
 * tests/data/lint/alloc split so that the Nodes, ResourceSlices and DeviceClass come from the
 * cluster and the pod and its claims from a manifest.  The pod that fits on no node is an
 * error on the manifest's file and line, the fixed twin is clean, a manifest's claim replaces
 * the cluster's allocated claim of that name (and a Deployment of the manifests frees the
 * claims of its running pods) while one of another name holds its devices, findings on the
 * cluster's own objects are not reported; DeviceTaintRules are listed where discovery serves
 * them, and one that taints the GPUs is found on the manifest's template; a dead server, a 401,
 * a 403 and a server without resource.k8s.io/v1 end with exit 3 and say which request, at
 * which server, got what.
 */
#include "mock_api.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#define NS "tnoge"

/* One path of the mock: its status and body (static strings). */
struct res {
    const char *path;
    int status;
    const char *body;
    int hits;
};

#define EMPTY(kind, av) "{\"kind\":\"" kind "List\",\"apiVersion\":\"" av "\",\"metadata\":{},\"items\":[]}"
#define LIST(kind, av, items) \
    "{\"kind\":\"" kind "List\",\"apiVersion\":\"" av "\",\"metadata\":{},\"items\":[" items "]}"

#define NODE(n) "{\"metadata\":{\"name\":\"" n "\",\"labels\":{\"kubernetes.io/hostname\":\"" n "\"}}}"
#define DEV(i) "{\"name\":\"gpu-" #i "\",\"attributes\":{\"model\":{\"string\":\"A\"},\"index\":{\"int\":" #i "}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}"
#define SLICE(n, devs) \
    "{\"metadata\":{\"name\":\"" n "-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"" n \
    "\",\"pool\":{\"name\":\"" n "\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[" devs "]}}"
/* A class whose selector does not compile: a finding on the cluster's object, never shown. */
#define CLASSES \
    LIST("DeviceClass", "resource.k8s.io/v1", \
         "{\"metadata\":{\"name\":\"gpu.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":" \
         "\"device.driver == 'gpu.example.com'\"}}]}}," \
         "{\"metadata\":{\"name\":\"broken.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":" \
         "\"device.driver ==\"}}]}}")
/* A claim holding both devices of n1, owned (controller) by owner kind/name. */
#define HELD(name, okind, oav, oname) \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" NS "\",\"ownerReferences\":[{\"apiVersion\":\"" oav \
    "\",\"kind\":\"" okind "\",\"name\":\"" oname "\",\"uid\":\"u1\",\"controller\":true}]}," \
    "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\",\"count\":2}}]}}," \
    "\"status\":{\"allocation\":{\"devices\":{\"results\":[" \
    "{\"request\":\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}," \
    "{\"request\":\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]}," \
    "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}}"

#define RESOURCES "{\"resources\":[{\"name\":\"resourceslices\"}]}"

static struct res res[] = {
    { "/version", 200, "{\"gitVersion\":\"v1.37.2\"}", 0 },
    { "/apis/resource.k8s.io", 200, "{\"versions\":[{\"groupVersion\":\"resource.k8s.io/v1\",\"version\":\"v1\"}]}", 0 },
    { "/apis/resource.k8s.io/v1", 200, RESOURCES, 0 },
    { "/api/v1/nodes", 200, NULL, 0 },
    { "/apis/resource.k8s.io/v1/resourceslices", 200, NULL, 0 },
    { "/apis/resource.k8s.io/v1/deviceclasses", 200, CLASSES, 0 },
    { "/apis/resource.k8s.io/v1/resourceclaims", 200, EMPTY("ResourceClaim", "resource.k8s.io/v1"), 0 },
    { "/apis/resource.k8s.io/v1/resourceclaimtemplates", 200, EMPTY("ResourceClaimTemplate", "resource.k8s.io/v1"), 0 },
    { "/api/v1/pods", 200, EMPTY("Pod", "v1"), 0 },
    { "/apis/apps/v1/replicasets", 200, EMPTY("ReplicaSet", "apps/v1"), 0 },
    { "/apis/batch/v1/jobs", 200, EMPTY("Job", "batch/v1"), 0 },
    /* Listed only where discovery serves it. */
    { "/apis/resource.k8s.io/v1/devicetaintrules", 200,
      LIST("DeviceTaintRule", "resource.k8s.io/v1",
           "{\"metadata\":{\"name\":\"maintenance\"},\"spec\":{\"deviceSelector\":{\"driver\":\"other.example.com\"},"
           "\"taint\":{\"key\":\"m\",\"effect\":\"NoSchedule\"}}}"), 0 },
};

#define NRES (sizeof(res) / sizeof(res[0]))
static const char *res_taints_default;
#define R_NODES 3
#define R_SLICES 4
#define R_CLAIMS 6
#define R_PODS 8
#define R_RS 9
#define R_TAINTS 11

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct mock_api api;
static char manifest[256];

static void handler(void *ctx, const char *method, const char *body, size_t len,
                    struct httpd_response *r)
{
    struct res *x = ctx;

    (void)body;
    (void)len;
    pthread_mutex_lock(&mu);
    x->hits++;
    r->status = strcmp(method, "GET") ? 405 : x->status;
    r->content_type = "application/json";
    if (r->status == 401 || r->status == 403)
        r->body = strdup(r->status == 401 ? "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"message\":\"Unauthorized\",\"code\":401}"
                                          : "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"resourceslices.resource.k8s.io is forbidden: User \\\"ci\\\" cannot list resource \\\"resourceslices\\\"\",\"code\":403}");
    else
        r->body = strdup(x->body ? x->body : "{}");
    r->len = strlen(r->body);
    pthread_mutex_unlock(&mu);
}

/* The broken shape's cluster: two nodes with one GPU each. */
static void reset(int fixed)
{
    size_t i;

    pthread_mutex_lock(&mu);
    for (i = 0; i < NRES; i++) {
        res[i].status = 200;
        res[i].hits = 0;
    }
    res[R_NODES].body = LIST("Node", "v1", NODE("n1") "," NODE("n2"));
    res[R_SLICES].body = fixed ? LIST("ResourceSlice", "resource.k8s.io/v1",
                                      SLICE("n1", DEV(0) "," DEV(1)) "," SLICE("n2", DEV(0)))
                               : LIST("ResourceSlice", "resource.k8s.io/v1",
                                      SLICE("n1", DEV(0)) "," SLICE("n2", DEV(0)));
    res[R_CLAIMS].body = EMPTY("ResourceClaim", "resource.k8s.io/v1");
    res[R_PODS].body = EMPTY("Pod", "v1");
    res[R_RS].body = EMPTY("ReplicaSet", "apps/v1");
    res[R_TAINTS].body = res_taints_default;
    res[2].body = RESOURCES;
    pthread_mutex_unlock(&mu);
}

static void write_manifest(const char *text)
{
    FILE *f = fopen(manifest, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The shape's pod and its template (the pod at line 13). */
static const char pod_manifest[] =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaimTemplate\n"
    "metadata:\n"
    "  name: two-gpus\n"
    "  namespace: " NS "\n"
    "spec:\n"
    "  spec:\n"
    "    devices:\n"
    "      requests:\n"
    "      - name: gpu\n"
    "        exactly: {deviceClassName: gpu.example.com, count: 2}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: trainer\n"
    "  namespace: " NS "\n"
    "spec:\n"
    "  resourceClaims:\n"
    "  - name: gpus\n"
    "    resourceClaimTemplateName: two-gpus\n"
    "  containers:\n"
    "  - name: app\n"
    "    image: registry.k8s.io/pause:3.10\n"
    "    resources: {claims: [{name: gpus}]}\n";

/* Runs $DD_BIN lint --cluster-inventory --kubeconfig KC MANIFEST ARGS...; stdout and stderr
 * together. */
static void run(struct mock_run *r, const char *kc, ...)
{
    const char *const pre[] = { "lint", "--cluster-inventory", "--kubeconfig", kc,
                                "--color=never", manifest };
    va_list ap;

    va_start(ap, kc);
    mock_vrun(r, pre, 6, ap);
    va_end(ap);
}

static void test_does_not_fit(void **state)
{
    struct mock_run r;
    char where[300];

    (void)state;
    reset(0);
    write_manifest(pod_manifest);
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 1);
    snprintf(where, sizeof(where), "%s:13", manifest);
    assert_contains(r.out, where);
    assert_contains(r.out, "DevicesDoNotFit");
    assert_contains(r.out, "error");
    assert_contains(r.out, "Pod " NS "/trainer fits on no node");
    assert_contains(r.out, "Judged against the live cluster's inventory (context x, server ");
    assert_contains(r.out, api.server);
    assert_contains(r.out, "Kubernetes v1.37.2, read at ");
    /* The class exists only in the cluster: not missing.  The cluster's broken class is not
     * the manifests' to fix. */
    assert_null(strstr(r.out, "DeviceClassNotFound"));
    assert_null(strstr(r.out, "broken.example.com"));
    assert_null(strstr(r.out, "--complete makes it an error"));
    assert_contains(r.out, "2 Node(s), 2 ResourceSlice(s), 2 DeviceClass(es)");
    assert_int_equal(res[R_NODES].hits, 1);
    assert_int_equal(res[R_RS].hits, 1);
}

static void test_fixed_twin_clean(void **state)
{
    struct mock_run r;

    (void)state;
    reset(1);
    write_manifest(pod_manifest);
    run(&r, api.kubeconfig, "-o", "json", NULL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"findings\":[]");
    assert_contains(r.out, "0 DeviceTaintRule(s)");
    assert_int_equal(res[R_TAINTS].hits, 0);
    /* Served: listed (this one taints another driver's devices). */
    res[2].body = "{\"resources\":[{\"name\":\"resourceslices\"},{\"name\":\"devicetaintrules\"}]}";
    run(&r, api.kubeconfig, "-o", "json", NULL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "1 DeviceTaintRule(s)");
    assert_int_equal(res[R_TAINTS].hits, 1);
    /* One that taints the GPUs: the manifest's request tolerates no taint. */
    res[R_TAINTS].body = LIST("DeviceTaintRule", "resource.k8s.io/v1",
                              "{\"metadata\":{\"name\":\"maintenance\"},\"spec\":{\"deviceSelector\":"
                              "{\"driver\":\"gpu.example.com\"},\"taint\":{\"key\":\"m\","
                              "\"effect\":\"NoSchedule\"}}}");
    run(&r, api.kubeconfig, "-o", "json", NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "\"code\":\"DeviceTaintNotTolerated\"");
    assert_contains(r.out, "\"name\":\"two-gpus\"");
}

/* n1's two GPUs are held by claim `gpus`; the manifest's pod uses a claim of that name. */
static const char claim_manifest[] =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaim\n"
    "metadata: {name: %s, namespace: " NS "}\n"
    "spec:\n"
    "  devices:\n"
    "    requests:\n"
    "    - name: gpu\n"
    "      exactly: {deviceClassName: gpu.example.com, count: 2}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: trainer, namespace: " NS "}\n"
    "spec:\n"
    "  resourceClaims: [{name: gpus, resourceClaimName: %s}]\n"
    "  containers:\n"
    "  - {name: app, image: registry.k8s.io/pause:3.10, resources: {claims: [{name: gpus}]}}\n";

static void test_manifest_claim_replaces_cluster_claim(void **state)
{
    struct mock_run r;
    char text[2048];

    (void)state;
    reset(1);
    res[R_CLAIMS].body = LIST("ResourceClaim", "resource.k8s.io/v1",
                              HELD("gpus", "Pod", "v1", "old-trainer"));
    /* Re-applied: the manifest's claim is the cluster's; its devices are counted once. */
    snprintf(text, sizeof(text), claim_manifest, "gpus", "gpus");
    write_manifest(text);
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "1 object(s) replaced by the manifests");
    /* Another claim: the cluster's still holds n1's two GPUs, n2 has one. */
    snprintf(text, sizeof(text), claim_manifest, "gpus-2", "gpus-2");
    write_manifest(text);
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "DevicesDoNotFit");
    assert_contains(r.out, "0 object(s) replaced by the manifests");
}

/* A Deployment's running pod holds n1's GPUs through a claim made from its template. */
static const char deployment_manifest[] =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaimTemplate\n"
    "metadata: {name: two-gpus, namespace: " NS "}\n"
    "spec:\n"
    "  spec:\n"
    "    devices:\n"
    "      requests:\n"
    "      - name: gpu\n"
    "        exactly: {deviceClassName: gpu.example.com, count: 2}\n"
    "---\n"
    "apiVersion: apps/v1\n"
    "kind: Deployment\n"
    "metadata: {name: %s, namespace: " NS "}\n"
    "spec:\n"
    "  selector: {matchLabels: {app: t}}\n"
    "  template:\n"
    "    metadata: {labels: {app: t}}\n"
    "    spec:\n"
    "      resourceClaims: [{name: gpus, resourceClaimTemplateName: two-gpus}]\n"
    "      containers:\n"
    "      - {name: app, image: registry.k8s.io/pause:3.10, resources: {claims: [{name: gpus}]}}\n";

static void test_workload_frees_its_pods_claims(void **state)
{
    struct mock_run r;
    char text[2048];

    (void)state;
    reset(1);
    res[R_CLAIMS].body = LIST("ResourceClaim", "resource.k8s.io/v1",
                              HELD("trainer-7d9-x2k-gpus-abcde", "Pod", "v1", "trainer-7d9-x2k"));
    res[R_PODS].body = LIST("Pod", "v1",
                            "{\"metadata\":{\"name\":\"trainer-7d9-x2k\",\"namespace\":\"" NS "\","
                            "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                            "\"name\":\"trainer-7d9\",\"uid\":\"u2\",\"controller\":true}]},"
                            "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}");
    res[R_RS].body = LIST("ReplicaSet", "apps/v1",
                          "{\"metadata\":{\"name\":\"trainer-7d9\",\"namespace\":\"" NS "\","
                          "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                          "\"name\":\"trainer\",\"uid\":\"u3\",\"controller\":true}]}}");
    /* The running Deployment applied again: its pod's devices are its own. */
    snprintf(text, sizeof(text), deployment_manifest, "trainer");
    write_manifest(text);
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "1 claim(s) of pods they replace set aside");
    /* Another Deployment competes with it for n1's devices. */
    snprintf(text, sizeof(text), deployment_manifest, "evaluator");
    write_manifest(text);
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "Deployment " NS "/evaluator fits on no node");
    assert_contains(r.out, "0 claim(s) of pods they replace set aside");
}

static void test_dead_server(void **state)
{
    struct mock_run r;
    char kc[300];
    FILE *f;

    (void)state;
    write_manifest(pod_manifest);
    /* A port nothing listens on: the mock's, bound then closed, would race; port 1 is
     * privileged and unused here. */
    snprintf(kc, sizeof(kc), "%s/dead", api.dir);
    assert_non_null(f = fopen(kc, "w"));
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
               "    server: http://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n"
               "    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n"
               "    token: t\n");
    fclose(f);
    run(&r, kc, NULL);
    unlink(kc);
    assert_int_equal(r.status, 3);
    assert_contains(r.out, "dra-doctor lint: --cluster-inventory: cannot reach the API server "
                           "http://127.0.0.1:1 (GET /version)");
    assert_null(strstr(r.out, "DevicesDoNotFit"));
    /* A kubeconfig that is not there. */
    run(&r, "/nonexistent/kubeconfig", NULL);
    assert_int_equal(r.status, 3);
    assert_contains(r.out, "/nonexistent/kubeconfig");
}

static void test_refused(void **state)
{
    struct mock_run r;

    (void)state;
    write_manifest(pod_manifest);
    reset(0);
    res[R_SLICES].status = 403;
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 3);
    assert_contains(r.out, "LIST resourceslices (resource.k8s.io/v1) at ");
    assert_contains(r.out, api.server);
    assert_contains(r.out, "HTTP 403 Forbidden");
    assert_contains(r.out, "cannot list resource");
    assert_null(strstr(r.out, "DevicesDoNotFit"));
    reset(0);
    res[0].status = 401;
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 3);
    assert_contains(r.out, "GET /version at ");
    assert_contains(r.out, "HTTP 401 Unauthorized");
    assert_int_equal(res[R_NODES].hits, 0);
    /* Kubernetes before 1.34: no resource.k8s.io/v1. */
    reset(0);
    res[1].status = 404;
    run(&r, api.kubeconfig, NULL);
    assert_int_equal(r.status, 3);
    assert_contains(r.out, "dra-doctor needs resource.k8s.io/v1");
    assert_int_equal(res[R_NODES].hits, 0);
    reset(0);
}

/* A kubeconfig whose user is an exec plugin (EKS, GKE, AKS): the plugin is run and its
 * credential used; a plugin that fails is a cluster that cannot be read (exit 3). */
static void test_exec_plugin(void **state)
{
    char kc[128], plugin[128], runs[128];
    struct mock_run r;
    FILE *f;

    (void)state;
    reset(0);
    write_manifest(pod_manifest);
    snprintf(plugin, sizeof(plugin), "%s/get-token", api.dir);
    snprintf(runs, sizeof(runs), "%s/runs", api.dir);
    snprintf(kc, sizeof(kc), "%s/exec.kubeconfig", api.dir);
    assert_non_null(f = fopen(plugin, "w"));
    fprintf(f, "#!/bin/sh\necho \"$1 $DD_CLUSTER\" >> \"$(dirname \"$0\")/runs\"\n"
               "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":"
               "\"client.authentication.k8s.io/v1\",\"status\":{\"token\":\"t\"}}'\n");
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(plugin, 0700), 0);
    assert_non_null(f = fopen(kc, "w"));
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
               "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
               "users:\n- name: u\n  user:\n    exec:\n"
               "      apiVersion: client.authentication.k8s.io/v1\n"
               "      command: ./get-token\n      args: [get-token]\n"
               "      env: [{name: DD_CLUSTER, value: prod}]\n"
               "      interactiveMode: Never\n", api.server);
    assert_int_equal(fclose(f), 0);
    run(&r, kc, NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "Pod " NS "/trainer fits on no node");
    assert_non_null(f = fopen(runs, "r"));
    {
        char line[64] = "";
        assert_non_null(fgets(line, sizeof(line), f));
        assert_string_equal(line, "get-token prod\n");
    }
    fclose(f);
    assert_non_null(f = fopen(plugin, "w"));
    fprintf(f, "#!/bin/sh\necho 'token expired: run aws sso login' >&2\nexit 255\n");
    assert_int_equal(fclose(f), 0);
    run(&r, kc, NULL);
    assert_int_equal(r.status, 3);
    assert_contains(r.out, "aws sso login");
    assert_contains(r.out, "exited with status 255");
    assert_null(strstr(r.out, "DevicesDoNotFit"));
    unlink(plugin);
    unlink(runs);
    unlink(kc);
}

static void test_usage(void **state)
{
    const char *bin = getenv("DD_BIN");
    char cmd[1024];

    (void)state;
    assert_non_null(bin);
    snprintf(cmd, sizeof(cmd), "%s lint --kubeconfig %s %s >/dev/null 2>&1", bin, api.kubeconfig,
             manifest);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

static int setup(void **state)
{
    static struct httpd_route routes[NRES]; /* the server keeps them */
    size_t i;

    (void)state;
    res_taints_default = res[R_TAINTS].body;
    for (i = 0; i < NRES; i++) {
        routes[i].path = res[i].path;
        routes[i].fn = handler;
        routes[i].ctx = &res[i];
        routes[i].content_type = NULL;
    }
    if (mock_api_start(&api, "lint-cluster", routes, NRES))
        return -1;
    snprintf(manifest, sizeof(manifest), "%s/app.yaml", api.dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(manifest);
    mock_api_stop(&api);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_does_not_fit),
        cmocka_unit_test(test_fixed_twin_clean),
        cmocka_unit_test(test_manifest_claim_replaces_cluster_claim),
        cmocka_unit_test(test_workload_frees_its_pods_claims),
        cmocka_unit_test(test_dead_server),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_exec_plugin),
        cmocka_unit_test(test_usage),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
