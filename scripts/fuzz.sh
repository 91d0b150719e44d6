#!/bin/sh
# Builds every libFuzzer harness tests/fuzz/fuzz_<name>.c with clang and
# ASan+UBSan, replays its seed corpus and any regression inputs
# (tests/data/fuzz-regress/<name>/), then fuzzes it:
#   fuzz.sh smoke   FUZZ_SECONDS each (default 15), part of `make test`
#   fuzz.sh long    FUZZ_SECONDS each (default 600), `make fuzz`
# FUZZ_ONLY=PATTERN runs only the harnesses whose name (cel_diff, alloc_diff, ...) matches the
# shell pattern, e.g. one harness for an hour: FUZZ_ONLY=alloc_diff FUZZ_SECONDS=3600 fuzz.sh long
# New corpus entries go to build/fuzz/corpus/<name>/, never into the tree.
set -u
mode=${1:-smoke}
case "$mode" in
    smoke) secs=${FUZZ_SECONDS:-15} ;;
    long) secs=${FUZZ_SECONDS:-600} ;;
    *) echo "usage: fuzz.sh smoke|long" >&2; exit 2 ;;
esac
CLANG=${CLANG:-$(command -v clang-14 || command -v clang)}
CLANGXX=${CLANGXX:-$(command -v clang++-14 || command -v clang++)}
[ -n "$CLANG" ] || { echo "fuzz: clang not found (make deps)" >&2; exit 1; }
B=build/fuzz
mkdir -p "$B"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
# The library once, instrumented for coverage, with the project's own warnings (make); then
# each harness only links against it.
make -s B="$B" CC="$CLANG" CXX="$CLANGXX" CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $SAN" "$B/libdd.a" || {
    echo "fuzz: library build failed"; echo "0 1" >> build/test-counts; exit 1; }
FLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -DDD_VERSION=\"fuzz\" -Ilib -Itests/unit -Ilint -Icontroller -Iwebhook -Icerts -fsanitize=fuzzer $SAN"
LIBS="$(pkg-config --libs libcjson yaml-0.1 re2 libcurl libmicrohttpd gnutls libssl libcrypto) -lstdc++ -lm -pthread"
# fuzz_cel_diff compares with Kubernetes' own CEL code when the oracle can be built.
if [ -z "${CEL_ORACLE:-}" ] && CEL_ORACLE=$(e2e/peers/build-celoracle.sh); then
    export CEL_ORACLE
else
    echo "fuzz: no CEL oracle (Go or the module proxy missing): fuzz_cel_diff runs without it"
fi
# fuzz_alloc_diff compares with Kubernetes' own allocator the same way.
if [ -z "${ALLOC_ORACLE:-}" ] && ALLOC_ORACLE=$(e2e/peers/build-allocoracle.sh); then
    export ALLOC_ORACLE
else
    echo "fuzz: no allocation oracle (Go or the module proxy missing): fuzz_alloc_diff runs without it"
fi
pass=0; fail=0
for h in tests/fuzz/fuzz_*.c; do
    [ -f "$h" ] || continue
    name=$(basename "$h" .c); name=${name#fuzz_}
    # shellcheck disable=SC2254
    case $name in ${FUZZ_ONLY:-*}) ;; *) continue ;; esac
    bin="$B/fuzz_$name"
    # shellcheck disable=SC2086
    if ! $CLANG $FLAGS -o "$bin" "$h" "$B/libdd.a" $LIBS; then
        echo "fuzz $name: build failed"; fail=$((fail + 1)); continue
    fi
    corpus="$B/corpus/$name"
    mkdir -p "$corpus"
    seeds=""
    [ -d "tests/fuzz/corpus/$name" ] && seeds="tests/fuzz/corpus/$name"
    regress=""
    [ -d "tests/data/fuzz-regress/$name" ] && regress="tests/data/fuzz-regress/$name"
    dict=""
    [ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
    # A harness's own libFuzzer flags (a differential one waits for its oracle).
    opts=""
    [ -f "tests/fuzz/$name.options" ] && opts=$(cat "tests/fuzz/$name.options")
    log="$B/fuzz_$name.log"
    # shellcheck disable=SC2086
    # Crash inputs go to build/fuzz/, not to the working directory.
    if "$bin" -artifact_prefix="$B/" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 $dict $opts "$corpus" $seeds $regress >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz $name: ok, ${execs:-?} executions in ${secs}s, no crash"
        pass=$((pass + 1))
    else
        echo "fuzz $name: FAILED (see $log)"; tail -n 40 "$log"
        fail=$((fail + 1))
    fi
done
mkdir -p build
echo "$pass $fail" >> build/test-counts
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
