#!/bin/sh
# The whole local stack, for the demo and the end-to-end tests:
#
#   scripts/stack.sh up STATE BUILD_DIR   control plane + simulated node (e2e/cluster,
#                                         e2e/sim), dra-doctor's RBAC (deploy/base/rbac), the
#                                         node agent and (unless DD_STACK_CONTROLLER=0) the
#                                         controller, each under its own ServiceAccount's
#                                         token (not as admin)
#   scripts/stack.sh down STATE           stops all of it, including controller replicas
#                                         whose pids a test appended to STATE/extra-pids
#   scripts/stack.sh port                 prints a free loopback port
#   scripts/stack.sh webhook STATE BUILD_DIR
#                                         after `up`: certificates (dra-doctor certs), the
#                                         webhook under its ServiceAccount's token on a
#                                         loopback port, and deploy/base's
#                                         ValidatingWebhookConfiguration pointed at it
#                                         (clientConfig.url instead of the Service)
#
# After `up`: `eval "$(e2e/cluster env --dir STATE)"` gives kubectl; the simulated node's
# filesystem is STATE/node-1/host; logs are in STATE/logs/; STATE/controller.kubeconfig is the
# controller's identity; the controller's metrics address is in STATE/controller.metrics.
# Extra controller flags: DD_CONTROLLER_ARGS.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# A free loopback port below the kernel's ephemeral range and outside e2e/cluster's 20000-45000.
free_port() {
    used=" $(ss -Htan 2>/dev/null | awk '{n=split($4,a,":"); printf "%s ", a[n]}')"
    while :; do
        p=$((10000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 10000))
        case "$used" in *" $p "*) continue ;; esac
        echo "$p"
        return
    done
}

cmd=${1:?usage: stack.sh up STATE BUILD_DIR | down STATE | port}
[ "$cmd" = port ] && { free_port; exit 0; }
state=${2:?usage: stack.sh up STATE BUILD_DIR | down STATE}

# A kubeconfig for ServiceAccount $1 (a TokenRequest token) in file $2.
sa_kubeconfig() {
    tok=$(kubectl create token "$1" -n dra-doctor --duration=12h)
    kubectl config view --raw --minify >"$2"
    KUBECONFIG="$2" kubectl config set-credentials "$1" --token="$tok" >/dev/null
    KUBECONFIG="$2" kubectl config set-context --current --user="$1" >/dev/null
}

# Pids in a file that still run a dra-doctor process (never a recycled pid).  Returns 0
# even when the last pid is gone: under set -e, `x="$(live_pids ...)"` would otherwise end
# `down` before it stops anything.
live_pids() {
    [ -f "$1" ] || return 0
    while read -r p; do
        if tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q "dra-doctor"; then
            echo "$p"
        fi
    done <"$1"
}

case "$cmd" in
up)
    B=${3:?usage: stack.sh up STATE BUILD_DIR}
    root="$state/node-1/host"
    mkdir -p "$root/etc/containerd"
    export DD_NODE_SIM="$top/$B/nodesim --node node-1 --root $root"
    e2e/cluster up --dir "$state" >"$state/up.log" 2>&1 || { cat "$state/up.log" >&2; exit 1; }
    eval "$(e2e/cluster env --dir "$state")"
    kubectl apply -k deploy/base/rbac >/dev/null
    sa_kubeconfig dra-doctor-controller "$state/controller.kubeconfig"
    sa_kubeconfig dra-doctor-node "$state/node.kubeconfig"
    sa_kubeconfig dra-doctor-webhook "$state/webhook.kubeconfig"
    # The agent reads the simulated node's containerd config, as its DaemonSet would the host's.
    "$B/dra-doctor" node --kubeconfig "$state/node.kubeconfig" --node node-1 \
        --host-root "$root" --interval 1 >"$state/logs/node-agent.log" 2>&1 &
    echo $! >>"$state/dd.pids"
    [ "${DD_STACK_CONTROLLER:-1}" = 0 ] && exit 0
    addr="127.0.0.1:$(free_port)"
    echo "$addr" >"$state/controller.metrics"
    # shellcheck disable=SC2086
    "$B/dra-doctor" controller --kubeconfig "$state/controller.kubeconfig" \
        --leader-elect-namespace dra-doctor --metrics-bind-address "$addr" \
        ${DD_CONTROLLER_ARGS:-} >"$state/logs/controller.log" 2>&1 &
    echo $! >>"$state/dd.pids"
    ;;
down)
    x="$(live_pids "$state/dd.pids") $(live_pids "$state/extra-pids")"
    for p in $x; do kill "$p" 2>/dev/null || true; done
    for p in $x; do
        i=0
        while [ -d "/proc/$p" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL "$p" 2>/dev/null || true
    done
    rm -f "$state/dd.pids"
    e2e/cluster down --dir "$state" >/dev/null 2>&1 || true
    ;;
webhook)
    B=${3:?usage: stack.sh webhook STATE BUILD_DIR}
    eval "$(e2e/cluster env --dir "$state")"
    d="$state/webhook"
    mkdir -p "$d"
    "$B/dra-doctor" certs --service dra-doctor-webhook --namespace dra-doctor --out-dir "$d" \
        --ip 127.0.0.1 >"$state/logs/certs.log" 2>&1 || { cat "$state/logs/certs.log" >&2; exit 1; }
    port=$(free_port)
    "$B/dra-doctor" webhook --kubeconfig "$state/webhook.kubeconfig" --bind 127.0.0.1 \
        --port "$port" --tls-cert-file "$d/tls.crt" --tls-key-file "$d/tls.key" \
        >"$state/logs/webhook.log" 2>&1 &
    echo $! >>"$state/dd.pids"
    i=0
    until curl -sf --max-time 2 --cacert "$d/ca.crt" "https://127.0.0.1:$port/readyz" >/dev/null; do
        i=$((i + 1))
        [ $i -gt 120 ] && { echo "webhook not ready" >&2; tail "$state/logs/webhook.log" >&2; exit 1; }
        sleep 0.25
    done
    # The shipped configuration, with the Service reference swapped for this loopback URL.
    kubectl create --dry-run=client -o json -f deploy/base/webhook-config.yaml |
        python3 -c 'import base64, json, sys
vwc = json.load(sys.stdin)
url, ca = sys.argv[1], base64.b64encode(open(sys.argv[2], "rb").read()).decode()
for w in vwc["webhooks"]:
    w["clientConfig"] = {"url": url, "caBundle": ca}
json.dump(vwc, sys.stdout)' "https://127.0.0.1:$port/validate" "$d/ca.crt" >"$d/vwc.json"
    kubectl apply -f "$d/vwc.json" >/dev/null
    echo "$port" >"$state/webhook.port"
    ;;
*)
    echo "usage: stack.sh up STATE BUILD_DIR | down STATE | webhook STATE BUILD_DIR | port" >&2
    exit 2
    ;;
esac
