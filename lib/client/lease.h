/*
 * lease.h - leader election on a coordination.k8s.io/v1 Lease, with
 * client-go's leaderelection semantics:
 *
 *   - A candidate acquires the Lease when it does not exist, when it holds it
 *     already, or when the holder has not renewed it for leaseDurationSeconds
 *     (measured on the candidate's own clock from when it last saw the
 *     record change, not from timestamps in the object).
 *   - The leader renews every retry period; if it cannot renew within the
 *     renew deadline it stops leading (and must stop working).
 *   - Updates use the object's resourceVersion (optimistic concurrency): two
 *     candidates can never both win.
 *   - On release the leader clears holderIdentity (sets leaseDurationSeconds
 *     to 1) so a successor takes over at once.
 * Defaults: lease duration 15 s, renew deadline 10 s, retry period 2 s.
 */
#ifndef DD_LEASE_H
#define DD_LEASE_H

#include "err.h"
#include "client/kube.h"

struct lease_opts {
    const char *ns;          /* Lease namespace */
    const char *name;        /* Lease name */
    const char *identity;    /* this candidate, e.g. hostname_pid */
    int lease_duration_ms;   /* default 15000 */
    int renew_deadline_ms;   /* default 10000 */
    int retry_period_ms;     /* default 2000 */
};

struct lease;

/* Starts a candidate thread with its own client built from cfg (copied). */
struct lease *lease_start(const struct kube_config *cfg, const struct lease_opts *opts,
                          struct dd_err *err);

/*
 * 1 while this candidate holds the Lease (thread-safe): its last successful
 * write is younger than the renew deadline, so this turns 0 on time even
 * while a renewal hangs.  After losing the Lease the candidate keeps
 * competing and may lead again later; callers stop working when this is 0.
 * Expiry of a rival is judged with this candidate's own lease_duration_ms
 * (candidates of one election share their timing); lease_start requires
 * lease duration > renew deadline > retry period (DD_EINVAL otherwise).
 */
int lease_is_leader(struct lease *l);

/* Blocks until leading, stopped, or timeout_ms (-1: forever); returns lease_is_leader. */
int lease_wait_leader(struct lease *l, int timeout_ms);

/*
 * Stops the candidate; when leading, releases the Lease first.  Frees l.
 * No other call on l may be running or start (lease_wait_leader included).
 * Returns promptly: a request in flight is interrupted; the release itself
 * is one GET and one PUT, each bounded by the renew deadline.
 */
void lease_stop(struct lease *l);

/*
 * Like lease_stop, but without the release, as if the process had died: the
 * Lease keeps naming this candidate until it expires.  For tests of takeover
 * after expiry; production code uses lease_stop.
 */
void lease_abandon(struct lease *l);

#endif
