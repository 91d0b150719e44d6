#include "model/nodefit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

static const char *label(const cJSON *node, const char *key)
{
    return dd_json_str(node, "metadata", "labels", key, NULL);
}

static int in_values(const cJSON *values, const char *v)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, values)
        if (cJSON_IsString(it) && !strcmp(it->valuestring, v))
            return 1;
    return 0;
}

/* Gt/Lt compare integers; a label or value that is not one fails the expression. */
static int int_of(const char *s, long long *out)
{
    char *end;

    if (!s || !*s)
        return 0;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return !*end && !errno;
}

static int expr_matches(const cJSON *e, const char *value, int present)
{
    const char *op = dd_json_str(e, "operator", NULL);
    const cJSON *values = dd_json_arr(e, "values", NULL);
    long long a, b;

    if (!op)
        return 0;
    if (!strcmp(op, "In"))
        return present && in_values(values, value);
    if (!strcmp(op, "NotIn"))
        return !present || !in_values(values, value);
    if (!strcmp(op, "Exists"))
        return present;
    if (!strcmp(op, "DoesNotExist"))
        return !present;
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
        if (!present || cJSON_GetArraySize(values) != 1 ||
            !cJSON_IsString(cJSON_GetArrayItem(values, 0)) || !int_of(value, &a) ||
            !int_of(cJSON_GetArrayItem(values, 0)->valuestring, &b))
            return 0;
        return !strcmp(op, "Gt") ? a > b : a < b;
    }
    return 0;
}

/* A term: all of its expressions and fields; a term with neither matches nothing. */
static int term_matches(const cJSON *term, const cJSON *node)
{
    const cJSON *exprs = dd_json_arr(term, "matchExpressions", NULL);
    const cJSON *fields = dd_json_arr(term, "matchFields", NULL), *e;

    if (!cJSON_GetArraySize(exprs) && !cJSON_GetArraySize(fields))
        return 0;
    cJSON_ArrayForEach(e, exprs) {
        const char *key = dd_json_str(e, "key", NULL), *v = key ? label(node, key) : NULL;
        if (!key || !expr_matches(e, v ? v : "", v != NULL))
            return 0;
    }
    cJSON_ArrayForEach(e, fields) {
        const char *key = dd_json_str(e, "key", NULL);
        const char *name = dd_json_str(node, "metadata", "name", NULL);
        /* metadata.name is the one field selector the scheduler supports. */
        if (!key || strcmp(key, "metadata.name") || !expr_matches(e, name ? name : "", name != NULL))
            return 0;
    }
    return 1;
}

int fit_node_selector_matches(const cJSON *selector, const cJSON *node)
{
    const cJSON *t;

    if (!selector)
        return 1;
    cJSON_ArrayForEach(t, dd_json_arr(selector, "nodeSelectorTerms", NULL))
        if (term_matches(t, node))
            return 1;
    return 0;
}

int fit_tolerates(const cJSON *tol, const cJSON *taint)
{
    const char *tk = dd_json_str(tol, "key", NULL), *te = dd_json_str(tol, "effect", NULL);
    const char *op = dd_json_str(tol, "operator", NULL), *tv = dd_json_str(tol, "value", NULL);
    const char *k = dd_json_str(taint, "key", NULL), *v = dd_json_str(taint, "value", NULL);
    const char *e = dd_json_str(taint, "effect", NULL);

    if (te && *te && (!e || strcmp(te, e)))
        return 0;
    if (tk && *tk && (!k || strcmp(tk, k)))
        return 0;
    if (!op || !*op || !strcmp(op, "Equal"))
        return !strcmp(tv ? tv : "", v ? v : "");
    return !strcmp(op, "Exists");
}

const cJSON *fit_untolerated(const cJSON *tolerations, const cJSON *taints,
                               const char *const *effects)
{
    const cJSON *t, *tol;
    size_t i;

    cJSON_ArrayForEach(t, taints) {
        const char *e = dd_json_str(t, "effect", NULL);
        int filtered = 0, ok = 0;
        for (i = 0; effects[i] && !filtered; i++)
            filtered = e && !strcmp(e, effects[i]);
        if (!filtered)
            continue;
        cJSON_ArrayForEach(tol, tolerations)
            if ((ok = fit_tolerates(tol, t)))
                break;
        if (!ok)
            return t;
    }
    return NULL;
}

