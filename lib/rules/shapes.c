/*
 * shapes.c - objects as the API server decodes them:
 *
 *   FieldNotInAPIVersion   a field the object's resource.k8s.io version does not have (the
 *                          v1beta1 shape in a v1 object, `basic` devices, classic DRA's
 *                          fields): kubectl apply fails with the API server's strict decoding
 *                          error, and nothing of the object is created
 *   PodClaimFieldsRemoved  a workload's pods refused for a claim entry without a name, which
 *                          its template has: a mutating webhook or policy removed it (live)
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

/* The members each struct has, as k8s.io/api v0.37.2's json tags say (resource/v1, v1beta2:
 * the same; v1beta1: flat requests and `basic` devices).  Later releases only add fields, so
 * a member no version of 1.37 has is unknown to every release. */
static const char *const request_v1[] = { "name", "exactly", "firstAvailable", NULL };
static const char *const exact_v1[] = { "deviceClassName", "selectors", "allocationMode", "count",
                                        "adminAccess", "tolerations", "capacity",
                                        "derivedAttributes", NULL };
static const char *const request_v1beta1[] = { "name", "deviceClassName", "selectors",
                                               "allocationMode", "count", "adminAccess",
                                               "firstAvailable", "tolerations", "capacity",
                                               "derivedAttributes", NULL };
static const char *const subrequest[] = { "name", "deviceClassName", "selectors",
                                          "allocationMode", "count", "tolerations", "capacity",
                                          "derivedAttributes", NULL };
static const char *const claim_spec[] = { "devices", "controller", NULL };
static const char *const device_claim[] = { "requests", "constraints", "config", NULL };
static const char *const device_v1[] = { "name", "attributes", "capacity", "consumesCounters",
                                         "nodeName", "nodeSelector", "allNodes", "taints",
                                         "bindsToNode", "bindingConditions",
                                         "bindingFailureConditions", "allowMultipleAllocations",
                                         "nodeAllocatableResourceMappings",
                                         "nodeAllocatableResources", NULL };
static const char *const device_v1beta1[] = { "name", "basic", NULL };
static const char *const class_spec[] = { "selectors", "config", "suitableNodes",
                                          "extendedResourceName", NULL };

/* Where a member moved, for the fix. */
static const char *moved_to(const char *key, int v1)
{
    if (v1 && !strcmp(key, "basic"))
        return "a device's attributes, capacity and the rest are its own members in this "
               "version (no `basic`)";
    if (v1 && (!strcmp(key, "deviceClassName") || !strcmp(key, "selectors") ||
               !strcmp(key, "allocationMode") || !strcmp(key, "count") ||
               !strcmp(key, "adminAccess") || !strcmp(key, "tolerations") ||
               !strcmp(key, "capacity")))
        return "in this version it belongs under the request's `exactly`";
    if (!v1 && !strcmp(key, "exactly"))
        return "v1beta1 requests are flat: its members belong on the request itself";
    if (!strcmp(key, "resourceClassName") || !strcmp(key, "parametersRef"))
        return "classic DRA's field (resource.k8s.io/v1alpha2, removed in 1.31): name a "
               "DeviceClass in a request instead";
    return NULL;
}

struct unknown {
    char fields[1024];  /* "unknown field \"a\", unknown field \"b\"": the server's words */
    size_t len, n;
    const char *first;  /* the first unknown key, for the fix */
    char first_path[256];
};

static int in_set(const char *const *set, const char *s)
{
    for (; *set; set++)
        if (!strcmp(*set, s))
            return 1;
    return 0;
}

/* Every member of o that set does not have, at path. */
static void members(struct unknown *u, const cJSON *o, const char *const *set, const char *path)
{
    const cJSON *it;

    if (!cJSON_IsObject(o))
        return;
    cJSON_ArrayForEach(it, o) {
        if (!it->string || in_set(set, it->string))
            continue;
        if (!u->n) {
            u->first = it->string;
            snprintf(u->first_path, sizeof(u->first_path), "%s.%s", path, it->string);
        }
        if (u->len < sizeof(u->fields))
            u->len += (size_t)snprintf(u->fields + u->len, sizeof(u->fields) - u->len,
                                       "%sunknown field \"%s.%s\"", u->n ? ", " : "", path,
                                       it->string);
        u->n++;
    }
}

