/* test_workqueue.c - the work queue keeps client-go's contracts: dedupe, no concurrent
 * processing of one key, no lost adds, backoff and token bucket in virtual time. */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "client/workqueue.h"

/* ---- a virtual clock -------------------------------------------------- */

struct vclock {
    _Atomic int64_t now; /* ms */
};

static int64_t vclock_now(void *ctx)
{
    return atomic_load(&((struct vclock *)ctx)->now);
}

static struct wq *vqueue(struct vclock *c)
{
    struct wq_opts o = WQ_OPTS_INIT;
    struct wq *q;

    atomic_store(&c->now, 1000);
    o.clock = vclock_now;
    o.clock_ctx = c;
    q = wq_new(&o);
    assert_non_null(q);
    return q;
}

static void advance(struct wq *q, struct vclock *c, int64_t ms)
{
    atomic_fetch_add(&c->now, ms);
    wq_kick(q);
}

static int64_t real_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Takes the next ready key without waiting, or returns NULL. */
static const char *take(struct wq *q, char *buf)
{
    return wq_get(q, buf, WQ_KEY_SIZE, 0) ? buf : NULL;
}

static void expect_key(struct wq *q, const char *want)
{
    char buf[WQ_KEY_SIZE];
    const char *k = take(q, buf);

    if (!k)
        fail_msg("expected key %s, queue had nothing ready", want);
    assert_string_equal(k, want);
    wq_done(q, k);
}

static void expect_none(struct wq *q)
{
    char buf[WQ_KEY_SIZE];

    if (take(q, buf))
        fail_msg("expected nothing ready, got %s", buf);
}

/* ---- basic semantics --------------------------------------------------- */

static void dedupe_while_waiting(void **state)
{
    struct wq *q = wq_new(NULL);

    (void)state;
    wq_add(q, "ns/a");
    wq_add(q, "ns/b");
    wq_add(q, "ns/a");
    wq_add(q, "ns/a");
    assert_int_equal(wq_len(q), 2);
    expect_key(q, "ns/a");
    expect_key(q, "ns/b");
    expect_none(q);
    assert_int_equal(wq_len(q), 0);
    wq_free(q);
}

static void readded_while_processing_requeued_once(void **state)
{
    struct wq *q = wq_new(NULL);
    char k[WQ_KEY_SIZE];

    (void)state;
    wq_add(q, "a");
    assert_int_equal(wq_get(q, k, sizeof k, 0), 1);
    assert_string_equal(k, "a");
    wq_add(q, "a");
    wq_add(q, "a");
    assert_int_equal(wq_len(q), 1);
    /* Not handed to a second worker while the first still holds it. */
    assert_int_equal(wq_get(q, k, sizeof k, 20), 0);
    wq_done(q, "a");
    assert_int_equal(wq_len(q), 1);
    expect_key(q, "a");
    expect_none(q);
    /* A done without a re-add does not requeue. */
    wq_add(q, "b");
    expect_key(q, "b");
    expect_none(q);
    wq_free(q);
}

static void small_buffer_and_long_keys(void **state)
{
    struct wq *q = wq_new(NULL);
    char small[8], k[WQ_KEY_SIZE], big[WQ_KEY_MAX + 2];

    (void)state;
    wq_add(q, "a");
    assert_int_equal(wq_get(q, small, sizeof small, 0), 0);
    assert_int_equal(wq_len(q), 1);
    expect_key(q, "a");

    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    wq_add(q, big); /* 513 bytes: ignored */
    assert_int_equal(wq_len(q), 0);
    big[WQ_KEY_MAX] = '\0';
    wq_add(q, big); /* 512 bytes: fits */
    assert_int_equal(wq_get(q, k, sizeof k, 0), 1);
    assert_int_equal(strlen(k), WQ_KEY_MAX);
    wq_done(q, k);
    wq_free(q);
}

