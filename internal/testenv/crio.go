package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// CRIOOptions configures StartCRIO.
type CRIOOptions struct {
	// Dir holds all of the daemon's state; required, absolute, at most 64
	// bytes. It is wiped first if an earlier instance used it.
	Dir string
	// CNIConfList is the CNI network config (a conflist JSON). Default:
	// Debian's bridge plugin (bridge "sbxipam0", in the instance's own
	// network namespace) with host-local IPAM on 198.19.0.0/24, leases
	// under Dir, as a network named after the instance.
	CNIConfList []byte
	// CNIBinDirs are searched for CNI plugins before /usr/lib/cni.
	CNIBinDirs []string
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// CRIO is a running private CRI-O (built by make test-tools from the
// pinned module in tools/crio), with the pause image in its storage and a
// CNI config of its own. Like Containerd it runs inside a network
// namespace of its own (NetNSPath), where the CNI plugins it runs put the
// bridge's host side.
type CRIO struct {
	CRIDaemon // PauseImage is also pause_image
}

// crioTools are the binaries make test-tools builds (tools/crio/build.sh).
var crioTools = []string{"crio", "pinns"}

// StartCRIO creates a network namespace, writes a config and CNI setup
// under opts.Dir, starts CRI-O inside that namespace, loads the pause image
// into its storage with skopeo, and waits until CRI reports the runtime
// and network ready. Without the built binaries, conmon or skopeo it
// returns an error wrapping ErrUnavailable.
func StartCRIO(ctx context.Context, opts CRIOOptions) (*CRIO, error) {
	logger := loggerOrDiscard(opts.Logger)
	bins, err := findCRIOBinaries()
	if err != nil {
		return nil, fmt.Errorf("start cri-o: %w", err)
	}
	sweepStale(ctx, logger)
	c := newCRIO(opts.Dir, logger)
	start := func(ctx context.Context) error { return c.start(ctx, opts, bins) }
	if err := launch(ctx, "cri-o", c.record, start, c.Stop); err != nil {
		return nil, err
	}
	return c, nil
}

// findCRIOBinaries locates crio and pinns in bin/tools, and conmon, runc
// and skopeo on PATH (Debian's; .ci/run installs them).
func findCRIOBinaries() (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range crioTools {
		p, err := builtTool(name)
		if err != nil {
			return nil, err
		}
		bins[name] = p
	}
	for _, name := range []string{"conmon", "runc", "skopeo"} {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s not installed (Debian package %s): %v", ErrUnavailable, name, name, err)
		}
		bins[name] = p
	}
	return bins, nil
}

// builtTool is the path of a tool make test-tools built, or an error
// wrapping ErrUnavailable when it is not there.
func builtTool(name string) (string, error) {
	p, err := testsupport.ToolPath(name)
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s is not built (run make test-tools): %v", ErrUnavailable, name, err)
	}
	return p, nil
}

// crioHostDirs are created by CRI-O at start whatever its config says;
// teardown removes those that did not exist before, when empty.
var crioHostDirs = []string{"/etc/crio", "/etc/crio/policies"}

// absentDirs returns the dirs that do not exist now.
func absentDirs(dirs []string) []string {
	var absent []string
	for _, dir := range dirs {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			absent = append(absent, dir)
		}
	}
	return absent
}

func newCRIO(dir string, logger *slog.Logger) *CRIO {
	c := &CRIO{newCRIDaemon("cri-o", newRecord("crio", dir), "crio.sock", logger)}
	c.record.RuncRoot, c.record.ShimNamespace = filepath.Dir(c.runtimeRoot()), crioRuncNamespace
	return c
}

func (c *CRIO) start(ctx context.Context, opts CRIOOptions, bins map[string]string) error {
	conf := opts.CNIConfList
	if conf == nil {
		// A network name of the instance's own: teardown removes the
		// results libcni cached under it in /var/lib/cni/results.
		c.record.CNINetwork = "sbxipam-crio-" + dirHash(c.Dir)
		var err error
		if conf, err = namedCNIConfList(filepath.Join(c.Dir, "cni", "ipam"), c.record.CNINetwork); err != nil {
			return err
		}
	}
	c.record.HostDirs = absentDirs(crioHostDirs)
	if err := c.prepareNetwork(ctx, conf, opts.CNIBinDirs); err != nil {
		return err
	}
	if err := c.writeConfig(bins); err != nil {
		return err
	}
	began, err := c.run("crio.log", c.argv(bins["crio"])...)
	if err != nil {
		return err
	}
	return c.waitUsable(ctx, began, true, func(ctx context.Context) error { return c.loadPauseImage(ctx, bins["skopeo"]) })
}

func (c *CRIO) argv(crio string) []string {
	return []string{"nsenter", "--net=" + c.NetNSPath, crio,
		"--config", filepath.Join(c.Dir, "crio.conf"), "--config-dir", filepath.Join(c.Dir, "crio.conf.d")}
}

func (c *CRIO) writeConfig(bins map[string]string) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "crio.conf.d"), 0o755); err != nil {
		return fmt.Errorf("config dir: %w", err)
	}
	if err := c.writeRuncWrapper(bins["runc"]); err != nil {
		return err
	}
	config := crioConfig(c, bins["pinns"], bins["conmon"])
	if err := os.WriteFile(filepath.Join(c.Dir, "crio.conf"), []byte(config), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// loadPauseImage copies the pause image archive into CRI-O's storage. No
// signature policy is consulted: the image is local and unsigned.
func (c *CRIO) loadPauseImage(ctx context.Context, skopeo string) error {
	return putPauseImage(ctx, c.Dir, c.PauseImage, c.logger, func(ctx context.Context, tarPath string) error {
		return c.copyImage(ctx, skopeo, tarPath, c.PauseImage)
	})
}

// LoadImage copies the image in a docker-save archive into CRI-O's
// storage as ref, as an operator loads an image on a node without a
// registry (podman load shares the same storage); CRI-O sees it at once.
func (c *CRIO) LoadImage(ctx context.Context, archive, ref string) error {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		return fmt.Errorf("load image %s: %w: skopeo not installed: %v", ref, ErrUnavailable, err)
	}
	if err := c.copyImage(ctx, skopeo, archive, ref); err != nil {
		return fmt.Errorf("load image %s: %w", ref, err)
	}
	return nil
}

// copyImage copies a docker-save archive into CRI-O's storage as ref.
func (c *CRIO) copyImage(ctx context.Context, skopeo, archive, ref string) error {
	store := fmt.Sprintf("containers-storage:[overlay@%s+%s]%s",
		filepath.Join(c.Dir, "root"), filepath.Join(c.Dir, "runroot"), ref)
	return runCommand(ctx, skopeo, "--insecure-policy", "copy", "docker-archive:"+archive, store)
}

// Stop stops and removes every pod through CRI, stops CRI-O, then kills
// whatever is left in its cgroup parent or names its Dir (conmon, pause
// processes), removes libcni's cached results of its pods, unmounts
// everything under Dir and removes Dir. It is safe to call twice.
func (c *CRIO) Stop(ctx context.Context) error { return c.stop(ctx, nil) }
