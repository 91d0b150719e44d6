#!/bin/sh
# The main job, until the controller lands: lint the bundled seed scenario
# (ICTSC 2025 "The Giver": six layered DRA faults) and show what dra-doctor
# finds, then the fixed scenario, which is clean.
set -u
cd "$(dirname "$0")/.."
seed=tests/data/lint/seed
echo "== dra-doctor lint $seed/broken (the scenario as shipped: both pods would stay Pending)"
./dra-doctor lint "$seed/broken" --containerd-config "$seed/broken/containerd-config.toml"
rc=$?
echo "(exit status $rc: 1 means findings at error level)"
[ "$rc" -eq 1 ] || exit 1
echo
echo "== dra-doctor lint $seed/fixed (after the write-up's six fixes)"
./dra-doctor lint "$seed/fixed" --containerd-config "$seed/fixed/containerd-config.toml" || exit 1
