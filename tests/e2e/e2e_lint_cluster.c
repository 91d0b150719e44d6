/*
 * e2e_lint_cluster.c - `dra-doctor lint --cluster-inventory` against the real control plane:
 * the shape two-nodes-one-gpu-each of tests/data/lint/alloc, its two Nodes (plain API
 * objects: no kubelet runs them, as the many nodes of a real cluster cannot run here), their
 * ResourceSlices and the DeviceClass applied to kube-apiserver; the pod and its claim
 * template only in a manifest, never applied.  lint must report DevicesDoNotFit as an error
 * on the manifest's pod (file:line), judged against this server's inventory; once n1's slice
 * publishes a second device (the fixed twin, applied over the first), the same manifest is
 * clean.  Everything applied is deleted again.
 */
#include "harness.h"

#include "e2e.h"

#include <stdlib.h>
#include <unistd.h>

#define CLUSTER_FILE "build/e2e-lint-cluster.yaml"
#define MANIFEST "build/e2e-lint-cluster-pod.yaml"

#define SLICE(n, devs) \
    "---\n" \
    "apiVersion: resource.k8s.io/v1\n" \
    "kind: ResourceSlice\n" \
    "metadata: {name: dd-lci-" n "-gpu}\n" \
    "spec:\n" \
    "  driver: lci.example.com\n" \
    "  nodeName: dd-lci-" n "\n" \
    "  pool: {name: dd-lci-" n ", generation: 1, resourceSliceCount: 1}\n" \
    "  devices:\n" devs
#define DEV(i) \
    "  - name: gpu-" #i "\n" \
    "    attributes: {model: {string: A}, index: {int: " #i "}}\n"
#define NODE(n) \
    "---\n" \
    "apiVersion: v1\n" \
    "kind: Node\n" \
    "metadata:\n" \
    "  name: dd-lci-" n "\n" \
    "  labels: {kubernetes.io/hostname: dd-lci-" n ", dd-lint-cluster: \"1\"}\n"

/* The cluster's part: the slices before the class, whose selector names their driver. */
static const char broken[] = NODE("n1") NODE("n2") SLICE("n1", DEV(0)) SLICE("n2", DEV(0))
    "---\n"
    "apiVersion: resource.k8s.io/v1\n"
    "kind: DeviceClass\n"
    "metadata: {name: lci.example.com}\n"
    "spec:\n"
    "  selectors:\n"
    "  - cel: {expression: \"device.driver == 'lci.example.com'\"}\n";

static const char fixed_slice[] = SLICE("n1", DEV(0) DEV(1));

/* The manifest's part: the pod (line 11) tolerates the taints Nodes without a kubelet get. */
static const char manifest[] =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaimTemplate\n"
    "metadata: {name: two-gpus, namespace: dd-lint-cluster}\n"
    "spec:\n"
    "  spec:\n"
    "    devices:\n"
    "      requests:\n"
    "      - name: gpu\n"
    "        exactly: {deviceClassName: lci.example.com, count: 2}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: trainer, namespace: dd-lint-cluster}\n"
    "spec:\n"
    "  tolerations: [{operator: Exists}]\n"
    "  resourceClaims: [{name: gpus, resourceClaimTemplateName: two-gpus}]\n"
    "  containers:\n"
    "  - name: app\n"
    "    image: registry.k8s.io/pause:3.10\n"
    "    resources: {claims: [{name: gpus}]}\n";

static int put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    return !f || fputs(text, f) < 0 || fclose(f) ? -1 : 0;
}

static int setup(void **state)
{
    (void)state;
    if (put(CLUSTER_FILE, broken) || put(MANIFEST, manifest))
        return -1;
    if (sh("kubectl apply -f " CLUSTER_FILE " 2>&1")) {
        fprintf(stderr, "kubectl apply: %s\n", out);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("kubectl delete -f " CLUSTER_FILE " --ignore-not-found --wait=false 2>&1");
    unlink(CLUSTER_FILE);
    unlink(MANIFEST);
    return 0;
}

static void does_not_fit_then_fits(void **state)
{
    const char *bin = getenv("DD_BIN"), *kc = getenv("KUBECONFIG");
    char server[256];
    int rc;

    (void)state;
    assert_non_null(bin);
    assert_non_null(kc);
    assert_int_equal(sh("kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'"),
                     0);
    snprintf(server, sizeof(server), "server %.200s, Kubernetes v1.", out);
    rc = sh("%s lint --cluster-inventory --color=never " MANIFEST " 2>&1", bin);
    assert_contains(out, "Pod dd-lint-cluster/trainer (" MANIFEST ":11)");
    assert_contains(out, "error[DevicesDoNotFit]: Pod dd-lint-cluster/trainer fits on no node: "
                         "dd-lci-n1, dd-lci-n2: claim two-gpus, request gpu asks for 2 devices "
                         "of class lci.example.com");
    assert_contains(out, "Judged against the live cluster's inventory (");
    assert_contains(out, server);
    /* The class exists only in the cluster; nothing is reported on the cluster's objects. */
    assert_null(strstr(out, "DeviceClassNotFound"));
    assert_null(strstr(out, "ResourceSlice dd-lci"));
    assert_int_equal(rc, 1);

    /* The fixed twin: n1 publishes two devices. */
    assert_int_equal(put(CLUSTER_FILE ".fixed", fixed_slice), 0);
    rc = sh("kubectl apply -f " CLUSTER_FILE ".fixed 2>&1");
    unlink(CLUSTER_FILE ".fixed");
    assert_int_equal(rc, 0);
    rc = sh("%s lint --cluster-inventory -o json " MANIFEST " 2>/dev/null", bin);
    assert_contains(out, "\"findings\":[]");
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(does_not_fit_then_fits),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
