package ipamdlease_test

import (
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
)

func TestReclaimWait(t *testing.T) {
	for _, c := range []struct {
		grace, duration, want time.Duration
	}{
		{time.Minute, 130 * time.Second, 134 * time.Second}, // 130 × 1.01/0.99 = 132.63, + 1s, rounded up
		{5 * time.Minute, 130 * time.Second, 5 * time.Minute},
		{time.Minute, 0, 5 * time.Minute}, // none seen: the longest ipamd accepts
		{5 * time.Minute, ipamdlease.MaxLeaseDuration, 5 * time.Minute},
		{5 * time.Minute, 294 * time.Second, 301 * time.Second},
		{10 * time.Minute, 7 * time.Minute, 10 * time.Minute},
		{time.Minute, 7 * time.Minute, 430 * time.Second},
		{time.Minute, time.Duration(1<<31-1) * time.Second, 608574*time.Hour + 12*time.Minute + 37*time.Second}, // int32 seconds: no overflow
		{time.Minute, time.Duration(1<<63 - 1), time.Duration(1<<63 - 1)},
	} {
		if got := ipamdlease.ReclaimWait(c.grace, c.duration); got != c.want {
			t.Errorf("ReclaimWait(%s, %s) = %s, want %s", c.grace, c.duration, got, c.want)
		}
	}
}

// The shipped grace covers the longest duration ipamd accepts, and one
// second more would not be: MaxLeaseDuration is the largest that fits.
func TestMaxLeaseDurationFitsTheShippedGrace(t *testing.T) {
	g := ipamdlease.DefaultReclaimGrace
	if got := ipamdlease.ReclaimWait(g, ipamdlease.MaxLeaseDuration); got != g {
		t.Errorf("ReclaimWait(%s, MaxLeaseDuration %s) = %s, want the grace", g, ipamdlease.MaxLeaseDuration, got)
	}
	if got := ipamdlease.ReclaimWait(g, ipamdlease.MaxLeaseDuration+time.Second); got == g {
		t.Errorf("ReclaimWait(%s, %s) = the grace: MaxLeaseDuration could be longer", g, ipamdlease.MaxLeaseDuration+time.Second)
	}
}

// Two clocks, each off by the rate bound the bad way: ipamd's slow (it
// fences late) and the reclaimer's fast (it acts early). For every grace
// the reclaimer accepts and every duration ipamd may write, ipamd fences
// (D on its clock after the renew, the renew in flight having hung for
// its full renewInterval) strictly before the reclaimer acts (the wait on
// its clock after it saw the renew, no earlier than it was sent), in real
// time, with the margin to spare.
func TestReclaimWaitOutlastsTheFenceWithClocksApart(t *testing.T) {
	const e = ipamdlease.ClockRateError
	ipamdRate, reclaimerRate := 1-e, 1+e // clock seconds per real second
	for grace := ipamdlease.MinReclaimGrace; grace <= 10*time.Minute; grace += 15 * time.Second {
		for d := time.Second; d <= 2*ipamdlease.MaxLeaseDuration; d += time.Second {
			wait := ipamdlease.ReclaimWait(grace, d)
			fenced := time.Duration(float64(d) / ipamdRate)
			acts := time.Duration(float64(wait) / reclaimerRate)
			if acts-fenced < ipamdlease.ReclaimWaitMargin*99/100 || wait < grace {
				t.Fatalf("grace %s, duration %s: the reclaimer acts %s (real) after the renew, ipamd fences at %s", grace, d, acts, fenced)
			}
		}
	}
}
