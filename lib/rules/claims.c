/*
 * claims.c - claims and references: what a pod, its claims and their templates name, and what
 * a claim asks for before any device is looked at.
 *
 *   APIVersionNotServed               a resource.k8s.io version the target release does not serve
 *   PodClaimSourceRemoved             pod.spec.resourceClaims[].source (removed in 1.31)
 *   ContainerClaimNameUnknown         a container names a claim the pod does not have
 *   AdminAccessNamespaceLabelMissing  adminAccess in a namespace without the label (its key
 *                                     changed in 1.34)
 *   QuotaExceeded                     claims beyond a ResourceQuota, counted as the quota
 *                                     evaluator counts
 *   ClaimNotFound, ClaimTemplateNotFound, DeviceClassNotFound   references that do not resolve
 *   OpaqueConfigDriverMismatch        config for a driver the claim's devices do not come from:
 *                                     the driver skips it, silently
 *   ClaimNotConsumedByContainer       a claim no container lists, or a `request` the claim
 *                                     lacks: the device is prepared and no container gets it
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/kubever.h"
#include "model/quota.h"
#include "rules/suggest.h"

/* ---- API versions -------------------------------------------------------- */

/* DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice: the kinds whose shape
 * changed with v1. */
static int in_core_kinds(const char *kind)
{
    return !strcmp(kind, "DeviceClass") || !strcmp(kind, "ResourceClaim") ||
           !strcmp(kind, "ResourceClaimTemplate") || !strcmp(kind, "ResourceSlice");
}

static void api_version_one(struct rule_ctx *ctx, const struct dra_obj *o)
{
    const char *slash = strchr(o->api_version, '/'), *ver = slash ? slash + 1 : "";
    const char *to = kv_resource_preferred_for(rule__kube_minor(ctx), o->kind);
    char msg[MSG_MAX], fix[MSG_MAX], on[300], gate[128];
    int removed, minor = rule__kube_minor(ctx);
    enum kv_serving sv = kv_resource_serving(minor, ver, o->kind, &removed);
    size_t len = 0;

    if (sv == KV_SERVED || sv == KV_UNKNOWN)
        return;
    objname(o, on, sizeof(on));
    if (sv == KV_OFF_BY_DEFAULT) {
        cat(msg, sizeof(msg), &len,
            "%s %s uses %s, which Kubernetes 1.%d serves only when kube-apiserver runs with "
            "--runtime-config=resource.k8s.io/%s=true (off by default); on a default cluster "
            "kubectl apply fails (no matches for kind \"%s\" in version \"%s\").",
            o->kind, on, o->api_version, minor, ver, o->kind, o->api_version);
        if (!strcmp(o->kind, "DeviceTaintRule"))
            cat(msg, sizeof(msg), &len, " Its scheduler honours DeviceTaintRules only with %s.",
                kv_gate_says(ctx->gates, kv_gate_exists(minor, KV_GATE_DEVICE_TAINT_RULES)
                                             ? KV_GATE_DEVICE_TAINT_RULES
                                             : KV_GATE_DEVICE_TAINTS, gate, sizeof(gate)));
        if (to && strcmp(to, ver) &&
            kv_resource_serving(minor, to, o->kind, &removed) == KV_SERVED)
            snprintf(fix, sizeof(fix), "Set apiVersion: resource.k8s.io/%s%s (or enable %s on "
                     "the API server).", to, !strcmp(ver, "v1beta1") ? "; a request's fields "
                     "move under `exactly`, a device's under its top level (no `basic`)" : "",
                     o->api_version);
        else
            snprintf(fix, sizeof(fix), "Enable %s on the API server (--runtime-config=%s=true)%s, "
                     "or target a release that serves %s by default.", o->api_version,
                     o->api_version, !strcmp(o->kind, "DeviceTaintRule") ? " and the gate" : "",
                     o->kind);
        emit(ctx, DD_SEV_WARNING, o, 0, msg, fix);
        return;
    }
    if (!strcmp(o->kind, "ResourceClass") || !strcmp(o->kind, "PodSchedulingContext") ||
        !strcmp(o->kind, "ResourceClaimParameters") || !strcmp(o->kind, "ResourceClassParameters")) {
        cat(msg, sizeof(msg), &len,
            "%s %s (%s) belongs to classic DRA, which Kubernetes removed in 1.%d: the API server "
            "has no such kind and kubectl apply fails (no matches for kind \"%s\").",
            o->kind, on, o->api_version, removed, o->kind);
        snprintf(fix, sizeof(fix), "Use structured parameters (resource.k8s.io/%s): a "
                 "DeviceClass with CEL selectors instead of a ResourceClass, and the driver's "
                 "current release.", to);
    } else {
        cat(msg, sizeof(msg), &len,
            "%s %s uses %s, which Kubernetes 1.%d does not serve: kubectl apply fails (no "
            "matches for kind \"%s\" in version \"%s\") and nothing of it reaches the cluster.",
            o->kind, on, o->api_version, minor, o->kind, o->api_version);
        if (removed)
            cat(msg, sizeof(msg), &len, " (%s was removed in 1.%d.)", o->api_version, removed);
        if (!to)
            snprintf(fix, sizeof(fix), "Kubernetes 1.%d has no %s: target a release that "
                     "has it.", minor, o->kind);
        else if (in_core_kinds(o->kind))
            snprintf(fix, sizeof(fix), "Set apiVersion: resource.k8s.io/%s; a request's "
                     "deviceClassName, selectors, count and allocationMode move under "
                     "`exactly`.", to);
        else
            snprintf(fix, sizeof(fix), "Set apiVersion: resource.k8s.io/%s, the version "
                     "Kubernetes 1.%d's scheduler reads %s in%s.", to, minor, o->kind,
                     kv_resource_serving(minor, to, o->kind, &removed) == KV_SERVED
                         ? "" : " (off by default there too: enable it and its gate)");
    }
    emit(ctx, ctx->rule->severity, o, 0, msg, fix);
}

