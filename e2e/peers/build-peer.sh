#!/bin/sh
# Builds a peer (a Go module under e2e/peers/NAME: Kubernetes' own code as an oracle, pinned
# in its go.mod) into a cache directory outside the repository, keyed by the module's
# content, and prints the binary's path.
#
# Usage: e2e/peers/build-peer.sh NAME        (celoracle, allocoracle)
# Env:   DD_CACHE_DIR   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor)
# Exits non-zero with a reason on stderr when it cannot (no Go, no module proxy).
set -eu
name=${1:?usage: build-peer.sh NAME}
here=$(cd "$(dirname "$0")/$name" && pwd)
cache=${DD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor}
command -v go >/dev/null 2>&1 || { echo "build-$name: go is not installed" >&2; exit 1; }
key=$(cat "$here/go.mod" "$here/go.sum" "$here"/*.go | sha256sum | cut -c1-12)
bin=$cache/peers/$name-$key/$name
mkdir -p "$cache/peers"
# One build at a time (scripts/prebuild.sh may be building it in the background).
exec 9>"$cache/peers/.build.lock"
flock 9
if [ ! -x "$bin" ]; then
    echo "build-$name: building $name into $(dirname "$bin") (first time: a few minutes)" >&2
    mkdir -p "$(dirname "$bin")"
    (cd "$here" && nice -n 10 go build -mod=readonly -trimpath -o "$bin.tmp" .) >&2
    mv -f "$bin.tmp" "$bin"
fi
echo "$bin"
