package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/sandboxipam/sandboxipam/runtime/plugin"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

// resolveBinary finds the adapter binary and checks that it can run: a
// path, or a bare name looked up in PATH.
func resolveBinary(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("launch adapter: empty path: %w", ErrBinaryNotFound)
	}
	if !strings.ContainsRune(path, os.PathSeparator) {
		// A binary found only relative to the working directory
		// (exec.ErrDot) is refused like a missing one.
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("launch adapter %s: not in PATH: %w", path, ErrBinaryNotFound)
		}
		path = found
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("launch adapter %s: %w", path, ErrBinaryNotFound)
	case err != nil:
		return "", fmt.Errorf("launch adapter %s: %w: %w", path, ErrNotExecutable, err)
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("launch adapter %s: %w: not a regular file (%s)", path, ErrNotExecutable, info.Mode().Type())
	case info.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("launch adapter %s: %w: mode %s has no execute bit", path, ErrNotExecutable, info.Mode().Perm())
	}
	if err := checkNotWritableByOthers(path); err != nil {
		return "", fmt.Errorf("launch adapter %s: %w", path, err)
	}
	return path, nil
}

// checkNotWritableByOthers refuses a binary that another user could
// replace, by writing it or its directory: the host runs it with its own
// rights (ipamd's are root's).
func checkNotWritableByOthers(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%w: %s has mode %s", ErrUnsafeBinary, p, info.Mode().Perm())
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%w: %s belongs to uid %d", ErrUnsafeBinary, p, st.Uid)
		}
	}
	return nil
}

// verifyChecksum refuses a binary whose SHA-256 is not the pinned one. The
// binary must be installed so that nobody else can replace it between
// this check and the exec.
func verifyChecksum(path, want string) error {
	if want == "" {
		return nil
	}
	want = strings.ToLower(strings.TrimSpace(want))
	if decoded, err := hex.DecodeString(want); err != nil || len(decoded) != sha256.Size {
		return fmt.Errorf("launch adapter %s: pinned sha256 %q is not 64 hex digits", path, want)
	}
	got, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("launch adapter %s: checksum: %w", path, err)
	}
	if got != want {
		return fmt.Errorf("launch adapter %s: %w: want sha256 %s, got %s", path, ErrChecksumMismatch, want, got)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// clientConfig is go-plugin's configuration for one launch; launch learns
// the process go-plugin starts.
func clientConfig(cfg Config, path string, logger hclog.Logger, launch *launchState) (*goplugin.ClientConfig, error) {
	env := append([]string{shared.LogLevelEnv + "=" + lowestEnabledLevel(cfg.Logger)}, cfg.Env...)
	socketDir, err := socketParent()
	if err != nil {
		return nil, err
	}
	sweepStaleSockets(socketDir, time.Now())
	return &goplugin.ClientConfig{
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: socketDir},
		HandshakeConfig:  shared.Handshake(),
		VersionedPlugins: shared.PluginSets(plugin.ProtocolVersion, nil),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// go-plugin's AutoMTLS: the host's certificate reaches the plugin
		// as PLUGIN_CLIENT_CERT in the environment handed to RunnerFunc.
		AutoMTLS: !cfg.DisableAutoMTLS,
		// Launch's own context ends the start at cfg.StartTimeout; this is
		// only go-plugin's backstop.
		StartTimeout: cfg.StartTimeout + time.Second,
		Logger:       logger,
		SyncStdout:   logger.Named("stdout").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info}),
		SyncStderr:   logger.Named("stderr").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
		// We set the environment ourselves (see newProcess), go-plugin's
		// variables included.
		SkipHostEnv: true,
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, tmpDir string) (runner.Runner, error) {
			proc, err := newProcess(path, cfg.Args, env, spec, tmpDir)
			if err != nil {
				return nil, err
			}
			launch.setProcess(proc)
			return proc, nil
		},
	}, nil
}

// startError names what went wrong when go-plugin could not start the
// plugin. go-plugin reports these cases as text only; its version is
// pinned in go.mod and the tests cover each case.
func startError(path string, proc *process, err error) error {
	msg := err.Error()
	var tail string
	if proc != nil {
		if t := proc.tail.String(); t != "" {
			tail = "; stderr: " + t
		}
	}
	switch {
	case errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("launch adapter %s: %w: %w", path, ErrNotExecutable, err)
	case strings.Contains(msg, "incompatible API version"),
		strings.Contains(msg, "incompatible core API version"),
		strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("launch adapter %s: %w (host speaks %d): %s", path, ErrIncompatibleVersion, plugin.ProtocolVersion, firstLine(msg))
	case strings.Contains(msg, "Unrecognized remote plugin message") && handshakeLine(msg) == "":
		return fmt.Errorf("launch adapter %s: %w: exited before the handshake%s", path, ErrNotPlugin, tail)
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("launch adapter %s: %w: unexpected handshake line %q%s", path, ErrNotPlugin, handshakeLine(msg), tail)
	case strings.Contains(msg, "plugin exited before we could connect"):
		return fmt.Errorf("launch adapter %s: %w: exited before the handshake%s", path, ErrNotPlugin, tail)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("launch adapter %s: %w: no handshake within the start timeout: %w%s", path, ErrNotPlugin, context.DeadlineExceeded, tail)
	}
	return fmt.Errorf("launch adapter %s: %w", path, err)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func handshakeLine(msg string) string {
	line := firstLine(msg)
	_, after, _ := strings.Cut(line, "Unrecognized remote plugin message: ")
	return after
}
