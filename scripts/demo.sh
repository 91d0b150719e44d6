#!/bin/sh
# The main job: the reference scenario (ICTSC 2025 "The Giver", six layered DRA faults)
# reproduced on a real cluster, and diagnosed by dra-doctor.
#
#   1. lint: the manifests and the node's containerd config, offline;
#   2. a real control plane and a real node (kubelet, containerd 1.7 running the seed's own
#      config.toml, runc, CNI), the real DRA example driver as the seed's DaemonSet: the
#      scenario applied as the contestants got it;
#   3. dra-doctor installed from deploy/ as a user installs it (kubectl apply -k; the image
#      built locally from the Dockerfile): what the controller writes on the pods (kubectl
#      describe), `dra-doctor diagnose`, the webhook refusing the typo at the door;
#   4. the write-up's six fixes in order, each followed by what dra-doctor says next;
#   5. both pods Running, each with its GPU injected through CDI (kubectl exec ... env).
# The first run builds Kubernetes, containerd and the driver from the Go module proxy
# (20-40 minutes); later runs take a few minutes.  DEMO_KEEP=1 leaves the cluster running.
set -u
cd "$(dirname "$0")/.."
B=${B:-build/release}
seed=tests/data/lint/seed
NS=dra-tutorial
DS=dra-example-driver-kubeletplugin

say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
die() { echo "demo: $*" >&2; exit 1; }

say "1. dra-doctor lint $seed/broken --containerd-config $seed/broken/containerd-config.toml"
"$B/dra-doctor" lint "$seed/broken" --containerd-config "$seed/broken/containerd-config.toml"
[ $? -eq 1 ] || exit 1

state=$(mktemp -d /tmp/dra-doctor-demo.XXXXXX)
if [ -z "${DEMO_KEEP:-}" ]; then
    trap 'scripts/stack.sh down "$state"; rm -rf "$state"' EXIT
    trap 'exit 130' INT TERM
fi

say "2. a real cluster: control plane, node, the seed scenario"
scripts/stack.sh up "$state" "$B" || die "the cluster did not come up (see $state/up.log)"
eval "$(e2e/cluster env --dir "$state")"
run kubectl get nodes -o wide
echo "\$ e2e/cluster containerd-config $seed/broken/containerd-config.toml   # the node's config.toml"
e2e/cluster containerd-config "$seed/broken/containerd-config.toml" 2>&1 | sed 's/^cluster: //'

