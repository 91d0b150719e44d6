#!/bin/sh
# Builds the CEL oracle (e2e/peers/celoracle: Kubernetes' own DRA CEL code, pinned in
# its go.mod to the e2e's Kubernetes version) into a cache directory outside the
# repository, keyed by the module's content, and prints the binary's path.
#
# Usage: e2e/peers/build-celoracle.sh
# Env:   DD_CACHE_DIR   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor)
# Exits non-zero with a reason on stderr when it cannot (no Go, no module proxy).
set -eu
here=$(cd "$(dirname "$0")/celoracle" && pwd)
cache=${DD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor}
command -v go >/dev/null 2>&1 || { echo "build-celoracle: go is not installed" >&2; exit 1; }
key=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)
bin=$cache/peers/celoracle-$key/celoracle
mkdir -p "$cache/peers"
# One build at a time (scripts/prebuild.sh may be building it in the background).
exec 9>"$cache/peers/.build.lock"
flock 9
if [ ! -x "$bin" ]; then
    echo "build-celoracle: building the CEL oracle into $(dirname "$bin") (first time: a few minutes)" >&2
    mkdir -p "$(dirname "$bin")"
    (cd "$here" && nice -n 10 go build -mod=readonly -trimpath -o "$bin.tmp" .) >&2
    mv -f "$bin.tmp" "$bin"
fi
echo "$bin"
