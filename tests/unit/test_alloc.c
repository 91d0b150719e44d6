/*
 * test_alloc.c - lib/model/alloc and lib/model/allocsnap: the allocation cases of
 * tests/data/alloc (each node's verdict as Kubernetes' allocator gives it - `make
 * test-differential` checks the stated verdicts against e2e/peers/allocoracle - and the
 * words of the explanation), also from objects trimmed as the live caches keep them, the gates,
 * the snapshot a model emits, and cost linear in the devices.
 */
#include "harness.h"

#include <dirent.h>
#include <time.h>

#include "cel/cel.h"
#include "model/alloc.h"
#include "model/allocsnap.h"
#include "model/dra.h"
#include "model/keep.h"
#include "formats/json.h"

#define CASES "tests/data/alloc"

struct loaded {
    cJSON *snap;
    struct dra_model m;
    struct alloc_options opt;
    struct alloc_inventory *inv;
    struct alloc_result r;
};

static void load(struct loaded *l, cJSON *snap)
{
    struct dd_err err;
    const struct dra_podspec *pod;

    memset(l, 0, sizeof(*l));
    l->snap = snap;
    dra_model_init(&l->m, NULL, NULL);
    if (asnap_load(snap, &l->m, &l->opt, &err) != DD_OK)
        fail_msg("asnap_load: %s", err.msg);
    assert_int_equal(dra_model_finish(&l->m), DD_OK);
    assert_non_null(pod = asnap_pod(&l->m));
    assert_non_null(l->inv = alloc_inventory_new(&l->m, &l->opt, &err));
    assert_int_equal(alloc_pod(l->inv, pod, 1, &l->r, &err), DD_OK);
}

static void unload(struct loaded *l)
{
    alloc_result_release(&l->r);
    alloc_inventory_free(l->inv);
    dra_model_release(&l->m);
    cJSON_Delete(l->snap);
}

static const char *word(enum alloc_verdict v)
{
    return v == ALLOC_FIT ? "fit" : v == ALLOC_UNSCHEDULABLE ? "unschedulable" : "error";
}

/* The list attributes of some cases need the CEL environment of their gates. */
static void cel_for(const cJSON *snap)
{
    struct cel_env env = CEL_ENV_DEFAULT;

    if (cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "gates"),
                                         "DRAListTypeAttributes")))
        env.features |= CEL_FEATURE_LIST_ATTRIBUTES;
    assert_int_equal(cel_set_default_env(&env), DD_OK);
}

/* first_fit judges the nodes in the same order and stops after the first that fits: the
 * same verdicts up to it, and a fit exactly when the full search finds one. */
static void check_first_fit(const char *path, const struct loaded *full)
{
    struct alloc_options opt = full->opt;
    struct alloc_inventory *inv;
    struct alloc_result r;
    struct dd_err err;
    size_t i, first;
    int late;

    opt.first_fit = 1;
    assert_non_null(inv = alloc_inventory_new(&full->m, &opt, &err));
    assert_int_equal(alloc_pod(inv, asnap_pod(&full->m), 0, &r, &err), DD_OK);
    /* It stops at the first node that fits or errs (an error binds the pod nowhere). */
    for (first = 0; first < full->r.nnodes; first++)
        if (full->r.nodes[first].verdict != ALLOC_UNSCHEDULABLE && !full->r.nodes[first].pod_filter)
            break;
    /* An error after the first fit is what first_fit does not see (alloc.h). */
    for (i = first + 1, late = 0; first < full->r.nnodes && i < full->r.nnodes; i++)
        late |= full->r.nodes[first].verdict == ALLOC_FIT &&
                full->r.nodes[i].verdict == ALLOC_ERROR && !full->r.nodes[i].pod_filter;
    if (r.nfit != (full->r.nfit || late ? 1u : 0u))
        fail_msg("%s: first_fit found %zu fitting nodes, the full search %zu", path, r.nfit,
                 full->r.nfit);
    assert_int_equal(r.nnodes, first < full->r.nnodes ? first + 1 : full->r.nnodes);
    for (i = 0; i < r.nnodes; i++) {
        assert_ptr_equal(r.nodes[i].node, full->r.nodes[i].node);
        if (r.nodes[i].verdict != full->r.nodes[i].verdict)
            fail_msg("%s: node %s: %s with first_fit, %s without", path, r.nodes[i].node->name,
                     word(r.nodes[i].verdict), word(full->r.nodes[i].verdict));
    }
    if (r.nfit)
        assert_true(r.nodes[r.nnodes - 1].verdict == ALLOC_FIT && !r.nodes[r.nnodes - 1].pod_filter);
    assert_int_equal(r.deallocate, full->r.deallocate);
    alloc_result_release(&r);
    alloc_inventory_free(inv);
}

