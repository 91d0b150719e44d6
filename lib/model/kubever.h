/*
 * kubever.h - what a Kubernetes release serves, as data: which resource.k8s.io versions the
 * API server serves by default, which DRA kinds and pod fields are gone.
 *
 * Sources (k8s.io/kubernetes module at each release): pkg/controlplane/instance.go
 * (DefaultAPIResourceConfigSource: resource.k8s.io/v1 enabled; v1beta1, v1beta2 on the
 * beta-off list; v1alpha3 alpha, off), pkg/registry/resource/rest/storage_resource.go (which
 * kinds each version stores), k8s.io/api resource/ per release (v1alpha2, classic DRA with
 * ResourceClass, last in 1.30) and core/v1 types.go (PodResourceClaim.source tombstoned in
 * 1.31).  docs/rules.md#apiversionnotserved has the table for people.
 */
#ifndef DD_KUBEVER_H
#define DD_KUBEVER_H

#include "err.h"

/* The release the e2e runs (e2e/cluster's K8S_VERSION; tests/unit/test_kubever.c checks). */
#define KV_DEFAULT_MINOR 37
/* Releases whose API facts the table holds: DRA is GA (resource.k8s.io/v1) from 1.34. */
#define KV_MIN_MINOR 34
#define KV_MAX_MINOR 37

/*
 * Parses a release as users write it: "1.36", "v1.36", "1.36.3", "v1.36.0-rc.1".  Sets *minor.
 * DD_EINVAL with a message naming the supported releases for anything else, or for a release
 * outside KV_MIN_MINOR..KV_MAX_MINOR.
 */
enum dd_rc kv_parse(const char *s, int *minor, struct dd_err *err);

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

/* The version release 1.minor serves every DRA kind in: what to move to. */
const char *kv_resource_preferred(int minor);

/*
 * A known kubelet bug in DRA plugin registration for this kubelet version ("v1.34.1" as
 * node.status.nodeInfo.kubeletVersion says), as one sentence with its source, or NULL.
 */
const char *kv_kubelet_plugin_bug(const char *kubelet_version);

/* The release that removed pod.spec.resourceClaims[].source (replaced by resourceClaimName and
 * resourceClaimTemplateName on the entry itself). */
#define KV_POD_CLAIM_SOURCE_REMOVED 31

#endif
