/*
 * nodefit.h - the scheduler's node filters that decide which nodes a pod (or a DaemonSet's pod)
 * may use, and the taint-toleration match that pods and DRA devices share, as kube-scheduler and
 * k8s.io/dynamic-resource-allocation define them:
 *   - nodeSelector: every label equal (k8s.io/component-helpers scheduling/corev1 MatchNodeSelectorTerms);
 *   - affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: any term, every
 *     matchExpression (In, NotIn, Exists, DoesNotExist, Gt, Lt) and matchField (metadata.name);
 *   - node taints with effect NoSchedule or NoExecute that no toleration tolerates
 *     (PreferNoSchedule never filters); spec.unschedulable as the taint
 *     node.kubernetes.io/unschedulable:NoSchedule.
 * Objects are cJSON trees (Node, pod spec, selector); everything is borrowed for the call.
 */
#ifndef DD_NODEFIT_H
#define DD_NODEFIT_H

#include <stddef.h>
#include <cjson/cJSON.h>

/* 1 when node matches the NodeSelector {nodeSelectorTerms: [...]} (NULL matches every node;
 * an empty term list matches none). */
int fit_node_selector_matches(const cJSON *selector, const cJSON *node);

/*
 * 1 when toleration tolerates taint (both {key, value, effect}; toleration {operator}), as
 * core/v1 Toleration.ToleratesTaint and resourceclaim.ToleratesTaint decide: an empty effect
 * tolerates every effect and an empty key every key, Exists matches any value, Equal (the
 * default) needs the same value; an unknown operator tolerates nothing.
 */
int fit_tolerates(const cJSON *toleration, const cJSON *taint);

/* The first taint of taints (an array) with an effect in effects (NULL-terminated) that no
 * toleration of tolerations tolerates, or NULL. */
const cJSON *fit_untolerated(const cJSON *tolerations, const cJSON *taints,
                               const char *const *effects);

/*
 * Why pod spec podspec cannot run on node, as kube-scheduler's filters before DRA word it
 * ("node(s) didn't match Pod's node affinity/selector", "node(s) had untolerated taint
 * {key: value}", "node(s) were unschedulable"), written to why; NULL when it may.  daemonset:
 * the pod is a DaemonSet's, which the DaemonSet controller lets tolerate the node-condition
 * taints (not-ready, unreachable, pressure, unschedulable).  Returns why (size > 0), or
 * NULL.
 */
const char *fit_pod_excluded(const cJSON *podspec, const cJSON *node, int daemonset, char *why,
                               size_t size);

/* What fit_pod_excluded reads of a pod spec (borrowed from it), found once to judge it on many
 * nodes: the allocator judges a pod on every node. */
struct fit_pod {
    const cJSON *node_selector, *tolerations, *required;
};
void fit_pod_prepare(const cJSON *podspec, struct fit_pod *fp);
/* fit_pod_excluded with the pod spec prepared. */
const char *fit_pod_excluded_prepared(const struct fit_pod *fp, const cJSON *node, int daemonset,
                                      char *why, size_t size);

#endif
