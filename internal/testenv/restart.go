package testenv

import (
	"context"
	"fmt"
	"time"
)

// StopDaemon stops containerd itself and nothing else: shims and their
// pods keep running and CRI state stays under Dir, so StartDaemon brings
// back the same sandboxes under the same IDs (the conformance suite's
// runtime-restart check). Not safe to call concurrently with other methods.
func (c *Containerd) StopDaemon(ctx context.Context) error {
	if err := c.daemon.stop(ctx); err != nil {
		return fmt.Errorf("stop containerd in %s: %w", c.Dir, err)
	}
	return nil
}

// StartDaemon starts containerd again after StopDaemon, with the same
// command line, and waits until its socket accepts connections.
func (c *Containerd) StartDaemon(ctx context.Context) error {
	d, err := restartDaemon(c.daemon)
	if err != nil {
		return err
	}
	c.daemon, c.PID = d, d.pid()
	return d.waitReady(ctx, func(ctx context.Context) error { return dialUnix(ctx, c.Address) })
}

// StopDaemon stops dockerd, which stops its running containers (no
// live-restore) but keeps them: StartDaemon brings back the same
// containers, stopped, under the same IDs. Its containerd keeps running.
// Not safe to call concurrently with other methods.
func (d *Docker) StopDaemon(ctx context.Context) error {
	if err := d.daemon.stop(ctx); err != nil {
		return fmt.Errorf("stop dockerd in %s: %w", d.Dir, err)
	}
	return nil
}

// StartDaemon starts dockerd again after StopDaemon, with the same command
// line, and waits until the Engine API answers.
func (d *Docker) StartDaemon(ctx context.Context) error {
	began := time.Now()
	daemon, err := restartDaemon(d.daemon)
	if err != nil {
		return err
	}
	d.daemon, d.PID = daemon, daemon.pid()
	if err := daemon.waitReady(ctx, d.ping); err != nil {
		return err
	}
	d.logger.Info("dockerd answers again", "after", time.Since(began), "host", d.Host)
	return nil
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
