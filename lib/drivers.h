/*
 * drivers.h - what dra-doctor knows about real DRA drivers, as data.
 *
 * A profile says how to recognise a driver's kubelet-plugin DaemonSet (image
 * repository substrings), which driver names it publishes, where its binary
 * writes CDI specs unless told otherwise, and its knobs (the example
 * driver's NUM_DEVICES).  Adding a driver is adding a table row; no rule code
 * names a driver.
 */
#ifndef DD_DRIVERS_H
#define DD_DRIVERS_H

#include <stddef.h>
#include <stdint.h>

#include "cel.h"

#define DRV_MAX 4

/* Every DRA kubelet plugin registers through this host directory. */
#define DRV_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
/* ... and keeps its sockets below this one, in a directory named after the driver. */
#define DRV_PLUGINS_DIR "/var/lib/kubelet/plugins"

struct drv_profile {
    const char *id;                     /* short name, e.g. "dra-example-driver" */
    const char *vendor;
    const char *images[DRV_MAX];        /* substrings of the container image; NULL-terminated */
    const char *drivers[DRV_MAX];       /* driver names published; first is the main one */
    const char *cdi_root_env;           /* env var overriding the CDI spec dir, or NULL */
    const char *cdi_root_flag;          /* command-line flag doing the same, e.g. "--cdi-root" */
    const char *default_cdi_root;       /* binary default when neither is set */
    const char *num_devices_env;        /* env var with the device count, or NULL */
    int64_t default_num_devices;        /* devices per node when unset; -1 = real hardware, unknown */
    const struct cel_attr *device_attrs; /* template of one simulated device's attributes, or NULL */
    size_t ndevice_attrs;
    const struct cel_capacity *device_caps;
    size_t ndevice_caps;
};

/* The profile table. */
const struct drv_profile *drv_profiles(size_t *n);

/* The profile whose images match image (substring), or NULL. */
const struct drv_profile *drv_profile_for_image(const char *image);

/* The profile that publishes driver name, or NULL. */
const struct drv_profile *drv_profile_for_driver(const char *driver);

#endif