/*
 * The live caches keep objects trimmed to what is read (lib/model/keep): the controller's by
 * keep_trim, the webhook's by keep_trim_admission, which also keeps of a claim's
 * status.reservedFor only whether it is empty.  A pod being created is in no claim's list,
 * and then that is all the allocator can tell claims apart by.  Every case whose pod is in
 * no list gets the same answer, node by node, from its nodes, slices, classes, claims and pod
 * so trimmed: nothing the allocator reads is trimmed away.
 */
static void check_cached_trim(const char *path, const struct loaded *whole)
{
    static const char *const lists[] = { "nodes", "slices", "classes", "claims" };
    cJSON *snap = cJSON_Duplicate(whole->snap, 1), *it; /* typed by the first load */
    const char *uid = dd_json_str(cJSON_GetObjectItem(snap, "pod"), "metadata", "uid", NULL);
    struct loaded l;
    size_t i;

    assert_non_null(snap);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(snap, "claims")) {
        const cJSON *r;
        cJSON_ArrayForEach(r, dd_json_arr(it, "status", "reservedFor", NULL))
            if (uid && dd_json_str(r, "uid", NULL) && !strcmp(uid, dd_json_str(r, "uid", NULL))) {
                cJSON_Delete(snap);
                return;
            }
    }
    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(snap, lists[i]))
            keep_trim_admission(it);
    keep_trim(cJSON_GetObjectItem(snap, "pod"));
    load(&l, snap);
    if (l.r.verdict != whole->r.verdict || l.r.nfit != whole->r.nfit ||
        l.r.deallocate != whole->r.deallocate || l.r.nnodes != whole->r.nnodes)
        fail_msg("%s: objects trimmed as cached: %s on %zu node(s), deallocate %ld; whole: %s "
                 "on %zu, deallocate %ld", path, word(l.r.verdict), l.r.nfit, l.r.deallocate,
                 word(whole->r.verdict), whole->r.nfit, whole->r.deallocate);
    for (i = 0; i < l.r.nnodes; i++)
        if (l.r.nodes[i].verdict != whole->r.nodes[i].verdict)
            fail_msg("%s: node %s: %s from objects trimmed as cached, %s whole", path,
                     l.r.nodes[i].node->name, word(l.r.nodes[i].verdict),
                     word(whole->r.nodes[i].verdict));
    unload(&l);
}

