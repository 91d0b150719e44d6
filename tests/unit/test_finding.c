/*
 * test_finding.c - lists of findings: copies share their strings and outlive the original,
 * a sorted prefix with new findings merged in is what a whole sort gives, and removal takes
 * one equal finding per finding given.
 */
#include "harness.h"

#include "rules/finding.h"

static const char *const codes[] = { "ClaimNotFound", "DevicesDoNotFit", "QuotaExceeded" };

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A random finding, often equal to another one (few names, few messages). */
static void add_random(struct dd_findings *l)
{
    char name[16], msg[32];
    struct dd_finding *f;

    snprintf(name, sizeof(name), "pod-%u", rnd(6));
    snprintf(msg, sizeof(msg), "message %u", rnd(3));
    f = dd_findings_add(l, codes[rnd(3)], (enum dd_severity)rnd(3), "v1", "Pod",
                        rnd(2) ? "ns-a" : "ns-b", name, rnd(4) ? NULL : "f.yaml", (int)rnd(3),
                        msg, "fix");
    assert_non_null(f);
    if (rnd(2))
        assert_int_equal(dd_finding_scope(f, rnd(2) ? "gpu" : NULL, "gpu.example.com",
                                          rnd(2) ? "node-1" : NULL), 0);
}

static void same(const struct dd_findings *a, const struct dd_findings *b)
{
    size_t i;

    assert_int_equal(a->n, b->n);
    for (i = 0; i < a->n; i++)
        assert_int_equal(dd_finding_cmp(&a->v[i], &b->v[i]), 0);
}

/* Copies into another list share the strings, and stay whole once the first list is gone. */
static void copies_outlive(void **state)
{
    struct dd_findings a = DD_FINDINGS_INIT, b = DD_FINDINGS_INIT;
    size_t i;

    (void)state;
    for (i = 0; i < 50; i++)
        add_random(&a);
    for (i = 0; i < a.n; i++)
        assert_non_null(dd_findings_copy(&b, &a.v[i]));
    same(&a, &b);
    assert_ptr_equal(a.v[7].message, b.v[7].message); /* shared, not copied */
    dd_findings_release(&a);
    for (i = 0; i < b.n; i++) { /* ASan reads freed memory here if they were not shared right */
        assert_true(strncmp(b.v[i].message, "message ", 8) == 0);
        assert_string_equal(b.v[i].fix, "fix");
    }
    /* A scope set again on a copy leaves the others' alone. */
    assert_int_equal(dd_finding_scope(&b.v[0], "other", NULL, NULL), 0);
    assert_string_equal(b.v[0].scope_class, "other");
    dd_findings_release(&b);
}

/* A sorted prefix and new findings after it sort as a whole sort does, whatever their number. */
static void sort_tail_is_sort(void **state)
{
    unsigned round;

    (void)state;
    for (round = 0; round < 200; round++) {
        struct dd_findings a = DD_FINDINGS_INIT, b = DD_FINDINGS_INIT;
        size_t i, k = rnd(40), extra = rnd(6);
        for (i = 0; i < k + extra; i++)
            add_random(&a);
        for (i = 0; i < a.n; i++)
            dd_findings_copy(&b, &a.v[i]);
        /* a: the kept prefix sorted, the new ones after it in any order. */
        {
            struct dd_findings pre = { a.v, k, k, 0 };
            dd_findings_sort(&pre);
        }
        dd_findings_sort_tail(&a, k);
        dd_findings_sort(&b);
        same(&a, &b);
        dd_findings_release(&a);
        dd_findings_release(&b);
    }
}

/* Removal takes, per finding given, one equal finding (not all of them), and keeps the order. */
static void remove_one_each(void **state)
{
    struct dd_findings a = DD_FINDINGS_INIT, gone = DD_FINDINGS_INIT;
    size_t i, n;

    (void)state;
    for (i = 0; i < 3; i++)
        dd_findings_add(&a, codes[0], DD_SEV_ERROR, "v1", "Pod", "ns", "p", NULL, 0, "same", "f");
    dd_findings_add(&a, codes[1], DD_SEV_ERROR, "v1", "Pod", "ns", "q", NULL, 0, "other", "f");
    dd_findings_add(&a, codes[0], DD_SEV_ERROR, "v1", "Pod", "ns", "r", NULL, 0, "last", "f");
    dd_findings_add(&gone, codes[0], DD_SEV_ERROR, "v1", "Pod", "ns", "p", NULL, 0, "same", "f");
    dd_findings_add(&gone, codes[0], DD_SEV_ERROR, "v1", "Pod", "ns", "p", NULL, 0, "same", "f");
    dd_findings_add(&gone, codes[2], DD_SEV_ERROR, "v1", "Pod", "ns", "z", NULL, 0, "none", "f");
    n = a.n;
    dd_findings_remove(&a, &gone);
    assert_int_equal(a.n, n - 2);
    assert_string_equal(a.v[0].message, "same");
    assert_string_equal(a.v[1].message, "other");
    assert_string_equal(a.v[2].message, "last");
    dd_findings_release(&a);
    dd_findings_release(&gone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copies_outlive),
        cmocka_unit_test(sort_tail_is_sort),
        cmocka_unit_test(remove_one_each),
    };

    return cmocka_run_group_tests_name("finding", tests, NULL, NULL);
}
