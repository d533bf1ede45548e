package dockershim

import (
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/adapters/internal/adaptertest"
)

// TestFlagsFromTestdata parses a full command line, one flag a line, as
// the adapter binary does.
func TestFlagsFromTestdata(t *testing.T) {
	cfg := DefaultConfig()
	adaptertest.ParseFlagsFile(t, "dockershim", cfg.RegisterFlags)
	want := Config{Endpoint: "unix:///var/run/cri-dockerd.sock", RuntimeName: "docker", Timeout: 2500 * time.Millisecond, StatusConcurrency: 4}
	if cfg != want {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}
