/*
 * informer.h - a reflector (list + watch loop) feeding an indexed store, per
 * resource, with client-go's contracts (style-by-example.md section 8):
 *
 *   - LIST (paginated), replace the store, then WATCH from the list's
 *     resourceVersion with bookmarks and a random 5-10 minute timeout; on a
 *     normal end resume from the last seen resourceVersion; on 410 Gone
 *     relist; on errors back off (800 ms doubling to 30 s, jittered, reset
 *     after 2 minutes of health).
 *   - Handlers are called with the store already updated, on the reflector's
 *     thread, and must only enqueue keys (no API calls).
 *   - After a relist, objects that vanished are reported as deletes.
 *   - inf_synced is true once the first list has been stored.
 *
 * The store is thread-safe; objects handed out are snapshots the caller owns
 * (inf_store_get returns a copy) or borrows under inf_store_lock.
 */
#ifndef DD_INFORMER_H
#define DD_INFORMER_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "err.h"
#include "kube.h"

struct inf_store;

struct inf_store *inf_store_new(void);
void inf_store_free(struct inf_store *s);

/* "ns/name" (or "name" when cluster-scoped) of obj into buf. */
const char *inf_key(const cJSON *obj, char *buf, size_t size);

/* A deep copy of the object with key, or NULL. Free with cJSON_Delete. */
cJSON *inf_store_get(struct inf_store *s, const char *key);

/* Visits every object under the store's lock; fn must not call back into the store.
 * fn returns nonzero to stop. Objects are borrowed for the call. */
void inf_store_foreach(struct inf_store *s, int (*fn)(void *ctx, const cJSON *obj), void *ctx);

/* Objects whose metadata.namespace is ns (index by namespace). */
void inf_store_foreach_ns(struct inf_store *s, const char *ns,
                          int (*fn)(void *ctx, const cJSON *obj), void *ctx);

size_t inf_store_len(struct inf_store *s);
/* Increases on every change: lets consumers rebuild derived state only when needed. */
uint64_t inf_store_generation(struct inf_store *s);

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
};

struct inf_reflector;

/*
 * Starts a reflector thread with its own client built from cfg (copied).
 * store and handlers are borrowed and must outlive the reflector.
 */
struct inf_reflector *inf_reflector_start(const struct kube_config *cfg,
                                          const struct inf_reflector_opts *opts,
                                          struct inf_store *store,
                                          const struct inf_handlers *handlers,
                                          struct dd_err *err);

int inf_reflector_synced(struct inf_reflector *r);
/* Counters for /metrics. */
unsigned long inf_reflector_watch_restarts(struct inf_reflector *r);
unsigned long inf_reflector_relists(struct inf_reflector *r);

/* Stops the thread (interrupting a running watch) and frees the reflector. */
void inf_reflector_stop(struct inf_reflector *r);

#endif