registrations() {
    grep -c 'Connection changed.*driverName="gpu.example.com".*connected=true' \
        "$state/logs/kubelet.log" 2>/dev/null || true
}
# The kubelet registers a (re)started plugin a moment after its rollout ends; a pod
# prepared before that waits a minute for the kubelet's next retry.
wait_registered() {
    i=0
    while [ "$(registrations)" -le "$1" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && die "the driver did not register with the kubelet"
        sleep 0.2
    done
}
restart_driver_and_wait() {
    r=$(registrations)
    "$@" >/dev/null
    kubectl rollout status -n $NS daemonset/$DS --timeout=120s >/dev/null
    wait_registered "$r"
}

r=$(registrations)
for f in namespace driver-rbac driver-daemonset deviceclass quota resourceclaim-first; do
    run kubectl apply -f "$seed/broken/$f.yaml"
done
run kubectl apply -f "$seed/broken/resourceclaim-second.yaml"
echo "(refused by the real quota admission, as in the contest)"
kubectl rollout status -n $NS daemonset/$DS --timeout=120s >/dev/null
wait_registered "$r"
run kubectl apply -f "$seed/broken/pods.yaml"
sleep 3
run kubectl get pods -n $NS

say "3. dra-doctor, installed from deploy/"
echo "\$ kubectl apply -k deploy/overlays/builtin-certs"
scripts/stack.sh deploy "$state" deploy/overlays/builtin-certs || die "dra-doctor did not deploy"
run kubectl get pods -n dra-doctor -o wide

root() {
    kubectl get pod -n $NS "$1" -o jsonpath='{.metadata.annotations.dra-doctor\.io/root-cause}' 2>/dev/null
}
# wait_root POD OLD: until POD's root cause is no longer OLD (at most 3 minutes).
wait_root() {
    i=0
    while [ "$(root "$1")" = "$2" ]; do
        i=$((i + 1)); [ $i -gt 720 ] && { echo "(no change after 3 minutes)"; return; }
        sleep 0.25
    done
    sleep 1 # the rest of the burst: the other pod and the Events
}
diagnose() {
    echo
    echo "\$ dra-doctor diagnose -n $NS"
    o=$("$B/dra-doctor" diagnose -n $NS)
    if [ -n "$o" ]; then printf '%s\n' "$o"; else echo "(nothing to report: every pod is healthy)"; fi
}
gpus() {
    echo "\$ kubectl exec -n $NS $1 -- sh -c 'env | grep GPU_'"
    kubectl exec -n $NS "$1" -- sh -c 'env | grep GPU_'
}

wait_root pod0 ""
wait_root pod1 ""
for p in pod0 pod1; do
    echo
    run kubectl describe pod -n $NS "$p"
done
diagnose

echo
echo "The admission webhook, through its Service: the seed's typo class, named gpu-typo.example.com,"
echo "is refused; a second claim gets dra-doctor's warning before the quota admission refuses it."
sed 's/name: gpu.example.com$/name: gpu-typo.example.com/' "$seed/broken/deviceclass.yaml" >"$state/typo-class.yaml"
run kubectl apply -f "$state/typo-class.yaml"
run kubectl apply -f "$seed/broken/resourceclaim-second.yaml"

say "4. the write-up's six fixes, in order"

echo
echo "-- fix 1: the driver's ClusterRole may create, update, patch, delete ResourceSlices"
run kubectl apply -f "$seed/fixed/driver-rbac.yaml"
echo "(and its plugin restarted, as dra-doctor's fix says: a refused plugin retries slowly)"
restart_driver_and_wait kubectl rollout restart -n $NS daemonset/$DS
wait_root pod0 DriverRBACDenied
diagnose

echo
echo "-- fix 2: the DeviceClass selector says gpu.example.com"
run kubectl apply -f "$seed/fixed/deviceclass.yaml"
wait_root pod0 SelectorMatchesNoDriver
run kubectl get pods -n $NS
gpus pod0
echo "(nothing: CDI is off)"
diagnose

echo
echo "-- fix 3: enable_cdi = true in the node's containerd config, containerd restarted"
echo "\$ e2e/cluster containerd-config $seed/fixed/containerd-config.toml"
e2e/cluster containerd-config "$seed/fixed/containerd-config.toml" 2>&1 | sed 's/^cluster: //'
wait_root pod0 CDIDisabled
diagnose
echo "(as dra-doctor says: pod0 started while CDI was off and must be recreated)"
run kubectl delete pod -n $NS pod0
run kubectl apply -f "$seed/fixed/pods.yaml"
wait_root pod0 CDIInjectionFailed
run kubectl get pods -n $NS
diagnose

echo
echo "-- fix 4: CDI_ROOT=/var/run/cdi on the driver (the shared hostPath)"
echo "\$ kubectl set env -n $NS daemonset/$DS CDI_ROOT=/var/run/cdi"
restart_driver_and_wait kubectl set env -n $NS daemonset/$DS CDI_ROOT=/var/run/cdi
wait_root pod0 CDISpecDirNotShared
diagnose
echo "(as dra-doctor says: pod0's claim was prepared before the fix; recreate it)"
run kubectl delete pod -n $NS pod0
run kubectl apply -f "$seed/fixed/pods.yaml"
wait_root pod0 CDIInjectionFailed
diagnose

echo
echo "-- fix 5: NUM_DEVICES=2"
echo "\$ kubectl set env -n $NS daemonset/$DS NUM_DEVICES=2"
restart_driver_and_wait kubectl set env -n $NS daemonset/$DS NUM_DEVICES=2
sleep 3
diagnose

echo
echo "-- fix 6: the quota allows 2 devices; the second claim applied again"
run kubectl apply -f "$seed/fixed/quota.yaml"
run kubectl apply -f "$seed/fixed/resourceclaim-second.yaml"
kubectl wait -n $NS --for=condition=Ready pod/pod1 --timeout=180s >/dev/null
wait_root pod1 QuotaExceeded
diagnose

say "5. the contest's goal state"
run kubectl get pods -n $NS
gpus pod0
gpus pod1
if [ -n "${DEMO_KEEP:-}" ]; then
    echo
    echo "The cluster keeps running: eval \"\$(e2e/cluster env --dir $state)\" for kubectl;"
    echo "scripts/stack.sh down $state stops it."
fi
exit 0
