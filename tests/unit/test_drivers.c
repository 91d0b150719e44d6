/*
 * test_drivers.c - the driver profiles as data: every row is complete and sourced, images
 * identify one profile each, and no real name is ever offered as a misspelling of another.
 */
#include "harness.h"

#include "model/drivers.h"
#include "snap.h"

static void rows_complete(void **state)
{
    size_t n, i, j;
    const struct drv_profile *p = drv_profiles(&n);
    (void)state;

    assert_true(n >= 12);
    for (i = 0; i < n; i++) {
        assert_non_null(p[i].id);
        assert_non_null(p[i].vendor);
        assert_non_null(p[i].source);
        assert_non_null(strchr(p[i].source, '@')); /* repository@commit */
        assert_non_null(p[i].images[0]);
        assert_non_null(p[i].plugins[0].driver);
        /* A driver that writes CDI specs writes them somewhere. */
        if (p[i].writes_cdi)
            assert_non_null(p[i].default_cdi_root);
        else
            assert_true(!p[i].cdi_root_env && !p[i].cdi_root_flag && !p[i].default_cdi_root);
        for (j = 0; j < DRV_MAX && p[i].plugins[j].driver; j++) {
            assert_ptr_equal(drv_profile_for_driver(p[i].plugins[j].driver), &p[i]);
            assert_true(drv_real_driver(p[i].plugins[j].driver));
            /* Several plugins in one image must be told apart. */
            if (j || p[i].plugins[1].driver)
                assert_true(p[i].plugins[j].binary || p[i].plugins[j].container);
        }
        for (j = 0; j < DRV_MAX && p[i].classes[j]; j++)
            assert_ptr_equal(drv_profile_for_class(p[i].classes[j]), &p[i]);
    }
    assert_false(drv_real_driver("gpu.exmaple.com"));
    assert_null(drv_profile_for_class("no-such-class"));
}

/* An image substring of one profile never matches another profile's images. */
static void images_identify_one_profile(void **state)
{
    size_t n, i, j;
    const struct drv_profile *p = drv_profiles(&n);
    (void)state;

    for (i = 0; i < n; i++)
        for (j = 0; j < DRV_MAX && p[i].images[j]; j++) {
            char image[256];
            snprintf(image, sizeof(image), "registry.example/%s:v1", p[i].images[j]);
            assert_ptr_equal(drv_profile_for_image(image), &p[i]);
        }
    assert_null(drv_profile_for_image("registry.k8s.io/sig-storage/csi-node-driver-registrar:v2"));
}

#define SLICE_OF(i, driver)                                                                    \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":"  \
    "\"s%zu\"},\"spec\":{\"driver\":\"%s\",\"nodeName\":\"n\",\"pool\":{\"name\":\"p\","         \
    "\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"d\"}]}}"

/*
 * For each of names[0..nn): an object built from head (with that name) among objects built from
 * other (with each other name), must give exactly one finding of code, and no suggestion.
 */
static void none_offered(const char *const *names, size_t nn, const char *head, const char *other,
                         const char *code, const char *suggestion)
{
    size_t i, k;

    for (i = 0; i < nn; i++) {
        char *json = calloc(1, 320 * nn + 512), *w;
        const struct dd_finding *f;
        struct snap s;
        assert_non_null(json);
        w = json + sprintf(json, head, names[i]);
        for (k = 0; k < nn; k++)
            if (k != i)
                w += sprintf(w, other, k, names[k]);
        strcpy(w, "]");
        snap_load(&s, json);
        assert_int_equal(snap_run(&s, NULL, code), 1);
        f = snap_get(&s, code);
        assert_int_equal(f->severity, DD_SEV_WARNING);
        if (strstr(f->message, suggestion))
            fail_msg("%s offered as a misspelling: %s", names[i], f->message);
        snap_free(&s);
        free(json);
    }
}

/* Every real driver name, with every other one installed: SelectorMatchesNoDriver may warn that
 * nothing installs it, but never offers another real driver in its place. */
static void no_real_name_is_a_typo_of_another(void **state)
{
    const char *names[128];
    size_t n, i, j, nn = 0;
    const struct drv_profile *p = drv_profiles(&n);
    (void)state;

    for (i = 0; i < n; i++) {
        for (j = 0; j < DRV_MAX && p[i].plugins[j].driver; j++)
            names[nn++] = p[i].plugins[j].driver;
        for (j = 0; j < DRV_MAX && p[i].other_names[j]; j++)
            names[nn++] = p[i].other_names[j];
    }
    none_offered(names, nn,
                 "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
                 "{\"name\":\"c\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
                 "\"device.driver == '%s'\"}}]}}",
                 "," SLICE_OF(k, "%s"), "SelectorMatchesNoDriver", "Did you mean");
}

/* The same for DeviceClass names: a missing class a real install makes is not a typo of
 * another real one (cpu.example.com beside gpu.example.com). */
static void no_real_class_is_a_typo_of_another(void **state)
{
    const char *names[128];
    size_t n, i, j, nn = 0;
    const struct drv_profile *p = drv_profiles(&n);
    (void)state;

    for (i = 0; i < n; i++)
        for (j = 0; j < DRV_MAX && p[i].classes[j]; j++)
            names[nn++] = p[i].classes[j];
    none_offered(names, nn,
                 "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
                 "{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":{\"devices\":{\"requests\":"
                 "[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"%s\"}}]}}}",
                 ",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
                 "{\"labels\":{\"i\":\"%zu\"},\"name\":\"%s\"},\"spec\":{}}", "DeviceClassNotFound", "did you mean");
    /* A misspelling of a real class still is one. */
    {
        struct snap s;
        snap_load(&s, "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                      "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
                      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":"
                      "\"mig.nvidai.com\"}}]}}},{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                      "\"DeviceClass\",\"metadata\":{\"name\":\"mig.nvidia.com\"},\"spec\":{}}]");
        assert_int_equal(snap_run(&s, NULL, "DeviceClassNotFound"), 1);
        assert_contains(snap_get(&s, "DeviceClassNotFound")->message, "did you mean \"mig.nvidia.com\"");
        snap_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_complete),
        cmocka_unit_test(images_identify_one_profile),
        cmocka_unit_test(no_real_name_is_a_typo_of_another),
        cmocka_unit_test(no_real_class_is_a_typo_of_another),
    };
    return cmocka_run_group_tests_name("drivers", tests, NULL, NULL);
}
