#include "model/dra.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/rbac.h"

#define STRIEQ(a, b) (strcmp((a), (b)) == 0)

/* Makes room for one more element in a growable array; 0 or -1.  Arrays start with one
 * element: most (a pod's claims, a claim's requests, a device's attributes) stay small, and
 * a live snapshot holds thousands of them. */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 1;
    p = realloc(*v, ncap * elem);
    if (!p)
        return -1;
    *v = p;
    *cap = ncap;
    return 0;
}

#define PUSH(arr, n, cap) \
    (grow((void **)&(arr), &(cap), (n), sizeof(*(arr))) ? NULL : memset(&(arr)[(n)++], 0, sizeof(*(arr))))

static int node_line(const struct dra_model *m, const cJSON *node, int fallback)
{
    int line;

    if (m->pos && node && m->pos(m->pos_ctx, node, &line))
        return line;
    return fallback;
}

static const char *str_or(const char *s, const char *dflt)
{
    return s ? s : dflt;
}

static void obj_init(struct dra_obj *o, const cJSON *json, const char *file, int line)
{
    o->json = json;
    o->api_version = str_or(dd_json_str(json, "apiVersion", NULL), "");
    o->kind = str_or(dd_json_str(json, "kind", NULL), "");
    o->ns = str_or(dd_json_str(json, "metadata", "namespace", NULL), "");
    o->name = dd_json_str(json, "metadata", "name", NULL);
    if (!o->name)
        o->name = str_or(dd_json_str(json, "metadata", "generateName", NULL), "");
    o->file = file;
    o->line = line;
}

/* 1 when api_version is group/<any version>. */
static int in_group(const char *api_version, const char *group)
{
    size_t n = strlen(group);

    return !strncmp(api_version, group, n) && api_version[n] == '/';
}

/* ---- shared compiled selectors --------------------------------------------- */

struct dra_cel_entry {
    char *expr;                 /* owned copy of the source */
    struct cel_program *prog;   /* owned */
    atomic_size_t refs;         /* selectors of live models that use it */
    struct dra_cel_entry *next; /* hash chain */
};

struct dra_cel_cache {
    struct dra_cel_entry **b;   /* nb chains, nb a power of two */
    size_t nb, n;
    int frozen;                 /* dra_cel_cache_freeze: read-only, shared by threads */
};

static size_t text_hash(const char *s)
{
    size_t h = 1469598103934665603ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

struct dra_cel_cache *dra_cel_cache_new(void)
{
    struct dra_cel_cache *c = calloc(1, sizeof(*c));

    if (c && !(c->b = calloc(c->nb = 256, sizeof(*c->b)))) {
        free(c);
        return NULL;
    }
    return c;
}

static void cel_entry_free(struct dra_cel_entry *e)
{
    cel_program_free(e->prog);
    free(e->expr);
    free(e);
}

size_t dra_cel_cache_trim(struct dra_cel_cache *c)
{
    size_t i;

    for (i = 0; c && i < c->nb; i++) {
        struct dra_cel_entry **pp = &c->b[i], *e;
        while ((e = *pp)) {
            if (atomic_load(&e->refs) == 0) {
                *pp = e->next;
                cel_entry_free(e);
                c->n--;
            } else {
                pp = &e->next;
            }
        }
    }
    return c ? c->n : 0;
}

void dra_cel_cache_freeze(struct dra_cel_cache *c)
{
    c->frozen = 1;
}

void dra_cel_cache_free(struct dra_cel_cache *c)
{
    size_t i;

    for (i = 0; c && i < c->nb; i++)
        while (c->b[i]) {
            struct dra_cel_entry *e = c->b[i];
            c->b[i] = e->next;
            cel_entry_free(e);
        }
    if (c)
        free(c->b);
    free(c);
}

/* Compiles s->expr, or takes the program the model's cache has for it.  DD_ENOMEM, or
 * DD_OK (a failed compilation leaves s->prog NULL and s->err set; it is not cached). */
static enum dd_rc compile_selector(struct dra_model *m, struct dra_selector *s)
{
    struct dra_cel_cache *c = m->cel_cache;
    struct dra_cel_entry *e = NULL;
    size_t h = 0;

    if (c) {
        h = text_hash(s->expr) & (c->nb - 1);
        for (e = c->b[h]; e && strcmp(e->expr, s->expr); e = e->next)
            ;
        if (e) {
            atomic_fetch_add(&e->refs, 1);
            s->prog = e->prog;
            s->shared = e;
            return DD_OK;
        }
    }
    s->prog = cel_compile(s->expr, strlen(s->expr), NULL, &s->err);
    if (!s->prog)
        return s->err.rc == DD_ENOMEM ? DD_ENOMEM : DD_OK;
    /* Out of memory for the entry, or a frozen cache: the program stays the model's own. */
    if (c && !c->frozen && (e = calloc(1, sizeof(*e))) && (e->expr = strdup(s->expr))) {
        e->prog = s->prog;
        atomic_init(&e->refs, 1);
        e->next = c->b[h];
        c->b[h] = e;
        c->n++;
        s->shared = e;
    } else if (e) {
        free(e);
    }
    return DD_OK;
}

static void release_selector(struct dra_selector *s)
{
    if (s->shared)
        atomic_fetch_sub(&s->shared->refs, 1); /* the cache's owner frees it (trim) */
    else
        cel_program_free(s->prog);
    s->prog = NULL;
    s->shared = NULL;
}

/* ---- selector texts and their results per device ------------------------------------ */

/* Expressions whose results are remembered: at most this many bytes per device, whatever the
 * input (claims with a selector each of their own are evaluated anew on every call). */
#define MEMO_ROWS_MAX 64

enum { MEMO_UNKNOWN, MEMO_FALSE, MEMO_TRUE, MEMO_ERROR };

struct dra_memo {
    const char **text;              /* id - 1 -> expression (borrowed from the trees) */
    size_t n, cap;
    uint32_t *hix;                  /* open addressing over text: id, 0 empty; at most half full */
    size_t nhix;
    /* From dra_model_finish: */
    _Atomic(atomic_uchar *) *rows;  /* nrows: per id, NULL or a MEMO_* byte per device */
    size_t nrows;
    atomic_size_t nalloc;           /* rows allocated */
    pthread_mutex_t lock;           /* taken to allocate a row */
    int locked_ok;                  /* lock initialised */
    /* From dra_model_borrow_slices to dra_model_finish: the rows of the model the devices
     * are borrowed from, copied with their texts, for the same texts here (seed_rows[i] NULL
     * once taken). */
    char **seed_text;
    atomic_uchar **seed_rows;
    size_t nseeds;
};

static void memo_seeds_free(struct dra_memo *mm)
{
    size_t i;

    for (i = 0; i < mm->nseeds; i++) {
        free(mm->seed_text[i]);
        free((void *)mm->seed_rows[i]);
    }
    free(mm->seed_text);
    free(mm->seed_rows);
    mm->seed_text = NULL;
    mm->seed_rows = NULL;
    mm->nseeds = 0;
}

static void memo_free(struct dra_memo *mm)
{
    size_t i;

    if (!mm)
        return;
    for (i = 0; mm->rows && i < mm->nrows; i++)
        free((void *)atomic_load(&mm->rows[i]));
    free(mm->rows);
    if (mm->locked_ok)
        pthread_mutex_destroy(&mm->lock);
    memo_seeds_free(mm);
    free(mm->text);
    free(mm->hix);
    free(mm);
}

/* The id of expression expr (1-based), or 0: not seen. */
static uint32_t memo_find(const struct dra_memo *mm, const char *expr)
{
    size_t h;

    if (!mm->nhix)
        return 0;
    for (h = text_hash(expr) & (mm->nhix - 1); mm->hix[h]; h = (h + 1) & (mm->nhix - 1))
        if (STRIEQ(mm->text[mm->hix[h] - 1], expr))
            return mm->hix[h];
    return 0;
}

/* The id of expression expr (1-based), a new one for a text not seen before; 0 on ENOMEM. */
static uint32_t memo_intern(struct dra_model *m, const char *expr)
{
    struct dra_memo *mm = m->memo;
    size_t h, i;
    uint32_t id;

    if (!mm && !(mm = m->memo = calloc(1, sizeof(*mm))))
        return 0;
    if (2 * (mm->n + 1) > mm->nhix) {
        size_t cap = mm->nhix ? 2 * mm->nhix : 16; /* a request's model holds a few */
        uint32_t *ix = calloc(cap, sizeof(*ix));
        if (!ix)
            return 0;
        for (i = 0; i < mm->n; i++) {
            for (h = text_hash(mm->text[i]) & (cap - 1); ix[h]; h = (h + 1) & (cap - 1))
                ;
            ix[h] = (uint32_t)(i + 1);
        }
        free(mm->hix);
        mm->hix = ix;
        mm->nhix = cap;
    }
    if ((id = memo_find(mm, expr)))
        return id;
    for (h = text_hash(expr) & (mm->nhix - 1); mm->hix[h]; h = (h + 1) & (mm->nhix - 1))
        ;
    if (mm->n == mm->cap || mm->n >= UINT32_MAX - 1) {
        size_t cap = mm->cap ? 2 * mm->cap : 8;
        const char **t = mm->n < UINT32_MAX - 1 ? realloc(mm->text, cap * sizeof(*t)) : NULL;
        if (!t)
            return 0;
        mm->text = t;
        mm->cap = cap;
    }
    mm->text[mm->n++] = expr;
    return mm->hix[h] = (uint32_t)mm->n;
}

/* Room for the results of the expressions known when the model is finished; ids added later
 * (selectors of objects added after dra_model_finish) are evaluated each time. */
static enum dd_rc memo_ready(struct dra_model *m)
{
    struct dra_memo *mm = m->memo;
    size_t i;

    if (!mm || mm->rows)
        return DD_OK;
    if (!(mm->rows = calloc(mm->n + 1, sizeof(*mm->rows))))
        return DD_ENOMEM;
    mm->nrows = mm->n;
    if (pthread_mutex_init(&mm->lock, NULL)) {
        free(mm->rows);
        mm->rows = NULL;
        return DD_ENOMEM;
    }
    mm->locked_ok = 1;
    /* Seeded rows of this model's texts are its own from now on. */
    for (i = 0; i < mm->nseeds; i++) {
        uint32_t id = memo_find(mm, mm->seed_text[i]);
        if (id && atomic_load(&mm->nalloc) < MEMO_ROWS_MAX) {
            atomic_store_explicit(&mm->rows[id - 1], mm->seed_rows[i], memory_order_relaxed);
            atomic_fetch_add(&mm->nalloc, 1);
            mm->seed_rows[i] = NULL;
        }
    }
    memo_seeds_free(mm);
    return DD_OK;
}

/*
 * A model that borrows base's devices would judge its classes on them anew, one verdict at a
 * time as rules ask, where base judged them all while building their values, and with a
 * view whose values are transient, build a value per verdict.  It starts with copies of
 * base's verdicts instead.  Copies, not base's rows: base may go first, and its rows may be
 * being written (atomically) by readers meanwhile.  Out of memory, it starts without.
 */
static void memo_seed(struct dra_model *m, const struct dra_model *base)
{
    const struct dra_memo *bm = base->memo;
    struct dra_memo *mm = m->memo;
    size_t i, j;

    if (!bm || !bm->rows || !base->ndevices || (mm && mm->nseeds))
        return;
    if (!mm && !(mm = m->memo = calloc(1, sizeof(*mm))))
        return;
    if (!(mm->seed_text = calloc(bm->nrows + 1, sizeof(*mm->seed_text))) ||
        !(mm->seed_rows = calloc(bm->nrows + 1, sizeof(*mm->seed_rows)))) {
        memo_seeds_free(mm);
        return;
    }
    for (i = 0; i < bm->nrows; i++) {
        atomic_uchar *row = atomic_load_explicit(&bm->rows[i], memory_order_acquire), *copy;
        if (!row || !(copy = malloc(base->ndevices * sizeof(*copy))))
            continue;
        if (!(mm->seed_text[mm->nseeds] = strdup(bm->text[i]))) {
            free((void *)copy);
            continue;
        }
        for (j = 0; j < base->ndevices; j++)
            atomic_init(&copy[j], atomic_load_explicit(&row[j], memory_order_relaxed));
        mm->seed_rows[mm->nseeds++] = copy;
    }
}

/* The results of expression id on m's devices, or NULL: not remembered. */
static atomic_uchar *memo_row(const struct dra_model *m, uint32_t id)
{
    struct dra_memo *mm = m->memo;
    atomic_uchar *row;

    if (!mm || !mm->rows || !id || id > mm->nrows || !m->ndevices)
        return NULL;
    if ((row = atomic_load_explicit(&mm->rows[id - 1], memory_order_acquire)) ||
        atomic_load(&mm->nalloc) >= MEMO_ROWS_MAX)
        return row;
    pthread_mutex_lock(&mm->lock);
    if (!(row = atomic_load_explicit(&mm->rows[id - 1], memory_order_relaxed)) &&
        atomic_load(&mm->nalloc) < MEMO_ROWS_MAX && (row = calloc(m->ndevices, 1))) {
        atomic_fetch_add(&mm->nalloc, 1);
        atomic_store_explicit(&mm->rows[id - 1], row, memory_order_release);
    }
    pthread_mutex_unlock(&mm->lock);
    return row;
}

enum cel_verdict dra_selector_match_device(const struct dra_selector *s,
                                           const struct cel_device *dev, struct dd_err *err)
{
    if (!s->prog) {
        dd_failf(err, DD_EINVAL, "the selector does not compile");
        return CEL_ERROR;
    }
    return cel_eval_device(s->prog, dev, NULL, err);
}

enum cel_verdict dra_selector_match(const struct dra_model *m, const struct dra_selector *s,
                                    size_t dev, struct dd_err *err)
{
    static const enum cel_verdict of[] = { CEL_ERROR, CEL_FALSE, CEL_TRUE, CEL_ERROR };
    const struct dra_device *d;
    atomic_uchar *row = NULL;
    enum cel_verdict v;
    unsigned char b;

    if (dev >= m->ndevices) {
        dd_failf(err, DD_EINVAL, "no device %zu", dev);
        return CEL_ERROR;
    }
    if (s->prog && (row = memo_row(m, s->id)) &&
        (b = atomic_load_explicit(&row[dev], memory_order_relaxed)) != MEMO_UNKNOWN &&
        (b != MEMO_ERROR || !err))
        return of[b];
    d = m->devices[dev];
    if (!s->prog || !d->val)
        return dra_selector_match_device(s, &d->dev, err);
    dd_err_clear(err);
    v = cel_eval_value(s->prog, d->val, NULL, err);
    if (row)
        atomic_store_explicit(&row[dev], v == CEL_TRUE ? MEMO_TRUE : v == CEL_FALSE ? MEMO_FALSE
                                                                                  : MEMO_ERROR,
                              memory_order_relaxed);
    return v;
}

static int selectors_accept(const struct dra_model *m, const struct dra_selector *sel, size_t n,
                            size_t dev)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!sel[i].prog || dra_selector_match(m, &sel[i], dev, NULL) != CEL_TRUE)
            return 0;
    return 1;
}

