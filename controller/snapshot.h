/*
 * snapshot.h - a live cluster's snapshot: the objects the diagnosis reads,
 * the live evidence (SubjectAccessReview answers, stand-ins for claims the
 * quota rejected), the model and the engine's findings, built in one go.
 *
 * Built by the controller from its informer caches (a new snapshot when the
 * caches changed) and by `dra-doctor diagnose` from one round of LISTs.  A
 * snapshot is immutable once built and reference-counted, so workers can
 * keep reading the one they hold while a newer one is built.
 */
#ifndef DD_SNAPSHOT_H
#define DD_SNAPSHOT_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "rules/diagnose.h"
#include "model/dra.h"
#include "rules/finding.h"
#include "client/kube.h"
#include "rules/rules.h"

/* The resources a snapshot is made of (what the controller watches). */
struct snap_resource {
    const char *group;     /* "" for the core API */
    const char *version;
    const char *resource;  /* plural */
    const char *selector;  /* query fragment for LIST/WATCH, or NULL */
};

extern const struct snap_resource snap_resources[];
extern const size_t snap_nresources;

/*
 * What the controller keeps from one snapshot to the next, for the thread that builds
 * them: SubjectAccessReview answers (three per driver ServiceAccount, a round trip
 * each), dropped by the owner when one may have changed (snapshot_cache_forget_sars),
 * and compiled selectors (lib/model/dra.h's dra_cel_cache).  Zero it to start.
 */
struct snapshot_cache {
    struct snapshot_sar_entry { char *ns, *sa; const char *verb; int allowed; } *sar;
    size_t nsar, capsar;
    struct dra_cel_cache *cel; /* created on first use */
};

void snapshot_cache_forget_sars(struct snapshot_cache *c);
/* Frees everything; every snapshot built with the cache must be freed already. */
void snapshot_cache_release(struct snapshot_cache *c);

struct snapshot {
    cJSON *objects;         /* owned objects (an array), or NULL */
    const cJSON **borrowed; /* owned array of borrowed objects (the controller's caches) */
    size_t nborrowed;
    uint64_t id;            /* the builder's sequence number (controller) */
    cJSON *assumed;         /* owned: stand-in claims (diag_assume_rejected_claims), or NULL */
    struct dra_sar *sar;    /* owned array */
    size_t nsar;
    char *sar_strings;      /* owned storage behind sar[].ns/sa */
    struct dra_model m;
    struct dd_findings f;
    struct diag_index *ix;  /* owned: f indexed for diag_pod_indexed; NULL after ENOMEM */
    size_t *pod_idx;        /* owned: open-addressing index of Pods (1 + position; 0 empty) */
    size_t npod_idx;        /* its capacity, a power of two */
    int refs;               /* guarded by the owner's lock */
    struct snapshot_steps { /* thread CPU seconds of snapshot_build's steps (the rules' own,
                               rule by rule, through opt->seconds) */
        double model, assume, rules, index;
    } steps;
};

/*
 * Builds a snapshot from objects: owned (a cJSON array, taken) and/or
 * borrowed[0..n) (the array is taken and freed with the snapshot; the objects
 * are only borrowed and must outlive it).  Either may be NULL.  Ownership
 * passes even on failure.  client, when not NULL, is used to ask the API
 * server SubjectAccessReviews for each driver's ServiceAccount (the only I/O
 * here), unless cache (may be NULL) has the answer; new answers and compiled
 * selectors are added to it.  opt may be NULL.  Returns NULL on ENOMEM (err says so).
 */
struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                struct kube_client *client, struct snapshot_cache *cache,
                                const struct rule_options *opt, struct dd_err *err);

/* Lists every snap_resource with c into one array (new; cJSON_Delete it).  A resource the
 * client may not list (403) is skipped with a note on stderr; other errors fail. */
cJSON *snapshot_list_all(struct kube_client *c, struct dd_err *err);

/* The Pod ns/name of the snapshot, or NULL (constant time). */
const struct dra_podspec *snapshot_pod(const struct snapshot *s, const char *ns, const char *name);

void snapshot_free(struct snapshot *s);

/*
 * The informers' transform: drops what neither the model, the rules, the diagnosis nor
 * the controller reads before an object is cached (for Pods, ResourceClaims, Events,
 * Nodes, ResourceSlices and ResourceQuotas, all but the members they read; for every
 * kind, metadata other than name, namespace and dra-doctor's own annotations), and makes
 * common keys share storage.  A trimmed object diagnoses as the whole one does
 * (tests/unit/test_snapshot.c).  Reading a new field means keeping it here.
 */
void snapshot_trim(cJSON *obj);

/* The informers' filter, after snapshot_trim: 0 for objects no diagnosis reads (Pods
 * without resource claims, Events of reasons diag_event_reason_used rejects). */
int snapshot_keep(const cJSON *obj);

#endif
