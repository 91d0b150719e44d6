/* test_quota.c - claim usage counted as kube-apiserver's quota evaluator counts it. */
#include "snap.h"

#include "model/quota.h"

#define CLAIM(reqs)                                                                            \
    "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":" \
    "\"c\",\"namespace\":\"n\"},\"spec\":{\"devices\":{\"requests\":" reqs "}}}]"

static int64_t usage(const char *json, const char *key, int64_t claims)
{
    struct snap s;
    struct quota_usage u = QUOTA_USAGE_INIT;
    int64_t v;

    snap_load(&s, json);
    assert_int_equal(s.m.nclaims, 1);
    assert_int_equal(quota_usage_add_claim(&u, &s.m.claims[0].spec, claims), 0);
    v = quota_usage_get(&u, key);
    quota_usage_release(&u);
    snap_free(&s);
    return v;
}

#define GPU "gpu.deviceclass.resource.k8s.io/devices"

static void exact_count(void **state)
{
    (void)state;
    assert_int_equal(usage(CLAIM("[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\"}}]"),
                           GPU, 1), 1);
    assert_int_equal(usage(CLAIM("[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\","
                                 "\"count\":3}}]"), GPU, 1), 3);
    assert_int_equal(usage(CLAIM("[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\","
                                 "\"count\":3}}]"), GPU, 4), 12);
    assert_int_equal(usage(CLAIM("[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\"}}]"),
                           QUOTA_CLAIM_COUNT_KEY, 5), 5);
}

static void all_mode_counts_32(void **state)
{
    (void)state;
    assert_int_equal(usage(CLAIM("[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\","
                                 "\"allocationMode\":\"All\"}}]"), GPU, 1), 32);
}

static void many_requests_add_up(void **state)
{
    (void)state;
    assert_int_equal(usage(CLAIM("[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu\"}},"
                                 "{\"name\":\"b\",\"exactly\":{\"deviceClassName\":\"gpu\","
                                 "\"count\":2}},{\"name\":\"c\",\"exactly\":{\"deviceClassName\":"
                                 "\"other\"}}]"), GPU, 1), 3);
}

static void first_available_takes_max_per_class(void **state)
{
    const char *j = CLAIM("[{\"name\":\"a\",\"firstAvailable\":[{\"name\":\"x\",\"deviceClassName\":"
                          "\"gpu\",\"count\":2},{\"name\":\"y\",\"deviceClassName\":\"gpu\","
                          "\"count\":4},{\"name\":\"z\",\"deviceClassName\":\"small\",\"count\":1}]}]");
    (void)state;
    assert_int_equal(usage(j, GPU, 1), 4);
    assert_int_equal(usage(j, "small.deviceclass.resource.k8s.io/devices", 1), 1);
}

static void v1beta1_flat_requests(void **state)
{
    (void)state;
    assert_int_equal(usage("[{\"apiVersion\":\"resource.k8s.io/v1beta1\",\"kind\":\"ResourceClaim\","
                           "\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"spec\":{\"devices\":"
                           "{\"requests\":[{\"name\":\"a\",\"deviceClassName\":\"gpu\",\"count\":2}]}}}]",
                           GPU, 1), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_count),
        cmocka_unit_test(all_mode_counts_32),
        cmocka_unit_test(many_requests_add_up),
        cmocka_unit_test(first_available_takes_max_per_class),
        cmocka_unit_test(v1beta1_flat_requests),
    };
    return cmocka_run_group_tests_name("quota", tests, NULL, NULL);
}