int dra_class_admits(const struct dra_model *m, const struct dra_class *cls, size_t dev)
{
    return selectors_accept(m, cls->sel, cls->nsel, dev);
}

int dra_request_admits(const struct dra_model *m, const struct dra_class *cls,
                       const struct dra_request *r, size_t dev)
{
    return dra_class_admits(m, cls, dev) && selectors_accept(m, r->sel, r->nsel, dev);
}

/* ---- selectors and requests ---------------------------------------------- */

static enum dd_rc add_selectors(struct dra_model *m, const cJSON *arr, struct dra_selector **out,
                                size_t *nout, int line)
{
    const cJSON *it;
    size_t n = 0, cap = 0;
    struct dra_selector *v = NULL, *s;

    cJSON_ArrayForEach(it, arr) {
        const cJSON *expr = dd_json_path(it, "cel", "expression", NULL);
        if (!(s = PUSH(v, n, cap)))
            goto oom;
        if (!cJSON_IsString(expr)) {
            s->expr = "";
            dd_failf(&s->err, DD_ETYPE, "selector has no cel.expression string");
            s->line = node_line(m, it, line);
            continue;
        }
        s->expr = expr->valuestring;
        s->line = node_line(m, expr, line);
        if (compile_selector(m, s) != DD_OK || (s->prog && !(s->id = memo_intern(m, s->expr))))
            goto oom;
    }
    *out = v;
    *nout = n;
    return DD_OK;
oom:
    while (n > 0)
        release_selector(&v[--n]);
    free(v);
    return DD_ENOMEM;
}

static void release_selectors(struct dra_selector *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        release_selector(&v[i]);
    free(v);
}

static void release_requests(struct dra_request *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        release_selectors(v[i].sel, v[i].nsel);
        release_requests(v[i].sub, v[i].nsub);
    }
    free(v);
}

/* Fills the device-selection fields shared by `exactly`, flat (v1beta1) requests and subrequests. */
static enum dd_rc fill_exact(struct dra_model *m, struct dra_request *r, const cJSON *src)
{
    const char *mode = dd_json_str(src, "allocationMode", NULL);

    r->class_name = dd_json_str(src, "deviceClassName", NULL);
    r->all = mode && STRIEQ(mode, "All");
    r->admin_access = cJSON_IsTrue(dd_json_path(src, "adminAccess", NULL));
    r->tolerations = dd_json_arr(src, "tolerations", NULL);
    if (!dd_json_int(src, &r->count, "count", NULL) || r->count < 0)
        r->count = 1;
    return add_selectors(m, dd_json_arr(src, "selectors", NULL), &r->sel, &r->nsel, r->line);
}

static enum dd_rc add_requests(struct dra_model *m, const cJSON *arr, struct dra_claim_spec *spec,
                               int line)
{
    const cJSON *it, *sub;
    size_t cap = 0;
    struct dra_request *r;

    cJSON_ArrayForEach(it, arr) {
        const cJSON *exactly = dd_json_path(it, "exactly", NULL);
        const cJSON *first = dd_json_arr(it, "firstAvailable", NULL);
        size_t subcap = 0;

        if (!(r = PUSH(spec->req, spec->nreq, cap)))
            return DD_ENOMEM;
        r->name = str_or(dd_json_str(it, "name", NULL), "");
        r->line = node_line(m, it, line);
        r->count = 1;
        if (first) {
            cJSON_ArrayForEach(sub, first) {
                struct dra_request *s = PUSH(r->sub, r->nsub, subcap);
                if (!s)
                    return DD_ENOMEM;
                s->name = str_or(dd_json_str(sub, "name", NULL), "");
                s->line = node_line(m, sub, r->line);
                if (fill_exact(m, s, sub) != DD_OK)
                    return DD_ENOMEM;
            }
            continue;
        }
        /* v1 and v1beta2 nest the request under `exactly`; v1beta1 and v1alpha3 are flat. */
        if (fill_exact(m, r, exactly ? exactly : it) != DD_OK)
            return DD_ENOMEM;
    }
    return DD_OK;
}

/*
 * A live cache holds a claim's spec.devices once for every claim alike (dd_json_share: the
 * list carries cJSON_IsReference and lives as long as the process), so thousands of claims
 * made from one template name the same requests node.  Their requests are parsed once, into
 * this table keyed by that node, and the claims share them: 112 bytes a claim in the
 * webhook's view.  Lint's claims have lists of their own and keep their own requests.
 */
struct dra_specs {
    struct { const cJSON *arr; int line; struct dra_request *req; size_t nreq; } *v;
    size_t n, cap;                 /* cap: power of two, at most half full */
};

static void specs_free(struct dra_specs *t)
{
    size_t i;

    if (!t)
        return;
    for (i = 0; i < t->cap; i++)
        if (t->v[i].arr)
            release_requests(t->v[i].req, t->v[i].nreq);
    free(t->v);
    free(t);
}

static size_t specs_slot(const struct dra_specs *t, const cJSON *arr, int line)
{
    size_t h = ((uintptr_t)arr >> 4) * 11400714819323198485ULL ^ (size_t)line;

    for (h &= t->cap - 1; t->v[h].arr && (t->v[h].arr != arr || t->v[h].line != line);
         h = (h + 1) & (t->cap - 1))
        ;
    return h;
}

/* Makes room for one more entry; DD_OK or DD_ENOMEM (the table unchanged). */
static enum dd_rc specs_room(struct dra_model *m)
{
    struct dra_specs *t = m->specs, grown = { 0 };
    size_t i, slot;

    if (!t && !(t = m->specs = calloc(1, sizeof(*t))))
        return DD_ENOMEM;
    if (2 * (t->n + 1) <= t->cap)
        return DD_OK;
    grown.cap = t->cap ? 2 * t->cap : 64;
    if (!(grown.v = calloc(grown.cap, sizeof(*grown.v))))
        return DD_ENOMEM;
    for (i = 0; i < t->cap; i++)
        if (t->v[i].arr) {
            slot = specs_slot(&grown, t->v[i].arr, t->v[i].line);
            grown.v[slot] = t->v[i];
        }
    free(t->v);
    grown.n = t->n;
    *t = grown;
    return DD_OK;
}

/* A claim's requests (spec.devices.requests of devices): the model's when devices is a list
 * held once, parsed on the first claim that has it; the claim's own otherwise. */
static enum dd_rc claim_requests(struct dra_model *m, const cJSON *devices,
                                 struct dra_claim_spec *spec, int line)
{
    const cJSON *arr = dd_json_arr(devices, "requests", NULL);
    size_t slot;
    enum dd_rc rc;

    if (!arr || !(devices->type & cJSON_IsReference))
        return add_requests(m, arr, spec, line);
    if (m->specs && m->specs->cap && m->specs->v[slot = specs_slot(m->specs, arr, line)].arr) {
        spec->req = m->specs->v[slot].req;
        spec->nreq = m->specs->v[slot].nreq;
        spec->shared = 1;
        return DD_OK;
    }
    /* Out of room, the claim keeps its own: more memory, the same answers. */
    if ((rc = add_requests(m, arr, spec, line)) != DD_OK || specs_room(m) != DD_OK)
        return rc;
    slot = specs_slot(m->specs, arr, line);
    m->specs->v[slot].arr = arr;
    m->specs->v[slot].line = line;
    m->specs->v[slot].req = spec->req;
    m->specs->v[slot].nreq = spec->nreq;
    m->specs->n++;
    spec->shared = 1;
    return DD_OK;
}

