package release_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/release"
)

// TestOnceFillsOnceAcrossCallers: callers at the same time wait for one
// fill; a failed fill leaves nothing, and the next caller fills again.
func TestOnceFillsOnceAcrossCallers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	if err := release.Once(dir, func(string) error { return errors.New("broken build") }); err == nil {
		t.Fatal("a failed fill reported success")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed fill left %s: %v", dir, err)
	}
	var fills atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			err := release.Once(dir, func(tmp string) error {
				fills.Add(1)
				return os.WriteFile(filepath.Join(tmp, "ipamd"), []byte("built"), 0o755)
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := fills.Load(); n != 1 {
		t.Errorf("%d fills for 4 callers, want 1", n)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "ipamd")); err != nil || string(data) != "built" {
		t.Errorf("%s/ipamd: %q, %v", dir, data, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".bin.tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left: %q", leftovers)
	}
}

// TestCheckoutWithoutHistory: a directory that is no git repository holds
// no release: ErrHistoryAbsent, which the tests skip on (fail under CI).
func TestCheckoutWithoutHistory(t *testing.T) {
	err := release.Previous.Checkout(t.Context(), t.TempDir(), t.TempDir())
	if !errors.Is(err, release.ErrHistoryAbsent) {
		t.Fatalf("Checkout from a directory without .git: %v, want ErrHistoryAbsent", err)
	}
}