/* The taints a DaemonSet's pods tolerate whatever their spec says (pkg/controller/daemon/util). */
static int daemonset_tolerated(const cJSON *taint)
{
    static const char *const keys[] = { "node.kubernetes.io/not-ready",
                                        "node.kubernetes.io/unreachable",
                                        "node.kubernetes.io/disk-pressure",
                                        "node.kubernetes.io/memory-pressure",
                                        "node.kubernetes.io/pid-pressure",
                                        "node.kubernetes.io/unschedulable", NULL };
    const char *k = dd_json_str(taint, "key", NULL);
    size_t i;

    for (i = 0; k && keys[i]; i++)
        if (!strcmp(k, keys[i]))
            return 1;
    return 0;
}

void fit_pod_prepare(const cJSON *podspec, struct fit_pod *fp)
{
    fp->node_selector = dd_json_path(podspec, "nodeSelector", NULL);
    fp->tolerations = dd_json_arr(podspec, "tolerations", NULL);
    fp->required = dd_json_path(podspec, "affinity", "nodeAffinity",
                                "requiredDuringSchedulingIgnoredDuringExecution", NULL);
}

const char *fit_pod_excluded(const cJSON *podspec, const cJSON *node, int daemonset, char *why,
                               size_t size)
{
    struct fit_pod fp;

    fit_pod_prepare(podspec, &fp);
    return fit_pod_excluded_prepared(&fp, node, daemonset, why, size);
}

const char *fit_pod_excluded_prepared(const struct fit_pod *fp, const cJSON *node, int daemonset,
                                      char *why, size_t size)
{
    const cJSON *ns = fp->node_selector, *it, *taint, *spec = dd_json_path(node, "spec", NULL);
    const cJSON *tols = fp->tolerations, *req = fp->required;
    const cJSON *labels = ns ? dd_json_path(node, "metadata", "labels", NULL) : NULL;
    char *out = why;
    size_t n = size;

    cJSON_ArrayForEach(it, ns) {
        const char *v = it->string ? dd_json_str(labels, it->string, NULL) : NULL;
        if (!cJSON_IsString(it) || !v || strcmp(v, it->valuestring)) {
            snprintf(out, n, "node(s) didn't match Pod's node affinity/selector (nodeSelector "
                     "%s=%s; the node has %s)", it->string ? it->string : "",
                     cJSON_IsString(it) ? it->valuestring : "?", v ? v : "no such label");
            return out;
        }
    }
    if (req && !fit_node_selector_matches(req, node)) {
        snprintf(out, n, "node(s) didn't match Pod's node affinity/selector (required node "
                 "affinity)");
        return out;
    }
    if (cJSON_IsTrue(dd_json_path(spec, "unschedulable", NULL)) && !daemonset) {
        cJSON *t = cJSON_Parse("{\"key\":\"node.kubernetes.io/unschedulable\","
                               "\"effect\":\"NoSchedule\"}");
        int ok = 0;
        cJSON_ArrayForEach(it, tols)
            if ((ok = fit_tolerates(it, t)))
                break;
        cJSON_Delete(t);
        if (!ok) {
            snprintf(out, n, "node(s) were unschedulable");
            return out;
        }
    }
    cJSON_ArrayForEach(taint, dd_json_arr(spec, "taints", NULL)) {
        const char *e = dd_json_str(taint, "effect", NULL);
        int ok = 0;
        if (!e || (strcmp(e, "NoSchedule") && strcmp(e, "NoExecute")))
            continue;
        if (daemonset && daemonset_tolerated(taint))
            continue;
        cJSON_ArrayForEach(it, tols)
            if ((ok = fit_tolerates(it, taint)))
                break;
        if (!ok) {
            snprintf(out, n, "node(s) had untolerated taint {%s: %s} (effect %s)",
                     dd_json_str(taint, "key", NULL) ? dd_json_str(taint, "key", NULL) : "",
                     dd_json_str(taint, "value", NULL) ? dd_json_str(taint, "value", NULL) : "",
                     e);
            return out;
        }
    }
    return NULL;
}
