/*
 * alloc.h - kube-scheduler's device allocation for a pod, node by node, as the
 * DynamicResources plugin decides it with k8s.io/dynamic-resource-allocation/structured
 * at Kubernetes v1.37.2 (the variant NewAllocator picks for the feature gates: "stable",
 * "incubating" for the release's defaults, "experimental" with alpha gates), and why a
 * node does not fit.
 *
 * Per candidate node, all of the pod's unallocated claims together: the pools whose slices
 * reach the node (nodeName, nodeSelector, allNodes, per-device node selection), complete
 * and of the newest generation, valid (unique device names, known counter sets); class
 * and request selectors; `exactly` with count or allocationMode All, `firstAvailable`;
 * matchAttribute and distinctAttribute constraints; devices other claims hold (allocated
 * or in flight; admin access holds nothing); admin access; device taints and tolerations;
 * shared counters and consumesCounters; consumable capacity (allowMultipleAllocations,
 * request policies); binding conditions (pools with them last); the upstream search order
 * and its limits (32 devices per claim), so that a verdict is the scheduler's.  The pod's
 * own node filters (nodeSelector, affinity, taints: lib/model/nodefit) are reported beside
 * the verdict, not mixed into it, as the scheduler's filters are separate plugins.
 *
 * Everything is a pure function of a finished struct dra_model.  The inventory borrows
 * the model (and its cJSON trees): both must outlive it.  An inventory is read-only once
 * built; alloc_pod may run on any number of threads at once.
 */
#ifndef DD_ALLOC_H
#define DD_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "model/dra.h"
#include "err.h"

/* The feature gates the scheduler's allocator reads (AllocatorFeatures, and the plugin's
 * own): one flag per Kubernetes gate, named as the gate is. */
struct alloc_gates {
    unsigned admin_access : 1;              /* DRAAdminAccess */
    unsigned consumable_capacity : 1;       /* DRAConsumableCapacity */
    unsigned derived_attributes : 1;        /* DRADerivedAttributes */
    unsigned binding_conditions : 1;        /* DRADeviceBindingConditions */
    unsigned compatibility_groups : 1;      /* DRADeviceCompatibilityGroups */
    unsigned device_taints : 1;             /* DRADeviceTaints */
    unsigned fractional_capacity_range : 1; /* DRAFractionalCapacityRange */
    unsigned list_type_attributes : 1;      /* DRAListTypeAttributes */
    unsigned optional_node_operations : 1;  /* DRAOptionalNodeOperations */
    unsigned partitionable_devices : 1;     /* DRAPartitionableDevices */
    unsigned prioritized_list : 1;          /* DRAPrioritizedList */
    unsigned claim_device_status : 1;       /* DRAResourceClaimDeviceStatus */
};

/* Kubernetes v1.37's defaults (pkg/features/kube_features.go). */
void alloc_gates_default(struct alloc_gates *g);

/* Sets the gate called name; 0, or -1 for a gate the allocator does not read. */
int alloc_gates_set(struct alloc_gates *g, const char *name, int on);

/* "DRAConsumableCapacity=false,DRAListTypeAttributes=true" (kube-scheduler's
 * --feature-gates); gates the allocator does not read are ignored.  DD_EINVAL with err on
 * bad text. */
enum dd_rc alloc_gates_parse(struct alloc_gates *g, const char *text, struct dd_err *err);

/* Which of upstream's implementations the gates select: "stable", "incubating",
 * "experimental" (static). */
const char *alloc_gates_variant(const struct alloc_gates *g);

