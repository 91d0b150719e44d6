#!/bin/sh
# Controller benchmark on a real control plane (docs/benchmarks.md, "Controller on a real
# control plane"):
#   1. e2e/cluster up in its own state dir (no nodesim: the nodes are fake Node objects whose
#      Leases bench/ctl-load.py renews; see that file for the load);
#   2. bench/ctl-load.py creates 100 Nodes, 500 ResourceSlices, 200 DeviceClasses, 6 driver
#      DaemonSets, ~4,700 claims and 5,000 pods, then waits until the scheduler has bound the
#      healthy ones;
#   3. starts `dra-doctor controller` under its own ServiceAccount (deploy/base) and polls
#      until every pod shows the root cause it should (healthy ones: none);
#   4. BENCH_SAMPLES (120) reaction samples: create a pod (and its claim) with a fault, time
#      until the pod's dra-doctor.io/root-cause names it (a watch, so no poll granularity);
#   5. with BENCH_WEBHOOK=1, the loaded webhook run on the same cluster: `dra-doctor webhook`
#      under its own ServiceAccount (deploy/base/rbac) watching it, bench/whload open loop at
#      BENCH_RATE (2,000) req/s over 8 connections for 30 s, rotating three requests answered at
#      once (a correct DeviceClass, a ResourceClaim, a Pod whose unallocated claim makes the
#      allocator run over the whole inventory: ctl-load.py webhook-bodies); latency from the
#      scheduled send time, the webhook's RSS with the cluster in its caches and its peak; the
#      same open loop against `webhook --null-baseline` (no caches, no decoding) before and
#      after, so the machine's own share of the p99 shows beside it;
#   6. prints a table: time to diagnose all, reaction p50/p90/p99/max, the controller's peak
#      RSS (VmHWM) and CPU seconds (utime+stime); tears the cluster down.
# Usage: bench/controller-bench.sh [BUILD_DIR]   (default build/release)
# Env: BENCH_PODS (5000), BENCH_NODES (100), BENCH_DEVS (8 devices per ResourceSlice; issue
#      18's 10,000 devices on 1,000 nodes: 2), BENCH_SAMPLES (120), BENCH_DIR (state dir),
#      BENCH_KEEP=1 (leave the cluster up, its Leases renewed), DD_BIN (another dra-doctor binary),
#      BENCH_CTL_ARGS (extra controller flags), BENCH_MD=file (also write the table as Markdown),
#      BENCH_WEBHOOK=1 (step 5), BENCH_RATE (2000), BENCH_CONTROLLER=0 (skip steps 3 and 4:
#      the loaded webhook run alone, no controller competing for the cores).
set -u
B=${1:-build/release}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
DD_BIN=${DD_BIN:-$B/dra-doctor}
SAMPLES=${BENCH_SAMPLES:-120}
state=${BENCH_DIR:-$(mktemp -d /tmp/dra-doctor-ctlbench.XXXXXX)}
ctl_pid=""; renew_pid=""; wh_pid=""; bpid=""

