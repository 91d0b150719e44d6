#!/bin/sh
# End-to-end tests on a real control plane and a real node (see e2e/README.md):
#   1. build (or reuse) Kubernetes, the kubelet, containerd and the DRA example driver,
#      bring up the cluster and its node (e2e/cluster, e2e/node), with dra-doctor's image
#      made from the Dockerfile and imported into the node's containerd;
#   2. deploy dra-doctor from deploy/ (e2e/deploy: the builtin-certs overlay with a short
#      leader-election lease): the certs Job, the webhook and the controller Deployments,
#      the node agent DaemonSet, each under its own ServiceAccount;
#   3. run each tests/e2e/*.c program (cmocka) against it;
#   4. tear everything down, whatever happened, and check that the machine is left as it
#      was (no bridge, iptables chain, cgroup, mount point or lock of the node).
# Usage: scripts/e2e.sh BUILD_DIR
# DD_E2E_ONLY=PATTERN runs only the programs whose name matches the shell
# pattern (e.g. 'e2e_faults'), DD_E2E_TEST=NAME only that test of e2e_modes; DD_E2E_KEEP=1
# keeps the state directory (logs).
#
# The tests get KUBECONFIG (admin), DD_CLUSTER_DIR, DD_NODE_NAME (the real node),
# DD_HOST_ROOT (the node's own files: etc/containerd, var/run/cdi, ...), DD_BIN (the
# dra-doctor binary under test, the one in the image) and DD_HELM (helm, e2e/node/build.sh).
set -u
B=${1:?usage: e2e.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# One e2e at a time on a machine (it has one real node): a second run waits for the first.
# flock -o: the lock is flock's own, so no daemon of the node inherits it.
if [ -z "${DD_E2E_LOCKED:-}" ]; then
    lock=${TMPDIR:-/tmp}/dra-doctor-e2e.lock
    flock -n "$lock" true || echo "e2e: another e2e run holds $lock; waiting for it"
    DD_E2E_LOCKED=1 exec flock -o "$lock" sh "$0" "$@"
fi
# A pattern that names no built program would run only the cluster checks and pass.
if [ -n "${DD_E2E_ONLY:-}" ]; then
    matched=""
    for t in "$B"/e2e/e2e_*; do
        [ -x "$t" ] || continue
        # shellcheck disable=SC2254
        case ${t##*/} in $DD_E2E_ONLY) matched=1 ;; esac
    done
    [ -n "$matched" ] || { echo "e2e: DD_E2E_ONLY='$DD_E2E_ONLY' matches no program in $B/e2e (make test-e2e builds them; make $B/e2e/NAME builds one)" >&2; exit 2; }
fi
state=$(mktemp -d /tmp/dra-doctor-e2e.XXXXXX)
pass=0; fail=0; recorded=0

record() {
    [ $recorded = 0 ] || return 0
    recorded=1
    mkdir -p build
    echo "$pass $fail" >> build/test-counts
    echo "e2e: $pass passed, $fail failed"
}

# What a real node must not leave behind (e2e/node/node.sh, node_cleanup).
leftovers() {
    ip link show ddcni0 >/dev/null 2>&1 && echo "bridge ddcni0"
    for c in DD-NODE-IN DD-NODE-FWD; do iptables -S "$c" >/dev/null 2>&1 && echo "iptables chain $c"; done
    iptables -t nat -S DD-NODE >/dev/null 2>&1 && echo "iptables nat chain DD-NODE"
    iptables -S KUBE-FIREWALL >/dev/null 2>&1 && echo "iptables chain KUBE-FIREWALL"
    for d in /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods; do [ -d "$d" ] && echo "cgroup $d"; done
    [ -e /run/dra-doctor-node ] && echo "node lock /run/dra-doctor-node"
    for m in /var/lib/kubelet /var/lib/containerd /run/containerd /etc/cdi /run/cdi /run/netns; do
        [ -e "$m" ] && ! grep -qsx "$m" "$state/preexisting" && echo "mount point $m"
        grep -qs " $m " /proc/self/mounts && echo "mount $m"
    done
    grep -qs "$state" /proc/self/mounts && echo "a mount under $state"
    [ -d "$state/node/root" ] && echo "node state $state/node/root"
    return 0
}

cleanup() {
    trap - EXIT INT TERM
    scripts/stack.sh down "$state" || echo "e2e: stack.sh down failed"
    left=$(leftovers)
    if [ -n "$left" ]; then
        echo "e2e: the real node left behind:"; echo "$left" | sed 's/^/  /'
        fail=$((fail + 1))
    else
        echo "e2e: the real node left nothing behind"
        pass=$((pass + 1))
    fi
    record
    # The logs were printed on failure; DD_E2E_KEEP=1 keeps the state directory to look further.
    [ -n "${DD_E2E_KEEP:-}" ] || rm -rf "$state"
    [ "$fail" -eq 0 ]
    exit $?
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Paths that exist before the node starts are not the node's leftovers.
for m in /var/lib/kubelet /var/lib/containerd /run/containerd /etc/cdi /run/cdi /run/netns; do
    [ -e "$m" ] && echo "$m" >>"$state/preexisting"
done

t0=$(date +%s)
if ! scripts/stack.sh up "$state" "$B"; then
    fail=$((fail + 1)); exit 1
fi
if ! scripts/stack.sh deploy "$state" e2e/deploy; then
    fail=$((fail + 1)); exit 1
fi
echo "e2e: cluster, node and dra-doctor ready in $(( $(date +%s) - t0 )) s"
eval "$(e2e/cluster env --dir "$state")"

# One real node per machine: a second `up` fails at once, naming this cluster, and
# leaves it as it was.
second=$(mktemp -d /tmp/dra-doctor-e2e-second.XXXXXX)
if o=$(e2e/cluster up --dir "$second" 2>&1); then
    echo "e2e: a second real node came up beside the first: $o"; fail=$((fail + 1))
    e2e/cluster down --dir "$second" >/dev/null 2>&1
elif ! printf '%s' "$o" | grep -q "a real node is already running on this machine, for the cluster in $state"; then
    echo "e2e: the second up failed without naming the node's owner: $o"; fail=$((fail + 1))
elif ! kubectl get node "$DD_NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' |
        grep -qx True; then
    echo "e2e: the second up disturbed the first node"; fail=$((fail + 1))
else
    echo "e2e: a second up is refused: $(printf '%s' "$o" | grep -o 'a real node is already running[^:]*')"
    pass=$((pass + 1))
fi
rm -rf "$second"
export DD_HOST_ROOT="$state/node/root"
export DD_BIN="$top/$B/dra-doctor"
# The image the node imports when a test restarts it (e2e/cluster node up).
export DD_IMAGE_BIN="$DD_BIN"

# e2e_containerd2 and e2e_helm last: what they need (containerd 2, helm) may still be
# building in the background (scripts/prebuild.sh) while the others run.  e2e_burst after
# them: it times requests under load, so it wants the cores without those builds.
for t in $(ls "$B"/e2e/e2e_* | grep -v -e /e2e_containerd2 -e /e2e_helm -e /e2e_burst) \
         "$B"/e2e/e2e_containerd2 "$B"/e2e/e2e_helm "$B"/e2e/e2e_burst; do
    [ -x "$t" ] || continue
    # shellcheck disable=SC2254
    case ${t##*/} in ${DD_E2E_ONLY:-*}) ;; *) continue ;; esac
    if [ "${t##*/}" = e2e_helm ]; then
        # helm, built from its Go module once, then cached.
        th=$(date +%s)
        if ! helm_dir=$(e2e/node/build.sh helm | sed -n 's/^helm //p') || [ ! -x "$helm_dir/helm" ]; then
            echo "e2e: building helm failed"; fail=$((fail + 1)); continue
        fi
        export DD_HELM="$helm_dir/helm"
        echo "e2e: helm $("$DD_HELM" version --short) ready in $(( $(date +%s) - th )) s"
    fi
    t1=$(date +%s)
    o=$("$t" 2>&1); rc=$?
    printf '%s\n' "$o"
    echo "e2e: ${t##*/} took $(( $(date +%s) - t1 )) s"
    p=$(printf '%s\n' "$o" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$o" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    [ "$rc" -eq 0 ] || { [ -z "$f" ] && fail=$((fail + 1)); }
done
if [ "$fail" -ne 0 ]; then
    scripts/stack.sh logs "$state"
    for l in "$state"/logs/kubelet.log "$state"/logs/containerd.log; do
        echo "---- $l (tail)"; tail -n 30 "$l" 2>/dev/null
    done
fi
echo "e2e: all programs in $(( $(date +%s) - t0 )) s"