/* The API server refuses what it does not serve: only offline input can hold it. */
void rule__check_api_versions(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i;

    if (m->live)
        return;
    for (i = 0; i < m->nclasses; i++)
        api_version_one(ctx, &m->classes[i].o);
    for (i = 0; i < m->nclaims; i++)
        api_version_one(ctx, &m->claims[i].o);
    for (i = 0; i < m->nslices; i++)
        api_version_one(ctx, &m->slices[i].o);
    for (i = 0; i < m->resource_other.n; i++)
        api_version_one(ctx, &m->resource_other.v[i]);
}

void rule__check_claim_source(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, j;

    if (m->live)
        return;
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        for (j = 0; j < p->nclaims; j++) {
            const cJSON *src;
            const char *tmpl, *claim;
            if (!p->claims[j].has_source)
                continue;
            src = dd_json_path(cJSON_GetArrayItem(dd_json_arr(p->spec, "resourceClaims", NULL),
                                                  (int)j), "source", NULL);
            tmpl = dd_json_str(src, "resourceClaimTemplateName", NULL);
            claim = dd_json_str(src, "resourceClaimName", NULL);
            snprintf(msg, sizeof(msg),
                     "%s %s: pod claim \"%s\" uses `source`, which Kubernetes removed in 1.%d "
                     "(Kubernetes 1.%d rejects the pod: unknown field \"source\", and the entry "
                     "names no claim), so the pod is never created.",
                     p->o.kind, objname(&p->o, on, sizeof(on)), p->claims[j].name,
                     KV_POD_CLAIM_SOURCE_REMOVED, rule__kube_minor(ctx));
            if (tmpl || claim)
                snprintf(fix, sizeof(fix), "Replace `source: {%s: %s}` with `%s: %s` on the "
                         "entry itself.", tmpl ? "resourceClaimTemplateName" : "resourceClaimName",
                         tmpl ? tmpl : claim, tmpl ? "resourceClaimTemplateName" :
                         "resourceClaimName", tmpl ? tmpl : claim);
            else
                snprintf(fix, sizeof(fix), "Name the claim on the entry itself with "
                         "resourceClaimName or resourceClaimTemplateName.");
            emit(ctx, ctx->rule->severity, &p->o, p->claims[j].line, msg, fix);
        }
    }
}

/* ---- QuotaExceeded ------------------------------------------------------- */

/* One claim creation in apply order: a ResourceClaim, or the claims a workload's template makes. */
struct claim_event {
    const struct dra_obj *o;
    const struct dra_claim_spec *spec;
    int64_t claims;
    const char *tmpl; /* template name for generated claims, else NULL */
};

/* "gpu.example.com devices" for a class key, "ResourceClaims" for the count key. */
static void quota_what(const char *key, char *buf, size_t size)
{
    const char *sfx = strstr(key, QUOTA_CLASS_SUFFIX);

    if (sfx)
        snprintf(buf, size, "%.*s devices", (int)(sfx - key), key);
    else
        snprintf(buf, size, "ResourceClaims");
}

/* The first clause says it all (the webhook's warning is that clause): the quota, what is in
 * use, what the object needs. */