cleanup() {
    [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
    [ -n "$wh_pid" ] && kill "$wh_pid" 2>/dev/null && wait "$wh_pid" 2>/dev/null
    [ -n "$bpid" ] && kill "$bpid" 2>/dev/null && wait "$bpid" 2>/dev/null
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        [ -n "$renew_pid" ] && kill "$renew_pid" 2>/dev/null && wait "$renew_pid" 2>/dev/null
        e2e/cluster down --dir "$state" --purge >/dev/null 2>&1
    elif [ -n "$renew_pid" ]; then
        # Without their Leases renewed the fake nodes go NotReady within a minute and their
        # pods are evicted: a kept cluster keeps its renewer.
        echo "controller-bench: cluster kept in $state; its nodes' Leases renewed by pid $renew_pid" \
             "(kill it, then e2e/cluster down --dir $state --purge)"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "controller-bench: $*" >&2; exit 1; }

[ -x "$DD_BIN" ] || die "no $DD_BIN (make -s first)"
unset DD_NODE_SIM
echo "controller-bench: cluster in $state"
e2e/cluster up --dir "$state" --node none >"$state.up.log" 2>&1 || { cat "$state.up.log"; die "cluster up failed"; }
mv "$state.up.log" "$state/up.log"
eval "$(e2e/cluster env --dir "$state")"

kubectl apply -k deploy/base/rbac >/dev/null || die "kubectl apply -k deploy/base/rbac failed"
tok=$(kubectl create token dra-doctor-controller -n dra-doctor --duration=2h) || die "no token"
kubectl config view --raw --minify -o json >"$state/controller.kubeconfig.json"
kubectl --kubeconfig="$state/controller.kubeconfig.json" config view --raw >"$state/controller.kubeconfig"
KUBECONFIG="$state/controller.kubeconfig" kubectl config set-credentials sa --token="$tok" >/dev/null
KUBECONFIG="$state/controller.kubeconfig" kubectl config set-context --current --user=sa >/dev/null

t=$(date +%s)
python3 bench/ctl-load.py renew >"$state/logs/renew.log" 2>&1 &
renew_pid=$!
python3 bench/ctl-load.py create "$state/expected.json" || die "load creation failed"
python3 bench/ctl-load.py settle "$state/expected.json" || die "scheduling did not settle"
python3 bench/ctl-load.py react-setup "$SAMPLES" || die "react-setup failed"
echo "controller-bench: load ready in $(( $(date +%s) - t )) s"
npods=$(kubectl get pods -A --no-headers 2>/dev/null | wc -l)
nclaims=$(kubectl get resourceclaims -A --no-headers 2>/dev/null | wc -l)
nevents=$(kubectl get events -A --no-headers 2>/dev/null | wc -l)

metric() { awk -v m="$1" '$1 == m { print $2 }' "$state/metrics.txt"; }
cpu_s() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; }
hwm_mib() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss_mib() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

cpu1=""; hwm1=""; rss1=""; cpu2=""; hwm2=""; rss2=""; all_s=""; react=""; answered=""
p50=""; p90=""; p99=""; max=""; builds=""; build_avg=""; build_cpu_avg=""; build_max=""
: >"$state/metrics.txt"
if [ "${BENCH_CONTROLLER:-1}" = 1 ]; then
# A free loopback port for the controller's /metrics (read at the end).
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
t0=$(date +%s.%N)
# shellcheck disable=SC2086
"$DD_BIN" controller --kubeconfig "$state/controller.kubeconfig" \
    --leader-elect-namespace dra-doctor --metrics-bind-address "127.0.0.1:$mport" ${BENCH_CTL_ARGS:-} \
    >"$state/logs/controller.log" 2>&1 &
ctl_pid=$!
all_s=$(python3 bench/ctl-load.py diagnosed "$state/expected.json" "$t0" 2>"$state/logs/diagnosed.log")
rc=$?
tail -n 1 "$state/logs/diagnosed.log"
[ $rc -eq 0 ] || { tail -n 20 "$state/logs/controller.log"; die "not every pod diagnosed: $all_s"; }
kill -0 "$ctl_pid" 2>/dev/null || die "controller exited"
cpu1=$(cpu_s "$ctl_pid"); hwm1=$(hwm_mib "$ctl_pid"); rss1=$(rss_mib "$ctl_pid")

react=$(python3 bench/ctl-load.py react "$SAMPLES" "$state/react.json") || die "reaction samples failed"
printf '%s\n' "$react"
cpu2=$(cpu_s "$ctl_pid"); hwm2=$(hwm_mib "$ctl_pid"); rss2=$(rss_mib "$ctl_pid")
# The controller's own account: snapshots built and their time, watch restarts, relists.
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
    "http://127.0.0.1:$mport/metrics" >"$state/metrics.txt" 2>/dev/null