/* ---- name indexes ------------------------------------------------------- */
/*
 * Claims are looked up once per pod claim and classes once per request, thousands of
 * times per live snapshot: open-addressing indexes (1 + position; 0 empty; at most half
 * full) built by dra_model_finish and kept up to date by objects added after it (the
 * controller's stand-in claims).  Without one (before finish, or after ENOMEM) lookups
 * are linear.
 */

size_t dra_key_hash(const char *ns, const char *name)
{
    size_t h = 1469598103934665603ULL;
    const char *p;

    for (p = ns; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ '/') * 1099511628211ULL;
    for (p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/* The model's index key: the object's key and a flag (template or claim). */
static size_t name_hash(const char *ns, const char *name, int flag)
{
    return (dra_key_hash(ns, name) ^ (size_t)flag) * 1099511628211ULL;
}

static void idx_insert(size_t *idx, size_t cap, size_t h, size_t pos)
{
    for (h &= cap - 1; idx[h]; h = (h + 1) & (cap - 1))
        ;
    idx[h] = pos + 1;
}

/* A new index of capacity >= 2n (power of two), or NULL. */
static size_t *idx_new(size_t n, size_t *cap)
{
    *cap = 16;
    while (*cap < 2 * n + 2)
        *cap *= 2;
    return calloc(*cap, sizeof(size_t));
}

static void index_claims(struct dra_model *m)
{
    size_t i;

    free(m->claim_idx);
    m->nclaims_indexed = 0;
    if (!(m->claim_idx = idx_new(m->nclaims, &m->nclaim_idx))) {
        m->nclaim_idx = 0;
        return;
    }
    for (i = 0; i < m->nclaims; i++)
        idx_insert(m->claim_idx, m->nclaim_idx,
                   name_hash(m->claims[i].o.ns, m->claims[i].o.name, m->claims[i].is_template), i);
    m->nclaims_indexed = m->nclaims;
}

/* Nodes by name, each name's nodes chained in order; plugin pods by node.  DD_ENOMEM or
 * DD_OK. */
static enum dd_rc index_nodes(struct dra_model *m)
{
    size_t i, h, *tail;

    /* Nothing to index (a request's model): lookups look at none. */
    if (!m->nodes.n && !m->plugin_pods.n)
        return DD_OK;
    if (!(m->node_idx = idx_new(m->nodes.n, &m->nnode_idx)) ||
        !(m->node_next = malloc((m->nodes.n + 1) * sizeof(*m->node_next))) ||
        !(m->node_rt = calloc(m->nodes.n + 1, sizeof(*m->node_rt))) ||
        !(tail = calloc(m->nodes.n + 1, sizeof(*tail)))) {
        m->nnode_idx = 0;
        return DD_ENOMEM;
    }
    for (i = 0; i < m->nodes.n; i++) {
        size_t mask = m->nnode_idx - 1, first;
        m->node_next[i] = SIZE_MAX;
        for (h = name_hash("", m->nodes.v[i].name, 2) & mask; m->node_idx[h]; h = (h + 1) & mask)
            if (STRIEQ(m->nodes.v[m->node_idx[h] - 1].name, m->nodes.v[i].name))
                break;
        if (!m->node_idx[h]) {
            m->node_idx[h] = i + 1;
            tail[i] = i;
        } else {
            first = m->node_idx[h] - 1;
            m->node_next[tail[first]] = i;
            tail[first] = i;
        }
    }
    m->nnodes_indexed = m->nodes.n;
    free(tail);
    if (!(m->plugin_idx = idx_new(m->plugin_pods.n, &m->nplugin_idx)) ||
        !(m->plugin_next = calloc(m->plugin_pods.n + 1, sizeof(*m->plugin_next)))) {
        m->nplugin_idx = 0;
        return DD_ENOMEM;
    }
    /* Backwards, each pod put in front of its node's chain: the chains keep the pods' order. */
    for (i = m->plugin_pods.n; i-- > 0;) {
        const char *on = dd_json_str(m->plugin_pods.v[i].json, "spec", "nodeName", NULL);
        size_t mask = m->nplugin_idx - 1;
        if (!on)
            continue;
        for (h = name_hash("", on, 3) & mask; m->plugin_idx[h]; h = (h + 1) & mask)
            if (STRIEQ(dd_json_str(m->plugin_pods.v[m->plugin_idx[h] - 1].json, "spec",
                                   "nodeName", NULL), on))
                break;
        m->plugin_next[i] = m->plugin_idx[h];
        m->plugin_idx[h] = i + 1;
    }
    return DD_OK;
}

static void index_classes(struct dra_model *m)
{
    size_t i;

    free(m->class_idx);
    m->nclasses_indexed = 0;
    if (!(m->class_idx = idx_new(m->nclasses, &m->nclass_idx))) {
        m->nclass_idx = 0;
        return;
    }
    for (i = 0; i < m->nclasses; i++)
        idx_insert(m->class_idx, m->nclass_idx, name_hash("", m->classes[i].o.name, 0), i);
    m->nclasses_indexed = m->nclasses;
}

/* The claim just added after dra_model_finish joins the index (which grows when full). */
static void index_late_claim(struct dra_model *m)
{
    const struct dra_claim *c = &m->claims[m->nclaims - 1];

    if (!m->claim_idx || m->nclaims_indexed + 1 != m->nclaims)
        return;
    if (2 * m->nclaims + 2 > m->nclaim_idx) {
        index_claims(m);
        return;
    }
    idx_insert(m->claim_idx, m->nclaim_idx, name_hash(c->o.ns, c->o.name, c->is_template),
               m->nclaims - 1);
    m->nclaims_indexed = m->nclaims;
}

static void index_late_class(struct dra_model *m)
{
    if (!m->class_idx || m->nclasses_indexed + 1 != m->nclasses)
        return;
    if (2 * m->nclasses + 2 > m->nclass_idx) {
        index_classes(m);
        return;
    }
    idx_insert(m->class_idx, m->nclass_idx, name_hash("", m->classes[m->nclasses - 1].o.name, 0),
               m->nclasses - 1);
    m->nclasses_indexed = m->nclasses;
}

/* ---- resource.k8s.io kinds ----------------------------------------------- */

static enum dd_rc add_class(struct dra_model *m, const cJSON *obj, const char *file, int line)
{
    struct dra_class *c = PUSH(m->classes, m->nclasses, m->capclasses);

    if (!c)
        return DD_ENOMEM;
    obj_init(&c->o, obj, file, line);
    c->config = dd_json_arr(obj, "spec", "config", NULL);
    index_late_class(m);
    return add_selectors(m, dd_json_arr(obj, "spec", "selectors", NULL), &c->sel, &c->nsel, line);
}

static enum dd_rc add_claim(struct dra_model *m, const cJSON *obj, const char *file, int line,
                            int is_template)
{
    struct dra_claim *c = PUSH(m->claims, m->nclaims, m->capclaims);
    const cJSON *spec, *alloc, *r;

    if (!c)
        return DD_ENOMEM;
    obj_init(&c->o, obj, file, line);
    c->is_template = is_template;
    m->claims_gen = 0; /* answers resolved before may have been this claim */
    index_late_claim(m);
    spec = is_template ? dd_json_path(obj, "spec", "spec", NULL) : dd_json_path(obj, "spec", NULL);
    alloc = dd_json_path(obj, "status", "allocation", NULL);
    c->allocated = alloc != NULL;
    c->alloc_nodes = dd_json_path(alloc, "nodeSelector", NULL);
    c->alloc_results = dd_json_arr(alloc, "devices", "results", NULL);
    cJSON_ArrayForEach(r, c->alloc_results)
        c->binding |= cJSON_GetArraySize(dd_json_arr(r, "bindingFailureConditions", NULL)) ||
                      cJSON_GetArraySize(dd_json_arr(r, "bindingConditions", NULL));
    c->reserved_for = dd_json_arr(obj, "status", "reservedFor", NULL);
    c->spec.config = dd_json_arr(spec, "devices", "config", NULL);
    return claim_requests(m, dd_json_path(spec, "devices", NULL), &c->spec, line);
}

/* "domain/name" -> (domain, name); unqualified names belong to the driver's domain. */
static int split_qualified(const char *q, const char *driver, const char **domain,
                           const char **name, char **owned)
{
    const char *slash = strchr(q, '/');

    *owned = NULL;
    if (!slash) {
        *domain = driver;
        *name = q;
        return 0;
    }
    if (!(*owned = strndup(q, (size_t)(slash - q))))
        return -1;
    *domain = *owned;
    *name = slash + 1;
    return 0;
}

/* Keeps a string the model allocated (split-off attribute domains) until release. */
static int keep_string(struct dra_model *m, char *str)
{
    if (!str || grow((void **)&m->owned, &m->capowned, m->nowned, sizeof(char *))) {
        free(str);
        return -1;
    }
    m->owned[m->nowned++] = str;
    return 0;
}

/* An int attribute's exact value: the reader keeps an integer's digits in valuestring. */
static int64_t attr_int(const cJSON *v)
{
    if (v->valuestring)
        return strtoll(v->valuestring, NULL, 10);
    return (int64_t)v->valuedouble;
}

/*
 * One resource.k8s.io/v1 DeviceAttribute (int, bool, string, version, or the list
 * forms of DRAListTypeAttributes) into a; an attribute with none of these is
 * CEL_ATTR_NONE, which fails every selector on the device as in the scheduler.
 * The lists are owned by the model.  0, or -1 out of memory.
 */
static int attr_value(struct dra_model *m, const cJSON *it, struct cel_attr *a)
{
    static const struct {
        const char *key;
        enum cel_attr_kind kind;
    } lists[] = {
        {"ints", CEL_ATTR_INTS}, {"bools", CEL_ATTR_BOOLS},
        {"strings", CEL_ATTR_STRINGS}, {"versions", CEL_ATTR_VERSIONS},
    };
    const cJSON *v;

    if ((v = cJSON_GetObjectItemCaseSensitive(it, "int")) && cJSON_IsNumber(v)) {
        a->kind = CEL_ATTR_INT;
        a->i = attr_int(v);
        return 0;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(it, "bool")) && cJSON_IsBool(v)) {
        a->kind = CEL_ATTR_BOOL;
        a->b = cJSON_IsTrue(v);
        return 0;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(it, "version")) && cJSON_IsString(v)) {
        a->kind = CEL_ATTR_VERSION;
        a->s = v->valuestring;
        return 0;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(it, "string")) && cJSON_IsString(v)) {
        a->kind = CEL_ATTR_STRING;
        a->s = v->valuestring;
        return 0;
    }
    a->kind = CEL_ATTR_NONE;
    for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
        const cJSON *e;
        size_t n = 0, i = 0;
        void *arr;
        if (!(v = cJSON_GetObjectItemCaseSensitive(it, lists[k].key)) || !cJSON_IsArray(v))
            continue;
        n = (size_t)cJSON_GetArraySize(v);
        if (!(arr = calloc(n + 1, sizeof(int64_t))) || keep_string(m, arr))
            return -1;
        cJSON_ArrayForEach(e, v) {
            if (lists[k].kind == CEL_ATTR_INTS)
                ((int64_t *)arr)[i++] = cJSON_IsNumber(e) ? attr_int(e) : 0;
            else if (lists[k].kind == CEL_ATTR_BOOLS)
                ((int *)arr)[i++] = cJSON_IsTrue(e);
            else
                ((const char **)arr)[i++] = cJSON_IsString(e) ? e->valuestring : "";
        }
        a->kind = lists[k].kind;
        a->nv = (unsigned)n; /* cJSON counts in an int */
        a->iv = arr;
        return 0;
    }
    return 0;
}

