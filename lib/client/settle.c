/*
 * settle.c - the waiting room of requests whose answer waits for caches to catch up
 * (see settle.h).
 *
 * Each lane is a ring of its slots, oldest first, and a table of the tenants holding
 * some of them: open addressing with linear probing over twice as many buckets as the
 * lane has slots (so a free bucket always ends a probe), a bucket emptied by the
 * backward shift that keeps every probe sequence unbroken without tombstones.
 */
#include "client/settle.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_SETTLE_MS 500
#define DEFAULT_MAX_WAIT_MS 3000
static const unsigned default_slots[SETTLE_NLANES] = { 128, 32 };

struct entry {
    int64_t t0;                             /* when it came (never before the previous) */
    void *item;
    char tenant[SETTLE_TENANT_MAX + 1];     /* "" when none */
};

struct tenant {
    char name[SETTLE_TENANT_MAX + 1];
    unsigned n;                             /* items parked; 0: the bucket is free */
};

struct lane {
    struct entry *ring;
    unsigned cap, head, len;
    struct tenant *tenants;
    unsigned mask;                          /* buckets - 1 (a power of two) */
    int64_t last_t0;
};

struct settle {
    struct settle_opts o;
    int caught_up;
    struct lane lanes[SETTLE_NLANES];
};

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* The bucket of name, or when absent and add is set, a free one holding name (n 0);
 * NULL when absent and not add. */
static struct tenant *tenant_find(const struct lane *l, const char *name, int add)
{
    unsigned i = hash(name) & l->mask;

    for (; l->tenants[i].n; i = (i + 1) & l->mask)
        if (!strcmp(l->tenants[i].name, name))
            return &l->tenants[i];
    if (!add)
        return NULL;
    memcpy(l->tenants[i].name, name, sizeof(l->tenants[i].name));
    return &l->tenants[i];
}

/* Frees bucket i, moving back the entries after it whose probe passed through it. */
static void tenant_remove(struct lane *l, unsigned i)
{
    unsigned j = i;

    for (;;) {
        unsigned home;

        j = (j + 1) & l->mask;
        if (!l->tenants[j].n)
            break;
        home = hash(l->tenants[j].name) & l->mask;
        /* j stays when its home lies cyclically in (i, j]. */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        l->tenants[i] = l->tenants[j];
        i = j;
    }
    l->tenants[i].n = 0;
}

struct settle *settle_new(const struct settle_opts *opts)
{
    struct settle *s = calloc(1, sizeof(*s));
    size_t k;

    if (!s)
        return NULL;
    if (opts)
        s->o = *opts;
    if (!s->o.settle_ms)
        s->o.settle_ms = DEFAULT_SETTLE_MS;
    if (!s->o.max_wait_ms)
        s->o.max_wait_ms = DEFAULT_MAX_WAIT_MS;
    if (s->o.settle_ms < 0 || s->o.max_wait_ms < s->o.settle_ms)
        goto fail;
    for (k = 0; k < SETTLE_NLANES; k++) {
        struct lane *l = &s->lanes[k];
        unsigned buckets = 2;

        if (!s->o.slots[k])
            s->o.slots[k] = default_slots[k];
        if (s->o.slots[k] > SETTLE_SLOTS_MAX)
            goto fail;
        while (buckets < 2 * s->o.slots[k])
            buckets *= 2;
        l->cap = s->o.slots[k];
        l->mask = buckets - 1;
        if (!(l->ring = calloc(l->cap, sizeof(*l->ring))) ||
            !(l->tenants = calloc(buckets, sizeof(*l->tenants))))
            goto fail;
    }
    if (!s->o.tenant_slots)
        s->o.tenant_slots = s->o.slots[SETTLE_SHARED] / 4 ? s->o.slots[SETTLE_SHARED] / 4 : 1;
    return s;
fail:
    settle_free(s);
    return NULL;
}

