/*
 * dra.h - the snapshot: every object the rules look at, normalised.
 *
 * A model is built by adding Kubernetes objects one at a time (cJSON trees,
 * borrowed: they must outlive the model).  The linter adds what it loaded
 * from files; the webhook and controller add what their informer caches
 * hold.  Objects of any served version are accepted: resource.k8s.io v1,
 * v1beta2 (same shapes as v1) and v1beta1/v1alpha3 (flat requests, `basic`
 * devices) normalise into the same structures.  Pods and the pod templates of
 * Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs
 * become struct dra_podspec with the number of pods they stand for.
 *
 * Memory: the model owns its arrays and compiled CEL programs; strings are
 * borrowed from the trees.  Not thread-safe while being built; read-only use
 * from several threads is safe once built.
 */
#ifndef DD_DRA_H
#define DD_DRA_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "cel/cel.h"
#include "model/cri.h"
#include "model/drivers.h"
#include "err.h"

struct dra_devices; /* dra.c */

/* Where a node of a tree came from; returns 1 and sets *line, or 0. */
typedef int (*dra_pos_fn)(void *ctx, const cJSON *node, int *line);

struct dra_obj {
    const cJSON *json;       /* the whole object; borrowed */
    const char *api_version; /* never NULL */
    const char *kind;        /* never NULL */
    const char *ns;          /* "" when cluster-scoped or unset */
    const char *name;        /* metadata.name (or generateName); never NULL */
    const char *file;        /* source file; NULL for live objects */
    int line;                /* 1-based line of the object; 0 when unknown */
};

struct dra_cel_entry;

struct dra_selector {
    const char *expr;         /* CEL source; borrowed */
    struct cel_program *prog; /* owned, or shared through the model's cel_cache (then
                                 `shared` holds a reference); NULL when compilation failed */
    struct dra_cel_entry *shared;
    struct dd_err err;        /* why it failed, when prog is NULL */
    int line;                 /* line of the expression in the file; 0 when unknown */
    uint32_t id;              /* the expression's number in the model (selectors with the same
                                 text share it, and their results: dra_selector_match); 0 when
                                 prog is NULL */
};

struct dra_request {
    const char *name;
    const char *class_name;      /* NULL for a firstAvailable parent */
    int all;                     /* allocationMode: All */
    int64_t count;               /* devices for ExactCount (default 1) */
    int admin_access;            /* adminAccess: true */
    const cJSON *tolerations;    /* device taint tolerations, or NULL; borrowed */
    struct dra_selector *sel;    /* owned array */
    size_t nsel;
    struct dra_request *sub;     /* firstAvailable alternatives; owned array */
    size_t nsub;
    int line;
};

struct dra_claim_spec {
    struct dra_request *req;     /* owned array, or the model's (shared) */
    size_t nreq;
    int shared;                  /* req is the model's, for every claim whose requests are
                                    the same list held once (dd_json_share in a live cache) */
    const cJSON *config;         /* devices.config [{requests, opaque: {driver, parameters}}];
                                    borrowed, may be NULL */
};

struct dra_class {
    struct dra_obj o;
    struct dra_selector *sel;    /* owned array */
    size_t nsel;
    const cJSON *config;         /* spec.config, as a claim's; borrowed, may be NULL */
};

struct dra_claim {               /* a ResourceClaim or a ResourceClaimTemplate */
    struct dra_obj o;
    struct dra_claim_spec spec;
    int is_template;
    int allocated;               /* status.allocation is set (live objects) */
    const cJSON *alloc_nodes;    /* status.allocation.nodeSelector: where the allocated devices
                                    are (NULL: everywhere, or not allocated); borrowed */
    const cJSON *alloc_results;  /* status.allocation.devices.results, or NULL; borrowed */
    int binding;                 /* a result has bindingConditions or bindingFailureConditions
                                    (found once: a rule run reads every allocated claim) */
    const cJSON *reserved_for;   /* status.reservedFor [{resource, name, uid}]; borrowed */
};

struct dra_slice;

struct dra_device {
    const char *name;
    const cJSON *json;           /* the device object (taints, per-device node selection); borrowed */
    struct cel_device dev;       /* attrs and caps arrays owned with the slices */
    int tainted;                 /* it has taints of its own (json's "taints") */
    /* Set by dra_model_finish: */
    size_t id;                   /* position in m->devices (slice order) */
    const struct dra_slice *slice; /* the slice publishing it */
    const struct cel_device_value *val; /* dev as CEL sees it, built once; NULL after ENOMEM */
};

