package ipamdlease

import (
	"math"
	"time"
)

// The timing between ipamd's fence and the reclaimer (docs/safety.md "Reclaiming a
// dead node's blocks"). ipamd stops handing out addresses of its blocks
// at most D = fenceAfter + renewInterval after its last successful renew
// was sent, on its own monotonic clock, and writes D as its Lease's
// spec.leaseDurationSeconds. The reclaimer counts from when it saw the
// Lease change (never before the renew was sent), on its own clock. With
// ε the bound on the two clocks' rate error, the reclaimer acts after ipamd
// has stopped when its wait W satisfies D(1 + ε) < W(1 − ε); ReclaimWait
// is the one place W is computed.
const (
	// ClockRateError is ε: the largest rate error assumed between ipamd's
	// clock and the reclaimer's. NTP keeps two clocks within 0.05%; a
	// VM's unsynchronised clock drifts within about 1%, which this takes.
	ClockRateError = 0.01
	// ReclaimWaitMargin is added to the clock-rate bound: ipamd's timer,
	// its goroutine and the fence's lock take a little real time between
	// the lapse and the fence on a loaded node.
	ReclaimWaitMargin = time.Second
	// MaxLeaseDuration is the longest D (fenceAfter + renewInterval) ipamd
	// accepts (package poolconf validates it): the largest whole second
	// for which the shipped grace DefaultReclaimGrace needs no
	// lengthening (ReclaimWait(DefaultReclaimGrace, MaxLeaseDuration) is
	// DefaultReclaimGrace). The reclaimer assumes it for an ipamd whose
	// Lease duration it has never seen (the Lease deleted, or never
	// written, before the reclaimer started).
	MaxLeaseDuration = 293 * time.Second
	// FenceLiftAnnotation, on an IPBlock, counts the times its node's
	// ipamd lifted its fence over it. Before ipamd lifts its fence it
	// updates each block it will hand out of, raising the count, so that
	// a reclaimer's delete judged before the lift fails its
	// resourceVersion precondition, and a delete that landed first makes
	// the update fail (NotFound): the two are ordered by the API server,
	// not by timing.
	FenceLiftAnnotation = "sandboxipam.io/fence-lifts"
)

// ReclaimWait is how long the reclaimer must have watched a node's ipamd
// Lease stay unchanged (or absent) before it may take the node's blocks:
// the grace, or D(1 + ε)/(1 − ε) + ReclaimWaitMargin when that is longer,
// rounded up to a whole second, with D the longest leaseDuration seen of
// that Lease. leaseDuration 0 (none seen) counts as MaxLeaseDuration.
func ReclaimWait(grace, leaseDuration time.Duration) time.Duration {
	if leaseDuration <= 0 {
		leaseDuration = MaxLeaseDuration
	}
	scaled := float64(leaseDuration) * (1 + ClockRateError) / (1 - ClockRateError)
	if scaled >= float64(math.MaxInt64-2*time.Second) {
		return time.Duration(math.MaxInt64)
	}
	wait := time.Duration(math.Ceil(scaled)) + ReclaimWaitMargin
	wait = (wait + time.Second - 1).Truncate(time.Second)
	return max(grace, wait)
}
