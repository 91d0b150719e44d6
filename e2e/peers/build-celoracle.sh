#!/bin/sh
# Builds the CEL oracle (e2e/peers/celoracle: Kubernetes' own DRA CEL code) and prints the
# binary's path: build-peer.sh.
exec sh "$(dirname "$0")/build-peer.sh" celoracle
