// Package conformancetest runs the conformance suite from a Go test: one
// subtest per check, so an adapter's own tests can call it, as csi-test's
// sanity package and containerd's snapshotter test suite are called.
//
// It lives apart from package conformance so that the conformance command,
// which imports that package, does not link package testing.
package conformancetest

import (
	"testing"

	"github.com/sandboxipam/sandboxipam/conformance"
)

// Run runs every check as a subtest of t: t.Run(check.ID, ...). A failed
// check fails its subtest with the expected and actual values; a skipped one
// skips it. The adapter is launched once and closed by t.Cleanup, after the
// run's shared pods are removed.
func Run(t *testing.T, cfg conformance.Config) {
	t.Helper()
	suite, err := conformance.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%s: %v", conformance.LaunchCheckID, err)
	}
	t.Cleanup(suite.Close)
	for _, check := range conformance.Checks() {
		t.Run(check.ID, func(t *testing.T) {
			if !suite.Selected(check.ID) {
				t.Skip("not selected by Focus and Skip")
			}
			result := suite.RunCheck(t.Context(), check)
			for _, note := range result.Notes {
				t.Log(note)
			}
			switch result.Status {
			case conformance.StatusFail:
				t.Errorf("%s\n[%s]\n%s", check.Statement, check.Rule, conformance.FailureText(result))
			case conformance.StatusSkip:
				t.Skip(result.Reason)
			}
		})
	}
}
