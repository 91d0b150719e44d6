/*
 * live.c - one live cache of a cluster (see live.h).
 *
 * One lock guards the views (current one, references), the dirty flag and the graveyard.
 * The graveyard follows epochs: every view gets a number when its build begins; an object
 * a store lets go of is stamped with the newest number so far, and is freed once no view
 * with a number at most its stamp is alive (a view built later cannot have read it).
 */
#include "client/live.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_VIEWS 256          /* views alive at once (readers hold old ones); past it the
                                  builder waits */
#define RETRY_MS 1000          /* after a failed build */
#define SYNC_POLL_MS 50        /* while waiting for the first lists */

/* A view and its references: the current one holds one, each reader one. */
struct vref {
    void *view;                /* NULL while its build runs */
    uint64_t id;               /* its epoch */
    int refs;
};

struct grave {
    cJSON *obj;
    uint64_t epoch;
};

/* A reflector's handler context: which resource. */
struct watch {
    struct live *lc;
    size_t r;
};

struct live {
    struct live_opts o;
    struct live_hooks h;
    struct inf_store *stores[LIVE_MAX_RESOURCES];
    struct inf_reflector *refl[LIVE_MAX_RESOURCES];
    struct watch watch[LIVE_MAX_RESOURCES];
    int fixed;                 /* live_start_fixed: nothing watched */
    int unwatched;             /* live_start without a configuration: the caller fills the
                                  stores */
    pthread_t builder;
    int have_builder;

    pthread_mutex_t mu;        /* guards everything below */
    pthread_cond_t cv;         /* the builder's: dirty, stop */
    struct vref views[MAX_VIEWS]; /* alive views; views[cur] the current one */
    size_t nviews;
    long cur;                  /* index into views, or -1 */
    uint64_t epoch;            /* the newest view's number */
    struct grave *graves;
    size_t ngraves, capgraves;
    int dirty, stop;
    int letting_go;            /* the builder waits for a view's readers (let_go) */

    atomic_ulong builds, afresh, build_us, build_cpu_us, build_max_us, events;
};

char live_afresh;

