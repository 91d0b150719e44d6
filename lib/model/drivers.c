/*
 * drivers.c - the driver profiles.  Each row's facts come from the source it names (read at
 * that commit; older releases where a row says so).  docs/rules.md#driver-profiles is the
 * table for people.
 */
#include "model/drivers.h"

#include <string.h>

#define LIB_CDI "--cdi-root"

const char *const drv_slice_verbs[] = { "list", "watch", "create", "update", "delete", NULL };

/*
 * The example driver's gpu devices as its README shows them; "index" and "uuid" differ per
 * device but no selector check depends on their values.
 */
static const struct cel_attr example_attrs[] = {
    { .domain = "gpu.example.com", .name = "model", .kind = CEL_ATTR_STRING, .s = "LATEST-GPU-MODEL" },
    { .domain = "gpu.example.com", .name = "index", .kind = CEL_ATTR_INT, .i = 0 },
    { .domain = "gpu.example.com", .name = "uuid", .kind = CEL_ATTR_STRING, .s = "gpu-00000000-0000-0000-0000-000000000000" },
    { .domain = "gpu.example.com", .name = "driverVersion", .kind = CEL_ATTR_VERSION, .s = "1.0.0" },
};
static const struct cel_capacity example_caps[] = {
    { "gpu.example.com", "memory", "80Gi" },
};

/* api/example.com/resource/gpu/v1alpha1/{register,sharing,validate}.go. */
static const struct drv_param example_params[] = {
    { "gpu.resource.example.com/v1alpha1", { "GpuConfig", NULL }, { "sharing", "strategy", NULL },
      { "TimeSlicing", "SpacePartitioning", NULL }, "unknown GPU sharing strategy: %s",
      { NULL }, { NULL }, NULL },
    { "gpu.resource.example.com/v1alpha1", { "GpuConfig", NULL },
      { "sharing", "timeSlicingConfig", "interval", NULL },
      { "Default", "Short", "Medium", "Long", NULL }, "unknown time-slice interval: %s",
      { NULL }, { NULL }, NULL },
};

/* api/nvidia.com/resource/v1beta1/{sharing,validate}.go and pkg/featuregates (both gates off by
 * default; the chart passes featureGates as env FEATURE_GATES). */
static const struct drv_param nvidia_params[] = {
    { "resource.nvidia.com/v1beta1", { "GpuConfig", "MigDeviceConfig", NULL },
      { "sharing", "strategy", NULL }, { "TimeSlicing", "MPS", NULL },
      "unknown GPU sharing strategy: %s, supported GPU sharing strategies: TimeSlicing, MPS",
      { "TimeSlicing", "MPS", NULL }, { "TimeSlicingSettings", "MPSSupport", NULL },
      "\"%s\" is selected as the GPU sharing strategy, but the \"%s\" feature gate is not "
      "enabled" },
    { "resource.nvidia.com/v1beta1", { "GpuConfig", "MigDeviceConfig", NULL },
      { "sharing", "timeSlicingConfig", "interval", NULL },
      { "Default", "Short", "Medium", "Long", NULL },
      "unknown time-slice interval: %s, supported time-slice intervals: Default, Short, Medium, "
      "Long", { NULL }, { NULL }, NULL },
};

