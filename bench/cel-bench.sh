#!/bin/sh
# Selector evaluation, lib/cel against Kubernetes' own CEL code (cel-go, through
# k8s.io/dynamic-resource-allocation's DeviceMatches as kube-scheduler calls it), in the
# same run: each selector compiled once, then evaluated on N devices (default 100000)
# differing in one attribute, one core each.  BENCH_REPEAT runs (default 3), interleaved;
# the median of each side is reported.
#
#   bench/cel-bench.sh [BUILD_DIR]
set -eu
B=${1:-build/release}
N=${BENCH_DEVICES:-100000}
R=${BENCH_REPEAT:-3}
make -s B="$B" "$B/libdd.a"
bin=$B/cel-bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Ilib -o "$bin" bench/cel-bench.c "$B/libdd.a" \
    $(pkg-config --libs libcjson yaml-0.1 re2 libcurl libmicrohttpd gnutls libssl libcrypto) \
    -lstdc++ -lm -pthread
oracle=$(e2e/peers/build-celoracle.sh)
dev='{"driver":"gpu.example.com","attributes":{"model":{"string":"LATEST-GPU-MODEL"},"uuid":{"string":"gpu-18db0e85-99e9-c746-8531-ffeb86328b39"},"driverVersion":{"version":"1.0.0"},"healthy":{"bool":true}},"capacity":{"memory":{"value":"80Gi"}}}'
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
nsper() { sed -n 's/.*"ns_per_device": \([0-9.]*\).*/\1/p'; }
printf '%-10s %12s %12s %8s\n' selector "lib/cel ns" "cel-go ns" speedup
while IFS='|' read -r name expr; do
    [ -n "$name" ] || continue
    req=$(python3 -c 'import json,sys; print(json.dumps({"expression": sys.argv[1], "device": json.loads(sys.argv[2])}))' "$expr" "$dev")
    ours=""; theirs=""
    for _ in $(seq "$R"); do
        ours="$ours $(taskset -c 0 "$bin" "$N" "$expr" | nsper)"
        theirs="$theirs $(echo "$req" | GOMAXPROCS=1 taskset -c 0 "$oracle" -bench "$N" | nsper)"
    done
    o=$(echo "$ours" | tr ' ' '\n' | grep . | median)
    t=$(echo "$theirs" | tr ' ' '\n' | grep . | median)
    printf '%-10s %12s %12s %7.1fx\n' "$name" "$o" "$t" "$(awk -v t="$t" -v o="$o" 'BEGIN {print t / o}')"
done <<'SELECTORS'
driver|device.driver == "gpu.example.com"
model|device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL"
typical|device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL" && device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0 && device.attributes["gpu.example.com"].index % 2 == 0
semver|device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("0.9.0")) && device.attributes["gpu.example.com"].healthy
regex|device.attributes["gpu.example.com"].uuid.matches("^gpu-[0-9a-f]{8}-") && device.attributes["gpu.example.com"].index < 50000
macro|["a100", "h100", "LATEST-GPU-MODEL"].exists(m, device.attributes["gpu.example.com"].model == m)
SELECTORS
