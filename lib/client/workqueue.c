/*
 * workqueue.c - the rate-limited work queue (contracts in workqueue.h).
 *
 * One mutex guards everything; one condition variable (on CLOCK_MONOTONIC)
 * wakes getters.  Invariants, as in client-go's queue.go:
 *   - every key in fifo is in dirty and not in processing;
 *   - a key in dirty and in processing is waiting for wq_done to requeue it;
 *   - delayed holds each scheduled key once, mapped to the ready time of its
 *     live heap entry; heap entries whose time no longer matches are stale
 *     (the key was rescheduled earlier) and are dropped when they surface.
 */
#include "client/workqueue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a small string-keyed hash map ------------------------------------- */

struct hent {
    char *key;          /* owned */
    int64_t val;        /* meaning depends on the map */
    struct hent *next;  /* chain */
};

struct hmap {
    struct hent **b;    /* nbuckets chains */
    size_t nbuckets;    /* power of two, or 0 before the first insert */
    size_t count;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

static struct hent *hmap_find(const struct hmap *m, const char *key)
{
    struct hent *e;

    if (!m->nbuckets)
        return NULL;
    for (e = m->b[hash_str(key) & (m->nbuckets - 1)]; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

static int hmap_grow(struct hmap *m)
{
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16, i;
    struct hent **b = calloc(n, sizeof *b);

    if (!b)
        return -1;
    for (i = 0; i < m->nbuckets; i++) {
        struct hent *e = m->b[i], *next;

        for (; e; e = next) {
            size_t h = hash_str(e->key) & (n - 1);

            next = e->next;
            e->next = b[h];
            b[h] = e;
        }
    }
    free(m->b);
    m->b = b;
    m->nbuckets = n;
    return 0;
}

/* The entry for key, created with val when missing; NULL when out of memory. */
static struct hent *hmap_put(struct hmap *m, const char *key, int64_t val)
{
    struct hent *e = hmap_find(m, key);
    size_t h;

    if (e)
        return e;
    if (m->count + 1 > m->nbuckets - m->nbuckets / 4 && hmap_grow(m))
        return NULL;
    e = malloc(sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e);
        return NULL;
    }
    e->val = val;
    h = hash_str(key) & (m->nbuckets - 1);
    e->next = m->b[h];
    m->b[h] = e;
    m->count++;
    return e;
}

static int hmap_del(struct hmap *m, const char *key)
{
    struct hent **pp, *e;

    if (!m->nbuckets)
        return 0;
    for (pp = &m->b[hash_str(key) & (m->nbuckets - 1)]; (e = *pp); pp = &e->next) {
        if (!strcmp(e->key, key)) {
            *pp = e->next;
            free(e->key);
            free(e);
            m->count--;
            return 1;
        }
    }
    return 0;
}

static void hmap_release(struct hmap *m)
{
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        struct hent *e = m->b[i], *next;

        for (; e; e = next) {
            next = e->next;
            free(e->key);
            free(e);
        }
    }
    free(m->b);
    memset(m, 0, sizeof *m);
}

/* ---- the queue ---------------------------------------------------------- */

struct delayed {
    int64_t ready_ms;   /* injected-clock time at which the key is added */
    uint64_t seq;       /* insertion order, so equal ready times keep FIFO order */
    char *key;          /* owned */
};

struct wq {
    pthread_mutex_t mu;
    pthread_cond_t cond;        /* signalled on add, done, shutdown and kick */

    char **fifo;                /* ring of owned keys, each also in dirty */
    size_t fifo_cap;            /* power of two or 0 */
    size_t fifo_head;           /* index of the oldest key */
    size_t fifo_len;

    struct hmap dirty;          /* keys that need processing */
    struct hmap processing;     /* keys between wq_get and wq_done */
    struct hmap delayed;        /* scheduled key -> ready_ms of its live heap entry */
    struct hmap failures;       /* key -> rate-limited adds since wq_forget */

    struct delayed *heap;       /* min-heap by (ready_ms, seq) */
    size_t heap_len, heap_cap;
    uint64_t seq;

    double tokens;              /* token bucket; negative once reservations run ahead */
    int64_t tokens_at;          /* clock time tokens was computed for */