static enum dd_rc add_device(struct dra_model *m, struct dra_slice *s, const cJSON *d)
{
    const cJSON *attrs, *caps, *it;
    struct dra_device *dev;
    size_t acap = 0, ccap = 0;
    const cJSON *basic = dd_json_path(d, "basic", NULL);
    struct cel_attr *av = NULL;
    struct cel_capacity *cv = NULL;
    size_t na = 0, nc = 0;

    dev = &s->dev[s->ndev++];
    memset(dev, 0, sizeof(*dev));
    dev->name = str_or(dd_json_str(d, "name", NULL), "");
    dev->json = d;
    dev->tainted = cJSON_GetArraySize(dd_json_arr(d, "taints", NULL)) > 0;
    dev->dev.driver = s->driver;
    /* v1beta1 and v1alpha3 wrap attributes and capacity in `basic`. */
    dev->dev.allow_multiple_allocations =
        cJSON_IsTrue(dd_json_path(basic ? basic : d, "allowMultipleAllocations", NULL));
    attrs = dd_json_path(basic ? basic : d, "attributes", NULL);
    caps = dd_json_path(basic ? basic : d, "capacity", NULL);
    /* Sized once: a GPU has a dozen attributes, and a live model holds 40,000 devices. */
    if (((acap = (size_t)cJSON_GetArraySize(attrs)) && !(av = malloc(acap * sizeof(*av)))) ||
        ((ccap = (size_t)cJSON_GetArraySize(caps)) && !(cv = malloc(ccap * sizeof(*cv)))))
        goto oom;
    cJSON_ArrayForEach(it, attrs) {
        struct cel_attr *a;
        char *dom;

        if (!(a = PUSH(av, na, acap)))
            goto oom;
        if (split_qualified(it->string, s->driver, &a->domain, &a->name, &dom) ||
            (dom && keep_string(m, dom)))
            goto oom;
        if (attr_value(m, it, a))
            goto oom;
    }
    cJSON_ArrayForEach(it, caps) {
        struct cel_capacity *c;
        char *dom;

        if (!(c = PUSH(cv, nc, ccap)))
            goto oom;
        if (split_qualified(it->string, s->driver, &c->domain, &c->name, &dom) ||
            (dom && keep_string(m, dom)))
            goto oom;
        /* v1alpha3 capacity is a bare quantity; later versions wrap it in {value}. */
        c->quantity = cJSON_IsString(it) ? it->valuestring
                                         : str_or(dd_json_str(it, "value", NULL), "0");
    }
    dev->dev.attrs = av;
    dev->dev.nattrs = na;
    dev->dev.caps = cv;
    dev->dev.ncaps = nc;
    return DD_OK;
oom:
    dev->dev.attrs = av;
    dev->dev.caps = cv;
    return DD_ENOMEM;
}

static int64_t pool_int(const cJSON *slice, const char *key, int64_t dflt)
{
    int64_t v;

    return dd_json_int(slice, &v, "spec", "pool", key, NULL) && v >= 0 ? v : dflt;
}

static enum dd_rc add_slice(struct dra_model *m, const cJSON *obj, const char *file, int line)
{
    struct dra_slice *s;
    const cJSON *devs, *it;
    int n;

    if (m->slices_borrowed || m->devs) /* another model's, or indexed already */
        return DD_EINVAL;
    if (!(s = PUSH(m->slices, m->nslices, m->capslices)))
        return DD_ENOMEM;
    obj_init(&s->o, obj, file, line);
    s->driver = str_or(dd_json_str(obj, "spec", "driver", NULL), "");
    s->node = str_or(dd_json_str(obj, "spec", "nodeName", NULL), "");
    s->pool = str_or(dd_json_str(obj, "spec", "pool", "name", NULL), "");
    s->generation = pool_int(obj, "generation", 0);
    s->slice_count = pool_int(obj, "resourceSliceCount", 1);
    s->node_selector = dd_json_path(obj, "spec", "nodeSelector", NULL);
    s->all_nodes = cJSON_IsTrue(dd_json_path(obj, "spec", "allNodes", NULL));
    s->per_device_nodes = cJSON_IsTrue(dd_json_path(obj, "spec", "perDeviceNodeSelection", NULL));
    devs = dd_json_arr(obj, "spec", "devices", NULL);
    n = cJSON_GetArraySize(devs);
    if (n <= 0)
        return DD_OK;
    if (!(s->dev = calloc((size_t)n, sizeof(*s->dev))))
        return DD_ENOMEM;
    cJSON_ArrayForEach(it, devs)
        if (add_device(m, s, it) != DD_OK)
            return DD_ENOMEM;
    return DD_OK;
}

/* ---- pods and workloads -------------------------------------------------- */

static enum dd_rc add_containers(struct dra_model *m, struct dra_podspec *p, const cJSON *arr,
                                 int line, int init)
{
    const cJSON *it, *e;
    size_t cap = p->nctr; /* containers and initContainers share one array: grow() reallocates */

    cJSON_ArrayForEach(it, arr) {
        struct dra_container *c;
        size_t ecap = 0, mcap = 0;

        if (grow((void **)&p->ctr, &cap, p->nctr, sizeof(*p->ctr)))
            return DD_ENOMEM;
        c = memset(&p->ctr[p->nctr++], 0, sizeof(*c));
        c->name = str_or(dd_json_str(it, "name", NULL), "");
        c->image = str_or(dd_json_str(it, "image", NULL), "");
        c->command = dd_json_arr(it, "command", NULL);
        c->args = dd_json_arr(it, "args", NULL);
        c->claims = dd_json_arr(it, "resources", "claims", NULL);
        c->line = node_line(m, it, line);
        c->init = init;
        cJSON_ArrayForEach(e, dd_json_arr(it, "env", NULL)) {
            struct dra_env *v = PUSH(c->env, c->nenv, ecap);
            if (!v)
                return DD_ENOMEM;
            v->name = str_or(dd_json_str(e, "name", NULL), "");
            v->value = dd_json_str(e, "value", NULL);
            v->line = node_line(m, e, c->line);
        }
        cJSON_ArrayForEach(e, dd_json_arr(it, "volumeMounts", NULL)) {
            struct dra_mount *v = PUSH(c->mounts, c->nmounts, mcap);
            if (!v)
                return DD_ENOMEM;
            v->volume = str_or(dd_json_str(e, "name", NULL), "");
            v->path = str_or(dd_json_str(e, "mountPath", NULL), "");
        }
    }
    return DD_OK;
}

/*
 * Adds the pod spec of a Pod or workload.  Workloads without resource claims
 * are skipped (they cannot hold DRA faults) unless they are DaemonSets, which
 * may be driver installations: this keeps big repositories cheap.
 */
/* 1 when a container of pod spec lists claims (resources.claims): a pod of DRA even without
 * resourceClaims, which the API server refuses (ContainerClaimNameUnknown). */
static int lists_claims(const cJSON *spec)
{
    static const char *const kinds[] = { "containers", "initContainers" };
    const cJSON *c;
    size_t i;

    for (i = 0; i < 2; i++)
        cJSON_ArrayForEach(c, dd_json_arr(spec, kinds[i], NULL))
            if (cJSON_GetArraySize(dd_json_arr(c, "resources", "claims", NULL)) > 0)
                return 1;
    return 0;
}

int dra_extended_resource_name(const char *name)
{
    const char *slash = strchr(name, '/');

    /* v1helper.IsExtendedResourceName: not native (no domain, or kubernetes.io's), not a
     * quota's "requests." name; deviceclass.resource.kubernetes.io/<class> is DRA's own. */
    if (!strncmp(name, "deviceclass.resource.kubernetes.io/", 35))
        return name[35] != '\0';
    if (!slash || slash == name || !slash[1] || !strncmp(name, "requests.", 9))
        return 0;
    return !((size_t)(slash - name) >= 13 && !strncmp(slash - 13, "kubernetes.io", 13));
}

int dra_requests_extended(const cJSON *spec)
{
    static const char *const kinds[] = { "containers", "initContainers" };
    static const char *const lists[] = { "requests", "limits" };
    const cJSON *c, *r;
    size_t i, j;

    for (i = 0; i < 2; i++)
        cJSON_ArrayForEach(c, dd_json_arr(spec, kinds[i], NULL))
            for (j = 0; j < 2; j++)
                cJSON_ArrayForEach(r, dd_json_path(c, "resources", lists[j], NULL))
                    if (r->string && dra_extended_resource_name(r->string))
                        return 1;
    return 0;
}

static enum dd_rc add_podspec(struct dra_model *m, const cJSON *obj, const char *file, int line,
                              const cJSON *spec, int64_t replicas)
{
    struct dra_podspec *p;
    const struct dra_podspec **at;
    const cJSON *claims = dd_json_arr(spec, "resourceClaims", NULL), *it;
    size_t ccap = 0, vcap = 0;
    enum dd_rc rc;

    if (!spec || (replicas >= 0 && !claims && !lists_claims(spec) && !dra_requests_extended(spec)))
        return DD_OK;
    if (!(p = calloc(1, sizeof(*p))))
        return DD_ENOMEM;
    if (!(at = PUSH(m->pods, m->npods, m->cappods))) {
        free(p);
        return DD_ENOMEM;
    }
    *at = p;
    obj_init(&p->o, obj, file, line);
    p->spec = spec;
    p->replicas = replicas;
    p->node = str_or(dd_json_str(spec, "nodeName", NULL), "");
    if (STRIEQ(p->o.kind, "Pod"))
        p->status = dd_json_path(obj, "status", NULL);
    p->service_account = dd_json_str(spec, "serviceAccountName", NULL);
    if (!p->service_account)
        p->service_account = str_or(dd_json_str(spec, "serviceAccount", NULL), "default");
    cJSON_ArrayForEach(it, claims) {
        struct dra_pod_claim *c = PUSH(p->claims, p->nclaims, ccap);
        if (!c)
            return DD_ENOMEM;
        c->name = str_or(dd_json_str(it, "name", NULL), "");
        c->claim = dd_json_str(it, "resourceClaimName", NULL);
        c->tmpl = dd_json_str(it, "resourceClaimTemplateName", NULL);
        c->has_source = dd_json_path(it, "source", NULL) != NULL;
        c->line = node_line(m, it, line);
    }
    cJSON_ArrayForEach(it, dd_json_arr(spec, "volumes", NULL)) {
        struct dra_volume *v = PUSH(p->vol, p->nvol, vcap);
        if (!v)
            return DD_ENOMEM;
        v->name = str_or(dd_json_str(it, "name", NULL), "");
        v->host_path = dd_json_str(it, "hostPath", "path", NULL);
    }
    if ((rc = add_containers(m, p, dd_json_arr(spec, "containers", NULL), line, 0)) != DD_OK)
        return rc;
    return add_containers(m, p, dd_json_arr(spec, "initContainers", NULL), line, 1);
}

static int64_t int_or(const cJSON *o, const char *a, const char *b, int64_t dflt)
{
    int64_t v;

    return dd_json_int(o, &v, a, b, NULL) && v >= 0 ? v : dflt;
}