builds=$(metric dra_doctor_snapshots_total)
build_s=$(metric dra_doctor_snapshot_build_seconds_total)
build_cpu=$(metric dra_doctor_snapshot_build_cpu_seconds_total)
build_max=$(metric dra_doctor_snapshot_build_max_seconds)
build_avg=$(awk -v s="$build_s" -v n="$builds" 'BEGIN { if (n > 0) printf "%.3f", s / n }')
build_cpu_avg=$(awk -v s="$build_cpu" -v n="$builds" 'BEGIN { if (n > 0) printf "%.3f", s / n }')
p50=$(printf '%s\n' "$react" | sed -n 's/.*p50 \([0-9.]*\) s, p90.*/\1/p')
p90=$(printf '%s\n' "$react" | sed -n 's/.*p90 \([0-9.]*\) s.*/\1/p')
p99=$(printf '%s\n' "$react" | sed -n 's/.*p99 \([0-9.]*\) s.*/\1/p')
max=$(printf '%s\n' "$react" | sed -n 's/.*max \([0-9.]*\) s, min.*/\1/p')
answered=$(printf '%s\n' "$react" | sed -n 's/^react: [0-9]* samples, \([0-9]*\) answered.*/\1/p')
fi

verdict() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v != "" && v + 0 <= lim + 0) ? "met" : "MISSED" }'; }
wh_row=""
if [ "${BENCH_WEBHOOK:-0}" = 1 ]; then
    mkdir -p build/bench
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o build/bench/whload bench/whload.c \
        -lssl -lcrypto -pthread -lm || die "cannot build bench/whload.c"
    "$DD_BIN" certs --service dra-doctor-webhook --namespace dra-doctor --out-dir "$state/wh-certs" \
        --ip 127.0.0.1 >/dev/null 2>&1 || die "dra-doctor certs failed"
    wtok=$(kubectl create token dra-doctor-webhook -n dra-doctor --duration=2h) || die "no webhook token"
    cp "$state/controller.kubeconfig" "$state/webhook.kubeconfig"
    KUBECONFIG="$state/webhook.kubeconfig" kubectl config set-credentials sa --token="$wtok" >/dev/null
    python3 bench/ctl-load.py webhook-bodies "$state/wh-bodies" || die "webhook bodies failed"
    free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    # The open loop against PORT: whload's summary line.
    # shellcheck disable=SC2046
    whload_at() {
        build/bench/whload -q --cacert "$state/wh-certs/ca.crt" -c 8 -r "${BENCH_RATE:-2000}" -d 30 -w 2 \
            --match '"allowed":true' $(for b in "$state"/wh-bodies/*.json; do printf -- '-b %s ' "$b"; done) \
            "https://127.0.0.1:$1/validate" | grep '^whload:'
    }
    kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    # The same server answering allowed without decoding (--null-baseline: no caches, no
    # view), under the same load from the same cluster: what the machine alone costs a
    # request's p99.  Run before and after ours, so a drift of the cluster's own load shows.
    baseline() {
        bport=$(free_port)
        "$DD_BIN" webhook --null-baseline --tls-cert-file "$state/wh-certs/tls.crt" \
            --tls-key-file "$state/wh-certs/tls.key" --bind 127.0.0.1 --port "$bport" \
            >"$state/logs/webhook-baseline.log" 2>&1 &
        bpid=$!
        until curl -sf --max-time 5 --cacert "$state/wh-certs/ca.crt" "https://127.0.0.1:$bport/healthz" >/dev/null; do
            kill -0 "$bpid" 2>/dev/null || die "the baseline webhook exited"
            sleep 0.2
        done
        bl=$(whload_at "$bport") || die "whload failed (baseline)"
        kill "$bpid"; wait "$bpid" 2>/dev/null; bpid=""
        echo "baseline: $bl"
        bp99=$(kv p99_us "$bl")
    }
    baseline; bp99a=$bp99
    wport=$(free_port)
    "$DD_BIN" webhook --tls-cert-file "$state/wh-certs/tls.crt" --tls-key-file "$state/wh-certs/tls.key" \
        --bind 127.0.0.1 --port "$wport" --kubeconfig "$state/webhook.kubeconfig" \
        >"$state/logs/webhook.log" 2>&1 &
    wh_pid=$!
    tw=$(date +%s.%N)
    until curl -sf --max-time 5 --cacert "$state/wh-certs/ca.crt" "https://127.0.0.1:$wport/readyz" >/dev/null; do
        kill -0 "$wh_pid" 2>/dev/null || { tail -n 20 "$state/logs/webhook.log"; die "the webhook exited"; }
        sleep 0.2
    done
    wready=$(awk -v a="$tw" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    wrss0=$(rss_mib "$wh_pid")
    wl=$(whload_at "$wport") || die "whload failed"
    echo "$wl"
    whwm=$(hwm_mib "$wh_pid"); wcpu=$(cpu_s "$wh_pid")
    kill "$wh_pid"; wait "$wh_pid" 2>/dev/null; wh_pid=""
    baseline; bp99b=$bp99
    w() { kv "$1" "$wl"; }
    wp99=$(awk -v u="$(w p99_us)" 'BEGIN { printf "%.3f", u / 1000 }')
    wh_row="| webhook at $(w rps) req/s open loop (${BENCH_RATE:-2000} asked, $(w requests) sent, $(w matched) allowed, $(w errors) errors, $(w late) late): p50 / p99 / p99.9 / max | $(w p50_us) / $(w p99_us) / $(w p999_us) / $(w max_us) µs | p99 ≤ 1 ms: $(verdict "$wp99" 1) |
| null baseline (\`webhook --null-baseline\`, same load) p99 before / after | ${bp99a} / ${bp99b} µs | |
| webhook ready after / RSS with the caches / peak (VmHWM) / CPU s | ${wready} s / ${wrss0} MiB / ${whwm} MiB / ${wcpu} s | ≤ 64 MiB: $(verdict "$whwm" 64) |"
fi

table() {
    echo "| measure | value | target |"
    echo "|---|---:|---|"
    echo "| load | $npods pods, $nclaims claims, $nevents events, 200 DeviceClasses, $((5 * ${BENCH_NODES:-100})) ResourceSlices with $((5 * ${BENCH_NODES:-100} * ${BENCH_DEVS:-8})) devices, ${BENCH_NODES:-100} nodes | |"
    if [ "${BENCH_CONTROLLER:-1}" = 1 ]; then
    echo "| time until every pod diagnosed | ${all_s} s | |"
    echo "| CPU s / peak RSS / RSS then | ${cpu1} s / ${hwm1} MiB / ${rss1} MiB | |"
    echo "| reaction p50 / p90 | ${p50} s / ${p90} s | |"
    echo "| reaction p99 ($answered of $SAMPLES samples) | ${p99} s | ≤ 1 s: $(verdict "$p99" 1) |"
    echo "| reaction max | ${max} s | |"
    # The goals: 64 MiB at the default 5,000 pods, 256 MiB at 50,000 (issue 18).
    mem_goal=64
    [ "${BENCH_PODS:-5000}" -ge 50000 ] && mem_goal=256
    echo "| controller peak RSS (VmHWM), end | ${hwm2} MiB | ≤ $mem_goal MiB: $(verdict "$hwm2" "$mem_goal") |"
    echo "| controller CPU s (utime+stime), end | ${cpu2} s | |"
    echo "| controller RSS at end | ${rss2} MiB | |"
    echo "| snapshots built; build time mean (CPU) / max | ${builds:-?}; ${build_avg:-?} s (${build_cpu_avg:-?} s) / ${build_max:-?} s | |"
    echo "| snapshots built whole / as deltas / with the model patched | $(metric 'dra_doctor_snapshot_updates_total{how="whole"}') / $(metric 'dra_doctor_snapshot_updates_total{how="delta"}') / $(metric 'dra_doctor_snapshot_updates_total{how="patched"}') | |"
    echo "| models built whole, by why | $(awk -F'"' '/^dra_doctor_snapshot_whole_total/ { split($3, v, " "); if (v[2] > 0) { printf "%s%s %s", sep, $2, v[2]; sep = ", " } }' "$state/metrics.txt") | |"
    echo "| pods a change reached (queued) / changes that reached every pod | $(metric dra_doctor_pods_reached_total) / $(metric dra_doctor_reached_all_total) | |"
    echo "| watch restarts / relists | $(metric dra_doctor_watch_restarts_total) / $(metric dra_doctor_relists_total) | |"
    fi
    [ -z "$wh_row" ] || printf '%s\n' "$wh_row"
}
echo
table
[ -n "${BENCH_MD:-}" ] && table >"$BENCH_MD"
exit 0
