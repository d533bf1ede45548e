package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestBinaryLeadsChecksAndReleases runs the built command against a real
// API server: it takes the leader Lease, runs the cluster check at once
// and serves its duplicate on /metrics, and on SIGTERM releases the Lease
// so that another replica can lead at once.
func TestBinaryLeadsChecksAndReleases(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	n1, n2 := env.Node(t, "n1"), env.Node(t, "n2")
	env.Block(t, "default", "198.18.0.0/26", "n1", n1.UID)
	env.Block(t, "default", "198.18.0.64/26", "n2", n2.UID)
	env.Pod(t, "prod", "web", "n1", "198.18.0.9")
	env.Pod(t, "prod", "copy", "n2", "198.18.0.9")

	bin := testsupport.Binary(t, "./cmd/sandboxipam-reclaimer")
	port, decisions := testsupport.ReservePort(t), testsupport.ReservePort(t)
	port.Release()
	decisions.Release()
	cmd := exec.Command(bin, "--kubeconfig="+env.API.Kubeconfig, "--identity=reclaimer-a", "--metrics-address="+port.Addr,
		"--decisions-address="+decisions.Addr, "--log-format=text")
	logPath := filepath.Join(t.TempDir(), "reclaimer.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	testsupport.Wait(t, "the reclaimer to lead and export the duplicate", func() (bool, string) {
		body, err := scrape("http://" + port.Addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(body, "\nsandboxipam_reclaimer_leader 1\n") && strings.Contains(body, "\nsandboxipam_cluster_duplicate_addresses 1\n"), logTail(logPath)
	})
	lease, err := env.Client.CoordinationV1().Leases("kube-system").Get(t.Context(), "sandboxipam-reclaimer", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "reclaimer-a" {
		t.Fatalf("leader Lease %+v, %v", lease, err)
	}
	if log := logTail(logPath); !strings.Contains(log, "cluster check: 198.18.0.9 is held by 2 pods: prod/copy (node n2), prod/web (node n1)") {
		t.Errorf("no log line names the duplicate:\n%s", log)
	}
	// The decisions, which name pods, only on their own (loopback) listener.
	var d reclaim.Decisions
	testsupport.Wait(t, "the decisions of a first pass", func() (bool, string) {
		body, err := scrape("http://" + decisions.Addr + reclaim.PathDecisions)
		if err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			return false, err.Error()
		}
		return d.Pass != nil, body
	})
	if d.Identity != "reclaimer-a" || len(d.Pass.Decisions) != 2 || d.Pass.Decisions[0].CIDR != "198.18.0.0/26" || d.Pass.Decisions[0].Reclaim ||
		d.Pass.Decisions[1].CIDR != "198.18.0.64/26" || d.Pass.Decisions[1].Reclaim {
		t.Errorf("decisions %+v, want both blocks kept (their Nodes exist)", d)
	}
	resp, err := http.Get("http://" + port.Addr + reclaim.PathDecisions)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "on "+decisions.Addr+" (--decisions-address)") {
		t.Errorf("GET %s on the metrics listener = %s %q, want 404 naming %s", reclaim.PathDecisions, resp.Status, body, decisions.Addr)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logTail(logPath))
	}
	lease, err = env.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "sandboxipam-reclaimer", metav1.GetOptions{})
	if err != nil || (lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "") {
		t.Fatalf("the Lease after SIGTERM: %+v, %v; want it released", lease.Spec, err)
	}
}

func scrape(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

func logTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}
