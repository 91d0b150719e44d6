#!/bin/sh
# End-to-end tests on a real control plane (see e2e/README.md):
#   1. build (or reuse) the Kubernetes binaries and bring up a cluster with the
#      simulated node (e2e/sim);
#   2. install dra-doctor's RBAC (deploy/base) and run the node agent and the
#      controller under their own ServiceAccounts' tokens, not as admin;
#   3. run each tests/e2e/*.c program (cmocka) against it;
#   4. tear everything down, whatever happened.
# Usage: scripts/e2e.sh BUILD_DIR
# DD_E2E_ONLY=PATTERN runs only the programs whose name matches the shell
# pattern (e.g. 'e2e_faults'); DD_E2E_KEEP=1 keeps the state directory (logs).
#
# The tests get, besides KUBECONFIG, DD_CLUSTER_DIR and DD_HOST_ROOT:
#   DD_CONTROLLER_METRICS    ADDR:PORT of the controller's /metrics, /readyz
#   DD_CONTROLLER_PID        its pid (a test that kills it must start a
#                            replacement, see e2e_faults.c)
#   DD_CONTROLLER_CMD        the command line that starts a controller replica,
#                            without --identity and --metrics-bind-address
#   DD_CONTROLLER_LOG        its log file
#   DD_BIN                   the dra-doctor binary under test
# A test that starts processes of its own appends their pids to
# $DD_CLUSTER_DIR/extra-pids; the cleanup here kills whatever is left of them.
set -u
B=${1:?usage: e2e.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
state=$(mktemp -d /tmp/dra-doctor-e2e.XXXXXX)
pass=0; fail=0

cleanup() {
    scripts/stack.sh down "$state"
    # The logs were printed on failure; DD_E2E_KEEP=1 keeps the state directory to look further.
    [ -n "${DD_E2E_KEEP:-}" ] || rm -rf "$state"
}
trap cleanup EXIT INT TERM

record() {
    mkdir -p build
    echo "$pass $fail" >> build/test-counts
    echo "e2e: $pass passed, $fail failed"
}

# The cluster, the simulated node, dra-doctor's RBAC and node agent; the controller is
# started below with the tests' own flags.
if ! DD_STACK_CONTROLLER=0 scripts/stack.sh up "$state" "$B"; then
    fail=1; record; exit 1
fi
eval "$(e2e/cluster env --dir "$state")"
export DD_HOST_ROOT="$state/node-1/host"

# Short leader-election timings, so that the failover test (e2e_faults) does
# not wait out the default 15 s lease.  A replica is this command plus its own
# --identity and --metrics-bind-address.
export DD_CONTROLLER_CMD="$top/$B/dra-doctor controller --kubeconfig $state/controller.kubeconfig \
--leader-elect-namespace dra-doctor --leader-elect-lease-duration 4 \
--leader-elect-renew-deadline 3 --leader-elect-retry-period 1"
DD_CONTROLLER_METRICS="127.0.0.1:$(scripts/stack.sh port)"
export DD_CONTROLLER_METRICS
export DD_CONTROLLER_LOG="$state/logs/controller.log"
export DD_BIN="$top/$B/dra-doctor"
# shellcheck disable=SC2086
$DD_CONTROLLER_CMD --identity controller-0 --metrics-bind-address "$DD_CONTROLLER_METRICS" \
    >"$DD_CONTROLLER_LOG" 2>&1 &
export DD_CONTROLLER_PID=$!
echo "$DD_CONTROLLER_PID" >>"$state/dd.pids"
i=0
until curl -sf --max-time 2 "http://$DD_CONTROLLER_METRICS/readyz" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 240 ] || ! kill -0 "$DD_CONTROLLER_PID" 2>/dev/null; then
        echo "e2e: the controller did not become ready"; tail -n 40 "$DD_CONTROLLER_LOG"
        fail=1; record; exit 1
    fi
    sleep 0.25
done

for t in "$B"/e2e/e2e_*; do
    [ -x "$t" ] || continue
    # shellcheck disable=SC2254
    case ${t##*/} in ${DD_E2E_ONLY:-*}) ;; *) continue ;; esac
    o=$("$t" 2>&1); rc=$?
    printf '%s\n' "$o"
    p=$(printf '%s\n' "$o" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$o" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    [ "$rc" -eq 0 ] || { [ -z "$f" ] && fail=$((fail + 1)); }
done
if [ "$fail" -ne 0 ]; then
    for l in "$state"/logs/controller*.log "$state"/logs/nodesim.log "$state"/logs/node-agent.log; do
        echo "---- $l (tail)"; tail -n 40 "$l" 2>/dev/null
    done
fi
record
[ "$fail" -eq 0 ]