struct dra_slice {
    struct dra_obj o;
    const char *driver;
    const char *node;            /* spec.nodeName, "" otherwise */
    const char *pool;
    int64_t generation;          /* spec.pool.generation (0 when unset) */
    int64_t slice_count;         /* spec.pool.resourceSliceCount (1 when unset) */
    const cJSON *node_selector;  /* spec.nodeSelector, or NULL; borrowed */
    int all_nodes;               /* spec.allNodes */
    int per_device_nodes;        /* spec.perDeviceNodeSelection */
    struct dra_device *dev;      /* owned array */
    size_t ndev;
};

struct dra_env {
    const char *name;
    const char *value;           /* NULL when it comes from valueFrom */
    int line;
};

struct dra_mount {
    const char *volume;
    const char *path;
};

struct dra_container {
    const char *name;
    const char *image;           /* "" when unset */
    const cJSON *command;        /* borrowed arrays (may be NULL) */
    const cJSON *args;
    const cJSON *claims;         /* resources.claims: [{name, request}]; borrowed, may be NULL */
    struct dra_env *env;         /* owned array */
    size_t nenv;
    struct dra_mount *mounts;    /* owned array */
    size_t nmounts;
    int init;                    /* an initContainer: runs before the pod, never a plugin */
    int line;
};

struct dra_volume {
    const char *name;
    const char *host_path;       /* NULL unless a hostPath volume */
};

struct dra_pod_claim {
    const char *name;            /* pod.spec.resourceClaims[].name */
    const char *claim;           /* resourceClaimName, or NULL */
    const char *tmpl;            /* resourceClaimTemplateName, or NULL */
    int has_source;              /* the entry has `source` (removed in 1.31) */
    int line;
    /* dra_pod_claim_resolve's answer in the models whose claims_gen is gen (0: none yet),
     * set before the model is shared: the rules resolve every pod's claims, many times. */
    uint64_t gen;
    const struct dra_claim *resolved;
};

struct dra_podspec {
    struct dra_obj o;            /* the Pod or the workload holding the template */
    const cJSON *spec;           /* the pod spec; borrowed */
    const cJSON *status;         /* a live Pod's status, or NULL; borrowed */
    const char *node;            /* spec.nodeName; "" when unscheduled or not a Pod */
    int64_t replicas;            /* pods this spec stands for; -1 for a DaemonSet (one per node) */
    const char *service_account; /* "default" when unset */
    struct dra_pod_claim *claims; /* owned array */
    size_t nclaims;
    struct dra_container *ctr;   /* containers then initContainers; owned array */
    size_t nctr;
    struct dra_volume *vol;      /* owned array */
    size_t nvol;
};

struct dra_quota_item {
    const char *key;             /* e.g. "gpu.example.com.deviceclass.resource.k8s.io/devices" */
    int64_t hard;
    int line;
};

struct dra_quota {
    struct dra_obj o;
    struct dra_quota_item *hard; /* owned array; only whole-number entries */
    size_t nhard;
};

enum dra_cdi_src { DRA_CDI_DEFAULT, DRA_CDI_ENV, DRA_CDI_FLAG };

/*
 * A DRA driver installation found through its kubelet-plugin DaemonSet: one entry per plugin
 * (NVIDIA's DaemonSet runs two).
 */
struct dra_driver {
    const struct dra_podspec *ds;     /* the DaemonSet; borrowed from the model */
    const struct dra_container *ctr;  /* the plugin container */
    const struct drv_profile *profile; /* NULL when recognised only by registration paths */
    const char *name;                 /* driver name; "" when nothing tells it.  Borrowed */
    const char *name_from;            /* what told it: "profile", "env DRIVER_NAME", "flag
                                         --driver-name", "plugin directory", "RBAC on
                                         resourceclaims/driver", "DeviceClass
                                         beside it"; static */
    int64_t num_devices;              /* devices per node; -1 unknown */
    int num_devices_line;
    int writes_cdi;                   /* 1 yes, 0 no (the profile says so), -1 unknown */
    const char *cdi_root;             /* where the plugin writes CDI specs; NULL unknown */
    enum dra_cdi_src cdi_src;
    int cdi_line;
};

