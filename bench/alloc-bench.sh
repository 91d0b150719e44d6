#!/bin/sh
# Allocation, lib/model/alloc against Kubernetes' own allocator (e2e/peers/allocoracle:
# k8s.io/dynamic-resource-allocation's structured allocator, fed as kube-scheduler's
# DynamicResources plugin feeds it) on the same snapshots in one run: one pod judged on every
# node (PreFilter and Filter; for lib/model/alloc alloc_pod, the verdicts only and with the
# explanation), one core each, BENCH_REPEAT runs (default 3) interleaved, the median of each.
# "first" is lib/model/alloc's first pod on a fresh model (no selector verdict kept yet, as
# the oracle never keeps one); "alloc" the mean over 20 pods of the same snapshot.
# Snapshots (bench/gen-alloc.py): BENCH_NODES nodes (500) x BENCH_DEVICES GPUs (10), plain,
# with a matchAttribute constraint, partitionable; and 4x the devices, for the scaling.
#
#   bench/alloc-bench.sh [BUILD_DIR]
set -eu
B=${1:-build/release}
N=${BENCH_NODES:-500}
D=${BENCH_DEVICES:-10}
R=${BENCH_REPEAT:-3}
make -s B="$B" "$B/libdd.a"
bin=$B/alloc-bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Ilib -o "$bin" bench/alloc-bench.c "$B/libdd.a" \
    $(pkg-config --libs libcjson yaml-0.1 re2 libcurl libmicrohttpd gnutls libssl libcrypto) \
    -lstdc++ -lm -pthread
oracle=$(e2e/peers/build-allocoracle.sh)
dir=build/bench/alloc
mkdir -p "$dir"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }
printf '%-26s %6s %10s %10s %12s %12s %9s %9s %9s\n' snapshot fit "first us" "alloc us" "+explain us" "oracle us" "first" speedup "+explain"
for shape in plain constrained partitionable plain4x; do
    nodes=$N; devs=$D; s=$shape
    [ "$shape" = plain4x ] && { devs=$((D * 4)); s=plain; }
    f=$dir/$shape.json
    python3 bench/gen-alloc.py "$s" "$nodes" "$devs" > "$f"
    ours=""; first=""; expl=""; theirs=""; fit=""
    for _ in $(seq "$R"); do
        o=$(taskset -c 0 "$bin" "$f" 20)
        ours="$ours $(echo "$o" | field ns_per_pod)"
        first="$first $(echo "$o" | field first_ns)"
        fit=$(echo "$o" | field fit)
        expl="$expl $(taskset -c 0 "$bin" "$f" 5 explain | field ns_per_pod)"
        t=$(GOMAXPROCS=1 taskset -c 0 "$oracle" -bench 5 < "$f")
        theirs="$theirs $(echo "$t" | field ns_per_pod)"
        [ "$(echo "$t" | field fit)" = "$fit" ] || { echo "alloc-bench: $shape: $fit nodes fit, the oracle says $(echo "$t" | field fit)" >&2; exit 1; }
    done
    o=$(echo "$ours" | tr ' ' '\n' | grep . | median)
    c=$(echo "$first" | tr ' ' '\n' | grep . | median)
    e=$(echo "$expl" | tr ' ' '\n' | grep . | median)
    t=$(echo "$theirs" | tr ' ' '\n' | grep . | median)
    printf '%-26s %6s %10.0f %10.0f %12.0f %12.0f %8.1fx %8.1fx %8.1fx\n' "$shape-${nodes}x$devs" "$fit" \
        "$(awk -v x="$c" 'BEGIN {print x / 1000}')" \
        "$(awk -v x="$o" 'BEGIN {print x / 1000}')" "$(awk -v x="$e" 'BEGIN {print x / 1000}')" \
        "$(awk -v x="$t" 'BEGIN {print x / 1000}')" "$(awk -v t="$t" -v o="$c" 'BEGIN {print t / o}')" \
        "$(awk -v t="$t" -v o="$o" 'BEGIN {print t / o}')" "$(awk -v t="$t" -v o="$e" 'BEGIN {print t / o}')"
done