static void quota_report(struct rule_ctx *ctx, const struct dra_quota *q,
                         const struct claim_event *ev, const struct dra_quota_item *h,
                         int64_t used, int64_t need)
{
    char msg[MSG_MAX], fix[MSG_MAX], qn[300], on[300], what[300], cls[256] = "";
    const char *sfx = strstr(h->key, QUOTA_CLASS_SUFFIX);
    int64_t total = used + need;
    size_t len = 0;

    objname(&q->o, qn, sizeof(qn));
    objname(ev->o, on, sizeof(on));
    quota_what(h->key, what, sizeof(what));
    cat(msg, sizeof(msg), &len, "ResourceQuota %s allows %lld %s, %lld in use, and ", q->o.name,
        (long long)h->hard, what, (long long)used);
    if (ev->tmpl)
        cat(msg, sizeof(msg), &len,
            "%s %s needs %lld; with its %lld claim(s) from ResourceClaimTemplate %s the "
            "namespace needs %s=%lld, so kube-controller-manager's claim creation is rejected "
            "(\"exceeded quota: %s\") and the pod never gets its claim.",
            ev->o->kind, ev->o->name, (long long)need, (long long)ev->claims, ev->tmpl, h->key,
            (long long)total, q->o.name);
    else
        cat(msg, sizeof(msg), &len,
            "claim %s needs %lld; with it the namespace needs %s=%lld, so the API server rejects "
            "it (\"exceeded quota: %s\").",
            ev->o->name, (long long)need, h->key, (long long)total, q->o.name);
    snprintf(fix, sizeof(fix), "Raise %s in ResourceQuota %s to at least %lld, or remove that limit.",
             h->key, qn, (long long)total);
    if (sfx && (size_t)(sfx - h->key) < sizeof(cls))
        memcpy(cls, h->key, (size_t)(sfx - h->key));
    scope(ctx, emit(ctx, ctx->rule->severity, ev->o, 0, msg, fix), *cls ? cls : NULL, NULL,
          NULL);
}

/*
 * Admits claims in order as the quota admission would: a claim that does not
 * fit is reported and, being rejected, charges nothing, so every later claim
 * is judged against what was really admitted.  Of a template's N claims the
 * ones that fit are admitted and the rest reported.  What the namespace holds before the
 * first: nothing in a snapshot that holds its claims (lint, live); at admission, where the
 * model holds only the object being created, the quota's status.used.
 */
static void quota_one(struct rule_ctx *ctx, const struct dra_quota *q,
                      const struct claim_event *ev, size_t nev, int admission)
{
    struct quota_usage u = QUOTA_USAGE_INIT;
    const cJSON *status_used = dd_json_path(q->o.json, "status", "used", NULL);
    size_t i, k;

    for (k = 0; admission && k < q->nhard; k++) {
        const char *s = dd_json_str(status_used, q->hard[k].key, NULL);
        int64_t n;
        if (quota_key_charged(q->hard[k].key) && s && dd_quantity_int(s, &n) && n > 0 &&
            quota_usage_add(&u, q->hard[k].key, n))
            ctx->out->oom = 1;
    }
    for (i = 0; i < nev; i++) {
        struct quota_usage one = QUOTA_USAGE_INIT;
        int64_t fit = ev[i].claims;
        const struct dra_quota_item *over = NULL;

        if (quota_usage_add_claim(&one, ev[i].spec, 1)) {
            ctx->out->oom = 1;
            break;
        }
        for (k = 0; k < q->nhard; k++) {
            const struct dra_quota_item *h = &q->hard[k];
            int64_t per = quota_usage_get(&one, h->key), room;
            if (per <= 0 || !quota_key_charged(h->key))
                continue;
            room = h->hard - quota_usage_get(&u, h->key);
            if (room < 0)
                room = 0;
            if (room / per < fit) {
                fit = room / per;
                over = h;
            }
        }
        if (over)
            quota_report(ctx, q, &ev[i], over, quota_usage_get(&u, over->key),
                         quota_usage_get(&one, over->key) * ev[i].claims);
        if (fit > 0 && quota_usage_add_claim(&u, ev[i].spec, fit))
            ctx->out->oom = 1;
        quota_usage_release(&one);
    }
    quota_usage_release(&u);
}

/*
 * The claims and pods of the quotas' namespaces, by namespace then in model order, so that each
 * quota visits its own: the namespaces numbered through a hash of them, the claims and pods put
 * in place by counting.  A sort of every claim and pod cost more than the rest of the rule,
 * and it runs on every live update.
 */
struct quota_nss {
    const char **ns; /* cap slots (a power of two), NULL when empty */
    size_t *id;      /* each slot's number */
    size_t cap, n;
    const char *few[4]; /* the first four, by number */
};

static size_t quota_ns_slot(const struct quota_nss *s, const char *ns)
{
    size_t h = dra_key_hash(ns, "") & (s->cap - 1);

    while (s->ns[h] && !STRIEQ(s->ns[h], ns))
        h = (h + 1) & (s->cap - 1);
    return h;
}

/* The number of namespace ns, or SIZE_MAX when no quota has it.  A few (an update reruns the
 * rule over the quotas of the namespaces it changed) are compared, not hashed: most compare
 * unequal in their first bytes. */
static size_t quota_ns_id(const struct quota_nss *s, const char *ns)
{
    size_t h;

    if (s->n <= 4) {
        for (h = 0; h < s->n; h++)
            if (STRIEQ(s->few[h], ns))
                return h;
        return SIZE_MAX;
    }
    h = quota_ns_slot(s, ns);
    return s->ns[h] ? s->id[h] : SIZE_MAX;
}

/* start[0..s->n]: where each namespace's items begin in out, which gets the positions of the
 * n items whose namespace is ns_of(i), those of no quota's left out; by[i] is scratch. */
