package testadapter

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// PackagePath is the main package Build compiles, relative to the module
// root.
const PackagePath = "./internal/testadapter/cmd/testadapter"

// errNoGoTool: the go command is not installed, so no binary can be built.
var errNoGoTool = errors.New("go command not found")

// built is the binary of this test process: built once, whichever test
// asks first.
var built struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the testadapter binary once per test binary and returns
// its path. It skips the test when no go command is installed, except
// with CI=true, where it fails instead.
//
// The binary lands in a directory under os.TempDir() named after the
// module root, replaced atomically by each build, so that repeated test
// runs reuse one file instead of leaving one behind each. Tests that must
// change or pin the binary copy it first.
func Build(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.path, built.err = build() })
	if errors.Is(built.err, errNoGoTool) && os.Getenv("CI") != "true" {
		t.Skipf("testadapter: cannot build the adapter binary: %v", built.err)
	}
	if built.err != nil {
		t.Fatalf("testadapter: %v", built.err)
	}
	return built.path
}

func build() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNoGoTool, err)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "sandboxipam-testadapter-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	final := filepath.Join(dir, Name)
	tmp := filepath.Join(dir, fmt.Sprintf(".%s-%d.tmp", Name, os.Getpid()))
	cmd := exec.Command(goTool, "build", "-tags", "grpcnotrace", "-buildvcs=false", "-o", tmp, PackagePath)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("go build %s: %w\n%s", PackagePath, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	return final, nil
}

// moduleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
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
			return "", errors.New("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}
