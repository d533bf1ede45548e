package crio

import (
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
)

// TestFlagsFromTestdata parses a full command line, one flag a line, as
// the adapter binary does.
func TestFlagsFromTestdata(t *testing.T) {
	cfg := DefaultConfig()
	adaptertest.ParseFlagsFile(t, "crio", cfg.RegisterFlags)
	want := Config{Endpoint: "/run/crio/crio.sock", RuntimeName: "cri-o", Timeout: time.Minute, StatusConcurrency: 32}
	if cfg != want {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}
