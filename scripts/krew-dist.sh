#!/bin/sh
# The krew plugin's release files: the archive (the binary, as krew installs it) and its
# manifest, deploy/krew/dra-doctor.yaml with the version, URL and sha256 filled in.
#   scripts/krew-dist.sh BINARY OUTDIR URL_BASE     (make dist)
set -eu
bin=${1:?usage: krew-dist.sh BINARY OUTDIR URL_BASE}
outdir=${2:?usage: krew-dist.sh BINARY OUTDIR URL_BASE}
base=${3:?usage: krew-dist.sh BINARY OUTDIR URL_BASE}
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
name=dra-doctor-v$version-linux-amd64.tar.gz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$outdir"
install -m 0755 "$bin" "$work/dra-doctor"
# Reproducible: fixed owner, mode and time, so the sha256 depends on the binary alone.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -czf "$outdir/$name" dra-doctor
sum=$(sha256sum "$outdir/$name" | cut -d' ' -f1)
home=${base%/releases/*}
sed -e "s|@VERSION@|$version|g" -e "s|@URI@|$base/$name|g" -e "s|@SHA256@|$sum|g" \
    -e "s|@HOMEPAGE@|$home|g" "$top/deploy/krew/dra-doctor.yaml" | grep -v '^#' > "$outdir/dra-doctor.yaml"
echo "$outdir/$name"
echo "$outdir/dra-doctor.yaml"
