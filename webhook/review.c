/*
 * review.c - admission decisions (see review.h).
 *
 * A view is what a request needs from the whole cluster, computed once per
 * cache change instead of once per request: registered drivers, the classes,
 * templates and a few ResourceSlices per driver (one for each distinct device
 * shape: enough for attribute checks), the ResourceQuotas (their status.used is
 * what the quota admission counted before), and the model of the whole supply
 * that pods are allocated against.  It borrows the cached objects rather than
 * copying them: a copy doubled the webhook's memory (the live cache keeps what a
 * view borrows until the view goes).
 *
 * A request is then judged by the rule engine over a model of a handful of
 * objects: the incoming one, the templates and classes it names, and those
 * slices (and the namespace's quotas).  The findings about the incoming object of the
 * rules that run at admission become the verdict: the webhook checks nothing itself.
 */
#include "review.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dra.h"
#include "rules/finding.h"
#include "formats/json.h"
#include "model/quota.h"
#include "rules/rules.h"

#define MAX_DEPTH 100              /* Kubernetes objects nest ~20 deep */
#define MAX_TREE (32u << 20)       /* a request's parsed tree: ~3 times a 4 MiB body of real
                                      objects, far less than a body of tiny values takes */
#define MAX_SHAPES 32              /* device shapes remembered per driver */
#define MAX_WARNINGS 16
#define MSG_MAX 2048

struct named {
    char *key;                     /* owned: "name" or "ns/name" */
    const cJSON *obj;              /* borrowed, as the view's objects are */
};

struct wh_view {
    const struct wh_options *opt;
    struct named *classes, *templates;
    size_t nclasses, ntemplates;
    const char **class_names;      /* borrowed from classes[].key, for "did you mean" */
    struct dra_model samples;      /* the sample slices, ready to be borrowed by request
                                      models */
    struct dra_cel_cache *cel;     /* every class's compiled selectors; frozen once built */
    char **drivers;                /* owned, sorted */
    size_t ndrivers;
    struct named *quotas;          /* ResourceQuotas, by "ns/name" */
    size_t nquotas;
    struct dra_model full;         /* the devices, classes, templates, claims, nodes and
                                      quotas: what pods are allocated against */
    struct rule_inventory *inv;    /* its allocator (DevicesDoNotFit) */
};

/* ---- view ------------------------------------------------------------------ */

static int cmp_named(const void *a, const void *b)
{
    return strcmp(((const struct named *)a)->key, ((const struct named *)b)->key);
}

static const cJSON *find_named(const struct named *v, size_t n, const char *key)
{
    struct named k = { (char *)key, NULL };
    const struct named *f = n ? bsearch(&k, v, n, sizeof(*v), cmp_named) : NULL;

    return f ? f->obj : NULL;
}

/* Indexes obj under its key; 0, or -1 on ENOMEM. */
static int keep_named(const cJSON *obj, const char *ns, const char *name, struct named *arr,
                      size_t *n)
{
    size_t len = strlen(ns) + strlen(name) + 2;
    char *key = malloc(len);

    if (!key)
        return -1;
    snprintf(key, len, "%s%s%s", ns, *ns ? "/" : "", name);
    arr[*n].key = key;
    arr[(*n)++].obj = obj;
    return 0;
}

static int has_str(char *const *v, size_t n, const char *s)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return 1;
    return 0;
}

static int add_driver(struct wh_view *v, const char *name, size_t cap)
{
    if (!name || !*name || has_str(v->drivers, v->ndrivers, name) || v->ndrivers == cap)
        return 0;
    return (v->drivers[v->ndrivers++] = strdup(name)) ? 0 : -1;
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;
}

/* A device's shape: the names of its attributes and capacities, in order. */
static uint64_t device_shape(const struct cel_device *d)
{
    uint64_t h = fnv(14695981039346656037ULL, d->driver);
    size_t i;

    for (i = 0; i < d->nattrs; i++)
        h = fnv(fnv(h, d->attrs[i].domain), d->attrs[i].name);
    h = fnv(h, "|");
    for (i = 0; i < d->ncaps; i++)
        h = fnv(fnv(h, d->caps[i].domain), d->caps[i].name);
    return h;
}

