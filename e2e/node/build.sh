#!/bin/sh
# Builds the real node's programs from the Go module proxy, cached by version:
#
#   kubelet      Kubernetes $K8S_VERSION, from the control plane's own module (e2e/k8s),
#                into $CACHE/k8s/$K8S_VERSION/bin beside the control plane
#   containerd   containerd $CONTAINERD_VERSION (1.7: it still has enable_cdi; kubelet 1.37
#                still accepts a runtime without the CRI RuntimeConfig call, counting it in
#                kubelet_cri_losing_support{version="1.38.0"}), with ctr and
#                containerd-shim-runc-v2
#   containerd2  containerd $CONTAINERD2_VERSION (2.x: CDI always on since 2.4)
#   driver       the DRA example driver's kubelet plugin, dra-example-kubeletplugin
#                $DRIVER_VERSION (sigs.k8s.io/dra-example-driver)
#   helm         helm $HELM_VERSION (helm.sh/helm/v3), which the e2e tests install
#                dra-doctor's chart with (deploy/helm); not the node's, but built and
#                cached the same way
#
#   e2e/node/build.sh [COMPONENT...]     (default: the node's four, not helm)
#
# Prints one line per component, "COMPONENT BINDIR".  Each BINDIR is
# $CACHE/<name>/<version>/bin, built only when a binary is missing; the build is
# serialised with e2e/k8s/build.sh's lock, so concurrent runs never build twice.
# runc and the CNI plugins come from Debian (scripts/deps.sh).
#
# containerd 1.7 and the driver cannot be `go install`ed at a version: containerd's
# go.mod has an exclude directive, and the proxy answers 403 for the driver's version
# list (which `go install mod@version` reads for deprecations).  Both are built in a copy
# of their module, exactly at the version the proxy serves, with -mod=mod.
set -eu
K8S_VERSION=${K8S_VERSION:-v1.37.2}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v1.7.35}
CONTAINERD2_VERSION=${CONTAINERD2_VERSION:-v2.4.2}
DRIVER_VERSION=${DRIVER_VERSION:-v0.2.1}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE=${DD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor}
here=$(cd "$(dirname "$0")" && pwd)
# Static binaries: they run in the driver's container and on any host alike.
export CGO_ENABLED=0

say() { printf 'node build: %s\n' "$*" >&2; }

# build_module MODULE VERSION OUT LDFLAGS TAGS PKG...: builds PKG... (relative to the
# module) of MODULE@VERSION into OUT, in a throw-away copy of the module.
build_module() {
    mod=$1 ver=$2 dst=$3 ldf=$4 tags=$5; shift 5
    dir=$(go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
    [ -d "$dir" ] || { say "go mod download $mod@$ver gave no module directory"; exit 1; }
    work=$CACHE/src/$(echo "$mod" | tr / _)@$ver.$$
    rm -rf "$work"
    mkdir -p "$CACHE/src"
    cp -r "$dir" "$work"
    chmod -R u+w "$work"
    tmp=$dst.tmp.$$
    mkdir -p "$tmp"
    t0=$(date +%s)
    (cd "$work" && go build -mod=mod -trimpath -tags "$tags" -ldflags "-s -w $ldf" -o "$tmp/" "$@")
    rm -rf "$work"
    mkdir -p "$dst"
    for f in "$tmp"/*; do mv "$f" "$dst/"; done
    rmdir "$tmp"
    say "$mod $ver built in $(( $(date +%s) - t0 )) s"
}

# have DIR BIN...: every BIN is in DIR
have() {
    d=$1; shift
    for b in "$@"; do [ -x "$d/$b" ] || return 1; done
}

# built COMPONENT: its programs are there already (where the build puts them).
built() {
    case $1 in
        kubelet) have "$CACHE/k8s/$K8S_VERSION/bin" kubelet ;;
        containerd) have "$CACHE/containerd/$CONTAINERD_VERSION/bin" containerd ctr containerd-shim-runc-v2 ;;
        containerd2) have "$CACHE/containerd/$CONTAINERD2_VERSION/bin" containerd ctr containerd-shim-runc-v2 ;;
        driver) have "$CACHE/dra-example-driver/$DRIVER_VERSION/bin" dra-example-kubeletplugin ;;
        helm) have "$CACHE/helm/$HELM_VERSION/bin" helm ;;
        *) return 1 ;;
    esac
}

build_one() {
    case $1 in
    kubelet)
        # Same module, same cache and lock as the control plane (this script holds the lock;
        # DD_NODE_BUILD_LOCKED tells e2e/k8s/build.sh so).
        bin=$(K8S_VERSION=$K8S_VERSION sh "$here/../k8s/build.sh" kubelet | tail -n 1) ;;
    containerd|containerd2)
        if [ "$1" = containerd ]; then v=$CONTAINERD_VERSION; else v=$CONTAINERD2_VERSION; fi
        case $v in
            v1.*) mod=github.com/containerd/containerd ;;
            v2.*) mod=github.com/containerd/containerd/v2 ;;
            *) say "unsupported containerd version $v"; exit 2 ;;
        esac
        bin=$CACHE/containerd/$v/bin
        have "$bin" containerd ctr containerd-shim-runc-v2 ||
            build_module "$mod" "$v" "$bin" \
                "-X $mod/version.Version=$v -X $mod/version.Revision=modproxy" \
                "no_btrfs no_devmapper no_zfs no_aufs" \
                ./cmd/containerd ./cmd/ctr ./cmd/containerd-shim-runc-v2 ;;
    driver)
        bin=$CACHE/dra-example-driver/$DRIVER_VERSION/bin
        have "$bin" dra-example-kubeletplugin ||
            build_module sigs.k8s.io/dra-example-driver "$DRIVER_VERSION" "$bin" "" "" \
                ./cmd/dra-example-kubeletplugin ;;
    helm)
        bin=$CACHE/helm/$HELM_VERSION/bin
        if ! have "$bin" helm; then
            # As helm's Makefile: the Kubernetes release `helm template` and `helm lint`
            # assume without a cluster is the one its client-go belongs to (v0.N: 1.N).
            gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
                    sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
            minor=$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod")
            [ -n "$minor" ] || { say "no k8s.io/client-go in $gomod"; exit 1; }
            ldf="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
            for p in pkg/chartutil pkg/lint/rules; do
                ldf="$ldf -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$minor"
            done
            build_module helm.sh/helm/v3 "$HELM_VERSION" "$bin" "$ldf" "" ./cmd/helm
        fi ;;
    *)
        say "unknown component $1 (kubelet, containerd, containerd2, driver, helm)"; exit 2 ;;
    esac
    echo "$1 $bin"
}

mkdir -p "$CACHE/k8s"
[ $# -gt 0 ] || set -- kubelet containerd containerd2 driver
# The lock only to build: what is built needs no waiting for someone else's build (a
# background scripts/prebuild.sh holds it for minutes).
need=""
for c in "$@"; do built "$c" || need=1; done
if [ -n "$need" ] && [ -z "${DD_NODE_BUILD_LOCKED:-}" ]; then
    export DD_NODE_BUILD_LOCKED=1
    exec flock "$CACHE/k8s/.build.lock" sh "$0" "$@"
fi
for c in "$@"; do build_one "$c"; done
