package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
)

// CRIDockerdOptions configures StartCRIDockerd.
type CRIDockerdOptions struct {
	// Dir holds all of cri-dockerd's state; required, absolute, at most 64
	// bytes. It is wiped first if an earlier instance used it.
	Dir string
	// Docker is the private dockerd cri-dockerd talks to. Required.
	Docker *Docker
	// CNIConfList is the CNI network config (a conflist JSON). Default:
	// Debian's bridge plugin (bridge "sbxipam0", in the instance's own
	// network namespace) with host-local IPAM on 198.19.0.0/24, leases
	// under Dir.
	CNIConfList []byte
	// CNIBinDirs are searched for CNI plugins before /usr/lib/cni.
	CNIBinDirs []string
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// CRIDockerd is a running private cri-dockerd (built by make test-tools
// from the pinned module in tools/cri-dockerd) serving CRI for a private
// dockerd, with CNI networking: it runs inside a network namespace of its
// own (NetNSPath), where the CNI plugins it runs put the bridge's host
// side, and caches CNI results under Dir.
//
// cri-dockerd sets oom_score_adj -999 on every process named dockerd or
// containerd it finds on the host, every five minutes (and moves them into
// its cgroup when --runtime-cgroups is given, which this never passes). It
// runs without CAP_SYS_RESOURCE (setpriv), so the kernel refuses every
// such write: no process but its own is touched.
type CRIDockerd struct {
	// PauseImage and CgroupParent are the Docker's: its pause image
	// (--pod-infra-container-image) and its pods' cgroup parent.
	CRIDaemon
}

// StartCRIDockerd starts cri-dockerd for opts.Docker in a network
// namespace of its own and waits until CRI reports the runtime and network
// ready. Without the built binary it returns an error wrapping
// ErrUnavailable.
func StartCRIDockerd(ctx context.Context, opts CRIDockerdOptions) (*CRIDockerd, error) {
	logger := loggerOrDiscard(opts.Logger)
	if opts.Docker == nil {
		return nil, fmt.Errorf("start cri-dockerd: CRIDockerdOptions.Docker is required")
	}
	binary, err := builtTool("cri-dockerd")
	if err != nil {
		return nil, fmt.Errorf("start cri-dockerd: %w", err)
	}
	sweepStale(ctx, logger)
	c := &CRIDockerd{newCRIDaemon("cri-dockerd", newRecord("cri-dockerd", opts.Dir), "cri-dockerd.sock", logger)}
	c.PauseImage, c.CgroupParent = opts.Docker.PauseImage, opts.Docker.CgroupParent
	start := func(ctx context.Context) error { return c.start(ctx, opts, binary) }
	if err := launch(ctx, "cri-dockerd", c.record, start, c.Stop); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *CRIDockerd) start(ctx context.Context, opts CRIDockerdOptions, binary string) error {
	if err := c.prepareNetwork(ctx, opts.CNIConfList, opts.CNIBinDirs); err != nil {
		return err
	}
	began, err := c.run("cri-dockerd.log", c.argv(binary, opts.Docker.Host)...)
	if err != nil {
		return err
	}
	// The pause image is the Docker's, already loaded.
	return c.waitUsable(ctx, began, true, func(context.Context) error { return nil })
}

func (c *CRIDockerd) argv(binary, dockerHost string) []string {
	return []string{
		"setpriv", "--bounding-set=-sys_resource", "--inh-caps=-sys_resource",
		"nsenter", "--net=" + c.NetNSPath,
		binary,
		"--container-runtime-endpoint", c.Endpoint,
		"--docker-endpoint", dockerHost,
		"--cri-dockerd-root-directory", filepath.Join(c.Dir, "root"),
		"--pod-infra-container-image", c.PauseImage,
		"--network-plugin", "cni",
		"--cni-bin-dir", c.CNIBinDir,
		"--cni-conf-dir", c.CNIConfDir,
		"--cni-cache-dir", filepath.Join(c.Dir, "cni", "cache"),
		"--streaming-bind-addr", "127.0.0.1:0",
		"--hairpin-mode", "none",
	}
}

// Stop stops and removes every pod through CRI (so the CNI DEL runs),
// stops cri-dockerd, kills whatever names its Dir, unmounts everything
// under Dir and removes Dir. The Docker's containers are the Docker's to
// remove. It is safe to call twice.
func (c *CRIDockerd) Stop(ctx context.Context) error { return c.stop(ctx, nil) }
