#!/bin/sh
# Prints the closing line of `make test`: the sum over every test run recorded
# in build/test-counts (then resets it for the next run).
set -u
f=build/test-counts
[ -f "$f" ] || { echo "no tests ran" >&2; exit 1; }
awk '{p += $1; q += $2} END {printf "%d passed, %d failed\n", p, q; exit (q > 0 || p == 0)}' "$f"
rc=$?
rm -f "$f"
exit $rc