/* Keeps a slice when one of its devices has a shape not seen yet for its driver. */
static int keep_slices(struct wh_view *v, const struct dra_model *m)
{
    struct seen { const char *driver; uint64_t shape; } *seen;
    size_t nseen = 0, i, j, k;

    if (!(seen = calloc(m->nslices * MAX_SHAPES + 1, sizeof(*seen))))
        return -1;
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        size_t known = 0;
        int fresh = 0;
        for (k = 0; k < nseen; k++)
            known += !strcmp(seen[k].driver, s->driver);
        for (j = 0; j < s->ndev && known < MAX_SHAPES; j++) {
            uint64_t h = device_shape(&s->dev[j].dev);
            for (k = 0; k < nseen && !(seen[k].shape == h && !strcmp(seen[k].driver, s->driver));
                 k++)
                ;
            if (k == nseen) {
                seen[nseen].driver = s->driver;
                seen[nseen++].shape = h;
                known++;
                fresh = 1;
            }
        }
        if (fresh && dra_model_add(&v->samples, s->o.json, NULL, 0) != DD_OK) {
            free(seen);
            return -1;
        }
    }
    free(seen);
    return dra_model_finish(&v->samples) == DD_OK ? 0 : -1;
}

/* The kinds the view reads besides DaemonSets: the supply pods are allocated against
 * (slices, classes, templates, allocated claims, nodes), the quotas. */