static void len_counts_distinct_waiting_keys(void **state)
{
    struct vclock c;
    struct wq *q = vqueue(&c);
    char k[WQ_KEY_SIZE];

    (void)state;
    assert_int_equal(wq_len(q), 0);
    wq_add(q, "a");
    wq_add_after(q, "b", 100);
    wq_add_after(q, "a", 100); /* ready and scheduled: one key */
    assert_int_equal(wq_len(q), 2);
    assert_int_equal(wq_get(q, k, sizeof k, 0), 1); /* a processing */
    assert_int_equal(wq_len(q), 2);                 /* a (scheduled), b */
    wq_add(q, "a");                                 /* dirty while processing */
    assert_int_equal(wq_len(q), 2);
    wq_done(q, "a");
    advance(q, &c, 100);
    expect_key(q, "a");
    expect_key(q, "b");
    /* The scheduled a arrived while a was queued: deduplicated. */
    expect_none(q);
    assert_int_equal(wq_len(q), 0);
    wq_free(q);
}

/* ---- delays in virtual time -------------------------------------------- */

static void add_after_orders_by_ready_time(void **state)
{
    struct vclock c;
    struct wq *q = vqueue(&c);

    (void)state;
    wq_add_after(q, "c", 30);
    wq_add_after(q, "a", 10);
    wq_add_after(q, "b", 20);
    wq_add_after(q, "d", 20);
    wq_add_after(q, "e", 50);
    wq_add_after(q, "e", 70); /* later: the earlier time stands */
    wq_add_after(q, "f", 90);
    wq_add_after(q, "f", 40); /* earlier: moves up */
    wq_add_after(q, "now", 0);
    expect_key(q, "now");
    advance(q, &c, 9);
    expect_none(q);
    advance(q, &c, 1);
    expect_key(q, "a");
    expect_none(q);
    advance(q, &c, 10);
    expect_key(q, "b");
    expect_key(q, "d");
    expect_none(q);
    advance(q, &c, 10);
    expect_key(q, "c");
    advance(q, &c, 10);
    expect_key(q, "f");
    expect_none(q);
    advance(q, &c, 10);
    expect_key(q, "e");
    advance(q, &c, 100);
    expect_none(q); /* neither the stale f nor the later e comes back */
    assert_int_equal(wq_len(q), 0);
    wq_free(q);
}

static void backoff_doubles_and_caps(void **state)
{
    struct vclock c;
    struct wq *q = vqueue(&c);
    int64_t want = 5;
    int i;

    (void)state;
    for (i = 0; i < 24; i++) {
        wq_add_rate_limited(q, "k");
        assert_int_equal(wq_num_requeues(q, "k"), i + 1);
        advance(q, &c, want - 1);
        expect_none(q);
        advance(q, &c, 1);
        expect_key(q, "k");
        if (i < 18)
            assert_int_equal(want, 5LL << i);
        else
            assert_int_equal(want, 1000000);
        want = want * 2 > 1000000 ? 1000000 : want * 2;
    }
    wq_forget(q, "k");
    assert_int_equal(wq_num_requeues(q, "k"), 0);
    wq_add_rate_limited(q, "k");
    advance(q, &c, 4);
    expect_none(q);
    advance(q, &c, 1);
    expect_key(q, "k");
    /* Backoff is per key. */
    wq_add_rate_limited(q, "other");
    assert_int_equal(wq_num_requeues(q, "other"), 1);
    advance(q, &c, 5);
    expect_key(q, "other");
    wq_free(q);
}

static void token_bucket_limits_overall_rate(void **state)
{
    struct vclock c;
    struct wq *q = vqueue(&c);
    char key[32];
    int i;

    (void)state;
    for (i = 0; i < 102; i++) {
        snprintf(key, sizeof key, "k%d", i);
        wq_add_rate_limited(q, key);
    }
    advance(q, &c, 5);
    for (i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        expect_key(q, key);
    }
    expect_none(q);
    advance(q, &c, 94); /* t = 99 ms */
    expect_none(q);
    advance(q, &c, 1); /* t = 100 ms: the 101st */
    expect_key(q, "k100");
    expect_none(q);
    advance(q, &c, 99);
    expect_none(q);
    advance(q, &c, 1); /* t = 200 ms: the 102nd */
    expect_key(q, "k101");
    /* After a long idle spell the bucket holds the burst again, and no more. */
    advance(q, &c, 60000);
    for (i = 0; i < 101; i++) {
        snprintf(key, sizeof key, "r%d", i);
        wq_add_rate_limited(q, key);
    }
    advance(q, &c, 5);
    for (i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "r%d", i);
        expect_key(q, key);
    }
    expect_none(q);
    advance(q, &c, 95);
    expect_key(q, "r100");
    wq_free(q);
}

