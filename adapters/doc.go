// Package adapters holds one runtime adapter per container runtime, each
// built into its own plugin binary by cmd/adapters/<name>:
//
//   - docker: dockershim-style pods read through the Docker Engine API
//   - dockershim: kubelet's dockershim or cri-dockerd, over CRI
//   - crio: CRI-O, over CRI
//   - containerd: containerd's own API, or its CRI plugin with --cri
//
// The CRI client they share is package cri. This package itself holds
// only the tests and benchmarks that run every adapter binary as a plugin
// against real runtimes.
package adapters
