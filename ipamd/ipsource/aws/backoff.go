package aws

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrNothingAssigned: EC2 answered a growth step (an assignment, or an
// ENI created with addresses) with success, yet the ENI, read back, holds
// no new address the pool may take. The outcome is unknown, not a
// failure the SDK retries: growth then waits before it asks again,
// PoolCheckInterval doubled per such step in a row, at most MaxBackoff,
// so an EC2 that keeps answering so (or throttles) never sees a hot loop.
var ErrNothingAssigned = errors.New("aws: EC2 reported success but assigned no address the pool may take")

// growthBackoff is the wait after steps that added nothing. Only the
// adjusting goroutine (holding adjustMu) reads and writes it; the wait is
// a time to compare with, never a sleep, so adjustMu is never held across
// it and Ready, Status and Adjust do not wait on it.
type growthBackoff struct {
	streak    int       // steps in a row that added nothing
	notBefore time.Time // no growth step before this
}

// growthDeferred returns an ErrNothingAssigned error while growth waits.
// The message stays the same for one wait, so noteError logs it once.
func (s *Source) growthDeferred() error {
	b := s.backoff
	if b.streak == 0 || !s.opts.Now().Before(b.notBefore) {
		return nil
	}
	return fmt.Errorf("%w (%d steps in a row); growth waits until %s", ErrNothingAssigned, b.streak, b.notBefore.UTC().Format(time.RFC3339Nano))
}

// deferGrowth records a step that added nothing and starts the wait.
func (s *Source) deferGrowth() error {
	s.backoff.streak++
	wait := s.tun.MaxBackoff
	if shift := s.backoff.streak; shift < 30 && s.tun.PoolCheckInterval<<shift < wait {
		wait = s.tun.PoolCheckInterval << shift
	}
	s.backoff.notBefore = s.opts.Now().Add(wait)
	return s.growthDeferred()
}

// growthResumed ends the wait once a step added addresses.
func (s *Source) growthResumed() {
	if s.backoff.streak > 0 {
		s.log.Info("EC2 assigns addresses again", slog.Int("emptySteps", s.backoff.streak))
	}
	s.backoff = growthBackoff{}
}
