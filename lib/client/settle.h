/*
 * settle.h - the waiting room of requests whose answer waits for caches to catch up.
 *
 * An admission webhook judges a request against informer caches that may lag the
 * objects sent with it (a chart's DaemonSet and its DeviceClass, a template and the pod
 * using it, milliseconds apart).  A request that would be denied or warned is therefore
 * decided again later; this module decides *when*, and *whether it may wait at all*:
 *
 *   - A parked request is ready once settle_ms have passed since it came and the caches
 *     have caught up (settle_caught_up(s, 1): the published view holds every change
 *     seen), or once max_wait_ms have passed, caught up or not.
 *   - Waiting is bounded.  Each lane has its own slots, so requests of one lane never
 *     take another's (the webhook: DeviceClasses, whose webhook fails closed, in the
 *     gate lane; claims, templates, Pods and workloads in the shared one).  Within a
 *     lane, one tenant (a namespace) holds at most tenant_slots, so one tenant's burst
 *     leaves the rest of the lane to the others.  A request refused a slot is to be
 *     answered at once, on what the caches hold.
 *
 * It is pure: no threads, no clock, no I/O.  The caller passes the monotonic time in
 * milliseconds, serialises the calls (one lock), and owns the items (opaque pointers:
 * the webhook's are suspended HTTP requests), which it resumes when settle_take_ready
 * hands them back; settle_next says when to look again.  Every operation is O(1)
 * amortised (per item taken): the settle and deadline offsets are the same for every
 * item of a lane, so a lane is a FIFO and only its head can become ready first.
 */
#ifndef DD_SETTLE_H
#define DD_SETTLE_H

#include <stddef.h>
#include <stdint.h>

enum settle_lane {
    SETTLE_SHARED,     /* the webhook: claims, templates, Pods, workloads */
    SETTLE_GATE,       /* the webhook: DeviceClasses */
    SETTLE_NLANES
};

enum settle_admit {
    SETTLE_PARKED,         /* the item waits; settle_take_ready hands it back */
    SETTLE_LANE_FULL,      /* every slot of the lane is taken: answer now */
    SETTLE_TENANT_FULL,    /* the tenant holds its share of the lane: answer now */
};

/* A tenant is told apart by its first SETTLE_TENANT_MAX bytes (a namespace is at most 63). */
#define SETTLE_TENANT_MAX 63
/* Slots per lane at most: each one may be an open connection. */
#define SETTLE_SLOTS_MAX 4096u

struct settle_opts {
    int64_t settle_ms;        /* default 500 */
    int64_t max_wait_ms;      /* default 3000; at least settle_ms */
    unsigned slots[SETTLE_NLANES];  /* default 128 (shared), 32 (gate); at most SETTLE_SLOTS_MAX */
    unsigned tenant_slots;    /* one tenant's share of any lane; default a quarter of the
                                 lane (at least 1) */
};

struct settle;

/* opts may be NULL; zero fields take the defaults.  NULL when out of memory or when
 * an option is out of range (max_wait_ms < settle_ms, more slots than SETTLE_SLOTS_MAX). */
struct settle *settle_new(const struct settle_opts *opts);
/* Frees s; items still parked are the caller's (settle_take_all them first). */
void settle_free(struct settle *s);

/*
 * Parks item (not NULL; borrowed until handed back) in lane for tenant (NULL or "":
 * no tenant, only the lane's bound applies; copied), arrived at now_ms.  Returns
 * SETTLE_PARKED, or why it may not wait (the item is then not kept).
 */
enum settle_admit settle_park(struct settle *s, enum settle_lane lane, const char *tenant,
                              int64_t now_ms, void *item);

/* Whether the caches have caught up (1) or changed since the view was built (0).  Starts
 * at 0: until a first view, requests wait for their deadline. */
void settle_caught_up(struct settle *s, int yes);

/*
 * Removes the items ready at now_ms (gate lane first, each lane oldest first), at most
 * max, into out; returns how many.  Call again while it fills out.
 */
size_t settle_take_ready(struct settle *s, int64_t now_ms, void **out, size_t max);

/* Removes every parked item, ready or not (shutdown); as settle_take_ready. */
size_t settle_take_all(struct settle *s, void **out, size_t max);

/*
 * The earliest time an item may become ready if nothing else happens (a change of
 * settle_caught_up or a new item can only make it earlier: look again then);
 * INT64_MAX when nothing waits.  May be <= now_ms when items are ready.
 */
int64_t settle_next(const struct settle *s);

/* Items waiting in lane; of those, tenant's (0 for NULL or ""). */
unsigned settle_waiting(const struct settle *s, enum settle_lane lane);
unsigned settle_tenant_waiting(const struct settle *s, enum settle_lane lane, const char *tenant);

#endif
