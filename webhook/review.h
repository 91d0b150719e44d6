/*
 * review.h - admission decisions: a pure function of a cluster view and one
 * AdmissionReview (admission.k8s.io/v1).  No I/O: the server (webhook.c)
 * builds views from its informer caches and calls wh_review per request;
 * the unit tests call it without HTTP.
 *
 * What is decided, and with which code (docs/webhook.md):
 *   DeviceClass CREATE/UPDATE   the rule engine over the class and the
 *       published devices: SelectorMatchesNoDriver denies (unless the class
 *       carries WH_ALLOW_ANNOTATION: "true", or --unknown-driver=warn; an
 *       UPDATE that does not add the unknown name only warns, so unrelated
 *       edits such as a finalizer's removal never get stuck);
 *       SelectorUnknownAttribute and SelectorSyntaxError warn.
 *   ResourceClaim, ResourceClaimTemplate, Pod and pod-template workloads
 *   CREATE   warnings only: the findings about the object of every rule whose surfaces
 *       include admission (lib/rules/rules.c): QuotaExceeded (the namespace's ResourceQuota
 *       status.used plus what this object makes), DeviceClassNotFound, ClaimTemplateNotFound,
 *       DevicesDoNotFit (a Pod or workload that fits on no node now, by the view's
 *       allocator), ClaimNotConsumedByContainer, PodBypassesScheduler, OpaqueConfigDriverMismatch,
 *       NodePrepareFailed, and the selector codes above.  The webhook has no checks of its own.
 *   DeviceTaintRule CREATE/UPDATE   a warning when it is NoExecute and its selector matches
 *       every device (DeviceTaintRuleEvictsAll): it would evict every DRA pod.
 * Everything else is allowed without a word.
 */
#ifndef DD_REVIEW_H
#define DD_REVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "err.h"

#define WH_ALLOW_ANNOTATION "dra-doctor.io/allow-unregistered-driver"
/* Kubernetes shows warnings best at this length or less (kubectl prints each on a line). */
#define WH_WARNING_MAX 120

struct kv_gates;

struct wh_options {
    const char *const *known_drivers; /* --known-driver; borrowed, must outlive the views */
    size_t nknown_drivers;
    int unknown_driver_warn;          /* --unknown-driver=warn: warn instead of deny */
    int kube_minor;                   /* the cluster's release (0: the default) */
    const struct kv_gates *gates;     /* its feature gates (NULL: the release's defaults);
                                         borrowed, must outlive the views */
};

/* What the caches held at one moment, reduced to what decisions read.  Immutable once
 * built: requests on any thread read it concurrently. */
struct wh_view;

/*
 * Builds a view from objs[0..n) (any kinds).  The objects the view reads are
 * borrowed, not copied, and must outlive it (the live cache's graveyard keeps them;
 * the array itself is borrowed for the call only).  opt is borrowed for the view's lifetime.
 * Returns NULL on ENOMEM (err says so).
 */
struct wh_view *wh_view_build(const cJSON *const *objs, size_t n, const struct wh_options *opt,
                              struct dd_err *err);

/* wh_view_build for the caches after prev's (NULL: none): when their ResourceSlices are prev's,
 * the new view shares prev's devices (a reference: prev may be freed first) instead of
 * building their CEL values again. */
struct wh_view *wh_view_update(const struct wh_view *prev, const cJSON *const *objs, size_t n,
                               const struct wh_options *opt, struct dd_err *err);

/* The identity of the devices v reads: two views return the same when the later shares the
 * earlier's (wh_view_update). */
const void *wh_view_devices(const struct wh_view *v);
void wh_view_free(struct wh_view *v);

/* 1 when the view holds DeviceClass name (the server then stops treating it as pending). */
int wh_view_has_class(const struct wh_view *v, const char *name);

/* Registered driver names of the view, in the engine's order (slice publishers, then
 * DaemonSets, then --known-driver) and without repeats; borrowed from the view. */
const char *const *wh_view_drivers(const struct wh_view *v, size_t *n);

/* The verdict, for metrics. */
enum wh_verdict { WH_ALLOWED, WH_WARNED, WH_DENIED };

struct wh_result {
    char *body;                /* owned: the AdmissionReview response (JSON), NUL-terminated */
    size_t len;
    enum wh_verdict verdict;
    char kind[64];             /* request.kind.kind ("" when unknown), for metrics */
    char operation[16];        /* request.operation */
    char ns[64];               /* request.namespace ("" for cluster-scoped objects): whose
                                  share a waiting request takes */
};

/*
 * Decides one AdmissionReview body[0..len) (need not be NUL-terminated).
 * v may be NULL (caches not built yet): everything is then allowed.
 * pending_classes[0..npending) (borrowed for the call; may be NULL when
 * npending is 0): DeviceClasses known to exist that v does not hold yet
 * (created since v was built); a claim naming one is not warned
 * DeviceClassNotFound.
 * Returns DD_OK with res filled, DD_EINVAL when the body is not an
 * AdmissionReview v1 request (err names the field path, e.g.
 * "request.uid: missing"; the server answers 400), DD_ETOOBIG when JSON
 * nests too deep, or DD_ENOMEM.  On error res->body is NULL.
 */
enum dd_rc wh_review(const struct wh_view *v, const char *const *pending_classes,
                     size_t npending, const char *body, size_t len, struct wh_result *res,
                     struct dd_err *err);

#endif