static void quota_group(const struct quota_nss *s, size_t n, const char *(*ns_of)(const void *,
                                                                                   size_t),
                        const void *arg, size_t *by, size_t *start, size_t *out)
{
    size_t i;

    memset(start, 0, (s->n + 1) * sizeof(*start));
    for (i = 0; i < n; i++) {
        const char *ns = ns_of(arg, i);
        by[i] = ns ? quota_ns_id(s, ns) : SIZE_MAX;
        if (by[i] != SIZE_MAX)
            start[by[i] + 1]++;
    }
    for (i = 0; i < s->n; i++)
        start[i + 1] += start[i];
    for (i = 0; i < n; i++)
        if (by[i] != SIZE_MAX)
            out[start[by[i]]++] = i;
    /* start[k] is now where namespace k + 1 begins: shifted back. */
    memmove(start + 1, start, s->n * sizeof(*start));
    start[0] = 0;
}

static const char *claim_ns(const void *m, size_t i)
{
    const struct dra_claim *c = &((const struct dra_model *)m)->claims[i];

    return c->is_template ? NULL : c->o.ns;
}

static const char *pod_ns(const void *m, size_t i)
{
    return ((const struct dra_model *)m)->pods[i]->o.ns;
}

void rule__check_quota(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    struct quota_nss nss = { NULL, NULL, 16, 0, { NULL } };
    struct claim_event *ev = NULL;
    size_t *qid = NULL, *by = NULL, *cstart = NULL, *pstart = NULL, *cl = NULL, *pl = NULL;
    size_t qi, i, j, nev, cap = m->nclaims + 1;
    int done = 0;

    if (!m->nquotas)
        return;
    while (nss.cap < 2 * m->nquotas)
        nss.cap *= 2;
    nss.ns = calloc(nss.cap, sizeof(*nss.ns));
    nss.id = malloc(nss.cap * sizeof(*nss.id));
    qid = malloc(m->nquotas * sizeof(*qid));
    if (!nss.ns || !nss.id || !qid)
        goto out;
    for (qi = 0; qi < m->nquotas; qi++) {
        size_t h = quota_ns_slot(&nss, m->quotas[qi].o.ns);
        if (!nss.ns[h]) {
            nss.ns[h] = m->quotas[qi].o.ns;
            if (nss.n < 4)
                nss.few[nss.n] = nss.ns[h];
            nss.id[h] = nss.n++;
        }
        qid[qi] = nss.id[h];
    }
    ev = calloc(cap, sizeof(*ev));
    by = malloc((m->nclaims > m->npods ? m->nclaims : m->npods) * sizeof(*by) + 1);
    cstart = malloc((nss.n + 1) * sizeof(*cstart));
    pstart = malloc((nss.n + 1) * sizeof(*pstart));
    cl = malloc((m->nclaims + 1) * sizeof(*cl));
    pl = malloc((m->npods + 1) * sizeof(*pl));
    if (!ev || !by || !cstart || !pstart || !cl || !pl)
        goto out;
    quota_group(&nss, m->nclaims, claim_ns, m, by, cstart, cl);
    quota_group(&nss, m->npods, pod_ns, m, by, pstart, pl);
    for (qi = 0; qi < m->nquotas; qi++) {
        const struct dra_quota *q = &m->quotas[qi];
        size_t k, id = qid[qi];

        nev = 0;
        for (k = cstart[id]; k < cstart[id + 1]; k++) {
            i = cl[k];
            ev[nev].o = &m->claims[i].o;
            ev[nev].spec = &m->claims[i].spec;
            ev[nev].claims = 1;
            ev[nev++].tmpl = NULL;
        }
        for (k = pstart[id]; k < pstart[id + 1]; k++) {
            const struct dra_podspec *p = m->pods[pl[k]];
            for (j = 0; j < p->nclaims; j++) {
                const struct dra_claim *t;
                /* A live pod's generated claim is a ResourceClaim already counted above. */
                if (!p->claims[j].tmpl || dra_pod_claim_resolve(m, p, &p->claims[j]) ||
                    !(t = dra_find_claim(m, p->o.ns, p->claims[j].tmpl, 1)))
                    continue;
                if (nev == cap) {
                    struct claim_event *nv = realloc(ev, 2 * cap * sizeof(*ev));
                    if (!nv)
                        goto out;
                    ev = nv;
                    cap *= 2;
                }
                ev[nev].o = &p->o;
                ev[nev].spec = &t->spec;
                ev[nev].claims = p->replicas < 0 ? dra_node_count(m, ctx->opt->nodes)
                                                 : p->replicas;
                ev[nev++].tmpl = t->o.name;
            }
        }
        quota_one(ctx, q, ev, nev, ctx->surface == DD_ADMISSION);
    }
    done = 1;
out:
    if (!done)
        ctx->out->oom = 1;
    free(nss.ns);
    free(nss.id);
    free(qid);
    free(ev);
    free(by);
    free(cstart);
    free(pstart);
    free(cl);
    free(pl);
}

/* ---- references ---------------------------------------------------------- */

