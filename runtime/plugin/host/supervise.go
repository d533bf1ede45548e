package host

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// supervise keeps the plugin running until ctx ends: it watches the
// current client and relaunches after backoff once it is down.
func (s *Supervisor) supervise(ctx context.Context, client *Client) {
	defer close(s.done)
	backoff := s.cfg.MinBackoff
	for {
		if client == nil {
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, s.cfg.MaxBackoff)
			client, _ = s.launch(ctx)
			continue
		}
		down := s.watch(ctx, client, &backoff)
		if down == nil {
			return // closing: Close closes the client
		}
		s.markDown(client, down)
		// A plugin that is down gets no graceful shutdown: it could hang it.
		_ = client.proc.Kill(context.Background())
		_ = client.Close()
		client = nil
	}
}

// watch returns why client went down, or nil when ctx ended first. A
// passed periodic health check resets the backoff.
func (s *Supervisor) watch(ctx context.Context, client *Client, backoff *time.Duration) error {
	ticker := time.NewTicker(s.cfg.HealthInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-client.exited():
			return fmt.Errorf("plugin process %d ended (%s)", client.PID(), client.proc.exitStatus())
		case <-s.crashed:
			if err := s.check(ctx, client); err != nil {
				return err
			}
		case <-ticker.C:
			if err := s.check(ctx, client); err != nil {
				return err
			}
			*backoff = s.cfg.MinBackoff
		}
	}
}

// check pings the plugin; an error means it is down. A ping cut short by
// Close is no verdict.
func (s *Supervisor) check(ctx context.Context, client *Client) error {
	pingCtx, cancel := context.WithTimeout(ctx, s.cfg.HealthInterval)
	defer cancel()
	err := client.Ping(pingCtx)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("health check: %w", err)
}

// launch starts a plugin and publishes it, or records why it failed.
func (s *Supervisor) launch(ctx context.Context) (*Client, error) {
	s.setHealth(HealthStarting, 0, "")
	client, err := Launch(ctx, s.cfg.Plugin)
	if err != nil {
		s.logger.Error("adapter launch failed", "error", err)
		s.setHealth(HealthUnhealthy, 0, err.Error())
		return nil, err
	}
	infoCtx, cancel := context.WithTimeout(ctx, s.cfg.Plugin.StartTimeout)
	info, infoErr := client.Info(infoCtx)
	cancel()

	if !s.publish(client, info, infoErr) {
		// Close ran during the launch and found no client to close.
		_ = client.Close()
		return nil, fmt.Errorf("launch adapter %s: supervisor closed: %w", s.cfg.Plugin.Path, runtime.ErrUnavailable)
	}
	s.logger.Info("adapter plugin running", "pid", client.PID(), "restarts", s.Health().Restarts)
	return client, nil
}

// publish makes client the one calls go to; false if the supervisor was
// closed meanwhile.
func (s *Supervisor) publish(client *Client, info runtime.Info, infoErr error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	if s.launched {
		s.health.Restarts++
	}
	s.launched = true
	if infoErr == nil {
		s.health.Info = info
	}
	s.client = client
	s.setHealthLocked(HealthHealthy, client.PID(), "")
	return true
}

func (s *Supervisor) markDown(client *Client, reason error) {
	s.logger.Error("adapter plugin down; relaunching", "pid", client.PID(), "error", reason)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == client {
		s.client = nil
	}
	s.setHealthLocked(HealthUnhealthy, 0, reason.Error())
}

func (s *Supervisor) setInfo(info runtime.Info) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health.Info = info
}

func (s *Supervisor) setHealth(state HealthState, pid int, lastError string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setHealthLocked(state, pid, lastError)
}

// setHealthLocked records a change of state. An empty lastError keeps the
// previous one, so that it explains the last failure.
func (s *Supervisor) setHealthLocked(state HealthState, pid int, lastError string) {
	if s.stopped && state != HealthStopped {
		return
	}
	if state != s.health.State {
		s.health.LastChange = time.Now()
	}
	s.health.State = state
	s.health.PID = pid
	if lastError != "" {
		s.health.LastError = lastError
	}
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
