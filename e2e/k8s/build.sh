#!/bin/sh
# Builds the real control plane from the upstream Go modules: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl; and, when
# asked, the node's kubelet from the same module (e2e/node/build.sh asks).
#
#   e2e/k8s/build.sh            prints the bin directory (building it if missing)
#   e2e/k8s/build.sh kubelet    the same for the kubelet alone
#   K8S_VERSION=v1.34.3 e2e/k8s/build.sh
#
# The pinned version (v1.37.2) builds from this module (go.mod, go.sum
# committed).  Any other version gets a module generated in the cache: its
# staging replaces are derived from that release's own go.mod (every
# `k8s.io/x => ./staging/...` becomes `k8s.io/x => k8s.io/x v0.Y.Z`), because
# k8s.io/kubernetes requires its staging modules at the placeholder v0.0.0.
# Binaries are cached outside the repository, keyed by version, and rebuilt
# only when missing.
set -eu
PINNED=v1.37.2
K8S_VERSION=${K8S_VERSION:-$PINNED}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
CACHE=${DD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor}
here=$(cd "$(dirname "$0")" && pwd)
out=$CACHE/k8s/$K8S_VERSION/bin
tools=${*:-etcd kube-apiserver kube-controller-manager kube-scheduler kubectl}

missing=""
for t in $tools; do [ -x "$out/$t" ] || missing="$missing $t"; done
if [ -z "$missing" ]; then
    echo "$out"
    exit 0
fi

# One build at a time, even with several `up`s racing; the callers that hold the lock
# already (e2e/node/build.sh) say so.
mkdir -p "$CACHE/k8s"
if [ -z "${DD_NODE_BUILD_LOCKED:-}" ]; then
    DD_NODE_BUILD_LOCKED=1 exec flock "$CACHE/k8s/.build.lock" sh "$0" "$@"
fi

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
staging=v0.${K8S_VERSION#v1.}
if [ "$K8S_VERSION" = "$PINNED" ]; then
    src=$here
else
    src=$CACHE/k8s/$K8S_VERSION/src
    mkdir -p "$src"
    gomod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
            sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    printf 'module dra-doctor/e2e/k8s\n\ngo 1.26\n' > "$src/go.mod"
    cp "$here/tools.go" "$src/tools.go"
    for m in $(awk '$2=="=>" && $3 ~ /^\.\/staging\// {print $1}' "$gomod"); do
        (cd "$src" && go mod edit -replace="$m=$m@$staging")
    done
    (cd "$src" && go mod edit -require="k8s.io/kubernetes@$K8S_VERSION" \
                              -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" &&
     go mod tidy)
fi

echo "building Kubernetes $K8S_VERSION ($missing ) into $out (the control plane the first time: 15-30 min)" >&2
tmp=$out.tmp.$$
mkdir -p "$tmp"
t0=$(date +%s)
ldf="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
done
cd "$src"
pkgs=""
for t in $missing; do
    case $t in
        etcd) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3 ;;
        kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet)
            pkgs="$pkgs k8s.io/kubernetes/cmd/$t" ;;
        *) echo "e2e/k8s/build.sh: unknown tool $t" >&2; exit 2 ;;
    esac
done
# One go build for all of them: they share most packages, and the linker runs once each.
# shellcheck disable=SC2086
[ -z "$pkgs" ] || CGO_ENABLED=0 go build -trimpath -ldflags "$ldf" -o "$tmp/" $pkgs
mkdir -p "$out"
for t in $missing; do mv "$tmp/$t" "$out/$t"; done
rmdir "$tmp"
echo "built Kubernetes $K8S_VERSION ($missing ) in $(( $(date +%s) - t0 )) s" >&2
echo "$out"
