/*
 * e2e_explain.c - `dra-doctor explain` against the real control plane: a
 * DeviceClass and a ResourceSlice that kube-apiserver accepted, a claim whose
 * request selector is false on one device and fails on another, and a pod using
 * it that the real scheduler cannot place.  explain must say which device
 * matched, why each other did not (the sub-expression and its value), that the
 * runtime error aborts allocation, in text and in JSON; and the scheduler's own
 * message must be the runtime error explain points at.
 */
#include "harness.h"

#include "e2e.h"
#include "model/kubever.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define NS "dd-explain"

static const char objects[] =
    "apiVersion: v1\n"
    "kind: Namespace\n"
    "metadata: {name: " NS "}\n"
    "---\n"
    "apiVersion: resource.k8s.io/v1\n"
    "kind: DeviceClass\n"
    "metadata: {name: explain.example.com}\n"
    "spec:\n"
    "  selectors:\n"
    "  - cel: {expression: \"device.driver == 'explain.example.com'\"}\n"
    "---\n"
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceSlice\n"
    "metadata: {name: dd-explain-slice}\n"
    "spec:\n"
    "  driver: explain.example.com\n"
    "  allNodes: true\n"
    "  pool: {name: explain-pool, generation: 1, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - name: dev-a\n"
    "    attributes:\n"
    "      model: {string: LATEST-GPU-MODEL}\n"
    "      index: {int: 1}\n"
    "  - name: dev-b\n"
    "    attributes:\n"
    "      model: {string: H100}\n"
    "      index: {int: 0}\n"
    "---\n"
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaim\n"
    "metadata: {name: gpu, namespace: " NS "}\n"
    "spec:\n"
    "  devices:\n"
    "    requests:\n"
    "    - name: gpu\n"
    "      exactly:\n"
    "        deviceClassName: explain.example.com\n"
    "        selectors:\n"
    "        - cel: {expression: \"device.attributes['explain.example.com'].model == 'H100' && "
    "10 / device.attributes['explain.example.com'].index > 1\"}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: p, namespace: " NS "}\n"
    "spec:\n"
    "  resourceClaims: [{name: gpu, resourceClaimName: gpu}]\n"
    "  containers:\n"
    "  - name: c\n"
    "    image: registry.k8s.io/pause:3.10\n"
    "    resources: {claims: [{name: gpu}]}\n";

static int setup(void **state)
{
    FILE *f = fopen("build/e2e-explain.yaml", "w");

    (void)state;
    if (!f || fputs(objects, f) < 0 || fclose(f))
        return -1;
    if (sh("kubectl apply -f build/e2e-explain.yaml 2>&1")) {
        fprintf(stderr, "kubectl apply: %s\n", out);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("kubectl delete -f build/e2e-explain.yaml --wait=false 2>&1");
    return 0;
}

static void explains_each_device(void **state)
{
    const char *bin = getenv("DD_BIN");
    int rc;

    (void)state;
    assert_non_null(bin);
    rc = sh("%s explain pod p -n " NS " 2>&1", bin);
    /* dev-a: the model decides (false, the division never runs: && absorbs it). */
    assert_contains(out, "dev-a");
    assert_contains(out, "device.attributes[\"explain.example.com\"].model == \"H100\" is false: "
                         "device.attributes[\"explain.example.com\"].model is "
                         "\"LATEST-GPU-MODEL\"");
    /* dev-b: the model matches, and 10 / 0 aborts the scheduler's allocation. */
    assert_contains(out, "dev-b");
    assert_contains(out, "ERROR (the scheduler aborts the allocation): "
                         "10 / device.attributes[\"explain.example.com\"].index fails: division by "
                         "zero: device.attributes[\"explain.example.com\"].index is 0");
    assert_contains(out, "0 of 2 device(s) can serve this request");
    assert_int_equal(rc, 1);
}

static void json_output(void **state)
{
    const char *bin = getenv("DD_BIN");
    cJSON *doc, *devs, *d;
    int seen = 0;

    (void)state;
    assert_int_equal(sh("%s explain claim gpu -n " NS " -o json 2>/dev/null", bin), 1);
    assert_non_null(doc = cJSON_Parse(out));
    devs = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(doc, 0),
                                                                      "requests"), 0), "devices");
    cJSON_ArrayForEach(d, devs) {
        const cJSON *sel = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "selectors"), 1);
        const char *name = cJSON_GetObjectItem(d, "device")->valuestring;
        assert_false(cJSON_IsTrue(cJSON_GetObjectItem(d, "matches")));
        assert_string_equal(cJSON_GetObjectItem(sel, "result")->valuestring,
                            !strcmp(name, "dev-a") ? "false" : "error");
        seen++;
    }
    assert_int_equal(seen, 2);
    cJSON_Delete(doc);
}

/* The real scheduler reports the runtime error explain shows, in the words dra-doctor quotes
 * for the cluster's release (lib/model/kubever.c; 1.37 names the device). */
static void scheduler_agrees(void **state)
{
    const char *ver = getenv("DD_K8S_VERSION");
    time_t end = time(NULL) + 90;
    char want[512];

    (void)state;
    assert_non_null(ver);
    kv_cel_runtime_text(kv_minor_of(ver), NULL, NS "/gpu", 0, "explain.example.com",
                        "explain-pool", "dev-b", "division by zero", want, sizeof(want));
    for (;;) {
        sh("kubectl get events -n " NS " --field-selector involvedObject.name=p -o json 2>&1");
        if (strstr(out, want)) {
            printf("  the scheduler: %s\n", want);
            sh("%s lint --kube-version %s build/e2e-explain.yaml 2>&1", getenv("DD_BIN"), ver);
            assert_contains(out, "error[SelectorRuntimeError]");
            assert_contains(out, want);
            return;
        }
        if (time(NULL) > end)
            fail_msg("no scheduler event with \"%s\": %s", want, out);
        sleep(2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(explains_each_device),
        cmocka_unit_test(json_output),
        cmocka_unit_test(scheduler_agrees),
    };
    return cmocka_run_group_tests_name("e2e-explain", tests, setup, teardown);
}