static enum dd_severity ref_severity(const struct rule_ctx *ctx)
{
    return ctx->opt->complete ? DD_SEV_ERROR : ctx->rule->severity;
}

static const char *partial_note(const struct rule_ctx *ctx)
{
    return ctx->opt->complete ? "" : " (if it is created outside these manifests, ignore this "
                                     "warning; --complete makes it an error)";
}

/* The driver object whose controller creates what (kind) ns/name is, or NULL. */
static const struct dra_obj *created_by_driver(const struct dra_model *m, const char *what,
                                               const char *ns, const char *name)
{
    size_t i;

    for (i = 0; i < m->driver_objects.n; i++) {
        const struct dra_obj *o = &m->driver_objects.v[i];
        const struct drv_creates *c = drv_creates_for(o->api_version, o->kind);
        const cJSON *v = o->json;
        size_t k;
        for (k = 0; c && c->path[k] && v; k++)
            v = cJSON_GetObjectItemCaseSensitive(v, c->path[k]);
        if (c && STRIEQ(c->creates, what) && STRIEQ(o->ns, ns) && cJSON_IsString(v) &&
            STRIEQ(v->valuestring, name))
            return o;
    }
    return NULL;
}

static void check_pod_refs(struct rule_ctx *ctx, int is_template)
{
    const struct dra_model *m = ctx->m;
    const char *what = is_template ? "ResourceClaimTemplate" : "ResourceClaim";
    size_t i, j;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        for (j = 0; j < p->nclaims; j++) {
            const char *ref = is_template ? p->claims[j].tmpl : p->claims[j].claim;
            char msg[MSG_MAX], fix[MSG_MAX], on[300];

            if (!ref || dra_find_claim(m, p->o.ns, ref, is_template) ||
                created_by_driver(m, what, p->o.ns, ref))
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s references %s \"%s\" (pod claim \"%s\"), which is not in namespace "
                     "%s%s; the pod stays Pending and the scheduler reports nothing.",
                     p->o.kind, objname(&p->o, on, sizeof(on)), what, ref, p->claims[j].name,
                     *p->o.ns ? p->o.ns : "default", partial_note(ctx));
            snprintf(fix, sizeof(fix), "Create %s %s/%s, or correct the name in spec.resourceClaims.",
                     what, *p->o.ns ? p->o.ns : "default", ref);
            emit(ctx, ref_severity(ctx), &p->o, p->claims[j].line, msg, fix);
        }
    }
}

void rule__check_claim_ref(struct rule_ctx *ctx)
{
    check_pod_refs(ctx, 0);
}

void rule__check_template_ref(struct rule_ctx *ctx)
{
    check_pod_refs(ctx, 1);
}

/* "Did you mean" answers already computed in one run: many claims often name the same
 * missing class, and each answer costs an edit distance per class. */
struct near_memo {
    const char *name[MAX_NAMES];
    const char *near[MAX_NAMES];
    size_t n;
};

static const char *nearest_memo(struct near_memo *memo, const char *s,
                                const struct rule_names *names)
{
    const char *near;
    size_t i;

    for (i = 0; i < memo->n; i++)
        if (STRIEQ(memo->name[i], s))
            return memo->near[i];
    near = sug_nearest(s, names->v, names->n);
    if (memo->n < MAX_NAMES) {
        memo->name[memo->n] = s;
        memo->near[memo->n++] = near;
    }
    return near;
}

static void class_ref_one(struct rule_ctx *ctx, const struct dra_claim *c,
                          const struct dra_request *r, const struct rule_names *classes,
                          struct near_memo *memo)
{
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    const struct drv_profile *prof;
    const char *near;
    size_t len = 0;

    if (!r->class_name || dra_find_class(ctx->m, r->class_name))
        return;
    /* A class a real driver's install makes is not a typo of another one's. */
    prof = drv_profile_for_class(r->class_name);
    near = prof ? NULL : nearest_memo(memo, r->class_name, classes);
    cat(msg, sizeof(msg), &len,
        "%s %s request \"%s\" asks for DeviceClass \"%s\", which does not exist%s%s%s; the "
        "scheduler keeps the pod Pending (\"device class %s does not exist\")%s.",
        c->o.kind, objname(&c->o, on, sizeof(on)), r->name, r->class_name,
        near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "", r->class_name,
        partial_note(ctx));
    if (near)
        snprintf(fix, sizeof(fix), "Set deviceClassName to \"%s\".", near);
    else if (prof)
        snprintf(fix, sizeof(fix), "Install %s (%s), whose install creates DeviceClass %s, or "
                 "correct deviceClassName.", prof->id, prof->vendor, r->class_name);
    else
        snprintf(fix, sizeof(fix), "Create DeviceClass %s, or correct deviceClassName.",
                 r->class_name);
    scope(ctx, emit(ctx, ref_severity(ctx), &c->o, r->line, msg, fix), r->class_name, NULL, NULL);
}

