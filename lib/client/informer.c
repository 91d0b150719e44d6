/*
 * informer.c - the indexed object store and the reflector that feeds it
 * (contracts in informer.h).
 *
 * The store is a chained hash table key -> entry; each entry also sits on a
 * doubly linked list of its namespace, found through a second hash table, so
 * per-namespace visits and removals cost nothing extra.
 */
#include "client/informer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/json.h"

/* ---- store --------------------------------------------------------------- */

struct nsidx;

struct sent {
    char *key;                  /* owned; "ns/name" or "name" */
    cJSON *obj;                 /* owned */
    struct nsidx *ns;           /* the namespace list this entry is on */
    struct sent *next;          /* hash chain */
    struct sent *ns_prev, *ns_next;
    size_t pos;                 /* its place in the table's objs and ents */
};

struct nsidx {
    char *ns;                   /* owned; "" for cluster-scoped objects */
    struct sent *head;          /* entries of this namespace, never empty */
    struct nsidx *next;         /* hash chain */
};

struct table {
    struct sent **b;            /* nb chains; nb a power of two or 0 */
    size_t nb, count;
    /* Every object, count of them, in the order they came (a deleted one's place goes to the
     * last), and its entry: a builder collects a whole cache after each event, and copying an
     * array costs far less than walking the chains. */
    const cJSON **objs;
    struct sent **ents;
    size_t capobjs;
    struct nsidx **nsb;         /* nnsb chains; a power of two or 0 */
    size_t nnsb, nns;
};