static void check_case(const char *path)
{
    char *text = test_read_file(path), why[2048];
    cJSON *snap = cJSON_Parse(text), *expect, *en;
    struct loaded l;
    size_t i = 0;

    free(text);
    if (!snap)
        fail_msg("%s: not JSON", path);
    expect = cJSON_DetachItemFromObject(snap, "expect");
    assert_non_null(expect);
    cel_for(snap);
    load(&l, snap);
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(expect, "status")),
               l.r.verdict == ALLOC_FIT ? "ok" : word(l.r.verdict)))
        fail_msg("%s: pod %s (%s)", path, word(l.r.verdict), l.r.reason ? l.r.reason : "");
    cJSON_ArrayForEach(en, cJSON_GetObjectItem(expect, "nodes")) {
        const struct alloc_node *n = &l.r.nodes[i++];
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(en, "status"));
        const char *w = cJSON_GetStringValue(cJSON_GetObjectItem(en, "why"));
        const char *pf = cJSON_GetStringValue(cJSON_GetObjectItem(en, "podFilter"));
        assert_true(i <= l.r.nnodes);
        assert_string_equal(n->node->name, cJSON_GetStringValue(cJSON_GetObjectItem(en, "node")));
        alloc_why_text(&l.r, n, why, sizeof(why));
        if (strcmp(st, word(n->verdict)))
            fail_msg("%s: node %s: %s (%s), stated %s", path, n->node->name, word(n->verdict),
                     why, st);
        if (w && !strstr(why, w))
            fail_msg("%s: node %s: \"%s\" does not say \"%s\"", path, n->node->name, why, w);
        if (pf)
            assert_contains(n->pod_filter, pf);
        else
            assert_null(n->pod_filter);
        if (n->verdict == ALLOC_FIT) {
            size_t k, todo = 0;
            for (k = 0; k < l.r.nclaims; k++)
                todo += !l.r.claims[k]->allocated;
            if (todo && !n->npicks)
                fail_msg("%s: node %s fits with no device", path, n->node->name);
        } else if (strlen(why) < 10) {
            fail_msg("%s: node %s: no words", path, n->node->name);
        }
    }
    assert_int_equal(i, l.r.nnodes);
    /* Where the pod can be bound, and what PostFilter deallocates, when the case says. */
    if ((en = cJSON_GetObjectItem(expect, "fits"))) {
        const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(expect, "deallocate"));
        if (l.r.nfit != (size_t)cJSON_GetNumberValue(en))
            fail_msg("%s: fits on %zu node(s), stated %g", path, l.r.nfit, cJSON_GetNumberValue(en));
        if (!d) {
            assert_int_equal(l.r.deallocate, -1);
        } else {
            char key[512];
            assert_true(l.r.deallocate >= 0);
            snprintf(key, sizeof(key), "%s/%s", l.r.claims[l.r.deallocate]->o.ns,
                     l.r.claims[l.r.deallocate]->o.name);
            assert_string_equal(key, d);
        }
    }
    check_first_fit(path, &l);
    check_cached_trim(path, &l);
    cJSON_Delete(expect);
    unload(&l);
    cel_for(NULL);
}

static void test_cases(void **state)
{
    DIR *d = opendir(CASES);
    struct dirent *e;
    size_t n = 0;
    char path[512];

    (void)state;
    assert_non_null(d);
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".json"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", CASES, e->d_name);
        check_case(path);
        n++;
    }
    closedir(d);
    /* The eight shapes and their fixed twins, and the feature cases. */
    assert_true(n >= 40);
}

static void test_gates(void **state)
{
    struct alloc_gates g;
    struct dd_err err;

    (void)state;
    alloc_gates_default(&g);
    assert_true(g.consumable_capacity && g.partitionable_devices && g.device_taints);
    assert_false(g.list_type_attributes || g.compatibility_groups);
    assert_string_equal(alloc_gates_variant(&g), "incubating");
    assert_int_equal(alloc_gates_parse(&g, "DRAListTypeAttributes=true,SomethingElse=false", &err),
                     DD_OK);
    assert_string_equal(alloc_gates_variant(&g), "experimental");
    alloc_gates_default(&g);
    assert_int_equal(alloc_gates_parse(&g, "DRAConsumableCapacity=false,"
                                           "DRADeviceBindingConditions=false,"
                                           "DRAFractionalCapacityRange=false", &err), DD_OK);
    assert_string_equal(alloc_gates_variant(&g), "stable");
    assert_int_equal(alloc_gates_parse(&g, "DRAAdminAccess", &err), DD_EINVAL);
    assert_contains(err.msg, "NAME=true|false");
    assert_int_equal(alloc_gates_parse(&g, "DRAAdminAccess=yes", &err), DD_EINVAL);
    assert_int_equal(alloc_gates_set(&g, "NotAGate", 1), -1);
}