static int viewed(const char *kind)
{
    static const char *const kinds[] = { "ResourceSlice", "DeviceClass", "ResourceClaim",
                                         "ResourceClaimTemplate", "Node", "ResourceQuota" };
    size_t k;

    for (k = 0; kind && k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (!strcmp(kind, kinds[k]))
            return 1;
    return 0;
}

/* What DevicesDoNotFit allocates a pod against, built once per view. */
static int keep_inventory(struct wh_view *v)
{
    struct rule_options ro = RULE_OPTIONS_INIT;

    ro.known_drivers = (const char *const *)v->drivers;
    ro.nknown_drivers = v->ndrivers;
    ro.known_drivers_all = 1;
    ro.kube_minor = v->opt->kube_minor;
    ro.gates = v->opt->gates;
    return (v->inv = dd_rules_inventory_new(&v->full, &ro)) ? 0 : -1;
}

static int view_fill(struct wh_view *v, const cJSON *const *objs, size_t n,
                     const struct wh_view *prev)
{
    const struct dra_model *m = &v->full;
    struct dra_model ds;
    size_t i, cap;
    int rc = -1, shared = prev && dra_model_slices_are(&prev->full, objs, n);

    /* DaemonSets only name drivers. */
    dra_model_init(&ds, NULL, NULL);
    ds.live = 1;
    if (shared)
        dra_model_borrow_slices(&v->full, &prev->full);
    for (i = 0; i < n; i++) {
        const char *kind = dd_json_str(objs[i], "kind", NULL);
        struct dra_model *to = kind && !strcmp(kind, "DaemonSet") ? &ds
                               : viewed(kind)                     ? &v->full
                                                                  : NULL;
        if (to && !(shared && dra_is_slice(objs[i])) &&
            dra_model_add(to, objs[i], NULL, 0) != DD_OK)
            goto out;
    }
    if (dra_model_finish(&v->full) != DD_OK || dra_model_finish(&ds) != DD_OK)
        goto out;

    cap = m->nslices + ds.ndrivers + v->opt->nknown_drivers;
    if (!(v->drivers = calloc(cap + 1, sizeof(*v->drivers))))
        goto out;
    for (i = 0; i < m->nslices; i++)
        if (add_driver(v, m->slices[i].driver, cap))
            goto out;
    for (i = 0; i < ds.ndrivers; i++)
        if (add_driver(v, ds.drivers[i].name, cap))
            goto out;
    for (i = 0; i < v->opt->nknown_drivers; i++)
        if (add_driver(v, v->opt->known_drivers[i], cap))
            goto out;

    if (!(v->classes = calloc(m->nclasses + 1, sizeof(*v->classes))))
        goto out;
    for (i = 0; i < m->nclasses; i++)
        if (keep_named(m->classes[i].o.json, "", m->classes[i].o.name, v->classes,
                       &v->nclasses))
            goto out;
    qsort(v->classes, v->nclasses, sizeof(*v->classes), cmp_named);
    if (!(v->class_names = calloc(v->nclasses + 1, sizeof(*v->class_names))))
        goto out;
    for (i = 0; i < v->nclasses; i++)
        v->class_names[i] = v->classes[i].key;

    if (!(v->templates = calloc(m->nclaims + 1, sizeof(*v->templates))))
        goto out;
    for (i = 0; i < m->nclaims; i++)
        if (m->claims[i].is_template &&
            keep_named(m->claims[i].o.json, m->claims[i].o.ns, m->claims[i].o.name,
                       v->templates, &v->ntemplates))
            goto out;
    qsort(v->templates, v->ntemplates, sizeof(*v->templates), cmp_named);

    if (!(v->quotas = calloc(m->nquotas + 1, sizeof(*v->quotas))))
        goto out;
    for (i = 0; i < m->nquotas; i++)
        if (keep_named(m->quotas[i].o.json, m->quotas[i].o.ns, m->quotas[i].o.name, v->quotas,
                       &v->nquotas))
            goto out;
    qsort(v->quotas, v->nquotas, sizeof(*v->quotas), cmp_named);

    /* The samples are the slices' too. */
    if (shared)
        dra_model_borrow_slices(&v->samples, &prev->samples);
    if ((shared ? dra_model_finish(&v->samples) != DD_OK : keep_slices(v, m)) ||
        keep_inventory(v))
        goto out;
    rc = 0;
out:
    dra_model_release(&ds);
    return rc;
}

struct wh_view *wh_view_build(const cJSON *const *objs, size_t n, const struct wh_options *opt,
                              struct dd_err *err)
{
    return wh_view_update(NULL, objs, n, opt, err);
}

struct wh_view *wh_view_update(const struct wh_view *prev, const cJSON *const *objs, size_t n,
                               const struct wh_options *opt, struct dd_err *err)
{
    static const struct wh_options defaults = { NULL, 0, 0, 0, NULL };
    struct wh_view *v = calloc(1, sizeof(*v));

    if (v) {
        v->opt = opt ? opt : &defaults;
        dra_model_init(&v->samples, NULL, NULL);
        v->samples.live = 1;
        dra_model_init(&v->full, NULL, NULL);
        v->full.live = 1;
        /* Requests judge their own selectors on the samples; the full model's devices are
         * judged by the classes (remembered) and, rarely, a template's own selectors. */
        v->full.values_transient = 1;
        if ((v->cel = dra_cel_cache_new()) &&
            (v->full.cel_cache = v->cel) && !view_fill(v, objs, n, prev)) {
            dra_cel_cache_freeze(v->cel);
            return v;
        }
        wh_view_free(v);
    }
    dd_failf(err, DD_ENOMEM, "out of memory building the webhook's view of the cluster");
    return NULL;
}

const void *wh_view_devices(const struct wh_view *v)
{
    return v->full.devs;
}

void wh_view_free(struct wh_view *v)
{
    size_t i;

    if (!v)
        return;
    for (i = 0; i < v->nclasses; i++)
        free(v->classes[i].key);
    for (i = 0; i < v->ntemplates; i++)
        free(v->templates[i].key);
    for (i = 0; v->drivers && v->drivers[i]; i++)
        free(v->drivers[i]);
    for (i = 0; i < v->nquotas; i++)
        free(v->quotas[i].key);
    free(v->class_names);
    free(v->classes);
    free(v->templates);
    free(v->drivers);
    free(v->quotas);
    dd_rules_inventory_free(v->inv);
    dra_model_release(&v->full);
    dra_model_release(&v->samples);
    dra_cel_cache_free(v->cel);
    free(v);
}

int wh_view_has_class(const struct wh_view *v, const char *name)
{
    return v && find_named(v->classes, v->nclasses, name) != NULL;
}

const char *const *wh_view_drivers(const struct wh_view *v, size_t *n)
{
    *n = v ? v->ndrivers : 0;
    return v ? (const char *const *)v->drivers : NULL;
}

/* ---- decision -------------------------------------------------------------- */

struct decision {
    int deny;
    char message[MSG_MAX];
    char *warn[MAX_WARNINGS];      /* owned */
    size_t nwarn;
};

static void warnf(struct decision *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct decision *d, const char *fmt, ...)
{
    char buf[MSG_MAX];
    va_list ap;

    if (d->nwarn == MAX_WARNINGS)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    d->warn[d->nwarn] = strdup(buf);
    if (d->warn[d->nwarn])
        d->nwarn++;
}

/* Cuts buf at a word to fit max characters, marking the cut. */
static void shorten(char *buf, size_t max)
{
    size_t cut;

    if (strlen(buf) <= max)
        return;
    cut = max - 4;
    while (cut > 40 && buf[cut] != ' ')
        cut--;
    memcpy(buf + cut, " ...", 5);
}

/*
 * A finding as a one-line warning about the object being admitted: the
 * message's first clause without the object's own name (the user is applying
 * it), or, when that is too long, the fix; the denial, lint and the
 * controller keep the whole text.
 */
static void warn_finding(struct decision *d, const struct dd_finding *f, const char *suffix)
{
    char prefix[600], buf[MSG_MAX];
    const char *m = f->message, *end;
    size_t room = WH_WARNING_MAX - strlen(suffix), n;

    snprintf(prefix, sizeof(prefix), "%s %s%s%s ", f->obj.kind, f->obj.namespace_,
             *f->obj.namespace_ ? "/" : "", f->obj.name);
    if (!strncmp(m, prefix, strlen(prefix)))
        m += strlen(prefix);
    end = m + strcspn(m, ";");
    if (strstr(m, ". ") && strstr(m, ". ") < end)
        end = strstr(m, ". ");
    n = (size_t)(end - m);
    snprintf(buf, sizeof(buf), "%s: %.*s", f->code, (int)n, m);
    if (strlen(buf) > room && f->fix && strlen(f->code) + 2 + strlen(f->fix) <= room)
        snprintf(buf, sizeof(buf), "%s: %s", f->code, f->fix);
    shorten(buf, room);
    warnf(d, "%s%s", buf, suffix);
}

static int same_obj(const struct dd_finding *f, const struct dra_obj *o)
{
    return !strcmp(f->obj.kind, o->kind) && !strcmp(f->obj.namespace_, o->ns) &&
           !strcmp(f->obj.name, o->name);
}

static int has_selectors(const struct dra_claim_spec *spec)
{
    size_t i, j;

    for (i = 0; i < spec->nreq; i++) {
        if (spec->req[i].nsel)
            return 1;
        for (j = 0; j < spec->req[i].nsub; j++)
            if (spec->req[i].sub[j].nsel)
                return 1;
    }
    return 0;
}

/* Adds the view's copy of a class a request names, once; for a class that does not exist,
 * the one its name most likely misspells, so the engine can say "did you mean". */
static enum dd_rc add_class(struct dra_model *m, const struct wh_view *v, const char *name)
{
    const cJSON *c;

    if (!name || dra_find_class(m, name))
        return DD_OK;
    if (!(c = find_named(v->classes, v->nclasses, name)) &&
        (name = dd_rules_nearest(name, v->class_names, v->nclasses)) && !dra_find_class(m, name))
        c = find_named(v->classes, v->nclasses, name);
    return c ? dra_model_add(m, c, NULL, 0) : DD_OK;
}

static enum dd_rc add_classes(struct dra_model *m, const struct wh_view *v,
                              const struct dra_claim_spec *spec)
{
    enum dd_rc rc = DD_OK;
    size_t i, j;

    for (i = 0; rc == DD_OK && i < spec->nreq; i++) {
        rc = add_class(m, v, spec->req[i].class_name);
        for (j = 0; rc == DD_OK && j < spec->req[i].nsub; j++)
            rc = add_class(m, v, spec->req[i].sub[j].class_name);
    }
    return rc;
}

/* Adds the view's ResourceQuotas of namespace ns: QuotaExceeded counts what the object makes
 * on top of their status.used. */
static enum dd_rc add_quotas(struct dra_model *m, const struct wh_view *v, const char *ns)
{
    size_t lo = 0, hi = v->nquotas, mid, n = strlen(ns);
    enum dd_rc rc = DD_OK;

    while (lo < hi) { /* the first key >= "ns/" */
        mid = lo + (hi - lo) / 2;
        int c = strncmp(v->quotas[mid].key, ns, n);
        if (c < 0 || (!c && v->quotas[mid].key[n] < '/'))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; rc == DD_OK && lo < v->nquotas && !strncmp(v->quotas[lo].key, ns, n) &&
           v->quotas[lo].key[n] == '/'; lo++)
        rc = dra_model_add(m, v->quotas[lo].obj, NULL, 0);
    return rc;
}

/*
 * The model a request is judged on: obj, the templates a pod spec names, the ResourceQuotas
 * of its namespace (a pod's, a claim's),
 * the classes its claims request, and (when selectors are to be judged) the
 * sample slices.  *self is obj's entry.
 */
static enum dd_rc request_model(struct dra_model *m, const struct wh_view *v, const cJSON *obj,
                                const struct dra_obj **self)
{
    enum dd_rc rc;
    size_t i, nclaims;
    int slices, is_class, is_claim, is_rule;

    dra_model_init(m, NULL, NULL);
    m->live = 1;
    m->cel_cache = v ? v->cel : NULL;
    *self = NULL;
    if ((rc = dra_model_add(m, obj, NULL, 0)) != DD_OK)
        return rc;
    /* obj is the first entry of whichever array it went to; what is added below never
     * goes before it. */
    is_class = m->nclasses > 0;
    is_claim = m->nclaims > 0;
    is_rule = m->resource_other.n > 0;
    if (!is_class && !is_claim && !is_rule && !m->npods)
        return DD_OK;
    slices = is_class || is_rule;
    if (v && (m->npods || (is_claim && !m->claims[0].is_template)) &&
        (rc = add_quotas(m, v, m->npods ? m->pods[0]->o.ns : m->claims[0].o.ns)) != DD_OK)
        return rc;
    for (i = 0; v && m->npods && i < m->pods[0]->nclaims; i++) {
        const struct dra_pod_claim *pc = &m->pods[0]->claims[i];
        char key[512];
        const cJSON *t;
        if (!pc->tmpl || dra_find_claim(m, m->pods[0]->o.ns, pc->tmpl, 1))
            continue;
        snprintf(key, sizeof(key), "%s/%s", m->pods[0]->o.ns, pc->tmpl);
        if ((t = find_named(v->templates, v->ntemplates, key)) &&
            (rc = dra_model_add(m, t, NULL, 0)) != DD_OK)
            return rc;
    }
    nclaims = m->nclaims;
    for (i = 0; v && i < nclaims; i++) {
        slices |= has_selectors(&m->claims[i].spec);
        if ((rc = add_classes(m, v, &m->claims[i].spec)) != DD_OK)
            return rc;
    }
    if (v && slices && !m->nslices)
        dra_model_borrow_slices(m, &v->samples);
    if ((rc = dra_model_finish(m)) != DD_OK)
        return rc;
    *self = is_class  ? &m->classes[0].o
            : is_claim ? &m->claims[0].o
            : is_rule  ? &m->resource_other.v[0]
                       : &m->pods[0]->o;
    return DD_OK;
}

/*
 * A DeviceClassNotFound about a class the informer has seen created but no view holds yet
 * (kubectl apply -f dir/ sends the class and its claims back to back, faster than a view is
 * built): the class exists, so the finding would be false.  The check stays the engine's; only
 * its answer is set aside for these names.
 */
static int class_pending(const struct dd_finding *f, const char *const *pending, size_t npending)
{
    size_t i;

    if (!npending || !f->scope_class || strcmp(f->code, "DeviceClassNotFound"))
        return 0;
    for (i = 0; i < npending; i++)
        if (!strcmp(pending[i], f->scope_class))
            return 1;
    return 0;
}

/* The engine's findings about obj that a webhook reports, into out; pending[0..npending) as
 * for wh_review. */
static enum dd_rc judge(const struct wh_view *v, const char *const *pending, size_t npending,
                        const cJSON *obj, struct dd_findings *out, struct dra_model *m,
                        const struct dra_obj **self)
{
    struct rule_options ro = RULE_OPTIONS_INIT;
    struct dd_findings all = DD_FINDINGS_INIT;
    enum dd_rc rc;
    size_t i;

    if ((rc = request_model(m, v, obj, self)) != DD_OK || !*self)
        return rc;
    if (v) {
        ro.known_drivers = (const char *const *)v->drivers;
        ro.nknown_drivers = v->ndrivers;
        ro.known_drivers_all = 1;
        ro.kube_minor = v->opt->kube_minor;
        ro.gates = v->opt->gates;
        ro.inventory = v->inv;
    }
    ro.surface = DD_ADMISSION;
    if (dd_rules_run(m, &ro, &all)) {
        dd_findings_release(&all);
        return DD_ENOMEM;
    }
    for (i = 0; i < all.n; i++) {
        const struct dd_finding *f = &all.v[i];
        if (same_obj(f, *self) && !class_pending(f, pending, npending) &&
            !dd_findings_add(out, f->code, f->severity, f->obj.api_version, f->obj.kind,
                             f->obj.namespace_, f->obj.name, NULL, 0, f->message, f->fix))
            rc = DD_ENOMEM;
    }
    dd_findings_release(&all);
    return rc;
}

static int found_in(const struct dd_findings *l, const struct dd_finding *f)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].code, f->code) && !strcmp(l->v[i].message, f->message))
            return 1;
    return 0;
}

