package testenv

import (
	"context"
	"fmt"
	"time"
)

// StopDaemon stops dockerd, which stops its running containers (no
// live-restore) but keeps them: StartDaemon brings back the same
// containers, stopped, under the same IDs. Its containerd keeps running.
// Not safe to call concurrently with other methods.
func (d *Docker) StopDaemon(ctx context.Context) error {
	return stopDaemonOnly(ctx, "dockerd", d.Dir, d.daemon)
}

// StartDaemon starts dockerd again after StopDaemon, with the same command
// line, and waits until the Engine API answers.
func (d *Docker) StartDaemon(ctx context.Context) error {
	began := time.Now()
	daemon, err := restartDaemon(d.daemon)
	if err != nil {
		return err
	}
	return d.await(ctx, daemon, began, "dockerd answers again")
}

// restartDaemon starts a stopped daemon's command line again, appending to
// the same log.
func restartDaemon(old *daemon) (*daemon, error) {
	select {
	case <-old.exited:
	default:
		return nil, fmt.Errorf("restart %s: it is still running (pid %d)", old.name, old.pid())
	}
	return startDaemon(old.name, old.logPath, old.logger, old.cmd.Args...)
}

// stopDaemonOnly stops d and nothing else (every runtime's StopDaemon).
func stopDaemonOnly(ctx context.Context, name, dir string, d *daemon) error {
	if err := d.stop(ctx); err != nil {
		return fmt.Errorf("stop %s in %s: %w", name, dir, err)
	}
	return nil
}