/* An Event about an object (core/v1 or events.k8s.io/v1), as live evidence. */
struct dra_event {
    const char *type;     /* "Normal" or "Warning" */
    const char *reason;   /* e.g. "FailedScheduling", "FailedResourceClaimCreation", "Failed" */
    const char *message;
    const char *kind;     /* of the object it is about */
    const char *ns;
    const char *name;
    size_t seq;           /* order of arrival: the later of two events is the newer */
    const cJSON *json;    /* the Event; borrowed */
};

/*
 * What a node's container runtime does with CDI: from the lint command's
 * --containerd-config, from the node agent's annotation, or inferred from the
 * runtime version a Node reports.
 */
enum dra_runtime_src { DRA_RT_FILE, DRA_RT_AGENT, DRA_RT_INFERRED };

struct dra_runtime {
    const char *node;          /* Node name; NULL for a config file given to lint */
    const struct dra_obj *obj; /* the Node, or NULL for a file */
    enum dra_runtime_src src;
    struct cri_config cfg;     /* owned (copies); cfg.file names the source */
};

/* A SubjectAccessReview answer the controller obtained: authoritative over RBAC objects. */
struct dra_sar {
    const char *ns, *sa;       /* the ServiceAccount */
    const char *verb;          /* on resourceslices.resource.k8s.io, cluster scope */
    int allowed;
};

/* Annotation the node agent writes on its Node (JSON, see docs/rules.md#cdidisabled). */
#define DRA_NODE_CDI_ANNOTATION "dra-doctor.io/cdi"

/* Generic objects the rules read as they are (RBAC, nodes, service accounts). */
struct dra_objs {
    struct dra_obj *v;
    size_t n, cap;
};

struct dra_model {
    struct dra_class *classes;     size_t nclasses, capclasses;
    struct dra_claim *claims;      size_t nclaims, capclaims;   /* claims and templates */
    struct dra_slice *slices;      size_t nslices, capslices;
    int slices_borrowed;           /* slices belong to another model (dra_model_borrow_slices) */
    struct dra_devices *devs;      /* once finished (or borrowed): the owner of slices, devices,
                                      device_slice, device_tainted, values and owned, shared by
                                      the models that borrow them; a reference */
    /* Owned: the array and the podspecs (by address, so that a model patched with a few
     * changed ones copies addresses: lib/rules/snapshot.h). */
    const struct dra_podspec **pods; size_t npods, cappods;
    struct dra_quota *quotas;      size_t nquotas, capquotas;
    struct dra_driver *drivers;    size_t ndrivers, capdrivers;
    const char **install_names;    /* driver names that DeviceClasses shipped beside a driver
                                      DaemonSet of unknown name (same directory) say it
                                      publishes; borrowed from the classes' programs */
    size_t ninstall_names;
    struct dra_objs roles;         /* Role and ClusterRole */
    struct dra_objs bindings;      /* RoleBinding and ClusterRoleBinding */
    struct dra_objs nodes;
    struct dra_objs serviceaccounts;
    struct dra_objs namespaces;
    struct dra_objs plugin_pods;   /* Pods without claims that register a kubelet plugin (a
                                      driver DaemonSet's pods: where each driver runs) */
    struct dra_objs mutators;      /* MutatingWebhookConfigurations and MutatingAdmission-
                                      Policies: what may rewrite a pod before it is stored */
    struct dra_objs driver_objects; /* objects of drivers' own APIs whose controllers create
                                      claims or templates (drv_creates_for) */
    struct dra_objs resource_other; /* resource.k8s.io objects of other kinds (DeviceTaintRule,
                                      classic DRA's ResourceClass, ...): only their apiVersion
                                      and kind are judged */
    struct dra_event *events;      size_t nevents, capevents;
    struct dra_runtime *runtimes;  size_t nruntimes, capruntimes;
    const struct dra_sar *sar;     /* borrowed; set by the controller */
    size_t nsar;
    int live;                      /* 1: objects come from a running cluster (controller,
                                      webhook): absent slices and statuses mean something */
    size_t nobjects;               /* every object added, relevant or not */
    const struct cri_config *cri;  /* lint's --containerd-config, or NULL; borrowed (it also
                                      becomes a runtime entry in dra_model_finish) */
    dra_pos_fn pos;                /* optional position lookup for sub-nodes */
    void *pos_ctx;
    char **owned;                  /* strings the slices' parse allocated (attribute domains,
                                      list values): the devices' (devs) */
    size_t nowned, capowned;
    uint64_t claims_gen;           /* set when the podspecs' claims were resolved against
                                      claims (dra_model_finish), unique to these claims; 0
                                      after a later add of a claim.  A copy of the model with
                                      the same claims keeps it */
    size_t *claim_idx;             /* open-addressing index of claims (1 + position; 0 empty),
                                      built by dra_model_finish and kept up to date by later
                                      adds; capacity nclaim_idx */
    size_t nclaim_idx;
    size_t nclaims_indexed;        /* claims[0..nclaims_indexed) are in the index */
    size_t *class_idx;             /* the same for classes by name */
    size_t nclass_idx;
    size_t nclasses_indexed;
    size_t *node_idx;              /* and for Nodes by name */
    size_t nnode_idx;
    size_t nnodes_indexed;
    size_t *node_next;             /* per indexed Node: the next one of the same name, or
                                      SIZE_MAX (dra_node_next) */
    size_t *node_rt;               /* per indexed Node: 1 + its entry of runtimes, or 0 */
    size_t *plugin_idx;            /* plugin_pods by spec.nodeName: 1 + the first; 0 empty */
    size_t nplugin_idx;
    size_t *plugin_next;           /* per plugin pod: 1 + the next on its node, or 0 */
    struct dra_cel_cache *cel_cache; /* optional, borrowed: compiled selectors to share (set
                                      after dra_model_init; release clears it) */
    const struct dra_device **devices; /* every published device, in slice order (dra_device.id);
                                      built by dra_model_finish; devs' */
    size_t ndevices;
    uint32_t *device_slice;        /* per device: its slice's index in slices (as devices); the
                                      loops over every device read these, not the devices */
    unsigned char *device_tainted; /* per device: dra_device.tainted (as devices) */
    struct cel_device_set *values; /* the devices' CEL values; devs' */
    struct dra_memo *memo;         /* selector texts and their results per device; owned */
    struct dra_specs *specs;       /* requests parsed once per list held once; owned */
    int values_transient;          /* set before dra_model_finish: each device's CEL value is
                                      built to judge every class on it and then dropped, so
                                      other selectors build it again per verdict (the verdicts
                                      are remembered as ever).  The webhook's view, whose
                                      requests judge their own selectors on a few sample
                                      slices: ~400 bytes less a device */
};

