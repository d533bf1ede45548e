package crio

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

// TestFlagsFromTestdata parses a full command line, one flag a line, as
// the adapter binary does.
func TestFlagsFromTestdata(t *testing.T) {
	raw, err := os.ReadFile("testdata/flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	flags := flag.NewFlagSet("crio", flag.ContinueOnError)
	cfg.RegisterFlags(flags)
	if err := flags.Parse(strings.Fields(string(raw))); err != nil {
		t.Fatal(err)
	}
	want := Config{Endpoint: "/run/crio/crio.sock", RuntimeName: "cri-o", Timeout: time.Minute, StatusConcurrency: 32}
	if cfg != want {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}