static enum dd_rc add_workload(struct dra_model *m, const cJSON *obj, const char *file, int line,
                               const char *kind)
{
    const cJSON *spec = dd_json_path(obj, "spec", NULL);

    if (STRIEQ(kind, "Deployment") || STRIEQ(kind, "StatefulSet") || STRIEQ(kind, "ReplicaSet"))
        return add_podspec(m, obj, file, line, dd_json_path(spec, "template", "spec", NULL),
                           int_or(spec, "replicas", NULL, 1));
    if (STRIEQ(kind, "DaemonSet"))
        return add_podspec(m, obj, file, line, dd_json_path(spec, "template", "spec", NULL), -1);
    /* A Job runs `parallelism` pods at once, and each pod's claims live as long as the pod. */
    if (STRIEQ(kind, "Job"))
        return add_podspec(m, obj, file, line, dd_json_path(spec, "template", "spec", NULL),
                           int_or(spec, "parallelism", NULL, 1));
    if (STRIEQ(kind, "CronJob")) {
        const cJSON *job = dd_json_path(spec, "jobTemplate", "spec", NULL);
        return add_podspec(m, obj, file, line, dd_json_path(job, "template", "spec", NULL),
                           int_or(job, "parallelism", NULL, 1));
    }
    return DD_OK;
}

/* ---- quota and plain objects --------------------------------------------- */

static enum dd_rc add_quota(struct dra_model *m, const cJSON *obj, const char *file, int line)
{
    struct dra_quota *q = PUSH(m->quotas, m->nquotas, m->capquotas);
    const cJSON *it;
    size_t cap = 0;

    if (!q)
        return DD_ENOMEM;
    obj_init(&q->o, obj, file, line);
    cJSON_ArrayForEach(it, dd_json_path(obj, "spec", "hard", NULL)) {
        struct dra_quota_item *h;
        int64_t v;

        if (!(cJSON_IsString(it) ? dd_quantity_int(it->valuestring, &v)
                                 : dd_json_int(it, &v, NULL)))
            continue;
        if (!(h = PUSH(q->hard, q->nhard, cap)))
            return DD_ENOMEM;
        h->key = it->string;
        h->hard = v;
        h->line = node_line(m, it, line);
    }
    return DD_OK;
}

/* core/v1 Events name their object in involvedObject, events.k8s.io/v1 in regarding. */
static enum dd_rc add_event(struct dra_model *m, const cJSON *obj, int v1core)
{
    const cJSON *about = dd_json_path(obj, v1core ? "involvedObject" : "regarding", NULL);
    struct dra_event *e;

    if (!about)
        return DD_OK;
    if (!(e = PUSH(m->events, m->nevents, m->capevents)))
        return DD_ENOMEM;
    e->type = str_or(dd_json_str(obj, "type", NULL), "");
    e->seq = m->nevents - 1;
    e->json = obj;
    e->reason = str_or(dd_json_str(obj, "reason", NULL), "");
    e->message = str_or(dd_json_str(obj, v1core ? "message" : "note", NULL), "");
    e->kind = str_or(dd_json_str(about, "kind", NULL), "");
    e->ns = str_or(dd_json_str(about, "namespace", NULL), "");
    e->name = str_or(dd_json_str(about, "name", NULL), "");
    return DD_OK;
}

static enum dd_rc add_plain(struct dra_objs *set, const cJSON *obj, const char *file, int line)
{
    struct dra_obj *o = PUSH(set->v, set->n, set->cap);

    if (!o)
        return DD_ENOMEM;
    obj_init(o, obj, file, line);
    return DD_OK;
}

/* ---- the model ----------------------------------------------------------- */

void dra_model_init(struct dra_model *m, dra_pos_fn pos, void *pos_ctx)
{
    memset(m, 0, sizeof(*m));
    m->pos = pos;
    m->pos_ctx = pos_ctx;
}

enum dra_relevance dra_kind_relevant(const char *av, const char *kind)
{
    static const char *const rbac[] = { "Role", "ClusterRole", "RoleBinding",
                                        "ClusterRoleBinding", NULL };
    static const char *const workloads[] = { "Deployment", "StatefulSet", "ReplicaSet", "Job",
                                             "CronJob", NULL };
    static const char *const core[] = { "Pod", "ResourceQuota", "Node", "ServiceAccount",
                                        "Namespace", "Event", NULL };
    const char *const *set = NULL;
    size_t i;

    /* Mirrors dra_model_add (and add_workload): what it reads, nothing else. */
    if (!av || !kind)
        return DRA_KIND_IGNORED;
    /* Every resource.k8s.io object: other kinds have their apiVersion judged. */
    if (in_group(av, "resource.k8s.io") || drv_creates_for(av, kind))
        return DRA_KIND_USED;
    if (in_group(av, "admissionregistration.k8s.io"))
        return STRIEQ(kind, "MutatingWebhookConfiguration") ||
                       STRIEQ(kind, "MutatingAdmissionPolicy")
                   ? DRA_KIND_USED
                   : DRA_KIND_IGNORED;
    if (in_group(av, "rbac.authorization.k8s.io"))
        set = rbac;
    else if (in_group(av, "apps") || in_group(av, "batch")) {
        if (STRIEQ(kind, "DaemonSet"))
            return DRA_KIND_USED;
        set = workloads;
    } else if (in_group(av, "events.k8s.io"))
        return STRIEQ(kind, "Event") ? DRA_KIND_USED : DRA_KIND_IGNORED;
    else if (STRIEQ(av, "v1"))
        set = core;
    for (i = 0; set && set[i]; i++)
        if (STRIEQ(kind, set[i]))
            return set == workloads ? DRA_KIND_USED_WITH_CLAIMS : DRA_KIND_USED;
    return DRA_KIND_IGNORED;
}

int dra_object_relevant(const cJSON *obj)
{
    const char *kind = dd_json_str(obj, "kind", NULL);
    const cJSON *spec;

    switch (dra_kind_relevant(dd_json_str(obj, "apiVersion", NULL), kind)) {
    case DRA_KIND_IGNORED:
        return 0;
    case DRA_KIND_USED:
        return 1;
    case DRA_KIND_USED_WITH_CLAIMS:
        break;
    }
    /* add_podspec skips a workload whose pod template has no resourceClaims array. */
    spec = dd_json_path(obj, "spec", NULL);
    if (STRIEQ(kind, "CronJob"))
        spec = dd_json_path(spec, "jobTemplate", "spec", NULL);
    spec = dd_json_path(spec, "template", "spec", NULL);
    return dd_json_arr(spec, DRA_CLAIMS_KEY, NULL) != NULL || lists_claims(spec) ||
           dra_requests_extended(spec);
}

enum dd_rc dra_model_add(struct dra_model *m, const cJSON *obj, const char *file, int line)
{
    const char *av = dd_json_str(obj, "apiVersion", NULL);
    const char *kind = dd_json_str(obj, "kind", NULL);

    if (!av || !kind)
        return DD_OK;
    m->nobjects++;
    if (in_group(av, "resource.k8s.io")) {
        if (STRIEQ(kind, "DeviceClass"))
            return add_class(m, obj, file, line);
        if (STRIEQ(kind, "ResourceClaim"))
            return add_claim(m, obj, file, line, 0);
        if (STRIEQ(kind, "ResourceClaimTemplate"))
            return add_claim(m, obj, file, line, 1);
        if (STRIEQ(kind, "ResourceSlice"))
            return add_slice(m, obj, file, line);
        return add_plain(&m->resource_other, obj, file, line);
    }
    if (drv_creates_for(av, kind))
        return add_plain(&m->driver_objects, obj, file, line);
    if (in_group(av, "admissionregistration.k8s.io") &&
        (STRIEQ(kind, "MutatingWebhookConfiguration") || STRIEQ(kind, "MutatingAdmissionPolicy")))
        return add_plain(&m->mutators, obj, file, line);
    if (in_group(av, "rbac.authorization.k8s.io")) {
        if (STRIEQ(kind, "Role") || STRIEQ(kind, "ClusterRole"))
            return add_plain(&m->roles, obj, file, line);
        if (STRIEQ(kind, "RoleBinding") || STRIEQ(kind, "ClusterRoleBinding"))
            return add_plain(&m->bindings, obj, file, line);
        return DD_OK;
    }
    if (in_group(av, "apps") || in_group(av, "batch"))
        return add_workload(m, obj, file, line, kind);
    if (in_group(av, "events.k8s.io") && STRIEQ(kind, "Event"))
        return add_event(m, obj, 0);
    if (STRIEQ(av, "v1")) {
        if (STRIEQ(kind, "Pod")) {
            if (!dd_json_arr(obj, "spec", DRA_CLAIMS_KEY, NULL) &&
                !lists_claims(dd_json_path(obj, "spec", NULL)) &&
                !dra_requests_extended(dd_json_path(obj, "spec", NULL)))
                return dra_pod_registers_plugin(obj) ? add_plain(&m->plugin_pods, obj, file, line)
                                                     : DD_OK;
            return add_podspec(m, obj, file, line, dd_json_path(obj, "spec", NULL), 1);
        }
        if (STRIEQ(kind, "ResourceQuota"))
            return add_quota(m, obj, file, line);
        if (STRIEQ(kind, "Node"))
            return add_plain(&m->nodes, obj, file, line);
        if (STRIEQ(kind, "ServiceAccount"))
            return add_plain(&m->serviceaccounts, obj, file, line);
        if (STRIEQ(kind, "Namespace"))
            return add_plain(&m->namespaces, obj, file, line);
        if (STRIEQ(kind, "Event"))
            return add_event(m, obj, 1);
    }
    return DD_OK;
}

int dra_pod_registers_plugin(const cJSON *pod)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, dd_json_arr(pod, "spec", "volumes", NULL)) {
        const char *h = dd_json_str(v, "hostPath", "path", NULL);
        if (h && !strncmp(h, DRV_PLUGINS_DIR, strlen(DRV_PLUGINS_DIR)))
            return 1; /* plugins and plugins_registry share the prefix */
    }
    return 0;
}

int dra_pod_ready(const cJSON *pod)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, dd_json_arr(pod, "status", "conditions", NULL)) {
        const char *t = dd_json_str(c, "type", NULL), *st = dd_json_str(c, "status", NULL);
        if (t && st && STRIEQ(t, "Ready"))
            return STRIEQ(st, "True");
    }
    return 0;
}

const cJSON *dra_plugin_pod(const struct dra_model *m, const struct dra_podspec *ds,
                            const char *node)
{
    size_t i = 0, mask = m->nplugin_idx - 1, h;

    /* The pods on node, in order (every pod, before dra_model_finish indexed them). */
    if (m->nplugin_idx) {
        for (h = name_hash("", node, 3) & mask; m->plugin_idx[h]; h = (h + 1) & mask)
            if (STRIEQ(dd_json_str(m->plugin_pods.v[m->plugin_idx[h] - 1].json, "spec",
                                   "nodeName", NULL), node))
                break;
        i = m->plugin_idx[h] ? m->plugin_idx[h] - 1 : SIZE_MAX;
    }
    for (; i < m->plugin_pods.n; i = m->nplugin_idx ? m->plugin_next[i] - 1 : i + 1) {
        const cJSON *pod = m->plugin_pods.v[i].json, *ref;
        const char *on = dd_json_str(pod, "spec", "nodeName", NULL);
        if (!on || !STRIEQ(on, node) || !STRIEQ(m->plugin_pods.v[i].ns, ds->o.ns))
            continue;
        cJSON_ArrayForEach(ref, dd_json_arr(pod, "metadata", "ownerReferences", NULL)) {
            const char *k = dd_json_str(ref, "kind", NULL), *n = dd_json_str(ref, "name", NULL);
            if (k && n && STRIEQ(k, "DaemonSet") && STRIEQ(n, ds->o.name))
                return pod;
        }
    }
    return NULL;
}