/* Initialises an empty model; pos may be NULL. */
void dra_model_init(struct dra_model *m, dra_pos_fn pos, void *pos_ctx);

/*
 * Compiled selectors shared by the successive models of one owner: the controller
 * would otherwise compile every DeviceClass's selectors again for every snapshot, and
 * keep two copies while two snapshots are alive.  A model with m->cel_cache set takes
 * the program of an expression compiled before (a reference, dropped by
 * dra_model_release on any thread) instead of compiling it.  Models that use a cache
 * must be built on one thread at a time, the one that calls dra_cel_cache_trim.
 */
struct dra_cel_cache;
struct dra_cel_cache *dra_cel_cache_new(void);
/* Frees the programs no model holds any more; returns how many remain. */
size_t dra_cel_cache_trim(struct dra_cel_cache *c);
/* Frees the cache and its programs: every model that used it must be released. */
void dra_cel_cache_free(struct dra_cel_cache *c);
/* Adds nothing to c any more, so that models on any number of threads may use it at once:
 * they take the programs it holds and compile other expressions for themselves (the
 * webhook's view holds every DeviceClass's programs for the requests that name them). */
void dra_cel_cache_freeze(struct dra_cel_cache *c);

/*
 * What dra_model_add does with objects of a kind, so that a loader can drop
 * the others as soon as they are parsed (or not build them at all):
 * IGNORED: counted, nothing read; USED: always read; USED_WITH_CLAIMS
 * (workloads other than DaemonSets): read only when the pod template has a
 * DRA_CLAIMS_KEY array, so one with no key of that name anywhere is ignored.
 */
enum dra_relevance { DRA_KIND_IGNORED, DRA_KIND_USED, DRA_KIND_USED_WITH_CLAIMS };

#define DRA_CLAIMS_KEY "resourceClaims"
/* A container's resources.claims: such a pod is DRA's even without resourceClaims. */
#define DRA_CONTAINER_CLAIMS_KEY "claims"

enum dra_relevance dra_kind_relevant(const char *api_version, const char *kind);

/*
 * 1 when dra_model_add would read anything of obj (the single source of
 * truth for dropping objects early); 0 when dropping it changes no result.
 */
int dra_object_relevant(const cJSON *obj);

