/*
 * drivers.h - what dra-doctor knows about real DRA drivers, as data.
 *
 * A profile says how to recognise a driver's kubelet-plugin DaemonSet (image
 * repositories, and for an image that runs several plugins the binary or
 * container of each), which driver names it publishes and which older
 * releases or device profiles used, the DeviceClasses its install ships or
 * documents, where its binary writes CDI specs unless told otherwise, and its
 * device-count knob.  Every profile names its source (repository@commit and
 * the files the facts come from; docs/rules.md#driver-profiles has the table).
 * Adding a driver is adding a table row; no rule code names a driver.
 *
 * A driver without a profile is still detected (lib/model/dra.c) by what every
 * kubelet plugin must do: register through the kubelet's plugin directories.
 */
#ifndef DD_DRIVERS_H
#define DD_DRIVERS_H

#include <stddef.h>
#include <stdint.h>

#include "cel/cel.h"

#define DRV_MAX 8

/* Every DRA kubelet plugin registers through this host directory. */
#define DRV_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
/* ... and keeps its sockets below this one, in a directory named after the driver. */
#define DRV_PLUGINS_DIR "/var/lib/kubelet/plugins"

/*
 * The verbs on resourceslices.resource.k8s.io a kubelet plugin's ServiceAccount needs: what
 * k8s.io/dynamic-resource-allocation's ResourceSlice controller calls (list and watch for
 * its informer, create, update, delete).  It never calls get or patch, so charts that grant
 * only these (dranet, dra-driver-cpu) are right.  Source: kubernetes/dynamic-resource-
 * allocation@kubernetes-1.36.0 resourceslice/resourceslicecontroller.go (List, Watch,
 * Update, Create, Delete; client/generic.go refuses Patch).
 */
extern const char *const drv_slice_verbs[]; /* NULL-terminated */

/* One kubelet plugin in a driver's image. */
struct drv_plugin {
    const char *driver; /* the driver name it publishes */
    const char *binary; /* its binary, found as a word in the container's command or args,
                           or NULL: the image runs one plugin */
    const char *container; /* the container name the chart gives it, or NULL */
};

/*
 * One check a driver makes of a claim's opaque configuration (config[].opaque.parameters) when it
 * prepares the claim, as its own validation code words it: a field that must hold one of a set
 * of values, and values that need one of the driver's feature gates (set by env FEATURE_GATES,
 * "Name=true,...").  A claim that fails it is refused on the node: FailedPrepareDynamicResources.
 */
struct drv_param {
    const char *api_version;   /* of parameters, e.g. "gpu.resource.example.com/v1alpha1" */
    const char *kinds[4];      /* parameters kinds it applies to; NULL-terminated */
    const char *path[4];       /* the field inside parameters; NULL-terminated */
    const char *values[8];     /* what the driver accepts; NULL-terminated */
    const char *error;         /* the driver's error for another value ("%s": the value) */
    const char *gated[4];      /* values that need a feature gate ... */
    const char *gate[4];       /* ... this one (parallel to gated) */
    const char *gate_error;    /* its error ("%s": the value, then the gate) */
};

struct drv_profile {
    const char *id;                     /* short name, e.g. "dra-example-driver" */
    const char *vendor;
    const char *source;                 /* repository@commit: where the facts come from */
    const char *images[DRV_MAX];        /* substrings of the image repository; NULL-terminated */
    struct drv_plugin plugins[DRV_MAX]; /* plugins the image runs; driver NULL ends the list */
    const char *other_names[DRV_MAX];   /* driver names of other releases or device profiles:
                                           real names, never typos of a current one */
    const char *name_env, *name_flag;   /* where the driver name can be set, or NULL */
    const char *devprofile_env;         /* env choosing a device profile whose name makes the
                                           driver name (devprofile_fmt, "%s.example.com") */
    const char *devprofile_fmt;
    const char *classes[DRV_MAX];       /* DeviceClasses its install ships or documents */
    int writes_cdi;                     /* 0: prepares devices without CDI (NRI, ...) */
    const char *cdi_root_env;           /* env var overriding the CDI spec dir, or NULL */
    const char *cdi_root_flag;          /* command-line flag doing the same, e.g. "--cdi-root" */
    const char *default_cdi_root;       /* where the binary writes when neither is set */
    const char *num_devices_env;        /* env var with the device count, or NULL */
    int64_t default_num_devices;        /* devices per node when unset; -1 = real hardware, unknown */
    const struct cel_attr *device_attrs; /* template of one simulated device's attributes, or NULL */
    size_t ndevice_attrs;
    const struct cel_capacity *device_caps;
    size_t ndevice_caps;
    const struct drv_param *params;     /* what it checks of opaque configuration, or NULL */
    size_t nparams;
};

/* The profile table. */
const struct drv_profile *drv_profiles(size_t *n);

/* The profile whose images match image (substring), or NULL. */
const struct drv_profile *drv_profile_for_image(const char *image);

/* The profile that publishes (or once published) driver name, or NULL. */
const struct drv_profile *drv_profile_for_driver(const char *driver);

/* 1 when name is a driver name some profile publishes now or did in another release or
 * device profile: a real name, which is never a misspelling of another. */
int drv_real_driver(const char *name);

/* The profile whose install ships or documents DeviceClass name, or NULL. */
const struct drv_profile *drv_profile_for_class(const char *name);

/*
 * An object of a driver's own API from which the driver's controller creates a ResourceClaim
 * or ResourceClaimTemplate that pods reference: a reference to it is satisfied by the driver,
 * not by a manifest.  The created object is in the driver object's namespace, named by the
 * string at `path` in it.
 */
struct drv_creates {
    const char *profile;     /* the profile's id */
    const char *group, *kind; /* e.g. "resource.nvidia.com", "ComputeDomain" */
    const char *path[6];     /* the created object's name; NULL-terminated */
    const char *creates;     /* "ResourceClaimTemplate" or "ResourceClaim" */
    const char *source;      /* where the fact comes from */
};

/* The entry for objects of kind in apiVersion's group, or NULL. */
const struct drv_creates *drv_creates_for(const char *api_version, const char *kind);

#endif
