#!/bin/sh
# The watching webhook's memory over a dump, in a minute and without a cluster
# (docs/benchmarks.md, "Webhook"): bench/lint-cluster-mock.py --dump serves the dump's objects
# as a quiet API server would (LIST pages; WATCH streams that stay open and silent);
# `dra-doctor webhook` lists them and builds its view; its RSS, peak (VmHWM) and views built are
# read once /readyz answers and BENCH_SETTLE (5) seconds more have passed.  The API server is
# simulated: the figure of record is bench/controller-bench.sh's, on the real one.
# Usage: bench/webhook-mem.sh DUMP   (DUMP from `bench/ctl-load.py dump FILE`)
# Env: DD_BIN (build/release/dra-doctor), BENCH_SETTLE (5)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
DD_BIN=${DD_BIN:-build/release/dra-doctor}
dump=${1:?usage: bench/webhook-mem.sh DUMP}
work=$(mktemp -d /tmp/dra-doctor-whmem.XXXXXX)
mock=""; wh=""
cleanup() {
    [ -n "$wh" ] && kill "$wh" 2>/dev/null && wait "$wh" 2>/dev/null
    [ -n "$mock" ] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "webhook-mem: $*" >&2; exit 1; }
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

[ -x "$DD_BIN" ] || die "no $DD_BIN (make -s first)"
[ -r "$dump" ] || die "cannot read $dump"
"$DD_BIN" certs --service dra-doctor-webhook --namespace dra-doctor --out-dir "$work/certs" \
    --ip 127.0.0.1 >/dev/null 2>&1 || die "dra-doctor certs failed"
aport=$(port); wport=$(port)
cat >"$work/kubeconfig" <<K
apiVersion: v1
kind: Config
clusters: [{name: mock, cluster: {server: "http://127.0.0.1:$aport"}}]
users: [{name: u, user: {token: mock}}]
contexts: [{name: mock, context: {cluster: mock, user: u}}]
current-context: mock
K
python3 bench/lint-cluster-mock.py --dump "$dump" "$aport" 2>"$work/mock.log" & mock=$!
until curl -sf "http://127.0.0.1:$aport/version" >/dev/null 2>&1; do
    kill -0 "$mock" 2>/dev/null || { cat "$work/mock.log" >&2; die "the mock API server exited"; }
    sleep 0.2
done
t0=$(date +%s.%N)
"$DD_BIN" webhook --kubeconfig "$work/kubeconfig" --tls-cert-file "$work/certs/tls.crt" \
    --tls-key-file "$work/certs/tls.key" --bind 127.0.0.1 --port "$wport" >"$work/webhook.log" 2>&1 &
wh=$!
until curl -sf --max-time 5 --cacert "$work/certs/ca.crt" "https://127.0.0.1:$wport/readyz" >/dev/null 2>&1; do
    kill -0 "$wh" 2>/dev/null || { cat "$work/webhook.log" >&2; die "the webhook exited"; }
    sleep 0.2
done
ready=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
sleep "${BENCH_SETTLE:-5}"
views=$(curl -s --cacert "$work/certs/ca.crt" "https://127.0.0.1:$wport/metrics" |
    awk '$1 == "dra_doctor_webhook_views_total" { print $2 }')
awk -v ready="$ready" -v views="$views" '
    /^VmRSS/ { rss = $2 } /^VmHWM/ { hwm = $2 }
    END { printf "webhook-mem: ready after %s s, %s view(s); RSS %.1f MiB, peak (VmHWM) %.1f MiB\n",
          ready, views, rss / 1024, hwm / 1024 }' "/proc/$wh/status"
