#!/usr/bin/env bash
# Builds the peer linter kubeconform from its Go module (version pinned in
# e2e/peers/go.mod) and produces offline JSON schemas for it from the
# Kubernetes OpenAPI spec shipped in the k8s.io/kubernetes Go module.
# Everything goes to a cache directory outside the repository, keyed by
# version, and is reused when present.
#
# Usage: e2e/peers/build-kubeconform.sh
# Env:   DD_CACHE_DIR   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor)
#        K8S_VERSION    Kubernetes version for the schemas (default 1.34.3)
# Prints, on success, three lines that a caller can eval:
#   KUBECONFORM=<binary>  KUBECONFORM_VERSION=<vX.Y.Z>  KUBECONFORM_SCHEMAS=<dir>
#   (and K8S_VERSION=<x.y.z>)
# Exits non-zero with a reason on stderr when it cannot (no Go, no module proxy).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${DD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor}
k8s=${K8S_VERSION:-1.34.3}
k8s=${k8s#v}

command -v go >/dev/null 2>&1 || { echo "build-kubeconform: go is not installed" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "build-kubeconform: python3 is not installed" >&2; exit 1; }

ver=$(awk '$1 == "github.com/yannh/kubeconform" { print $2 } $2 == "github.com/yannh/kubeconform" { print $3 }' "$here/go.mod" | head -n1)
[ -n "$ver" ] || { echo "build-kubeconform: no kubeconform version in $here/go.mod" >&2; exit 1; }

bindir="$cache/peers/kubeconform-$ver"
bin="$bindir/kubeconform"
if [ ! -x "$bin" ]; then
    echo "build-kubeconform: building kubeconform $ver into $bindir" >&2
    mkdir -p "$bindir"
    (cd "$here" && nice -n 10 go build -mod=readonly -trimpath -o "$bin.tmp" github.com/yannh/kubeconform/cmd/kubeconform) >&2
    mv -f "$bin.tmp" "$bin"
fi

# Schemas: keyed by Kubernetes version and by the converter's content, so a
# change to the converter regenerates them.
conv="$here/openapi2kubeconform.py"
convsum=$(sha256sum "$conv" | cut -c1-12)
schemas="$cache/peers/kubeconform-schemas-v$k8s-$convsum"
if [ ! -f "$schemas/.complete" ]; then
    echo "build-kubeconform: generating JSON schemas for Kubernetes v$k8s into $schemas" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    # Outside any module, so that this only downloads (k8s.io/kubernetes
    # cannot be required as a dependency without its staging replaces).
    dir=$(cd "$tmp" && GOFLAGS=-mod=mod nice -n 10 go mod download -json "k8s.io/kubernetes@v$k8s" |
          python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d["Error"]) if d.get("Error") else print(d["Dir"])')
    spec="$dir/api/openapi-spec/swagger.json"
    [ -f "$spec" ] || { echo "build-kubeconform: $spec is missing" >&2; exit 1; }
    rm -rf "$schemas.tmp"
    python3 "$conv" "$spec" "$schemas.tmp" "$k8s" >&2
    touch "$schemas.tmp/.complete"
    rm -rf "$schemas"
    mv "$schemas.tmp" "$schemas"
fi

echo "KUBECONFORM=$bin"
echo "KUBECONFORM_VERSION=$ver"
echo "KUBECONFORM_SCHEMAS=$schemas"
echo "K8S_VERSION=$k8s"
