package kubernetes

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// runE2E runs e2e.test's suite s against the cluster, from the hub (where
// the API server listens, as a client outside the nodes would), and
// reports every test it ran: a table of names, results and times in the
// log, and an error for each failure.
func (c *cluster) runE2E(t *testing.T, s e2eSuite) {
	t.Helper()
	dir := filepath.Join(c.dir, "e2e-"+s.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "e2e.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	args := []string{"--net=" + c.hub, "--", conformanceBinary(t, "e2e.test"),
		"--kubeconfig=" + c.cp.Kubeconfig, "--provider=skeleton", "--kubectl-path=" + conformanceBinary(t, "kubectl"),
		"--report-dir=" + dir, "--e2e-output-dir=" + dir, "--allowed-not-ready-nodes=0",
		"--ginkgo.focus=" + s.focus, "--ginkgo.no-color", "--ginkgo.timeout=3h"}
	if skip := s.skip(); skip != "" {
		// Only when there is one: an empty pattern would match every test.
		args = append(args, "--ginkgo.skip="+skip)
	}
	cmd := exec.Command("nsenter", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.cp.Kubeconfig, "HOME="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	began := time.Now()
	c.logf(t, "e2e.test %s: focus %q skip %q, log %s", s.name, s.focus, s.skip(), log.Name())
	runErr := cmd.Run()
	cases, err := readJUnit(filepath.Join(dir, "junit_01.xml"))
	if err != nil {
		b, _ := os.ReadFile(log.Name())
		t.Fatalf("e2e.test %s (%v, exit %v): %v\n%s", s.name, time.Since(began).Round(time.Second), runErr, err, tail(b, 8192))
	}
	t.Logf("e2e.test %s: exit %v after %v\n%s", s.name, runErr, time.Since(began).Round(time.Second), resultTable(cases))
	for _, tc := range cases {
		// Also "interrupted", "aborted", "panicked", "timedout".
		if tc.Status != "passed" && tc.Status != "skipped" {
			t.Errorf("%s %s:\n%s", tc.Name, tc.Status, tail([]byte(tc.Failure.Message+"\n"+tc.Failure.Text), 2048))
		}
	}
	if runErr != nil && !t.Failed() {
		b, _ := os.ReadFile(log.Name())
		t.Errorf("e2e.test %s exited %v with no failed test:\n%s", s.name, runErr, tail(b, 8192))
	}
}

// junitCase is one test of the JUnit report e2e.test writes (ginkgo v2).
type junitCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
}

// readJUnit returns the tests of the report that ran or were skipped by
// the focus's own checks, without the suite's set-up and tear-down nodes.
func readJUnit(path string) ([]junitCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("JUnit report: %w", err)
	}
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("JUnit report %s: %w", path, err)
	}
	var out []junitCase
	for _, s := range doc.Suites {
		for _, tc := range s.Cases {
			// Tests left out by the focus or skip are reported "skipped"
			// with no time; set-up and tear-down nodes are not "[It]".
			if !strings.HasPrefix(tc.Name, "[It] ") || (tc.Status == "skipped" && tc.Time == 0) {
				continue
			}
			tc.Name = strings.TrimPrefix(tc.Name, "[It] ")
			out = append(out, tc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// resultTable is docs/testing.md's table of a run: every test, its result and
// its time, and the totals.
func resultTable(cases []junitCase) string {
	var b strings.Builder
	counts := map[string]int{}
	var total float64
	b.WriteString("| test | result | time (s) |\n| --- | --- | --- |\n")
	for _, tc := range cases {
		fmt.Fprintf(&b, "| %s | %s | %.1f |\n", strings.ReplaceAll(tc.Name, "|", `\|`), tc.Status, tc.Time)
		counts[tc.Status]++
		total += tc.Time
	}
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped, %d other, %.0f s in tests\n", counts["passed"], counts["failed"], counts["skipped"],
		len(cases)-counts["passed"]-counts["failed"]-counts["skipped"], total)
	return b.String()
}

// removeConformanceWorkloads deletes CoreDNS and waits until its pods and
// the suites' namespaces are gone, so that every pod's DEL reaches its
// ipamd before the DaemonSet goes.
func (c *cluster) removeConformanceWorkloads(t *testing.T) {
	t.Helper()
	if err := c.api.delete(context.Background(), "/apis/apps/v1/namespaces/kube-system/deployments/coredns"); err != nil {
		t.Logf("remove CoreDNS: %v", err)
	}
	testsupport.WaitFor(t, 5*time.Minute, "CoreDNS's pods and the suites' namespaces are gone", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := c.api.get(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns", &pods); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d CoreDNS pods left", len(pods.Items))
		}
		var list corev1.NamespaceList
		if err := c.api.get(ctx, "/api/v1/namespaces", &list); err != nil {
			return err
		}
		var left []string
		for _, ns := range list.Items {
			switch ns.Name {
			case "default", "kube-system", "kube-public", "kube-node-lease":
			default:
				left = append(left, ns.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("namespaces left: %v", left)
		}
		return nil
	})
}
