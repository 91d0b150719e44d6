#!/bin/sh
# Installs the Debian packages dra-doctor needs to build and test.  Idempotent:
# does nothing when every package is present.  The Dockerfile installs the same list.
set -eu
PKGS="build-essential pkg-config libcjson-dev libyaml-dev libre2-dev libcmocka-dev
      libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libgnutls28-dev clang-14 libclang-rt-14-dev
      openssl curl procps util-linux python3"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing packages:$missing; run 'make deps' as root" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
