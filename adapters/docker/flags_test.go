package docker

import (
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
)

// TestFlagsFromTestdata parses a full command line, one flag a line, as
// the adapter binary does.
func TestFlagsFromTestdata(t *testing.T) {
	cfg := DefaultConfig()
	adaptertest.ParseFlagsFile(t, "docker", cfg.RegisterFlags)
	want := Config{Endpoint: "unix:///run/docker.sock", Timeout: 3 * time.Second, InspectConcurrency: 16}
	if cfg != want {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}
