package testenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// ErrNoModuleRoot: BuildPause ran outside this module's source tree.
var ErrNoModuleRoot = testsupport.ErrNoModuleRoot

// pauseBuild caches the one pause build of this process: compiling takes
// seconds, copying the result a millisecond.
var pauseBuild struct {
	mu   sync.Mutex
	path string
}

// BuildPause builds cmd/pause static (CGO_ENABLED=0) and returns the path
// of the binary, dir/pause. The first call compiles; later calls copy that
// binary into their dir.
func BuildPause(ctx context.Context, dir string) (string, error) {
	pauseBuild.mu.Lock()
	defer pauseBuild.mu.Unlock()
	dest := filepath.Join(dir, "pause")
	if pauseBuild.path == dest {
		if _, err := os.Stat(dest); err == nil {
			return dest, nil
		}
	} else if pauseBuild.path != "" {
		if err := copyFile(pauseBuild.path, dest, 0o755); err == nil {
			return dest, nil
		}
		// The first dir is gone: build again.
	}
	if err := compilePause(ctx, dest); err != nil {
		return "", err
	}
	pauseBuild.path = dest
	return dest, nil
}

func compilePause(ctx context.Context, dest string) error {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		return fmt.Errorf("build pause: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", dest, "./cmd/pause")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build pause: go build: %w: %s", err, out)
	}
	return nil
}

// putPauseImage builds the pause image archive under dir (BuildPauseImage)
// and hands it to put, which imports or loads it into a runtime's store,
// and logs how long that took.
func putPauseImage(ctx context.Context, dir, ref string, logger *slog.Logger, put func(ctx context.Context, tarPath string) error) error {
	began := time.Now()
	tarPath, err := BuildPauseImage(ctx, dir, ref)
	if err != nil {
		return err
	}
	if err := put(ctx, tarPath); err != nil {
		return fmt.Errorf("load pause image: %w", err)
	}
	logger.Info("pause image loaded", "image", ref, "took", time.Since(began))
	return nil
}

// BuildPauseImage builds the pause binary into dir and wraps it into
// dir/pause-image.tar, a docker-save archive tagged ref, with the same
// library and reproducible layout as the project's own image
// (internal/image): the same binary always gives the same image ID.
func BuildPauseImage(ctx context.Context, dir, ref string) (tarPath string, err error) {
	binary, err := BuildPause(ctx, dir)
	if err != nil {
		return "", err
	}
	content, err := os.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	img, err := image.Build(pauseSpec(content))
	if err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	tarPath = filepath.Join(dir, "pause-image.tar")
	if err := image.WriteFile(tarPath, img, ref, image.WriteDockerArchive); err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	return tarPath, nil
}

// pauseSpec lays out the pause image: the binary, and the files and
// directories a runtime bind-mounts over.
func pauseSpec(binary []byte) image.Spec {
	return image.Spec{
		Entries: []image.Entry{
			{Path: "/pause", Mode: 0o755, Content: binary},
			{Path: "/etc/hostname", Mode: 0o644},
			{Path: "/etc/hosts", Mode: 0o644},
			{Path: "/etc/resolv.conf", Mode: 0o644},
			{Path: "/dev", Dir: true, Mode: 0o755},
			{Path: "/proc", Dir: true, Mode: 0o555},
			{Path: "/sys", Dir: true, Mode: 0o555},
			{Path: "/tmp", Dir: true, Mode: 0o1777},
		},
		Entrypoint: []string{"/pause"},
		Env:        []string{"PATH=/"},
	}
}

func copyFile(src, dest string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	return nil
}
