// Package e2e runs the seed bug's scenario end to end with real parts: a
// private containerd calling the sandboxipam CNI plugin, ipamd as a real
// process with a real adapter plugin, and the same scenario on Docker
// Engine with pods laid out as dockershim does.
package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/scenario"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

var binaries struct {
	once sync.Once
	dir  string
	err  error
}

// requireNode skips (or fails under CI=true) where real runtimes cannot
// run, and returns the directory of freshly built binaries.
func requireNode(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	testenv.Require(t)
	binaries.once.Do(func() {
		// Kept across runs, so a warm run links nothing (testsupport.LinkDir).
		binaries.dir, binaries.err = testsupport.LinkDir("e2e-node")
		if binaries.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			binaries.err = scenario.BuildBinaries(ctx, binaries.dir)
		}
	})
	if binaries.err != nil {
		t.Fatalf("build binaries: %v", binaries.err)
	}
	return binaries.dir
}

// shortDir is a fresh directory short enough for unix socket paths.
func shortDir(t *testing.T, prefix string) string {
	t.Helper()
	return testsupport.ShortDir(t, prefix)
}

// waitFor polls cond until it holds, as testsupport.Wait does: its
// deadline (testsupport.WaitDeadline) only stops a broken test; timeout
// says how long the wait normally takes, for the reader.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testsupport.Wait(t, fmt.Sprintf("%s (normally within %s)", what, timeout), cond)
}

func describe(v any) string { return fmt.Sprintf("%+v", v) }
