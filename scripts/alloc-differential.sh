#!/bin/sh
# The allocation differential test, the deterministic slice of tests/fuzz/fuzz_alloc_diff.c:
# every case of tests/data/alloc (a snapshot with the stated answer, which test_alloc runs
# through lib/model/alloc), the fuzzer's inputs kept in tests/data/fuzz-regress/alloc_diff,
# and ALLOC_DIFF_SEEDS generated snapshots (default 3000, seed 1)
# through lib/model/alloc and through Kubernetes' own allocator (e2e/peers/allocoracle);
# each node's verdict, whether the pod's filters exclude it, and the devices it would get
# must agree.  A difference the fuzzer finds becomes a case under tests/data/alloc.
#
# Usage: scripts/alloc-differential.sh [BUILD_DIR]     (default build/release)
# Prints "alloc-differential: N agreed, N differed"; exit 1 on any difference.
set -u
B=${1:-build/release}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
make -s B="$B" "$B/alloc-diff" || { echo "0 1" >> build/test-counts; exit 1; }
if ! ALLOC_ORACLE=$(e2e/peers/build-allocoracle.sh); then
    echo "alloc-differential: the oracle cannot be built" >&2
    echo "0 1" >> build/test-counts
    exit 1
fi
export ALLOC_ORACLE
out=$("$B/alloc-diff" -n "${ALLOC_DIFF_SEEDS:-3000}" -s "${ALLOC_DIFF_SEED:-1}" tests/data/alloc/*.json \
    tests/data/fuzz-regress/alloc_diff/*); rc=$?
printf '%s\n' "$out"
agreed=$(printf '%s\n' "$out" | sed -n 's/^alloc-diff: \([0-9]*\) agreed, \([0-9]*\) differed.*/\1/p')
differed=$(printf '%s\n' "$out" | sed -n 's/^alloc-diff: \([0-9]*\) agreed, \([0-9]*\) differed.*/\2/p')
mkdir -p build
echo "${agreed:-0} ${differed:-1}" >> build/test-counts
echo "alloc-differential: ${agreed:-0} agreed, ${differed:-?} differed"
exit $rc
