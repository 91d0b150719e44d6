#!/bin/sh
# Runs every unit test binary of build directory $1 in its own process, with a
# timeout, from the repository root.  Adds the counts to build/test-counts so
# scripts/summary.sh can print one closing line for the whole `make test`.
set -u
B=${1:?usage: run-tests.sh BUILD_DIR}
pass=0; fail=0; bad=""
for t in "$B"/tests/test_*; do
    [ -x "$t" ] || continue
    out=$(DD_BIN="$B/dra-doctor" timeout 300 "$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    if [ "$rc" -ne 0 ]; then
        bad="$bad $(basename "$t")"
        [ -z "$f" ] && fail=$((fail + 1))
    fi
done
mkdir -p build
echo "$pass $fail" >> build/test-counts
echo "$B: $pass passed, $fail failed"
[ -z "$bad" ] || { echo "failing test binaries:$bad" >&2; exit 1; }
