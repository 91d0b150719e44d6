#include "drivers.h"

#include <string.h>

/*
 * The example driver's devices as its README shows them; "index" and "uuid"
 * differ per device but no selector check depends on their values.
 */
static const struct cel_attr example_attrs[] = {
    { .domain = "gpu.example.com", .name = "model", .kind = CEL_ATTR_STRING, .i = 0, .b = 0, .s = "LATEST-GPU-MODEL" },
    { .domain = "gpu.example.com", .name = "index", .kind = CEL_ATTR_INT, .i = 0, .b = 0, .s = NULL },
    { .domain = "gpu.example.com", .name = "uuid", .kind = CEL_ATTR_STRING, .i = 0, .b = 0, .s = "gpu-00000000-0000-0000-0000-000000000000" },
    { .domain = "gpu.example.com", .name = "driverVersion", .kind = CEL_ATTR_VERSION, .i = 0, .b = 0, .s = "1.0.0" },
};
static const struct cel_capacity example_caps[] = {
    { "gpu.example.com", "memory", "80Gi" },
};

static const struct drv_profile profiles[] = {
    {
        "dra-example-driver", "kubernetes-sigs",
        { "dra-example-driver", NULL },
        { "gpu.example.com", NULL },
        "CDI_ROOT", "--cdi-root", "/etc/cdi",
        "NUM_DEVICES", 8,
        example_attrs, sizeof(example_attrs) / sizeof(example_attrs[0]),
        example_caps, sizeof(example_caps) / sizeof(example_caps[0]),
    },
    {
        "nvidia-dra-driver-gpu", "NVIDIA",
        { "k8s-dra-driver-gpu", "k8s-dra-driver", NULL },
        { "gpu.nvidia.com", "compute-domain.nvidia.com", NULL },
        "CDI_ROOT", "--cdi-root", "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0,
    },
    {
        "intel-gpu-resource-driver", "Intel",
        { "intel-gpu-resource-driver", "intel-gpu-dra-driver", NULL },
        { "gpu.intel.com", NULL },
        "CDI_ROOT", "--cdi-root", "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0,
    },
    {
        "intel-gaudi-resource-driver", "Intel",
        { "intel-gaudi-resource-driver", NULL },
        { "gaudi.intel.com", NULL },
        "CDI_ROOT", "--cdi-root", "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0,
    },
    {
        "amd-gpu-dra-driver", "AMD",
        { "k8s-gpu-dra-driver", NULL },
        { "gpu.amd.com", NULL },
        "CDI_ROOT", "--cdi-root", "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0,
    },
};

const struct drv_profile *drv_profiles(size_t *n)
{
    *n = sizeof(profiles) / sizeof(profiles[0]);
    return profiles;
}

const struct drv_profile *drv_profile_for_image(const char *image)
{
    size_t i, j;

    if (!image)
        return NULL;
    for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
        for (j = 0; j < DRV_MAX && profiles[i].images[j]; j++)
            if (strstr(image, profiles[i].images[j]))
                return &profiles[i];
    return NULL;
}

const struct drv_profile *drv_profile_for_driver(const char *driver)
{
    size_t i, j;

    for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
        for (j = 0; j < DRV_MAX && profiles[i].drivers[j]; j++)
            if (!strcmp(driver, profiles[i].drivers[j]))
                return &profiles[i];
    return NULL;
}
