/*
 * rules.h - the one diagnosis rule engine, shared by lint, webhook and controller.
 *
 * A rule is a table entry: a stable code (an interface: never rename one), a
 * severity, the step of a pod's path it blocks, a one-line summary, and a check.  Its long documentation lives in
 * docs/rules.md under a heading "## <Code>"; a unit test keeps table and doc
 * in step.  A check is a pure function of a snapshot (struct dra_model plus
 * options); it appends findings and does no I/O.
 *
 * Findings are root causes evaluated independently: each rule assumes the
 * faults other rules report are fixed (e.g. device inventory is checked
 * against the driver a misspelled selector was meant to name), so one run
 * names every fault at once instead of the first one only.
 */
#ifndef DD_RULES_H
#define DD_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "rules/finding.h"

struct dra_model;
struct rule_names;
struct kv_gates;
struct rule_inventory;
struct rule_cache;

/*
 * Where a rule runs: lint (manifests, offline), live (the controller and `diagnose`, over a
 * whole cluster's snapshot) and admission (the webhook, over the object being created and
 * the view of the cluster it is judged against).  A rule runs only on its surfaces.
 */
enum dd_surface { DD_LINT = 1, DD_LIVE = 2, DD_ADMISSION = 4 };

struct rule_options {
    const char *const *known_drivers; /* extra driver names (--known-driver); borrowed */
    size_t nknown_drivers;
    int known_drivers_all; /* 1: known_drivers already lists, without repeats, every driver
                              the snapshot shows (slice publishers, driver DaemonSets): the
                              webhook computes them once per view, not once per request */
    long nodes;        /* node count for profile-based inventory when the input has
                          no Node objects (--nodes); default 1 */
    int complete;      /* 1: the input is the whole cluster, so a reference to a missing
                          object is an error rather than a warning (--complete) */
    const char *const *only; /* run just the rules with these codes (the webhook reports
                                five); NULL: every rule.  Borrowed */
    size_t nonly;
    int kube_minor;    /* the Kubernetes release 1.<kube_minor> the input is for
                          (--kube-version); 0: KV_DEFAULT_MINOR (lib/model/kubever.h) */
    const struct kv_gates *gates; /* the feature gates it runs with (--feature-gates, the live
                                     API server's); NULL: that release's defaults.  Borrowed */
    double *seconds;   /* optional: seconds[i] += the thread CPU time rule i of dd_rules()
                          took (how cost grows, rule by rule: tests/unit/test_scaling.c) */
    void (*before)(void *arg); /* optional: called before each rule runs, untimed (that test
                                  evicts the caches, so that every rule starts cold) */
    void *before_arg;
    enum dd_surface surface; /* where it runs; 0: DD_LIVE for a live model, else DD_LINT */
    const struct rule_inventory *inventory; /* admission: the cluster's devices, nodes and
                                   allocated claims (dd_rules_inventory_new), built once per view,
                                   that the pods of the model are allocated against; NULL: the
                                   rules build it from the model (at admission: none).  Borrowed */
    const char *live_inventory; /* lint --cluster-inventory: the live cluster the model's Nodes,
                                   ResourceSlices and allocated claims were read from ("context
                                   X, server Y, ... at T"), so they are whole and a pod that
                                   fits on none of its nodes is an error; NULL: the input's
                                   own.  Borrowed */
    const struct rule_cache *cache; /* what the rules work out of the objects but Pods, once per
                                   model (dd_rules_cache_new); a run over a model it was not built
                                   for ignores it.  NULL: each run works it out.  Borrowed */
};

#define RULE_OPTIONS_INIT { NULL, 0, 0, 1, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, \
                            NULL }

