package adapters_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/host"
)

var (
	dockerd = testenv.SharedDocker(testenv.DockerOptions{})
	ctrd    = testenv.SharedContainerd(testenv.ContainerdOptions{})
)

func TestMain(m *testing.M) {
	code := testenv.Run(m, dockerd, ctrd)
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// binaries are the four adapter binaries, built once per test process the
// way the Makefile builds them, before any test starts its clock.
var binaries struct {
	once sync.Once
	dir  string
	err  error
}

func binaryPath(t testing.TB, name string) string {
	t.Helper()
	binaries.once.Do(func() {
		if binaries.dir, binaries.err = os.MkdirTemp("", "adapters"); binaries.err != nil {
			return
		}
		binaries.err = testsupport.Build(context.Background(), binaries.dir, false, "./cmd/adapters/...")
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return filepath.Join(binaries.dir, name)
}

// launch starts an adapter binary as a plugin, closed with the test.
func launch(t testing.TB, name string, args ...string) *host.Client {
	t.Helper()
	client, err := host.Launch(context.Background(), host.Config{
		Path:   binaryPath(t, name),
		Args:   args,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("launch %s %v: %v", name, args, err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("close %s: %v", name, err)
		}
	})
	return client
}