void rule__check_class_ref(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    struct rule_names classes = { { 0 }, 0 };
    struct near_memo memo;
    size_t i, j, k;

    memo.n = 0;
    for (i = 0; i < m->nclasses; i++)
        names_add(&classes, m->classes[i].o.name);
    for (i = 0; i < m->nclaims; i++)
        for (j = 0; j < m->claims[i].spec.nreq; j++) {
            const struct dra_request *r = &m->claims[i].spec.req[j];
            class_ref_one(ctx, &m->claims[i], r, &classes, &memo);
            for (k = 0; k < r->nsub; k++)
                class_ref_one(ctx, &m->claims[i], &r->sub[k], &classes, &memo);
        }
}

/* The namespace label admin access needs, from 1.34 (k8s.io/api resource/v1
 * DRAAdminNamespaceLabelKey); 1.33 used resource.k8s.io/admin-access. */
#define ADMIN_LABEL "resource.kubernetes.io/admin-access"
#define ADMIN_LABEL_OLD "resource.k8s.io/admin-access"

static const struct dra_obj *namespace_named(const struct dra_model *m, const char *name)
{
    size_t i;

    for (i = 0; i < m->namespaces.n; i++)
        if (STRIEQ(m->namespaces.v[i].name, name))
            return &m->namespaces.v[i];
    return NULL;
}

/* The request (or alternative) of c at admin access, or NULL. */
static const struct dra_request *admin_request(const struct dra_claim *c, size_t *idx)
{
    size_t i, j;

    for (i = 0; i < c->spec.nreq; i++) {
        if (c->spec.req[i].admin_access) {
            *idx = i;
            return &c->spec.req[i];
        }
        for (j = 0; j < c->spec.req[i].nsub; j++)
            if (c->spec.req[i].sub[j].admin_access) {
                *idx = i;
                return &c->spec.req[i].sub[j];
            }
    }
    return NULL;
}

void rule__check_admin_access(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300];
    size_t i, idx = 0;

    /* With DRAAdminAccess off the API server drops adminAccess: no label is asked for. */
    if (!rule__gate(ctx, KV_GATE_ADMIN_ACCESS))
        return;
    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const struct dra_request *r = admin_request(c, &idx);
        const char *ns = *c->o.ns ? c->o.ns : "default", *v, *old;
        const struct dra_obj *nso;
        /* An admitted claim had the label when it was created; a template's claims are yet to
         * be made by kube-controller-manager. */
        if (!r || (m->live && !c->is_template) || !(nso = namespace_named(m, ns)))
            continue;
        v = dd_json_str(nso->json, "metadata", "labels", ADMIN_LABEL, NULL);
        if (v && STRIEQ(v, "true"))
            continue;
        old = dd_json_str(nso->json, "metadata", "labels", ADMIN_LABEL_OLD, NULL);
        /* Kubernetes 1.36's texts: the template itself is refused like a claim (same field
         * path); one admitted before the label was removed makes pods whose claims are. */
        snprintf(msg, sizeof(msg),
                 "%s %s: request \"%s\" asks for admin access, but Namespace %s lacks the label "
                 "%s: \"true\"%s, so the API server refuses %s (\"spec.devices.requests[%zu]."
                 "adminAccess: Forbidden: admin access to devices requires the `%s: true` label "
                 "on the containing namespace\")%s.",
                 c->o.kind, objname(&c->o, on, sizeof(on)), r->name, ns, ADMIN_LABEL,
                 old ? " (it has " ADMIN_LABEL_OLD ", the key of 1.33: Kubernetes 1.34 renamed it)"
                     : "",
                 m->live ? "each claim made from it" : c->is_template ? "the template" : "the claim",
                 idx, ADMIN_LABEL,
                 m->live ? ": its pods get FailedResourceClaimCreation and never start" : "");
        snprintf(fix, sizeof(fix), "kubectl label namespace %s %s=true (only namespaces whose "
                 "users may see every device should have it).", ns, ADMIN_LABEL);
        emit(ctx, ctx->rule->severity, &c->o, r->line, msg, fix);
    }
}

/* 1 when config entry cfg applies to request name (no `requests` list: to all). */
static int config_for(const cJSON *cfg, const char *name)
{
    const cJSON *reqs = dd_json_arr(cfg, "requests", NULL), *it;

    if (!cJSON_GetArraySize(reqs))
        return 1;
    cJSON_ArrayForEach(it, reqs)
        if (cJSON_IsString(it) && (STRIEQ(it->valuestring, name) ||
                                   (!strncmp(it->valuestring, name, strlen(name)) &&
                                    it->valuestring[strlen(name)] == '/')))
            return 1;
    return 0;
}

/* The drivers that serve the requests cfg applies to (all drivers of a class's selectors). */
static void config_drivers(const struct dra_model *m, const struct dra_claim_spec *spec,
                           const cJSON *cfg, struct rule_names *out)
{
    size_t i, j;

    for (i = 0; i < spec->nreq; i++) {
        if (!config_for(cfg, spec->req[i].name))
            continue;
        rule__request_drivers(m, &spec->req[i], out);
        for (j = 0; j < spec->req[i].nsub; j++)
            rule__request_drivers(m, &spec->req[i].sub[j], out);
    }
}