const char *dra_container_env(const struct dra_container *c, const char *name, int *line)
{
    size_t i;

    /* The last definition wins, as in the kubelet. */
    for (i = c->nenv; i > 0; i--)
        if (STRIEQ(c->env[i - 1].name, name)) {
            if (line)
                *line = c->env[i - 1].line;
            return c->env[i - 1].value;
        }
    return NULL;
}

static const char *flag_in(const cJSON *arr, const char *flag)
{
    const cJSON *it;
    size_t n = strlen(flag);

    cJSON_ArrayForEach(it, arr) {
        const char *s = cJSON_IsString(it) ? it->valuestring : "";
        if (!strncmp(s, flag, n) && s[n] == '=')
            return s + n + 1;
        if (STRIEQ(s, flag) && it->next && cJSON_IsString(it->next))
            return it->next->valuestring;
    }
    return NULL;
}

const char *dra_container_flag(const struct dra_container *c, const char *flag)
{
    const char *v = flag_in(c->args, flag);

    return v ? v : flag_in(c->command, flag);
}

long dra_node_count(const struct dra_model *m, long fallback)
{
    return m->nodes.n ? (long)m->nodes.n : fallback;
}

/* ---- driver detection ---------------------------------------------------- */

/* The hostPath volume of p named name, or NULL. */
static const struct dra_volume *host_volume(const struct dra_podspec *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->nvol; i++)
        if (STRIEQ(p->vol[i].name, name) && p->vol[i].host_path)
            return &p->vol[i];
    return NULL;
}

/* 1 when path is dir or lies below it. */
static int path_in(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return path && !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

static int has_host_path(const struct dra_podspec *p, const char *prefix)
{
    size_t i;

    for (i = 0; i < p->nvol; i++)
        if (path_in(p->vol[i].host_path, prefix))
            return 1;
    return 0;
}

/* 1 when container c mounts a hostPath volume at or below host directory dir. */
static int mounts_host(const struct dra_podspec *p, const struct dra_container *c, const char *dir)
{
    size_t i;

    for (i = 0; i < c->nmounts; i++) {
        const struct dra_volume *v = host_volume(p, c->mounts[i].volume);
        if (v && (path_in(v->host_path, dir) || path_in(dir, v->host_path)))
            return 1;
    }
    return 0;
}

/* The driver name from a plugin socket directory /var/lib/kubelet/plugins/<driver>. */
static const char *name_from_plugin_dir(const struct dra_podspec *p)
{
    size_t i, n = strlen(DRV_PLUGINS_DIR);

    for (i = 0; i < p->nvol; i++) {
        const char *h = p->vol[i].host_path;
        if (h && !strncmp(h, DRV_PLUGINS_DIR "/", n + 1) && h[n + 1] && !strchr(h + n + 1, '/'))
            return h + n + 1;
    }
    return NULL;
}

/* 1 when word occurs in s as a whole word of a command line ("bash -c 'x -v 4'",
 * "/usr/bin/x"): between the start, a blank, a slash or a quote and the end or a blank. */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    const char *p;

    for (p = s; (p = strstr(p, word)); p++) {
        char before = p == s ? ' ' : p[-1], after = p[n];
        if ((before == ' ' || before == '/' || before == '"' || before == '\'' ||
             before == '\n' || before == '\t' || before == ';') &&
            (after == '\0' || after == ' ' || after == '\n' || after == '\t' || after == ';' ||
             after == '"' || after == '\''))
            return 1;
    }
    return 0;
}

/* 1 when c's command or args run binary. */
static int runs(const struct dra_container *c, const char *binary)
{
    const cJSON *arrs[2] = { c->command, c->args }, *it;
    size_t i;

    for (i = 0; i < 2; i++)
        cJSON_ArrayForEach(it, arrs[i])
            if (cJSON_IsString(it) && has_word(it->valuestring, binary))
                return 1;
    return 0;
}

static enum dd_rc add_driver(struct dra_model *m, const struct dra_podspec *ds,
                             const struct dra_container *c, const struct drv_profile *prof,
                             const char *name, const char *name_from)
{
    struct dra_driver *d = PUSH(m->drivers, m->ndrivers, m->capdrivers);
    const char *env = prof ? prof->cdi_root_env : "CDI_ROOT";
    const char *flag = prof ? prof->cdi_root_flag : "--cdi-root";
    const char *v;

    if (!d)
        return DD_ENOMEM;
    d->ds = ds;
    d->ctr = c;
    d->profile = prof;
    d->name = name ? name : "";
    d->name_from = name_from;
    d->num_devices = prof ? prof->default_num_devices : -1;
    if (prof && prof->num_devices_env &&
        (v = dra_container_env(c, prof->num_devices_env, &d->num_devices_line)))
        if (!dd_quantity_int(v, &d->num_devices) || d->num_devices < 0)
            d->num_devices = -1;
    d->writes_cdi = prof ? prof->writes_cdi : -1;
    if (d->writes_cdi == 0)
        return DD_OK;
    if (env && (v = dra_container_env(c, env, &d->cdi_line))) {
        d->cdi_root = v;
        d->cdi_src = DRA_CDI_ENV;
        d->writes_cdi = 1;
    } else if (flag && (v = dra_container_flag(c, flag))) {
        d->cdi_root = v;
        d->cdi_src = DRA_CDI_FLAG;
        d->cdi_line = c->line;
        d->writes_cdi = 1;
    } else {
        /* Without a profile the binary's default is unknown: no CDI check. */
        d->cdi_root = prof ? prof->default_cdi_root : NULL;
        d->cdi_src = DRA_CDI_DEFAULT;
        d->cdi_line = c->line;
    }
    return DD_OK;
}

/* The driver name a profile's plugin in container c publishes, and what says so. */
static const char *profile_name(const struct drv_profile *prof, const struct drv_plugin *pl,
                                const struct dra_container *c, const char **from)
{
    char made[256];
    const char *v;
    size_t i;

    *from = "profile";
    if (prof->name_env && (v = dra_container_env(c, prof->name_env, NULL)) && *v) {
        *from = "env DRIVER_NAME";
        return v;
    }
    if (prof->name_flag && (v = dra_container_flag(c, prof->name_flag)) && *v) {
        *from = "flag --driver-name";
        return v;
    }
    /* The example driver's DEVICE_PROFILE=cpu publishes cpu.example.com: a name of the table,
     * so the string lives there, not in a buffer. */
    if (prof->devprofile_env && (v = dra_container_env(c, prof->devprofile_env, NULL)) && *v) {
        for (i = 0; i < DRV_MAX && prof->other_names[i]; i++) {
            snprintf(made, sizeof(made), prof->devprofile_fmt, v);
            if (STRIEQ(made, prof->other_names[i]))
                return prof->other_names[i];
        }
    }
    return pl->driver;
}

/* A profile's DaemonSet: one driver per plugin container (init containers never are). */
static enum dd_rc detect_profile(struct dra_model *m, const struct dra_podspec *p,
                                 const struct drv_profile *prof)
{
    const struct dra_container *first = NULL;
    const char *name, *from;
    size_t i, j, found = 0;
    enum dd_rc rc;

    for (i = 0; i < p->nctr; i++) {
        const struct dra_container *c = &p->ctr[i];
        if (c->init || drv_profile_for_image(c->image) != prof)
            continue;
        if (!first)
            first = c;
        for (j = 0; j < DRV_MAX && prof->plugins[j].driver; j++) {
            const struct drv_plugin *pl = &prof->plugins[j];
            int one = j == 0 && (j + 1 == DRV_MAX || !prof->plugins[1].driver);
            if (!one && !(pl->binary && runs(c, pl->binary)) &&
                !(pl->container && STRIEQ(c->name, pl->container)))
                continue;
            if (one && found)
                return DD_OK; /* one plugin: the first container running the image is it */
            name = profile_name(prof, pl, c, &from);
            if ((rc = add_driver(m, p, c, prof, name, from)) != DD_OK)
                return rc;
            found++;
            break;
        }
    }
    /* Several plugins, none told apart (an unknown command line): each on the first
     * container, as the chart's defaults run them all. */
    for (j = 0; !found && first && j < DRV_MAX && prof->plugins[j].driver; j++)
        if ((rc = add_driver(m, p, first, prof, prof->plugins[j].driver, "profile")) != DD_OK)
            return rc;
    return DD_OK;
}

/*
 * The driver a role lets write claim status for: since 1.36 a plugin that reports device
 * status needs `resourceclaims/driver` with resourceNames [<its driver>] (dranet, dra-driver-cpu
 * and the example driver's charts grant it so).
 */
static const char *status_driver_name(const struct dra_obj *role)
{
    const cJSON *rule, *res;

    cJSON_ArrayForEach(rule, dd_json_arr(role->json, "rules", NULL))
        cJSON_ArrayForEach(res, dd_json_arr(rule, "resources", NULL))
            if (cJSON_IsString(res) && STRIEQ(res->valuestring, "resourceclaims/driver")) {
                const cJSON *names = dd_json_arr(rule, "resourceNames", NULL);
                if (cJSON_GetArraySize(names) == 1 && cJSON_IsString(names->child))
                    return names->child->valuestring;
            }
    return NULL;
}

/*
 * A DaemonSet of no profile is a DRA driver when it registers a kubelet plugin (a hostPath
 * on the kubelet's plugins_registry, or on its plugins directory, whole or per driver) and
 * shows it is a DRA plugin rather than a CSI one: it writes CDI specs (CDI_ROOT, --cdi-root,
 * a hostPath on a CDI directory), names its driver (DRIVER_NAME, --driver-name), or its
 * ServiceAccount is granted something on resourceslices.
 */
static enum dd_rc detect_generic(struct dra_model *m, const struct dra_podspec *p)
{
    const struct dra_container *c = NULL;
    const char *name = NULL, *from = NULL;
    struct rbac_grant g[16];
    size_t i, j, n;
    int dra = 0;

    if (!has_host_path(p, DRV_REGISTRY_DIR) && !has_host_path(p, DRV_PLUGINS_DIR))
        return DD_OK;
    /* The plugin container mounts the registration directory (the first container else). */
    for (i = 0; i < p->nctr && !c; i++)
        if (!p->ctr[i].init && (mounts_host(p, &p->ctr[i], DRV_REGISTRY_DIR) ||
                                mounts_host(p, &p->ctr[i], DRV_PLUGINS_DIR)))
            c = &p->ctr[i];
    for (i = 0; i < p->nctr && !c; i++)
        if (!p->ctr[i].init)
            c = &p->ctr[i];
    if (!c)
        return DD_OK;
    n = rbac_sa_grants(m, p->o.ns, p->service_account, g, 16);
    if ((name = dra_container_env(c, "DRIVER_NAME", NULL)) && *name)
        from = "env DRIVER_NAME";
    else if ((name = dra_container_flag(c, "--driver-name")) && *name)
        from = "flag --driver-name";
    else if ((name = name_from_plugin_dir(p)))
        from = "plugin directory";
    for (j = 0; !from && j < n && j < 16; j++)
        if (g[j].role && (name = status_driver_name(g[j].role)))
            from = "RBAC on resourceclaims/driver";
    dra = from && strcmp(from, "plugin directory");
    dra |= dra_container_env(c, "CDI_ROOT", NULL) || dra_container_flag(c, "--cdi-root") ||
           has_host_path(p, "/var/run/cdi") || has_host_path(p, "/etc/cdi") ||
           has_host_path(p, "/run/cdi");
    for (j = 0; !dra && j < n && j < 16; j++)
        dra = g[j].role && rbac_role_mentions(m, g[j].role, "resource.k8s.io", "resourceslices");
    if (!dra)
        return DD_OK;
    return add_driver(m, p, c, NULL, from ? name : NULL, from ? from : "");
}