/*
 * Adds one object (borrowed; must outlive the model).  file may be NULL.
 * Objects of kinds the rules do not use are counted and otherwise ignored.
 * Returns DD_OK, DD_ENOMEM, or DD_EINVAL for a slice when m borrows slices.  Drivers are detected when the model is
 * finished, see dra_model_finish.
 */
enum dd_rc dra_model_add(struct dra_model *m, const cJSON *obj, const char *file, int line);

/*
 * Detects driver installations among the DaemonSets and collects runtime
 * facts (m->cri, Node annotations, Node runtime versions).  Call once after
 * the last add.
 */
enum dd_rc dra_model_finish(struct dra_model *m);

/* Frees what the model owns and leaves it empty. */
void dra_model_release(struct dra_model *m);

/*
 * Gives m the slices of base instead of slices of its own: a model built per
 * admission request reads the view's published devices, and a snapshot rebuilt for
 * changed claims its predecessor's, without building them again.  base must be
 * finished; m takes a reference to its devices (base may go first), and any number of
 * models on any threads may borrow them at once.  m must hold no slice yet; adding one
 * afterwards fails with DD_EINVAL.
 */
void dra_model_borrow_slices(struct dra_model *m, const struct dra_model *base);

/*
 * 1 when base's slices are exactly the ResourceSlices among objs[0..n) (the same objects,
 * in the same order) and its devices are numbered: a model of objs may then borrow them
 * (dra_model_borrow_slices) and skip those objects (dra_is_slice).
 */
int dra_model_slices_are(const struct dra_model *base, const cJSON *const *objs, size_t n);

/* 1 when dra_model_add takes obj as a ResourceSlice. */
int dra_is_slice(const cJSON *obj);

/* 1 when pod (a Pod object) mounts the kubelet's plugin registration or plugins directory:
 * a kubelet plugin's pod, which the model keeps although it has no claims. */
int dra_pod_registers_plugin(const cJSON *pod);

/* 1 when resource name is an extended resource (a vendor's "example.com/gpu", or DRA's
 * "deviceclass.resource.kubernetes.io/<class>"), which a DeviceClass may back (1.34+,
 * DRAExtendedResource). */
int dra_extended_resource_name(const char *name);

/* 1 when a container of pod spec requests (or limits) an extended resource: such a pod may
 * be served by DRA without a claim of its own, and the model keeps it. */
int dra_requests_extended(const cJSON *spec);

/* 1 when plugin pod (of m->plugin_pods) is Ready. */
int dra_pod_ready(const cJSON *pod);

/* The pod (of m->plugin_pods) that DaemonSet ds runs on node, or NULL; borrowed. */
const cJSON *dra_plugin_pod(const struct dra_model *m, const struct dra_podspec *ds,
                            const char *node);

/*
 * Selectors on devices: the one way rules (and the allocator) evaluate them.  The result of
 * an expression on a published device is remembered for the model's life: selectors with the
 * same text share it, and the device's CEL value is built once (dra_model_finish, which also
 * evaluates every class on each device as soon as its value is built, while it is in the
 * caches).  Safe to call from several threads on one finished model.  dev numbers the
 * device: an index into m->devices (dra_device.id).
 *
 * dra_selector_match: CEL_TRUE, CEL_FALSE, or CEL_ERROR (a runtime error, or s did not
 * compile); err (may be NULL) then gets the error's text, which costs an evaluation.
 */
enum cel_verdict dra_selector_match(const struct dra_model *m, const struct dra_selector *s,
                                    size_t dev, struct dd_err *err);

/* 1 when the allocator would consider device dev for class cls (each selector true, in
 * order), and for request r of that class (the class's selectors, then the request's). */
int dra_class_admits(const struct dra_model *m, const struct dra_class *cls, size_t dev);
int dra_request_admits(const struct dra_model *m, const struct dra_class *cls,
                       const struct dra_request *r, size_t dev);

/* s on a device no slice of m publishes (a driver profile's simulated device, a device seen
 * under another driver name): evaluated anew each call.  As dra_selector_match. */
enum cel_verdict dra_selector_match_device(const struct dra_selector *s,
                                           const struct cel_device *dev, struct dd_err *err);

/* Lookups (borrowed results, NULL when absent). */
const struct dra_class *dra_find_class(const struct dra_model *m, const char *name);
const struct dra_claim *dra_find_claim(const struct dra_model *m, const char *ns,
                                       const char *name, int is_template);