void settle_free(struct settle *s)
{
    size_t k;

    if (!s)
        return;
    for (k = 0; k < SETTLE_NLANES; k++) {
        free(s->lanes[k].ring);
        free(s->lanes[k].tenants);
    }
    free(s);
}

enum settle_admit settle_park(struct settle *s, enum settle_lane lane, const char *tenant,
                              int64_t now_ms, void *item)
{
    struct lane *l;
    struct entry *e;
    char key[SETTLE_TENANT_MAX + 1] = "";
    struct tenant *t = NULL;

    if ((unsigned)lane >= SETTLE_NLANES || !item)
        return SETTLE_LANE_FULL;
    l = &s->lanes[lane];
    if (l->len == l->cap)
        return SETTLE_LANE_FULL;
    if (tenant && *tenant) {
        strncpy(key, tenant, SETTLE_TENANT_MAX);
        t = tenant_find(l, key, 1);
        if (t->n >= s->o.tenant_slots)
            return SETTLE_TENANT_FULL;
        t->n++;
    }
    /* Threads read the clock before taking the caller's lock: keep the lane in order. */
    if (now_ms < l->last_t0)
        now_ms = l->last_t0;
    l->last_t0 = now_ms;
    e = &l->ring[(l->head + l->len++) % l->cap];
    e->t0 = now_ms;
    e->item = item;
    memcpy(e->tenant, key, sizeof(key));
    return SETTLE_PARKED;
}

void settle_caught_up(struct settle *s, int yes)
{
    s->caught_up = !!yes;
}

static void *pop(struct lane *l)
{
    struct entry *e = &l->ring[l->head];

    l->head = (l->head + 1) % l->cap;
    l->len--;
    if (e->tenant[0]) {
        struct tenant *t = tenant_find(l, e->tenant, 0);
        if (t && --t->n == 0)
            tenant_remove(l, (unsigned)(t - l->tenants));
    }
    return e->item;
}

/* When the lane's oldest item becomes ready; INT64_MAX when the lane is empty. */
static int64_t head_ready_at(const struct settle *s, const struct lane *l)
{
    if (!l->len)
        return INT64_MAX;
    return l->ring[l->head].t0 + (s->caught_up ? s->o.settle_ms : s->o.max_wait_ms);
}

/* The gate lane first: its requests are the ones that must never wait on the others. */
static const enum settle_lane order[SETTLE_NLANES] = { SETTLE_GATE, SETTLE_SHARED };

size_t settle_take_ready(struct settle *s, int64_t now_ms, void **out, size_t max)
{
    size_t n = 0, k;

    for (k = 0; k < SETTLE_NLANES; k++) {
        struct lane *l = &s->lanes[order[k]];
        while (n < max && head_ready_at(s, l) <= now_ms)
            out[n++] = pop(l);
    }
    return n;
}

size_t settle_take_all(struct settle *s, void **out, size_t max)
{
    size_t n = 0, k;

    for (k = 0; k < SETTLE_NLANES; k++) {
        struct lane *l = &s->lanes[order[k]];
        while (n < max && l->len)
            out[n++] = pop(l);
    }
    return n;
}

int64_t settle_next(const struct settle *s)
{
    int64_t next = INT64_MAX, t;
    size_t k;

    for (k = 0; k < SETTLE_NLANES; k++)
        if ((t = head_ready_at(s, &s->lanes[k])) < next)
            next = t;
    return next;
}

unsigned settle_waiting(const struct settle *s, enum settle_lane lane)
{
    return (unsigned)lane < SETTLE_NLANES ? s->lanes[lane].len : 0;
}

unsigned settle_tenant_waiting(const struct settle *s, enum settle_lane lane, const char *tenant)
{
    char key[SETTLE_TENANT_MAX + 1] = "";
    struct tenant *t;

    if ((unsigned)lane >= SETTLE_NLANES || !tenant || !*tenant)
        return 0;
    strncpy(key, tenant, SETTLE_TENANT_MAX);
    t = tenant_find(&s->lanes[lane], key, 0);
    return t ? t->n : 0;
}
