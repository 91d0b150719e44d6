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

#include "dra.h"
#include "finding.h"
#include "kube.h"
#include "rules.h"

/* The resources a snapshot is made of (what the controller watches). */
struct snap_resource {
    const char *group;     /* "" for the core API */
    const char *version;
    const char *resource;  /* plural */
    const char *selector;  /* query fragment for LIST/WATCH, or NULL */
};

extern const struct snap_resource snap_resources[];
extern const size_t snap_nresources;

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
    size_t *pod_idx;        /* owned: open-addressing index of Pods (1 + position; 0 empty) */
    size_t npod_idx;        /* its capacity, a power of two */
    int refs;               /* guarded by the owner's lock */
};

/*
 * Builds a snapshot from objects: owned (a cJSON array, taken) and/or
 * borrowed[0..n) (the array is taken and freed with the snapshot; the objects
 * are only borrowed and must outlive it).  Either may be NULL.  Ownership
 * passes even on failure.  client, when not NULL, is used to ask the API
 * server SubjectAccessReviews for each driver's ServiceAccount (the only I/O
 * here).  opt may be NULL.  Returns NULL on ENOMEM (err says so).
 */
struct snapshot *snapshot_build(cJSON *owned, const cJSON **borrowed, size_t n,
                                struct kube_client *client, const struct rule_options *opt,
                                struct dd_err *err);

/* Lists every snap_resource with c into one array (new; cJSON_Delete it).  A resource the
 * client may not list (403) is skipped with a note on stderr; other errors fail. */
cJSON *snapshot_list_all(struct kube_client *c, struct dd_err *err);

/* The Pod ns/name of the snapshot, or NULL (constant time). */
const struct dra_podspec *snapshot_pod(const struct snapshot *s, const char *ns, const char *name);

void snapshot_free(struct snapshot *s);

/* Drops what no rule reads (metadata.managedFields, kubectl's last-applied copy) before an
 * object is cached: the informers' transform. */
void snapshot_trim(cJSON *obj);

#endif
