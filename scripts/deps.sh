#!/bin/sh
# Installs the Debian packages dra-doctor needs to build and test.  Idempotent:
# does nothing when every package is present.  The Dockerfile's build stage installs the
# same PKGS (it sets DD_DEPS_BUILD_ONLY=1: not NODE_PKGS, which only the real e2e node and
# the demo need: runc, the CNI plugins, iptables for the pods' NAT, busybox for the
# node's images, and a static libc for its pause image; nor TEST_PKGS, what the tests of
# the ways users install it run: git and pre-commit for the pre-commit hook, zsh for its
# completion).
set -eu
PKGS="build-essential pkg-config libcjson-dev libyaml-dev libre2-dev libcmocka-dev
      libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libgnutls28-dev clang-14 libclang-rt-14-dev
      openssl curl procps util-linux python3"
NODE_PKGS="runc containernetworking-plugins iptables busybox-static iproute2 libc6-dev"
TEST_PKGS="git pre-commit zsh"
[ -n "${DD_DEPS_BUILD_ONLY:-}" ] || PKGS="$PKGS $NODE_PKGS $TEST_PKGS"
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
