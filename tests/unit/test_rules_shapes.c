/*
 * test_rules_shapes.c - objects as the API server decodes them: FieldNotInAPIVersion.
 */
#include "rules_fixtures.h"

#define V1_FLAT                                                                                \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"  \
    "\"c\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","        \
    "\"deviceClassName\":\"gpu\",\"count\":2}]}}}"
#define V1_SLICE_BASIC                                                                         \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"  \
    "\"s\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":"    \
    "\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"gpu-0\","       \
    "\"basic\":{\"attributes\":{}}}]}}"
#define V1BETA1_EXACTLY                                                                        \
    "{\"apiVersion\":\"resource.k8s.io/v1beta1\",\"kind\":\"ResourceClaimTemplate\","          \
    "\"metadata\":{\"name\":\"t\",\"namespace\":\"t\"},\"spec\":{\"spec\":{\"resourceClassName\"" \
    ":\"gpu\",\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"    \
    "\"gpu\"}}]}}}}"

static void v1beta1_shape_in_v1(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    snap_load(&s, objs("[%s,%s]", V1_FLAT, V1_SLICE_BASIC));
    assert_int_equal(snap_run(&s, &defaults, "FieldNotInAPIVersion"), 2);
    for (size_t i = 0; i < s.f.n; i++) {
        f = &s.f.v[i];
        if (strcmp(f->code, "FieldNotInAPIVersion"))
            continue;
        assert_int_equal(f->severity, DD_SEV_ERROR);
        if (!strcmp(f->obj.kind, "ResourceClaim")) {
            /* The API server's words, both fields in the order they are written. */
            assert_contains(f->message, "ResourceClaim in version \"v1\" cannot be handled as a "
                                        "ResourceClaim: strict decoding error: unknown field "
                                        "\"spec.devices.requests[0].deviceClassName\", unknown "
                                        "field \"spec.devices.requests[0].count\"");
            assert_contains(f->fix, "under the request's `exactly`");
        } else {
            assert_contains(f->message, "unknown field \"spec.devices[0].basic\"");
            assert_contains(f->fix, "no `basic`");
        }
    }
    snap_free(&s);
}

static void fields_of_no_version(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    /* v1beta1 is off by default but in the release: decoded strictly when enabled. */
    snap_load(&s, objs("[%s]", V1BETA1_EXACTLY));
    assert_int_equal(snap_run(&s, &defaults, "FieldNotInAPIVersion"), 1);
    f = snap_get(&s, "FieldNotInAPIVersion");
    assert_contains(f->message, "unknown field \"spec.spec.resourceClassName\", unknown field "
                                "\"spec.spec.devices.requests[0].exactly\"");
    assert_contains(f->fix, "classic DRA's field");
    snap_free(&s);
    /* The right shapes, and live objects (decoded already), say nothing. */
    snap_load(&s, objs("[%s,%s,%s]", CLAIM("c", "gpu"), TEMPLATE("t", "gpu"), SLICE2));
    assert_int_equal(snap_run(&s, &defaults, "FieldNotInAPIVersion"), 0);
    snap_free(&s);
    snap_load(&s, objs("[%s]", V1_FLAT));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "FieldNotInAPIVersion"), 0);
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1beta1_shape_in_v1),
        cmocka_unit_test(fields_of_no_version),
    };
    return cmocka_run_group_tests_name("rules_shapes", tests, NULL, NULL);
}