static void mismatch_one(struct rule_ctx *ctx, const struct dra_obj *o, const cJSON *cfg,
                         size_t idx, const char *field, const struct rule_names *drivers)
{
    const char *driver = dd_json_str(cfg, "opaque", "driver", NULL), *near;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], list[512];
    size_t len = 0, i;

    if (!driver || !drivers->n || names_has(drivers, driver))
        return;
    for (i = 0, list[0] = '\0'; i < drivers->n; i++)
        cat(list, sizeof(list), &len, "%s%s", i ? ", " : "", drivers->v[i]);
    near = sug_nearest(driver, drivers->v, drivers->n);
    len = 0;
    cat(msg, sizeof(msg), &len,
        "%s %s: %s[%zu].opaque is for driver \"%s\", but the devices it configures come from %s: "
        "drivers skip the configuration of other drivers without a word, so none of it applies "
        "and the devices run with their defaults.",
        o->kind, objname(o, on, sizeof(on)), field, idx, driver, list);
    if (near)
        cat(msg, sizeof(msg), &len, " Did you mean '%s'?", near);
    snprintf(fix, sizeof(fix), "Set %s[%zu].opaque.driver to %s.", field, idx,
             near ? near : drivers->v[0]);
    /* A class's configuration reaches every pod of the class. */
    scope(ctx, emit(ctx, ctx->rule->severity, o, 0, msg, fix),
          STRIEQ(o->kind, "DeviceClass") ? o->name : NULL, NULL, NULL);
}

void rule__check_config_driver(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    size_t i, k;

    for (i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const cJSON *cfg;
        k = 0;
        cJSON_ArrayForEach(cfg, c->spec.config) {
            struct rule_names drivers = { { 0 }, 0 };
            config_drivers(m, &c->spec, cfg, &drivers);
            mismatch_one(ctx, &c->o, cfg, k++, c->is_template ? "spec.spec.devices.config"
                                                               : "spec.devices.config", &drivers);
        }
    }
    for (i = 0; i < m->nclasses; i++) {
        const struct dra_class *cls = &m->classes[i];
        struct rule_names drivers = { { 0 }, 0 };
        struct dra_request r;
        const cJSON *cfg;
        memset(&r, 0, sizeof(r));
        r.class_name = cls->o.name;
        rule__request_drivers(m, &r, &drivers);
        k = 0;
        cJSON_ArrayForEach(cfg, cls->config)
            mismatch_one(ctx, &cls->o, cfg, k++, "spec.config", &drivers);
    }
}

/* The pod claim entry called name, or NULL. */
static const struct dra_pod_claim *pod_claim(const struct dra_podspec *p, const char *name)
{
    size_t i;

    for (i = 0; name && i < p->nclaims; i++)
        if (STRIEQ(p->claims[i].name, name))
            return &p->claims[i];
    return NULL;
}

/* The names of the pod's claims, for messages: "a, b" or "none". */
static void claim_list(const struct dra_podspec *p, char *buf, size_t size)
{
    size_t i, len = 0;

    buf[0] = '\0';
    for (i = 0; i < p->nclaims; i++)
        cat(buf, size, &len, "%s%s", i ? ", " : "", p->claims[i].name);
    if (!p->nclaims)
        cat(buf, size, &len, "none");
}

/* The path of container c of p, as validation names it: spec.containers[i]. */
static void ctr_path(const struct dra_podspec *p, const struct dra_container *c, char *buf,
                     size_t size)
{
    size_t i, k = 0;

    for (i = 0; i < p->nctr && &p->ctr[i] != c; i++)
        k += p->ctr[i].init == c->init;
    snprintf(buf, size, "%s%s[%zu]", STRIEQ(p->o.kind, "Pod") ? "spec." : "spec.template.spec.",
             c->init ? "initContainers" : "containers", k);
}

void rule__check_container_claims(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], path[160], names[512];
    size_t i, j, k;

    /* The API server refuses such a pod or workload: a live one never has it. */
    if (m->live)
        return;
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        for (j = 0; j < p->nctr; j++) {
            const struct dra_container *c = &p->ctr[j];
            const cJSON *it;
            k = 0;
            cJSON_ArrayForEach(it, c->claims) {
                const char *name = dd_json_str(it, "name", NULL);
                if (name && !pod_claim(p, name)) {
                    ctr_path(p, c, path, sizeof(path));
                    claim_list(p, names, sizeof(names));
                    snprintf(msg, sizeof(msg),
                             "%s %s: container %s uses claim \"%s\", which is not one of the pod's "
                             "resourceClaims (%s): the API server refuses it (%s.resources."
                             "claims[%zu]: Not found: \"%s\": must be one of the names in "
                             "pod.spec.resourceClaims).",
                             p->o.kind, objname(&p->o, on, sizeof(on)), c->name, name, names,
                             path, k, name);
                    snprintf(fix, sizeof(fix), "Name one of the pod's claims (%s) in %s.resources."
                             "claims[%zu].name, or add a resourceClaims entry \"%s\".", names, path,
                             k, name);
                    emit(ctx, ctx->rule->severity, &p->o, c->line, msg, fix);
                }
                k++;
            }
        }
    }
}