static enum dd_rc detect_driver(struct dra_model *m, size_t podidx)
{
    const struct dra_podspec *p = m->pods[podidx];
    const struct drv_profile *prof;
    size_t i;

    for (i = 0; i < p->nctr; i++)
        if (!p->ctr[i].init && (prof = drv_profile_for_image(p->ctr[i].image)))
            return detect_profile(m, p, prof);
    return detect_generic(m, p);
}

/* Length of the directory part of a file name. */
static size_t dir_part(const char *file)
{
    const char *s = file ? strrchr(file, '/') : NULL;

    return s ? (size_t)(s - file) : 0;
}

static int same_dir(const char *a, const char *b)
{
    size_t n = dir_part(a);

    return a && b && n == dir_part(b) && !strncmp(a, b, n);
}

/*
 * A driver DaemonSet that does not tell its name ships (Helm chart, kustomize base) the
 * DeviceClasses of its driver beside it: the names their selectors require are what it
 * publishes.  Only classes in the same directory, and only for unnamed drivers: a named
 * driver's neighbour with another name is what SelectorMatchesNoDriver is for.
 */
static enum dd_rc install_names(struct dra_model *m)
{
    size_t i, j, k, cap = 0;

    for (i = 0; i < m->ndrivers; i++) {
        struct dra_driver *d = &m->drivers[i];
        if (*d->name || !d->ds->o.file)
            continue;
        for (j = 0; j < m->nclasses; j++) {
            const struct cel_driver_ref *refs;
            size_t n;
            if (!same_dir(m->classes[j].o.file, d->ds->o.file))
                continue;
            for (k = 0; k < m->classes[j].nsel; k++) {
                const struct dra_selector *sel = &m->classes[j].sel[k];
                size_t r;
                if (!sel->prog || cel_program_drivers(sel->prog, &refs, &n) != CEL_DRIVERS_SET)
                    continue;
                for (r = 0; r < n; r++) {
                    const char **slot = PUSH(m->install_names, m->ninstall_names, cap);
                    if (!slot)
                        return DD_ENOMEM;
                    *slot = refs[r].name;
                    if (!*d->name) {
                        d->name = refs[r].name;
                        d->name_from = "DeviceClass beside it";
                    }
                }
            }
        }
    }
    return DD_OK;
}

/*
 * A Node's runtime facts: the node agent's annotation when present (what the
 * node's config really says), else what its runtime version implies.
 */
static enum dd_rc node_runtime(struct dra_model *m, const struct dra_obj *n)
{
    const char *ann = dd_json_str(n->json, "metadata", "annotations", DRA_NODE_CDI_ANNOTATION, NULL);
    const char *ver = dd_json_str(n->json, "status", "nodeInfo", "containerRuntimeVersion", NULL);
    struct cri_config cfg;
    enum dra_runtime_src src = DRA_RT_AGENT;
    struct dra_runtime *r;
    cJSON *facts = ann ? cJSON_Parse(ann) : NULL;
    enum dd_rc rc = facts ? cri_config_from_json(facts, &cfg, NULL) : DD_ENOTFOUND;

    cJSON_Delete(facts);
    /* The Node's runtime version has the last word (containerd 2.4 ignores enable_cdi). */
    if (rc == DD_OK && cri_config_apply_runtime(&cfg, ver) != DD_OK) {
        cri_config_release(&cfg);
        rc = DD_ENOMEM;
    }
    if (rc == DD_ENOMEM)
        return rc;
    /* A malformed annotation counts as no annotation: inference still applies. */
    if (rc != DD_OK) {
        src = DRA_RT_INFERRED;
        if ((rc = cri_config_infer(ver, &cfg)) != DD_OK)
            return rc == DD_ENOMEM ? rc : DD_OK;
    }
    if (!(r = PUSH(m->runtimes, m->nruntimes, m->capruntimes))) {
        cri_config_release(&cfg);
        return DD_ENOMEM;
    }
    r->node = n->name;
    r->obj = n;
    r->src = src;
    r->cfg = cfg;
    return DD_OK;
}

static int cmp_event_obj(const struct dra_event *a, const char *kind, const char *ns,
                         const char *name)
{
    int c;

    if ((c = strcmp(a->kind, kind)) || (c = strcmp(a->ns, ns)))
        return c;
    return strcmp(a->name, name);
}

