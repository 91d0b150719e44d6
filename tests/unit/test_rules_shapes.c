/*
 * test_rules_shapes.c - objects as the API server decodes and admits them: FieldNotInAPIVersion,
 * PodClaimFieldsRemoved.
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

#define FAILED_CREATE(msg)                                                                     \
    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\",\"namespace\":"   \
    "\"t\"},\"involvedObject\":{\"kind\":\"ReplicaSet\",\"namespace\":\"t\",\"name\":"         \
    "\"web-123\"},\"reason\":\"FailedCreate\",\"type\":\"Warning\",\"message\":\"" msg "\"}"
#define MWC                                                                                    \
    "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"                           \
    "\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":\"sidecars\"},\"webhooks\":[{"      \
    "\"name\":\"inject.example.com\",\"rules\":[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"]," \
    "\"operations\":[\"CREATE\"],\"resources\":[\"pods\"]}]}]}"

static void claim_fields_removed(void **state)
{
    struct snap s;
    const struct dd_finding *f;
    (void)state;

    snap_load(&s, objs("[%s,%s]", MWC, FAILED_CREATE(
        "Error creating: Pod \\\"web-123-x\\\" is invalid: spec.resourceClaims[0]: Invalid "
        "value: {\\\"name\\\":\\\"gpu\\\"}: must specify one of: `resourceClaimName`, "
        "`resourceClaimTemplateName`")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "PodClaimFieldsRemoved"), 1);
    f = snap_get(&s, "PodClaimFieldsRemoved");
    assert_string_equal(f->obj.kind, "ReplicaSet");
    assert_string_equal(f->obj.name, "web-123");
    assert_contains(f->message, "MutatingWebhookConfiguration sidecars (webhook inject.example.com)");
    /* Offline, events are history. */
    s.m.live = 0;
    assert_int_equal(snap_run(&s, &defaults, "PodClaimFieldsRemoved"), 0);
    snap_free(&s);
    /* Other refusals are someone else's. */
    snap_load(&s, objs("[%s,%s]", MWC, FAILED_CREATE("Error creating: pods is forbidden: exceeded "
                                                     "quota")));
    s.m.live = 1;
    assert_int_equal(snap_run(&s, &defaults, "PodClaimFieldsRemoved"), 0);
    snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1beta1_shape_in_v1),
        cmocka_unit_test(fields_of_no_version),
        cmocka_unit_test(claim_fields_removed),
    };
    return cmocka_run_group_tests_name("rules_shapes", tests, NULL, NULL);
}