struct rule_ctx {
    const struct dra_model *m;     /* the snapshot; borrowed */
    const struct rule_options *opt;
    struct dd_findings *out;       /* where checks append */
    const struct dd_rule *rule;    /* the rule being run */
    const struct rule_names *known; /* private to lib/rules/rules.c: drivers the snapshot shows,
                                       computed once per run */
    const struct kv_gates *gates;  /* the gates the rules ask (rule__gate): opt->gates, or the
                                      release's defaults */
    enum dd_surface surface;       /* where it runs now (opt->surface, or the model's) */
    struct rule_scratch *scratch;  /* private to lib/rules: what the checks of one run share */
};

/*
 * Where on a pod's path a rule's cause stops the pod, in the order the pod meets them; the
 * controller's diagnosis names the earliest as the root cause (lib/rules/diagnose.c).
 */
enum dd_step {
    DD_STEP_NONE,      /* not on a live pod's path (input and manifest-only rules) */
    DD_STEP_CLAIM,     /* the pod's claims are created and exist */
    DD_STEP_CLASS,     /* their DeviceClasses exist */
    DD_STEP_DRIVER,    /* the classes' drivers publish their devices */
    DD_STEP_SELECTOR,  /* selectors match a driver and devices */
    DD_STEP_DEVICES,   /* enough matching devices the pod can use */
    DD_STEP_ALLOCATED, /* the scheduler allocates and reserves the claims */
    DD_STEP_PREPARE,   /* the kubelet has the driver prepare them on the node */
    DD_STEP_CDI,       /* the runtime injects the devices */
    DD_STEP_RUNNING,   /* the running containers have the devices, as configured */
    DD_NSTEPS
};

/*
 * What a rule's findings depend on, so that a snapshot rebuilt after some Pods changed reruns
 * only what those Pods affect (lib/rules/snapshot's snapshot_update; tests/unit/test_delta.c
 * holds every declaration to it).  "Pods" are the model's podspecs of kind Pod; the other
 * podspecs (workloads) count as other objects.
 *   CLUSTER  anything (the default: rerun whole after any change);
 *   POD      each Pod alone: over a model the check's findings are the union, podspec by
 *            podspec, of its findings over that model holding only that podspec (none without
 *            one); those are about that podspec's object, and depend on it and on objects other
 *            than Pods and Events only;
 *   NO_PODS  neither Pods nor Events: the same findings whatever Pods and Events there are;
 *   POD_PART the findings of a part that is NO_PODS, and of the rule's pod_check, which reads
 *            only podspecs as a POD check does (over a model, the union podspec by podspec of
 *            its findings over that model holding only that podspec) but whose findings may be
 *            about other objects (the DaemonSet whose plugin cannot reach a pod's nodes): an
 *            update removes pod_check's findings over the changed Pods' old versions from the
 *            previous ones and adds those over their new versions;
 *   CLAIM    podspecs through the claims they resolve to (dra_pod_claim_resolve): over a model,
 *            the union, over its groups of podspecs joined by a claim they resolve to
 *            (transitively), of its findings over that model holding only that group (none
 *            without podspecs), which read only the group and objects other than Pods and
 *            Events: an update reruns it over the changed Pods' groups, old and new;
 *   EVENTS   not Pods (Events, and other objects): the same findings whatever Pods there are,
 *            kept when only Pods changed;
 *   QUOTA    each ResourceQuota's namespace alone: over a model, the union, namespace by
 *            namespace, of its findings over that model holding only that namespace's quotas
 *            (none without quotas), which read only those quotas, the Pods and claims of that
 *            namespace, and objects other than Pods, claims, quotas and Events: an update reruns
 *            it over the quotas of the namespaces where Pods or claims changed, old and new.
 */
enum dd_scope { DD_SCOPE_CLUSTER, DD_SCOPE_POD, DD_SCOPE_NO_PODS, DD_SCOPE_POD_PART,
                DD_SCOPE_CLAIM, DD_SCOPE_EVENTS, DD_SCOPE_QUOTA };