struct alloc_options {
    struct alloc_gates gates;
    /* ResourceClaims whose allocation the scheduler holds but has not written yet (their
     * devices are taken; a pod whose own claim is one of them waits); NULL for none.
     * Borrowed. */
    const cJSON *in_flight;
    /* A pod claim from a ResourceClaimTemplate whose claim was not generated yet stands
     * for the template's spec (lint: the pod does not exist yet); otherwise the pod waits
     * for it as the scheduler does. */
    int templates_as_claims;
    /* Search steps (allocateOne calls) per node before giving up, the stand-in for the
     * scheduler's 10 s filter timeout; 0: ALLOC_MAX_STEPS. */
    uint64_t max_steps;
    /* Stop at the first node that fits (by the DRA filter and the pod's own), or that the
     * DRA filter fails on with an error (then the pod fits nowhere: alloc_result.nfit):
     * whether the pod fits anywhere, as a diagnosis asks it, costs one node's search instead
     * of every node's.  alloc_result.nodes then holds the nodes judged, up to that one.  An
     * error on a node after the first fit goes unseen (the full search says the pod fits
     * nowhere then: a missed diagnosis, never a false one). */
    int first_fit;
    /* The Nodes to judge on instead of the model's (lint assumes them when its input has
     * none); NULL: the model's.  Borrowed: they must outlive the inventory. */
    const struct dra_obj *nodes;
    size_t nnodes;
};

#define ALLOC_MAX_STEPS 20000000

void alloc_options_default(struct alloc_options *o);

struct alloc_inventory;

/*
 * The allocator for a model, as NewAllocator is for a snapshot of the cluster: the slices
 * indexed by node and pool, every device's taints, counters and capacities parsed, the
 * devices allocated claims hold.  opt is copied (opt->in_flight stays borrowed).  NULL on
 * ENOMEM (err says so).
 */
struct alloc_inventory *alloc_inventory_new(const struct dra_model *m,
                                            const struct alloc_options *opt,
                                            struct dd_err *err);
void alloc_inventory_free(struct alloc_inventory *inv);

enum alloc_verdict { ALLOC_FIT, ALLOC_UNSCHEDULABLE, ALLOC_ERROR };

/* One device the allocator picked. */
struct alloc_pick {
    size_t claim;            /* index into alloc_result.claims */
    char *request;           /* "request" or "request/subrequest"; owned */
    const char *driver;      /* borrowed from the model */
    const char *pool;
    const char *device;
    int admin_access;
    int shared;              /* an allowMultipleAllocations device: one share of it */
};

/* The devices of a node, one step of selection after the other, for one request (or one
 * firstAvailable alternative). */
struct alloc_funnel {
    const char *request;     /* "request" or "request/subrequest"; owned */
    const char *class_name;  /* borrowed */
    int all;                 /* allocationMode: All */
    int64_t need;            /* devices it asks for (All: those that match and have the
                                capacity it asks for) */
    size_t on_node;          /* devices of the usable pools that reach the node */
    size_t class_ok;         /* ... that the class's selectors accept */
    size_t selected;         /* ... and the request's selectors (and per-device node selection) */
    size_t free;             /* ... not held by another claim */
    size_t node_ops;         /* ... of those, in slices that skip node operations the node does
                                not declare optional (DRAOptionalNodeOperations) */
    size_t tolerated;        /* ... without a taint the request does not tolerate */
    size_t counters_ok;      /* ... whose counters are left */
    size_t capacity_ok;      /* ... whose capacity the request fits in */
    const char *held_by[3];  /* claims (ns/name) holding selected devices; owned */
    size_t nheld;
    char *taint;             /* "key=value:Effect" of an untolerated taint; owned */
    char *counter;           /* "counterSet/counter" that ran out; owned */
    char *capacity;          /* capacity too small, or not published; owned */
    size_t skipped;          /* devices the request would take in pools the scheduler skips */
    char *skipped_pool;      /* "driver/pool: why" of the first such pool; owned */
};

enum alloc_why_kind {
    ALLOC_WHY_NONE,
    ALLOC_WHY_ERROR,         /* the allocator itself failed here (reason): a CEL error, ... */
    ALLOC_WHY_UNAVAILABLE,   /* an allocated claim cannot be used on the node (detail) */
    ALLOC_WHY_DEVICES,       /* a request: fewer usable devices than it asks for */
    ALLOC_WHY_CONSTRAINT,    /* a claim's constraint: enough devices, no set that agrees */
    ALLOC_WHY_TOGETHER       /* each claim fits alone, not all of them together */
};

