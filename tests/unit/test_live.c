/* test_live.c - the live cache (lib/client/live): views built after changes and published,
 * references that keep a view alive, store objects a view borrows kept until no view that may
 * hold them is left (ASan sees a use after free otherwise), failed builds that keep the current
 * view, a fixed view.  The stores are filled by hand (live_start without a configuration). */
#include "harness.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <time.h>

#include "client/live.h"
#include "formats/json.h"

/* A view: the objects of the stores when it was built (borrowed), and its build number. */
struct tview {
    const cJSON **objs;
    size_t n;
    int serial;
};

struct tctx {
    atomic_int builds, frees, drops, published, caught_up, fail_next;
    atomic_int afresh_next;     /* the next build with a cur asks for LIVE_AFRESH */
    int frees_at_afresh, frees_at_rebuild, null_at_rebuild; /* what the builds saw */
    const void *last_cur;       /* the cur the last build was given */
    const void *current;        /* what published last said */
};

static void *t_build(void *ctx, struct live *lc, const void *cur, struct dd_err *err)
{
    struct tctx *t = ctx;
    struct tview *v;

    t->last_cur = cur;
    if (cur && atomic_exchange(&t->afresh_next, 0)) {
        t->frees_at_afresh = atomic_load(&t->frees);
        return LIVE_AFRESH;
    }
    if (!cur && atomic_load(&t->published)) { /* built afresh */
        const void *seen = live_view_get(lc, NULL, NULL);
        t->frees_at_rebuild = atomic_load(&t->frees);
        t->null_at_rebuild = !seen;
        live_view_put(lc, (void *)seen);
    }
    if (atomic_exchange(&t->fail_next, 0)) {
        dd_failf(err, DD_ENOMEM, "planted failure");
        return NULL;
    }
    assert_non_null(v = calloc(1, sizeof(*v)));
    assert_int_equal(live_collect(lc, &v->objs, &v->n), 0);
    v->serial = atomic_fetch_add(&t->builds, 1) + 1;
    return v;
}

static void t_free(void *ctx, void *view)
{
    struct tctx *t = ctx;
    struct tview *v = view;

    atomic_fetch_add(&t->frees, 1);
    free(v->objs);
    free(v);
}

static int t_dropped(void *ctx, size_t r, const cJSON *obj)
{
    struct tctx *t = ctx;

    (void)r;
    (void)obj;
    atomic_fetch_add(&t->drops, 1);
    return 0;
}

static void t_published(void *ctx, const void *view, int caught_up)
{
    struct tctx *t = ctx;

    t->current = view;
    atomic_fetch_add(&t->published, 1);
    atomic_fetch_add(&t->caught_up, caught_up);
}

static const struct live_resource res[] = { { "", "v1", "configmaps", NULL, NULL } };

static struct live *new_cache(struct tctx *t, size_t nres, int trim_heap)
{
    struct live_hooks h = { t, NULL, NULL, t_dropped, t_build, t_free, t_published, NULL, NULL };
    struct live_opts o;
    struct dd_err err;
    struct live *lc;

    memset(&o, 0, sizeof(o));
    o.res = res;
    o.nres = nres;
    o.trim_heap = trim_heap;
    o.who = "test";
    o.prefix = "dd_test_";
    o.noun = "view";
    dd_err_clear(&err);
    assert_non_null(lc = live_new(&o, &h, &err));
    return lc;
}

/* Waits (at most 10 s) until *x is at least n: a view is published, then the one it
 * replaced freed, on the builder thread. */
static void wait_for(atomic_int *x, int n)
{
    struct timespec ts = { 0, 2000000 };
    int i;

    for (i = 0; i < 5000 && atomic_load(x) < n; i++)
        nanosleep(&ts, NULL);
    assert_true(atomic_load(x) >= n);
}

/* Waits until the n-th view is published and the one before it is freed. */
static void wait_views(struct tctx *t, int n)
{
    wait_for(&t->published, n);
    wait_for(&t->frees, n - 1);
}

static cJSON *configmap(const char *name, const char *value)
{
    cJSON *o = cJSON_CreateObject(), *m, *d;

    assert_non_null(o);
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "ConfigMap");
    m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", "ns");
    d = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(d, "v", value);
    return o;
}

static void put(struct live *lc, const char *name, const char *value)
{
    cJSON *o = configmap(name, value);

    assert_int_equal(inf_store_put(live_store(lc, 0), o), DD_OK);
    cJSON_Delete(o);
}

