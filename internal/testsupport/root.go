package testsupport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ErrNoModuleRoot: the working directory is not inside this module.
var ErrNoModuleRoot = errors.New("go.mod not found above the working directory")

// ModuleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoModuleRoot
		}
		dir = parent
	}
}

// Root is ModuleRoot for a test: it fails t when there is no module root.
func Root(t testing.TB) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
