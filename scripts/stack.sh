#!/bin/sh
# The whole local stack, for the demo and the end-to-end tests:
#
#   scripts/stack.sh up STATE BUILD_DIR   a real control plane and a real node (e2e/cluster,
#                                         e2e/node) whose containerd holds dra-doctor's image,
#                                         made from the Dockerfile with BUILD_DIR's binary
#   scripts/stack.sh deploy STATE [KUSTOMIZATION]
#                                         dra-doctor as a user installs it: `kubectl apply -k`
#                                         of KUSTOMIZATION (default deploy/overlays/builtin-
#                                         certs): the certs Job, the webhook and controller
#                                         Deployments, the node agent DaemonSet, each under
#                                         its own ServiceAccount; waits until the certificates
#                                         exist, every pod is ready and the API server reaches
#                                         the webhook through its Service
#   scripts/stack.sh logs STATE           the last lines of every dra-doctor pod's log
#   scripts/stack.sh down STATE           stops all of it (e2e/cluster down)
#   scripts/stack.sh port                 prints a free loopback port
#
# After `up`: `eval "$(e2e/cluster env --dir STATE)"` gives kubectl; the node's own files
# are under STATE/node/root; logs in STATE/logs/.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
WAIT_S=${DD_STACK_WAIT_S:-180}

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

usage() {
    echo "usage: stack.sh up STATE BUILD_DIR | deploy STATE [KUSTOMIZATION] | logs STATE | down STATE | port" >&2
    exit 2
}

logs() {
    for p in $(kubectl get pods -n dra-doctor -o name 2>/dev/null); do
        echo "---- kubectl logs -n dra-doctor $p (tail)"
        kubectl logs -n dra-doctor "$p" --all-containers --tail=40 2>&1 || true
    done
}

cmd=${1:-}
[ "$cmd" = port ] && { free_port; exit 0; }
state=${2:-}
[ -n "$state" ] || usage

case "$cmd" in
up)
    B=${3:-}
    [ -n "$B" ] || usage
    mkdir -p "$state"
    DD_IMAGE_BIN="$top/$B/dra-doctor" e2e/cluster up --dir "$state" --node real \
        >"$state/up.log" 2>&1 || { cat "$state/up.log" >&2; exit 1; }
    grep '^cluster: node ' "$state/up.log" >&2 || true
    ;;
deploy)
    k=${3:-deploy/overlays/builtin-certs}
    eval "$(e2e/cluster env --dir "$state")"
    t0=$(date +%s)
    kubectl apply -k "$k" >"$state/logs/deploy.log" 2>&1 || { cat "$state/logs/deploy.log" >&2; exit 1; }
    # The certs Job writes the Secret the webhook's pods mount, and the caBundle.
    if ! kubectl wait -n dra-doctor --for=condition=complete job/dra-doctor-certs \
            --timeout="${WAIT_S}s" >>"$state/logs/deploy.log" 2>&1 ||
       ! kubectl rollout status -n dra-doctor deployment/dra-doctor-webhook \
            --timeout="${WAIT_S}s" >>"$state/logs/deploy.log" 2>&1 ||
       ! kubectl rollout status -n dra-doctor deployment/dra-doctor-controller \
            --timeout="${WAIT_S}s" >>"$state/logs/deploy.log" 2>&1 ||
       ! kubectl rollout status -n dra-doctor daemonset/dra-doctor-node \
            --timeout="${WAIT_S}s" >>"$state/logs/deploy.log" 2>&1; then
        cat "$state/logs/deploy.log" >&2
        kubectl get pods -n dra-doctor -o wide >&2 || true
        logs >&2
        exit 1
    fi
    # The webhook answers through its Service once the API server sees its endpoints.
    probe='{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"dd-stack-probe"}}'
    i=0
    until echo "$probe" | kubectl create --dry-run=server -f - >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt $((WAIT_S * 4)) ]; then
            echo "stack: the API server does not reach the webhook:" >&2
            echo "$probe" | kubectl create --dry-run=server -f - >&2 || true
            logs >&2
            exit 1
        fi
        sleep 0.25
    done
    echo "stack: dra-doctor deployed from $k in $(( $(date +%s) - t0 )) s" >&2
    ;;
logs)
    eval "$(e2e/cluster env --dir "$state")"
    logs
    ;;
down)
    e2e/cluster down --dir "$state" >"$state/down.log" 2>&1 || { cat "$state/down.log" >&2; exit 1; }
    ;;
*)
    usage
    ;;
esac