static enum dd_rc decide_class(const struct wh_view *v, const cJSON *req, const cJSON *obj,
                               struct decision *d)
{
    struct dd_findings now = DD_FINDINGS_INIT, before = DD_FINDINGS_INIT;
    struct dra_model m, mo;
    const struct dra_obj *self = NULL, *oself = NULL;
    const char *op = dd_json_str(req, "operation", NULL);
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(req, "oldObject");
    const char *allow = dd_json_str(obj, "metadata", "annotations", WH_ALLOW_ANNOTATION, NULL);
    int escape = (allow && !strcmp(allow, "true")) || (v && v->opt->unknown_driver_warn) ||
                 dd_json_path(obj, "metadata", "deletionTimestamp", NULL);
    enum dd_rc rc;
    size_t i;

    rc = judge(v, NULL, 0, obj, &now, &m, &self);
    if (rc == DD_OK && op && !strcmp(op, "UPDATE") && cJSON_IsObject(old)) {
        rc = judge(v, NULL, 0, old, &before, &mo, &oself);
        dra_model_release(&mo);
    }
    for (i = 0; rc == DD_OK && i < now.n; i++) {
        const struct dd_finding *f = &now.v[i];
        /* Only a misspelling of a known driver is an error: a driver nothing registered yet
         * (a vendor's chart applies its DaemonSet and classes together) is a warning. */
        if (!strcmp(f->code, "SelectorMatchesNoDriver") && f->severity == DD_SEV_ERROR &&
            !escape && !found_in(&before, f)) {
            if (!d->deny)
                snprintf(d->message, sizeof(d->message), "%s %s", f->message, f->fix);
            d->deny = 1;
        } else {
            warn_finding(d, f, !strcmp(f->code, "SelectorMatchesNoDriver") && allow &&
                                       !strcmp(allow, "true") ? " (allowed by annotation)" : "");
        }
    }
    dd_findings_release(&now);
    dd_findings_release(&before);
    dra_model_release(&m);
    return rc;
}