static cJSON *answer_of(cJSON *snap)
{
    struct loaded l;
    cJSON *a;

    load(&l, snap);
    a = asnap_answer(&l.r, "x");
    unload(&l);
    return a;
}

/* A model's snapshot says what the snapshot it came from says, templates generated. */
static void test_emit(void **state)
{
    static const char *const files[] = {CASES "/06-two-claims-one-gpu.json",
                                        CASES "/f09-consumable-capacity.json",
                                        CASES "/f25-generated-claim.json"};
    char why[512];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char *text = test_read_file(files[i]);
        cJSON *snap = cJSON_Parse(text), *a, *b, *again;
        struct loaded l;

        free(text);
        cJSON_DeleteItemFromObject(snap, "expect");
        a = answer_of(cJSON_Duplicate(snap, 1));
        load(&l, snap);
        again = asnap_emit(&l.m, asnap_pod(&l.m), &l.opt, "again");
        assert_non_null(again);
        unload(&l);
        b = answer_of(again);
        if (asnap_compare(a, b, ASNAP_PICKS, NULL, why, sizeof(why)))
            fail_msg("%s: %s", files[i], why);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}

/* A template's claim not generated yet: the scheduler waits for it; lint may assume it. */
static void test_template_as_claim(void **state)
{
    static const char doc[] =
        "{\"nodes\":[{\"metadata\":{\"name\":\"n\"}}],"
        "\"slices\":[{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.example.com\","
        "\"nodeName\":\"n\",\"pool\":{\"name\":\"n\",\"generation\":1,\"resourceSliceCount\":1},"
        "\"devices\":[{\"name\":\"gpu-0\"}]}}],"
        "\"classes\":[{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"selectors\":[{\"cel\":"
        "{\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}],"
        "\"pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"resourceClaims\":"
        "[{\"name\":\"g\",\"resourceClaimTemplateName\":\"t\"}]}}}";
    static const char tmpl[] =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":"
        "{\"name\":\"t\",\"namespace\":\"d\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":"
        "[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu\",\"count\":%d}}]}}}}";
    char buf[512];

    (void)state;
    for (int count = 1; count <= 2; count++) {
        cJSON *snap = cJSON_Parse(doc), *t;
        struct dra_model m;
        struct alloc_options opt;
        struct alloc_inventory *inv;
        struct alloc_result r;
        struct dd_err err;

        snprintf(buf, sizeof(buf), tmpl, count);
        t = cJSON_Parse(buf);
        dra_model_init(&m, NULL, NULL);
        assert_int_equal(asnap_load(snap, &m, &opt, &err), DD_OK);
        assert_int_equal(dra_model_add(&m, t, NULL, 0), DD_OK);
        assert_int_equal(dra_model_finish(&m), DD_OK);
        inv = alloc_inventory_new(&m, &opt, &err);
        assert_int_equal(alloc_pod(inv, asnap_pod(&m), 0, &r, &err), DD_OK);
        assert_int_equal(r.verdict, ALLOC_UNSCHEDULABLE);
        assert_contains(r.reason, "waiting for the ResourceClaim");
        alloc_result_release(&r);
        alloc_inventory_free(inv);
        opt.templates_as_claims = 1;
        inv = alloc_inventory_new(&m, &opt, &err);
        assert_int_equal(alloc_pod(inv, asnap_pod(&m), 1, &r, &err), DD_OK);
        assert_int_equal(r.verdict, ALLOC_FIT);
        assert_int_equal(r.nodes[0].verdict, count == 1 ? ALLOC_FIT : ALLOC_UNSCHEDULABLE);
        assert_int_equal(r.nfit, count == 1);
        if (count == 2) {
            alloc_why_text(&r, &r.nodes[0], buf, sizeof(buf));
            assert_contains(buf, "claim t, request r asks for 2 devices of class gpu");
        }
        alloc_result_release(&r);
        alloc_inventory_free(inv);
        dra_model_release(&m);
        cJSON_Delete(t);
        cJSON_Delete(snap);
    }
}

