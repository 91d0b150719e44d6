/*
 * informer.h - a reflector (list + watch loop) feeding an indexed store, per
 * resource, with client-go's contracts (style-by-example.md section 8):
 *
 *   - LIST (paginated; each page transformed as it arrives), replace the store,
 *     then WATCH from the list's resourceVersion with bookmarks and a random
 *     5-10 minute timeout; on a normal end resume from the last seen
 *     resourceVersion; on 410 Gone relist; on errors back off (800 ms
 *     doubling to 30 s, jittered, reset after 2 minutes of health).
 *   - Handlers are called with the store already updated, on the reflector's
 *     thread, and must only enqueue keys (no API calls).
 *   - After a relist, objects that vanished are reported as deletes.
 *   - inf_reflector_synced is true once the first list has been stored.
 *
 * Departures from client-go, with reasons:
 *   - Every LIST asks for the latest state (resourceVersion ""), not "0":
 *     each page repeats the query and the API server refuses a
 *     resourceVersion together with a continue token.  (Servers from 1.31
 *     serve such consistent lists from the watch cache anyway.)
 *   - A watch that fails for other reasons than 410 resumes from the last
 *     resourceVersion after the backoff instead of relisting: if that
 *     version has meanwhile expired, the server answers 410 and we relist.
 *   - A 410 relists at once, unless it follows a relist without any event
 *     in between (then the backoff applies, so a server that keeps
 *     answering 410 is not hammered).  A watch that ends normally within a
 *     second without events also counts as a failure.
 *
 * The store is thread-safe; objects handed out are snapshots the caller owns
 * (inf_store_get returns a copy) or borrows for the duration of a
 * inf_store_foreach callback.  A store has one writer: the reflector that
 * feeds it (the handlers rely on that to borrow objects without the lock).
 */
#ifndef DD_INFORMER_H
#define DD_INFORMER_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "err.h"
#include "client/kube.h"

struct inf_store;

struct inf_store *inf_store_new(void);
void inf_store_free(struct inf_store *s);

/*
 * Objects the store lets go of (replaced, deleted, dropped at a relist, or
 * at inf_store_free) go to fn (which takes them) instead of being freed, so
 * a consumer that kept borrowing them after inf_store_foreach (the
 * controller's snapshots) can free them once it is done.  Set it before the
 * store is used.
 */
void inf_store_set_drop(struct inf_store *s, void (*fn)(void *ctx, cJSON *obj), void *ctx);

/* "ns/name" (or "name" when cluster-scoped) of obj into buf.  Returns buf, or NULL
 * when obj has no metadata.name or the key does not fit. */
const char *inf_key(const cJSON *obj, char *buf, size_t size);

/* A deep copy of the object with key, or NULL. Free with cJSON_Delete. */
cJSON *inf_store_get(struct inf_store *s, const char *key);

/* Calls fn with the object with key, borrowed under the store's lock (fn must not call
 * back into the store), and returns what fn returns; -1 when there is no such object.
 * Cheaper than inf_store_get when the caller only looks. */
int inf_store_with(struct inf_store *s, const char *key, int (*fn)(void *ctx, const cJSON *obj),
                   void *ctx);

/* Visits every object under the store's lock; fn must not call back into the store.
 * fn returns nonzero to stop. Objects are borrowed for the call. */
void inf_store_foreach(struct inf_store *s, int (*fn)(void *ctx, const cJSON *obj), void *ctx);

/*
 * Borrowed pointers to every object of stores[0..n), in one new array (free
 * it; never NULL on success, even when all are empty).  The objects stay valid only
 * while the stores keep them: a caller that reads them afterwards (a
 * snapshot builder) defers freeing with inf_store_set_drop.  Each store's objects in
 * the order they came, an object replaced in its place (a deletion moves the store's last
 * one there): successive collections differ where the stores changed (lib/rules/snapshot
 * patches its model at those places), and one costs a copy of pointers.  Returns 0, or
 * -1 on ENOMEM.
 */
int inf_stores_collect(struct inf_store *const *stores, size_t n, const cJSON ***out,
                       size_t *count);

/* Objects whose metadata.namespace is ns (index by namespace); ns "" visits the
 * cluster-scoped ones.  Same locking rules as inf_store_foreach. */
void inf_store_foreach_ns(struct inf_store *s, const char *ns,
                          int (*fn)(void *ctx, const cJSON *obj), void *ctx);

/*
 * Inserts obj (copied) under its key, or replaces the object there.  For a
 * store without a reflector (tests, fixtures): a store has one writer.
 * Returns DD_OK, DD_EINVAL when obj has no usable key, or DD_ENOMEM.
 */
enum dd_rc inf_store_put(struct inf_store *s, const cJSON *obj);
/* Removes the object with key; returns 1 when there was one.  One writer, as above. */
int inf_store_delete(struct inf_store *s, const char *key);

size_t inf_store_len(struct inf_store *s);
/* Increases on every change: lets consumers rebuild derived state only when needed. */
uint64_t inf_store_generation(struct inf_store *s);

/* Any callback may be NULL.  Objects are borrowed for the call; old_obj is
 * the stored state the update replaced.  After a relist, on_update is called
 * for every object that was already known (as client-go does), changed or not. */
struct inf_handlers {
    void *ctx;
    void (*on_add)(void *ctx, const cJSON *obj);
    void (*on_update)(void *ctx, const cJSON *old_obj, const cJSON *new_obj);
    void (*on_delete)(void *ctx, const cJSON *obj);
};

struct inf_reflector_opts {
    const char *path;       /* collection path, e.g. /api/v1/pods */
    const char *selector;   /* optional query fragment */
    long page_size;         /* default 500 */
    int min_watch_timeout_s;/* default 300 */
    int max_watch_timeout_s;/* default 600 */
    const struct kube_client_opts *client; /* for the reflector's client; NULL: defaults */
    /* Optional: trims an object before it is stored (client-go's TransformFunc), e.g. drops
     * metadata.managedFields no consumer reads.  Called on the reflector thread, page by
     * page while listing, so a list never holds more than one page of untrimmed objects. */
    void (*transform)(cJSON *obj);
    /* Optional, called after transform: 0 leaves the object out of the store, as if it did
     * not exist (an update that makes a stored object unwanted removes it, reported as a
     * delete; unwanted objects are never reported). */
    int (*keep)(const cJSON *obj);
};

struct inf_reflector;

/*
 * Starts a reflector thread with its own client built from cfg (copied).
 * opts and handlers are copied (opts->path and opts->selector too); store is
 * borrowed and must outlive the reflector.  NULL on failure (err says why:
 * DD_EINVAL without a path, DD_ENOMEM, or what kube_client_new reported).
 */
struct inf_reflector *inf_reflector_start(const struct kube_config *cfg,
                                          const struct inf_reflector_opts *opts,
                                          struct inf_store *store,
                                          const struct inf_handlers *handlers,
                                          struct dd_err *err);

int inf_reflector_synced(struct inf_reflector *r);
/* Counters for /metrics: watches started after the first one, and lists after
 * the first successful one.  Thread-safe. */
unsigned long inf_reflector_watch_restarts(struct inf_reflector *r);
unsigned long inf_reflector_relists(struct inf_reflector *r);

/* Stops the thread (interrupting a running watch) and frees the reflector. */
void inf_reflector_stop(struct inf_reflector *r);

#endif
