/*
 * kubever.h - what a Kubernetes release is, as data: which resource.k8s.io versions and kinds
 * its API server serves by default, its DRA feature gates and their defaults, the texts its
 * components write that dra-doctor quotes or matches, and known bugs of its patch releases.
 *
 * Sources, read in the k8s.io/kubernetes module of each release (v1.34.3, v1.35.4, v1.36.3,
 * v1.37.2; k8s.io/dynamic-resource-allocation and k8s.io/api at the matching v0.x.y):
 *   - served versions: pkg/controlplane/instance.go (DefaultAPIResourceConfigSource: v1
 *     enabled; v1beta1, v1beta2 on the beta-off list; v1alpha3 alpha, off) and
 *     pkg/registry/resource/rest/storage_resource.go (the kinds each version stores);
 *     classic DRA (v1alpha2, ResourceClass) last in 1.30; core/v1 PodResourceClaim.source
 *     tombstoned in 1.31;
 *   - gates: pkg/features/kube_features.go, the versioned table of each release (the entry of
 *     the highest version not above the release; LockToDefault), and which API version
 *     pkg/scheduler/scheduler.go watches DeviceTaintRules in;
 *   - texts: structured/internal/{stable,incubating} allocators and cel/errors.go (the scheduler's), the
 *     kubelet's pkg/kubelet/cm/dra/manager.go.
 * docs/rules.md#releases has the tables for people; tests/unit/test_kubever.c checks them.
 */
#ifndef DD_KUBEVER_H
#define DD_KUBEVER_H

#include <stddef.h>

#include "err.h"

/* The release the e2e runs (e2e/cluster's K8S_VERSION; tests/unit/test_kubever.c checks). */
#define KV_DEFAULT_MINOR 37
/* Releases whose API facts the table holds: DRA is GA (resource.k8s.io/v1) from 1.34. */
#define KV_MIN_MINOR 34
#define KV_MAX_MINOR 37

/*
 * Parses a release as users write it: "1.37", "v1.37", "1.37.2", "v1.37.0-rc.1".  Sets *minor.
 * DD_EINVAL with a message naming the supported releases for anything else, or for a release
 * outside KV_MIN_MINOR..KV_MAX_MINOR.
 */
enum dd_rc kv_parse(const char *s, int *minor, struct dd_err *err);

/* The patch release of 1.minor whose sources the data were read from ("v1.37.2"), or NULL. */
const char *kv_release_version(int minor);

enum kv_serving {
    KV_SERVED,         /* served by default */
    KV_OFF_BY_DEFAULT, /* in the release, served only with --runtime-config */
    KV_NOT_SERVED,     /* not in the release at all: "no matches for kind" */
    KV_UNKNOWN         /* not a version or kind the table knows: say nothing */
};

/*
 * How release 1.minor serves kind in resource.k8s.io/version ("v1beta1").  *removed_in is set
 * to the release that removed it (0 when unknown or not removed).
 */
enum kv_serving kv_resource_serving(int minor, const char *version, const char *kind,
                                    int *removed_in);

/* The version release 1.minor serves kind in by default ("v1"; DeviceTaintRule: "v1" from 1.37,
 * else the version its scheduler watches), or NULL when it serves none by default. */
const char *kv_resource_preferred_for(int minor, const char *kind);

/* The version release 1.minor serves every core DRA kind in: what to move to. */
const char *kv_resource_preferred(int minor);

/* ---- Feature gates ---------------------------------------------------------------------- */

/* The gates the rules, the CEL environment and the live diagnosis ask about. */
enum kv_gate {
    KV_GATE_PRIORITIZED_LIST,      /* DRAPrioritizedList: firstAvailable */
    KV_GATE_ADMIN_ACCESS,          /* DRAAdminAccess */
    KV_GATE_DEVICE_TAINTS,         /* DRADeviceTaints: slices' taints, claims' tolerations */
    KV_GATE_DEVICE_TAINT_RULES,    /* DRADeviceTaintRules (1.35+; 1.34: DRADeviceTaints) */
    KV_GATE_PARTITIONABLE_DEVICES, /* DRAPartitionableDevices: shared counters */
    KV_GATE_CONSUMABLE_CAPACITY,   /* DRAConsumableCapacity: allowMultipleAllocations */
    KV_GATE_BINDING_CONDITIONS,    /* DRADeviceBindingConditions */
    KV_GATE_EXTENDED_RESOURCE,     /* DRAExtendedResource: DeviceClass.extendedResourceName */
    KV_GATE_CLAIM_DEVICE_STATUS,   /* DRAResourceClaimDeviceStatus: status.devices */
    KV_GATE_GRANULAR_STATUS_AUTHZ, /* DRAResourceClaimGranularStatusAuthorization */
    KV_GATE_LIST_TYPE_ATTRIBUTES,  /* DRAListTypeAttributes */
    KV_GATE_RESOURCE_HEALTH,       /* ResourceHealthStatus (kubelet) */
    KV_GATE_SCHEDULER_FILTER_TIMEOUT, /* DRASchedulerFilterTimeout */
    KV_NGATES
};

