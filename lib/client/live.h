/*
 * live.h - one live cache of a cluster, shared by the controller and the webhook.
 *
 * A cache watches a list of resources (one reflector and store each, lib/client/informer:
 * objects trimmed and filtered as they arrive) and turns their changes into views: a
 * builder thread calls the consumer's build hook after each burst of changes (it waits
 * settle_ms after the first change of a quiet spell, and rests rest_ms between builds),
 * publishes the result as the current view, and tells the consumer so.  Readers on any
 * thread take a reference to the current view (live_view_get) and drop it when done; a
 * view is freed with its last reference.
 *
 * Views may borrow the stores' objects instead of copying them: an object a store lets go
 * of (replaced, deleted) waits in a graveyard until every view built before it went is
 * freed.  A view may even be carried into later builds (the controller's snapshot reuses
 * what did not change): the dropped hook, called when the object goes, is the consumer's
 * cue to rebuild what held it; a drop the hook sees before a build starts is seen by that
 * build, one after it is covered by the graveyard.
 *
 * What is the consumer's: what a view is (opaque here), which changes need one (changed),
 * what to do once one is published (published, after).  What is the cache's: the threads,
 * the locking, the reference counts, readiness (every informer listed once) and the
 * metrics of the builds and watches.
 *
 * Threads: one per reflector, one builder.  Hooks run on those threads; those said to run
 * "locked" hold the cache's lock and must not call back into the cache (but may take locks
 * of their own, which then always nest inside it).
 */
#ifndef DD_LIVE_H
#define DD_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "err.h"
#include "client/informer.h"
#include "client/kube.h"

/* A watched resource.  Strings are borrowed and must outlive the cache. */
struct live_resource {
    const char *group;           /* "" for the core API */
    const char *version;
    const char *resource;        /* plural */
    const char *selector;        /* query fragment for LIST and WATCH, or NULL */
    int (*keep)(const cJSON *obj); /* the informer's filter (after the transform); NULL keeps
                                    every object */
};

struct live;

/* The consumer's hooks; any may be NULL but build and free_view.  ctx is theirs. */
struct live_hooks {
    void *ctx;
    /* Reflector thread, after resource r's store changed: old is NULL for an add, obj NULL
     * for a delete (both borrowed for the call).  1 when views read the change (the cache
     * turns dirty and a build follows), 0 when not.  NULL: every change counts. */
    int (*changed)(void *ctx, size_t r, const cJSON *old, const cJSON *obj);
    /* Locked, when the cache turns dirty: a build is due (the webhook's waiting room learns
     * that the current view is behind). */
    void (*dirtied)(void *ctx);
    /* Locked, when resource r's store lets go of obj (it is freed once no view built before
     * now is alive): 1 when a view still holding it would be carried into the next build
     * (the cache turns dirty; the consumer rebuilds what held it), 0 when not. */
    int (*dropped)(void *ctx, size_t r, const cJSON *obj);
    /* Builder thread: a new view, or NULL on failure (err says why; the current view stays
     * and a build is tried again).  cur is the current view (NULL before the first),
     * borrowed for the call.  The stores are read through live_store / live_collect.
     * LIVE_AFRESH (only when cur is not NULL): the view is better built without cur alive
     * (it would cost two of them at once); the cache lets cur go, readers get NULL until the
     * next view, and build is called again with cur NULL. */
    void *(*build)(void *ctx, struct live *lc, const void *cur, struct dd_err *err);
    void (*free_view)(void *ctx, void *view);
    /* Locked, as view becomes the current one; caught_up is 1 when no change came since its
     * build began (the view holds every change seen so far). */
    void (*published)(void *ctx, const void *view, int caught_up);
    /* Builder thread, after publishing, not locked: the consumer's follow-up with the new
     * view (borrowed for the call); its time counts in the rest between builds. */
    void (*after)(void *ctx, const void *view);
    /* Builder thread, every idle_ms while nothing is dirty: 1 to build anyway. */
    int (*idle)(void *ctx);
};