    int64_t base_ms, max_ms;
    double qps;
    int burst;
    wq_clock_fn clock;
    void *clock_ctx;
    int shutting_down;
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t default_clock(void *ctx)
{
    (void)ctx;
    return mono_ms();
}

static int64_t now_ms(const struct wq *q)
{
    return q->clock(q->clock_ctx);
}

struct wq *wq_new(const struct wq_opts *opts)
{
    struct wq *q = calloc(1, sizeof *q);
    pthread_condattr_t ca;

    if (!q)
        return NULL;
    q->base_ms = opts && opts->base_delay_ms > 0 ? opts->base_delay_ms : 5;
    q->max_ms = opts && opts->max_delay_ms > 0 ? opts->max_delay_ms : 1000000;
    q->qps = opts && opts->qps > 0 ? opts->qps : 10;
    q->burst = opts && opts->burst > 0 ? opts->burst : 100;
    q->clock = opts && opts->clock ? opts->clock : default_clock;
    q->clock_ctx = opts ? opts->clock_ctx : NULL;
    q->tokens = q->burst;
    q->tokens_at = now_ms(q);

    pthread_mutex_init(&q->mu, NULL);
    /* Timeouts must not jump with the wall clock. */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cond, &ca);
    pthread_condattr_destroy(&ca);
    return q;
}

void wq_free(struct wq *q)
{
    size_t i;

    if (!q)
        return;
    for (i = 0; i < q->fifo_len; i++)
        free(q->fifo[(q->fifo_head + i) & (q->fifo_cap - 1)]);
    free(q->fifo);
    for (i = 0; i < q->heap_len; i++)
        free(q->heap[i].key);
    free(q->heap);
    hmap_release(&q->dirty);
    hmap_release(&q->processing);
    hmap_release(&q->delayed);
    hmap_release(&q->failures);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static int key_ok(const char *key)
{
    return key && strnlen(key, WQ_KEY_MAX + 1) <= WQ_KEY_MAX;
}

static int fifo_push(struct wq *q, const char *key)
{
    char *k;

    if (q->fifo_len == q->fifo_cap) {
        size_t n = q->fifo_cap ? q->fifo_cap * 2 : 16, i;
        char **f = malloc(n * sizeof *f);

        if (!f)
            return -1;
        for (i = 0; i < q->fifo_len; i++)
            f[i] = q->fifo[(q->fifo_head + i) & (q->fifo_cap - 1)];
        free(q->fifo);
        q->fifo = f;
        q->fifo_cap = n;
        q->fifo_head = 0;
    }
    if (!(k = strdup(key)))
        return -1;
    q->fifo[(q->fifo_head + q->fifo_len) & (q->fifo_cap - 1)] = k;
    q->fifo_len++;
    return 0;
}

static char *fifo_pop(struct wq *q)
{
    char *k = q->fifo[q->fifo_head];

    q->fifo_head = (q->fifo_head + 1) & (q->fifo_cap - 1);
    q->fifo_len--;
    return k;
}

/* client-go's Add, with q->mu held. */
static void add_locked(struct wq *q, const char *key)
{
    if (q->shutting_down || hmap_find(&q->dirty, key))
        return;
    if (!hmap_put(&q->dirty, key, 0))
        return;
    /* wq_done requeues it; queueing now would hand it to a second worker. */
    if (hmap_find(&q->processing, key))
        return;
    if (fifo_push(q, key)) {
        hmap_del(&q->dirty, key);
        return;
    }
    pthread_cond_signal(&q->cond);
}

static int heap_less(const struct delayed *a, const struct delayed *b)
{
    return a->ready_ms < b->ready_ms || (a->ready_ms == b->ready_ms && a->seq < b->seq);
}

static void heap_swap(struct delayed *a, struct delayed *b)
{
    struct delayed t = *a;

    *a = *b;
    *b = t;
}

static int heap_push(struct wq *q, struct delayed d)
{
    size_t i;

    if (q->heap_len == q->heap_cap) {
        size_t n = q->heap_cap ? q->heap_cap * 2 : 16;
        struct delayed *h = realloc(q->heap, n * sizeof *h);

        if (!h)
            return -1;
        q->heap = h;
        q->heap_cap = n;
    }
    i = q->heap_len++;
    q->heap[i] = d;
    while (i > 0 && heap_less(&q->heap[i], &q->heap[(i - 1) / 2])) {
        heap_swap(&q->heap[i], &q->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return 0;
}

static struct delayed heap_pop(struct wq *q)
{
    struct delayed top = q->heap[0];
    size_t i = 0;

    q->heap[0] = q->heap[--q->heap_len];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < q->heap_len && heap_less(&q->heap[l], &q->heap[m]))
            m = l;
        if (r < q->heap_len && heap_less(&q->heap[r], &q->heap[m]))
            m = r;
        if (m == i)
            break;
        heap_swap(&q->heap[i], &q->heap[m]);
        i = m;
    }
    return top;
}

/* Moves every delayed key whose time has come into the queue. */
static void promote_ready(struct wq *q, int64_t now)
{
    while (q->heap_len && q->heap[0].ready_ms <= now) {
        struct delayed d = heap_pop(q);
        struct hent *e = hmap_find(&q->delayed, d.key);

        if (e && e->val == d.ready_ms) {
            hmap_del(&q->delayed, d.key);
            add_locked(q, d.key);
        }
        free(d.key);
    }
}

static void add_after_locked(struct wq *q, const char *key, int64_t delay_ms)
{
    int64_t now, ready;
    struct hent *e;
    struct delayed d;

    if (q->shutting_down)
        return;
    if (delay_ms <= 0) {
        add_locked(q, key);
        return;
    }
    now = now_ms(q);
    ready = delay_ms > INT64_MAX - now ? INT64_MAX : now + delay_ms;
    e = hmap_find(&q->delayed, key);
    if (e && e->val <= ready)
        return;
    d.ready_ms = ready;
    d.seq = ++q->seq;
    if (!(d.key = strdup(key)))
        return;
    if (heap_push(q, d)) {
        free(d.key);
        return;
    }
    if (!e && !(e = hmap_put(&q->delayed, key, 0)))
        return; /* the entry stays stale and is dropped when it surfaces */
    e->val = ready;
    /* A getter may be sleeping until a later ready time. */
    pthread_cond_broadcast(&q->cond);
}

void wq_add(struct wq *q, const char *key)
{
    if (!key_ok(key))
        return;
    pthread_mutex_lock(&q->mu);
    add_locked(q, key);
    pthread_mutex_unlock(&q->mu);
}

void wq_add_after(struct wq *q, const char *key, int64_t delay_ms)
{
    if (!key_ok(key))
        return;
    pthread_mutex_lock(&q->mu);
    add_after_locked(q, key, delay_ms);
    pthread_mutex_unlock(&q->mu);
}

/* Per-key exponential backoff (client-go's ItemExponentialFailureRateLimiter). */
static int64_t item_delay(struct wq *q, const char *key)
{
    struct hent *e = hmap_put(&q->failures, key, 0);
    int64_t n, d;

    if (!e)
        return q->max_ms;
    n = e->val++;
    d = q->base_ms;
    while (n-- > 0 && d < q->max_ms)
        d = d > q->max_ms / 2 ? q->max_ms : d * 2;
    return d < q->max_ms ? d : q->max_ms;
}

/*
 * The overall bucket (x/time/rate's Reserve): every add takes a token, and
 * when none is left it reserves a future one, so the wait grows by 1/qps per
 * add beyond the burst.
 */
static int64_t bucket_delay(struct wq *q)
{
    int64_t now = now_ms(q);

    if (now > q->tokens_at) {
        q->tokens += (double)(now - q->tokens_at) * q->qps / 1000.0;
        if (q->tokens > q->burst)
            q->tokens = q->burst;
        q->tokens_at = now;
    }
    q->tokens -= 1;
    if (q->tokens >= 0)
        return 0;
    return (int64_t)(-q->tokens * 1000.0 / q->qps + 0.5);
}

void wq_add_rate_limited(struct wq *q, const char *key)
{
    int64_t a, b;

    if (!key_ok(key))
        return;
    pthread_mutex_lock(&q->mu);
    if (!q->shutting_down) {
        a = item_delay(q, key);
        b = bucket_delay(q);
        add_after_locked(q, key, a > b ? a : b);
    }
    pthread_mutex_unlock(&q->mu);
}

void wq_forget(struct wq *q, const char *key)
{
    if (!key_ok(key))
        return;
    pthread_mutex_lock(&q->mu);
    hmap_del(&q->failures, key);
    pthread_mutex_unlock(&q->mu);
}

int wq_num_requeues(struct wq *q, const char *key)
{
    struct hent *e;
    int n = 0;

    if (!key_ok(key))
        return 0;
    pthread_mutex_lock(&q->mu);
    if ((e = hmap_find(&q->failures, key)))
        n = e->val > 0x7fffffff ? 0x7fffffff : (int)e->val;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void ms_to_abs(struct timespec *ts, int64_t abs_ms)
{
    ts->tv_sec = abs_ms / 1000;
    ts->tv_nsec = (long)(abs_ms % 1000) * 1000000L;
}

int wq_get(struct wq *q, char *key, size_t size, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms >= 0 ? mono_ms() + timeout_ms : -1;
    char *k;

    if (size < WQ_KEY_SIZE)
        return 0;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        int64_t wait = -1, rnow;
        struct timespec ts;

        if (!q->shutting_down)
            promote_ready(q, now_ms(q));
        if (q->fifo_len || q->shutting_down)
            break;
        /*
         * Readiness is judged by the injected clock, but sleeping uses the
         * real one: for the default clock the two agree; for a test clock the
         * sleep is merely a bound, and wq_kick wakes us when time moves.
         */
        if (q->heap_len) {
            wait = q->heap[0].ready_ms - now_ms(q);
            if (wait < 1)
                wait = 1;
        }
        rnow = mono_ms();
        if (deadline >= 0) {
            if (rnow >= deadline)
                break;
            if (wait < 0 || deadline - rnow < wait)
                wait = deadline - rnow;
        }
        if (wait < 0) {
            pthread_cond_wait(&q->cond, &q->mu);
        } else {
            ms_to_abs(&ts, rnow > INT64_MAX - wait ? INT64_MAX / 2 : rnow + wait);
            pthread_cond_timedwait(&q->cond, &q->mu, &ts);
        }
    }
    if (!q->fifo_len) {
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    k = fifo_pop(q);
    if (!hmap_put(&q->processing, k, 0)) {
        /* Out of memory: leave the key queued rather than lose or double-process it. */
        q->fifo_head = (q->fifo_head + q->fifo_cap - 1) & (q->fifo_cap - 1);
        q->fifo[q->fifo_head] = k;
        q->fifo_len++;
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    hmap_del(&q->dirty, k);
    pthread_mutex_unlock(&q->mu);
    memcpy(key, k, strlen(k) + 1);
    free(k);
    return 1;
}

void wq_done(struct wq *q, const char *key)
{
    if (!key_ok(key))
        return;
    pthread_mutex_lock(&q->mu);
    if (hmap_del(&q->processing, key) && hmap_find(&q->dirty, key)) {
        /* Re-added while processing: now it may go to a worker. */
        if (fifo_push(q, key))
            hmap_del(&q->dirty, key);
        else
            pthread_cond_signal(&q->cond);
    }
    pthread_mutex_unlock(&q->mu);
}

size_t wq_len(struct wq *q)
{
    size_t n, i;

    pthread_mutex_lock(&q->mu);
    n = q->dirty.count;
    for (i = 0; i < q->delayed.nbuckets; i++) {
        const struct hent *e;

        for (e = q->delayed.b[i]; e; e = e->next)
            if (!hmap_find(&q->dirty, e->key))
                n++;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

void wq_shutdown(struct wq *q)
{
    size_t i;

    pthread_mutex_lock(&q->mu);
    q->shutting_down = 1;
    for (i = 0; i < q->heap_len; i++)
        free(q->heap[i].key);
    q->heap_len = 0;
    hmap_release(&q->delayed);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

void wq_kick(struct wq *q)
{
    pthread_mutex_lock(&q->mu);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}
