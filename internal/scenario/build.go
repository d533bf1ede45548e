package scenario

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildBinaries builds what a node runs into dir, laid out as `make build`
// lays out bin/: ipamd, ipamctl, sandboxipam (the CNI plugin) and
// adapters/<name>. moduleRoot is the repository's root.
func BuildBinaries(ctx context.Context, moduleRoot, dir string) error {
	builds := []struct {
		static bool
		args   []string
	}{
		{false, []string{"-o", dir + "/", "./cmd/ipamd", "./cmd/ipamctl"}},
		{true, []string{"-o", dir + "/", "./cmd/sandboxipam"}},
		{false, []string{"-o", filepath.Join(dir, "adapters") + "/", "./cmd/adapters/containerd", "./cmd/adapters/docker"}},
	}
	for _, b := range builds {
		// The same flags as make build, so the build cache is shared.
		args := append([]string{"build"}, b.args...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = moduleRoot
		if b.static {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	}
	return nil
}

// ModuleRoot finds the repository root by walking up from the working
// directory to go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