static const char *value_of(const struct tview *v, const char *name)
{
    size_t i;

    for (i = 0; i < v->n; i++)
        if (!strcmp(dd_json_str(v->objs[i], "metadata", "name", NULL), name))
            return dd_json_str(v->objs[i], "data", "v", NULL);
    return NULL;
}

static void views_borrow_store_objects(void **state)
{
    struct tctx t = { 0 };
    struct live *lc = new_cache(&t, 1, 0);
    struct tview *v1, *v2;
    struct dd_err err;

    (void)state;
    assert_null(live_view_get(lc, NULL, NULL)); /* nothing built yet */
    assert_int_equal(live_start(lc, NULL, &err), 0);
    wait_views(&t, 1); /* a first view, even of empty stores */
    assert_true(live_synced(lc));

    put(lc, "a", "1");
    put(lc, "b", "1");
    live_mark_dirty(lc);
    wait_views(&t, 2);
    assert_non_null(v1 = live_view_get(lc, NULL, NULL));
    assert_int_equal(v1->serial, 2);
    assert_string_equal(value_of(v1, "a"), "1");
    assert_int_equal(atomic_load(&t.frees), 1); /* the first view went with its last reference */

    /* The store lets go of a's first version and of b while v1 still reads them. */
    put(lc, "a", "2");
    assert_int_equal(inf_store_delete(live_store(lc, 0), "ns/b"), 1);
    assert_int_equal(atomic_load(&t.drops), 2);
    live_mark_dirty(lc);
    wait_for(&t.published, 3);
    assert_non_null(v2 = live_view_get(lc, NULL, NULL));
    assert_ptr_equal(t.last_cur, v1); /* the build was given the view it replaced */
    assert_ptr_equal(t.current, v2);
    assert_string_equal(value_of(v2, "a"), "2");
    assert_null(value_of(v2, "b"));
    /* v1 is no longer current, but its reference keeps it and what it borrowed. */
    assert_int_equal(atomic_load(&t.frees), 1);
    assert_string_equal(value_of(v1, "a"), "1");
    assert_string_equal(value_of(v1, "b"), "1");
    live_view_put(lc, v1);
    assert_int_equal(atomic_load(&t.frees), 2);
    live_view_put(lc, v2);
    assert_int_equal(atomic_load(&t.frees), 2); /* v2 is the current one */
    assert_int_equal(atomic_load(&t.published), 3);

    live_free(lc);
    assert_int_equal(atomic_load(&t.frees), 3);
}

/* a's value set, *flag raised for the next build, and the cache told: the nviews-th view is
 * waited for. */
static void change(struct live *lc, struct tctx *t, atomic_int *flag, const char *value,
                   int nviews)
{
    put(lc, "a", value);
    atomic_store(flag, 1);
    live_mark_dirty(lc);
    wait_views(t, nviews);
}

static void failed_build_keeps_current_view(void **state)
{
    struct tctx t = { 0 };
    struct live *lc = new_cache(&t, 1, 0);
    struct tview *v;
    struct dd_err err;
    char *buf = malloc(8192);
    size_t len = 0;

    (void)state;
    assert_non_null(buf);
    assert_int_equal(live_start(lc, NULL, &err), 0);
    wait_views(&t, 1);
    /* The failed build keeps the first view current; the cache tries again by itself. */
    change(lc, &t, &t.fail_next, "1", 2);
    assert_int_equal(atomic_load(&t.fail_next), 0);
    assert_int_equal(live_builds(lc), 2);
    assert_non_null(v = live_view_get(lc, NULL, NULL));
    assert_int_equal(v->serial, 2);
    assert_string_equal(value_of(v, "a"), "1");
    live_view_put(lc, v);
    live_metrics(lc, buf, 8192, &len);
    assert_int_equal(strlen(buf), len);
    assert_contains(buf, "dd_test_views_total 2\n");
    assert_contains(buf, "# TYPE dd_test_view_build_seconds_total counter");
    live_free(lc);
    assert_int_equal(atomic_load(&t.frees), 2);
    free(buf);
}

/*
 * A build that asks for LIVE_AFRESH: the current view goes before the build is called again
 * without it (readers meanwhile get none); a reader's reference is waited for.
 */