struct live_opts {
    const struct live_resource *res; /* borrowed, must outlive the cache */
    size_t nres;                 /* at most LIVE_MAX_RESOURCES */
    void (*transform)(cJSON *obj); /* the informers' transform (lib/model/keep's keep_trim); NULL:
                                    none */
    long page_size;              /* objects per LIST page; 0: the informer's default */
    int settle_ms;               /* after the first change of a quiet spell, wait for the rest
                                    of its burst */
    int rest_ms;                 /* at least this long from a build's end to the next one's
                                    start (the after hook's time included) */
    int idle_ms;                 /* how often idle is asked while nothing is dirty; 0: never */
    int after_synced;            /* no build before every informer has listed once (a view
                                    with the pods but not yet their claims would say the
                                    claims do not exist) */
    int trim_heap;               /* give the heap back to the system after each build, and
                                    map big allocations (LIVE_MMAP_MIN and up) rather than
                                    take them from the heap (mallopt: for the process) */
    const char *who;             /* for messages: "dra-doctor WHO: ..." */
    const char *prefix;          /* metric name prefix, e.g. "dra_doctor_" */
    const char *noun;            /* what a view is called in metric names, e.g. "snapshot" */
};

#define LIVE_MAX_RESOURCES 32
#define LIVE_AFRESH ((void *)&live_afresh) /* see live_hooks.build */
#define LIVE_AFRESH_WAIT_MS 1000 /* how long the builder waits for readers to put the view
                                    it lets go, before it builds anyway */
extern char live_afresh;
#define LIVE_MMAP_MIN (128 * 1024) /* trim_heap: allocations this big or bigger are mapped */

/* A cache, not started: no threads yet.  opts and hooks are copied.  NULL on ENOMEM or a
 * bad option (err). */
struct live *live_new(const struct live_opts *opts, const struct live_hooks *hooks,
                      struct dd_err *err);

/* Starts the reflectors (with clients made from cfg, copied) and the builder.  0, or -1
 * (err names the resource that could not be watched).  cfg NULL starts the builder alone:
 * the caller fills the stores (inf_store_put) and marks the cache dirty (tests). */
int live_start(struct live *lc, const struct kube_config *cfg, struct dd_err *err);

/* Instead of live_start: view (taken) is the current view for good, with nothing watched
 * (the webhook's --objects). */
void live_start_fixed(struct live *lc, void *view);

/* Stops the builder and the reflectors; the current view stays readable.  Idempotent. */
void live_stop(struct live *lc);

/* Stops it, then frees the stores, the current view (readers must have put theirs) and
 * the graveyard.  lc may be NULL. */
void live_free(struct live *lc);

/*
 * A reference to the current view (NULL before the first), dropped with live_view_put.
 * with, when not NULL, is called locked with the view (NULL too) before the lock is
 * released: what the consumer reads together with the view (the webhook's pending
 * classes) then agrees with it.
 */
void *live_view_get(struct live *lc, void (*with)(void *ctx, const void *view), void *ctx);
void live_view_put(struct live *lc, void *view);

/* A build is due (the consumer decided so outside a changed hook).  Thread-safe. */
void live_mark_dirty(struct live *lc);

/* Resource r's store (borrowed; the cache owns it).  Its objects stay valid for the views
 * built after they were read, as said above. */
struct inf_store *live_store(struct live *lc, size_t r);

/* Borrowed pointers to every object of every store, in one new array (free it); 0, or -1
 * on ENOMEM.  For a build hook. */
int live_collect(struct live *lc, const cJSON ***objs, size_t *n);

/* 1 once every reflector has listed (always, for a fixed view). */
int live_synced(struct live *lc);

/* Views built so far. */
unsigned long live_builds(struct live *lc);

/*
 * The cache's metrics in Prometheus text, appended at buf[*len] (at most size bytes in
 * all, cut short rather than overflowing): views built, those built afresh (LIVE_AFRESH),
 * their wall and CPU time, the longest, watch events handled, watch restarts, relists.
 */
void live_metrics(struct live *lc, char *buf, size_t size, size_t *len);

#endif