enum kv_gate_source { KV_FROM_DEFAULT, KV_FROM_FLAG, KV_FROM_SERVER };

/* The gates a release runs with: its defaults, then what --feature-gates or the live API
 * server says. */
struct kv_gates {
    int minor;
    unsigned char on[KV_NGATES];
    unsigned char from[KV_NGATES]; /* enum kv_gate_source */
};

/* The gate's name as Kubernetes spells it ("DRADeviceTaintRules"). */
const char *kv_gate_name(enum kv_gate g);

/* 1 when release 1.minor has gate g (which it may still default to off). */
int kv_gate_exists(int minor, enum kv_gate g);

/* Release 1.minor's defaults (gates it does not have are off). */
void kv_gates_init(struct kv_gates *g, int minor);

/*
 * Applies "NAME=true,NAME=false" (kube-apiserver's --feature-gates syntax) to g, recording
 * src.  As Kubernetes, refuses (DD_EINVAL, err) a malformed list, a gate the release does not
 * have ("unrecognized feature gate"), and a locked gate set against its lock.  Gates outside
 * DRA are accepted and ignored (they change nothing dra-doctor judges).
 */
enum dd_rc kv_gates_set(struct kv_gates *g, const char *text, enum kv_gate_source src,
                        struct dd_err *err);

/* Sets one gate (from the live API server): no check. */
void kv_gates_put(struct kv_gates *g, enum kv_gate gate, int on, enum kv_gate_source src);

/* The gate with this name, or -1. */
int kv_gate_lookup(const char *name);

/* "DRADeviceTaintRules off (1.36's default)" / "... on (--feature-gates)" / "(the API
 * server's)": a rule's stated assumption. */
const char *kv_gate_says(const struct kv_gates *g, enum kv_gate gate, char *buf, size_t size);

/* The CEL environment of the release and gates g (lib/cel: the DRA gates that change it);
 * stored: an object already stored, as the scheduler evaluates it. */
struct cel_env;
void kv_cel_env(const struct kv_gates *g, int stored, struct cel_env *env);

/* 1 when DeviceTaintRules of resource.k8s.io/version take effect under g: the release's
 * scheduler honours them (its gate on) and that version is served by default, or the gate was
 * set on explicitly (an operator who turns the gate on also serves its API). */
int kv_taint_rules_effective(const struct kv_gates *g, const char *version);

/* ---- Texts of a release's components, as dra-doctor quotes and matches them ------------- */

/*
 * The scheduler's words for a selector's CEL runtime error (the allocator's): "class C:
 * selector #N: CEL runtime error: E" to 1.36; from 1.37 "class C: selector #N on device
 * DRIVER/POOL/DEVICE: CEL runtime error: E", and for a missing key E gets the hint
 * ". consider using CEL optional chaining (...)".  claim is "ns/name" for a claim's selector,
 * NULL for class's.
 */
void kv_cel_runtime_text(int minor, const char *cls, const char *claim, size_t idx,
                         const char *driver, const char *pool, const char *device,
                         const char *err, char *buf, size_t size);

/* The scheduler's words for an invalid pool (1.34: "pool P is invalid: duplicate device name
 * D"; from 1.35 "invalid resource pools were encountered"). */
void kv_invalid_pool_text(int minor, const char *pool, const char *device, char *buf,
                          size_t size);

/*
 * A known kubelet bug in DRA plugin registration for this kubelet version ("v1.34.1" as
 * node.status.nodeInfo.kubeletVersion says), as one sentence with its source, or NULL.
 */
const char *kv_kubelet_plugin_bug(const char *kubelet_version);

/* The minor of a version string ("v1.35.4", "v1.36.3-gke.100"), or 0. */
int kv_minor_of(const char *version);

/* The release that removed pod.spec.resourceClaims[].source (replaced by resourceClaimName and
 * resourceClaimTemplateName on the entry itself). */
#define KV_POD_CLAIM_SOURCE_REMOVED 31

#endif
