// Package crio is the runtime adapter for CRI-O. CRI-O speaks only CRI, so
// the adapter is a preset of the shared CRI client (cri.Preset): CRI-O's
// socket and the runtime name it reports, "cri-o". All of its behaviour
// lives in package cri.
package crio

import (
	"log/slog"

	"github.com/sandboxipam/sandboxipam/adapters/cri"
)

// AdapterName is the name the adapter reports in Info.
const AdapterName = "crio"

// New validates cfg and returns the adapter. It connects lazily.
func New(cfg Config, log *slog.Logger) (*cri.Adapter, error) {
	return preset.New(cri.PresetConfig(cfg), log)
}
