#include "model/kubever.h"

#include <stdlib.h>
#include <string.h>

/* The kinds of structured-parameters DRA (resource.k8s.io v1alpha3 and later). */
static const char *const dra_kinds[] = { "DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                                         "ResourceSlice", NULL };

/* Classic DRA's own kinds (v1alpha1 in 1.26, v1alpha2 to 1.30): gone with it in 1.31. */
static const char *const classic_kinds[] = { "ResourceClass", "PodSchedulingContext",
                                             "ResourceClaimParameters",
                                             "ResourceClassParameters", NULL };

static int in(const char *const *set, const char *s)
{
    size_t i;

    for (i = 0; set[i]; i++)
        if (!strcmp(set[i], s))
            return 1;
    return 0;
}

enum dd_rc kv_parse(const char *s, int *minor, struct dd_err *err)
{
    const char *p = s;
    char *end;
    long maj, min;

    if (p && *p == 'v')
        p++;
    if (!p || *p < '0' || *p > '9')
        goto bad;
    maj = strtol(p, &end, 10);
    if (*end != '.')
        goto bad;
    min = strtol(end + 1, &end, 10);
    /* A patch release, pre-release or build suffix says nothing more about the API. */
    if (*end && *end != '.' && *end != '-' && *end != '+')
        goto bad;
    if (maj != 1 || min < KV_MIN_MINOR || min > KV_MAX_MINOR) {
        dd_failf(err, DD_EINVAL, "Kubernetes %s is not one whose API dra-doctor knows "
                 "(1.%d to 1.%d)", s, KV_MIN_MINOR, KV_MAX_MINOR);
        return DD_EINVAL;
    }
    *minor = (int)min;
    return DD_OK;
bad:
    dd_failf(err, DD_EINVAL, "'%s' is not a Kubernetes release (want 1.MINOR, e.g. 1.%d)",
             s ? s : "", KV_DEFAULT_MINOR);
    return DD_EINVAL;
}

enum kv_serving kv_resource_serving(int minor, const char *version, const char *kind,
                                    int *removed_in)
{
    *removed_in = 0;
    if (in(classic_kinds, kind)) {
        *removed_in = 31;
        return KV_NOT_SERVED;
    }
    if (!strcmp(version, "v1alpha1") || !strcmp(version, "v1alpha2")) {
        *removed_in = !strcmp(version, "v1alpha1") ? 27 : 31;
        return KV_NOT_SERVED;
    }
    /* DeviceTaintRule is the one kind v1alpha3 keeps from 1.34, as an alpha (off). */
    if (!strcmp(version, "v1alpha3")) {
        if (!strcmp(kind, "DeviceTaintRule"))
            return KV_OFF_BY_DEFAULT;
        if (!in(dra_kinds, kind))
            return KV_UNKNOWN;
        *removed_in = 34;
        return minor >= 34 ? KV_NOT_SERVED : KV_OFF_BY_DEFAULT;
    }
    if (!in(dra_kinds, kind))
        return KV_UNKNOWN;
    if (!strcmp(version, "v1"))
        return KV_SERVED;
    /* Beta APIs new since 1.24 are off by default; with v1 GA in 1.34 nothing turns them on. */
    if (!strcmp(version, "v1beta1") || !strcmp(version, "v1beta2"))
        return KV_OFF_BY_DEFAULT;
    return KV_UNKNOWN;
}

const char *kv_resource_preferred(int minor)
{
    (void)minor; /* v1 from 1.34, the first release the table holds */
    return "v1";
}

/* Kubelet patch releases whose DRA plugin connections are known to break. */
static const struct {
    const char *versions[4];
    const char *what;
} kubelet_bugs[] = {
    { { "1.34.0", "1.34.1", NULL },
      "kubelet 1.34.0 and 1.34.1 can lose a DRA plugin's registration (kubernetes/kubernetes"
      "#133920, fixed in 1.34.2; kubernetes-sigs/dra-driver-nvidia-gpu#814): upgrade the "
      "kubelet to 1.34.2 or later" },
};

const char *kv_kubelet_plugin_bug(const char *kubelet_version)
{
    const char *v = kubelet_version;
    size_t i, j, n;

    if (!v)
        return NULL;
    if (*v == 'v')
        v++;
    for (i = 0; i < sizeof(kubelet_bugs) / sizeof(kubelet_bugs[0]); i++)
        for (j = 0; j < 4 && kubelet_bugs[i].versions[j]; j++) {
            n = strlen(kubelet_bugs[i].versions[j]);
            /* "1.34.1" matches "v1.34.1" and "v1.34.1+k3s1", not "1.34.10". */
            if (!strncmp(v, kubelet_bugs[i].versions[j], n) &&
                (v[n] == '\0' || v[n] == '+' || v[n] == '-'))
                return kubelet_bugs[i].what;
        }
    return NULL;
}