struct inf_store {
    pthread_mutex_t mu;         /* guards t and gen */
    struct table t;
    uint64_t gen;               /* bumped on every change */
    void (*drop)(void *ctx, cJSON *obj); /* see inf_store_set_drop; NULL frees */
    void *drop_ctx;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

void inf_store_set_drop(struct inf_store *s, void (*fn)(void *ctx, cJSON *obj), void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->drop = fn;
    s->drop_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

const char *inf_key(const cJSON *obj, char *buf, size_t size)
{
    const char *name = dd_json_str(obj, "metadata", "name", NULL);
    const char *ns = dd_json_str(obj, "metadata", "namespace", NULL);
    int n;

    if (!name || !name[0] || !buf || !size)
        return NULL;
    if (ns && ns[0])
        n = snprintf(buf, size, "%s/%s", ns, name);
    else
        n = snprintf(buf, size, "%s", name);
    return n >= 0 && (size_t)n < size ? buf : NULL;
}

struct inf_store *inf_store_new(void)
{
    struct inf_store *s = calloc(1, sizeof *s);

    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

/* Lets go of an object that was in the store: freed, or handed to the drop hook. */
static void drop(struct inf_store *s, cJSON *obj)
{
    if (obj && s && s->drop)
        s->drop(s->drop_ctx, obj);
    else
        cJSON_Delete(obj);
}

static void table_release(struct inf_store *s, struct table *t)
{
    size_t i;

    for (i = 0; i < t->nb; i++) {
        struct sent *e = t->b[i], *next;

        for (; e; e = next) {
            next = e->next;
            free(e->key);
            drop(s, e->obj);
            free(e);
        }
    }
    for (i = 0; i < t->nnsb; i++) {
        struct nsidx *n = t->nsb[i], *next;

        for (; n; n = next) {
            next = n->next;
            free(n->ns);
            free(n);
        }
    }
    free(t->b);
    free(t->nsb);
    free(t->objs);
    free(t->ents);
    memset(t, 0, sizeof *t);
}

void inf_store_free(struct inf_store *s)
{
    if (!s)
        return;
    table_release(s, &s->t);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static struct sent *table_find(const struct table *t, const char *key)
{
    struct sent *e;

    if (!t->nb)
        return NULL;
    for (e = t->b[hash_str(key) & (t->nb - 1)]; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

static struct nsidx *ns_find(const struct table *t, const char *ns)
{
    struct nsidx *n;

    if (!t->nnsb)
        return NULL;
    for (n = t->nsb[hash_str(ns) & (t->nnsb - 1)]; n; n = n->next)
        if (!strcmp(n->ns, ns))
            return n;
    return NULL;
}

static int grow_keys(struct table *t)
{
    size_t n = t->nb ? t->nb * 2 : 64, i;
    struct sent **b = calloc(n, sizeof *b);

    if (!b)
        return -1;
    for (i = 0; i < t->nb; i++) {
        struct sent *e = t->b[i], *next;

        for (; e; e = next) {
            size_t h = hash_str(e->key) & (n - 1);

            next = e->next;
            e->next = b[h];
            b[h] = e;
        }
    }
    free(t->b);
    t->b = b;
    t->nb = n;
    return 0;
}

static int grow_objs(struct table *t)
{
    size_t n = t->capobjs ? t->capobjs * 2 : 64;
    const cJSON **objs = realloc(t->objs, n * sizeof(*objs));
    struct sent **ents;

    if (!objs)
        return -1;
    t->objs = objs;
    if (!(ents = realloc(t->ents, n * sizeof(*ents))))
        return -1;
    t->ents = ents;
    t->capobjs = n;
    return 0;
}

static int grow_ns(struct table *t)
{
    size_t n = t->nnsb ? t->nnsb * 2 : 16, i;
    struct nsidx **b = calloc(n, sizeof *b);

    if (!b)
        return -1;
    for (i = 0; i < t->nnsb; i++) {
        struct nsidx *x = t->nsb[i], *next;

        for (; x; x = next) {
            size_t h = hash_str(x->ns) & (n - 1);

            next = x->next;
            x->next = b[h];
            b[h] = x;
        }
    }
    free(t->nsb);
    t->nsb = b;
    t->nnsb = n;
    return 0;
}

/* The namespace part of a key: everything before the '/', or "". */
static void key_ns(const char *key, char *ns, size_t size)
{
    const char *slash = strchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;

    if (n >= size)
        n = size - 1;
    memcpy(ns, key, n);
    ns[n] = '\0';
}

static void ns_unlink(struct table *t, struct sent *e)
{
    struct nsidx *n = e->ns, **pp;

    if (e->ns_prev)
        e->ns_prev->ns_next = e->ns_next;
    else
        n->head = e->ns_next;
    if (e->ns_next)
        e->ns_next->ns_prev = e->ns_prev;
    e->ns = NULL;
    if (n->head)
        return;
    for (pp = &t->nsb[hash_str(n->ns) & (t->nnsb - 1)]; *pp; pp = &(*pp)->next) {
        if (*pp == n) {
            *pp = n->next;
            break;
        }
    }
    free(n->ns);
    free(n);
    t->nns--;
}

/*
 * Stores obj (taken) under key.  *old receives the object it replaced (the
 * caller's now) or NULL.  Returns -1 when out of memory, obj then freed.
 */
static int table_put(struct table *t, const char *key, cJSON *obj, cJSON **old)
{
    struct sent *e = table_find(t, key);
    struct nsidx *n;
    char ns[1024];
    size_t h;

    *old = NULL;
    if (e) {
        *old = e->obj;
        e->obj = obj;
        t->objs[e->pos] = obj;
        return 0;
    }
    key_ns(key, ns, sizeof ns);
    if ((t->count + 1 > t->nb - t->nb / 4 && grow_keys(t)) ||
        (t->nns + 1 > t->nnsb - t->nnsb / 4 && grow_ns(t)) ||
        (t->count == t->capobjs && grow_objs(t)))
        goto nomem;
    if (!(e = calloc(1, sizeof *e)) || !(e->key = strdup(key))) {
        free(e);
        goto nomem;
    }
    if (!(n = ns_find(t, ns))) {
        if (!(n = calloc(1, sizeof *n)) || !(n->ns = strdup(ns))) {
            free(n);
            free(e->key);
            free(e);
            goto nomem;
        }
        h = hash_str(ns) & (t->nnsb - 1);
        n->next = t->nsb[h];
        t->nsb[h] = n;
        t->nns++;
    }
    e->obj = obj;
    e->ns = n;
    e->ns_next = n->head;
    if (n->head)
        n->head->ns_prev = e;
    n->head = e;
    h = hash_str(key) & (t->nb - 1);
    e->next = t->b[h];
    t->b[h] = e;
    e->pos = t->count;
    t->objs[t->count] = obj;
    t->ents[t->count++] = e;
    return 0;
nomem:
    cJSON_Delete(obj);
    return -1;
}

/* Removes key and returns its object (the caller's now), or NULL. */
static cJSON *table_take(struct table *t, const char *key)
{
    struct sent **pp, *e;
    cJSON *obj;

    if (!t->nb)
        return NULL;
    for (pp = &t->b[hash_str(key) & (t->nb - 1)]; (e = *pp); pp = &e->next) {
        if (!strcmp(e->key, key)) {
            *pp = e->next;
            ns_unlink(t, e);
            obj = e->obj;
            if (e->pos != --t->count) {
                t->objs[e->pos] = t->objs[t->count];
                t->ents[e->pos] = t->ents[t->count];
                t->ents[e->pos]->pos = e->pos;
            }
            free(e->key);
            free(e);
            return obj;
        }
    }
    return NULL;
}

cJSON *inf_store_get(struct inf_store *s, const char *key)
{
    const struct sent *e;
    cJSON *copy = NULL;

    if (!s || !key)
        return NULL;
    pthread_mutex_lock(&s->mu);
    if ((e = table_find(&s->t, key)))
        copy = cJSON_Duplicate(e->obj, 1);
    pthread_mutex_unlock(&s->mu);
    return copy;
}

int inf_store_with(struct inf_store *s, const char *key, int (*fn)(void *ctx, const cJSON *obj),
                   void *ctx)
{
    const struct sent *e;
    int rc = -1;

    if (!s || !key)
        return -1;
    pthread_mutex_lock(&s->mu);
    if ((e = table_find(&s->t, key)))
        rc = fn(ctx, e->obj);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void inf_store_foreach(struct inf_store *s, int (*fn)(void *ctx, const cJSON *obj), void *ctx)
{
    size_t i;

    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->t.nb; i++) {
        const struct sent *e;

        for (e = s->t.b[i]; e; e = e->next)
            if (fn(ctx, e->obj))
                goto out;
    }
out:
    pthread_mutex_unlock(&s->mu);
}

int inf_stores_collect(struct inf_store *const *stores, size_t n, const cJSON ***out,
                       size_t *count)
{
    const cJSON **v = NULL;
    size_t i, len = 0, cap = 0;
    int oom = 0;

    for (i = 0; i < n && !oom; i++) {
        pthread_mutex_lock(&stores[i]->mu);
        if (len + stores[i]->t.count + 1 > cap) {
            const cJSON **nv;
            cap = 2 * (len + stores[i]->t.count + 1);
            if (!(nv = realloc(v, cap * sizeof(*v))))
                oom = 1;
            else
                v = nv;
        }
        if (!oom && stores[i]->t.count) {
            memcpy(v + len, stores[i]->t.objs, stores[i]->t.count * sizeof(*v));
            len += stores[i]->t.count;
        }
        pthread_mutex_unlock(&stores[i]->mu);
    }
    if (!v && !oom && !(v = malloc(sizeof(*v))))
        oom = 1;
    if (oom) {
        free(v);
        v = NULL;
        len = 0;
    }
    *out = v;
    *count = len;
    return oom ? -1 : 0;
}

void inf_store_foreach_ns(struct inf_store *s, const char *ns,
                          int (*fn)(void *ctx, const cJSON *obj), void *ctx)
{
    const struct nsidx *n;
    const struct sent *e;

    pthread_mutex_lock(&s->mu);
    if ((n = ns_find(&s->t, ns ? ns : "")))
        for (e = n->head; e; e = e->ns_next)
            if (fn(ctx, e->obj))
                break;
    pthread_mutex_unlock(&s->mu);
}

size_t inf_store_len(struct inf_store *s)
{
    size_t n;

    pthread_mutex_lock(&s->mu);
    n = s->t.count;
    pthread_mutex_unlock(&s->mu);
    return n;
}

uint64_t inf_store_generation(struct inf_store *s)
{
    uint64_t g;

    pthread_mutex_lock(&s->mu);
    g = s->gen;
    pthread_mutex_unlock(&s->mu);
    return g;
}

/* The writer's side, used by the reflector only. */

static int store_put(struct inf_store *s, const char *key, cJSON *obj, cJSON **old)
{
    int rc;

    pthread_mutex_lock(&s->mu);
    rc = table_put(&s->t, key, obj, old);
    if (!rc)
        s->gen++;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* 1 when the store holds an object under key equal to obj. */
static int store_same(struct inf_store *s, const char *key, const cJSON *obj)
{
    const struct sent *e;
    int same;

    pthread_mutex_lock(&s->mu);
    same = (e = table_find(&s->t, key)) && cJSON_Compare(e->obj, obj, 1);
    pthread_mutex_unlock(&s->mu);
    return same;
}

static cJSON *store_take(struct inf_store *s, const char *key)
{
    cJSON *obj;

    pthread_mutex_lock(&s->mu);
    if ((obj = table_take(&s->t, key)))
        s->gen++;
    pthread_mutex_unlock(&s->mu);
    return obj;
}

enum dd_rc inf_store_put(struct inf_store *s, const cJSON *obj)
{
    char key[1024];
    cJSON *copy, *old;

    if (!s || !inf_key(obj, key, sizeof key))
        return DD_EINVAL;
    if (!(copy = cJSON_Duplicate(obj, 1)) || store_put(s, key, copy, &old))
        return DD_ENOMEM;
    drop(s, old);
    return DD_OK;
}

int inf_store_delete(struct inf_store *s, const char *key)
{
    cJSON *old;

    if (!s || !key || !(old = store_take(s, key)))
        return 0;
    drop(s, old);
    return 1;
}

/* Publishes t (taken) as the store's contents and hands the previous ones back in *old
 * for the caller to diff and release.  The new table is built outside the lock, so
 * readers wait only for the swap. */
static void store_swap(struct inf_store *s, struct table *t, struct table *old)
{
    pthread_mutex_lock(&s->mu);
    *old = s->t;
    s->t = *t;
    s->gen++;
    pthread_mutex_unlock(&s->mu);
    memset(t, 0, sizeof *t);
}

/* ---- reflector --------------------------------------------------------- */

#define BACKOFF_INIT_MS 800     /* client-go's defaultBackoffInit */
#define BACKOFF_MAX_MS 30000    /* defaultBackoffMax */
#define BACKOFF_RESET_MS 120000 /* "If we don't backoff for 2min, assume API server is healthy" */
#define SHORT_WATCH_MS 1000     /* a watch ending sooner, without events, is suspect */
#define LIST_MAX_PAGES 10000    /* as kube_list: a server that never ends a list is an error */

struct inf_reflector {
    pthread_t th;
    struct kube_client *c;      /* used by the reflector thread only (and interrupt) */
    char *path, *selector;      /* owned copies */
    long page_size;
    int min_to, max_to;         /* watch timeout range, seconds */
    struct inf_store *store;    /* borrowed */
    struct inf_handlers h;
    void (*transform)(cJSON *obj); /* optional */
    int (*keep)(const cJSON *obj); /* optional */

    pthread_mutex_t mu;         /* with cond: lets stop cut a backoff sleep short */
    pthread_cond_t cond;
    atomic_int stop;
    atomic_int synced;
    atomic_ulong watch_restarts;
    atomic_ulong relists;

    /* Reflector thread only: */
    char *rv;                   /* last resourceVersion seen; NULL before the first list */
    unsigned long events;       /* events in the current watch */
    int64_t backoff_ms;         /* next backoff step; 0 after a reset */
    int64_t last_backoff_at;    /* ms */
    uint64_t rng;
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t rng_next(struct inf_reflector *r)
{
    uint64_t x = r->rng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return r->rng = x;
}

static void set_rv(struct inf_reflector *r, const char *rv)
{
    char *copy;

    if (!rv || !rv[0] || (r->rv && !strcmp(r->rv, rv)))
        return;
    /* Out of memory keeps the older version: the watch then merely replays. */
    if ((copy = strdup(rv))) {
        free(r->rv);
        r->rv = copy;
    }
}

/* Sleeps unless stopped; 0 when the full time passed. */
static int nap(struct inf_reflector *r, int64_t ms)
{
    struct timespec ts;
    int64_t until = mono_ms() + ms;
    int stopped;

    ts.tv_sec = until / 1000;
    ts.tv_nsec = (long)(until % 1000) * 1000000L;
    pthread_mutex_lock(&r->mu);
    while (!atomic_load(&r->stop) && mono_ms() < until)
        pthread_cond_timedwait(&r->cond, &r->mu, &ts);
    stopped = atomic_load(&r->stop);
    pthread_mutex_unlock(&r->mu);
    return stopped;
}

/* client-go's exponential backoff manager: 800 ms doubling to 30 s, jitter 1.0. */
static void backoff(struct inf_reflector *r)
{
    int64_t now = mono_ms(), d;

    if (!r->backoff_ms || now - r->last_backoff_at > BACKOFF_RESET_MS)
        r->backoff_ms = BACKOFF_INIT_MS;
    d = r->backoff_ms + (int64_t)(rng_next(r) % (uint64_t)(r->backoff_ms + 1));
    if (d > BACKOFF_MAX_MS)
        d = BACKOFF_MAX_MS;
    r->backoff_ms = r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2;
    r->last_backoff_at = now;
    nap(r, d);
}

static void call_add(struct inf_reflector *r, const cJSON *obj)
{
    if (r->h.on_add)
        r->h.on_add(r->h.ctx, obj);
}

static void call_update(struct inf_reflector *r, const cJSON *old, const cJSON *obj)
{
    if (r->h.on_update)
        r->h.on_update(r->h.ctx, old, obj);
}

static void call_delete(struct inf_reflector *r, const cJSON *obj)
{
    if (r->h.on_delete)
        r->h.on_delete(r->h.ctx, obj);
}

/* Appends s percent-encoded (a query value) at buf[*len]; -1 when it does not fit. */
static int add_escaped(char *buf, size_t size, size_t *len, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';

        if (*len + 4 > size)
            return -1;
        if (plain) {
            buf[(*len)++] = (char)ch;
        } else {
            buf[(*len)++] = '%';
            buf[(*len)++] = hex[ch >> 4];
            buf[(*len)++] = hex[ch & 15];
        }
    }
    buf[*len] = '\0';
    return 0;
}

/* A string member of a list page (kind, apiVersion) or of its metadata, or NULL. */
static const char *page_str(const cJSON *page, const char *meta_key, const char *key)
{
    return meta_key ? dd_json_str(page, meta_key, key, NULL) : dd_json_str(page, key, NULL);
}

/*
 * Moves one list page's items into t: each gets the list's apiVersion and kind when it
 * lacks them (the API server leaves them out of items), then the transform; unwanted
 * and nameless items are dropped, and of duplicate keys the last wins.  Kept items are
 * packed (dd_json_pack), as a watched one is.
 */
static enum dd_rc take_page(struct inf_reflector *r, cJSON *page, struct table *t,
                            const char *api_version, const char *kind)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items"), *it, *prev;
    char key[1024];

    while ((it = cJSON_DetachItemFromArray(items, 0))) {
        if (!cJSON_IsObject(it) ||
            (api_version && !cJSON_GetObjectItemCaseSensitive(it, "apiVersion") &&
             !cJSON_AddStringToObject(it, "apiVersion", api_version)) ||
            (kind && !cJSON_GetObjectItemCaseSensitive(it, "kind") &&
             !cJSON_AddStringToObject(it, "kind", kind))) {
            int oom = cJSON_IsObject(it);
            cJSON_Delete(it);
            if (oom)
                return DD_ENOMEM;
            continue;
        }
        if (r->transform)
            r->transform(it);
        if ((r->keep && !r->keep(it)) || !inf_key(it, key, sizeof key)) {
            cJSON_Delete(it);
            continue;
        }
        it = dd_json_pack(it);
        if (table_put(t, key, it, &prev))
            return DD_ENOMEM;
        cJSON_Delete(prev);
    }
    return DD_OK;
}

/*
 * LIST page by page into t (a new table), transforming each page as it arrives, so that
 * at most one page of whole objects is held at a time (a list of thousands of whole pods
 * would be the controller's largest allocation).  *rv receives the list's
 * resourceVersion (continued pages are served from the first page's snapshot).
 */
static enum dd_rc list_into(struct inf_reflector *r, struct table *t, char **rv)
{
    char url[4096], *cont = NULL, *kind = NULL, *api_version = NULL;
    struct kube_status st;
    struct dd_err err;
    enum dd_rc rc = DD_OK;
    const char *s;
    size_t len;
    int npage;

    *rv = NULL;
    for (npage = 0; rc == DD_OK; npage++) {
        cJSON *page = NULL, *items;

        if (npage >= LIST_MAX_PAGES) {
            rc = DD_EIO;
            break;
        }
        len = (size_t)snprintf(url, sizeof url, "%s?limit=%ld%s%s%s", r->path, r->page_size,
                               r->selector && r->selector[0] ? "&" : "",
                               r->selector ? r->selector : "", cont ? "&continue=" : "");
        if (len >= sizeof url || (cont && add_escaped(url, sizeof url, &len, cont))) {
            rc = DD_EINVAL;
            break;
        }
        if ((rc = kube_get(r->c, url, &page, &st, &err)) != DD_OK)
            break;
        items = cJSON_GetObjectItemCaseSensitive(page, "items");
        if (!cJSON_IsObject(page) || (items && !cJSON_IsNull(items) && !cJSON_IsArray(items))) {
            cJSON_Delete(page);
            rc = DD_EPARSE;
            break;
        }
        if (npage == 0) {
            size_t n;
            s = page_str(page, NULL, "kind");
            n = s ? strlen(s) : 0;
            if ((n > 4 && !strcmp(s + n - 4, "List") && !(kind = strndup(s, n - 4))) ||
                ((s = page_str(page, NULL, "apiVersion")) && !(api_version = strdup(s))) ||
                !(*rv = strdup((s = page_str(page, "metadata", "resourceVersion")) ? s : ""))) {
                cJSON_Delete(page);
                rc = DD_ENOMEM;
                break;
            }
        }
        rc = take_page(r, page, t, api_version, kind);
        s = page_str(page, "metadata", "continue");
        if (rc == DD_OK && s && s[0]) {
            if (cont && !strcmp(cont, s)) {
                rc = DD_EIO; /* the server repeated its continue token */
            } else {
                free(cont);
                if (!(cont = strdup(s)))
                    rc = DD_ENOMEM;
            }
        } else if (rc == DD_OK) {
            cJSON_Delete(page);
            break;
        }
        cJSON_Delete(page);
    }
    free(cont);
    free(kind);
    free(api_version);
    if (rc != DD_OK) {
        free(*rv);
        *rv = NULL;
    }
    return rc;
}

static enum dd_rc relist(struct inf_reflector *r)
{
    struct table t, old;
    char *rv = NULL;
    size_t i;
    enum dd_rc rc;

    memset(&t, 0, sizeof t);
    if ((rc = list_into(r, &t, &rv)) != DD_OK) {
        table_release(NULL, &t); /* never published */
        return rc;
    }
    store_swap(r->store, &t, &old);
    /*
     * The store's table is read here without the lock: this thread is its
     * only writer, and readers never change it.
     */
    for (i = 0; i < r->store->t.nb; i++) {
        const struct sent *e;

        for (e = r->store->t.b[i]; e; e = e->next) {
            cJSON *prev = table_take(&old, e->key);

            if (prev)
                call_update(r, prev, e->obj);
            else
                call_add(r, e->obj);
            drop(r->store, prev);
        }
    }
    for (i = 0; i < old.nb; i++) {
        const struct sent *e;

        for (e = old.b[i]; e; e = e->next)
            call_delete(r, e->obj);
    }
    table_release(r->store, &old);
    if (atomic_load(&r->synced))
        atomic_fetch_add(&r->relists, 1);
    free(r->rv);
    r->rv = rv;
    atomic_store(&r->synced, 1);
    return DD_OK;
}

static int on_event(void *ctx, const char *type, cJSON *obj)
{
    struct inf_reflector *r = ctx;
    cJSON *old = NULL;
    char key[1024];

    if (atomic_load(&r->stop)) {
        cJSON_Delete(obj);
        return 1;
    }
    r->events++;
    if (!strcmp(type, "BOOKMARK")) {
        set_rv(r, dd_json_str(obj, "metadata", "resourceVersion", NULL));
        cJSON_Delete(obj);
        return 0;
    }
    if (!inf_key(obj, key, sizeof key)) {
        cJSON_Delete(obj);
        return 0;
    }
    set_rv(r, dd_json_str(obj, "metadata", "resourceVersion", NULL));
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        int deleted = !strcmp(type, "DELETED"), wanted;
        if (r->transform)
            r->transform(obj);
        wanted = !r->keep || r->keep(obj);
        if (deleted || !wanted) {
            /* The event carries the final state; report that, known before or not (an
             * unwanted object only when it was stored). */
            old = store_take(r->store, key);
            if (old || (deleted && wanted))
                call_delete(r, obj);
            drop(r->store, old);
            cJSON_Delete(obj);
            return 0;
        }
        /* What the store keeps of it did not change (a Node's heartbeat, the transform
         * trims it away): the stored object stays, unannounced, so that a snapshot whose
         * model shares it with an older one's may still patch that model (lib/rules/snapshot
         * compares objects by address), and nothing is rebuilt for it. */
        if (store_same(r->store, key, obj)) {
            cJSON_Delete(obj);
            return 0;
        }
        /* obj now belongs to the store; it stays valid here because only we write.  Packed
         * (lib/formats/json.h): a store holds every object of its kind for as long as it
         * lives, and nothing changes a stored object. */
        obj = dd_json_pack(obj);
        if (store_put(r->store, key, obj, &old))
            return 0;
        if (old)
            call_update(r, old, obj);
        else
            call_add(r, obj);
        drop(r->store, old);
    } else {
        cJSON_Delete(obj);
    }
    return 0;
}

static void *reflector_main(void *arg)
{
    struct inf_reflector *r = arg;
    struct kube_status st;
    struct dd_err err;
    int need_list = 1, fresh_list = 0, span;
    int64_t t0;
    enum dd_rc rc;

    while (!atomic_load(&r->stop)) {
        if (need_list) {
            if (relist(r) != DD_OK) {
                if (!atomic_load(&r->stop))
                    backoff(r);
                continue;
            }
            need_list = 0;
            fresh_list = 1;
        }
        span = r->max_to - r->min_to;
        r->events = 0;
        t0 = mono_ms();
        rc = kube_watch(r->c, r->path, r->selector, r->rv,
                        r->min_to + (int)(rng_next(r) % (uint64_t)(span + 1)), 1, on_event, r,
                        &st, &err);
        if (atomic_load(&r->stop))
            break;
        atomic_fetch_add(&r->watch_restarts, 1);
        if (rc == DD_ENOTFOUND && st.http == 410) {
            need_list = 1;
            if (fresh_list && !r->events)
                backoff(r);
            fresh_list = 0;
            continue;
        }
        fresh_list = 0;
        if (rc == DD_OK && (r->events || mono_ms() - t0 >= SHORT_WATCH_MS))
            continue;
        backoff(r);
    }
    return NULL;
}

struct inf_reflector *inf_reflector_start(const struct kube_config *cfg,
                                          const struct inf_reflector_opts *opts,
                                          struct inf_store *store,
                                          const struct inf_handlers *handlers,
                                          struct dd_err *err)
{
    struct inf_reflector *r;
    pthread_condattr_t ca;
    struct timespec ts;

    if (!cfg || !opts || !opts->path || opts->path[0] != '/' || !store) {
        dd_failf(err, DD_EINVAL, "inf_reflector_start: needs a configuration, a store and a "
                                 "collection path starting with '/'");
        return NULL;
    }
    if (!(r = calloc(1, sizeof *r)) || !(r->path = strdup(opts->path)) ||
        (opts->selector && !(r->selector = strdup(opts->selector)))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        goto fail;
    }
    if (!(r->c = kube_client_new(cfg, opts->client, err)))
        goto fail;
    r->page_size = opts->page_size > 0 ? opts->page_size : 500;
    r->transform = opts->transform;
    r->keep = opts->keep;
    r->min_to = opts->min_watch_timeout_s > 0 ? opts->min_watch_timeout_s : 300;
    r->max_to = opts->max_watch_timeout_s > 0 ? opts->max_watch_timeout_s : 600;
    if (r->max_to < r->min_to)
        r->max_to = r->min_to;
    r->store = store;
    if (handlers)
        r->h = *handlers;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)r;
    if (!r->rng)
        r->rng = 0x9E3779B97F4A7C15ULL;
    atomic_init(&r->stop, 0);
    atomic_init(&r->synced, 0);
    atomic_init(&r->watch_restarts, 0);
    atomic_init(&r->relists, 0);
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->th, NULL, reflector_main, r)) {
        dd_failf(err, DD_ENOMEM, "cannot start the reflector thread for %s", opts->path);
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->mu);
        goto fail;
    }
    return r;
fail:
    if (r) {
        kube_client_free(r->c);
        free(r->path);
        free(r->selector);
        free(r);
    }
    return NULL;
}

int inf_reflector_synced(struct inf_reflector *r)
{
    return atomic_load(&r->synced);
}

unsigned long inf_reflector_watch_restarts(struct inf_reflector *r)
{
    return atomic_load(&r->watch_restarts);
}

unsigned long inf_reflector_relists(struct inf_reflector *r)
{
    return atomic_load(&r->relists);
}

void inf_reflector_stop(struct inf_reflector *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->stop, 1);
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
    kube_client_interrupt(r->c);
    pthread_join(r->th, NULL);
    kube_client_free(r->c);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->mu);
    free(r->path);
    free(r->selector);
    free(r->rv);
    free(r);
}
