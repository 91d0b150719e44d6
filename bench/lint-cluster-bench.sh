#!/usr/bin/env bash
# `dra-doctor lint --cluster-inventory` on a large cluster: bench/lint-cluster-mock.py serves
# N Nodes (each a ResourceSlice of 8 GPUs, all but one node's GPUs held by an allocated claim
# of a running pod) in pages of 500, as kube-apiserver does; lint judges one pod asking for
# 8 GPUs (it fits on the last node only) and then, with every node's GPUs held, one that
# fits nowhere (every node judged and explained).  For N and 10*N it prints dra-doctor's CPU
# time (user + sys), peak RSS and the ratios: cost and memory should grow about 10 times.
# The mock's own time (Python, building and serving the JSON) is outside dra-doctor's CPU.
#
# Env: BENCH_N (1000)  BENCH_PORT (18555)  DD_BIN (./dra-doctor)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${BENCH_N:-1000}
port=${BENCH_PORT:-18555}
bin=${DD_BIN:-./dra-doctor}
tmp=$(mktemp -d /tmp/dd-lint-cluster-bench.XXXXXX)
mock=
cleanup() { [ -z "$mock" ] || kill "$mock" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
cat >"$tmp/kubeconfig" <<K
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:$port"}}]
contexts: [{name: bench, context: {cluster: c, user: u}}]
current-context: bench
users: [{name: u, user: {token: t}}]
K
cat >"$tmp/app.yaml" <<'M'
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: eight, namespace: ns}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com, count: 8}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ns}
spec:
  resourceClaims: [{name: gpus, resourceClaimTemplateName: eight}]
  containers:
  - {name: app, image: x, resources: {claims: [{name: gpus}]}}
M
printf '| nodes | claims | verdict | exit | CPU s (user + sys) | peak RSS MiB |\n|---:|---:|---|---:|---:|---:|\n'
declare -A cpu rss
for size in "$n" $((10 * n)); do
    for claims in $((size - 1)) "$size"; do
        python3 bench/lint-cluster-mock.py "$size" "$port" "$claims" & mock=$!
        for _ in $(seq 1 600); do
            curl -sf "http://127.0.0.1:$port/version" >/dev/null 2>&1 && break
            sleep 0.1
        done
        set +e
        /usr/bin/time -f '%U %S %M' -o "$tmp/time" "$bin" lint --cluster-inventory \
            --kubeconfig "$tmp/kubeconfig" "$tmp/app.yaml" -o json >"$tmp/out" 2>"$tmp/err"
        rc=$?
        set -e
        kill "$mock"; wait "$mock" 2>/dev/null || true; mock=
        [ "$rc" -le 1 ] || { cat "$tmp/err" >&2; exit 2; }
        read -r u s m < <(tail -n 1 "$tmp/time")
        verdict=$([ "$rc" = 1 ] && echo "fits nowhere" || echo "fits on the last node")
        c=$(echo "$u + $s" | bc)
        printf '| %d | %d | %s | %d | %.2f (%s + %s) | %.1f |\n' "$size" "$claims" "$verdict" \
            "$rc" "$c" "$u" "$s" "$(echo "$m / 1024" | bc -l)"
        cpu[$size-$rc]=$c; rss[$size-$rc]=$m
    done
done
for rc in 0 1; do
    echo "10*N vs N ($([ $rc = 1 ] && echo 'fits nowhere' || echo 'fits')): CPU x$(echo "scale=1; ${cpu[$((10 * n))-$rc]} / ${cpu[$n-$rc]}" | bc), RSS x$(echo "scale=1; ${rss[$((10 * n))-$rc]} / ${rss[$n-$rc]}" | bc)"
done