struct getter {
    struct wq *q;
    int64_t timeout;
    int rc;
    int64_t took;
    char key[WQ_KEY_SIZE];
};

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    int64_t t0 = real_ms();

    g->rc = wq_get(g->q, g->key, sizeof g->key, g->timeout);
    g->took = real_ms() - t0;
    return NULL;
}

static void injected_clock_with_real_timeouts(void **state)
{
    struct vclock c;
    struct wq *q = vqueue(&c);
    struct getter g = { q, 5000, -1, 0, "" };
    pthread_t th;
    char k[WQ_KEY_SIZE];
    int64_t t0;

    (void)state;
    /* A stopped virtual clock does not stop a real timeout. */
    wq_add_after(q, "x", 60000);
    t0 = real_ms();
    assert_int_equal(wq_get(q, k, sizeof k, 50), 0);
    assert_true(real_ms() - t0 >= 45);
    assert_true(real_ms() - t0 < 2000);

    /* A waiting getter sees the key once time is advanced and it is kicked. */
    assert_int_equal(pthread_create(&th, NULL, getter_main, &g), 0);
    usleep(20000);
    advance(q, &c, 60000);
    pthread_join(th, NULL);
    assert_int_equal(g.rc, 1);
    assert_string_equal(g.key, "x");
    assert_true(g.took < 1000);
    wq_done(q, "x");
    wq_free(q);
}

static void real_clock_add_after(void **state)
{
    struct wq *q = wq_new(NULL);
    char k[WQ_KEY_SIZE];
    int64_t t0 = real_ms();

    (void)state;
    wq_add_after(q, "late", 60);
    wq_add_after(q, "early", 30);
    assert_int_equal(wq_get(q, k, sizeof k, 2000), 1);
    assert_string_equal(k, "early");
    assert_true(real_ms() - t0 >= 29);
    wq_done(q, k);
    assert_int_equal(wq_get(q, k, sizeof k, 2000), 1);
    assert_string_equal(k, "late");
    assert_true(real_ms() - t0 >= 59);
    wq_done(q, k);
    wq_free(q);
}

static void shutdown_wakes_getters_and_drains(void **state)
{
    struct wq *q = wq_new(NULL);
    struct getter g[3];
    pthread_t th[3];
    char k[WQ_KEY_SIZE];
    int64_t t0;
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        /* A timeout, so a missed wake-up fails the test rather than hanging it. */
        g[i] = (struct getter){ q, 3000, -1, 0, "" };
        assert_int_equal(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
    }
    usleep(30000);
    t0 = real_ms();
    wq_shutdown(q);
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(g[i].rc, 0);
        assert_true(g[i].took < 1000);
    }
    assert_true(real_ms() - t0 < 1000);
    wq_free(q);

    /* Ready keys are still handed out; delayed ones and later adds are dropped. */
    q = wq_new(NULL);
    wq_add(q, "ready");
    wq_add_after(q, "later", 10);
    wq_shutdown(q);
    wq_add(q, "after");
    wq_add_rate_limited(q, "after2");
    assert_int_equal(wq_get(q, k, sizeof k, -1), 1);
    assert_string_equal(k, "ready");
    wq_done(q, k);
    assert_int_equal(wq_get(q, k, sizeof k, -1), 0);
    assert_int_equal(wq_len(q), 0);
    wq_free(q);
}

/* ---- concurrency stress ------------------------------------------------ */

#define NKEYS 50
#define NADDS 10000
#define NWORKERS 4
#define NPRODUCERS 2

struct stress {
    struct wq *q;
    atomic_int inflight[NKEYS];        /* workers processing the key right now */
    atomic_ulong adds[NKEYS];          /* adds of the key so far (bumped before wq_add) */
    atomic_ulong seen[NKEYS];          /* adds[k] as read at the last processing start */
    atomic_ulong starts[NKEYS];
    atomic_int overlaps;               /* a key processed by two workers at once */
    atomic_int bad_keys;
    unsigned seed[NPRODUCERS];
};