/* A claim's spec (a template's spec.spec) in version v1 (1) or v1beta1 (0). */
static void claim_members(struct unknown *u, const cJSON *spec, const char *path, int v1)
{
    const cJSON *devices = dd_json_path(spec, "devices", NULL), *req;
    char p[256];
    int i = 0;

    members(u, spec, claim_spec, path);
    snprintf(p, sizeof(p), "%s.devices", path);
    members(u, devices, device_claim, p);
    cJSON_ArrayForEach(req, dd_json_arr(devices, "requests", NULL)) {
        const cJSON *sub;
        int j = 0;
        snprintf(p, sizeof(p), "%s.devices.requests[%d]", path, i++);
        members(u, req, v1 ? request_v1 : request_v1beta1, p);
        if (v1) {
            char e[300];
            snprintf(e, sizeof(e), "%s.exactly", p);
            members(u, dd_json_path(req, "exactly", NULL), exact_v1, e);
        }
        cJSON_ArrayForEach(sub, dd_json_arr(req, "firstAvailable", NULL)) {
            char s[300];
            snprintf(s, sizeof(s), "%s.firstAvailable[%d]", p, j++);
            members(u, sub, subrequest, s);
        }
    }
}

static void shape_one(struct rule_ctx *ctx, const struct dra_obj *o)
{
    const char *ver = rule__api_ver(o);
    int v1 = !strcmp(ver, "v1") || !strcmp(ver, "v1beta2"), removed;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    struct unknown u;
    const cJSON *d;
    const char *why;
    int i = 0;

    /* A version the release does not have at all is APIVersionNotServed's: nothing of it is
     * decoded. */
    if ((!v1 && strcmp(ver, "v1beta1")) ||
        kv_resource_serving(rule__kube_minor(ctx), ver, o->kind, &removed) == KV_NOT_SERVED)
        return;
    memset(&u, 0, sizeof(u));
    if (STRIEQ(o->kind, "ResourceClaim"))
        claim_members(&u, dd_json_path(o->json, "spec", NULL), "spec", v1);
    else if (STRIEQ(o->kind, "ResourceClaimTemplate"))
        claim_members(&u, dd_json_path(o->json, "spec", "spec", NULL), "spec.spec", v1);
    else if (STRIEQ(o->kind, "DeviceClass"))
        members(&u, dd_json_path(o->json, "spec", NULL), class_spec, "spec");
    else if (STRIEQ(o->kind, "ResourceSlice"))
        cJSON_ArrayForEach(d, dd_json_arr(o->json, "spec", "devices", NULL)) {
            char p[64];
            snprintf(p, sizeof(p), "spec.devices[%d]", i++);
            members(&u, d, v1 ? device_v1 : device_v1beta1, p);
        }
    if (!u.n)
        return;
    /* kube-apiserver's words (serializer/json strict decoding, kubectl's server-side field
     * validation, Strict by default). */
    snprintf(msg, sizeof(msg),
             "%s %s has %s its version (%s) does not have, so kubectl apply fails and nothing "
             "of it is created: %s in version \"%s\" cannot be handled as a %s: strict decoding "
             "error: %s.", o->kind, objname(o, on, sizeof(on)),
             u.n == 1 ? "a field" : "fields", o->api_version, o->kind, ver, o->kind, u.fields);
    why = moved_to(u.first, v1);
    snprintf(fix, sizeof(fix), "Remove or move %s%s%s.", u.first_path, why ? ": " : "",
             why ? why : "");
    emit(ctx, ctx->rule->severity, o, 0, msg, fix);
}

/* The API server refuses what it cannot decode: only offline input can hold it. */
void rule__check_field_shapes(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    if (m->live)
        return;
    for (i = 0; i < m->nclasses; i++)
        shape_one(ctx, &m->classes[i].o);
    for (i = 0; i < m->nclaims; i++)
        shape_one(ctx, &m->claims[i].o);
    for (i = 0; i < m->nslices; i++)
        shape_one(ctx, &m->slices[i].o);
}

/* ---- PodClaimFieldsRemoved ---------------------------------------------------------------- */

/* core/v1 validation (pkg/apis/core/validation, validatePodResourceClaim): what the API
 * server says of a pod claim entry with neither name. */
#define CLAIM_SOURCE_MISSING "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"

/* 1 when a list of a webhook's or policy's rule fields allows want ("*" too). */
static int lists(const cJSON *arr, const char *want)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr)
        if (cJSON_IsString(it) && (STRIEQ(it->valuestring, want) || STRIEQ(it->valuestring, "*")))
            return 1;
    return 0;
}