static void afresh_build_lets_current_view_go(void **state)
{
    struct tctx t = { 0 };
    struct live *lc = new_cache(&t, 1, 0);
    struct tview *v;
    struct dd_err err;
    static char buf[8192];
    size_t len = 0;
    struct timespec ts = { 0, 200000000 };

    (void)state;
    assert_int_equal(live_start(lc, NULL, &err), 0);
    wait_views(&t, 1);
    change(lc, &t, &t.afresh_next, "1", 2);
    assert_int_equal(atomic_load(&t.afresh_next), 0);
    assert_null(t.last_cur);
    assert_int_equal(t.frees_at_afresh, 0);
    assert_int_equal(t.frees_at_rebuild, 1); /* the first view went before the rebuild */
    assert_true(t.null_at_rebuild);
    assert_non_null(v = live_view_get(lc, NULL, NULL));
    assert_string_equal(value_of(v, "a"), "1");

    /* A reader holds the current view: the builder waits for it. */
    put(lc, "a", "2");
    atomic_store(&t.afresh_next, 1);
    live_mark_dirty(lc);
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&t.published), 2);
    assert_int_equal(atomic_load(&t.frees), 1);
    assert_string_equal(value_of(v, "a"), "1");
    live_view_put(lc, v);
    wait_views(&t, 3);
    assert_int_equal(t.frees_at_afresh, 1);
    assert_int_equal(t.frees_at_rebuild, 2);
    assert_non_null(v = live_view_get(lc, NULL, NULL));
    assert_string_equal(value_of(v, "a"), "2");
    live_view_put(lc, v);
    live_metrics(lc, buf, sizeof(buf), &len);
    assert_contains(buf, "dd_test_views_afresh_total 2\n");
    assert_contains(buf, "dd_test_views_total 3\n");

    /* Stopped while it waits for a reader: the view goes, nothing is built. */
    assert_non_null(v = live_view_get(lc, NULL, NULL));
    atomic_store(&t.afresh_next, 1);
    live_mark_dirty(lc);
    nanosleep(&ts, NULL);
    live_stop(lc);
    assert_int_equal(atomic_load(&t.builds), 3);
    assert_null(live_view_get(lc, NULL, NULL));
    assert_int_equal(atomic_load(&t.frees), 2);
    live_view_put(lc, v);
    assert_int_equal(atomic_load(&t.frees), 3);
    live_free(lc);
    assert_int_equal(atomic_load(&t.frees), 3);
}

static void fixed_view(void **state)
{
    struct tctx t = { 0 };
    struct live *lc = new_cache(&t, 0, 0);
    struct tview *v = calloc(1, sizeof(*v)), *got;

    (void)state;
    assert_non_null(v);
    live_start_fixed(lc, v);
    assert_true(live_synced(lc));
    assert_int_equal(live_builds(lc), 1);
    assert_int_equal(atomic_load(&t.caught_up), 1);
    assert_ptr_equal(got = live_view_get(lc, NULL, NULL), v);
    live_view_put(lc, got);
    assert_int_equal(atomic_load(&t.frees), 0);
    live_free(lc);
    assert_int_equal(atomic_load(&t.frees), 1);
}

/* A cache that gives its heap back has big allocations mapped, however high glibc's own
 * threshold rose: a view's arrays then leave no holes in the heap for the cached objects to
 * keep open.  Runs last: the threshold is the process's. */
static void trim_heap_maps_big_allocations(void **state)
{
    struct tctx t = { 0 };
    struct live *lc;
    size_t before;
    void *p;

    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip(); /* ASan's allocator maps nothing glibc counts, and ignores mallopt */
#endif
    /* Freeing a mapped 8 MiB raises glibc's threshold to 8 MiB: 128 KiB would come from
     * the heap. */
    assert_non_null(p = malloc((size_t)8 << 20));
    free(p);
    lc = new_cache(&t, 0, 1);
    before = mallinfo2().hblks;
    assert_non_null(p = malloc(LIVE_MMAP_MIN));
    assert_int_equal(mallinfo2().hblks, before + 1);
    free(p);
    assert_int_equal(mallinfo2().hblks, before);
    live_free(lc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(views_borrow_store_objects),
        cmocka_unit_test(failed_build_keeps_current_view),
        cmocka_unit_test(afresh_build_lets_current_view_go),
        cmocka_unit_test(fixed_view),
        cmocka_unit_test(trim_heap_maps_big_allocations),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
