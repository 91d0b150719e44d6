/*
 * apply.h - what the e2e programs that plant objects through the API (not kubectl) share:
 * the admin's client, objects created with their status, and everything a case made deleted
 * again, newest first.  Included by one .c file each (static definitions), after harness.h.
 */
#ifndef DD_E2E_APPLY_H
#define DD_E2E_APPLY_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "client/kube.h"

/* The admin's client (KUBECONFIG): apply_setup makes it, apply_teardown frees it. */
static struct kube_client *kc;

static void msleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* s with every `from` replaced by `to` (a new string). */
static char *replace(const char *s, const char *from, const char *to)
{
    size_t lf = strlen(from), lt = strlen(to), n = 0, k = 0;
    const char *p;
    char *r;

    for (p = s; (p = strstr(p, from)); p += lf)
        n++;
    r = malloc(strlen(s) + n * (lt > lf ? lt - lf : 0) + 1);
    assert_non_null(r);
    while (*s) {
        if (!strncmp(s, from, lf)) {
            memcpy(r + k, to, lt);
            k += lt;
            s += lf;
        } else {
            r[k++] = *s++;
        }
    }
    r[k] = '\0';
    return r;
}

/* What a case made, to delete: API paths. */
struct made {
    char path[64][192];
    size_t n;
};

static void made_add(struct made *m, const char *path)
{
    if (m->n < sizeof(m->path) / sizeof(m->path[0]))
        snprintf(m->path[m->n++], sizeof(m->path[0]), "%s", path);
}

/* POSTs a copy of o without its status (kind and apiVersion set) to collection; then the
 * status, when o has one, with a merge patch of the status subresource.  0, or -1 with
 * why filled. */
static int create(struct made *m, const char *group, const char *version, const char *kind,
                  const char *resource, const char *ns, const cJSON *o, char *why, size_t size)
{
    cJSON *body = cJSON_Duplicate(o, 1), *status = cJSON_DetachItemFromObject(body, "status");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name"));
    char coll[192], path[192], api[64];
    struct kube_status st = {0};
    struct dd_err err;
    enum dd_rc rc;

    snprintf(api, sizeof(api), "%s%s%s", group, *group ? "/" : "", version);
    cJSON_DeleteItemFromObject(body, "apiVersion");
    cJSON_DeleteItemFromObject(body, "kind");
    cJSON_AddStringToObject(body, "apiVersion", api);
    cJSON_AddStringToObject(body, "kind", kind);
    kube_path(coll, sizeof(coll), group, version, resource, ns, NULL, NULL);
    kube_path(path, sizeof(path), group, version, resource, ns, name, NULL);
    rc = kube_create(kc, coll, body, NULL, &st, &err);
    cJSON_Delete(body);
    if (rc != DD_OK) {
        snprintf(why, size, "%s %s: %ld %s", kind, name, st.http, st.message);
        cJSON_Delete(status);
        return -1;
    }
    made_add(m, path);
    if (status && cJSON_GetArraySize(status) > 0) {
        cJSON *patch = cJSON_CreateObject();
        char *text;
        cJSON_AddItemToObject(patch, "status", status);
        status = NULL;
        text = cJSON_PrintUnformatted(patch);
        cJSON_Delete(patch);
        kube_path(path, sizeof(path), group, version, resource, ns, name, "status");
        rc = kube_patch(kc, path, KUBE_PATCH_MERGE, text, NULL, 0, NULL, &st, &err);
        free(text);
        if (rc != DD_OK) {
            snprintf(why, size, "%s %s status: %ld %s", kind, name, st.http, st.message);
            return -1;
        }
    }
    cJSON_Delete(status);
    return 0;
}

/* Deletes what a case made, newest first (a pod at once: no kubelet will confirm it). */
static void delete_all(struct made *m)
{
    struct kube_status st;
    struct dd_err err;
    char path[224];

    while (m->n) {
        const char *p = m->path[--m->n];
        snprintf(path, sizeof(path), "%s%s", p, strstr(p, "/pods/") ? "?gracePeriodSeconds=0" : "");
        (void)kube_request(kc, "DELETE", path, NULL, NULL, 0, NULL, &st, &err);
    }
}

/* Waits up to `seconds` for the n namespaces named at names, names + stride, ... to be gone
 * (a claim's finalizer is the resourceclaim controller's: they go in the background); the
 * number still there. */
static size_t namespaces_left(const char *names, size_t stride, size_t n, double seconds)
{
    double end = now_s() + seconds;
    size_t i, left = n;

    while (left && now_s() < end) {
        left = 0;
        for (i = 0; i < n; i++) {
            char path[192];
            struct kube_status st;
            struct dd_err err;
            kube_path(path, sizeof(path), "", "v1", "namespaces", NULL, names + i * stride, NULL);
            if (kube_get(kc, path, NULL, &st, &err) != DD_ENOTFOUND)
                left++;
        }
        if (left)
            msleep(500);
    }
    return left;
}

/* The node lifecycle controller's taints on a Node no kubelet keeps Ready, tolerated (any
 * effect): pod.spec.tolerations gets both. */
static void tolerate_simulated_nodes(cJSON *spec)
{
    static const char *const keys[] = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"};
    cJSON *tol = cJSON_GetObjectItem(spec, "tolerations");
    size_t i;

    if (!tol)
        tol = cJSON_AddArrayToObject(spec, "tolerations");
    for (i = 0; i < 2; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "key", keys[i]);
        cJSON_AddStringToObject(t, "operator", "Exists");
        cJSON_AddItemToArray(tol, t);
    }
}

/* A simulated Node's status as a kubelet would report it: Ready, room for pods.  why says
 * who wrote it. */
static void simulated_node_status(cJSON *node, const char *why)
{
    cJSON *st, *cond, *res;

    cJSON_DeleteItemFromObject(node, "status");
    st = cJSON_AddObjectToObject(node, "status");
    cond = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "conditions"), cond);
    cJSON_AddStringToObject(cond, "type", "Ready");
    cJSON_AddStringToObject(cond, "status", "True");
    cJSON_AddStringToObject(cond, "reason", "KubeletReady");
    cJSON_AddStringToObject(cond, "message", why);
    res = cJSON_AddObjectToObject(st, "capacity");
    cJSON_AddStringToObject(res, "cpu", "8");
    cJSON_AddStringToObject(res, "memory", "32Gi");
    cJSON_AddStringToObject(res, "pods", "110");
    cJSON_AddItemToObject(st, "allocatable", cJSON_Duplicate(res, 1));
}

static int apply_setup(void **state)
{
    struct kube_config cfg;
    struct dd_err err;

    (void)state;
    if (kube_config_load(&cfg, NULL, NULL, &err) != DD_OK) {
        fprintf(stderr, "kubeconfig: %s\n", err.msg);
        return -1;
    }
    kc = kube_client_new(&cfg, NULL, &err);
    kube_config_release(&cfg);
    return kc ? 0 : -1;
}

static int apply_teardown(void **state)
{
    (void)state;
    kube_client_free(kc);
    return 0;
}

#endif
