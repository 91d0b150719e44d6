/*
 * snapshot.h - a live cluster's snapshot: the objects the diagnosis reads, the live
 * evidence (SubjectAccessReview answers, stand-ins for claims the quota rejected), the
 * model and the engine's findings, built in one go.
 *
 * Built by the controller from its live cache (lib/client/live) and by `dra-doctor
 * diagnose` and `explain` from one round of LISTs.  A snapshot is immutable once built and
 * reference-counted, so workers can keep reading the one they hold while a newer one is
 * built.  Pure: the caller asks the API server (SubjectAccessReviews) through the
 * callback it passes.
 */
#ifndef DD_SNAPSHOT_H
#define DD_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "rules/diagnose.h"
#include "model/dra.h"
#include "rules/finding.h"
#include "rules/rules.h"

/*
 * Where SubjectAccessReview answers come from: ask(ctx, ns, sa, verb) says whether
 * ServiceAccount ns/sa may do verb on resourceslices.resource.k8s.io cluster-wide: 1 yes,
 * 0 no, -1 unknown (RBAC objects then decide).  The strings are borrowed for the call.
 */
struct snapshot_box;
struct snapshot_use;

struct snapshot_sars {
    int (*ask)(void *ctx, const char *ns, const char *sa, const char *verb);
    void *ctx;
};

/*
 * Why snapshot_update built a model whole rather than patching prev's: the first object (in
 * list order) that a patch could not take, or the patch's own limits.  Counted by the
 * controller (dra_doctor_snapshot_whole_total): a model built whole beside prev's is two at
 * once, so it lets prev go first (snapshot_patch, then a build without prev).
 */
enum snapshot_whole {
    SNAPSHOT_PATCHED,       /* not whole (or snapshot_build: nothing to patch) */
    SNAPSHOT_WHOLE_AGED,    /* prev's base parsed a quarter of its Pods anew (PATCH_MAX_PARSED) */
    SNAPSHOT_WHOLE_UNINDEXED, /* prev was not built from live caches alone, or has no Pod index */
    SNAPSHOT_WHOLE_MANY,    /* more Pods and claims changed than the base's room left */
    SNAPSHOT_WHOLE_POD_CAME, /* a Pod came that cannot go last (a template's, a quota's) */
    SNAPSHOT_WHOLE_POD_WENT,
    SNAPSHOT_WHOLE_POD_CHANGED, /* renamed in place, or in a namespace with stand-ins */
    SNAPSHOT_WHOLE_CLAIM_CAME, /* allocated, or in a namespace with a stand-in or quota */
    SNAPSHOT_WHOLE_CLAIM_WENT,
    SNAPSHOT_WHOLE_CLAIM_CHANGED, /* its allocation is the allocator's inventory */
    SNAPSHOT_WHOLE_OTHER_CAME, /* an object neither Pod, claim nor Event */
    SNAPSHOT_WHOLE_OTHER_WENT,
    SNAPSHOT_WHOLE_OTHER_CHANGED,
    SNAPSHOT_WHOLE_STAND_IN, /* the Pods that changed need other stand-in claims */
    SNAPSHOT_WHOLE_CLAIM_ROOM, /* the claims that came do not fit the base's room */
    SNAPSHOT_WHOLE_UNKEPT,  /* a new Pod's or claim's version is not kept as the old one */
    SNAPSHOT_WHOLE_N
};

/* A short name for why (a metric label): "aged", "claim-changed", ... */
const char *snapshot_whole_name(enum snapshot_whole why);