static const struct drv_profile profiles[] = {
    /* cmd/dra-example-kubeletplugin/main.go (CDI_ROOT, --cdi-root default /etc/cdi; NUM_DEVICES
     * default 8; DRIVER_NAME and DEVICE_PROFILE from v0.3.0, before that gpu.example.com fixed),
     * internal/profiles/{gpu,cpu,net}, deployments/helm/dra-example-driver/templates. */
    {
        "dra-example-driver", "kubernetes-sigs",
        "kubernetes-sigs/dra-example-driver@31914ceacda29bbc55208ef75e68c0991e1c9568 (and v0.1.0-v0.4.0)",
        { "dra-example-driver", NULL },
        { { "gpu.example.com", NULL, NULL }, { NULL, NULL, NULL } },
        { "cpu.example.com", "net.example.com", NULL },
        "DRIVER_NAME", "--driver-name", "DEVICE_PROFILE", "%s.example.com",
        { "gpu.example.com", "cpu.example.com", "net.example.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        "NUM_DEVICES", 8,
        example_attrs, sizeof(example_attrs) / sizeof(example_attrs[0]),
        example_caps, sizeof(example_caps) / sizeof(example_caps[0]),
        example_params, sizeof(example_params) / sizeof(example_params[0]),
    },
    /* cmd/gpu-kubelet-plugin/main.go:45, cmd/compute-domain-kubelet-plugin/main.go:43 (names
     * fixed; --cdi-root default /etc/cdi), templates/kubeletplugin.yaml (one DaemonSet, both
     * plugins under `bash -c`, containers gpus and compute-domains), templates/deviceclass-*;
     * images from values.yaml of v25.3.0-rc.1 to HEAD. */
    {
        "dra-driver-nvidia-gpu", "NVIDIA",
        "kubernetes-sigs/dra-driver-nvidia-gpu@95932046683719c43b6a0dd9613c2e5aad5d6703 (and NVIDIA/k8s-dra-driver-gpu v25.3.0-v25.12.0)",
        { "dra-driver-nvidia-gpu", "k8s-dra-driver-gpu", "cloud-native/k8s-dra-driver", NULL },
        { { "gpu.nvidia.com", "gpu-kubelet-plugin", "gpus" },
          { "compute-domain.nvidia.com", "compute-domain-kubelet-plugin", "compute-domains" },
          { NULL, NULL, NULL } },
        /* imex.nvidia.com: the IMEX plugin of unreleased commits (2025-01/02). */
        { "imex.nvidia.com", NULL },
        NULL, NULL, NULL, NULL,
        { "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
          "compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com",
          "imex.nvidia.com", "imex-daemon.nvidia.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, nvidia_params, sizeof(nvidia_params) / sizeof(nvidia_params[0]),
    },
    /* pkg/gpu/device/device.go:53 (name fixed), pkg/helpers/helpers.go:35,84 (CDI_ROOT,
     * --cdi-root, default /etc/cdi: the chart sets neither and mounts /etc/cdi),
     * charts/intel-gpu-resource-driver. */
    {
        "intel-gpu-resource-driver", "Intel",
        "intel/intel-resource-drivers-for-kubernetes@1da939faa33a90dd641d0327cdcdcbbfaa1acdb4",
        { "intel-gpu-resource-driver", NULL },
        { { "gpu.intel.com", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "gpu.intel.com", "gpu-vfio.intel.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* pkg/gaudi/device/device.go:54, charts/intel-gaudi-resource-driver. */
    {
        "intel-gaudi-resource-driver", "Intel",
        "intel/intel-resource-drivers-for-kubernetes@1da939faa33a90dd641d0327cdcdcbbfaa1acdb4",
        { "intel-gaudi-resource-driver", NULL },
        { { "gaudi.intel.com", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "gaudi.intel.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* pkg/qat/device/device.go:21, charts/intel-qat-resource-driver. */
    {
        "intel-qat-resource-driver", "Intel",
        "intel/intel-resource-drivers-for-kubernetes@1da939faa33a90dd641d0327cdcdcbbfaa1acdb4",
        { "intel-qat-resource-driver", NULL },
        { { "qat.intel.com", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "qat.intel.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* pkg/consts/consts.go:35, cmd/gpu-kubeletplugin/main.go:99 (--cdi-root default /etc/cdi),
     * helm-charts-k8s. */
    {
        "k8s-gpu-dra-driver", "AMD",
        "ROCm/k8s-gpu-dra-driver@2622427226d5ac361c3588284f4815e0dae11eaa",
        { "k8s-gpu-dra-driver", NULL },
        { { "gpu.amd.com", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "gpu.amd.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* cmd/tpu-dra-kubeletplugin/main.go:41,101, deployments/helm/dra-driver-google-tpu. */
    {
        "dra-driver-google-tpu", "Google",
        "kubernetes-sigs/dra-driver-google-tpu@f5a9d8c8322ba8061112a7115b8ca2597e2a40f1",
        { "dra-driver-google-tpu", NULL },
        { { "tpu.google.com", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "tpu.google.com", NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* cmd/dranet/app.go:53 (name fixed); no CDI: devices move into the pod's network namespace
     * through NRI hooks (pkg/driver/nri_hooks.go); the chart ships no DeviceClass, the docs and
     * examples use these. */
    {
        "dranet", "kubernetes-sigs",
        "kubernetes-sigs/dranet@f258477cbea0551b7ad239e3873a997a7a3d116b (and google/dranet)",
        { "networking/dranet", "google/dranet", NULL },
        { { "dra.net", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "dra.net", "dranet", "dranet.net", "multinic", "rdma", "dranet-rdma-for-mpi",
          "dranet-cloud", NULL },
        0, NULL, NULL, NULL,
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* cmd/dracpu/app.go:50; pkg/driver/cdi.go:32 (cdiSpecDir /var/run/cdi, not configurable). */
    {
        "dra-driver-cpu", "kubernetes-sigs",
        "kubernetes-sigs/dra-driver-cpu@de98098690f25e59d781c1659b5c3e0b0a210c2a",
        { "dra-driver-cpu", NULL },
        { { "dra.cpu", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "dra.cpu", NULL },
        1, NULL, NULL, "/var/run/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* pkg/driver/driver.go:45; pkg/cdi/cdi.go:40 (SpecDir /var/run/cdi, not configurable);
     * README.md:29-31 (classes). */
    {
        "dra-driver-memory", "ffromani",
        "ffromani/dra-driver-memory@1b0d6680df5f04fdb2d4a50140f80705f8b7228d",
        { "ffromani/dramem", "dra-driver-memory", NULL },
        { { "dra.memory", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "dra.memory", "dra.hugepages-2m", "dra.hugepages-1g", NULL },
        1, NULL, NULL, "/var/run/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* pkg/consts/consts.go:28; cmd/dra-driver-sriov/main.go:53 (--cdi-root default /var/run/cdi). */
    {
        "dra-driver-sriov", "k8snetworkplumbingwg",
        "k8snetworkplumbingwg/dra-driver-sriov@cd9404f0301e088653abb562df6ed8b106b097d6",
        { "dra-driver-sriov", NULL },
        { { "sriovnetwork.k8snetworkplumbingwg.io", NULL, NULL }, { NULL, NULL, NULL } },
        { NULL },
        NULL, NULL, NULL, NULL,
        { "sriovnetwork.k8snetworkplumbingwg.io", NULL },
        1, "CDI_ROOT", LIB_CDI, "/var/run/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
    /* pkg/consts/consts.go:22 (ascend.project-hami.io; npu.project-hami.io and npu.example.com
     * before 2026-08); main.go:93 (--cdi-root default /etc/cdi).  The plugin creates its
     * DeviceClasses (npu-<model>[-mem<N>|-aicore<N>].project-hami.io) at start. */
    {
        "ascend-dra-driver", "Project-HAMi",
        "Project-HAMi/ascend-dra-driver@dc1db52ee22085e63406da674fade2684bd13748",
        { "ascend-dra-driver", NULL },
        { { "ascend.project-hami.io", NULL, NULL }, { NULL, NULL, NULL } },
        { "npu.project-hami.io", "npu.example.com", NULL },
        NULL, NULL, NULL, NULL,
        { NULL },
        1, "CDI_ROOT", LIB_CDI, "/etc/cdi",
        NULL, -1, NULL, 0, NULL, 0, NULL, 0,
    },
};

#define NPROFILES (sizeof(profiles) / sizeof(profiles[0]))

const struct drv_profile *drv_profiles(size_t *n)
{
    *n = NPROFILES;
    return profiles;
}

const struct drv_profile *drv_profile_for_image(const char *image)
{
    size_t i, j;

    if (!image)
        return NULL;
    for (i = 0; i < NPROFILES; i++)
        for (j = 0; j < DRV_MAX && profiles[i].images[j]; j++)
            if (strstr(image, profiles[i].images[j]))
                return &profiles[i];
    return NULL;
}

const struct drv_profile *drv_profile_for_driver(const char *driver)
{
    size_t i, j;

    for (i = 0; driver && i < NPROFILES; i++) {
        for (j = 0; j < DRV_MAX && profiles[i].plugins[j].driver; j++)
            if (!strcmp(driver, profiles[i].plugins[j].driver))
                return &profiles[i];
        for (j = 0; j < DRV_MAX && profiles[i].other_names[j]; j++)
            if (!strcmp(driver, profiles[i].other_names[j]))
                return &profiles[i];
    }
    return NULL;
}

int drv_real_driver(const char *name)
{
    return drv_profile_for_driver(name) != NULL;
}

const struct drv_profile *drv_profile_for_class(const char *name)
{
    size_t i, j;

    for (i = 0; name && i < NPROFILES; i++)
        for (j = 0; j < DRV_MAX && profiles[i].classes[j]; j++)
            if (!strcmp(name, profiles[i].classes[j]))
                return &profiles[i];
    return NULL;
}

/* Objects whose drivers' controllers create claims or templates pods name. */
static const struct drv_creates creates[] = {
    /* The compute-domain controller makes the channel's ResourceClaimTemplate, named by the
     * ComputeDomain, in its namespace: NVIDIA/k8s-dra-driver-gpu v25.3.0-v25.12.0
     * cmd/compute-domain-controller (templates/compute-domain-workload-claim-template
     * .tmpl.yaml, "name: {{ .Name }}" from spec.channel.resourceClaimTemplate.name), and the
     * driver's demo/specs/imex manifests, which never define that template. */
    { "dra-driver-nvidia-gpu", "resource.nvidia.com", "ComputeDomain",
      { "spec", "channel", "resourceClaimTemplate", "name", NULL }, "ResourceClaimTemplate",
      "NVIDIA/k8s-dra-driver-gpu cmd/compute-domain-controller" },
};

const struct drv_creates *drv_creates_for(const char *api_version, const char *kind)
{
    size_t i, n;

    if (!api_version || !kind)
        return NULL;
    for (i = 0; i < sizeof(creates) / sizeof(creates[0]); i++) {
        n = strlen(creates[i].group);
        if (!strncmp(api_version, creates[i].group, n) && api_version[n] == '/' &&
            !strcmp(kind, creates[i].kind))
            return &creates[i];
    }
    return NULL;
}
