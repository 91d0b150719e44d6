/*
 * test_rules_pools.c - the published slices as the allocator sees them: PoolIncomplete,
 * PoolInvalid, SliceNodeSelectionMatchesNoNode.
 */
#include "rules_fixtures.h"

#define SL(name, node, pool, gen, count, devs)                                                 \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":" \
    "\"" name "\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"" node "\",\"pool\":" \
    "{\"name\":\"" pool "\",\"generation\":" gen ",\"resourceSliceCount\":" count "},"          \
    "\"devices\":[" devs "]}}"
#define D(n) "{\"name\":\"" n "\"}"
#define NODE(name, labels)                                                                     \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\",\"labels\":"  \
    "{" labels "}}}"

static void pool_incomplete(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    f = only(&s, objs("[%s]", SL("a", "n1", "n1", "1", "2", D("d0"))), "PoolIncomplete", 1);
    assert_contains(f->message, "declares resourceSliceCount 2, but only 1");
    assert_string_equal(f->scope_driver, "gpu.example.com");
    snap_free(&s);
    only(&s, objs("[%s,%s]", SL("a", "n1", "n1", "1", "2", D("d0")),
                  SL("b", "n1", "n1", "1", "2", D("d1"))), "PoolIncomplete", 0);
    snap_free(&s);
    /* An older generation does not count: only the newest is the pool. */
    only(&s, objs("[%s,%s]", SL("a", "n1", "n1", "2", "2", D("d0")),
                  SL("b", "n1", "n1", "1", "2", D("d1"))), "PoolIncomplete", 1);
    snap_free(&s);
    /* Slices of one generation that disagree on the count. */
    f = only(&s, objs("[%s,%s]", SL("a", "n1", "n1", "1", "2", D("d0")),
                      SL("b", "n1", "n1", "1", "3", D("d1"))), "PoolIncomplete", 1);
    assert_contains(f->message, "disagree");
    snap_free(&s);
}

static void pool_invalid(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    const struct dd_finding *f;
    (void)state;

    /* Two nodes publishing the same pool name and device names (cilium#48923). */
    f = only(&s, objs("[%s,%s]", SL("a", "n1", "gpus", "1", "2", D("gpu-0")),
                      SL("b", "n2", "gpus", "1", "2", D("gpu-0"))), "PoolInvalid", 1);
    assert_contains(f->message, "from different nodes");
    assert_contains(f->message, "invalid resource pools were encountered");
    snap_free(&s);
    snap_load(&s, objs("[%s]", SL("a", "n1", "n1", "1", "1", D("gpu-0") "," D("gpu-0"))));
    o.kube_minor = 34;
    assert_int_equal(snap_run(&s, &o, "PoolInvalid"), 1);
    assert_contains(snap_get(&s, "PoolInvalid")->message,
                    "pool n1 is invalid: duplicate device name gpu-0");
    snap_free(&s);
    only(&s, objs("[%s]", SL("a", "n1", "n1", "1", "1", D("gpu-0") "," D("gpu-1"))),
         "PoolInvalid", 0);
    snap_free(&s);
}

static void slice_nodes(void **state)
{
    struct snap s;
    struct rule_options o = RULE_OPTIONS_INIT;
    const struct dd_finding *f;
    (void)state;

    /* The node's name is not the one the driver published (hostname vs FQDN). */
    f = only(&s, objs("[%s,%s]", SL("a", "n1.example.net", "p", "1", "1", D("d0")),
                      NODE("n1", "")), "SliceNodeSelectionMatchesNoNode", 1);
    assert_int_equal(f->severity, DD_SEV_WARNING); /* the input may not hold every node */
    assert_contains(f->message, "no Node has that name (nodes: n1)");
    snap_free(&s);
    snap_load(&s, objs("[%s,%s]", SL("a", "n1.example.net", "p", "1", "1", D("d0")),
                       NODE("n1", "")));
    o.complete = 1;
    assert_int_equal(snap_run(&s, &o, "SliceNodeSelectionMatchesNoNode"), 1);
    assert_int_equal(snap_get(&s, "SliceNodeSelectionMatchesNoNode")->severity, DD_SEV_ERROR);
    snap_free(&s);
    only(&s, objs("[%s,%s]", SL("a", "n1", "p", "1", "1", D("d0")), NODE("n1", "")),
         "SliceNodeSelectionMatchesNoNode", 0);
    snap_free(&s);
    /* Without Node objects there is nothing to compare with. */
    only(&s, objs("[%s]", SL("a", "n1.example.net", "p", "1", "1", D("d0"))),
         "SliceNodeSelectionMatchesNoNode", 0);
    snap_free(&s);
    /* A nodeSelector no node's labels satisfy. */
#define SEL_SLICE(key, op, vals)                                                                \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"  \
    "\"net\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeSelector\":{\"nodeSelectorTerms\":" \
    "[{\"matchExpressions\":[{\"key\":\"" key "\",\"operator\":\"" op "\",\"values\":" vals "}]}]}," \
    "\"pool\":{\"name\":\"fabric\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[" D("d0") "]}}"
    only(&s, objs("[%s,%s]", SEL_SLICE("fabric", "In", "[\"a\"]"), NODE("n1", "\"fabric\":\"b\"")),
         "SliceNodeSelectionMatchesNoNode", 1);
    snap_free(&s);
    only(&s, objs("[%s,%s]", SEL_SLICE("fabric", "In", "[\"a\",\"b\"]"),
                  NODE("n1", "\"fabric\":\"b\"")), "SliceNodeSelectionMatchesNoNode", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s]", SEL_SLICE("gpus", "Gt", "[\"3\"]"), NODE("n1", "\"gpus\":\"4\"")),
         "SliceNodeSelectionMatchesNoNode", 0);
    snap_free(&s);
    only(&s, objs("[%s,%s]", SEL_SLICE("gpus", "Gt", "[\"4\"]"), NODE("n1", "\"gpus\":\"4\"")),
         "SliceNodeSelectionMatchesNoNode", 1);
    snap_free(&s);
    only(&s, objs("[%s,%s]", SEL_SLICE("fabric", "NotIn", "[\"b\"]"), NODE("n1", "")),
         "SliceNodeSelectionMatchesNoNode", 0);
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_incomplete),
        cmocka_unit_test(pool_invalid),
        cmocka_unit_test(slice_nodes),
    };
    return cmocka_run_group_tests_name("rules_pools", tests, NULL, NULL);
}
