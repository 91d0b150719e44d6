/*
 * keep.c - what a live cache keeps of an object (see keep.h).
 */
#include "model/keep.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/json.h"
#include "model/dra.h"

/* Annotations dra-doctor reads (its own); the caches keep no others. */
#define KEEP_ANN_PREFIX "dra-doctor.io/"

int keep_event_reason(const char *reason)
{
    /* lib/rules/diagnose.c's last_event: claim creation, scheduling and the kubelet's prepare
     * failures about pods; FailedCreate about a workload controller's refused pods
     * (PodClaimFieldsRemoved). */
    static const char *const used[] = { "FailedResourceClaimCreation", "FailedScheduling",
                                        "FailedPrepareDynamicResources", "FailedCreate", NULL };
    size_t i;

    for (i = 0; reason && used[i]; i++)
        if (!strcasecmp(reason, used[i]))
            return 1;
    return 0;
}

/* Keeps only the named members of object o (NULL-terminated list); o may be NULL. */
static void keep_only(cJSON *o, const char *const *names)
{
    cJSON *it, *next;
    size_t i;

    if (!cJSON_IsObject(o))
        return;
    for (it = o->child; it; it = next) {
        int keep = 0;
        next = it->next;
        for (i = 0; names[i] && !keep; i++)
            keep = it->string && !strcmp(it->string, names[i]);
        if (!keep)
            cJSON_Delete(cJSON_DetachItemViaPointer(o, it));
    }
}