/* nodes nodes of devs devices each, a claim for two devices with a constraint. */
static cJSON *cluster(int nodes, int devs)
{
    cJSON *snap = cJSON_CreateObject(), *ns = cJSON_AddArrayToObject(snap, "nodes");
    cJSON *sl = cJSON_AddArrayToObject(snap, "slices"), *cl, *claims, *pod;
    char buf[512];

    for (int i = 0; i < nodes; i++) {
        cJSON *s, *d;
        snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"node-%d\"}}", i);
        cJSON_AddItemToArray(ns, cJSON_Parse(buf));
        snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"s-%d\"},\"spec\":{\"driver\":"
                 "\"gpu.example.com\",\"nodeName\":\"node-%d\",\"pool\":{\"name\":\"node-%d\","
                 "\"generation\":1,\"resourceSliceCount\":1},\"devices\":[]}}", i, i, i);
        s = cJSON_Parse(buf);
        d = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "spec"), "devices");
        for (int k = 0; k < devs; k++) {
            snprintf(buf, sizeof(buf), "{\"name\":\"gpu-%d\",\"attributes\":{\"root\":"
                     "{\"string\":\"r%d\"}}}", k, k);
            cJSON_AddItemToArray(d, cJSON_Parse(buf));
        }
        cJSON_AddItemToArray(sl, s);
    }
    cl = cJSON_AddArrayToObject(snap, "classes");
    cJSON_AddItemToArray(cl, cJSON_Parse("{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"selectors\":"
                                         "[{\"cel\":{\"expression\":\"device.driver == "
                                         "'gpu.example.com'\"}}]}}"));
    claims = cJSON_AddArrayToObject(snap, "claims");
    cJSON_AddItemToArray(claims, cJSON_Parse(
        "{\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"},\"spec\":{\"devices\":{\"requests\":"
        "[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu\",\"count\":2}}],\"constraints\":"
        "[{\"matchAttribute\":\"gpu.example.com/root\"}]}}}"));
    pod = cJSON_Parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":"
                      "{\"resourceClaims\":[{\"name\":\"c\",\"resourceClaimName\":\"c\"}]}}");
    cJSON_AddItemToObject(snap, "pod", pod);
    return snap;
}

static double cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The least CPU time of a few runs of one pod on the cluster (each node fails: no two
 * devices share a root, so every node is searched through and explained). */
static double time_pod(int nodes, int devs)
{
    struct loaded l;
    double best = 1e9;

    load(&l, cluster(nodes, devs));
    assert_int_equal(l.r.nfit, 0);
    for (int k = 0; k < 5; k++) {
        struct alloc_result r;
        struct dd_err err;
        double t0 = cpu_seconds();
        assert_int_equal(alloc_pod(l.inv, asnap_pod(&l.m), 1, &r, &err), DD_OK);
        if (cpu_seconds() - t0 < best)
            best = cpu_seconds() - t0;
        alloc_result_release(&r);
    }
    unload(&l);
    return best;
}

/* Cost grows with the devices, not faster: four times the nodes, or four times the devices
 * per node, take well under sixteen times as long (a ratio of two sizes in one run). */
static void test_scaling(void **state)
{
    double small = time_pod(50, 8), wide = time_pod(200, 8), deep = time_pod(50, 32);

    (void)state;
    if (wide > 8 * small)
        fail_msg("4x the nodes took %.1fx the time (%.6f s, %.6f s)", wide / small, small, wide);
    /* Pairs within a node grow as devices squared (upstream's search tries them); the
     * constraint rejects each at once, so the step stays small. */
    if (deep > 24 * small)
        fail_msg("4x the devices per node took %.1fx the time (%.6f s, %.6f s)", deep / small,
                 small, deep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_gates),
        cmocka_unit_test(test_emit),
        cmocka_unit_test(test_template_as_claim),
        cmocka_unit_test(test_scaling),
    };
    return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
