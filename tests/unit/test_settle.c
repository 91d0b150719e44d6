/*
 * test_settle.c - the waiting room of lib/client/settle in virtual time: when a parked
 * request becomes ready (settle time, caught-up caches, deadline), the bounds of each
 * lane and of each tenant, the order items come back in, and the tenant table against
 * a reference count over a long random run.
 */
#include "harness.h"

#include "client/settle.h"

#define T0 100000 /* ms: virtual time starts here */

static int items[4096]; /* their addresses are the items */

static struct settle *room(unsigned shared, unsigned gate, unsigned tenant)
{
    struct settle_opts o = { 500, 3000, { shared, gate }, tenant };
    struct settle *s = settle_new(&o);

    assert_non_null(s);
    return s;
}

static size_t take(struct settle *s, int64_t now, void **out)
{
    return settle_take_ready(s, now, out, 64);
}

static void test_ready_after_settle_when_caught_up(void **state)
{
    struct settle *s = room(8, 8, 0);
    void *out[64];

    (void)state;
    assert_int_equal(settle_next(s), INT64_MAX);
    settle_caught_up(s, 1);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "ns-a", T0, &items[0]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "ns-a", T0 + 100, &items[1]), SETTLE_PARKED);
    assert_int_equal(settle_next(s), T0 + 500);
    assert_int_equal(take(s, T0 + 499, out), 0);
    assert_int_equal(take(s, T0 + 500, out), 1);
    assert_ptr_equal(out[0], &items[0]);
    assert_int_equal(settle_next(s), T0 + 600);
    assert_int_equal(take(s, T0 + 599, out), 0);
    assert_int_equal(take(s, T0 + 650, out), 1);
    assert_ptr_equal(out[0], &items[1]);
    assert_int_equal(settle_next(s), INT64_MAX);
    assert_int_equal(settle_waiting(s, SETTLE_SHARED), 0);
    settle_free(s);
}

static void test_waits_for_catch_up_or_deadline(void **state)
{
    struct settle *s = room(8, 8, 8);
    void *out[64];

    (void)state;
    /* Not caught up from the start: a first view is not there yet. */
    assert_int_equal(settle_park(s, SETTLE_SHARED, "a", T0, &items[0]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "a", T0 + 1000, &items[1]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "a", T0 + 1400, &items[2]), SETTLE_PARKED);
    assert_int_equal(settle_next(s), T0 + 3000);
    assert_int_equal(take(s, T0 + 1500, out), 0);
    /* Caught up at 1500: the first two are past their settle time, the third is not. */
    settle_caught_up(s, 1);
    assert_int_equal(settle_next(s), T0 + 500);
    assert_int_equal(take(s, T0 + 1500, out), 2);
    assert_ptr_equal(out[0], &items[0]);
    assert_ptr_equal(out[1], &items[1]);
    assert_int_equal(settle_next(s), T0 + 1900);
    /* A change before the third's settle time: it waits on, up to its deadline. */
    settle_caught_up(s, 0);
    assert_int_equal(take(s, T0 + 1900, out), 0);
    assert_int_equal(settle_next(s), T0 + 4400);
    assert_int_equal(take(s, T0 + 4399, out), 0);
    assert_int_equal(take(s, T0 + 4400, out), 1);
    assert_ptr_equal(out[0], &items[2]);
    settle_free(s);
}

/* The gate lane has slots of its own: a full shared lane takes none of them. */
static void test_lanes_bounded_and_separate(void **state)
{
    struct settle *s = room(6, 2, 6);
    void *out[64];
    int i;

    (void)state;
    settle_caught_up(s, 1);
    for (i = 0; i < 6; i++)
        assert_int_equal(settle_park(s, SETTLE_SHARED, "ns", T0, &items[i]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "other", T0, &items[6]), SETTLE_LANE_FULL);
    assert_int_equal(settle_park(s, SETTLE_SHARED, NULL, T0, &items[6]), SETTLE_LANE_FULL);
    assert_int_equal(settle_park(s, SETTLE_GATE, NULL, T0 + 10, &items[7]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_GATE, NULL, T0 + 20, &items[8]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_GATE, NULL, T0 + 30, &items[9]), SETTLE_LANE_FULL);
    assert_int_equal(settle_waiting(s, SETTLE_SHARED), 6);
    assert_int_equal(settle_waiting(s, SETTLE_GATE), 2);
    /* Ready together: the gate lane comes back first, each lane oldest first, max honoured. */
    assert_int_equal(settle_take_ready(s, T0 + 600, out, 3), 3);
    assert_ptr_equal(out[0], &items[7]);
    assert_ptr_equal(out[1], &items[8]);
    assert_ptr_equal(out[2], &items[0]);
    assert_int_equal(take(s, T0 + 600, out), 5);
    assert_ptr_equal(out[4], &items[5]);
    /* Slots freed are slots again. */
    assert_int_equal(settle_park(s, SETTLE_SHARED, "other", T0 + 600, &items[6]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_GATE, NULL, T0 + 600, &items[9]), SETTLE_PARKED);
    assert_int_equal(settle_take_all(s, out, 64), 2);
    assert_ptr_equal(out[0], &items[9]);
    assert_ptr_equal(out[1], &items[6]);
    settle_free(s);
}

