//go:build tools

// Package tools pins crictl, the real CRI client the containerd adapter's
// listing is compared against. It is a module of its own so that the main
// module never depends on cri-tools; make test-tools builds it once into
// bin/tools/crictl, where the tests find it (they never go install).
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
