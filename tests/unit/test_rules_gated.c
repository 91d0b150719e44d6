/*
 * test_rules_gated.c - features that come with feature gates: ExtendedResourceNotBacked,
 * ExtendedResourceConflict (DRAExtendedResource), BindingConditionsNotMet
 * (DRADeviceBindingConditions).
 */
#include "rules_fixtures.h"
#include "model/keep.h"
#include "model/kubever.h"

#define XPOD(res)                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"t\"}," \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\",\"resources\":{"         \
    "\"limits\":{\"cpu\":\"1\",\"" res "\":\"1\"}}}]}}"
#define XCLASS(name, ern, ts)                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"" \
    name "\",\"creationTimestamp\":\"" ts "\"},\"spec\":{\"extendedResourceName\":\"" ern "\","  \
    "\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}"
#define XNODE(name, alloc)                                                                     \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\"},\"status\":"  \
    "{\"allocatable\":{\"cpu\":\"8\"" alloc "}}}"

static void extended_not_backed(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    struct kv_gates g;
    const struct dd_finding *f;
    (void)state;

    /* A Node that does not advertise it, no class mapping it: nothing can serve it. */
    snap_load(&s, objs("[%s,%s]", XPOD("example.com/gpu"), XNODE("n1", "")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 1);
    f = snap_get(&s, "ExtendedResourceNotBacked");
    assert_string_equal(f->obj.kind, "Pod");
    assert_contains(f->message, "Insufficient example.com/gpu");
    snap_free(&s);
    /* A class maps it, or a device plugin advertises it, or nothing tells (no Nodes). */
    snap_load(&s, objs("[%s,%s,%s]", XPOD("example.com/gpu"), XNODE("n1", ""),
                       XCLASS("gpu", "example.com/gpu", "2026-01-01T00:00:00Z")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 0);
    /* 1.35 drops extendedResourceName (DRAExtendedResource off). */
    kv_gates_init(&g, 35);
    o.kube_minor = 35;
    o.gates = &g;
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 1);
    assert_contains(snap_get(&s, "ExtendedResourceNotBacked")->message,
                    "DRAExtendedResource off (1.35's default)");
    o.kube_minor = 0;
    o.gates = NULL;
    snap_free(&s);
    snap_load(&s, objs("[%s,%s]", XPOD("example.com/gpu"), XNODE("n1", ",\"example.com/gpu\":\"4\"")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 0);
    snap_free(&s);
    snap_load(&s, objs("[%s]", XPOD("example.com/gpu")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 0);
    snap_free(&s);
    /* DRA's implicit name: the class must exist. */
    snap_load(&s, objs("[%s,%s]", XPOD("deviceclass.resource.kubernetes.io/gpu"), XNODE("n1", "")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 1);
    snap_free(&s);
    snap_load(&s, objs("[%s,%s,%s]", XPOD("deviceclass.resource.kubernetes.io/gpu"),
                       XNODE("n1", ""), XCLASS("gpu", "example.com/gpu", "2026-01-01T00:00:00Z")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceNotBacked"), 0);
    snap_free(&s);
    /* Native resources are no extended ones. */
    assert_false(dra_extended_resource_name("cpu"));
    assert_false(dra_extended_resource_name("hugepages-2Mi"));
    assert_false(dra_extended_resource_name("kubernetes.io/batch-cpu"));
    assert_true(dra_extended_resource_name("nvidia.com/gpu"));
}

/* json's objects as the live cache keeps them (lib/model/keep), as JSON text (owned). */
static char *kept(const char *json)
{
    cJSON *all = cJSON_Parse(json), *it;
    char *out;

    assert_non_null(all);
    cJSON_ArrayForEach(it, all)
        keep_trim(it);
    out = cJSON_PrintUnformatted(all);
    cJSON_Delete(all);
    assert_non_null(out);
    return out;
}

static void extended_conflict(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    const struct dd_finding *f;
    (void)state;

    /* Two classes, one name: the newer wins, the older is reported. */
    snap_load(&s, objs("[%s,%s]", XCLASS("old", "example.com/gpu", "2026-01-01T00:00:00Z"),
                       XCLASS("new", "example.com/gpu", "2026-02-01T00:00:00Z")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceConflict"), 1);
    f = snap_get(&s, "ExtendedResourceConflict");
    assert_string_equal(f->obj.name, "old");
    assert_contains(f->message, "get new's devices");
    snap_free(&s);
    /* Live, from the trimmed cache: the creation times decide, not the names. */
    {
        char *j = kept(objs("[%s,%s]", XCLASS("b-new", "example.com/gpu", "2026-02-01T00:00:00Z"),
                            XCLASS("a-old", "example.com/gpu", "2026-01-01T00:00:00Z")));
        snap_load(&s, j);
        free(j);
    }
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceConflict"), 1);
    assert_string_equal(snap_get(&s, "ExtendedResourceConflict")->obj.name, "a-old");
    snap_free(&s);
    /* A node whose device plugin advertises it keeps serving it there. */
    snap_load(&s, objs("[%s,%s]", XCLASS("gpu", "example.com/gpu", "2026-01-01T00:00:00Z"),
                       XNODE("n1", ",\"example.com/gpu\":\"2\"")));
    assert_int_equal(snap_run(&s, &o, "ExtendedResourceConflict"), 1);
    assert_contains(snap_get(&s, "ExtendedResourceConflict")->message, "(n1)");
    snap_free(&s);
}

#define BOUND_CLAIM(devstatus)                                                                 \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"  \
    "\"c\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"dev\","          \
    "\"exactly\":{\"deviceClassName\":\"bind\"}}]}},\"status\":{\"allocation\":{\"devices\":"     \
    "{\"results\":[{\"request\":\"dev\",\"driver\":\"bind.example.com\",\"pool\":\"p\","         \
    "\"device\":\"dev-0\",\"bindingConditions\":[\"attached\"],\"bindingFailureConditions\":"   \
    "[\"failed\"]}]}}" devstatus "}}"
#define COND(type, st) "{\"type\":\"" type "\",\"status\":\"" st "\",\"reason\":\"R\",\"message\":\"m\"}"
#define DEVST(conds)                                                                           \
    ",\"devices\":[{\"driver\":\"bind.example.com\",\"pool\":\"p\",\"device\":\"dev-0\","       \
    "\"conditions\":[" conds "]}]"

static void binding_conditions(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    struct kv_gates g;
    const struct dd_finding *f;
    (void)state;

    snap_load(&s, objs("[%s]", BOUND_CLAIM("")));
    /* Offline, a claim's status says nothing yet. */
    assert_int_equal(snap_run(&s, &o, "BindingConditionsNotMet"), 0);
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &o, "BindingConditionsNotMet"), 1);
    f = snap_get(&s, "BindingConditionsNotMet");
    assert_int_equal(f->severity, DD_SEV_WARNING);
    assert_contains(f->message, "bind.example.com/p/dev-0");
    assert_contains(f->message, "attached is not True");
    assert_contains(f->message, "no status entry");
    /* The gate off (1.35): no binding conditions at all. */
    kv_gates_init(&g, 35);
    o.kube_minor = 35;
    o.gates = &g;
    assert_int_equal(snap_run(&s, &o, "BindingConditionsNotMet"), 0);
    o.kube_minor = 0;
    o.gates = NULL;
    snap_free(&s);
    snap_load(&s, objs("[%s]", BOUND_CLAIM(DEVST(COND("attached", "True")))));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &o, "BindingConditionsNotMet"), 0);
    snap_free(&s);
    snap_load(&s, objs("[%s]", BOUND_CLAIM(DEVST(COND("attached", "False") ","
                                                 COND("failed", "True")))));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &o, "BindingConditionsNotMet"), 1);
    f = snap_get(&s, "BindingConditionsNotMet");
    assert_int_equal(f->severity, DD_SEV_ERROR);
    assert_contains(f->message, "failure condition failed (reason R: m) is True");
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(extended_not_backed),
        cmocka_unit_test(extended_conflict),
        cmocka_unit_test(binding_conditions),
    };
    return cmocka_run_group_tests_name("rules_gated", tests, NULL, NULL);
}
