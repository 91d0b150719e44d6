#!/bin/sh
# The main job: the reference scenario (ICTSC 2025 "The Giver", six layered DRA
# faults) on a real local control plane, diagnosed by dra-doctor.
#
#   1. lint: the manifests and the node's containerd config, offline (the six
#      root causes, before anything is applied);
#   2. a real control plane (etcd, kube-apiserver, kube-controller-manager,
#      kube-scheduler; the node is simulated), the broken scenario applied, the
#      controller running: `kubectl describe pod` of both pods shows what it
#      wrote;
#   3. the admission webhook registered with that API server: the seed's typo
#      DeviceClass is refused at the door with a did-you-mean, the fixed one is
#      admitted, and the second claim gets the quota warning before the quota
#      admission refuses it.
# The first run builds Kubernetes from source (15-30 minutes); later runs
# reuse it.  DEMO_KEEP=1 leaves the cluster running to explore.
set -u
cd "$(dirname "$0")/.."
B=${B:-build/release}
seed=tests/data/lint/seed

echo "== 1. dra-doctor lint $seed/broken --containerd-config $seed/broken/containerd-config.toml"
"$B/dra-doctor" lint "$seed/broken" --containerd-config "$seed/broken/containerd-config.toml"
[ $? -eq 1 ] || exit 1

echo
echo "== 2. the same scenario on a real control plane"
state=$(mktemp -d /tmp/dra-doctor-demo.XXXXXX)
if [ -z "${DEMO_KEEP:-}" ]; then
    trap 'scripts/stack.sh down "$state"; rm -rf "$state"' EXIT INT TERM
fi
cp "$seed/broken/containerd-config.toml" "$state/containerd-config.toml"
mkdir -p "$state/node-1/host/etc/containerd"
cp "$seed/broken/containerd-config.toml" "$state/node-1/host/etc/containerd/config.toml"
scripts/stack.sh up "$state" "$B" || exit 1
eval "$(e2e/cluster env --dir "$state")"
for f in namespace driver-rbac driver-daemonset deviceclass quota resourceclaim-first pods; do
    kubectl apply -f "$seed/broken/$f.yaml"
done
echo "\$ kubectl apply -f $seed/broken/resourceclaim-second.yaml"
kubectl apply -f "$seed/broken/resourceclaim-second.yaml"
echo "(rejected by the real quota admission, as in the contest)"

# Wait for the controller's diagnosis of both pods.
i=0
until [ -n "$(kubectl get pod -n dra-tutorial pod1 -o jsonpath='{.metadata.annotations.dra-doctor\.io/root-cause}' 2>/dev/null)" ] &&
      [ -n "$(kubectl get pod -n dra-tutorial pod0 -o jsonpath='{.metadata.annotations.dra-doctor\.io/root-cause}' 2>/dev/null)" ]; do
    i=$((i + 1))
    [ $i -gt 120 ] && { echo "no diagnosis after 120 s; see $state/logs/controller.log" >&2; exit 1; }
    sleep 1
done
echo
echo "\$ kubectl get pods -n dra-tutorial"
kubectl get pods -n dra-tutorial
for p in pod0 pod1; do
    echo
    echo "\$ kubectl describe pod -n dra-tutorial $p"
    kubectl describe pod -n dra-tutorial "$p"
done
echo
echo "\$ dra-doctor diagnose -n dra-tutorial"
"$B/dra-doctor" diagnose -n dra-tutorial

echo
echo "== 3. the admission webhook on the same API server"
scripts/stack.sh webhook "$state" "$B" || exit 1
echo "(dra-doctor webhook on https://127.0.0.1:$(cat "$state/webhook.port")/validate, registered"
echo " with deploy/base/webhook-config.yaml; certificates from dra-doctor certs)"
# The typo class under a new name: applying the scenario's own file again would be an
# UPDATE of a class that already has the typo, which the webhook only warns about.
sed 's/name: gpu.example.com$/name: gpu-typo.example.com/' "$seed/broken/deviceclass.yaml" \
    >"$state/typo-class.yaml"
# The API server notices a new webhook configuration within a second or so.
i=0
until kubectl create --dry-run=server -f "$state/typo-class.yaml" 2>&1 | grep -q "denied the request"; do
    i=$((i + 1)); [ $i -gt 40 ] && break; sleep 0.25
done
echo "\$ kubectl apply -f typo-class.yaml   # the seed's DeviceClass, named gpu-typo.example.com"
kubectl apply -f "$state/typo-class.yaml"
echo "(refused: exit status $?)"
echo "\$ kubectl apply --dry-run=server -f $seed/fixed/deviceclass.yaml"
kubectl apply --dry-run=server -f "$seed/fixed/deviceclass.yaml"
echo "\$ kubectl apply -f $seed/broken/resourceclaim-second.yaml"
kubectl apply -f "$seed/broken/resourceclaim-second.yaml"
echo "(dra-doctor's warning first, then the quota admission's refusal)"
if [ -n "${DEMO_KEEP:-}" ]; then
    echo
    echo "The cluster keeps running: eval \"\$(e2e/cluster env --dir $state)\" for kubectl;"
    echo "scripts/stack.sh down $state stops it."
fi
exit 0