/* One namespace's burst takes its share and no more: the others still wait. */
static void test_tenant_share(void **state)
{
    struct settle *s = room(16, 4, 0); /* a tenant's share: a quarter, 4 */
    void *out[64];
    int i, parked = 0, refused = 0;

    (void)state;
    settle_caught_up(s, 1);
    for (i = 0; i < 100; i++) {
        enum settle_admit a = settle_park(s, SETTLE_SHARED, "burst", T0 + i, &items[i]);
        parked += a == SETTLE_PARKED;
        refused += a == SETTLE_TENANT_FULL;
    }
    assert_int_equal(parked, 4);
    assert_int_equal(refused, 96);
    assert_int_equal(settle_tenant_waiting(s, SETTLE_SHARED, "burst"), 4);
    for (i = 0; i < 3; i++) {
        char ns[32];
        int k;
        snprintf(ns, sizeof(ns), "team-%d", i);
        for (k = 0; k < 4; k++)
            assert_int_equal(settle_park(s, SETTLE_SHARED, ns, T0 + 200, &items[200 + 4 * i + k]),
                             SETTLE_PARKED);
        /* (the last team fills the lane: the lane's bound answers first) */
        assert_int_equal(settle_park(s, SETTLE_SHARED, ns, T0 + 200, &items[300]),
                         i < 2 ? SETTLE_TENANT_FULL : SETTLE_LANE_FULL);
        assert_int_equal(settle_tenant_waiting(s, SETTLE_SHARED, ns), 4);
    }
    assert_int_equal(settle_waiting(s, SETTLE_SHARED), 16);
    assert_int_equal(settle_tenant_waiting(s, SETTLE_SHARED, "nobody"), 0);
    assert_int_equal(settle_tenant_waiting(s, SETTLE_SHARED, NULL), 0);
    /* A full lane refuses requests without a tenant too. */
    assert_int_equal(settle_park(s, SETTLE_SHARED, "", T0 + 200, &items[301]), SETTLE_LANE_FULL);
    /* The burst's four come back (oldest first), and its share is free again. */
    assert_int_equal(take(s, T0 + 503, out), 4);
    assert_ptr_equal(out[0], &items[0]);
    assert_ptr_equal(out[3], &items[3]);
    assert_int_equal(settle_tenant_waiting(s, SETTLE_SHARED, "burst"), 0);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "burst", T0 + 503, &items[4]), SETTLE_PARKED);
    /* The tenant share holds per lane: the gate lane has its own count. */
    for (i = 0; i < 4; i++)
        assert_int_equal(settle_park(s, SETTLE_GATE, "burst", T0 + 503, &items[400 + i]),
                         SETTLE_PARKED);
    assert_int_equal(settle_take_all(s, out, 64), 17);
    settle_free(s);
}

/* Threads read the clock before the lock: a slightly older time keeps the lane in order. */
static void test_clock_read_out_of_order(void **state)
{
    struct settle *s = room(8, 8, 0);
    void *out[64];

    (void)state;
    settle_caught_up(s, 1);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "a", T0 + 10, &items[0]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_SHARED, "b", T0 + 7, &items[1]), SETTLE_PARKED);
    assert_int_equal(take(s, T0 + 509, out), 0);
    assert_int_equal(take(s, T0 + 510, out), 2);
    assert_ptr_equal(out[0], &items[0]);
    assert_ptr_equal(out[1], &items[1]);
    settle_free(s);
}

/* Names past SETTLE_TENANT_MAX bytes are told apart by their first 63. */
static void test_long_tenant_names(void **state)
{
    struct settle *s = room(8, 8, 1);
    char a[200], b[200];

    (void)state;
    memset(a, 'x', sizeof(a) - 1);
    a[sizeof(a) - 1] = '\0';
    memcpy(b, a, sizeof(b));
    b[150] = 'y';
    assert_int_equal(settle_park(s, SETTLE_SHARED, a, T0, &items[0]), SETTLE_PARKED);
    assert_int_equal(settle_park(s, SETTLE_SHARED, b, T0, &items[1]), SETTLE_TENANT_FULL);
    b[10] = 'y';
    assert_int_equal(settle_park(s, SETTLE_SHARED, b, T0, &items[1]), SETTLE_PARKED);
    settle_free(s);
}