/* 1 when rule (a RuleWithOperations, or a policy's resourceRules entry) matches pod CREATE. */
static int matches_pod_create(const cJSON *rule)
{
    return lists(dd_json_arr(rule, "apiGroups", NULL), "") &&
           lists(dd_json_arr(rule, "resources", NULL), "pods") &&
           lists(dd_json_arr(rule, "operations", NULL), "CREATE");
}

/* The mutating webhooks and policies of m that match pod creation, as "Kind name (webhook w)"
 * into buf. */
static size_t pod_mutators(const struct dra_model *m, char *buf, size_t size)
{
    size_t i, len = 0, n = 0;
    const cJSON *w, *r;

    buf[0] = '\0';
    for (i = 0; i < m->mutators.n; i++) {
        const struct dra_obj *o = &m->mutators.v[i];
        if (STRIEQ(o->kind, "MutatingWebhookConfiguration")) {
            cJSON_ArrayForEach(w, dd_json_arr(o->json, "webhooks", NULL))
                cJSON_ArrayForEach(r, dd_json_arr(w, "rules", NULL))
                    if (matches_pod_create(r)) {
                        cat(buf, size, &len, "%sMutatingWebhookConfiguration %s (webhook %s)",
                            n++ ? ", " : "", o->name, dd_json_str(w, "name", NULL) ?
                            dd_json_str(w, "name", NULL) : "?");
                        break;
                    }
        } else {
            cJSON_ArrayForEach(r, dd_json_arr(o->json, "spec", "matchConstraints", "resourceRules",
                                              NULL))
                if (matches_pod_create(r)) {
                    cat(buf, size, &len, "%sMutatingAdmissionPolicy %s", n++ ? ", " : "",
                        o->name);
                    break;
                }
        }
    }
    return n;
}

/* A workload controller's pods refused with CLAIM_SOURCE_MISSING: the workload's template was
 * validated the same way when it was created, so its entries had a name; something between
 * the controller and validation removed it — a mutating webhook or policy that matches pods
 * (an old pod schema drops fields it does not know; kubernetes/kubernetes#131877, #131044). */
void rule__check_claim_fields_removed(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], who[1024], api[64];
    size_t i, j, n;

    if (!m->live)
        return;
    n = pod_mutators(m, who, sizeof(who));
    for (i = 0; i < m->nevents; i++) {
        const struct dra_event *e = &m->events[i];
        struct dra_obj o;
        if (!e->reason || !STRIEQ(e->reason, "FailedCreate") || !e->message ||
            !strstr(e->message, CLAIM_SOURCE_MISSING) || STRIEQ(e->kind, "Pod"))
            continue;
        /* One finding per workload: its newest event. */
        for (j = i + 1; j < m->nevents; j++)
            if (STRIEQ(m->events[j].kind, e->kind) && STRIEQ(m->events[j].ns, e->ns) &&
                STRIEQ(m->events[j].name, e->name) && m->events[j].reason &&
                STRIEQ(m->events[j].reason, "FailedCreate") && m->events[j].message &&
                strstr(m->events[j].message, CLAIM_SOURCE_MISSING))
                break;
        if (j < m->nevents)
            continue;
        memset(&o, 0, sizeof(o));
        snprintf(api, sizeof(api), "%s", STRIEQ(e->kind, "Job") || STRIEQ(e->kind, "CronJob")
                                             ? "batch/v1" : "apps/v1");
        o.api_version = api;
        o.kind = e->kind;
        o.ns = e->ns;
        o.name = e->name;
        snprintf(msg, sizeof(msg),
                 "%s %s/%s cannot create its pods: \"%s\". Its pod template names a claim or "
                 "template in every resourceClaims entry (the API server validated it when the "
                 "%s was created), so something removed resourceClaimName or "
                 "resourceClaimTemplateName from the pod on its way in: a mutating admission "
                 "webhook or policy that matches pod creation%s%s.", e->kind, e->ns, e->name,
                 e->message, e->kind, n ? ": " : " (none in the cluster matches pods now: it "
                 "may be gone, or outside what dra-doctor may list)", n ? who : "");
        snprintf(fix, sizeof(fix), "Update the webhook's or policy's pod schema (one that "
                 "predates resourceClaimName drops it: kubernetes/kubernetes#131877), or exclude "
                 "pods with resourceClaims from it (an objectSelector or matchConditions); then "
                 "the %s creates its pods again.", e->kind);
        emit(ctx, ctx->rule->severity, &o, 0, msg, fix);
    }
}
