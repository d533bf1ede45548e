package introspect

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Any local process and any hostNetwork pod can reach the loopback
// listener, so a WARN per refused call would let them flood the log. The
// first refusals of each interval are logged in full; the rest are only
// counted, and the first refusal after the interval says how many were
// left out. The metric (Deps.OnRefused) counts every one.

const (
	// refusalBurst is how many refusals per interval are logged in full.
	refusalBurst = 5
	// refusalInterval is the interval of refusalBurst.
	refusalInterval = time.Minute
)

// refusalLog rate-limits the refusals' log lines. The zero value is ready
// to use; now is the handlers' clock, so tests step it.
type refusalLog struct {
	mu         sync.Mutex
	start      time.Time
	logged     int
	suppressed int
}

// next reports whether the refusal seen at now is logged, and how many
// were left out of the log in the interval before it (said once, by the
// first refusal logged after that interval).
func (l *refusalLog) next(now time.Time) (log bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start.IsZero() || now.Sub(l.start) >= refusalInterval {
		suppressed = l.suppressed
		l.start, l.logged, l.suppressed = now, 0, 0
	}
	if l.logged >= refusalBurst {
		l.suppressed++
		return false, 0
	}
	l.logged++
	return true, suppressed
}

// noteRefused counts a refused call and logs it when the limit allows.
func (h *handlers) noteRefused(r *http.Request) {
	if h.OnRefused != nil {
		h.OnRefused()
	}
	log, suppressed := h.refusals.next(h.Now())
	if !log {
		return
	}
	attrs := []any{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr)}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed_since_last_logged", suppressed))
	}
	h.Logger.Warn("refused a call that changes state on the TCP listener (at most 5 such lines a minute; ipamd_loopback_changes_refused_total counts all)", attrs...)
}
