#!/bin/sh
# End-to-end tests on a real control plane (see e2e/README.md):
#   1. build (or reuse) the Kubernetes binaries and bring up a cluster with the
#      simulated node (e2e/sim);
#   2. install dra-doctor's RBAC (deploy/base) and run the node agent and the
#      controller under their own ServiceAccounts' tokens, not as admin;
#   3. run each tests/e2e/*.c program (cmocka) against it;
#   4. tear everything down, whatever happened.
# Usage: scripts/e2e.sh BUILD_DIR
set -u
B=${1:?usage: e2e.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
state=$(mktemp -d /tmp/dra-doctor-e2e.XXXXXX)
pids=""
pass=0; fail=0

cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    e2e/cluster down --dir "$state" >/dev/null 2>&1
}
trap cleanup EXIT INT TERM

record() {
    mkdir -p build
    echo "$pass $fail" >> build/test-counts
    echo "e2e: $pass passed, $fail failed"
}

root="$state/node-1/host"
mkdir -p "$root/etc/containerd"
export DD_NODE_SIM="$top/$B/nodesim --node node-1 --root $root"
if ! e2e/cluster up --dir "$state" >"$state/up.log" 2>&1; then
    cat "$state/up.log"; fail=1; record; exit 1
fi
eval "$(e2e/cluster env --dir "$state")"
export DD_HOST_ROOT="$root"

# dra-doctor's own identities: a kubeconfig per ServiceAccount token.
kubectl apply -k deploy/base >/dev/null || { fail=1; record; exit 1; }
sa_kubeconfig() { # SA FILE
    tok=$(kubectl create token "$1" -n dra-doctor --duration=2h) || return 1
    kubectl config view --raw --minify -o json >"$2.json" || return 1
    kubectl --kubeconfig="$2.json" config view --raw >"$2" 2>/dev/null
    KUBECONFIG="$2" kubectl config set-credentials sa --token="$tok" >/dev/null &&
    KUBECONFIG="$2" kubectl config set-context --current --user=sa >/dev/null
}
sa_kubeconfig dra-doctor-controller "$state/controller.kubeconfig" || { fail=1; record; exit 1; }
sa_kubeconfig dra-doctor-node "$state/node.kubeconfig" || { fail=1; record; exit 1; }

"$B/dra-doctor" node --kubeconfig "$state/node.kubeconfig" --node node-1 --host-root "$root" \
    --interval 1 >"$state/logs/node-agent.log" 2>&1 &
pids="$pids $!"
"$B/dra-doctor" controller --kubeconfig "$state/controller.kubeconfig" \
    --leader-elect-namespace dra-doctor --metrics-bind-address 127.0.0.1:0 \
    >"$state/logs/controller.log" 2>&1 &
pids="$pids $!"

for t in "$B"/e2e/e2e_*; do
    [ -x "$t" ] || continue
    o=$("$t" 2>&1); rc=$?
    printf '%s\n' "$o"
    p=$(printf '%s\n' "$o" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$o" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    [ "$rc" -eq 0 ] || { [ -z "$f" ] && fail=$((fail + 1)); }
done
if [ "$fail" -ne 0 ]; then
    for l in "$state"/logs/controller.log "$state"/logs/nodesim.log "$state"/logs/node-agent.log; do
        echo "---- $l (tail)"; tail -n 40 "$l" 2>/dev/null
    done
fi
record
[ "$fail" -eq 0 ]
