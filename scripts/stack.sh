#!/bin/sh
# The whole local stack, for the demo and the end-to-end tests:
#
#   scripts/stack.sh up STATE BUILD_DIR   control plane + simulated node (e2e/cluster,
#                                         e2e/sim), dra-doctor's RBAC (deploy/base), the
#                                         node agent and the controller, each under its
#                                         own ServiceAccount token (not as admin)
#   scripts/stack.sh down STATE           stops all of it
#
# After `up`, `eval "$(e2e/cluster env --dir STATE)"` gives kubectl; the
# simulated node's filesystem is STATE/node-1/host; logs are in STATE/logs/.
# Extra controller flags: DD_CONTROLLER_ARGS.  The controller's metrics
# address is written to STATE/controller.metrics.
set -eu
cmd=${1:?usage: stack.sh up STATE BUILD_DIR | down STATE}
state=${2:?usage: stack.sh up STATE BUILD_DIR | down STATE}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A kubeconfig for ServiceAccount $1 (token from the TokenRequest API) in file $2.
sa_kubeconfig() {
    tok=$(kubectl create token "$1" -n dra-doctor --duration=12h)
    kubectl config view --raw --minify >"$2"
    KUBECONFIG="$2" kubectl config set-credentials "$1" --token="$tok" >/dev/null
    KUBECONFIG="$2" kubectl config set-context --current --user="$1" >/dev/null
}

case "$cmd" in
up)
    B=${3:?usage: stack.sh up STATE BUILD_DIR}
    root="$state/node-1/host"
    mkdir -p "$root/etc/containerd"
    export DD_NODE_SIM="$top/$B/nodesim --node node-1 --root $root"
    e2e/cluster up --dir "$state" >"$state/up.log" 2>&1 || { cat "$state/up.log" >&2; exit 1; }
    eval "$(e2e/cluster env --dir "$state")"
    kubectl apply -k deploy/base >/dev/null
    sa_kubeconfig dra-doctor-controller "$state/controller.kubeconfig"
    sa_kubeconfig dra-doctor-node "$state/node.kubeconfig"
    port=$(free_port)
    echo "127.0.0.1:$port" >"$state/controller.metrics"
    # The agent reads the simulated node's containerd config, as its DaemonSet would the host's.
    setsid "$B/dra-doctor" node --kubeconfig "$state/node.kubeconfig" --node node-1 \
        --host-root "$root" --interval 1 >"$state/logs/node-agent.log" 2>&1 &
    echo $! >>"$state/dd.pids"
    # shellcheck disable=SC2086
    setsid "$B/dra-doctor" controller --kubeconfig "$state/controller.kubeconfig" \
        --leader-elect-namespace dra-doctor --metrics-bind-address "127.0.0.1:$port" \
        ${DD_CONTROLLER_ARGS:-} >"$state/logs/controller.log" 2>&1 &
    echo $! >>"$state/dd.pids"
    ;;
down)
    if [ -f "$state/dd.pids" ]; then
        for p in $(cat "$state/dd.pids"); do kill "$p" 2>/dev/null || true; done
        for p in $(cat "$state/dd.pids"); do
            i=0
            while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
            kill -9 "$p" 2>/dev/null || true
        done
        rm -f "$state/dd.pids"
    fi
    e2e/cluster down --dir "$state" >/dev/null 2>&1 || true
    ;;
*)
    echo "usage: stack.sh up STATE BUILD_DIR | down STATE" >&2
    exit 2
    ;;
esac