/* The claim or template spec behind a pod claim entry, or NULL when not in the input. */
static const struct dra_claim *claim_behind(const struct dra_model *m, const struct dra_podspec *p,
                                            const struct dra_pod_claim *pc)
{
    const struct dra_claim *c = dra_pod_claim_resolve(m, p, pc);

    if (!c && pc->tmpl)
        c = dra_find_claim(m, p->o.ns, pc->tmpl, 1);
    return c;
}

/* 1 when request name (or "request/subrequest") exists in spec. */
static int has_request(const struct dra_claim_spec *spec, const char *name)
{
    size_t i, j, n = strcspn(name, "/");

    for (i = 0; i < spec->nreq; i++) {
        if (strlen(spec->req[i].name) != n || strncmp(spec->req[i].name, name, n))
            continue;
        if (!name[n])
            return 1;
        for (j = 0; j < spec->req[i].nsub; j++)
            if (STRIEQ(spec->req[i].sub[j].name, name + n + 1))
                return 1;
    }
    return 0;
}

/*
 * Whether the devices of spec reach a container through CDI (1), through the pod as a whole
 * (0: dranet moves interfaces into the pod's network namespace, no container lists its claim),
 * or nobody can tell (-1): by the drivers its requests' classes select.
 */
static int per_container(const struct dra_model *m, const struct dra_claim_spec *spec)
{
    size_t i, j, k, n;
    int any = -1;

    for (i = 0; i < spec->nreq; i++) {
        const struct dra_request *r = &spec->req[i];
        const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
        for (j = 0; cls && j < cls->nsel; j++) {
            const struct cel_driver_ref *refs;
            if (!cls->sel[j].prog ||
                cel_program_drivers(cls->sel[j].prog, &refs, &n) != CEL_DRIVERS_SET)
                continue;
            for (k = 0; k < n; k++) {
                const struct drv_profile *pr = drv_profile_for_driver(refs[k].name);
                size_t d;
                int w = pr ? pr->writes_cdi : -1;
                for (d = 0; w < 0 && d < m->ndrivers; d++)
                    if (STRIEQ(m->drivers[d].name, refs[k].name))
                        w = m->drivers[d].writes_cdi;
                if (w == 0)
                    return 0;
                if (w == 1)
                    any = 1;
            }
        }
    }
    return any;
}

void rule__check_claims_consumed(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], on[300], path[160];
    size_t i, j, k;

    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        /* A DaemonSet that is a driver's plugin asks for no devices for itself. */
        for (j = 0; j < p->nclaims; j++) {
            const struct dra_pod_claim *pc = &p->claims[j];
            const struct dra_claim *cl = claim_behind(m, p, pc);
            int used = 0, bad_request = 0;
            if (!cl || per_container(m, &cl->spec) != 1)
                continue;
            for (k = 0; k < p->nctr; k++) {
                const cJSON *it;
                cJSON_ArrayForEach(it, p->ctr[k].claims) {
                    const char *name = dd_json_str(it, "name", NULL);
                    const char *req = dd_json_str(it, "request", NULL);
                    if (!name || !STRIEQ(name, pc->name))
                        continue;
                    if (req && *req && !has_request(&cl->spec, req)) {
                        ctr_path(p, &p->ctr[k], path, sizeof(path));
                        snprintf(msg, sizeof(msg),
                                 "%s %s: container %s asks for request \"%s\" of claim \"%s\", "
                                 "but %s %s has no request of that name: the kubelet gives the "
                                 "container none of the claim's devices, without an error.",
                                 p->o.kind, objname(&p->o, on, sizeof(on)), p->ctr[k].name, req,
                                 pc->name, cl->o.kind, cl->o.name);
                        snprintf(fix, sizeof(fix), "Name a request of %s %s in %s.resources."
                                 "claims (or drop `request` to get all of the claim's devices).",
                                 cl->o.kind, cl->o.name, path);
                        scope(ctx, emit(ctx, ctx->rule->severity, &p->o, p->ctr[k].line, msg,
                                        fix), NULL, NULL, p->node);
                        bad_request = 1;
                    }
                    used = 1;
                }
            }
            if (used || bad_request)
                continue;
            snprintf(msg, sizeof(msg),
                     "%s %s: no container lists claim \"%s\" in resources.claims, so its devices "
                     "are allocated and prepared but injected into no container: the pod runs "
                     "without them, with no error and no event.",
                     p->o.kind, objname(&p->o, on, sizeof(on)), pc->name);
            snprintf(fix, sizeof(fix), "Add `resources: {claims: [{name: %s}]}` to each container "
                     "that uses the device.", pc->name);
            scope(ctx, emit(ctx, ctx->rule->severity, &p->o, pc->line, msg, fix), NULL, NULL,
                  p->node);
        }
    }
}
