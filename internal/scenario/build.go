package scenario

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
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
		{false, []string{"-o", filepath.Join(dir, "adapters") + "/", "./cmd/adapters/containerd", "./cmd/adapters/docker", "./cmd/adapters/crio", "./cmd/adapters/dockershim"}},
	}
	for _, b := range builds {
		// The same flags as make build, so the build cache is shared.
		args := append(append([]string{"build"}, testsupport.BuildFlags()...), b.args...)
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
func ModuleRoot() (string, error) { return testsupport.ModuleRoot() }