static int64_t clock_us(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (ms > 0 && nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* Caller holds mu. */
static void mark_dirty_locked(struct live *lc)
{
    if (!lc->dirty && lc->h.dirtied)
        lc->h.dirtied(lc->h.ctx);
    lc->dirty = 1;
    pthread_cond_signal(&lc->cv);
}

void live_mark_dirty(struct live *lc)
{
    pthread_mutex_lock(&lc->mu);
    mark_dirty_locked(lc);
    pthread_mutex_unlock(&lc->mu);
}

/* ---- the graveyard ------------------------------------------------------------------ */

/* The stores' drop hook: obj waits until no view that may hold it is alive. */
static void on_drop(void *ctx, cJSON *obj)
{
    struct watch *w = ctx;
    struct live *lc = w->lc;

    pthread_mutex_lock(&lc->mu);
    if (lc->h.dropped && lc->h.dropped(lc->h.ctx, w->r, obj))
        mark_dirty_locked(lc);
    if (lc->nviews) {
        if (lc->ngraves == lc->capgraves) {
            size_t cap = lc->capgraves ? lc->capgraves * 2 : 256;
            struct grave *g = realloc(lc->graves, cap * sizeof(*g));
            if (!g) {
                /* Cannot defer: leaking one object beats freeing one a view may hold. */
                pthread_mutex_unlock(&lc->mu);
                return;
            }
            lc->graves = g;
            lc->capgraves = cap;
        }
        lc->graves[lc->ngraves].obj = obj;
        lc->graves[lc->ngraves++].epoch = lc->epoch;
        obj = NULL;
    }
    pthread_mutex_unlock(&lc->mu);
    cJSON_Delete(obj); /* no view alive: nothing can hold it */
}

/* The graves no alive view may hold, moved to *out (caller frees them unlocked); caller
 * holds mu. */
static size_t take_free_graves(struct live *lc, cJSON ***out)
{
    uint64_t min = UINT64_MAX;
    size_t i, k = 0, n = 0;
    cJSON **v = NULL;

    *out = NULL;
    for (i = 0; i < lc->nviews; i++)
        if (lc->views[i].id < min)
            min = lc->views[i].id;
    for (i = 0; i < lc->ngraves; i++)
        n += lc->graves[i].epoch < min;
    if (!n || !(v = malloc(n * sizeof(*v))))
        return 0;
    n = 0;
    for (i = 0; i < lc->ngraves; i++) {
        /* A view numbered at most the stamp may have read the object before it went. */
        if (lc->graves[i].epoch < min)
            v[n++] = lc->graves[i].obj;
        else
            lc->graves[k++] = lc->graves[i];
    }
    lc->ngraves = k;
    *out = v;
    return n;
}

static void free_graves(cJSON **v, size_t n)
{
    while (n)
        cJSON_Delete(v[--n]);
    free(v);
}

/* ---- views ------------------------------------------------------------------------------ */

static long find_view(const struct live *lc, const void *view)
{
    size_t i;

    for (i = 0; i < lc->nviews; i++)
        if (lc->views[i].view == view)
            return (long)i;
    return -1;
}

/* Drops one reference of views[i]; caller holds mu.  Returns the view to free (then its
 * entry is gone, and the graves it kept alive are moved to *graves), or NULL. */
static void *unref_locked(struct live *lc, long i, cJSON ***graves, size_t *ngraves)
{
    void *view;

    *graves = NULL;
    *ngraves = 0;
    if (i < 0 || --lc->views[i].refs > 0)
        return NULL;
    view = lc->views[i].view;
    lc->views[i] = lc->views[--lc->nviews];
    if (lc->cur == (long)lc->nviews)
        lc->cur = i;
    *ngraves = take_free_graves(lc, graves);
    return view;
}

static void release(struct live *lc, void *view, cJSON **graves, size_t ngraves)
{
    if (view)
        lc->h.free_view(lc->h.ctx, view);
    free_graves(graves, ngraves);
}

void *live_view_get(struct live *lc, void (*with)(void *ctx, const void *view), void *ctx)
{
    void *view = NULL;

    pthread_mutex_lock(&lc->mu);
    if (lc->cur >= 0) {
        lc->views[lc->cur].refs++;
        view = lc->views[lc->cur].view;
    }
    if (with)
        with(ctx, view);
    pthread_mutex_unlock(&lc->mu);
    return view;
}

void live_view_put(struct live *lc, void *view)
{
    cJSON **graves;
    size_t ngraves;
    void *gone;

    if (!view)
        return;
    pthread_mutex_lock(&lc->mu);
    gone = unref_locked(lc, find_view(lc, view), &graves, &ngraves);
    if (gone && lc->letting_go)
        pthread_cond_broadcast(&lc->cv);
    pthread_mutex_unlock(&lc->mu);
    release(lc, gone, graves, ngraves);
}

/* ---- informers -------------------------------------------------------------------------- */

static void changed(struct watch *w, const cJSON *old, const cJSON *obj)
{
    struct live *lc = w->lc;

    atomic_fetch_add(&lc->events, 1);
    if (lc->h.changed && !lc->h.changed(lc->h.ctx, w->r, old, obj))
        return;
    live_mark_dirty(lc);
}

static void h_add(void *ctx, const cJSON *obj) { changed(ctx, NULL, obj); }
static void h_update(void *ctx, const cJSON *a, const cJSON *b) { changed(ctx, a, b); }
static void h_delete(void *ctx, const cJSON *obj) { changed(ctx, obj, NULL); }

int live_synced(struct live *lc)
{
    size_t i;

    if (lc->fixed || lc->unwatched)
        return 1;
    for (i = 0; i < lc->o.nres; i++)
        if (!lc->refl[i] || !inf_reflector_synced(lc->refl[i]))
            return 0;
    return 1;
}

struct inf_store *live_store(struct live *lc, size_t r)
{
    return r < lc->o.nres ? lc->stores[r] : NULL;
}

int live_collect(struct live *lc, const cJSON ***objs, size_t *n)
{
    return inf_stores_collect(lc->stores, lc->o.nres, objs, n);
}

/* ---- the builder ------------------------------------------------------------------------ */

static void timed_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's default clock */
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Waits until a build is due; 0 when stopping.  Called and returns with mu held. */
static int wait_dirty(struct live *lc)
{
    int idle = 0;

    while (!lc->dirty && !lc->stop) {
        idle = 1;
        if (!lc->o.idle_ms || !lc->h.idle) {
            pthread_cond_wait(&lc->cv, &lc->mu);
            continue;
        }
        timed_wait_ms(&lc->cv, &lc->mu, lc->o.idle_ms);
        if (lc->dirty || lc->stop)
            break;
        pthread_mutex_unlock(&lc->mu);
        idle = lc->h.idle(lc->h.ctx);
        pthread_mutex_lock(&lc->mu);
        if (idle)
            mark_dirty_locked(lc);
        idle = 1;
    }
    if (lc->stop)
        return 0;
    /* The first change after a quiet spell rarely comes alone (a claim, then its pod; a
     * kubectl apply of several objects): let the burst arrive. */
    if (idle && lc->o.settle_ms) {
        pthread_mutex_unlock(&lc->mu);
        sleep_ms(lc->o.settle_ms);
        pthread_mutex_lock(&lc->mu);
    }
    return !lc->stop;
}

/*
 * A build asked for LIVE_AFRESH: the current view cur (the builder's reference to it put
 * already) stops being current and goes with its last reader's reference, which the
 * builder waits for (LIVE_AFRESH_WAIT_MS at most: readers hold views for a lookup).  Called
 * and returns with mu held.
 */
static void let_go(struct live *lc, const void *cur)
{
    int64_t until = clock_us(CLOCK_MONOTONIC) + LIVE_AFRESH_WAIT_MS * 1000L;
    cJSON **graves;
    size_t ngraves;
    void *gone;

    if (lc->cur < 0 || lc->views[lc->cur].view != cur)
        return;
    gone = unref_locked(lc, lc->cur, &graves, &ngraves);
    lc->cur = -1;
    if (gone || ngraves) {
        pthread_mutex_unlock(&lc->mu);
        release(lc, gone, graves, ngraves);
        pthread_mutex_lock(&lc->mu);
    }
    lc->letting_go = 1;
    while (!gone && find_view(lc, cur) >= 0 && !lc->stop &&
           clock_us(CLOCK_MONOTONIC) < until)
        timed_wait_ms(&lc->cv, &lc->mu, 50);
    lc->letting_go = 0;
}

/* The build asked for LIVE_AFRESH: the builder's reference to cur goes, then cur as the
 * current view (let_go), and the view is built again without it.  NULL (err) when it cannot
 * be, or when the cache is stopping. */
static void *afresh(struct live *lc, const void *cur, struct dd_err *err)
{
    cJSON **graves;
    size_t ngraves;
    void *gone, *v;
    int stopping;

    if (!cur) {
        dd_failf(err, DD_EINVAL, "the build hook asked for LIVE_AFRESH without a view");
        return NULL;
    }
    pthread_mutex_lock(&lc->mu);
    gone = unref_locked(lc, find_view(lc, cur), &graves, &ngraves);
    if (gone || ngraves) {
        pthread_mutex_unlock(&lc->mu);
        release(lc, gone, graves, ngraves);
        pthread_mutex_lock(&lc->mu);
    }
    if (!gone)
        let_go(lc, cur);
    stopping = lc->stop;
    pthread_mutex_unlock(&lc->mu);
    if (stopping)
        return NULL;
    atomic_fetch_add(&lc->afresh, 1);
    v = lc->h.build(lc->h.ctx, lc, NULL, err);
    if (v != LIVE_AFRESH)
        return v;
    dd_failf(err, DD_EINVAL, "the build hook asked for LIVE_AFRESH without a view");
    return NULL;
}

static void *builder(void *arg)
{
    struct live *lc = arg;

    pthread_mutex_lock(&lc->mu);
    while (wait_dirty(lc)) {
        struct dd_err err;
        cJSON **graves;
        size_t ngraves;
        int64_t t0, cpu0, took;
        void *cur = NULL, *v, *gone;
        long slot, old;
        int caught_up;

        if ((lc->o.after_synced && !live_synced(lc)) || lc->nviews == MAX_VIEWS) {
            pthread_mutex_unlock(&lc->mu);
            sleep_ms(SYNC_POLL_MS);
            pthread_mutex_lock(&lc->mu);
            continue; /* still dirty */
        }
        /* What changed before this point is in the build; later changes make it dirty
         * again.  The view is registered first, so what the stores drop from now on waits
         * for it. */
        lc->dirty = 0;
        slot = (long)lc->nviews++;
        lc->views[slot] = (struct vref){ NULL, ++lc->epoch, 1 };
        if (lc->cur >= 0) {
            cur = lc->views[lc->cur].view;
            lc->views[lc->cur].refs++;
        }
        pthread_mutex_unlock(&lc->mu);

        t0 = clock_us(CLOCK_MONOTONIC);
        cpu0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
        dd_err_clear(&err);
        v = lc->h.build(lc->h.ctx, lc, cur, &err);
        if (v == LIVE_AFRESH) {
            v = afresh(lc, cur, &err);
            cur = NULL;
        }
        took = clock_us(CLOCK_MONOTONIC) - t0;
        if (v) {
            atomic_fetch_add(&lc->builds, 1);
            atomic_fetch_add(&lc->build_us, (unsigned long)took);
            atomic_fetch_add(&lc->build_cpu_us,
                             (unsigned long)(clock_us(CLOCK_THREAD_CPUTIME_ID) - cpu0));
            if ((unsigned long)took > atomic_load(&lc->build_max_us))
                atomic_store(&lc->build_max_us, (unsigned long)took);
        }

        pthread_mutex_lock(&lc->mu);
        slot = find_view(lc, NULL);
        gone = unref_locked(lc, cur ? find_view(lc, cur) : -1, &graves, &ngraves);
        if (gone || ngraves) {
            pthread_mutex_unlock(&lc->mu);
            release(lc, gone, graves, ngraves);
            pthread_mutex_lock(&lc->mu);
            slot = find_view(lc, NULL);
        }
        if (!v) {
            int had = lc->cur >= 0, stopping = lc->stop;
            /* The number is given up; what waited for it may go. */
            unref_locked(lc, slot, &graves, &ngraves);
            mark_dirty_locked(lc);
            pthread_mutex_unlock(&lc->mu);
            free_graves(graves, ngraves);
            if (!stopping) {
                fprintf(stderr, "dra-doctor %s: %s; %s\n", lc->o.who, err.msg,
                        had ? "keeping the previous view" : "no view until the next build");
                sleep_ms(RETRY_MS);
            }
            pthread_mutex_lock(&lc->mu);
            continue;
        }
        lc->views[slot].view = v;
        old = lc->cur;
        lc->cur = slot;
        caught_up = !lc->dirty;
        if (lc->h.published)
            lc->h.published(lc->h.ctx, v, caught_up);
        gone = unref_locked(lc, old, &graves, &ngraves);
        pthread_mutex_unlock(&lc->mu);
        release(lc, gone, graves, ngraves);

        t0 = clock_us(CLOCK_MONOTONIC);
        if (lc->h.after)
            lc->h.after(lc->h.ctx, v);
        /* A build frees about as much as it allocates: give it back rather than keep each
         * build's peak resident. */
        if (lc->o.trim_heap)
            malloc_trim(0);
        /* Rest, so that a burst of changes makes one more view, not dozens. */
        took = (clock_us(CLOCK_MONOTONIC) - t0) / 1000;
        if (took < lc->o.rest_ms)
            sleep_ms(lc->o.rest_ms - took);
        pthread_mutex_lock(&lc->mu);
    }
    pthread_mutex_unlock(&lc->mu);
    return NULL;
}

/* ---- life ---------------------------------------------------------------------------- */

struct live *live_new(const struct live_opts *opts, const struct live_hooks *hooks,
                      struct dd_err *err)
{
    struct live *lc;
    size_t i;

    if (opts->nres > LIVE_MAX_RESOURCES || !hooks->build || !hooks->free_view) {
        dd_failf(err, DD_EINVAL, "a live cache needs a build and a free hook, and at most %d "
                 "resources", LIVE_MAX_RESOURCES);
        return NULL;
    }
    if (!(lc = calloc(1, sizeof(*lc)))) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    lc->o = *opts;
    lc->h = *hooks;
    if (!lc->o.who)
        lc->o.who = "cache";
    if (!lc->o.prefix)
        lc->o.prefix = "dra_doctor_";
    if (!lc->o.noun)
        lc->o.noun = "view";
    /* A view's big arrays (a model's, its findings', its indexes') come and go with it.  From
     * the heap, each leaves a hole the long-lived cached objects allocated meanwhile keep
     * open: 59 MB of a 284 MB heap were free in the 50,000-pod bench.  At a fixed threshold
     * glibc maps them instead (its own threshold rises to the biggest freed, up to 32 MiB),
     * and unmaps them when they go. */
    if (lc->o.trim_heap)
        mallopt(M_MMAP_THRESHOLD, LIVE_MMAP_MIN);
    lc->cur = -1;
    pthread_mutex_init(&lc->mu, NULL);
    pthread_cond_init(&lc->cv, NULL);
    lc->dirty = 1; /* a first view even if every store stays empty */
    for (i = 0; i < lc->o.nres; i++) {
        lc->watch[i].lc = lc;
        lc->watch[i].r = i;
        if (!(lc->stores[i] = inf_store_new())) {
            live_free(lc);
            dd_failf(err, DD_ENOMEM, "out of memory");
            return NULL;
        }
        inf_store_set_drop(lc->stores[i], on_drop, &lc->watch[i]);
    }
    return lc;
}

int live_start(struct live *lc, const struct kube_config *cfg, struct dd_err *err)
{
    struct inf_handlers hs;
    char path[256];
    size_t i;

    lc->unwatched = !cfg;
    for (i = 0; cfg && i < lc->o.nres; i++) {
        const struct live_resource *r = &lc->o.res[i];
        struct inf_reflector_opts ro;

        memset(&ro, 0, sizeof(ro));
        kube_path(path, sizeof(path), r->group, r->version, r->resource, NULL, NULL, NULL);
        ro.path = path;
        ro.selector = r->selector;
        ro.transform = lc->o.transform;
        ro.keep = r->keep;
        ro.page_size = lc->o.page_size;
        hs = (struct inf_handlers){ &lc->watch[i], h_add, h_update, h_delete };
        if (!(lc->refl[i] = inf_reflector_start(cfg, &ro, lc->stores[i], &hs, err))) {
            char what[sizeof(err->msg)];
            snprintf(what, sizeof(what), "%s", err->msg);
            dd_failf(err, err->rc, "watching %s: %s", r->resource, what);
            return -1;
        }
    }
    if (pthread_create(&lc->builder, NULL, builder, lc)) {
        dd_failf(err, DD_ENOMEM, "cannot start the builder thread");
        return -1;
    }
    lc->have_builder = 1;
    return 0;
}

void live_start_fixed(struct live *lc, void *view)
{
    void *gone;
    cJSON **graves;
    size_t ngraves;
    long old;

    pthread_mutex_lock(&lc->mu);
    lc->fixed = 1;
    lc->dirty = 0;
    old = lc->cur;
    lc->views[lc->nviews] = (struct vref){ view, ++lc->epoch, 1 };
    lc->cur = (long)lc->nviews++;
    if (lc->h.published)
        lc->h.published(lc->h.ctx, view, 1);
    gone = unref_locked(lc, old, &graves, &ngraves);
    pthread_mutex_unlock(&lc->mu);
    release(lc, gone, graves, ngraves);
    atomic_fetch_add(&lc->builds, 1);
}

void live_stop(struct live *lc)
{
    size_t i;

    if (!lc)
        return;
    pthread_mutex_lock(&lc->mu);
    lc->stop = 1;
    pthread_cond_broadcast(&lc->cv);
    pthread_mutex_unlock(&lc->mu);
    if (lc->have_builder)
        pthread_join(lc->builder, NULL);
    lc->have_builder = 0;
    for (i = 0; i < lc->o.nres; i++) {
        inf_reflector_stop(lc->refl[i]);
        lc->refl[i] = NULL;
    }
}

void live_free(struct live *lc)
{
    cJSON **graves;
    size_t i, ngraves;
    void *gone;

    if (!lc)
        return;
    live_stop(lc);
    /* The current view goes first: the stores' objects it holds are then freed at once. */
    pthread_mutex_lock(&lc->mu);
    gone = unref_locked(lc, lc->cur, &graves, &ngraves);
    lc->cur = -1;
    pthread_mutex_unlock(&lc->mu);
    release(lc, gone, graves, ngraves);
    for (i = 0; i < lc->o.nres; i++)
        inf_store_free(lc->stores[i]);
    /* Views a reader still held would be a bug of the consumer's; their graves go too. */
    for (i = 0; i < lc->ngraves; i++)
        cJSON_Delete(lc->graves[i].obj);
    free(lc->graves);
    pthread_cond_destroy(&lc->cv);
    pthread_mutex_destroy(&lc->mu);
    free(lc);
}

unsigned long live_builds(struct live *lc)
{
    return atomic_load(&lc->builds);
}

void live_metrics(struct live *lc, char *buf, size_t size, size_t *len)
{
    const char *p = lc->o.prefix, *n = lc->o.noun;
    unsigned long restarts = 0, relists = 0;
    size_t i;

    for (i = 0; i < lc->o.nres; i++)
        if (lc->refl[i]) {
            restarts += inf_reflector_watch_restarts(lc->refl[i]);
            relists += inf_reflector_relists(lc->refl[i]);
        }
#define OUT(...)                                                                                \
    (*len += *len < size ? (size_t)snprintf(buf + *len, size - *len, __VA_ARGS__) : 0)
    OUT("# HELP %s%ss_total Views of the caches built (%ss).\n# TYPE %s%ss_total counter\n"
        "%s%ss_total %lu\n", p, n, n, p, n, p, n, atomic_load(&lc->builds));
    OUT("# HELP %s%ss_afresh_total Views built after the current one was let go (the build "
        "asked for it: two views at once would cost too much).\n"
        "# TYPE %s%ss_afresh_total counter\n%s%ss_afresh_total %lu\n", p, n, p, n, p, n,
        atomic_load(&lc->afresh));
    OUT("# HELP %s%s_build_seconds_total Time spent building %ss.\n"
        "# TYPE %s%s_build_seconds_total counter\n%s%s_build_seconds_total %.6f\n", p, n, n, p,
        n, p, n, atomic_load(&lc->build_us) / 1e6);
    OUT("# HELP %s%s_build_cpu_seconds_total CPU time of the %s builds.\n"
        "# TYPE %s%s_build_cpu_seconds_total counter\n%s%s_build_cpu_seconds_total %.6f\n", p,
        n, n, p, n, p, n, atomic_load(&lc->build_cpu_us) / 1e6);
    OUT("# HELP %s%s_build_max_seconds The longest %s build.\n"
        "# TYPE %s%s_build_max_seconds gauge\n%s%s_build_max_seconds %.6f\n", p, n, n, p, n, p,
        n, atomic_load(&lc->build_max_us) / 1e6);
    OUT("# HELP %swatch_events_total Watch events (adds, updates, deletes) the caches "
        "handled.\n# TYPE %swatch_events_total counter\n%swatch_events_total %lu\n", p, p, p,
        atomic_load(&lc->events));
    OUT("# HELP %swatch_restarts_total Watches restarted.\n# TYPE %swatch_restarts_total "
        "counter\n%swatch_restarts_total %lu\n", p, p, p, restarts);
    OUT("# HELP %srelists_total Full relists (410 Gone and errors).\n# TYPE %srelists_total "
        "counter\n%srelists_total %lu\n", p, p, p, relists);
#undef OUT
    if (*len >= size)
        *len = size ? size - 1 : 0;
}