static enum dd_rc decide_claims(const struct wh_view *v, const char *const *pending,
                                size_t npending, const cJSON *obj, struct decision *d)
{
    struct dd_findings found = DD_FINDINGS_INIT;
    struct dra_model m;
    const struct dra_obj *self = NULL;
    enum dd_rc rc;
    size_t i;

    rc = judge(v, pending, npending, obj, &found, &m, &self);
    for (i = 0; rc == DD_OK && i < found.n; i++)
        warn_finding(d, &found.v[i], "");
    dd_findings_release(&found);
    dra_model_release(&m);
    return rc;
}

/* ---- AdmissionReview ------------------------------------------------------ */

static int str_is(const char *s, const char *want)
{
    return s && !strcmp(s, want);
}

static int workload_kind(const char *group, const char *kind)
{
    if (str_is(group, "apps"))
        return str_is(kind, "Deployment") || str_is(kind, "StatefulSet") ||
               str_is(kind, "DaemonSet") || str_is(kind, "ReplicaSet");
    if (str_is(group, "batch"))
        return str_is(kind, "Job") || str_is(kind, "CronJob");
    return str_is(group, "") && str_is(kind, "Pod");
}

/* Gives obj the identity the request states (a CREATE's object may lack its namespace).
 * DD_EINVAL when obj's metadata is not an object: the API server never sends one, and a
 * malformed request is the sender's fault, not a lack of memory. */