struct alloc_why {
    enum alloc_why_kind kind;
    size_t claim;                 /* index into alloc_result.claims */
    struct alloc_funnel *alts;    /* DEVICES: the request (or each alternative); owned */
    size_t nalts;
    char *constraint;             /* CONSTRAINT: "matchAttribute: <name>"; owned */
    const char *detail;           /* UNAVAILABLE: why; static */
};

struct alloc_node {
    const struct dra_obj *node;   /* borrowed from the model */
    const char *pod_filter;       /* why the pod's own filters exclude the node; NULL if not.
                                     Borrowed from the result (texts, or its reason) */
    enum alloc_verdict verdict;   /* the DynamicResources filter's */
    const char *reason;           /* the scheduler's words; NULL when it fits.  As pod_filter */
    struct alloc_pick *picks;     /* what it would allocate; owned */
    size_t npicks;
    struct alloc_why why;         /* why it does not fit (kind NONE when it does) */
};

struct alloc_result {
    enum alloc_verdict verdict;   /* FIT: judged per node; otherwise for every node (PreFilter) */
    char *reason;                 /* owned; NULL when FIT */
    const struct dra_claim **claims; /* the pod's claims in spec order (a template standing
                                       for its claim); borrowed pointers, owned array */
    size_t nclaims;
    struct alloc_node *nodes;     /* the model's Nodes, by name; owned */
    size_t nnodes;
    size_t nfit;                  /* nodes the pod can be bound to: those that fit by the DRA
                                     filter and the pod's own; 0 when the DRA filter fails with
                                     an error on any node the pod's own filters admit (that
                                     error ends the scheduler's cycle) */
    long deallocate;              /* when the pod fits nowhere: the claim (index into claims)
                                     kube-scheduler's PostFilter deallocates before it tries
                                     again - allocated, unavailable on a node where the DRA
                                     filter got past the allocator (the pod's other claims found
                                     devices there), reserved for no other pod - else -1.  The verdict
                                     is then not final: the pod's next one is that of the
                                     cluster without this allocation */
    /* Owned: the nodes' texts, each once.  The same words come on most of a thousand nodes;
     * a copy per node made the allocator's malloc the bulk of a diagnosis. */
    char **texts;
    size_t ntexts, captexts;
};

/*
 * Judges pod (a Pod, or a workload's pod template) on every Node of the inventory's model.
 * explain: also fill each unfit node's `why` (a few more passes over its devices).  The pod
 * need not belong to the inventory's model (the webhook judges the pod it admits against its
 * view's): its claims and templates are found in that model.
 * Returns DD_OK with *out filled (release it with alloc_result_release), or DD_ENOMEM.
 */
enum dd_rc alloc_pod(const struct alloc_inventory *inv, const struct dra_podspec *pod,
                     int explain, struct alloc_result *out, struct dd_err *err);

/* The model inv was built from (borrowed). */
const struct dra_model *alloc_inventory_model(const struct alloc_inventory *inv);

/* alloc_pod, with the pod's claims and templates found in m instead: a model patched from the
 * inventory's (the same classes, slices, nodes and allocations; claims that came since past
 * its own: lib/rules/snapshot).  m is borrowed for the call. */
enum dd_rc alloc_pod_in(const struct alloc_inventory *inv, const struct dra_model *m,
                        const struct dra_podspec *pod, int explain, struct alloc_result *out,
                        struct dd_err *err);

void alloc_result_release(struct alloc_result *r);

/*
 * What alloc_pod's PreFilter reads of claim c (pc's, of pod) besides its spec, as bits: 1 when
 * c was created from pc's template but pod does not control it, 2 when c is unallocated and
 * in the process of being allocated.  Pods alike whose claims differ in these are judged apart
 * (a verdict's cache key).
 */
unsigned alloc_claim_state(const struct alloc_inventory *inv, const struct dra_podspec *pod,
                           const struct dra_pod_claim *pc, const struct dra_claim *c);

/* The smallest true sentence for why node n of r does not fit (its `why`, else its reason),
 * without the node's name, so that nodes with the same text can be grouped.  Returns the
 * length it needed (snprintf's contract). */
size_t alloc_why_text(const struct alloc_result *r, const struct alloc_node *n, char *buf,
                      size_t size);

#endif
