#include "model/kubever.h"

#include "cel/cel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NREL (KV_MAX_MINOR - KV_MIN_MINOR + 1)
#define REL(minor) ((minor) - KV_MIN_MINOR)

/* The patch releases the tables were read from (their k8s.io/kubernetes modules). */
static const char *const release_version[NREL] = { "v1.34.3", "v1.35.4", "v1.36.3", "v1.37.2" };

/* ---- Served versions ---------------------------------------------------------------------- */

/* The kinds of structured-parameters DRA (resource.k8s.io v1alpha3 and later). */
static const char *const dra_kinds[] = { "DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                                         "ResourceSlice", NULL };

/* Classic DRA's own kinds (v1alpha1 in 1.26, v1alpha2 to 1.30): gone with it in 1.31. */
static const char *const classic_kinds[] = { "ResourceClass", "PodSchedulingContext",
                                             "ResourceClaimParameters",
                                             "ResourceClassParameters", NULL };

/* The kinds beside the core four, per version: from which release storage_resource.go stores
 * them, and whether that version is on by default (only v1 is). */
static const struct {
    const char *kind, *version;
    int since;
} extra_kinds[] = {
    { "DeviceTaintRule", "v1alpha3", 33 },
    { "DeviceTaintRule", "v1beta2", 36 },
    { "DeviceTaintRule", "v1", 37 },
    { "ResourcePoolStatusRequest", "v1alpha3", 36 },
};

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

const char *kv_release_version(int minor)
{
    return minor >= KV_MIN_MINOR && minor <= KV_MAX_MINOR ? release_version[REL(minor)] : NULL;
}

int kv_minor_of(const char *v)
{
    long maj, min;
    char *end;

    if (!v)
        return 0;
    if (*v == 'v')
        v++;
    maj = strtol(v, &end, 10);
    if (maj != 1 || *end != '.')
        return 0;
    min = strtol(end + 1, &end, 10);
    return min > 0 && min < 1000 ? (int)min : 0;
}

enum kv_serving kv_resource_serving(int minor, const char *version, const char *kind,
                                    int *removed_in)
{
    size_t i;
    int known = 0;

    *removed_in = 0;
    if (in(classic_kinds, kind)) {
        *removed_in = 31;
        return KV_NOT_SERVED;
    }
    if (!strcmp(version, "v1alpha1") || !strcmp(version, "v1alpha2")) {
        *removed_in = !strcmp(version, "v1alpha1") ? 27 : 31;
        return KV_NOT_SERVED;
    }
    for (i = 0; i < sizeof(extra_kinds) / sizeof(extra_kinds[0]); i++) {
        if (strcmp(extra_kinds[i].kind, kind))
            continue;
        known = 1;
        if (!strcmp(extra_kinds[i].version, version))
            return minor < extra_kinds[i].since ? KV_NOT_SERVED
                   : !strcmp(version, "v1")     ? KV_SERVED
                                                : KV_OFF_BY_DEFAULT;
    }
    if (known) /* a version that never held the kind */
        return !strcmp(version, "v1") || !strncmp(version, "v1beta", 6) ||
                       !strncmp(version, "v1alpha", 7)
                   ? KV_NOT_SERVED
                   : KV_UNKNOWN;
    if (!strcmp(version, "v1alpha3")) {
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

const char *kv_resource_preferred_for(int minor, const char *kind)
{
    if (!strcmp(kind, "DeviceTaintRule"))
        /* What the release's scheduler watches (pkg/scheduler/scheduler.go). */
        return minor >= 37 ? "v1" : minor == 36 ? "v1beta2" : "v1alpha3";
    if (!strcmp(kind, "ResourcePoolStatusRequest"))
        return minor >= 36 ? "v1alpha3" : NULL;
    return in(dra_kinds, kind) ? kv_resource_preferred(minor) : NULL;
}

/* ---- Feature gates ------------------------------------------------------------------------ */

/* Per release 1.34 .. 1.37: -1 the gate does not exist, 0 off, 1 on, 2 on and locked (setting
 * it false is an error).  pkg/features/kube_features.go of each release. */
static const struct {
    const char *name;
    signed char def[NREL];
} gates[KV_NGATES] = {
    [KV_GATE_PRIORITIZED_LIST] = { "DRAPrioritizedList", { 1, 1, 1, 2 } },
    [KV_GATE_ADMIN_ACCESS] = { "DRAAdminAccess", { 1, 1, 2, 2 } },
    [KV_GATE_DEVICE_TAINTS] = { "DRADeviceTaints", { 0, 0, 1, 1 } },
    [KV_GATE_DEVICE_TAINT_RULES] = { "DRADeviceTaintRules", { -1, 0, 0, 1 } },
    [KV_GATE_PARTITIONABLE_DEVICES] = { "DRAPartitionableDevices", { 0, 0, 1, 1 } },
    [KV_GATE_CONSUMABLE_CAPACITY] = { "DRAConsumableCapacity", { 0, 0, 1, 1 } },
    [KV_GATE_BINDING_CONDITIONS] = { "DRADeviceBindingConditions", { 0, 0, 1, 1 } },
    [KV_GATE_EXTENDED_RESOURCE] = { "DRAExtendedResource", { 0, 0, 1, 2 } },
    [KV_GATE_CLAIM_DEVICE_STATUS] = { "DRAResourceClaimDeviceStatus", { 1, 1, 1, 2 } },
    [KV_GATE_GRANULAR_STATUS_AUTHZ] = { "DRAResourceClaimGranularStatusAuthorization",
                                        { -1, -1, 1, 1 } },
    [KV_GATE_LIST_TYPE_ATTRIBUTES] = { "DRAListTypeAttributes", { -1, -1, 0, 0 } },
    [KV_GATE_RESOURCE_HEALTH] = { "ResourceHealthStatus", { 0, 0, 1, 1 } },
    [KV_GATE_SCHEDULER_FILTER_TIMEOUT] = { "DRASchedulerFilterTimeout", { 1, 1, 1, 1 } },
};

/* DRA gates that change nothing dra-doctor judges: accepted where the release has them (from
 * `since`; locked from `locked`, 0 never), refused elsewhere as Kubernetes refuses them. */
static const struct {
    const char *name;
    int since, locked;
} other_gates[] = {
    { "DynamicResourceAllocation", 0, 35 },
    { "ResourceHealthStatusMessage", 36, 0 },
    { "DRANodeAllocatableResources", 36, 0 },
    { "DRAResourcePoolStatus", 36, 0 },
    { "DRAWorkloadResourceClaims", 36, 0 },
    { "DRADerivedAttributes", 37, 0 },
    { "DRADeviceCompatibilityGroups", 37, 0 },
    { "DRAFractionalCapacityRange", 37, 0 },
    { "DRAOptionalNodeOperations", 37, 0 },
    { "DRAPartitionableDevicesType", 37, 0 },
};

const char *kv_gate_name(enum kv_gate g)
{
    return g < KV_NGATES ? gates[g].name : "";
}

int kv_gate_exists(int minor, enum kv_gate g)
{
    return g < KV_NGATES && minor >= KV_MIN_MINOR && minor <= KV_MAX_MINOR &&
           gates[g].def[REL(minor)] >= 0;
}

int kv_gate_lookup(const char *name)
{
    int i;

    for (i = 0; i < KV_NGATES; i++)
        if (!strcmp(gates[i].name, name))
            return i;
    return -1;
}

void kv_gates_init(struct kv_gates *g, int minor)
{
    int i;

    if (minor < KV_MIN_MINOR || minor > KV_MAX_MINOR)
        minor = KV_DEFAULT_MINOR;
    memset(g, 0, sizeof(*g));
    g->minor = minor;
    for (i = 0; i < KV_NGATES; i++)
        g->on[i] = gates[i].def[REL(minor)] > 0;
}

void kv_gates_put(struct kv_gates *g, enum kv_gate gate, int on, enum kv_gate_source src)
{
    if (gate >= KV_NGATES)
        return;
    g->on[gate] = on != 0;
    g->from[gate] = (unsigned char)src;
}

enum dd_rc kv_gates_set(struct kv_gates *g, const char *text, enum kv_gate_source src,
                        struct dd_err *err)
{
    const char *p = text;
    char name[128];

    while (p && *p) {
        size_t len = strcspn(p, ","), nlen, vlen, k;
        const char *eq;
        int on, gi, def = -1, locked = 0;

        /* kubectl and the components accept spaces after commas. */
        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        if (!len) {
            p += *p == ',';
            continue;
        }
        if (!(eq = memchr(p, '=', len)))
            return dd_failf(err, DD_EINVAL, "missing bool value for %.*s", (int)len, p);
        nlen = (size_t)(eq - p);
        vlen = len - nlen - 1;
        if (vlen == 4 && !strncasecmp(eq + 1, "true", 4))
            on = 1;
        else if (vlen == 5 && !strncasecmp(eq + 1, "false", 5))
            on = 0;
        else
            return dd_failf(err, DD_EINVAL, "invalid value of %.*s, want true or false",
                            (int)len, p);
        if (nlen == 0 || nlen >= sizeof(name))
            return dd_failf(err, DD_EINVAL, "feature gate '%.*s': expected NAME=true|false",
                            (int)len, p);
        memcpy(name, p, nlen);
        name[nlen] = '\0';
        if ((gi = kv_gate_lookup(name)) >= 0) {
            def = gates[gi].def[REL(g->minor)];
            locked = def == 2;
        } else {
            for (k = 0; k < sizeof(other_gates) / sizeof(other_gates[0]); k++)
                if (!strcmp(other_gates[k].name, name)) {
                    def = other_gates[k].since <= g->minor ? 1 : -1;
                    locked = other_gates[k].locked && other_gates[k].locked <= g->minor;
                }
            /* Not a DRA gate: nothing here depends on it. */
            if (def == -1 && strncmp(name, "DRA", 3))
                def = 1;
        }
        if (def < 0)
            return dd_failf(err, DD_EINVAL, "unrecognized feature gate: %s (Kubernetes 1.%d has "
                            "no such gate)", name, g->minor);
        if (locked && !on)
            return dd_failf(err, DD_EINVAL, "cannot set feature gate %s to false, feature is "
                            "locked to true (Kubernetes 1.%d)", name, g->minor);
        if (gi >= 0)
            kv_gates_put(g, (enum kv_gate)gi, on, src);
        p += len;
        if (*p == ',')
            p++;
    }
    return DD_OK;
}

const char *kv_gate_says(const struct kv_gates *g, enum kv_gate gate, char *buf, size_t size)
{
    static const char *const from[] = { "default", "--feature-gates", "the API server's" };
    int src;

    if (gate >= KV_NGATES) {
        snprintf(buf, size, "?");
        return buf;
    }
    src = g->from[gate];
    if (src == KV_FROM_DEFAULT)
        snprintf(buf, size, "%s %s (1.%d's default)", kv_gate_name(gate),
                 g->on[gate] ? "on" : "off", g->minor);
    else
        snprintf(buf, size, "%s %s (%s)", kv_gate_name(gate), g->on[gate] ? "on" : "off",
                 from[src > 2 ? 0 : src]);
    return buf;
}

void kv_cel_env(const struct kv_gates *g, int stored, struct cel_env *env)
{
    env->kube_minor = g->minor;
    env->stored = stored;
    env->features = (g->on[KV_GATE_CONSUMABLE_CAPACITY] ? CEL_FEATURE_CONSUMABLE_CAPACITY : 0) |
                    (g->on[KV_GATE_LIST_TYPE_ATTRIBUTES] ? CEL_FEATURE_LIST_ATTRIBUTES : 0);
}

int kv_taint_rules_effective(const struct kv_gates *g, const char *version)
{
    /* 1.34 has no DRADeviceTaintRules: DRADeviceTaints covers the rules too. */
    enum kv_gate gate = kv_gate_exists(g->minor, KV_GATE_DEVICE_TAINT_RULES)
                            ? KV_GATE_DEVICE_TAINT_RULES
                            : KV_GATE_DEVICE_TAINTS;
    int removed;
    enum kv_serving sv;

    if (!g->on[gate] || !g->on[KV_GATE_DEVICE_TAINTS])
        return 0;
    sv = kv_resource_serving(g->minor, version ? version : "", "DeviceTaintRule", &removed);
    return sv == KV_SERVED || (sv == KV_OFF_BY_DEFAULT && g->from[gate] != KV_FROM_DEFAULT);
}

/* ---- Texts ---------------------------------------------------------------------------------- */

/* cel/errors.go EnhanceRuntimeError (1.37). */
#define CEL_MISSING_KEY_HINT                                                                   \
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "  \
    "with has() for optional fields"

void kv_cel_runtime_text(int minor, const char *cls, const char *claim, size_t idx,
                         const char *driver, const char *pool, const char *device,
                         const char *err, char *buf, size_t size)
{
    const char *what = claim ? "claim" : "class", *who = claim ? claim : cls;

    if (minor < 37) {
        snprintf(buf, size, "%s %s: selector #%zu: CEL runtime error: %s", what, who, idx, err);
        return;
    }
    snprintf(buf, size, "%s %s: selector #%zu on device %s/%s/%s: CEL runtime error: %s%s", what,
             who, idx, driver, pool, device, err,
             strstr(err, "no such key:") ? CEL_MISSING_KEY_HINT : "");
}

void kv_invalid_pool_text(int minor, const char *pool, const char *device, char *buf,
                          size_t size)
{
    if (minor <= 34)
        snprintf(buf, size, "pool %s is invalid: duplicate device name %s", pool, device);
    else
        snprintf(buf, size, "invalid resource pools were encountered");
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