static void test_options(void **state)
{
    struct settle_opts bad_wait = { 500, 400, { 0, 0 }, 0 };
    struct settle_opts too_many = { 0, 0, { SETTLE_SLOTS_MAX + 1, 0 }, 0 };
    struct settle_opts most = { 0, 0, { SETTLE_SLOTS_MAX, 1 }, 0 };
    struct settle *s;
    void *out[64];
    int i;

    (void)state;
    assert_null(settle_new(&bad_wait));
    assert_null(settle_new(&too_many));
    assert_non_null(s = settle_new(&most));
    settle_free(s);
    /* Defaults: 128 shared slots, 32 per tenant, 32 gate slots, 500 ms, 3 s. */
    assert_non_null(s = settle_new(NULL));
    for (i = 0; i < 40; i++)
        settle_park(s, SETTLE_SHARED, "one", T0, &items[i]);
    assert_int_equal(settle_waiting(s, SETTLE_SHARED), 32);
    for (i = 0; i < 200; i++) {
        char ns[32];
        snprintf(ns, sizeof(ns), "ns-%d", i);
        settle_park(s, SETTLE_SHARED, ns, T0, &items[i]);
        settle_park(s, SETTLE_GATE, NULL, T0, &items[i]);
    }
    assert_int_equal(settle_waiting(s, SETTLE_SHARED), 128);
    assert_int_equal(settle_waiting(s, SETTLE_GATE), 32);
    assert_int_equal(settle_next(s), T0 + 3000);
    settle_caught_up(s, 1);
    assert_int_equal(settle_next(s), T0 + 500);
    while (settle_take_all(s, out, 64))
        ;
    assert_int_equal(settle_next(s), INT64_MAX);
    assert_int_equal(settle_park(s, SETTLE_NLANES, "x", T0, &items[0]), SETTLE_LANE_FULL);
    assert_int_equal(settle_park(s, SETTLE_GATE, "x", T0, NULL), SETTLE_LANE_FULL);
    settle_free(s);
    settle_free(NULL);
}

/*
 * Many tenants coming and going through a small table: every tenant's count agrees with
 * a reference count after each step (a bucket emptied in the middle of a probe sequence
 * must not hide the tenants after it), and the share is enforced throughout.
 */
static void test_tenant_table_churn(void **state)
{
    enum { NT = 61, SLOTS = 24, SHARE = 3 };
    struct settle *s = room(SLOTS, 1, SHARE);
    unsigned ref[NT] = { 0 }, fifo[SLOTS * 2], head = 0, len = 0;
    uint32_t rng = 12345;
    int64_t now = T0;
    void *out[64];
    int step, t;

    (void)state;
    settle_caught_up(s, 1);
    for (step = 0; step < 20000; step++) {
        char ns[32];
        rng = rng * 1103515245u + 12345u;
        t = (int)((rng >> 8) % NT);
        snprintf(ns, sizeof(ns), "team-%u", (unsigned)t * 2654435761u);
        now += (rng >> 20) % 3;
        if ((rng >> 4) % 3) {
            enum settle_admit a = settle_park(s, SETTLE_SHARED, ns, now, &items[t]);
            if (len == SLOTS)
                assert_int_equal(a, SETTLE_LANE_FULL);
            else if (ref[t] == SHARE)
                assert_int_equal(a, SETTLE_TENANT_FULL);
            else {
                assert_int_equal(a, SETTLE_PARKED);
                ref[t]++;
                fifo[(head + len++) % (SLOTS * 2)] = (unsigned)t;
            }
        } else if (len) {
            size_t n = settle_take_ready(s, now + 500, out, 1);
            assert_int_equal(n, 1);
            assert_ptr_equal(out[0], &items[fifo[head]]);
            ref[fifo[head]]--;
            head = (head + 1) % (SLOTS * 2);
            len--;
        }
        for (t = 0; t < NT; t++) {
            snprintf(ns, sizeof(ns), "team-%u", (unsigned)t * 2654435761u);
            assert_int_equal(settle_tenant_waiting(s, SETTLE_SHARED, ns), ref[t]);
        }
        assert_int_equal(settle_waiting(s, SETTLE_SHARED), len);
    }
    settle_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_after_settle_when_caught_up),
        cmocka_unit_test(test_waits_for_catch_up_or_deadline),
        cmocka_unit_test(test_lanes_bounded_and_separate),
        cmocka_unit_test(test_tenant_share),
        cmocka_unit_test(test_clock_read_out_of_order),
        cmocka_unit_test(test_long_tenant_names),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_tenant_table_churn),
    };

    return cmocka_run_group_tests_name("settle", tests, NULL, NULL);
}
