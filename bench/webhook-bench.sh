#!/usr/bin/env bash
# Webhook benchmark (`make bench`; docs/benchmarks.md, "Webhook").
#
#   1. bench/gen-webhook-objects.py writes a 10,000-object view (DeviceClasses, ResourceSlices,
#      ResourceClaims, templates, quotas with status.used, driver DaemonSets) and four real
#      AdmissionReview bodies: a DeviceClass CREATE with a misspelled driver (denied), a correct
#      DeviceClass CREATE, a ResourceClaim CREATE over a quota (warned), a Pod CREATE with a
#      template claim.
#   2. The decision alone: build/release/review-bench (bench/review-bench.c) times wh_review
#      over the four bodies without TLS or HTTP (µs per decision, malloc calls per decision).
#   3. For each --threads value (BENCH_THREADS, "1 2 4"), starts two servers side by side:
#      `dra-doctor webhook --objects <view>` ("ours") and the same with --null-baseline
#      (same server, routes, TLS, threads; answers allowed:true without decoding), then
#        - closed loop with wrk (-t2 -cN, a Lua script rotating the four bodies) at each
#          concurrency of BENCH_CONC ("1 8 32 64"), ours and the baseline alternately:
#          req/s, ours as a ratio of the baseline (target >= 90 %), wrk's latency
#          percentiles, CPU microseconds per request (utime+stime from /proc/PID/stat);
#        - open loop with bench/whload (built here with the project's CC and warnings) at
#          BENCH_RATE (2,000) req/s over BENCH_OPEN_CONNS (8) connections: p50/p99/p99.9/max
#          measured from the scheduled send time (target p99 <= 2 ms);
#        - both loops BENCH_REPEAT (3) times, the two servers' runs interleaved and the order
#          flipped each time; a cell reports its median run (the median ratio of the pairs,
#          the median p99) and the range of all runs: one run on shared cores is noise;
#        - ours' RSS after loading the view and its peak (VmHWM) (target <= 32 MiB).
#   4. Unless BENCH_CLUSTER=0: a real control plane (e2e/cluster), the 10,000 objects created in
#      it, then DeviceClass creation through kube-apiserver (bench/whload against the API with
#      the admin client certificate: BENCH_API_N creations one at a time, BENCH_API_PAR_N over
#      8 connections, 50 refused ones, 10 `kubectl create` processes) with no admission check,
#      with an equivalent ValidatingAdmissionPolicy and with the webhook (watching the cluster:
#      its RSS with caches of the 10,000 objects, its CPU per view rebuild); then the cluster
#      is torn down.
#   5. Still on that cluster, the watching webhook's capacity (one replica as deployed, --threads
#      4): plain requests (an allowed DeviceClass and Pod) closed loop over 16 connections, and
#      warned ones (Pods naming a missing template: each waits 0.5 s for the caches, parked) open
#      loop at 40 and 80 req/s from one namespace and 200 and 400 req/s from eight, BENCH_CAP_DURATION
#      (10) s each: answered req/s, latency, how many waited and how many were answered at
#      once (the waiting slots full), CPU per request.  BENCH_API=0 skips the API blocks of 4.
#
# Exits non-zero only when the harness fails; a missed target prints MISSED and exits 0.
#
# Env: DD_BIN (./dra-doctor)  CC (cc)  CFLAGS (-O2 -g)  BENCH_THREADS ("1 2 4"; "" skips 3.)
#      BENCH_CONC ("1 8 32 64")  BENCH_DURATION (10 s per wrk run)  BENCH_REPEAT (3) BENCH_RATE (2000)
#      BENCH_OPEN_DURATION (30 s)  BENCH_OPEN_CONNS (8)  BENCH_CLUSTER (1)  BENCH_API_N (300)
#      BENCH_API_PAR_N (1000)  BENCH_API (1)  BENCH_CAP_DURATION (10)  BENCH_DIR (work dir; default a mktemp dir, removed at the end)
#      BENCH_KEEP=1 (keep the work dir and the cluster)  BENCH_WAIT=0 (do not wait for a
#      running bench/controller-bench.sh)  BENCH_MD=FILE (also write the tables as Markdown)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