/* The first Node of that name (m->nodes.v order). */
const struct dra_obj *dra_find_node(const struct dra_model *m, const char *name);

/* The Nodes named name, as indices into m->nodes.v in their order: the first (SIZE_MAX when
 * none), then each next (SIZE_MAX after the last).  Constant time each once finished. */
size_t dra_node_first(const struct dra_model *m, const char *name);
size_t dra_node_next(const struct dra_model *m, size_t k);

/* The runtime facts of m->nodes.v[k] (its annotation or runtime version), or NULL. */
const struct dra_runtime *dra_node_runtime(const struct dra_model *m, size_t k);

/* The value of env var name in c (NULL when unset or not a literal); *line is set when found. */
const char *dra_container_env(const struct dra_container *c, const char *name, int *line);

/* The value of a --flag=value or --flag value argument in command or args, or NULL. */
const char *dra_container_flag(const struct dra_container *c, const char *flag);

/* The ResourceClaim of a pod's claim entry: the named claim, or the one generated from a
 * template as recorded in pod.status.resourceClaimStatuses; NULL when it does not exist.
 * Constant time when p's claims were resolved against m's (dra_model_resolve_claims). */
const struct dra_claim *dra_pod_claim_resolve(const struct dra_model *m,
                                              const struct dra_podspec *p,
                                              const struct dra_pod_claim *pc);

/*
 * Resolves the claims of pods[0..n) against m's claims and remembers the answers in them, for
 * models with m's claims_gen (given one when it has none).  dra_model_finish does it for m's
 * own pods; a podspec shared with m, or added after, is resolved with this before readers see
 * it (the answers are written, never read, here).
 */
void dra_model_resolve_claims(struct dra_model *m, const struct dra_podspec *const *pods, size_t n);

/* dra_pod_claim_resolve without the answers remembered: what pc resolves to among m's claims
 * now, whatever p remembers. */
const struct dra_claim *dra_pod_claim_lookup(const struct dra_model *m,
                                             const struct dra_podspec *p,
                                             const struct dra_pod_claim *pc);

/*
 * Makes room for extra claims past m's (capclaims), so that a shallow copy of m may append
 * claims without moving those m's podspecs resolved to (dra_model_append_claims).  Call
 * before dra_model_finish: the array may move.  DD_OK or DD_ENOMEM.
 */
enum dd_rc dra_model_reserve_claims(struct dra_model *m, size_t extra);

/*
 * Appends shallow copies of v[0..n) (what they point to stays v's owner's) to m, a shallow
 * copy of a finished model whose claims array has room for them: into the slots past m's
 * claims, which no other copy may read (the caller makes sure), the array itself unmoved.
 * m->claim_idx becomes a new index holding them too, owned by the caller (free it; the old
 * one is the copied model's).  m's claims_gen stays: the caller resolves again the podspecs
 * whose claims may be the new ones (dra_pod_claim_lookup).  DD_OK, DD_ENOMEM or DD_EINVAL (no
 * room, or claims not indexed); m is unchanged on failure.
 */
enum dd_rc dra_model_append_claims(struct dra_model *m, const struct dra_claim *v, size_t n);

/*
 * The Events of a model whose objects are those of the model that read old[0..nold) (sorted as
 * dra_model_finish sorts them), but the Events that went, and came[0..ncame) (another model's,
 * which read the Events that came): each numbered seq(ctx, json), or SIZE_MAX when it went.  An
 * update of a live cache's model where the other Events kept their order (the numbers of old's
 * kept keep their order too), a merge rather than a sort.  Into *out (owned, sorted);
 * came is sorted in place.  DD_OK or DD_ENOMEM.
 */
enum dd_rc dra_events_merge(const struct dra_event *old, size_t nold, struct dra_event *came,
                            size_t ncame, size_t (*seq)(void *ctx, const cJSON *json), void *ctx,
                            struct dra_event **out, size_t *nout);

/* The events about object kind ns/name, in arrival order: *n of them from the returned
 * pointer (dra_model_finish sorts events by object). */
const struct dra_event *dra_events_about(const struct dra_model *m, const char *kind,
                                         const char *ns, const char *name, size_t *n);

/* FNV-1a of "ns/name": the hash the model's indices (and the controller's pod index) use. */
size_t dra_key_hash(const char *ns, const char *name);

/* Number of nodes: Node objects in the model, else fallback. */
long dra_node_count(const struct dra_model *m, long fallback);

#endif
