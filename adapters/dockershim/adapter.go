// Package dockershim is the runtime adapter for Docker behind a CRI shim:
// kubelet's built-in dockershim (Kubernetes up to 1.23) and its successor
// cri-dockerd. Both answer CRI with runtime name "docker", so the adapter
// is a preset of the shared CRI client (cri.Preset): their runtime name and
// their sockets, dockershim's when it exists, cri-dockerd's otherwise. All
// of its behaviour, cri-dockerd's quirks included, lives in package cri.
//
// The sandbox IDs are the pause containers' Docker IDs, which is what the
// CNI plugin receives; the raw Docker adapter (package docker) finds the
// same IDs through the Engine API when no shim runs.
package dockershim

import (
	"log/slog"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
)

// AdapterName is the name the adapter reports in Info.
const AdapterName = "dockershim"

// New validates cfg and returns the adapter. It connects lazily.
func New(cfg Config, log *slog.Logger) (*cri.Adapter, error) {
	return preset.New(cri.PresetConfig(cfg), log)
}

// newWithDefaults lets tests replace the default sockets, which live in
// /var/run, with sockets of their own.
func newWithDefaults(cfg Config, defaults []string, log *slog.Logger) (*cri.Adapter, error) {
	p := preset
	p.Endpoints = defaults
	return p.New(cri.PresetConfig(cfg), log)
}
