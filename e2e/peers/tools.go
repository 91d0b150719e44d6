//go:build tools

// Package peers pins the peer tools that dra-doctor's benchmarks compare
// against.  Nothing here is part of dra-doctor; bench/lint-bench.sh builds
// the pinned tools into a cache directory outside the repository via
// e2e/peers/build-kubeconform.sh.
package peers

import (
	_ "github.com/yannh/kubeconform/cmd/kubeconform"
)