DD=${DD_BIN:-./dra-doctor}
CC=${CC:-cc}
THREADS=${BENCH_THREADS-1 2 4}   # empty: skip the server-alone part
CONC=${BENCH_CONC:-1 8 32 64}
DUR=${BENCH_DURATION:-10}
REPEAT=${BENCH_REPEAT:-3}
RATE=${BENCH_RATE:-2000}
ODUR=${BENCH_OPEN_DURATION:-30}
OCONNS=${BENCH_OPEN_CONNS:-8}
CLUSTER=${BENCH_CLUSTER:-1}
APIN=${BENCH_API_N:-300}
APIPN=${BENCH_API_PAR_N:-1000}
API=${BENCH_API:-1}
CAPDUR=${BENCH_CAP_DURATION:-10}
work=${BENCH_DIR:-$(mktemp -d /tmp/dra-doctor-whbench.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
WHLOAD=build/bench/whload
# The Makefile's warnings (WARN), so that the load generator is held to the same standard.
WARN="-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2
      -Wformat-security -Wwrite-strings -Wno-format-nonliteral -fno-common"

pids=()
cluster_up=0
say() { echo "webhook-bench: $*" >&2; }
die() { say "$*"; exit 2; }

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    if [ "$cluster_up" = 1 ] && [ "${BENCH_KEEP:-0}" != 1 ]; then
        e2e/cluster down --dir "$work/cluster" --purge >/dev/null 2>&1 || true
    fi
    if [ "${BENCH_KEEP:-0}" != 1 ] && [ -z "${BENCH_DIR:-}" ]; then
        rm -rf "$work"
    fi
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- tools -----------------------------------------------------------------------------
for t in python3 curl "$CC"; do
    command -v "$t" >/dev/null 2>&1 || die "$t is required"
done
if ! command -v wrk >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || die "wrk is missing: apt-get install wrk (as root)"
    say "installing wrk"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >&2 ||
        { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive \
          apt-get install -y -qq --no-install-recommends wrk >&2; } || die "cannot install wrk"
fi
if [ ! -x "$DD" ] && [ -z "${DD_BIN:-}" ]; then
    say "./dra-doctor is missing; running make"
    make --no-print-directory dra-doctor >&2 || die "make failed"
fi
[ -x "$DD" ] || die "$DD is missing"
"$DD" webhook --help 2>/dev/null | grep -q -- --null-baseline || die "$DD has no 'webhook --null-baseline'"
mkdir -p "$(dirname "$WHLOAD")"
# shellcheck disable=SC2086
"$CC" -std=c11 -D_GNU_SOURCE ${CFLAGS:--O2 -g} $WARN -o "$WHLOAD" bench/whload.c \
    -lssl -lcrypto -pthread -lm || die "cannot build bench/whload.c"

# ---- inputs ------------------------------------------------------------------------------
gen=$work/gen
python3 bench/gen-webhook-objects.py gen "$gen" >"$work/summary.line" || die "generator failed"
objects=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$gen/summary.json")
"$DD" certs --service dra-doctor-webhook --namespace dra-doctor --out-dir "$work/certs" \
    --ip 127.0.0.1 >/dev/null 2>&1 || die "dra-doctor certs failed"
bodies=("$gen"/reviews/*.json)
bflags=()
for b in "${bodies[@]}"; do bflags+=(-b "$b"); done
cat >"$work/post.lua" <<'EOF'
-- POSTs the AdmissionReview files given after `--`, in turn.
local reqs, n, i = {}, 0, 0
function init(args)
  for _, p in ipairs(args) do
    local f = assert(io.open(p, "rb"))
    n = n + 1
    reqs[n] = wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, f:read("*a"))
    f:close()
  end
end
function request()
  i = i % n + 1
  return reqs[i]
end
function done(s, lat, req)
  local e = s.errors
  io.write(string.format("wrk: requests=%d rps=%.1f errors=%d p50_us=%d p90_us=%d p99_us=%d " ..
    "p999_us=%d max_us=%d mean_us=%.0f\n", s.requests, s.requests / (s.duration / 1e6),
    e.connect + e.read + e.write + e.status + e.timeout, lat:percentile(50), lat:percentile(90),
    lat:percentile(99), lat:percentile(99.9), lat.max, lat.mean))
end
EOF

# ---- helpers -----------------------------------------------------------------------------
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
free_port() { scripts/stack.sh port; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
views() { curl -s --cacert "$work/certs/ca.crt" "https://127.0.0.1:$1/metrics" |
    awk '$1 == "dra_doctor_webhook_views_total" { print $2 }'; }
HZ=$(getconf CLK_TCK)

wait_ready() { # PORT PID LOG PATH
    local i
    for i in $(seq 1 300); do
        curl -sSf --max-time 5 --cacert "$work/certs/ca.crt" "https://127.0.0.1:$1$4" \
            >"$work/readyz.out" 2>&1 && return 0
        kill -0 "$2" 2>/dev/null || { cat "$3" >&2; die "the webhook exited"; }
        sleep 0.2
    done
    cat "$3" "$work/readyz.out" >&2
    die "the webhook on port $1 never became ready"
}

start_webhook() { # NAME PORT ARGS... ; sets $pid
    local name=$1 port=$2 probe=/readyz
    shift 2
    # --null-baseline builds no view, so its /readyz stays 503 ("caches not synced yet").
    case " $* " in *" --null-baseline "*) probe=/healthz ;; esac
    "$DD" webhook --tls-cert-file "$work/certs/tls.crt" --tls-key-file "$work/certs/tls.key" \
        --bind 127.0.0.1 --port "$port" "$@" >"$work/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_ready "$port" "$pid" "$work/$name.log" "$probe"
}

stop_pid() {
    local p=$1 q=()
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    for x in "${pids[@]}"; do [ "$x" = "$p" ] || q+=("$x"); done
    pids=("${q[@]+"${q[@]}"}")
}

# Runs wrk against PORT with CONNS connections; prints its "wrk:" line plus cpu_us=<per request>.
run_wrk() { # PID PORT CONNS DURATION
    local t=2 c0 c1 line req
    [ "$3" -lt 2 ] && t=1
    c0=$(ticks "$1")
    line=$(wrk -t"$t" -c"$3" -d"$4"s --timeout 5s -s "$work/post.lua" \
        "https://127.0.0.1:$2/validate" -- "${bodies[@]}" | grep '^wrk:') || die "wrk failed"
    c1=$(ticks "$1")
    req=$(kv "$line" requests)
    echo "$line cpu_us=$(calc %.1f "($c1 - $c0) * 1e6 / $HZ / ($req > 0 ? $req : 1)")"
}

run_open() { # PORT -> whload's machine-readable line
    "$WHLOAD" -q --cacert "$work/certs/ca.crt" -c "$OCONNS" -r "$RATE" -d "$ODUR" -w 2 \
        --match '"allowed":false' "${bflags[@]}" \
        "https://127.0.0.1:$1/validate" | grep '^whload:' || die "whload failed"
}

# The index (1-based) of the median of its arguments (the lower one of an even count).
median_at() { printf '%s\n' "$@" | awk '{ print NR, $1 }' | sort -k2,2g | awk -v m=$(( ($# + 1) / 2 )) 'NR == m { print $1 }'; }
# "min-max" of its arguments.
range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }

verdict() { awk -v v="$1" -v lim="$2" -v op="$3" 'BEGIN {
    ok = (op == "ge") ? (v + 0 >= lim + 0) : (v + 0 <= lim + 0); print (v != "" && ok) ? "met" : "MISSED" }'; }

# ---- controller benchmark of another session -------------------------------------------
if [ "${BENCH_WAIT:-1}" = 1 ]; then
    while pgrep -f 'bench/controller-bench\.sh' >/dev/null 2>&1; do
        say "a controller benchmark is running; waiting (BENCH_WAIT=0 skips)"
        sleep 30
    done
fi

say "work dir $work; $objects objects; load average $(loadavg)"
load_start=$(loadavg)
declare -A R   # results: R[key]=value

# ---- part 0: the decision alone ----------------------------------------------------------
# wh_review without TLS or HTTP, one thread: the figure background load disturbs least.
make --no-print-directory -s "${B:-build/release}/review-bench" >&2 || die "cannot build review-bench"
R[decision]=$("${B:-build/release}/review-bench" "$gen/objects" "${bodies[@]}" -n 20000) ||
    die "review-bench failed"
say "decision alone:"
printf '%s\n' "${R[decision]}" >&2

# ---- part 1: the server alone --------------------------------------------------------------
for th in $THREADS; do
    pours=$(free_port)
    start_webhook "ours-t$th" "$pours" --threads "$th" --objects "$gen/objects"
    ours=$pid
    R[rss_ready_$th]=$(kib "$ours" VmRSS)
    R[hwm_ready_$th]=$(kib "$ours" VmHWM)
    pnull=$(free_port)
    while [ "$pnull" = "$pours" ]; do pnull=$(free_port); done
    start_webhook "null-t$th" "$pnull" --threads "$th" --null-baseline
    null=$pid
    say "threads $th: ours pid $ours port $pours, baseline pid $null port $pnull; load $(loadavg)"
    run_wrk "$ours" "$pours" 8 2 >/dev/null   # warm-up
    run_wrk "$null" "$pnull" 8 2 >/dev/null
    # Alternate which server goes first, so that drifting background load hits both.
    flip=0
    for k in $(seq "$REPEAT"); do
        for c in $CONC; do
            if [ $flip = 0 ]; then order="ours null"; flip=1; else order="null ours"; flip=0; fi
            for who in $order; do
                if [ "$who" = ours ]; then line=$(run_wrk "$ours" "$pours" "$c" "$DUR")
                else line=$(run_wrk "$null" "$pnull" "$c" "$DUR"); fi
                R[wrk_${who}_${th}_${c}_$k]=$line
                say "  threads $th c=$c run $k $who: $line"
            done
        done
    done
    for k in $(seq "$REPEAT"); do
        if [ $((k % 2)) = 1 ]; then order="ours null"; else order="null ours"; fi
        for who in $order; do
            if [ "$who" = ours ]; then line=$(run_open "$pours"); else line=$(run_open "$pnull"); fi
            R[open_${who}_${th}_$k]=$line
            say "  threads $th open loop run $k $who: $line"
        done
    done
    R[rss_end_$th]=$(kib "$ours" VmRSS)
    R[hwm_end_$th]=$(kib "$ours" VmHWM)
    R[null_hwm_$th]=$(kib "$null" VmHWM)
    R[load_$th]=$(loadavg)
    stop_pid "$ours"
    stop_pid "$null"
done

# Per body (default --threads 2, 8 connections): where the CPU goes.
if [ -n "$THREADS" ]; then
    pours=$(free_port)
    start_webhook ours-bodies "$pours" --objects "$gen/objects"
    ours=$pid
    pnull=$(free_port)
    while [ "$pnull" = "$pours" ]; do pnull=$(free_port); done
    start_webhook null-bodies "$pnull" --null-baseline
    null=$pid
    all=("${bodies[@]}")
    for b in "${all[@]}"; do
        bodies=("$b")
        R[body_ours_$(basename "$b" .json)]=$(run_wrk "$ours" "$pours" 8 "$DUR")
        R[body_null_$(basename "$b" .json)]=$(run_wrk "$null" "$pnull" 8 "$DUR")
        say "  $(basename "$b"): ours $(kv "${R[body_ours_$(basename "$b" .json)]}" rps)/s, baseline $(kv "${R[body_null_$(basename "$b" .json)]}" rps)/s"
    done
    bodies=("${all[@]}")
    stop_pid "$ours"
    stop_pid "$null"
fi

# ---- part 2: through kube-apiserver --------------------------------------------------------
# One block of DeviceClass creations: warm-up, BENCH_API_N one at a time, BENCH_API_PAR_N over 8
# connections, 50 refused ones (when a check is in force), 10 kubectl processes.
api_runs() { # TAG SEQBASE CHECKED -> R[api_TAG_*]
    local s=$1 base=$2 i t0 t1 k url=$server/apis/resource.k8s.io/v1/deviceclasses
    local common=(-q --cacert "$cpki/ca.crt" --cert "$cpki/admin.crt" --key "$cpki/admin.key" -d 0 -w 0)
    "$WHLOAD" "${common[@]}" -c 1 -n 20 --ok 201 --seq-start "$base" -b "$gen/api/deviceclass-good.json" \
        "$url" >/dev/null || die "whload failed"                                                # warm-up
    R[api_${s}_serial]=$("$WHLOAD" "${common[@]}" -c 1 -n "$APIN" --ok 201 --seq-start $((base + 1000)) \
        -b "$gen/api/deviceclass-good.json" "$url") || die "whload failed"
    R[api_${s}_par]=$("$WHLOAD" "${common[@]}" -c 8 -n "$APIPN" --ok 201 --seq-start $((base + 5000)) \
        -b "$gen/api/deviceclass-good.json" "$url") || die "whload failed"
    if [ "$3" = 1 ]; then
        R[api_${s}_deny]=$("$WHLOAD" "${common[@]}" -c 1 -n 50 --ok 400,403,422 --seq-start $((base + 9000)) \
            -b "$gen/api/deviceclass-typo.json" "$url") || die "whload failed"
    fi
    # What a user sees: whole kubectl processes (startup and discovery included).
    k=()
    for i in $(seq 1 10); do
        sed "s/@@SEQ@@/$((base + 9500 + i))/" "$gen/api/deviceclass-good.json" >"$work/kc.json"
        t0=$(date +%s%N)
        kubectl create -f "$work/kc.json" >/dev/null || die "kubectl create failed ($s)"
        t1=$(date +%s%N)
        k+=($(( (t1 - t0) / 1000 )))
    done
    R[api_${s}_kubectl]=$(printf '%s\n' "${k[@]}" | sort -n | sed -n '5p;6p' |
        awk '{ s += $1 } END { printf "%.0f", s / 2 / 1000 }')
    # One deletecollection call (kubectl delete -l would send one DELETE per object), then a
    # pause so that the next block does not share the API server with the deletions' events.
    kubectl delete --raw "/apis/resource.k8s.io/v1/deviceclasses?labelSelector=bench.dra-doctor.io%2Fapi%3Dtrue" \
        >/dev/null || die "cleanup failed"
    sleep 3
    say "  $s: one at a time p50 $(kv "${R[api_${s}_serial]}" p50_us) us, 8 connections $(kv "${R[api_${s}_par]}" rps)/s, kubectl ${R[api_${s}_kubectl]} ms; load $(loadavg)"
}

# Waits until a dry-run create of the misspelled class is refused with PATTERN in the message
# and a correct one admitted (1), or until the misspelled one is admitted (0).
wait_check() { # WANT_REFUSED TAG [PATTERN]
    local i
    sed "s/@@SEQ@@/probe/" "$gen/api/deviceclass-typo.json" >"$work/probe.json"
    sed "s/@@SEQ@@/probe-good/" "$gen/api/deviceclass-good.json" >"$work/probe-good.json"
    for i in $(seq 1 120); do
        if kubectl create --dry-run=server -f "$work/probe.json" >"$work/probe.out" 2>&1; then
            [ "$1" = 0 ] && return 0
        elif [ "$1" = 1 ] && grep -q -- "$3" "$work/probe.out" &&
            kubectl create --dry-run=server -f "$work/probe-good.json" >/dev/null 2>&1; then
            cp "$work/probe.out" "$work/denial-$2.txt"
            return 0
        fi
        sleep 0.5
    done
    cat "$work/probe.out" >&2
    die "$2: the misspelled DeviceClass is still $([ "$1" = 1 ] && echo admitted || echo refused)"
}

vap_block() { # TAG SEQBASE
    say "API: ValidatingAdmissionPolicy ($1)"
    kubectl apply -f "$work/vap.yaml" >/dev/null || die "cannot apply the ValidatingAdmissionPolicy"
    wait_check 1 "$1" "is not one of"
    api_runs "$1" "$2" 1
    kubectl delete -f "$work/vap.yaml" >/dev/null || die "cannot delete the ValidatingAdmissionPolicy"
    wait_check 0 "$1"
}

# Registers the webhook on PORT for DeviceClass CREATE/UPDATE and waits until it refuses the
# misspelled class.
register_webhook() { # PORT TAG
    cat >"$work/vwc.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: dra-doctor-bench}
webhooks:
- name: deviceclasses.dra-doctor.io
  admissionReviewVersions: [v1]
  sideEffects: None
  timeoutSeconds: 5
  failurePolicy: Fail
  matchPolicy: Equivalent
  clientConfig:
    url: https://127.0.0.1:$1/validate
    caBundle: $(base64 -w0 "$work/certs/ca.crt")
  rules:
  - apiGroups: [resource.k8s.io]
    apiVersions: ['*']
    resources: [deviceclasses]
    operations: [CREATE, UPDATE]
EOF
    kubectl apply -f "$work/vwc.yaml" >/dev/null || die "cannot register the webhook"
    wait_check 1 "$2" "Did you mean"
}

unregister_webhook() { # TAG
    kubectl delete -f "$work/vwc.yaml" >/dev/null || die "cannot delete the webhook configuration"
    wait_check 0 "$1"
}

# The webhook with a fixed view (--objects: the same 10,000 objects, no informers): what the
# admission call itself costs, without the view rebuilds that each created class triggers.
objects_block() { # TAG SEQBASE
    local p c
    say "API: the webhook with --objects ($1)"
    p=$(free_port)
    start_webhook "webhook-$1" "$p" --objects "$gen/objects"
    register_webhook "$p" "$1"
    c=$(ticks "$pid")
    api_runs "$1" "$2" 1
    R[api_${1}_whcpu]=$(calc %.2f "($(ticks "$pid") - $c) / $HZ")
    unregister_webhook "$1"
    stop_pid "$pid"
}

# The waits counter of the webhook on PORT for LANE and OUTCOME.
waits() { # PORT LANE OUTCOME
    curl -s --cacert "$work/certs/ca.crt" "https://127.0.0.1:$1/metrics" |
        awk -v s="dra_doctor_webhook_waits_total{lane=\"$2\",outcome=\"$3\"}" '$1 == s { print $2 }'
}

# Part 5: the capacity of the watching webhook on PORT (process PID).
capacity_block() { # PORT PID
    local url=https://127.0.0.1:$1/validate c0 line spec ns rate i w0 l0 n0
    local common=(-q --cacert "$work/certs/ca.crt" -d "$CAPDUR" -w 1 --match '"warnings"')
    say "capacity: plain requests, closed loop"
    c0=$(ticks "$2")
    line=$("$WHLOAD" "${common[@]}" -c 16 -b "$gen/reviews/2-deviceclass-good.json" \
        -b "$gen/reviews/4-pod-template-claim.json" "$url" | grep '^whload:') || die "whload failed"
    R[cap_plain]="$line cpu_us=$(calc %.1f "($(ticks "$2") - $c0) * 1e6 / $HZ / $(kv "$line" requests)")"
    say "  ${R[cap_plain]}"
    for spec in 1:40 1:80 8:200 8:400; do
        ns=${spec%:*}
        rate=${spec#*:}
        local bodies_w=()
        for i in $(seq 0 $((ns - 1))); do bodies_w+=(-b "$gen/capacity/warned-$i.json"); done
        sleep 4 # the previous run's waits are over
        w0=$(waits "$1" claims waited); l0=$(waits "$1" claims lane_full)
        n0=$(waits "$1" claims namespace_full)
        c0=$(ticks "$2")
        line=$("$WHLOAD" "${common[@]}" -c $((rate * 3 / 4 + 8)) -r "$rate" "${bodies_w[@]}" "$url" |
            grep '^whload:') || die "whload failed"
        sleep 4
        R[cap_${ns}_$rate]="$line cpu_s=$(calc %.2f "($(ticks "$2") - $c0) / $HZ") waited=$(( $(waits "$1" claims waited) - w0 )) lane_full=$(( $(waits "$1" claims lane_full) - l0 )) namespace_full=$(( $(waits "$1" claims namespace_full) - n0 ))"
        say "  warned, $ns namespace(s), $rate req/s: ${R[cap_${ns}_$rate]}"
    done
}

if [ "$CLUSTER" = 1 ]; then
    say "cluster: e2e/cluster up --dir $work/cluster; load $(loadavg)"
    cluster_up=1
    e2e/cluster up --dir "$work/cluster" --node none >"$work/cluster-up.log" 2>&1 ||
        { cat "$work/cluster-up.log" >&2; die "e2e/cluster up failed"; }
    eval "$(e2e/cluster env --dir "$work/cluster")"
    cpki=$work/cluster/pki
    server=$(kubectl config view -o jsonpath='{.clusters[0].cluster.server}')
    t0=$(date +%s)
    python3 bench/gen-webhook-objects.py load "$gen" >&2 || die "creating the objects failed"
    R[load_s]=$(( $(date +%s) - t0 ))
    sleep 5
    R[cluster_count]=$(python3 bench/gen-webhook-objects.py count) || die "count failed"
    say "in the cluster: ${R[cluster_count]}"

    # An equivalent in-tree check: the selector must name one of a hand-kept list of drivers
    # (a ConfigMap parameter).  CEL in the API server cannot list ResourceSlices or DaemonSets.
    # The parameter stays; the policy and its binding come and go (re-creating the parameter
    # with them left the binding without params for a while: "no params found").
    kubectl apply -f - >/dev/null <<'EOF' || die "cannot create the ConfigMap dra-drivers"
apiVersion: v1
kind: ConfigMap
metadata: {name: dra-drivers, namespace: default}
data:
  drivers: gpu.example.com,fpga.example.com,nic.example.com,tpu.example.com,npu.example.com
EOF
    cat >"$work/vap.yaml" <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: dra-doctor-bench-drivers}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [resource.k8s.io]
      apiVersions: ["*"]
      operations: [CREATE, UPDATE]
      resources: [deviceclasses]
  variables:
  - name: drivers
    expression: "params.data.drivers.split(',')"
  validations:
  - expression: >-
      !has(object.spec.selectors) || object.spec.selectors.all(s, !has(s.cel) ||
      !s.cel.expression.contains('device.driver') ||
      variables.drivers.exists(d, s.cel.expression.contains("device.driver == '" + d + "'")))
    messageExpression: "'a selector names a DRA driver that is not one of ' + variables.drivers.join(', ')"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: dra-doctor-bench-drivers}
spec:
  policyName: dra-doctor-bench-drivers
  validationActions: [Deny]
  paramRef: {name: dra-drivers, namespace: default, parameterNotFoundAction: Deny}
EOF
    # Blocks in the order none, VAP, webhook --objects, webhook, webhook, webhook --objects, VAP,
    # none, so that a drift in the background load favours no setup; a webhook process runs only
    # during its own blocks.
    if [ "$API" = 1 ]; then
        say "API: no admission check (none1)"
        wait_check 0 none1
        api_runs none1 100000 0
        vap_block vap1 200000
        objects_block whobj1 300000
    fi

    say "the webhook, watching the cluster"
    pwh=$(free_port)
    c0=$(date +%s%N)
    start_webhook cluster-webhook "$pwh" --kubeconfig "$KUBECONFIG"
    wh=$pid
    R[wh_ready_ms]=$(( ($(date +%s%N) - c0) / 1000000 ))
    sleep 5   # the first view is built after the caches sync
    R[wh_rss_synced]=$(kib "$wh" VmRSS)
    R[wh_hwm_synced]=$(kib "$wh" VmHWM)
    if [ "$API" = 1 ]; then
        register_webhook "$pwh" webhook1
        v0=$(views "$pwh")
        for blk in webhook1:400000 webhook2:500000; do
            say "API: the webhook, watching the cluster (${blk%:*})"
            c1=$(ticks "$wh")
            api_runs "${blk%:*}" "${blk#*:}" 1
            R[api_${blk%:*}_whcpu]=$(calc %.2f "($(ticks "$wh") - $c1) / $HZ")
        done
        R[wh_views]=$(( $(views "$pwh") - v0 ))
        R[wh_cpu_api]=$(calc %.2f "${R[api_webhook1_whcpu]} + ${R[api_webhook2_whcpu]}")
        # What one change costs: a view rebuild over all cached objects, per cache change (at
        # most one per 200 ms).  Ten single-claim changes, a second apart.
        c2=$(ticks "$wh")
        v2=$(views "$pwh")
        for i in $(seq 1 10); do
            kubectl annotate resourceclaim claim-00000 -n bench-ns-000 --overwrite \
                "bench.dra-doctor.io/touch=$i" >/dev/null || die "kubectl annotate failed"
            sleep 1
        done
        R[wh_touch_views]=$(( $(views "$pwh") - v2 ))
        R[wh_touch_cpu]=$(calc %.3f "($(ticks "$wh") - $c2) / $HZ / (${R[wh_touch_views]} > 0 ? ${R[wh_touch_views]} : 1)")
    fi
    capacity_block "$pwh" "$wh"
    R[wh_rss_end]=$(kib "$wh" VmRSS)
    R[wh_hwm_end]=$(kib "$wh" VmHWM)
    [ "$API" = 1 ] && unregister_webhook webhook2
    stop_pid "$wh"

    if [ "$API" = 1 ]; then
        objects_block whobj2 600000
        vap_block vap2 700000
        say "API: no admission check (none2)"
        api_runs none2 800000 0
    fi
    R[load_cluster]=$(loadavg)
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        e2e/cluster down --dir "$work/cluster" --purge >/dev/null 2>&1 || say "cluster down failed"
        cluster_up=0
    fi
fi

# ---- report --------------------------------------------------------------------------------
tables() {
    local th c o n r b
    echo "Load average: $load_start at the start; per --threads run: $(for th in $THREADS; do printf '%s: %s; ' "$th" "${R[load_$th]}"; done)"
    echo
    echo "The decision alone (wh_review, one thread, no TLS or HTTP; ${B:-build/release}/review-bench):"
    echo
    echo '```'
    printf '%s\n' "${R[decision]}"
    echo '```'
    [ -n "$THREADS" ] && server_tables
    [ "$CLUSTER" = 1 ] && [ "$API" = 1 ] && cluster_tables
    [ "$CLUSTER" = 1 ] && capacity_table
    return 0
}
capacity_table() {
    local o spec ns rate
    echo
    echo "Capacity of one replica (\`webhook\` watching the cluster above, --threads 4, not CPU-limited;"
    echo "bench/whload straight to it, ${CAPDUR} s per row after 1 s of warm-up, which the wait counts include;"
    echo "webhook CPU from /proc, in 10 ms ticks, background work included):"
    echo
    echo "| load | offered req/s | answered req/s | p50 / p99 / max ms | with warnings | waited for the caches | answered at once (slots full) | webhook CPU | errors |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|"
    o=${R[cap_plain]}
    printf '| plain (allowed DeviceClass and Pod), closed loop, 16 connections | — | %s | %s / %s / %s | %s | — | — | %s µs per request | %s |\n' \
        "$(kv "$o" rps)" "$(calc %.2f "$(kv "$o" p50_us)/1000")" "$(calc %.2f "$(kv "$o" p99_us)/1000")" \
        "$(calc %.1f "$(kv "$o" max_us)/1000")" "$(kv "$o" matched)" "$(kv "$o" cpu_us)" "$(kv "$o" errors)"
    for spec in 1:40 1:80 8:200 8:400; do
        ns=${spec%:*}; rate=${spec#*:}
        o=${R[cap_${ns}_$rate]}
        printf '| warned (missing template), %s namespace%s, open loop | %s | %s | %s / %s / %s | %s | %s | %s | %s s in all | %s |\n' \
            "$ns" "$([ "$ns" = 1 ] || echo s)" "$rate" "$(kv "$o" rps)" \
            "$(calc %.1f "$(kv "$o" p50_us)/1000")" "$(calc %.1f "$(kv "$o" p99_us)/1000")" \
            "$(calc %.1f "$(kv "$o" max_us)/1000")" "$(kv "$o" matched)" "$(kv "$o" waited)" \
            "$(( $(kv "$o" lane_full) + $(kv "$o" namespace_full) ))" "$(kv "$o" cpu_s)" "$(kv "$o" errors)"
    done
    o=${R[cap_plain]}
    echo
    echo "Plain requests: $(kv "$o" rps)/s on this machine's two cores (shared with the load generator);"
    echo "at the Deployment's CPU limit (500m) about $(calc %.0f "500000 / $(kv "$o" cpu_us)")/s. Warned requests: 128 may wait at once,"
    echo "a namespace 32, for 0.5 s each: 256/s, from one namespace 64/s; past that they are answered at once."
}
server_tables() {
    echo
    echo "Closed loop (wrk -t2 -cN, 4 AdmissionReview bodies in turn, ${DUR} s per run; -t1 for c=1;"
    echo "$REPEAT interleaved pairs of runs per cell, the pair with the median ratio shown):"
    echo
    echo "| threads | conns | ours req/s | baseline req/s | **ratio** (≥ 90 %) | ratios of all pairs | ours p50 / p99 / p99.9 / max ms | baseline p50 / p99 / p99.9 ms | ours / baseline CPU µs per req | errors |"
    echo "|---:|---:|---:|---:|---:|---|---|---|---|---:|"
    for th in $THREADS; do
        for c in $CONC; do
            local rs=() k m errs=0
            for k in $(seq "$REPEAT"); do
                o=${R[wrk_ours_${th}_${c}_$k]}; n=${R[wrk_null_${th}_${c}_$k]}
                rs+=("$(calc %.1f "100 * $(kv "$o" rps) / $(kv "$n" rps)")")
                errs=$(( errs + $(kv "$o" errors) + $(kv "$n" errors) ))
            done
            m=$(median_at "${rs[@]}")
            o=${R[wrk_ours_${th}_${c}_$m]}; n=${R[wrk_null_${th}_${c}_$m]}
            r=${rs[$((m - 1))]}
            printf '| %s | %s | %s | %s | **%s %%** %s | %s %% | %s / %s / %s / %s | %s / %s / %s | %s / %s | %s |\n' \
                "$th" "$c" "$(kv "$o" rps)" "$(kv "$n" rps)" "$r" "$(verdict "$r" 90 ge)" \
                "$(range "${rs[@]}")" \
                "$(calc %.2f "$(kv "$o" p50_us)/1000")" "$(calc %.2f "$(kv "$o" p99_us)/1000")" \
                "$(calc %.2f "$(kv "$o" p999_us)/1000")" "$(calc %.1f "$(kv "$o" max_us)/1000")" \
                "$(calc %.2f "$(kv "$n" p50_us)/1000")" "$(calc %.2f "$(kv "$n" p99_us)/1000")" \
                "$(calc %.2f "$(kv "$n" p999_us)/1000")" \
                "$(kv "$o" cpu_us)" "$(kv "$n" cpu_us)" "$errs"
        done
    done
    echo
    echo "Open loop (bench/whload, $RATE req/s over $OCONNS connections, ${ODUR} s after 2 s warm-up; latency from the scheduled send;"
    echo "$REPEAT runs per server, interleaved, the run with the median p99 shown):"
    echo
    echo "| threads | server | req/s | p50 ms | p90 ms | **p99 ms** (≤ 2) | p99 of all runs ms | p99.9 ms | max ms | sends > 1 ms late | errors | denied |"
    echo "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"
    for th in $THREADS; do
        for who in ours null; do
            local ps=() k m
            for k in $(seq "$REPEAT"); do
                ps+=("$(calc %.2f "$(kv "${R[open_${who}_${th}_$k]}" p99_us)/1000")")
            done
            m=$(median_at "${ps[@]}")
            o=${R[open_${who}_${th}_$m]}
            printf '| %s | %s | %s | %s | %s | **%s** %s | %s | %s | %s | %s | %s | %s |\n' "$th" \
                "$([ $who = ours ] && echo ours || echo baseline)" "$(kv "$o" rps)" \
                "$(calc %.2f "$(kv "$o" p50_us)/1000")" "$(calc %.2f "$(kv "$o" p90_us)/1000")" \
                "$(calc %.2f "$(kv "$o" p99_us)/1000")" \
                "$([ $who = ours ] && verdict "$(calc %.3f "$(kv "$o" p99_us)/1000")" 2 le)" \
                "$(range "${ps[@]}")" \
                "$(calc %.2f "$(kv "$o" p999_us)/1000")" "$(calc %.1f "$(kv "$o" max_us)/1000")" \
                "$(kv "$o" late)" "$(kv "$o" errors)" "$(kv "$o" matched)"
        done
    done
    echo
    echo "Memory of \`webhook --objects\` ($objects objects):"
    echo
    echo "| threads | RSS when ready MiB | RSS at the end MiB | **peak RSS (VmHWM) MiB** (≤ 32) | baseline peak MiB |"
    echo "|---:|---:|---:|---:|---:|"
    for th in $THREADS; do
        printf '| %s | %s | %s | **%s** %s | %s |\n' "$th" "$(mib "${R[rss_ready_$th]}")" \
            "$(mib "${R[rss_end_$th]}")" "$(mib "${R[hwm_end_$th]}")" \
            "$(verdict "$(mib "${R[hwm_end_$th]}")" 32 le)" "$(mib "${R[null_hwm_$th]}")"
    done
    echo
    echo "Per body (--threads 2, wrk -t2 -c8, ${DUR} s each):"
    echo
    echo "| body | ours req/s | baseline req/s | ratio | ours / baseline CPU µs per req | ours p50 / p99 ms |"
    echo "|---|---:|---:|---:|---|---|"
    for b in "${bodies[@]}"; do
        b=$(basename "$b" .json)
        o=${R[body_ours_$b]}; n=${R[body_null_$b]}
        printf '| %s | %s | %s | %s %% | %s / %s | %s / %s |\n' "$b" "$(kv "$o" rps)" "$(kv "$n" rps)" \
            "$(calc %.1f "100 * $(kv "$o" rps) / $(kv "$n" rps)")" "$(kv "$o" cpu_us)" "$(kv "$n" cpu_us)" \
            "$(calc %.2f "$(kv "$o" p50_us)/1000")" "$(calc %.2f "$(kv "$o" p99_us)/1000")"
    done
}
cluster_tables() {
    local s o n d
    echo
    echo "Through kube-apiserver v1.36.3 (e2e/cluster; ${R[cluster_count]}; created in ${R[load_s]} s)."
    echo "DeviceClass CREATE by API calls (bench/whload with the admin client certificate), $APIN one at a time"
    echo "and $APIPN over 8 connections per block; blocks in the order of the rows:"
    echo
    echo "| block | one at a time: p50 / p90 / p99 / max ms | req/s | 8 connections: req/s | p50 / p99 ms | refused (typo) p50 ms | \`kubectl create\` median ms | webhook CPU s | errors |"
    echo "|---|---|---:|---:|---|---:|---:|---:|---:|"
    for s in none1 vap1 whobj1 webhook1 webhook2 whobj2 vap2 none2; do
        o=${R[api_${s}_serial]}; n=${R[api_${s}_par]}; d=${R[api_${s}_deny]:-}
        printf '| %s | %s / %s / %s / %s | %s | %s | %s / %s | %s | %s | %s | %s |\n' \
            "$(case $s in none*) echo "no admission check (${s#none})" ;;
                          vap*) echo "ValidatingAdmissionPolicy (${s#vap})" ;;
                          whobj*) echo "webhook, fixed view (--objects) (${s#whobj})" ;;
                          *) echo "webhook watching the cluster (${s#webhook})" ;; esac)" \
            "$(calc %.2f "$(kv "$o" p50_us)/1000")" "$(calc %.2f "$(kv "$o" p90_us)/1000")" \
            "$(calc %.2f "$(kv "$o" p99_us)/1000")" "$(calc %.2f "$(kv "$o" max_us)/1000")" \
            "$(kv "$o" rps)" "$(kv "$n" rps)" "$(calc %.2f "$(kv "$n" p50_us)/1000")" \
            "$(calc %.2f "$(kv "$n" p99_us)/1000")" \
            "$(if [ -n "$d" ]; then calc %.2f "$(kv "$d" p50_us)/1000"; else echo '—'; fi)" \
            "${R[api_${s}_kubectl]}" "${R[api_${s}_whcpu]:-—}" \
            "$(( $(kv "$o" errors) + $(kv "$n" errors) + $(if [ -n "$d" ]; then kv "$d" errors; else echo 0; fi) ))"
    done
    echo
    echo "| webhook watching the cluster | value |"
    echo "|---|---:|"
    echo "| start to /readyz (caches synced) | ${R[wh_ready_ms]} ms |"
    echo "| **RSS with caches of the objects above** (5 s after ready) | **$(mib "${R[wh_rss_synced]}") MiB** (≤ 32: $(verdict "$(mib "${R[wh_rss_synced]}")" 32 le)) |"
    echo "| peak RSS (VmHWM) then / at the end | $(mib "${R[wh_hwm_synced]}") / $(mib "${R[wh_hwm_end]}") MiB |"
    echo "| RSS at the end | $(mib "${R[wh_rss_end]}") MiB |"
    echo "| CPU during its two blocks (views rebuilt: ${R[wh_views]}) | ${R[wh_cpu_api]} s |"
    echo "| CPU per view rebuild (10 single-claim changes 1 s apart: ${R[wh_touch_views]} views) | ${R[wh_touch_cpu]} s |"
    echo
    echo "Load average after the cluster part: ${R[load_cluster]}"
}
echo
tables
[ -n "${BENCH_MD:-}" ] && tables >"$BENCH_MD"
exit 0
