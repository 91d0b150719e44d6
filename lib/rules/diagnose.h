/*
 * diagnose.h - one pod's diagnosis: the findings of the rule engine that lie
 * on the pod's path, ordered as the pod meets them, and what to write on it.
 *
 * The path: claim exists -> class exists -> driver publishes slices ->
 * selector matches a driver and devices -> enough free devices -> allocated
 * -> CDI injects.  The primary ("root cause") is the first blocker on that
 * path; the findings list has every code that applies, primary first.
 *
 * Pure: a function of the snapshot (objects + live evidence) and the
 * findings dd_rules_run produced for it.  The controller writes the result
 * as annotations and Events; `dra-doctor diagnose` prints it.
 */
#ifndef DD_DIAGNOSE_H
#define DD_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "model/dra.h"
#include "rules/finding.h"

#define DIAG_ANN_ROOT_CAUSE "dra-doctor.io/root-cause"
#define DIAG_ANN_FINDINGS "dra-doctor.io/findings"
#define DIAG_ANN_MESSAGE "dra-doctor.io/message"
/* Marks a stand-in claim (see diag_assume_rejected_claims). */
#define DIAG_ANN_ASSUMED "dra-doctor.io/assumed"

#define DIAG_MAX_CODES 16

struct diag_result {
    int healthy;                     /* nothing on the pod's path: no annotations */
    const char *codes[DIAG_MAX_CODES]; /* static rule codes, primary first */
    size_t ncodes;
    char list[512];                  /* codes comma-separated: the findings annotation */
    char message[1024];              /* evidence and fix of the primary, 1-2 sentences */
};

/*
 * Diagnoses pod (a Pod of m with resource claims).  findings: what
 * dd_rules_run produced for m (borrowed).  out is overwritten.
 */
void diag_pod(const struct dra_model *m, const struct dd_findings *findings,
              const struct dra_podspec *pod, struct diag_result *out);

/*
 * The findings of a snapshot filed by what they are about (object, class, driver, node),
 * for diagnosing many pods: diag_pod_indexed then looks only at the findings that may lie
 * on the pod's path, with the same result as diag_pod.  findings must not change while
 * the index is used.  NULL on ENOMEM.
 */
struct diag_index;
struct diag_index *diag_index_new(const struct dd_findings *findings);
/*
 * diag_index_new(findings) made from prev, the index of prev_findings, where findings holds
 * some of prev_findings' findings as copies (dd_findings_copy: their strings shared), in their
 * order, and findings of its own (a snapshot's update): the cost is a pass over the index and
 * over the two arrays, reading none of the findings kept.  prev stays valid (the new index
 * shares its keys' text).  NULL when it cannot be made so (a first finding of a class or a
 * driver went, or findings were not made from prev_findings) or on ENOMEM: diag_index_new
 * then.
 */
struct diag_index *diag_index_patch(const struct diag_index *prev,
                                    const struct dd_findings *prev_findings,
                                    const struct dd_findings *findings);
/*
 * An index of own's findings lying over under's (a snapshot's update: own holds the findings
 * added since under's, gone a bit per position of under's findings, set for those dropped
 * since; was, when not NULL, those an earlier layer over under dropped, whose groups it
 * checked): diag_pod_indexed with it sees under's findings but the dropped ones, and own's, in
 * their order (own and under's findings both sorted, dd_findings_sort).  under must not be a
 * layer itself; under, its findings, gone and own must outlive the layer.  The cost is own's
 * and a pass over gone's words, reading none of under's findings but the dropped ones.  NULL
 * when it cannot be made so (of a class's or driver's first findings of a code, the ones
 * under keeps, all were dropped: the next one is not in under) or on ENOMEM.
 */
struct diag_index *diag_index_layer(const struct diag_index *under, const uint64_t *gone,
                                    const uint64_t *was, const struct dd_findings *own);
/* The positions (ascending, *n of them; NULL when none) of ix's own findings about the object
 * kind ns/name (a Pod, ResourceClaim or ResourceClaimTemplate): borrowed from ix. */
const size_t *diag_index_about(const struct diag_index *ix, const char *kind, const char *ns,
                               const char *name, size_t *n);
void diag_index_free(struct diag_index *ix);

/*
 * Whose diagnosis finding f may be on the path of (diag_pod's on_path, read conservatively):
 * no pod's (its code stops no pod), the Pod it is about alone, the pods of its object's
 * namespace (a claim's or a template's, with no class or driver read at its step: a pod's
 * claims are of its own namespace), or any pod's.
 */
enum diag_reach { DIAG_REACH_NONE, DIAG_REACH_POD, DIAG_REACH_NAMESPACE, DIAG_REACH_ALL };
enum diag_reach diag_finding_reach(const struct dd_finding *f);

/* diag_pod with an index of findings (ix may be NULL: then it is diag_pod).  With a layer
 * (diag_index_layer), findings is its own. */
void diag_pod_indexed(const struct dra_model *m, const struct dd_findings *findings,
                      const struct diag_index *ix, const struct dra_podspec *pod,
                      struct diag_result *out);

/*
 * A pod may name a ResourceClaim that does not exist because the quota
 * rejected it (the seed's `second-gpu`).  Its spec is lost, but the quota
 * says which class it wanted.  For every such pod claim whose namespace has a
 * ResourceQuota at its limit for a class, this returns a stand-in claim for
 * one device of that class, annotated dra-doctor.io/assumed, so the rules can
 * count it (QuotaExceeded names it).  Returns
 * a new array of objects to dra_model_add (the caller keeps it alive as long
 * as the model, then cJSON_Delete), or NULL when there is none (or on ENOMEM).
 * Only for live snapshots: call after dra_model_finish, before dd_rules_run.
 */
cJSON *diag_assume_rejected_claims(const struct dra_model *m);

/* 1 when c is such a stand-in. */
int diag_claim_assumed(const struct dra_claim *c);

#endif