static enum dd_rc complete_object(struct dd_json_arena *a, cJSON *obj, const cJSON *req,
                                  struct dd_err *err)
{
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(req, "kind");
    const char *group = dd_json_str(rk, "group", NULL), *version = dd_json_str(rk, "version", NULL);
    const char *ns = dd_json_str(req, "namespace", NULL);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    char av[256];

    if (meta && !cJSON_IsObject(meta))
        return dd_failf(err, DD_EINVAL, "request.object.metadata: want an object");
    if (!dd_json_str(obj, "kind", NULL) &&
        !dd_json_arena_add_string(a, obj, "kind", dd_json_str(rk, "kind", NULL)))
        return DD_ENOMEM;
    if (!dd_json_str(obj, "apiVersion", NULL)) {
        snprintf(av, sizeof(av), "%s%s%s", group ? group : "", group && *group ? "/" : "",
                 version ? version : "v1");
        if (!dd_json_arena_add_string(a, obj, "apiVersion", av))
            return DD_ENOMEM;
    }
    if (!meta && !(meta = dd_json_arena_add_object(a, obj, "metadata")))
        return DD_ENOMEM;
    if (ns && *ns && !dd_json_str(meta, "namespace", NULL) &&
        !dd_json_arena_add_string(a, meta, "namespace", ns))
        return DD_ENOMEM;
    return DD_OK;
}

