#!/bin/sh
# Builds the allocation oracle (e2e/peers/allocoracle: Kubernetes' own structured allocator,
# fed as kube-scheduler's DynamicResources plugin feeds it) and prints the binary's path:
# build-peer.sh.
exec sh "$(dirname "$0")/build-peer.sh" allocoracle
