/*
 * allocsnap.h - the allocation snapshot: what kube-scheduler's allocator sees for one pod, as
 * one JSON object, the input of the allocation oracle (e2e/peers/allocoracle) and of
 * lib/model/alloc alike, and their answers in one format:
 *
 *   snapshot: {"name": "...", "gates": {"DRAConsumableCapacity": false, ...},
 *              "nodes": [Node], "slices": [ResourceSlice], "classes": [DeviceClass],
 *              "claims": [ResourceClaim], "inFlight": [ResourceClaim], "pod": Pod,
 *              "filterTimeoutSeconds": the oracle's filter timeout (default 10)}
 *   answer:   {"name": ..., "status": "ok" | "unschedulable" | "error", "reason": ...,
 *              "fits": nodes the pod can be bound to (alloc_result.nfit; ours only),
 *              "deallocate": the claim (ns/name) PostFilter deallocates (ours only),
 *              "nodes": [{"node": name, "podFilter": "" or why, "status": "fit" |
 *              "unschedulable" | "error", "reason": ..., "allocations": [{"claim": ns/name,
 *              "devices": [{"request", "driver", "pool", "device", "adminAccess",
 *              "shared"}]}]}]}
 *
 * Objects are resource.k8s.io/v1 and core/v1 JSON as written (the oracle applies the API
 * server's defaults); claims hold every claim of the cluster, a pod's generated claims
 * included (found through pod.status.resourceClaimStatuses and owned by the pod).
 */
#ifndef DD_ALLOCSNAP_H
#define DD_ALLOCSNAP_H

#include <cjson/cJSON.h>

#include "model/alloc.h"
#include "model/dra.h"
#include "err.h"

/*
 * Adds the snapshot's objects to m (initialised, not finished; the caller finishes it) and
 * sets *opt from its gates and in-flight claims (defaults otherwise) and *pod to its pod's
 * spec in m.  snap stays borrowed by m and *opt; objects without apiVersion or kind get
 * them (snap is modified).  DD_EINVAL with err for a snapshot that is not one.
 */
enum dd_rc asnap_load(cJSON *snap, struct dra_model *m, struct alloc_options *opt,
                      struct dd_err *err);

/* The snapshot's pod in m after dra_model_finish, or NULL. */
const struct dra_podspec *asnap_pod(const struct dra_model *m);

/*
 * The snapshot of pod in m for the oracle: every Node, ResourceSlice, DeviceClass and
 * ResourceClaim of m (copies) and the pod; a claim a ResourceClaimTemplate would generate
 * is materialised (named <pod>-<claim>, owned by the pod, recorded in the pod's status).
 * gates: those that differ from the release's defaults are written.  NULL on ENOMEM.
 * The caller owns the result (cJSON_Delete).
 */
cJSON *asnap_emit(const struct dra_model *m, const struct dra_podspec *pod,
                  const struct alloc_options *opt, const char *name);

/* r as the oracle's answer (the caller owns it), or NULL on ENOMEM. */
cJSON *asnap_answer(const struct alloc_result *r, const char *name);

/*
 * Compares two answers: the pod's status, each node's status, whether the pod's filters
 * exclude it and, with ASNAP_PICKS, the devices each fitting node would get; with
 * ASNAP_UNORDERED a node's error and unschedulable count as one (the stable allocator walks
 * pools in Go's map order, and whether an allocationMode All request first meets a device in
 * use or one its constraint rejects decides between them); with ASNAP_TIMEOUTS a node where
 * either side timed out is not compared (a clock decides that upstream, a step count here),
 * and *skipped counts them (skipped may be NULL).  0 when they agree, else 1 with the first
 * difference in why.
 */
enum { ASNAP_PICKS = 1, ASNAP_UNORDERED = 2, ASNAP_TIMEOUTS = 4 };
int asnap_compare(const cJSON *a, const cJSON *b, int flags, size_t *skipped, char *why,
                  size_t size);

#endif