static cJSON *member(cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* keep_only on every element of array arr (elements that are objects). */
static void keep_only_each(cJSON *arr, const char *const *names)
{
    cJSON *it;

    if (cJSON_IsArray(arr))
        cJSON_ArrayForEach(it, arr)
            keep_only(it, names);
}

/* Annotations: only dra-doctor's own (the pod's diagnosis, the node agent's CDI facts). */
static void trim_annotations(cJSON *meta)
{
    cJSON *ann = member(meta, "annotations"), *it, *next;

    if (!cJSON_IsObject(ann))
        return;
    for (it = ann->child; it; it = next) {
        next = it->next;
        if (!it->string || strncmp(it->string, KEEP_ANN_PREFIX, strlen(KEEP_ANN_PREFIX)))
            cJSON_Delete(cJSON_DetachItemViaPointer(ann, it));
    }
    if (!ann->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(meta, ann));
}

/*
 * Keys and values that recur in every cached object, in strcmp order (bsearch).  A
 * node whose key or string value is one of them points at the entry instead of a copy
 * of its own (cJSON's StringIsConst and IsReference flags: cJSON_Delete then frees
 * neither), which saves an allocation per key: a third of a trimmed pod.
 */
static const char *const common_words[] = {
        "All", "ClusterRole", "ClusterRoleBinding", "ContainerCreating", "CreateContainerError",
        "DaemonSet", "DeviceClass", "Event", "ExactCount", "Failed",
        "FailedResourceClaimCreation", "FailedScheduling", "Node", "Normal", "Pending", "Pod",
        "ResourceClaim", "ResourceClaimTemplate", "ResourceQuota", "ResourceSlice", "Running",
        "ServiceAccount", "Succeeded", "Unknown", "Warning", "aggregationRule", "allocation",
        "allocationMode", "annotations", "apiGroups", "apiVersion", "apps/v1", "args",
        "attributes", "basic", "bool", "capacity", "cel", "claims", "clusterRoleSelectors", "command",
        "containerRuntimeVersion", "containerStatuses", "containers", "count",
        "desiredNumberScheduled", "deviceClassName", "devices", "driver", "env", "exactly",
        "expression", "firstAvailable", "generateName", "hard", "hostPath", "image", "int",
        "involvedObject", "kind", "labels", "matchLabels", "message", "metadata", "mountPath",
        "name", "namespace", "nodeInfo", "nodeName", "numberReady", "path", "phase", "pool",
        "rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1", "reason", "requests",
        "resource.k8s.io", "resource.k8s.io/v1", "resourceClaimName", "resourceClaimStatuses",
        "resourceClaimTemplateName", "resourceClaims", "resourceNames", "resources",
        "resourceslices", "results", "roleRef", "rules", "selectors", "serviceAccount",
        "serviceAccountName", "spec", "state", "status", "string", "subjects", "template",
        "type", "uid", "used", "v1", "value", "verbs", "version", "volumeMounts", "volumes",
        "waiting",
};

/*
 * Members that many objects of a kind have alike, held once (dd_json_share): the tolerations
 * the API server's DefaultTolerationSeconds writes into every Pod, and a workload's replicas'
 * containers and claims; the requests of claims made from one template, or for one class.
 * Half a trimmed Pod's nodes in the 50,000-pod bench (docs/benchmarks.md).
 */
static const char *const pod_alike[] = { "tolerations", "containers", "initContainers",
                                         "resourceClaims", NULL };
static const char *const claim_alike[] = { "devices", NULL };
/* An allocation's node selector is the same for every claim allocated on one node. */
static const char *const alloc_alike[] = { "nodeSelector", NULL };
/* A device's attributes and capacities: a model, a driver version, a memory size repeat from
 * device to device and from node to node. */
static const char *const device_alike[] = { "attributes", "capacity", NULL };

/*
 * Members moved last, where the runs of them many objects have alike are held once
 * (dd_json_tail): every object of a kind ends with the same apiVersion and kind, every
 * object of a namespace's metadata with its namespace.  A Pod's spec ends with its node and
 * its workload's containers; a Pending Pod's status is every other's.  A claim's spec is
 * its template's or class's; an allocation's node selector, a result's pool and driver and
 * a reservation's resource are those of its node's other claims (in the webhook's cache,
 * keep_trim_admission, a reservation is every reserved claim's).  In the 50,000-pod bench
 * a claim keeps 10 nodes of its own rather than 18 (the webhook's 9), a Pod 8 rather than
 * 12 (bench/cache-bench.c).
 */
static const char *const root_tail[] = { "apiVersion", "kind", NULL };
static const char *const pod_tail[] = { "status", "apiVersion", "kind", NULL };
static const char *const claim_tail[] = { "spec", "apiVersion", "kind", NULL };
static const char *const meta_tail[] = { "generateName", "namespace", NULL };
static const char *const pod_spec_tail[] = { DRA_CLAIMS_KEY, "nodeName", "containers",
                                             "initContainers", "nodeSelector", "affinity",
                                             "tolerations", NULL };
static const char *const alloc_tail[] = { "nodeSelector", NULL };
static const char *const result_tail[] = { "pool", "driver", NULL };
static const char *const status_admission_tail[] = { "reservedFor", NULL };
static const char *const reserved_tail[] = { "apiGroup", "resource", NULL };

static void tail_each(cJSON *arr, const char *const *names)
{
    cJSON *it;

    if (cJSON_IsArray(arr) && !(arr->type & cJSON_IsReference))
        cJSON_ArrayForEach(it, arr)
            dd_json_tail(it, names);
}

static void share_alike(cJSON *o, const char *const *names)
{
    size_t i;

    for (i = 0; names[i]; i++)
        dd_json_share(member(o, names[i]));
}

/* A device's maps as share_alike holds them and, of the maps that are its own (a UUID, an
 * index among the attributes), the values alike: {"string": "H100"} under an attribute's
 * name is one of its two nodes. */
static void share_device(cJSON *dev)
{
    cJSON *map, *it;
    size_t i;

    share_alike(dev, device_alike);
    for (i = 0; device_alike[i]; i++)
        if ((map = member(dev, device_alike[i])) && !(map->type & cJSON_IsReference))
            cJSON_ArrayForEach(it, map)
                dd_json_share(it);
}

static int cmp_word(const void *key, const void *elem)
{
    return strcmp(key, *(const char *const *)elem);
}

static const char *common_word(const char *s)
{
    const char *const *w = bsearch(s, common_words, sizeof(common_words) / sizeof(common_words[0]),
                                   sizeof(common_words[0]), cmp_word);

    return w ? *w : NULL;
}

/* Shares o's key and string value if common (see common_words), then its children's. */
static void share_words(cJSON *o)
{
    const char *w;
    cJSON *it;

    if (o->string && !(o->type & cJSON_StringIsConst) && (w = common_word(o->string))) {
        cJSON_free(o->string);
        o->string = (char *)w;
        o->type |= cJSON_StringIsConst;
    }
    if (cJSON_IsString(o) && o->valuestring && !(o->type & cJSON_IsReference) &&
        (w = common_word(o->valuestring))) {
        cJSON_free(o->valuestring);
        o->valuestring = (char *)w;
        o->type |= cJSON_IsReference;
    }
    if (!(o->type & cJSON_IsReference))
        for (it = o->child; it; it = it->next)
            share_words(it);
}

/* Of array arr's objects, only those whose member key is one of values (NULL-terminated);
 * arr goes from parent when none is left. */
static void keep_where(cJSON *parent, const char *name, const char *key,
                       const char *const *values)
{
    cJSON *arr = member(parent, name), *it, *next;
    size_t i;

    if (!cJSON_IsArray(arr))
        return;
    for (it = arr->child; it; it = next) {
        const char *v = dd_json_str(it, key, NULL);
        int keep = 0;
        next = it->next;
        for (i = 0; v && values[i] && !keep; i++)
            keep = !strcmp(v, values[i]);
        if (!keep)
            cJSON_Delete(cJSON_DetachItemViaPointer(arr, it));
    }
    if (!arr->child)
        cJSON_DeleteItemFromObjectCaseSensitive(parent, name);
}

/*
 * What each kind keeps, from what lib/model/dra.c, lib/rules/rules.c, lib/model/rbac.c,
 * lib/model/quota.c, lib/rules/diagnose.c and the controller read (test_snapshot.c proves
 * the diagnosis of trimmed objects equal to that of whole ones).  Kinds not named keep everything but
 * metadata they do not need: they are few.
 */
/* Of a container's requests and limits, only the extended resources (ExtendedResource*). */
static void keep_extended(cJSON *res)
{
    static const char *const lists[] = { "requests", "limits" };
    cJSON *l, *it, *next;
    size_t i;

    for (i = 0; i < 2; i++) {
        if (!(l = member(res, lists[i])))
            continue;
        for (it = l->child; it; it = next) {
            next = it->next;
            if (!it->string || !dra_extended_resource_name(it->string))
                cJSON_Delete(cJSON_DetachItemViaPointer(l, it));
        }
        if (!l->child)
            cJSON_DeleteItemFromObjectCaseSensitive(res, lists[i]);
    }
}

static void trim_kind(cJSON *obj)
{
    static const char *const top[] = { "apiVersion", "kind", "metadata", "spec", "status",
                                       NULL };
    static const char *const meta_keep[] = { "name", "namespace", "generateName",
                                             "annotations", NULL };
    /* A pod being deleted is no longer judged (lib/rules/fit.c). */
    static const char *const meta_pod[] = { "name", "namespace", "generateName", "uid",
                                            "annotations", "deletionTimestamp", NULL };
    /* A claim: whether the pod it was generated for controls it (the scheduler's PreFilter
     * takes a template's claim only then: lib/model/alloc.c), whether it is being deleted. */
    static const char *const meta_claim[] = { "name", "namespace", "generateName",
                                              "annotations", "ownerReferences",
                                              "deletionTimestamp", NULL };
    static const char *const claim_owner[] = { "uid", "controller", NULL };
    /* Of classes sharing an extended resource name the newest serves it (lib/rules/gated.c). */
    static const char *const meta_class[] = { "name", "generateName", "annotations",
                                              "creationTimestamp", NULL };
    static const char *const meta_role[] = { "name", "namespace", "generateName", "labels",
                                             "annotations", NULL };
    /* Pods: the claims, the node, the phase, waiting containers' reasons (CDI errors),
     * running containers' start (before CDI was on?). */
    static const char *const pod_spec[] = { DRA_CLAIMS_KEY, "nodeName", "containers",
                                            "initContainers", "nodeSelector", "affinity",
                                            "tolerations", NULL };
    /* Containers: which claims (and requests) each one gets. */
    static const char *const pod_ctr[] = { "name", "resources", NULL };
    static const char *const ctr_res[] = { "claims", "requests", "limits", NULL };
    static const char *const pod_status[] = { "phase", "containerStatuses",
                                              "resourceClaimStatuses", "conditions", NULL };
    /* Of a pod's conditions, an eviction's (DeviceTaintNotTolerated): the kubelet's and the
     * scheduler's others are on every pod, and nothing reads them. */
    static const char *const pod_cond_types[] = { "DisruptionTarget", NULL };
    static const char *const pod_cond[] = { "type", "reason", "message", NULL };
    /* A kubelet plugin's pod: which DaemonSet's, on which node, ready or not. */
    static const char *const meta_plugin[] = { "name", "namespace", "ownerReferences", NULL };
    static const char *const owner_ref[] = { "kind", "name", NULL };
    static const char *const plugin_spec[] = { "nodeName", "volumes", NULL };
    static const char *const plugin_vol[] = { "name", "hostPath", NULL };
    static const char *const plugin_status[] = { "phase", "conditions", "containerStatuses",
                                                 NULL };
    static const char *const plugin_ctr[] = { "name", "state", "restartCount", NULL };
    static const char *const plugin_cond[] = { "type", "status", NULL };
    static const char *const ctr_status[] = { "name", "state", "allocatedResourcesStatus",
                                              NULL };
    static const char *const ctr_state[] = { "waiting", "running", NULL };
    static const char *const waiting[] = { "reason", "message", NULL };
    static const char *const running[] = { "startedAt", NULL };
    static const char *const pod_claim[] = { "name", "resourceClaimName",
                                             "resourceClaimTemplateName", NULL };
    static const char *const claim_status[] = { "name", "resourceClaimName", NULL };
    /* Claims: the requests; of the status, that it is allocated and by which drivers. */
    static const char *const claim_spec[] = { "devices", NULL };
    static const char *const claim_devices[] = { "requests", "constraints", "config", NULL };
    static const char *const claim_st[] = { "allocation", "reservedFor", "devices", NULL };
    static const char *const alloc[] = { "devices", "nodeSelector", "allocationTimestamp", NULL };
    static const char *const alloc_devices[] = { "results", NULL };
    /* ... and of devices with binding conditions, which and whether they are met; what the
     * allocator's inventory holds of each (lib/model/alloc.c's hold: admin access holds
     * nothing, a share only its consumed capacity) and where it may run (skipNodeOperations). */
    static const char *const result[] = { "driver", "pool", "device", "bindingConditions",
                                          "bindingFailureConditions", "adminAccess", "shareID",
                                          "consumedCapacity", "skipNodeOperations", NULL };
    static const char *const dev_status[] = { "driver", "pool", "device", "conditions", NULL };
    static const char *const dev_cond[] = { "type", "status", "reason", "message", NULL };
    /* Slices: the driver, node, pool and each device's name, attributes and capacity; and
     * what the allocator reads of them (lib/model/alloc.c's inventory): where a device may
     * go, the counters it consumes, its binding and sharing. */
    static const char *const slice_top[] = { "apiVersion", "kind", "metadata", "spec", NULL };
    static const char *const slice_spec[] = { "driver", "nodeName", "pool", "devices",
                                              "nodeSelector", "allNodes",
                                              "perDeviceNodeSelection", "sharedCounters",
                                              "skipNodeOperations", NULL };
    static const char *const pool[] = { "name", "generation", "resourceSliceCount", NULL };
    static const char *const device[] = { "name", "attributes", "capacity", "basic", "taints",
                                          "nodeName", "nodeSelector", "allNodes",
                                          "consumesCounters", "bindsToNode",
                                          "bindingConditions", "bindingFailureConditions",
                                          "allowMultipleAllocations", NULL };
    static const char *const basic[] = { "attributes", "capacity", "taints", "nodeName",
                                         "nodeSelector", "allNodes", "consumesCounters",
                                         "bindsToNode", "bindingConditions",
                                         "bindingFailureConditions",
                                         "allowMultipleAllocations", NULL };
    /* Nodes: labels and taints (where pods and slices may go), the runtime and kubelet
     * versions (and the node agent's annotation). */
    static const char *const node_top[] = { "apiVersion", "kind", "metadata", "spec", "status",
                                            NULL };
    static const char *const node_meta[] = { "name", "labels", "annotations", NULL };
    static const char *const node_spec[] = { "taints", "unschedulable", NULL };
    static const char *const node_status[] = { "nodeInfo", "allocatable", "declaredFeatures",
                                               NULL };
    static const char *const node_info[] = { "containerRuntimeVersion", "kubeletVersion", NULL };
    /* Events: what the diagnosis reads of the few reasons it reads; others only their key. */
    static const char *const event_top[] = { "apiVersion", "kind", "metadata", "involvedObject",
                                             "reason", "message", "type", NULL };
    static const char *const event_stub[] = { "apiVersion", "kind", "metadata", NULL };
    static const char *const involved[] = { "kind", "namespace", "name", NULL };
    /* Quotas: the limits and what is used. */
    static const char *const quota_status[] = { "used", NULL };
    const char *kind = dd_json_str(obj, "kind", NULL);
    const char *av = dd_json_str(obj, "apiVersion", NULL);
    cJSON *meta = member(obj, "metadata"), *spec = member(obj, "spec"), *it;
    cJSON *status = member(obj, "status");

    if (!cJSON_IsObject(obj))
        return;
    trim_annotations(meta);
    if (!kind || !av) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
        return;
    }
    if (!strcmp(av, "v1") && !strcmp(kind, "Pod")) {
        keep_only(obj, top);
        /* A pod without claims is nothing to the model (lib/model/dra.c skips it), but for a kubelet
         * plugin's: where it runs, whether it is ready, its plugin hostPaths. */
        if (!cJSON_IsArray(member(spec, DRA_CLAIMS_KEY)) && !dra_requests_extended(spec)) {
            if (!dra_pod_registers_plugin(obj)) {
                keep_only(meta, meta_pod);
                cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
                cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
                return;
            }
            keep_only(meta, meta_plugin);
            keep_only_each(member(meta, "ownerReferences"), owner_ref);
            keep_only(spec, plugin_spec);
            keep_only_each(member(spec, "volumes"), plugin_vol);
            keep_only(status, plugin_status);
            keep_only_each(member(status, "conditions"), plugin_cond);
            /* Why a plugin is not ready: CrashLoopBackOff, ImagePullBackOff, ... */
            cJSON_ArrayForEach(it, member(status, "containerStatuses")) {
                keep_only(it, plugin_ctr);
                keep_only(member(it, "state"), ctr_state);
                keep_only(member(member(it, "state"), "waiting"), waiting);
                cJSON_DeleteItemFromObjectCaseSensitive(member(it, "state"), "running");
            }
            return;
        }
        keep_only(meta, meta_pod);
        keep_only(spec, pod_spec);
        keep_only_each(member(spec, DRA_CLAIMS_KEY), pod_claim);
        keep_only_each(member(spec, "containers"), pod_ctr);
        keep_only_each(member(spec, "initContainers"), pod_ctr);
        cJSON_ArrayForEach(it, member(spec, "containers")) {
            keep_only(member(it, "resources"), ctr_res);
            keep_extended(member(it, "resources"));
        }
        cJSON_ArrayForEach(it, member(spec, "initContainers")) {
            keep_only(member(it, "resources"), ctr_res);
            keep_extended(member(it, "resources"));
        }
        keep_only(status, pod_status);
        keep_only_each(member(status, "resourceClaimStatuses"), claim_status);
        keep_where(status, "conditions", "type", pod_cond_types);
        keep_only_each(member(status, "conditions"), pod_cond);
        cJSON_ArrayForEach(it, member(status, "containerStatuses")) {
            keep_only(it, ctr_status);
            keep_only(member(it, "state"), ctr_state);
            keep_only(member(member(it, "state"), "waiting"), waiting);
            keep_only(member(member(it, "state"), "running"), running);
        }
        share_alike(spec, pod_alike);
        dd_json_tail(spec, pod_spec_tail);
        dd_json_tail(obj, pod_tail);
        return;
    }
    if (!strcmp(av, "v1") && !strcmp(kind, "Event")) {
        keep_only(meta, meta_keep);
        if (!keep_event_reason(dd_json_str(obj, "reason", NULL))) {
            keep_only(obj, event_stub);
            return;
        }
        keep_only(obj, event_top);
        keep_only(member(obj, "involvedObject"), involved);
        return;
    }
    if (!strcmp(av, "v1") && !strcmp(kind, "Node")) {
        keep_only(meta, node_meta);
        keep_only(obj, node_top);
        keep_only(spec, node_spec);
        keep_only(status, node_status);
        keep_only(member(status, "nodeInfo"), node_info);
        return;
    }
    /* Namespaces: their labels (admin access). */
    if (!strcmp(av, "v1") && !strcmp(kind, "Namespace")) {
        keep_only(meta, meta_role);
        keep_only(obj, node_top);
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        return;
    }
    if (!strcmp(av, "v1") && !strcmp(kind, "ResourceQuota")) {
        keep_only(meta, meta_keep);
        keep_only(obj, top);
        keep_only(status, quota_status);
        return;
    }
    if (!strncmp(av, "resource.k8s.io/", 16) && !strcmp(kind, "ResourceClaim")) {
        keep_only(meta, meta_claim);
        keep_only_each(member(meta, "ownerReferences"), claim_owner);
        keep_only(obj, top);
        keep_only(spec, claim_spec);
        keep_only(member(spec, "devices"), claim_devices);
        keep_only(status, claim_st);
        keep_only(member(status, "allocation"), alloc);
        keep_only(member(member(status, "allocation"), "devices"), alloc_devices);
        keep_only_each(member(member(member(status, "allocation"), "devices"), "results"),
                       result);
        keep_only_each(member(status, "devices"), dev_status);
        cJSON_ArrayForEach(it, member(status, "devices"))
            keep_only_each(member(it, "conditions"), dev_cond);
        share_alike(spec, claim_alike);
        share_alike(member(status, "allocation"), alloc_alike);
        dd_json_tail(member(status, "allocation"), alloc_tail);
        tail_each(member(member(member(status, "allocation"), "devices"), "results"),
                  result_tail);
        tail_each(member(status, "reservedFor"), reserved_tail);
        dd_json_tail(obj, claim_tail);
        return;
    }
    if (!strncmp(av, "resource.k8s.io/", 16) && !strcmp(kind, "ResourceSlice")) {
        keep_only(meta, meta_keep);
        keep_only(obj, slice_top);
        keep_only(spec, slice_spec);
        keep_only(member(spec, "pool"), pool);
        keep_only_each(member(spec, "devices"), device);
        cJSON_ArrayForEach(it, member(spec, "devices")) {
            keep_only(member(it, "basic"), basic);
            share_device(it);
            share_device(member(it, "basic"));
        }
        return;
    }
    /* Role aggregation matches ClusterRoles by their labels (lib/model/rbac.c). */
    if (!strcmp(kind, "DeviceClass"))
        keep_only(meta, meta_class);
    else
        keep_only(meta, strcmp(kind, "ClusterRole") && strcmp(kind, "Role") ? meta_keep : meta_role);
}