/* Bytes a JSON string cannot hold as they are: controls (NUL included), quote, backslash. */
static const unsigned char escaped[256] = {
    [0 ... 0x1F] = 1, ['"'] = 1, ['\\'] = 1,
};

/* Appends s as a JSON string at out (room for 6 bytes per byte of s plus 2 is the caller's). */
static char *put_str(char *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    *out++ = '"';
    for (;; s++) {
        const char *r = s;
        unsigned char c;
        while (!escaped[(unsigned char)*r]) /* the NUL stops it too */
            r++;
        memcpy(out, s, (size_t)(r - s));
        out += r - s;
        s = r;
        if (!(c = (unsigned char)*s))
            break;
        if (c == '"' || c == '\\') {
            *out++ = '\\';
            *out++ = (char)c;
        } else {
            memcpy(out, "\\u00", 4);
            out[4] = hex[c >> 4];
            out[5] = hex[c & 15];
            out += 6;
        }
    }
    *out++ = '"';
    return out;
}

static char *put(char *out, const char *lit)
{
    size_t n = strlen(lit);

    memcpy(out, lit, n);
    return out + n;
}

/* The AdmissionReview response, written directly: it is small and its shape fixed. */
static char *response(const char *uid, const struct decision *d, size_t *len)
{
    size_t cap = 256 + 6 * strlen(uid) + (d->deny ? 6 * strlen(d->message) : 0), i;
    char *buf, *p;

    for (i = 0; i < d->nwarn; i++)
        cap += 6 * strlen(d->warn[i]) + 3;
    if (!(p = buf = malloc(cap)))
        return NULL;
    p = put(p, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
               "\"response\":{\"uid\":");
    p = put_str(p, uid);
    p = put(p, d->deny ? ",\"allowed\":false,\"status\":{\"code\":403,\"reason\":\"Forbidden\","
                         "\"message\":" : ",\"allowed\":true");
    if (d->deny)
        p = put(put_str(p, d->message), "}");
    for (i = 0; i < d->nwarn; i++)
        p = put_str(put(p, i ? "," : ",\"warnings\":["), d->warn[i]);
    p = put(p, d->nwarn ? "]}}" : "}}");
    *p = '\0';
    *len = (size_t)(p - buf);
    return buf;
}

/*
 * Each request thread parses into its own arena, kept for the thread's life: a request
 * then costs no allocation for its tree (dropped at once by a reset).
 */
static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;
static int arena_key_ok;

static void arena_drop(void *a)
{
    dd_json_arena_free(a);
}

static void arena_init(void)
{
    arena_key_ok = !pthread_key_create(&arena_key, arena_drop);
}

static struct dd_json_arena *thread_arena(void)
{
    struct dd_json_arena *a;

    pthread_once(&arena_once, arena_init);
    if (!arena_key_ok)
        return NULL;
    if (!(a = pthread_getspecific(arena_key)) && (a = dd_json_arena_new(MAX_TREE)) &&
        pthread_setspecific(arena_key, a)) {
        dd_json_arena_free(a);
        a = NULL;
    }
    return a;
}

