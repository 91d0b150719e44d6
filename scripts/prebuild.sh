#!/bin/sh
# Builds every Go program the test suite runs, in the background, while the C suites
# run: on a new machine they take most of `make test`'s time (the control plane alone
# compiles for half an hour on two cores), and the C suites leave a core idle.
#
#   scripts/prebuild.sh start [OWNER_PID]   start it, unless one is running; it is stopped
#                                           when OWNER_PID (make) goes away
#   scripts/prebuild.sh wait                wait for it and print what it built, with times
#
# What it builds, in the order the suite needs it: the CEL and allocation oracles
# (test-differential), the control plane with the kubelet in one go build (they share most packages), then
# containerd 1.7 and the DRA example driver (test-e2e's cluster), then containerd 2 and
# helm, which only the last e2e programs need, then the second release's control plane
# and kubelet (K8S_SECOND, v1.35.4), which only the last e2e run (the seed) needs.  Each
# build script keeps its cache and takes its lock only to build, so a suite that needs a
# program before the prebuild got to it waits for the lock, or builds it itself: nothing
# is built twice, and a failed prebuild only means the suite builds the program when it
# needs it.  The log is build/prebuild.log.
set -u
second=${K8S_SECOND:-v1.35.4}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log=build/prebuild.log
pidf=build/prebuild.pid

running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }

step() {
    name=$1; shift
    t=$(date +%s)
    if "$@" >/dev/null; then r=done; else r="failed (the suite builds it when it needs it)"; fi
    echo "prebuild: $name $r in $(( $(date +%s) - t )) s"
}

build_all() {
    t0=$(date +%s)
    step "CEL oracle" e2e/peers/build-celoracle.sh
    step "allocation oracle" e2e/peers/build-allocoracle.sh
    step "control plane and kubelet" sh e2e/k8s/build.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet
    step "containerd 1.7 and the DRA example driver" sh e2e/node/build.sh containerd driver
    # What only the last e2e programs need (e2e_containerd2, e2e_helm): built while the first
    # ones run.
    step "containerd 2" sh e2e/node/build.sh containerd2
    step "helm" sh e2e/node/build.sh helm
    # The second release the seed runs on, after every other e2e program (Makefile's
    # K8S_SECOND): its control plane and kubelet in one go build, as the first's.
    step "Kubernetes $second (control plane and kubelet)" env K8S_VERSION="$second" \
        sh e2e/k8s/build.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet
    echo "prebuild: all in $(( $(date +%s) - t0 )) s"
}

case ${1:-} in
start)
    running && exit 0
    command -v go >/dev/null 2>&1 || { echo "prebuild: go is not installed; each suite builds what it needs" >&2; exit 0; }
    owner=${2:-$PPID}
    mkdir -p build
    : >"$log"
    # Its own session, so that stopping it stops every compiler it started.
    setsid nice -n 5 sh "$0" run "$owner" >>"$log" 2>&1 &
    echo $! >"$pidf"
    echo "prebuild: building the Go programs in the background (log: $log)"
    ;;
run)
    owner=${2:?}
    build_all &
    b=$!
    while kill -0 "$b" 2>/dev/null; do
        kill -0 "$owner" 2>/dev/null || { echo "prebuild: stopped ($owner ended)"; kill -TERM 0; exit 1; }
        sleep 2
    done
    wait "$b" ;;
wait)
    [ -f "$pidf" ] || exit 0
    while running; do sleep 2; done
    rm -f "$pidf"
    grep '^prebuild:' "$log" 2>/dev/null || true
    ;;
*)
    echo "usage: scripts/prebuild.sh start [OWNER_PID] | wait" >&2; exit 2 ;;
esac
