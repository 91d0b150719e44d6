/*
 * fuzz_admission.c - libFuzzer entry for AdmissionReview decoding and the
 * decisions behind it (webhook/review.c), against a small cluster view and
 * against none.  Invariants: an answer is a JSON AdmissionReview carrying the
 * request's uid; an error leaves no body and says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const cluster[] = {
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},"
    "\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n\",\"pool\":{\"name\":\"n\"},\"devices\":["
    "{\"name\":\"g0\",\"attributes\":{\"model\":{\"string\":\"A\"}},\"capacity\":{\"memory\":"
    "{\"value\":\"8Gi\"}}}]}}",
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu\"},"
    "\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"q\",\"namespace\":\"t\"},"
    "\"spec\":{\"hard\":{\"gpu.deviceclass.resource.k8s.io/devices\":\"1\"}},\"status\":{\"used\":"
    "{\"gpu.deviceclass.resource.k8s.io/devices\":\"1\"}}}",
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{\"name\":"
    "\"one\",\"namespace\":\"t\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\","
    "\"exactly\":{\"deviceClassName\":\"gpu\"}}]}}}}",
};

static struct wh_view *view(void)
{
    static struct wh_view *v;
    cJSON *objs[sizeof(cluster) / sizeof(cluster[0])];
    size_t i, n = sizeof(cluster) / sizeof(cluster[0]);

    if (v)
        return v;
    for (i = 0; i < n; i++)
        if (!(objs[i] = cJSON_Parse(cluster[i])))
            abort();
    /* The view borrows the objects: both live as long as the process. */
    if (!(v = wh_view_build((const cJSON *const *)objs, n, NULL, NULL)))
        abort();
    return v;
}

static void check(const struct wh_view *v, const uint8_t *data, size_t size)
{
    struct wh_result res;
    struct dd_err err;
    enum dd_rc rc;

    dd_err_clear(&err);
    rc = wh_review(v, NULL, 0, (const char *)data, size, &res, &err);
    if (rc != DD_OK) {
        if (res.body || !err.msg[0] || rc == DD_ENOMEM)
            abort();
        return;
    }
    {
        cJSON *r = cJSON_Parse(res.body);
        const char *uid = dd_json_str(r, "response", "uid", NULL);
        if (!r || !uid || !*uid || strlen(res.body) != res.len ||
            !cJSON_IsBool(dd_json_path(r, "response", "allowed", NULL)))
            abort();
        cJSON_Delete(r);
    }
    free(res.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(view(), data, size);
    check(NULL, data, size);
    return 0;
}