static int key_index(const char *k)
{
    int i = -1;

    if (sscanf(k, "ns/k%d", &i) != 1 || i < 0 || i >= NKEYS)
        return -1;
    return i;
}

static void *stress_worker(void *arg)
{
    struct stress *s = arg;
    char k[WQ_KEY_SIZE];

    while (wq_get(s->q, k, sizeof k, -1)) {
        int i = key_index(k);

        if (i < 0) {
            atomic_fetch_add(&s->bad_keys, 1);
            wq_done(s->q, k);
            continue;
        }
        if (atomic_fetch_add(&s->inflight[i], 1) != 0)
            atomic_fetch_add(&s->overlaps, 1);
        atomic_store(&s->seen[i], atomic_load(&s->adds[i]));
        atomic_fetch_add(&s->starts[i], 1);
        /* Hold the key a little so adds land while it is processing. */
        if ((i & 3) == 0)
            usleep(20);
        else
            sched_yield();
        atomic_fetch_sub(&s->inflight[i], 1);
        wq_done(s->q, k);
    }
    return NULL;
}

struct producer {
    struct stress *s;
    unsigned seed;
};

static void *stress_producer(void *arg)
{
    struct producer *p = arg;
    char k[32];
    int n;

    for (n = 0; n < NADDS / NPRODUCERS; n++) {
        int i = (int)(rand_r(&p->seed) % NKEYS);

        snprintf(k, sizeof k, "ns/k%d", i);
        atomic_fetch_add(&p->s->adds[i], 1);
        wq_add(p->s->q, k);
        if ((n & 63) == 0)
            usleep(50);
    }
    return NULL;
}

static void stress_no_concurrent_key_no_lost_add(void **state)
{
    static struct stress s;
    pthread_t w[NWORKERS], p[NPRODUCERS];
    struct producer pr[NPRODUCERS];
    int i;
    unsigned long total_starts = 0;

    (void)state;
    memset(&s, 0, sizeof s);
    s.q = wq_new(NULL);
    for (i = 0; i < NWORKERS; i++)
        assert_int_equal(pthread_create(&w[i], NULL, stress_worker, &s), 0);
    for (i = 0; i < NPRODUCERS; i++) {
        pr[i] = (struct producer){ &s, 12345u + (unsigned)i };
        assert_int_equal(pthread_create(&p[i], NULL, stress_producer, &pr[i]), 0);
    }
    for (i = 0; i < NPRODUCERS; i++)
        pthread_join(p[i], NULL);
    /* Shutdown still hands out what is ready, and done() requeues dirty keys. */
    wq_shutdown(s.q);
    for (i = 0; i < NWORKERS; i++)
        pthread_join(w[i], NULL);

    assert_int_equal(atomic_load(&s.overlaps), 0);
    assert_int_equal(atomic_load(&s.bad_keys), 0);
    for (i = 0; i < NKEYS; i++) {
        unsigned long adds = atomic_load(&s.adds[i]);

        total_starts += atomic_load(&s.starts[i]);
        if (adds && atomic_load(&s.seen[i]) != adds)
            fail_msg("key %d: %lu adds, but its last processing started after only %lu", i,
                     adds, atomic_load(&s.seen[i]));
        assert_int_equal(atomic_load(&s.inflight[i]), 0);
    }
    /* Dedupe must have merged some adds; each add at most one start. */
    assert_true(total_starts <= NADDS);
    assert_true(total_starts >= NKEYS);
    assert_int_equal(wq_len(s.q), 0);
    wq_free(s.q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dedupe_while_waiting),
        cmocka_unit_test(readded_while_processing_requeued_once),
        cmocka_unit_test(small_buffer_and_long_keys),
        cmocka_unit_test(len_counts_distinct_waiting_keys),
        cmocka_unit_test(add_after_orders_by_ready_time),
        cmocka_unit_test(backoff_doubles_and_caps),
        cmocka_unit_test(token_bucket_limits_overall_rate),
        cmocka_unit_test(injected_clock_with_real_timeouts),
        cmocka_unit_test(real_clock_add_after),
        cmocka_unit_test(shutdown_wakes_getters_and_drains),
        cmocka_unit_test(stress_no_concurrent_key_no_lost_add),
    };

    return cmocka_run_group_tests_name("workqueue", tests, NULL, NULL);
}
