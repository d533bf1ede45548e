package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
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
	Dir          string
	Address      string // the CRI socket path
	Endpoint     string // "unix://" + Address, for CRI clients
	PauseImage   string // the Docker's pause image, --pod-infra-container-image
	CgroupParent string // the Docker's: give pods this cgroup parent
	CNIConfDir   string
	CNIBinDir    string
	NetNSPath    string // the daemon's network namespace
	PID          int    // cri-dockerd's

	daemon *daemon
	record instanceRecord
	logger *slog.Logger
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
	binary, err := testsupport.ToolPath("cri-dockerd")
	if err == nil {
		_, err = os.Stat(binary)
	}
	if err != nil {
		return nil, fmt.Errorf("start cri-dockerd: %w: cri-dockerd is not built (run make test-tools): %v", ErrUnavailable, err)
	}
	sweepStale(ctx, logger)
	rec := newRecord("cri-dockerd", opts.Dir)
	c := &CRIDockerd{
		Dir:          opts.Dir,
		Address:      filepath.Join(opts.Dir, "cri-dockerd.sock"),
		PauseImage:   opts.Docker.PauseImage,
		CgroupParent: opts.Docker.CgroupParent,
		CNIConfDir:   filepath.Join(opts.Dir, "cni", "conf"),
		CNIBinDir:    filepath.Join(opts.Dir, "cni", "bin"),
		NetNSPath:    filepath.Join(opts.Dir, "netns"),
		record:       rec,
		logger:       logger,
	}
	c.Endpoint = "unix://" + c.Address
	if err := prepareDir(ctx, rec); err != nil {
		return nil, fmt.Errorf("start cri-dockerd: %w", err)
	}
	if err := c.start(ctx, opts, binary); err != nil {
		_ = c.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start cri-dockerd: %w", err)
	}
	return c, nil
}

func (c *CRIDockerd) start(ctx context.Context, opts CRIDockerdOptions, binary string) error {
	if err := writeRecord(c.record); err != nil {
		return err
	}
	if err := createNetNS(ctx, c.NetNSPath); err != nil {
		return err
	}
	if err := writeCNIFiles(c.Dir, c.CNIConfDir, c.CNIBinDir, opts.CNIConfList, opts.CNIBinDirs); err != nil {
		return err
	}
	began := time.Now()
	// setpriv and nsenter exec, so the PID is cri-dockerd's own.
	daemon, err := startDaemon("cri-dockerd", filepath.Join(c.Dir, "cri-dockerd.log"), c.logger, c.argv(binary, opts.Docker.Host)...)
	if err != nil {
		return err
	}
	c.daemon, c.PID = daemon, daemon.pid()
	return c.waitUsable(ctx, began)
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

// waitUsable waits until CRI answers, sees the pause image and reports
// runtime and network ready.
func (c *CRIDockerd) waitUsable(ctx context.Context, began time.Time) error {
	if err := c.daemon.waitReady(ctx, func(ctx context.Context) error { return dialUnix(ctx, c.Address) }); err != nil {
		return err
	}
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("CRI client: %w", err)
	}
	defer conn.Close()
	runtimeService := criapi.NewRuntimeServiceClient(conn)
	imageService := criapi.NewImageServiceClient(conn)
	ready := func(ctx context.Context) error {
		return criReady(ctx, runtimeService, imageService, c.PauseImage, true)
	}
	if err := c.daemon.waitReady(ctx, ready); err != nil {
		return err
	}
	c.logger.Info("cri-dockerd ready", "after", time.Since(began), "endpoint", c.Endpoint)
	return nil
}

// Stop stops and removes every pod through CRI (so the CNI DEL runs),
// stops cri-dockerd, kills whatever names its Dir, unmounts everything
// under Dir and removes Dir. The Docker's containers are the Docker's to
// remove. It is safe to call twice.
func (c *CRIDockerd) Stop(ctx context.Context) error {
	removePods := func(ctx context.Context) error { return removeAllSandboxes(ctx, c.daemon, c.Endpoint) }
	return stopInstance(ctx, instance{name: "cri-dockerd", dir: c.Dir, daemon: c.daemon, record: c.record, logger: c.logger}, removePods)
}

// StopDaemon stops cri-dockerd and nothing else: dockerd and the pods keep
// running, so StartDaemon serves the same sandboxes under the same IDs.
// Not safe to call concurrently with other methods.
func (c *CRIDockerd) StopDaemon(ctx context.Context) error {
	return stopDaemonOnly(ctx, "cri-dockerd", c.Dir, c.daemon)
}

// StartDaemon starts cri-dockerd again after StopDaemon, with the same
// command line, and waits until its socket accepts connections.
func (c *CRIDockerd) StartDaemon(ctx context.Context) error {
	return restartInto(ctx, &c.daemon, &c.PID, c.Address)
}
