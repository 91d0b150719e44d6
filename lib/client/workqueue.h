/*
 * workqueue.h - a rate-limited work queue of string keys ("ns/name"), with
 * client-go's contracts (style-by-example.md section 8):
 *
 *   - A key is in the queue at most once (dirty set): adding it again while
 *     it waits is a no-op.
 *   - A key being processed (between wq_get and wq_done) is never handed to
 *     a second worker; if it is added meanwhile it is queued again on
 *     wq_done, so no change is lost and no key is reconciled concurrently.
 *   - wq_add_rate_limited delays a key by its own exponential backoff
 *     (base 5 ms, doubling, capped at 1000 s) and by an overall token bucket
 *     (10 per second, burst 100), whichever is later; wq_forget resets the
 *     key's backoff after a success.
 *   - wq_shutdown wakes every waiting wq_get.  As in client-go, keys already
 *     ready are still handed out (so wq_get returns 0 once they are gone),
 *     delayed keys are dropped, and adds after shutdown are ignored.
 *   - A key scheduled with wq_add_after that is already scheduled keeps the
 *     earlier of the two ready times; a scheduled key is independent of the
 *     same key being ready now (it is added again when its time comes).
 *
 * Keys are copied.  Keys longer than WQ_KEY_MAX bytes are ignored (a
 * Kubernetes "namespace/name" is at most 63 + 1 + 253 bytes).
 *
 * The clock is injectable, so tests run backoff in virtual time: readiness of
 * delayed keys is judged by the injected clock, while wq_get's timeout is
 * real (monotonic) time, so a test never hangs on a clock that stands still.
 * After advancing an injected clock, call wq_kick so waiting getters look
 * again.
 * Thread-safe: every function may be called from any thread.
 */
#ifndef DD_WORKQUEUE_H
#define DD_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#define WQ_KEY_MAX 512                /* bytes, without the NUL */
#define WQ_KEY_SIZE (WQ_KEY_MAX + 1)  /* a buffer that holds any key */

/* Monotonic milliseconds. */
typedef int64_t (*wq_clock_fn)(void *ctx);

struct wq_opts {
    int64_t base_delay_ms;  /* default 5 */
    int64_t max_delay_ms;   /* default 1000000 (1000 s) */
    double qps;             /* overall bucket refill; default 10 */
    int burst;              /* default 100 */
    wq_clock_fn clock;      /* default CLOCK_MONOTONIC */
    void *clock_ctx;
};

#define WQ_OPTS_INIT { 0, 0, 0, 0, NULL, NULL }

struct wq;

/* opts may be NULL; zero fields take the defaults.  NULL when out of memory. */
struct wq *wq_new(const struct wq_opts *opts);
/* Frees q and every key in it; no other thread may be using q. */
void wq_free(struct wq *q);

void wq_add(struct wq *q, const char *key);
void wq_add_after(struct wq *q, const char *key, int64_t delay_ms);
void wq_add_rate_limited(struct wq *q, const char *key);
void wq_forget(struct wq *q, const char *key);
/* How many times key has been rate-limited since its last wq_forget. */
int wq_num_requeues(struct wq *q, const char *key);

/*
 * Blocks until a key is ready (or timeout_ms passes; -1 waits forever) and
 * copies it into key[0..size).  Returns 1 with a key, 0 on shutdown or
 * timeout.  The caller must call wq_done with the same key.  size must be at
 * least WQ_KEY_SIZE; a smaller buffer is a usage error and returns 0 at once.
 */
int wq_get(struct wq *q, char *key, size_t size, int64_t timeout_ms);
void wq_done(struct wq *q, const char *key);

/* Distinct keys waiting: ready, delayed, or re-added while being processed. */
size_t wq_len(struct wq *q);
void wq_shutdown(struct wq *q);

/* Wakes every waiting wq_get to re-read the clock (for injected clocks). */
void wq_kick(struct wq *q);

#endif