static int cmp_events(const void *pa, const void *pb)
{
    const struct dra_event *a = pa, *b = pb;
    int c = cmp_event_obj(a, b->kind, b->ns, b->name);

    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

enum dd_rc dra_events_merge(const struct dra_event *old, size_t nold, struct dra_event *came,
                            size_t ncame, size_t (*seq)(void *ctx, const cJSON *json), void *ctx,
                            struct dra_event **out, size_t *nout)
{
    struct dra_event *v = malloc((nold + ncame + 1) * sizeof(*v)), e;
    size_t i = 0, j, n = 0;
    int have = 0;

    if (!v)
        return DD_ENOMEM;
    for (j = 0; j < ncame; j++)
        came[j].seq = seq(ctx, came[j].json);
    if (ncame > 1)
        qsort(came, ncame, sizeof(*came), cmp_events);
    for (j = 0; i < nold || j < ncame;) {
        if (i < nold && !have) {
            e = old[i];
            if ((e.seq = seq(ctx, e.json)) == SIZE_MAX) {
                i++;
                continue;
            }
            have = 1;
        }
        if (j < ncame && (!have || cmp_events(&came[j], &e) < 0)) {
            v[n++] = came[j++];
        } else {
            v[n++] = e;
            i++;
            have = 0;
        }
    }
    *out = v;
    *nout = n;
    return DD_OK;
}

const struct dra_event *dra_events_about(const struct dra_model *m, const char *kind,
                                         const char *ns, const char *name, size_t *n)
{
    size_t lo = 0, hi = m->nevents, end;

    /* Lower bound of the object's run in the sorted array. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_event_obj(&m->events[mid], kind, ns, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (end = lo; end < m->nevents && !cmp_event_obj(&m->events[end], kind, ns, name); end++)
        ;
    *n = end - lo;
    return m->events + lo;
}

/* What the published devices own: the slices and what indexes them (see dra_model.devs). */
struct dra_devices {
    atomic_size_t refs;
    struct dra_slice *slices;
    size_t nslices;
    const struct dra_device **devices;
    uint32_t *device_slice;
    unsigned char *device_tainted;
    struct cel_device_set *values;
    char **owned;
    size_t nowned;
};

/* d owning m's devices, one reference. */
static void devices_of(struct dra_devices *d, const struct dra_model *m)
{
    atomic_init(&d->refs, 1);
    d->slices = m->slices;
    d->nslices = m->nslices;
    d->devices = m->devices;
    d->device_slice = m->device_slice;
    d->device_tainted = m->device_tainted;
    d->values = m->values;
    d->owned = m->owned;
    d->nowned = m->nowned;
}

static void devices_free(struct dra_devices *d)
{
    size_t i, j;

    for (i = 0; i < d->nslices; i++) {
        for (j = 0; j < d->slices[i].ndev; j++) {
            free((void *)d->slices[i].dev[j].dev.attrs);
            free((void *)d->slices[i].dev[j].dev.caps);
        }
        free(d->slices[i].dev);
    }
    free(d->slices);
    free(d->devices);
    free(d->device_slice);
    free(d->device_tainted);
    cel_device_set_free(d->values);
    for (i = 0; i < d->nowned; i++)
        free(d->owned[i]);
    free(d->owned);
}

/* How many expressions the classes' selectors are (one text in many classes is one), or
 * SIZE_MAX on ENOMEM. */
static size_t class_exprs(const struct dra_model *m)
{
    size_t i, j, n = 0;
    unsigned char *seen;

    if (!m->memo || !m->nclasses)
        return 0;
    if (!(seen = calloc(m->memo->n + 1, 1)))
        return SIZE_MAX;
    for (i = 0; i < m->nclasses; i++)
        for (j = 0; j < m->classes[i].nsel; j++) {
            uint32_t id = m->classes[i].sel[j].id;
            if (id && id <= m->memo->n && !seen[id - 1]) {
                seen[id - 1] = 1;
                n++;
            }
        }
    free(seen);
    return n;
}

/*
 * Numbers the published devices and builds their CEL values (a model that borrows its slices
 * has its base's), and evaluates every class on each device while its value is fresh in the
 * caches: every rule needs the classes' verdicts on every device, and a loop per class would
 * read every value again per class.  Not when the classes' selectors are more than the
 * results remembered, unless the values are transient (their expressions are what counts
 * then: one text in many classes is one row).
 */
static enum dd_rc index_devices(struct dra_model *m)
{
    size_t i, j, k, n = 0, nsel = 0;
    int judge, transient;

    if (m->slices_borrowed || m->devices)
        return DD_OK;
    for (i = 0; i < m->nslices; i++)
        n += m->slices[i].ndev;
    for (i = 0; i < m->nclasses; i++)
        nsel += m->classes[i].nsel;
    /* A value is dropped only when every class's verdicts on it are remembered. */
    transient = m->values_transient && class_exprs(m) <= MEMO_ROWS_MAX;
    judge = transient || nsel <= MEMO_ROWS_MAX;
    if (!(m->devices = calloc(n + 1, sizeof(*m->devices))) ||
        !(m->device_slice = calloc(n + 1, sizeof(*m->device_slice))) ||
        !(m->device_tainted = calloc(n + 1, 1)) ||
        (n && !(m->values = cel_device_set_new())))
        return DD_ENOMEM;
    m->ndevices = n; /* numbered in order below: only those before d are read */
    for (i = 0, n = 0; i < m->nslices; i++)
        for (j = 0; j < m->slices[i].ndev; j++, n++) {
            struct dra_device *d = &m->slices[i].dev[j];
            d->id = n;
            d->slice = &m->slices[i];
            if (!(d->val = cel_device_value(m->values, &d->dev)))
                return DD_ENOMEM;
            m->device_slice[n] = (uint32_t)i;
            m->device_tainted[n] = (unsigned char)d->tainted;
            m->devices[n] = d;
            for (k = 0; judge && k < m->nclasses; k++)
                dra_class_admits(m, &m->classes[k], n);
            if (transient) {
                d->val = NULL;
                cel_device_set_clear(m->values);
            }
        }
    if (transient) {
        cel_device_set_free(m->values);
        m->values = NULL;
    }
    if (!(m->devs = malloc(sizeof(*m->devs))))
        return DD_ENOMEM;
    devices_of(m->devs, m);
    return DD_OK;
}

enum dd_rc dra_model_finish(struct dra_model *m)
{
    struct dra_runtime *r;
    size_t i;
    enum dd_rc rc;

    if ((rc = memo_ready(m)) != DD_OK || (rc = index_devices(m)) != DD_OK)
        return rc;
    index_claims(m);
    index_classes(m);
    if ((rc = index_nodes(m)) != DD_OK)
        return rc;
    if (m->nevents > 1)
        qsort(m->events, m->nevents, sizeof(*m->events), cmp_events);
    for (i = 0; i < m->npods; i++)
        if (m->pods[i]->replicas < 0 && (rc = detect_driver(m, i)) != DD_OK)
            return rc;
    if ((rc = install_names(m)) != DD_OK)
        return rc;
    dra_model_resolve_claims(m, m->pods, m->npods);
    if (m->cri) {
        /* The file given on the command line speaks for every node: no inference. */
        if (!(r = PUSH(m->runtimes, m->nruntimes, m->capruntimes)))
            return DD_ENOMEM;
        r->src = DRA_RT_FILE;
        r->cfg = *m->cri; /* shallow: borrowed, never released by the model */
        return DD_OK;
    }
    for (i = 0; i < m->nodes.n; i++) {
        size_t before = m->nruntimes;
        if ((rc = node_runtime(m, &m->nodes.v[i])) != DD_OK)
            return rc;
        if (m->nruntimes > before)
            m->node_rt[i] = m->nruntimes;
    }
    return DD_OK;
}

/* dra_pod_claim_resolve without the answers remembered. */
static const struct dra_claim *resolve(const struct dra_model *m, const struct dra_podspec *p,
                                       const struct dra_pod_claim *pc)
{
    const cJSON *st;

    if (pc->claim)
        return dra_find_claim(m, p->o.ns, pc->claim, 0);
    /* The resourceclaim controller records the generated claim's name in the pod status. */
    cJSON_ArrayForEach(st, dd_json_arr(p->status, "resourceClaimStatuses", NULL)) {
        const char *n = dd_json_str(st, "name", NULL);
        const char *claim = dd_json_str(st, "resourceClaimName", NULL);
        if (n && claim && STRIEQ(n, pc->name))
            return dra_find_claim(m, p->o.ns, claim, 0);
    }
    return NULL;
}

const struct dra_claim *dra_pod_claim_resolve(const struct dra_model *m,
                                              const struct dra_podspec *p,
                                              const struct dra_pod_claim *pc)
{
    return m->claims_gen && pc->gen == m->claims_gen ? pc->resolved : resolve(m, p, pc);
}

const struct dra_claim *dra_pod_claim_lookup(const struct dra_model *m,
                                             const struct dra_podspec *p,
                                             const struct dra_pod_claim *pc)
{
    return resolve(m, p, pc);
}

enum dd_rc dra_model_reserve_claims(struct dra_model *m, size_t extra)
{
    struct dra_claim *v;

    if (m->capclaims >= m->nclaims + extra)
        return DD_OK;
    if (!(v = realloc(m->claims, (m->nclaims + extra) * sizeof(*v))))
        return DD_ENOMEM;
    m->claims = v;
    m->capclaims = m->nclaims + extra;
    m->claims_gen = 0; /* answers remembered pointed into the old array */
    return DD_OK;
}

enum dd_rc dra_model_append_claims(struct dra_model *m, const struct dra_claim *v, size_t n)
{
    size_t i, cap = m->nclaim_idx, *idx;

    if (m->nclaims + n > m->capclaims || !m->nclaim_idx || m->nclaims_indexed != m->nclaims)
        return DD_EINVAL;
    /* A copy of the index when it has room (a memcpy: no hash of every claim again). */
    if (2 * (m->nclaims + n) + 2 <= cap) {
        if (!(idx = malloc(cap * sizeof(*idx))))
            return DD_ENOMEM;
        memcpy(idx, m->claim_idx, cap * sizeof(*idx));
    } else {
        if (!(idx = idx_new(m->nclaims + n, &cap)))
            return DD_ENOMEM;
        for (i = 0; i < m->nclaims; i++)
            idx_insert(idx, cap,
                       name_hash(m->claims[i].o.ns, m->claims[i].o.name, m->claims[i].is_template),
                       i);
    }
    if (n)
        memcpy(&m->claims[m->nclaims], v, n * sizeof(*v));
    for (i = 0; i < n; i++)
        idx_insert(idx, cap, name_hash(v[i].o.ns, v[i].o.name, v[i].is_template),
                   m->nclaims + i);
    m->nclaims += n;
    m->nclaims_indexed = m->nclaims;
    m->claim_idx = idx;
    m->nclaim_idx = cap;
    return DD_OK;
}

void dra_model_resolve_claims(struct dra_model *m, const struct dra_podspec *const *pods, size_t n)
{
    static atomic_uint_fast64_t last;
    size_t i, j;

    if (!m->claims_gen)
        m->claims_gen = atomic_fetch_add(&last, 1) + 1;
    for (i = 0; i < n; i++)
        for (j = 0; j < pods[i]->nclaims; j++) {
            struct dra_pod_claim *pc = &pods[i]->claims[j];
            pc->resolved = resolve(m, pods[i], pc);
            pc->gen = m->claims_gen;
        }
}

void dra_model_release(struct dra_model *m)
{
    size_t i, j;

    for (i = 0; i < m->nclasses; i++)
        release_selectors(m->classes[i].sel, m->classes[i].nsel);
    for (i = 0; i < m->nclaims; i++)
        if (!m->claims[i].spec.shared)
            release_requests(m->claims[i].spec.req, m->claims[i].spec.nreq);
    specs_free(m->specs);
    memo_free(m->memo);
    if (m->devs && atomic_fetch_sub(&m->devs->refs, 1) == 1) {
        devices_free(m->devs);
        free(m->devs);
    } else if (!m->devs && !m->slices_borrowed) { /* never finished */
        struct dra_devices d;
        devices_of(&d, m);
        devices_free(&d);
    }
    for (i = 0; i < m->npods; i++) {
        for (j = 0; j < m->pods[i]->nctr; j++) {
            free(m->pods[i]->ctr[j].env);
            free(m->pods[i]->ctr[j].mounts);
        }
        free(m->pods[i]->ctr);
        free(m->pods[i]->claims);
        free(m->pods[i]->vol);
        free((void *)m->pods[i]);
    }
    for (i = 0; i < m->nquotas; i++)
        free(m->quotas[i].hard);
    for (i = 0; i < m->nruntimes; i++)
        if (m->runtimes[i].src != DRA_RT_FILE)
            cri_config_release(&m->runtimes[i].cfg);
    free(m->runtimes);
    free(m->events);
    free(m->claim_idx);
    free(m->class_idx);
    free(m->node_idx);
    free(m->node_next);
    free(m->node_rt);
    free(m->plugin_idx);
    free(m->plugin_next);
    free(m->classes);
    free(m->claims);
    free(m->pods);
    free(m->quotas);
    free(m->drivers);
    free(m->install_names);
    free(m->roles.v);
    free(m->bindings.v);
    free(m->nodes.v);
    free(m->serviceaccounts.v);
    free(m->namespaces.v);
    free(m->resource_other.v);
    free(m->driver_objects.v);
    free(m->mutators.v);
    free(m->plugin_pods.v);
    dra_model_init(m, m->pos, m->pos_ctx);
}

void dra_model_borrow_slices(struct dra_model *m, const struct dra_model *base)
{
    m->slices = base->slices;
    m->nslices = base->nslices;
    m->capslices = base->nslices;
    m->slices_borrowed = 1;
    m->devices = base->devices;
    m->ndevices = base->ndevices;
    m->device_slice = base->device_slice;
    m->device_tainted = base->device_tainted;
    m->values = base->values;
    if ((m->devs = base->devs))
        atomic_fetch_add(&m->devs->refs, 1);
    memo_seed(m, base);
}

int dra_is_slice(const cJSON *obj)
{
    const char *av = dd_json_str(obj, "apiVersion", NULL), *kind = dd_json_str(obj, "kind", NULL);

    return av && kind && in_group(av, "resource.k8s.io") && STRIEQ(kind, "ResourceSlice");
}

int dra_model_slices_are(const struct dra_model *base, const cJSON *const *objs, size_t n)
{
    size_t i, k = 0;

    if (!base->devs)
        return 0;
    for (i = 0; i < n; i++)
        if (dra_is_slice(objs[i]) && (k >= base->nslices || base->slices[k++].o.json != objs[i]))
            return 0;
    return k == base->nslices;
}

const struct dra_class *dra_find_class(const struct dra_model *m, const char *name)
{
    size_t i;

    if (m->nclass_idx) {
        size_t mask = m->nclass_idx - 1, h = name_hash("", name, 0) & mask;
        for (; m->class_idx[h]; h = (h + 1) & mask)
            if (STRIEQ(m->classes[m->class_idx[h] - 1].o.name, name))
                return &m->classes[m->class_idx[h] - 1];
    }
    for (i = m->nclass_idx ? m->nclasses_indexed : 0; i < m->nclasses; i++)
        if (STRIEQ(m->classes[i].o.name, name))
            return &m->classes[i];
    return NULL;
}

size_t dra_node_first(const struct dra_model *m, const char *name)
{
    size_t i;

    if (m->nnode_idx) {
        size_t mask = m->nnode_idx - 1, h = name_hash("", name, 2) & mask;
        for (; m->node_idx[h]; h = (h + 1) & mask)
            if (STRIEQ(m->nodes.v[m->node_idx[h] - 1].name, name))
                return m->node_idx[h] - 1;
    }
    for (i = m->nnode_idx ? m->nnodes_indexed : 0; i < m->nodes.n; i++)
        if (STRIEQ(m->nodes.v[i].name, name))
            return i;
    return SIZE_MAX;
}

size_t dra_node_next(const struct dra_model *m, size_t k)
{
    size_t i;

    if (k < m->nnodes_indexed && m->node_next)
        return m->node_next[k];
    for (i = k + 1; i < m->nodes.n; i++)
        if (STRIEQ(m->nodes.v[i].name, m->nodes.v[k].name))
            return i;
    return SIZE_MAX;
}

const struct dra_obj *dra_find_node(const struct dra_model *m, const char *name)
{
    size_t k = dra_node_first(m, name);

    return k == SIZE_MAX ? NULL : &m->nodes.v[k];
}

const struct dra_runtime *dra_node_runtime(const struct dra_model *m, size_t k)
{
    size_t i;

    if (m->node_rt && k < m->nnodes_indexed)
        return m->node_rt[k] ? &m->runtimes[m->node_rt[k] - 1] : NULL;
    for (i = 0; i < m->nruntimes; i++)
        if (m->runtimes[i].obj == &m->nodes.v[k])
            return &m->runtimes[i];
    return NULL;
}

const struct dra_claim *dra_find_claim(const struct dra_model *m, const char *ns,
                                       const char *name, int is_template)
{
    size_t i;

    if (m->nclaim_idx) {
        size_t mask = m->nclaim_idx - 1, h = name_hash(ns, name, is_template) & mask;
        for (; m->claim_idx[h]; h = (h + 1) & mask) {
            const struct dra_claim *c = &m->claims[m->claim_idx[h] - 1];
            if (c->is_template == is_template && STRIEQ(c->o.ns, ns) && STRIEQ(c->o.name, name))
                return c;
        }
    }
    /* Claims not in the index (none once dra_model_finish built it, but after ENOMEM). */
    for (i = m->nclaim_idx ? m->nclaims_indexed : 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        if (c->is_template == is_template && STRIEQ(c->o.ns, ns) && STRIEQ(c->o.name, name))
            return c;
    }
    return NULL;
}