enum dd_rc wh_review(const struct wh_view *v, const char *const *pending_classes,
                     size_t npending, const char *body, size_t len, struct wh_result *res,
                     struct dd_err *err)
{
    struct dd_json_arena *arena = thread_arena();
    struct decision d;
    cJSON *root, *req, *obj;
    const char *uid = NULL, *group = NULL, *kind = NULL, *op = NULL, *av;
    enum dd_rc rc = DD_OK;
    size_t i;

    memset(res, 0, sizeof(*res));
    memset(&d, 0, sizeof(d));
    if (!arena)
        return dd_failf(err, DD_ENOMEM, "out of memory deciding the AdmissionReview");
    /* managedFields: often the biggest part of a body, and never read. */
    if (!(root = dd_json_arena_parse(arena, body, len, MAX_DEPTH, "managedFields", err)))
        return err ? err->rc : DD_EPARSE;
    av = dd_json_str(root, "apiVersion", NULL);
    req = cJSON_GetObjectItemCaseSensitive(root, "request");
    if (!cJSON_IsObject(root))
        rc = dd_failf(err, DD_EINVAL, "the body is not a JSON object");
    else if (!str_is(dd_json_str(root, "kind", NULL), "AdmissionReview"))
        rc = dd_failf(err, DD_EINVAL, "kind: want \"AdmissionReview\"");
    else if (!str_is(av, "admission.k8s.io/v1"))
        rc = dd_failf(err, DD_EINVAL, "apiVersion: want \"admission.k8s.io/v1\", got %s%s%s",
                      av ? "\"" : "", av ? av : "nothing", av ? "\"" : "");
    else if (!cJSON_IsObject(req))
        rc = dd_failf(err, DD_EINVAL, "request: missing or not an object");
    else if (!(uid = dd_json_str(req, "uid", NULL)) || !*uid)
        rc = dd_failf(err, DD_EINVAL, "request.uid: missing or not a string");
    else if (!(kind = dd_json_str(req, "kind", "kind", NULL)) ||
             !(group = dd_json_str(req, "kind", "group", NULL)))
        rc = dd_failf(err, DD_EINVAL, "request.kind: want {group, version, kind}");
    else if (!(op = dd_json_str(req, "operation", NULL)))
        rc = dd_failf(err, DD_EINVAL, "request.operation: missing or not a string");
    if (rc != DD_OK) {
        dd_json_arena_reset(arena);
        return rc;
    }
    snprintf(res->kind, sizeof(res->kind), "%s", kind);
    snprintf(res->operation, sizeof(res->operation), "%s", op);
    snprintf(res->ns, sizeof(res->ns), "%s",
             dd_json_str(req, "namespace", NULL) ? dd_json_str(req, "namespace", NULL) : "");
    obj = cJSON_GetObjectItemCaseSensitive(req, "object");
    if (cJSON_IsObject(obj) && (rc = complete_object(arena, obj, req, err)) == DD_OK && v) {
        int create = str_is(op, "CREATE");
        if (str_is(group, "resource.k8s.io") && str_is(kind, "DeviceClass") &&
            (create || str_is(op, "UPDATE")))
            rc = decide_class(v, req, obj, &d);
        else if (create && ((str_is(group, "resource.k8s.io") &&
                             (str_is(kind, "ResourceClaim") || str_is(kind, "ResourceClaimTemplate"))) ||
                            workload_kind(group, kind)))
            rc = decide_claims(v, pending_classes, npending, obj, &d);
        else if (str_is(group, "resource.k8s.io") && str_is(kind, "DeviceTaintRule") &&
                 (create || str_is(op, "UPDATE")))
            rc = decide_claims(v, pending_classes, npending, obj, &d);
    }
    if (rc == DD_OK && !(res->body = response(uid, &d, &res->len)))
        rc = DD_ENOMEM;
    if (rc == DD_ENOMEM)
        dd_failf(err, DD_ENOMEM, "out of memory deciding the AdmissionReview");
    res->verdict = d.deny ? WH_DENIED : d.nwarn ? WH_WARNED : WH_ALLOWED;
    for (i = 0; i < d.nwarn; i++)
        free(d.warn[i]);
    dd_json_arena_reset(arena);
    return rc;
}
