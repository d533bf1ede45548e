package reclaim_test

import (
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestCheckExportsDuplicates: the reclaimer's periodic check, on its
// caches, finds one address held by pods on two nodes and exports it as
// sandboxipam_cluster_duplicate_addresses, the series the alert watches.
func TestCheckExportsDuplicates(t *testing.T) {
	env := apiServer(t)
	a, b := env.Node(t, "ck-n1"), env.Node(t, "ck-n2")
	env.Block(t, "default", "198.18.3.0/26", "ck-n1", a.UID)
	env.Block(t, "default", "198.18.3.64/26", "ck-n2", b.UID)
	env.Pod(t, "check", "web-1", "ck-n1", "198.18.3.7")
	env.Pod(t, "check", "copy", "ck-n2", "198.18.3.7")
	r := newReclaimer(t, env, testConfig(5*time.Minute), "reclaimer-ck", clocktesting.NewFakeClock(t0), &testsupport.Buffer{}, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep := r.Check()
	var dups []clustercheck.Finding
	for _, f := range rep.Findings {
		if f.Kind == clustercheck.DuplicateAddress {
			dups = append(dups, f)
		}
	}
	if len(dups) != 1 || dups[0].Address != "198.18.3.7" || !slices.Equal(dups[0].Pods, []string{"check/copy", "check/web-1"}) ||
		dups[0].Words != "198.18.3.7 is held by 2 pods: check/copy (node ck-n2), check/web-1 (node ck-n1)" {
		t.Fatalf("duplicates %+v", dups)
	}
	reg := r.Metrics().Registry()
	if got := gauge(t, reg, "sandboxipam_cluster_duplicate_addresses"); got != 1 {
		t.Errorf("sandboxipam_cluster_duplicate_addresses %v, want 1", got)
	}
	if got := gauge(t, reg, "sandboxipam_cluster_findings", "kind=duplicate-address"); got != 1 {
		t.Errorf("sandboxipam_cluster_findings{kind=duplicate-address} %v, want 1", got)
	}
	// One findings series per kind the API alone can show; none for the
	// kinds only a read of the nodes finds, which this check never makes.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, mf := range mfs {
		if mf.GetName() == "sandboxipam_cluster_findings" {
			for _, m := range mf.GetMetric() {
				kinds = append(kinds, m.GetLabel()[0].GetValue())
			}
		}
	}
	slices.Sort(kinds)
	want := []string{"block-node-gone", "block-outside-pool", "block-overlap", "duplicate-address", "pod-outside-node", "pool-overlap", "unreadable"}
	if !slices.Equal(kinds, want) {
		t.Errorf("sandboxipam_cluster_findings kinds %v, want %v", kinds, want)
	}
	if got := gauge(t, reg, "sandboxipam_cluster_check_last_run_timestamp_seconds"); got != float64(t0.Unix()) {
		t.Errorf("sandboxipam_cluster_check_last_run_timestamp_seconds %v, want %d", got, t0.Unix())
	}
}