struct snapshot {
    cJSON *objects;         /* owned objects (an array), or NULL */
    const cJSON **borrowed; /* owned array of borrowed objects (the controller's caches) */
    size_t nborrowed;
    unsigned char *kinds;   /* per borrowed object, what a delta tracks of it (a Pod, an Event,
                               a claim, other; see snapshot.c): owned, or base's */
    cJSON *assumed;         /* owned: stand-in claims (diag_assume_rejected_claims), or NULL
                               (a patched snapshot's are its base's and its boxes') */
    const char **assumed_ns; /* owned: their namespaces, sorted, each once (strings assumed's) */
    size_t nassumed_ns;
    struct dra_sar *sar;    /* owned array */
    size_t nsar;
    char *sar_strings;      /* owned storage behind sar[].ns/sa */
    struct dra_model m;
    /* The engine's findings, sorted (dd_findings_sort): all of them, or with fbase set, those
     * added since fbase's (read them all with snapshot_foreach_finding). */
    struct dd_findings f;
    struct diag_index *ix;  /* owned: f indexed for diag_pod_indexed (with fbase, a layer over
                               fbase's: diag_index_layer); NULL after ENOMEM */
    /*
     * A layered snapshot (an update where only Pods were replaced): its findings are fbase's
     * but those gone marks, and f's.  fbase is a snapshot with all its findings in f (a
     * reference, as base's); gone (owned) has a bit per position of fbase->f.  An event then
     * costs what it changed, not a copy of every finding kept.  NULL when f holds them all.
     */
    struct snapshot *fbase;
    uint64_t *gone;
    size_t *cluster_pos;    /* owned, without fbase: positions in f of the CLUSTER rules'
                               findings (an update reruns those rules) */
    size_t ncluster_pos;
    struct rule_inventory *inv; /* owned: the allocator's inventory of m (DevicesDoNotFit), built
                               once per base and shared by its patched snapshots; NULL when
                               the rules build their own (not live, ENOMEM) or patched */
    struct rule_cache *cache; /* owned: what the rules work out of m but its Pods
                               (dd_rules_cache_new), likewise */
    size_t *pod_idx;        /* open-addressing index of Pods (1 + position; 0 empty): owned,
                               or base's (a patched model keeps every Pod in its place; one
                               that took in Pods has its own) */
    size_t npod_idx;        /* its capacity, a power of two */
    int dup_pods;           /* two Pods have one namespace and name (no live cache has) */
    struct snapshot_steps { /* thread CPU seconds of snapshot_build's steps (the rules' own,
                               rule by rule, through opt->seconds) */
        double model, assume, rules, index;
        int delta;          /* 1: snapshot_update reran only what the changed Pods affect */
        int patched;        /* 1: and m is base's model with the changed Pods (and claims
                               that came) parsed anew */
        enum snapshot_whole whole; /* snapshot_update: why m was built whole, or
                               SNAPSHOT_PATCHED */
    } steps;
    /*
     * A patched snapshot (snapshot_update where Pods were replaced, or Pods, unallocated
     * claims and Events came): m is a shallow copy of base->m, which owns what m points to but
     * m.pods (owned: the addresses of base's podspecs, the changed ones replaced by boxes'
     * entries, those that came after them) and, when claims came, m.claim_idx (owned; the
     * claims are in base's array, in the room past its own).  Successive updates share one
     * base, so that an event costs the Pods it changed, not the cluster; a full build starts a
     * new one.  NULL for a snapshot built whole.
     */
    struct snapshot *base;  /* a reference (refs) */
    size_t *moved;          /* owned: the positions in m.pods replaced or filled since base,
                               sorted */
    size_t nmoved;
    size_t *cu_start;       /* owned by a snapshot built whole (live): per claim c of m, the
                               podspecs resolving a claim to it are cu_pos[cu_start[c] ..
                               cu_start[c + 1]) (positions): the CLAIM rules' groups */
    size_t *cu_pos;
    struct snapshot_box *box; /* a reference: the podspecs and claims parsed since base (the
                               newest update's, which holds the one's before) */
    struct snapshot_box *evbox; /* a reference, or NULL: the Events m reads when they changed
                               since base (patched in a box of their own, not base's) */
    struct snapshot_use *uses; /* owned: the claims the podspecs at moved resolve to (claim and
                               podspec positions), sorted: with cu_pos, the claims' users */
    size_t nuses;
    atomic_size_t refs;     /* 1 + the patched snapshots whose base this is */
    atomic_size_t claims_used; /* of a snapshot built whole: the claims its model's array holds
                               for the newest snapshot patched from it (claims that came go
                               into the room past its own: lib/rules/snapshot.c) */
};

/*
 * Builds a snapshot from objects: owned (a cJSON array, taken) and/or
 * borrowed[0..n) (the array is taken and freed with the snapshot; the objects
 * are only borrowed and must outlive it).  Either may be NULL.  Ownership
 * passes even on failure.  sars, when not NULL, is asked about each driver's
 * ServiceAccount.  cel, when not NULL, holds the compiled selectors successive
 * snapshots share (lib/model/dra.h's dra_cel_cache: built on one thread at a time; it
 * must outlive the snapshot).  opt may be NULL.  Returns NULL on ENOMEM (err says so).
 */
struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                const struct rule_options *opt, struct dd_err *err);

/*
 * snapshot_build(NULL, borrowed, n, ...) -- the same snapshot, findings and all -- made from
 * prev, the snapshot of an earlier state of the same objects built with the same opt.  prev
 * must be alive, with its objects: they are compared by address, or by content where the
 * address changed (a cache replaces objects rather than changing them in place).  When only
 * Pods and Events changed, it reruns only the rules a change may affect (enum dd_scope): the
 * CLUSTER rules, the POD rules and POD_PART rules' pod parts for the Pods that changed, and the
 * CLAIM rules (over their groups when the model was patched, else whole); it keeps prev's other
 * findings.  ResourceClaims (stand-ins included) that came, went or changed but not in their
 * allocation add the POD rules for every podspec of their namespaces, and the NO_PODS and
 * POD_PART rules whole.  When only Pods were replaced, each in its place, Events came, went or
 * were replaced, and Pods and unallocated claims without selectors of their own came (no claim
 * in a namespace with a ResourceQuota that charges claims or with a stand-in claim; a Pod's
 * stand-ins only in a namespace that had none), it patches prev's model rather than building
 * one (see base above): the result then holds a reference to the base, so prev may be freed
 * before it or after.
 * Otherwise, and when prev is NULL, it is snapshot_build.  Ownership as snapshot_build's.
 */
struct snapshot *snapshot_update(const struct snapshot *prev, const cJSON **borrowed, size_t n,
                                 const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                 const struct rule_options *opt, struct dd_err *err);

/*
 * snapshot_update, but only when it would patch prev's model (steps.patched): otherwise NULL,
 * with *whole set to why (never SNAPSHOT_PATCHED) and borrowed freed, so that the caller may
 * let prev go before it builds the model whole (snapshot_build): two models of a large
 * cluster at once are its memory peak.  On another failure NULL with *whole SNAPSHOT_PATCHED
 * (err says why).  prev NULL: snapshot_build.
 */
struct snapshot *snapshot_patch(const struct snapshot *prev, const cJSON **borrowed, size_t n,
                                const struct snapshot_sars *sars, struct dra_cel_cache *cel,
                                const struct rule_options *opt, enum snapshot_whole *whole,
                                struct dd_err *err);

/* How many findings s has (a pass over gone's words: a word per 64 findings). */
size_t snapshot_nfindings(const struct snapshot *s);
/* Calls fn(f, ctx) for each finding of s, in their order (dd_finding_cmp); f is borrowed from
 * s for the call. */
void snapshot_foreach_finding(const struct snapshot *s,
                              void (*fn)(const struct dd_finding *f, void *ctx), void *ctx);
/* Appends s's findings, in their order, to out (dd_findings_copy); -1 on ENOMEM. */
int snapshot_findings(const struct snapshot *s, struct dd_findings *out);

/*
 * The Pods of s whose diagnosis (diag_pod_indexed) may differ from their diagnosis in prev,
 * where s is snapshot_update(prev, ...): fn(ctx, ns, name) once for each (the strings are
 * borrowed from s for the call).  They are the Pods that changed, those an Event that came or
 * went is about, the Pods of the namespaces whose ResourceClaims changed, and those on whose
 * path (diagnose.c) lies a finding one of the two has and the other not.  Costs the objects'
 * addresses and the findings, not a diagnosis per Pod.  Returns 0; 1 when that cannot be told
 * (s was built whole, or a finding lies on paths it does not follow: every Pod's may differ;
 * fn was not called); -1 on ENOMEM.
 */
int snapshot_affected_pods(const struct snapshot *prev, const struct snapshot *s,
                           void (*fn)(void *ctx, const char *ns, const char *name), void *ctx);

/* The Pod ns/name of the snapshot, or NULL (constant time). */
const struct dra_podspec *snapshot_pod(const struct snapshot *s, const char *ns, const char *name);

/* Drops the owner's reference: s goes once no patched snapshot reads its model (any thread). */
void snapshot_free(struct snapshot *s);

#endif