struct dd_rule {
    const char *code;            /* e.g. "SelectorMatchesNoDriver" */
    enum dd_severity severity;   /* default severity; a check may lower it (e.g. partial input) */
    enum dd_step step;           /* where the cause stops a pod */
    unsigned surfaces;           /* enum dd_surface bits: where it runs */
    const char *summary;         /* one line, no trailing period */
    void (*check)(struct rule_ctx *ctx); /* NULL for live-only codes reported by the controller */
    enum dd_scope scope;         /* what its findings depend on */
    void (*pod_check)(struct rule_ctx *ctx); /* POD_PART: the part of check over podspecs
                                    (check runs it too); NULL otherwise */
};

/* The rule table, in pipeline order (the order a pod meets the causes). */
const struct dd_rule *dd_rules(size_t *n);

/* The rule with this code, or NULL. */
const struct dd_rule *dd_rule_find(const char *code);

/*
 * Runs every rule (or opt->only's) over m and appends the findings to out (sorted afterwards
 * with dd_findings_sort by the caller when order matters).  opt may be NULL
 * for defaults.  Returns 0, or -1 when out ran out of memory.
 */
int dd_rules_run(const struct dra_model *m, const struct rule_options *opt,
                 struct dd_findings *out);

/*
 * dd_rules_run restricted to the rules whose scope is one of the bits (1 << enum dd_scope)
 * of scopes.  m may be a copy of a model whose pods point elsewhere (a few podspecs of it):
 * that is how a POD rule is run for some Pods alone.
 */
int dd_rules_run_scoped(const struct dra_model *m, const struct rule_options *opt,
                        unsigned scopes, struct dd_findings *out);

/* Runs the pod_check of every POD_PART rule (that dd_rules_run would run) over m, as
 * dd_rules_run_scoped runs checks. */
int dd_rules_run_pod_parts(const struct dra_model *m, const struct rule_options *opt,
                           struct dd_findings *out);

/*
 * The allocator's inventory of a cluster's model m (lib/model/alloc), with what DevicesDoNotFit
 * assumes where m lacks it (nodes from the slices, a profile driver's devices), for judging pods
 * of other models against it (rule_options.inventory): models with m's objects but Pods (it
 * reads none).  Built as lint builds it, or as a live run does when opt->surface is DD_LIVE (pass
 * it only to runs on that surface).  m must outlive it and stay unchanged; opt is read during
 * the call only.  NULL on ENOMEM.
 */
struct rule_inventory *dd_rules_inventory_new(const struct dra_model *m,
                                              const struct rule_options *opt);
void dd_rules_inventory_free(struct rule_inventory *ri);
/* Keeps the verdicts of the pods judged against ri (DevicesDoNotFit's, per pod alike in what the
 * allocator reads) for the later runs that borrow it, so that a pod judged before is not judged
 * again: only for an inventory used by one thread at a time (a live snapshot's builder), as
 * runs then write to it.  0, or -1 on ENOMEM. */
int dd_rules_inventory_remember(struct rule_inventory *ri);

/*
 * What the rules work out of model m's objects but its Pods, for the runs over m and over the
 * models patched from it (the same Node and ResourceSlice arrays, other Pods: a live snapshot's
 * updates, lib/rules/snapshot), so that such a run costs its Pods, not the cluster's nodes and
 * devices: where each driver's DaemonSet may run its kubelet plugin and where its drivers publish
 * (DriverDaemonSetMissingOnNode), where each class claims request has devices
 * (PodConstraintsExcludeDeviceNodes, ClaimAllocatedOnOtherNode).  A run over any other model
 * ignores it (it checks).  Built here, but where a class has devices is worked out the first
 * time a run asks (a full build pays only for the classes its pods ask for), under the cache's
 * own lock, so runs on any thread may share it; it keeps no pointer into m to read, but must
 * be freed with m (its check compares addresses).  NULL on ENOMEM.
 */
struct rule_cache *dd_rules_cache_new(const struct dra_model *m);
void dd_rules_cache_free(struct rule_cache *rc);

/* The name among names[0..n) that s most likely misspells (the engine's "did you mean"),
 * or NULL when none is close. */
const char *dd_rules_nearest(const char *s, const char *const *names, size_t n);

#endif
