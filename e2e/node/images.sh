#!/bin/sh
# The real node's container images, made locally (no registry, no Docker engine):
#
#   pause       e2e/node/pause.c, static           registry.k8s.io/pause:3.10, :3.9, :3.8
#   test        busybox (Debian's busybox-static), a /bin/bash that runs its sh,
#               /etc/passwd and /etc/group                docker.io/library/ubuntu:22.04
#               (the seed's pods' image name), docker.io/library/busybox:1.35
#   driver      dra-example-kubeletplugin (e2e/node/build.sh) on the test image's tree
#               registry.k8s.io/dra-example-driver/dra-example-driver:$DRIVER_VERSION, and
#               :v0.2.0, the tag of the seed's chart (that release is not in the Go
#               checksum database, so it cannot be built here)
#   dra-doctor  from the Dockerfile's runtime stage (e2e/node/dfimage.py) with the binary
#               BINARY, when given                        ghcr.io/dra-doctor/dra-doctor:VERSION
#
#   e2e/node/images.sh OUT_DIR DRIVER_BIN_DIR [BINARY]
#
# Writes OUT_DIR/<name>.tar (docker-archive, for `ctr -n k8s.io images import`).  About
# two seconds; the tarballs are rebuilt every time, so they never lag behind the binary.
set -eu
out=${1:?usage: images.sh OUT_DIR DRIVER_BIN_DIR [BINARY]}
drv=${2:?usage: images.sh OUT_DIR DRIVER_BIN_DIR [BINARY]}
bin=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
DRIVER_VERSION=${DRIVER_VERSION:-v0.2.1}
bb=/bin/busybox
[ -x "$bb" ] || bb=/usr/bin/busybox
[ -x "$bb" ] || { echo "images: no busybox (scripts/deps.sh installs busybox-static)" >&2; exit 1; }

mkdir -p "$out"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

# pause
cc -static -O2 -o "$w/pause" "$here/pause.c"
python3 "$here/mkimage.py" "$out/pause.tar" --tag registry.k8s.io/pause:3.10 \
    --tag registry.k8s.io/pause:3.9 --tag registry.k8s.io/pause:3.8 --file "$w/pause:/pause:0755" --entrypoint '["/pause"]' \
    --user 65535:65535

# The busybox tree shared by the test and driver images.
set -- --file "$bb:/usr/bin/busybox:0755" --dir /tmp:1777 --dir /root:0700 \
    --text "/etc/passwd:0644:root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
" --text "/etc/group:0644:root:x:0:
nogroup:x:65534:
" --text "/usr/bin/bash:0755:#!/usr/bin/busybox sh
# Not bash: busybox's sh (ash), which runs the seed pods' bash -c scripts.
exec /usr/bin/busybox sh \"\$@\"
"
for a in $("$bb" --list); do
    case $a in busybox|bash) continue ;; esac
    set -- "$@" --symlink "/usr/bin/$a:busybox"
done

python3 "$here/mkimage.py" "$out/test.tar" --tag docker.io/library/ubuntu:22.04 \
    --tag docker.io/library/busybox:1.35 --cmd '["sh"]' "$@"
python3 "$here/mkimage.py" "$out/driver.tar" \
    --tag "registry.k8s.io/dra-example-driver/dra-example-driver:$DRIVER_VERSION" \
    --tag registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0 \
    --file "$drv/dra-example-kubeletplugin:/usr/bin/dra-example-kubeletplugin:0755" "$@"

[ -n "$bin" ] || exit 0
version=$(cat "$top/VERSION")
python3 "$here/dfimage.py" "$top/Dockerfile" "$out/dra-doctor.tar" \
    --tag "ghcr.io/dra-doctor/dra-doctor:$version" --artifact "/src/dra-doctor=$bin"
