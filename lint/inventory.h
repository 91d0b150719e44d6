/*
 * inventory.h - `lint --cluster-inventory`: the live cluster's objects the allocator and the
 * references of the manifests read, as evidence beside the manifests.
 *
 * inventory_fetch is the I/O edge: read-only LISTs through lib/client/kube (the kubeconfig as
 * `diagnose` reads it); any LIST that fails fails the whole, since an inventory with a hole
 * would make DevicesDoNotFit's error a false promise.  inventory_evidence is pure: which of
 * those objects stand beside the manifests, as `kubectl apply` of the manifests would leave
 * the cluster.
 */
#ifndef DD_LINT_INVENTORY_H
#define DD_LINT_INVENTORY_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "formats/manifest.h"
#include "rules/cluster.h"

struct inventory {
    cJSON *objects;        /* owned: every object listed (Pods, ReplicaSets and Jobs trimmed to
                              their metadata: only who owns whom is read of them) */
    char from[640];        /* "context X, server Y, Kubernetes v1.37.2, read at T UTC" */
    struct cluster_info ci; /* the server's release, served versions and gates */
};

/*
 * Lists, read-only, at the server of kubeconfig (NULL: $KUBECONFIG, ~/.kube/config,
 * in-cluster) and context (NULL: current): Nodes, ResourceSlices, DeviceClasses,
 * ResourceClaims and ResourceClaimTemplates of every namespace, DeviceTaintRules where
 * served, and Pods, ReplicaSets and Jobs (to tell which claims belong to the pods of a
 * workload the manifests replace); paginated (500 per page), each page under the client's
 * body cap.  0, or -1 with a message in msg naming what failed: the kubeconfig, the server
 * unreachable, a resource and the HTTP status a LIST got (401, 403, ...), a server without
 * resource.k8s.io/v1.  Release inv with inventory_release (also after a failure).
 */
int inventory_fetch(const char *kubeconfig, const char *context, struct inventory *inv,
                    char *msg, size_t size);

void inventory_release(struct inventory *inv);

/* What inventory_evidence did, for the line lint prints. */
struct inventory_counts {
    size_t nodes, slices, classes, claims, templates, taint_rules; /* kept as evidence */
    size_t replaced;  /* cluster objects the manifests define again (theirs are judged) */
    size_t set_aside; /* claims generated for pods of a workload or Pod the manifests
                         replace: their devices are free for the manifests' pods */
};

/*
 * The objects of `cluster` (an inventory's) that stand beside the manifests of set (with
 * their namespaces defaulted), into *out (a new array of borrowed pointers; free it): every
 * one, except (a) one the manifests define again (same API group, kind, namespace and name:
 * theirs replaces it, as apply would, so a claim re-applied is not counted twice), (b) a
 * ResourceClaim whose owner chain (ownerReferences with controller: the claim's Pod, its
 * ReplicaSet or Job, their Deployment or CronJob) reaches an object the manifests define:
 * that workload's pod is judged by the manifests, with the devices its running pods hold
 * free, (c) Pods, ReplicaSets and Jobs themselves.  0, or -1 on ENOMEM.
 */
int inventory_evidence(const cJSON *cluster, const struct mf_set *set, const cJSON ***out,
                       size_t *n, struct inventory_counts *counts);

#endif
