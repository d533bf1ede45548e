package reclaim

import (
	"encoding/json"
	"net/http"
)

// PathDecisions serves the last pass's verdict on every block
// (DecisionsHandler).
const PathDecisions = "/v1/decisions"

// Decisions is what PathDecisions serves: which reclaimer answers, and
// its last pass, nil before its first (a replica that does not lead runs
// none).
type Decisions struct {
	Identity string `json:"identity"`
	Pass     *Pass  `json:"pass"`
}

// LastPass is the last pass that ran, and whether one has.
func (r *Reclaimer) LastPass() (Pass, bool) {
	p := r.last.Load()
	if p == nil {
		return Pass{}, false
	}
	return *p, true
}

// DecisionsHandler serves Decisions as JSON: why each block, above all a
// gone node's, is kept or was reclaimed, so that an operator asking why a
// dead node's block stays reads the very pods or Lease that keep it. It
// only reads.
func (r *Reclaimer) DecisionsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		doc := Decisions{Identity: r.opts.Identity}
		if p, ok := r.LastPass(); ok {
			doc.Pass = &p
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
}
