package testenv

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// CRIDaemon is what the private CRI runtimes here (Containerd, CRIO,
// CRIDockerd) have in common: where one lives, how a CRI client reaches
// it, its CNI directories and network namespace, and its process. Each
// embeds it, so these read as the runtime's own fields, and shares its
// StopDaemon and StartDaemon.
type CRIDaemon struct {
	Dir          string
	Address      string // the daemon's socket path
	Endpoint     string // "unix://" + Address, for CRI clients
	PauseImage   string // the sandbox (pause) image its pods run
	CgroupParent string // give pods this cgroup parent, so Stop finds them
	CNIConfDir   string
	CNIBinDir    string
	NetNSPath    string // the daemon's network namespace
	PID          int    // the daemon's own

	name   string // in logs and errors: "containerd", "cri-o", "cri-dockerd"
	daemon *daemon
	record instanceRecord
	logger *slog.Logger
}

// newCRIDaemon lays out a runtime named name under rec.Dir, listening on
// socket there, with the project's pause image and rec's cgroup parent.
func newCRIDaemon(name string, rec instanceRecord, socket string, logger *slog.Logger) CRIDaemon {
	d := CRIDaemon{
		Dir:          rec.Dir,
		Address:      filepath.Join(rec.Dir, socket),
		PauseImage:   fixture.DefaultPauseImage,
		CgroupParent: rec.CgroupParent,
		CNIConfDir:   filepath.Join(rec.Dir, "cni", "conf"),
		CNIBinDir:    filepath.Join(rec.Dir, "cni", "bin"),
		NetNSPath:    filepath.Join(rec.Dir, "netns"),
		name:         name,
		record:       rec,
		logger:       logger,
	}
	d.Endpoint = "unix://" + d.Address
	return d
}

// prepareNetwork writes the record, creates the daemon's network
// namespace and writes its CNI files (conf nil: the default conflist).
func (d *CRIDaemon) prepareNetwork(ctx context.Context, conf []byte, binDirs []string) error {
	if err := writeRecord(d.record); err != nil {
		return err
	}
	if err := createNetNS(ctx, d.NetNSPath); err != nil {
		return err
	}
	return writeCNIFiles(d.Dir, d.CNIConfDir, d.CNIBinDir, conf, binDirs)
}

// run starts argv as the daemon, logging to logName under Dir, and
// returns when it began. argv must exec the daemon itself (nsenter,
// setpriv), so that PID is the daemon's own.
func (d *CRIDaemon) run(logName string, argv ...string) (time.Time, error) {
	began := time.Now()
	daemon, err := startDaemon(d.name, filepath.Join(d.Dir, logName), d.logger, argv...)
	if err != nil {
		return began, err
	}
	d.daemon, d.PID = daemon, daemon.pid()
	return began, nil
}

// waitUsable waits for CRI to answer, puts the pause image in with load,
// then waits until CRI sees the image and reports the runtime ready, and
// the network too when needNetwork.
func (d *CRIDaemon) waitUsable(ctx context.Context, began time.Time, needNetwork bool, load func(context.Context) error) error {
	in := usableCRI{daemon: d.daemon, address: d.Address, endpoint: d.Endpoint, image: d.PauseImage, needNetwork: needNetwork, log: d.logger}
	return in.wait(ctx, began, load)
}

// stop is every CRI runtime's Stop: removePods (nil: every sandbox
// through CRI, so the CNI DEL runs) while the daemon runs, then the
// daemon and whatever the record names.
func (d *CRIDaemon) stop(ctx context.Context, removePods func(context.Context) error) error {
	if removePods == nil {
		removePods = func(ctx context.Context) error { return removeAllSandboxes(ctx, d.daemon, d.Endpoint) }
	}
	return stopInstance(ctx, instance{name: d.name, dir: d.Dir, daemon: d.daemon, record: d.record, logger: d.logger}, removePods)
}

// StopDaemon stops the daemon itself and nothing else: shims or conmon
// and the pods keep running and CRI state stays under Dir, so StartDaemon
// brings back the same sandboxes under the same IDs (the conformance
// suite's runtime-restart check). Not safe to call concurrently with
// other methods.
func (d *CRIDaemon) StopDaemon(ctx context.Context) error {
	return stopDaemonOnly(ctx, d.name, d.Dir, d.daemon)
}

// StartDaemon starts the daemon again after StopDaemon, with the same
// command line, and waits until its socket accepts connections.
func (d *CRIDaemon) StartDaemon(ctx context.Context) error {
	next, err := restartDaemon(d.daemon)
	if err != nil {
		return err
	}
	d.daemon, d.PID = next, next.pid()
	return next.waitReady(ctx, func(ctx context.Context) error { return dialUnix(ctx, d.Address) })
}