void keep_trim(cJSON *obj)
{
    if (!cJSON_IsObject(obj))
        return;
    trim_kind(obj);
    share_words(obj);
    /* After trim_kind's longer runs (a claim's, a Pod's), which end with these: moving them
     * last again leaves that order. */
    dd_json_tail(member(obj, "metadata"), meta_tail);
    dd_json_tail(obj, root_tail);
}

void keep_trim_admission(cJSON *obj)
{
    cJSON *status, *rf, *mark;

    keep_trim(obj);
    status = member(obj, "status");
    rf = member(status, "reservedFor");
    if (!cJSON_IsArray(rf) || !rf->child || !dd_json_str(obj, "kind", NULL) ||
        strcmp(dd_json_str(obj, "kind", NULL), "ResourceClaim"))
        return;
    /* Out of memory, the list stays whole: more kept, nothing wrong. */
    if (!(mark = cJSON_CreateArray()) || !cJSON_AddItemToArray(mark, cJSON_CreateObject()) ||
        !cJSON_ReplaceItemInObjectCaseSensitive(status, "reservedFor", mark)) {
        cJSON_Delete(mark);
        return;
    }
    dd_json_share(mark);
    dd_json_tail(status, status_admission_tail);
}

int keep_object(const cJSON *obj)
{
    const char *kind = dd_json_str(obj, "kind", NULL);
    const char *av = dd_json_str(obj, "apiVersion", NULL);

    if (!kind || !av || strcmp(av, "v1"))
        return 1;
    /* lib/model/dra.c skips a Pod without a resourceClaims array unless it is a kubelet plugin's;
     * last_event reads few reasons. */
    if (!strcmp(kind, "Pod"))
        return dd_json_arr(obj, "spec", DRA_CLAIMS_KEY, NULL) != NULL ||
               dra_pod_registers_plugin(obj) ||
               dra_requests_extended(dd_json_path(obj, "spec", NULL));
    if (!strcmp(kind, "Event"))
        return keep_event_reason(dd_json_str(obj, "reason", NULL));
    return 1;
}
