package containerd_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// crictlVersion is the CRI client the listing is compared with.
const crictlVersion = "v1.37.0"

// criSandboxIDs asks the CRI endpoint directly, as kubelet does.
func criSandboxIDs(t *testing.T, ctx context.Context, endpoint string) []string {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reply, err := criv1.NewRuntimeServiceClient(conn).ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range reply.GetItems() {
		ids = append(ids, item.GetId())
	}
	slices.Sort(ids)
	return ids
}

// crictlPods runs "crictl pods -q --no-trunc": every sandbox, every state.
func crictlPods(t *testing.T, ctx context.Context, crictl, endpoint string) []string {
	t.Helper()
	out, err := exec.CommandContext(ctx, crictl, "--runtime-endpoint", endpoint, "pods", "-q", "--no-trunc").Output()
	if err != nil {
		t.Fatalf("crictl pods: %v", err)
	}
	ids := strings.Fields(string(out))
	slices.Sort(ids)
	return ids
}

// crictlInstallTimeout bounds a cold "go install" of crictl, which takes
// a minute on an idle machine and several on a busy one.
const crictlInstallTimeout = 8 * time.Minute

// findCrictl returns crictl from PATH, GOPATH/bin or this test's cache,
// installing it into the cache (once per machine) when it is nowhere.
// It returns "" when that fails: the caller skips the crictl comparison,
// or fails under CI=true; the direct CRI comparison runs either way.
func findCrictl(t *testing.T) (path, whyMissing string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crictlInstallTimeout)
	defer cancel()
	if path, err := exec.LookPath("crictl"); err == nil {
		return path, ""
	}
	gopath, _ := exec.CommandContext(ctx, "go", "env", "GOPATH").Output()
	candidate := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "crictl")
	if _, err := os.Stat(candidate); err == nil {
		return candidate, ""
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "sandboxipam", "crictl-"+crictlVersion)
	cached := filepath.Join(bin, "crictl")
	if _, err := os.Stat(cached); err == nil {
		return cached, ""
	}
	install := exec.CommandContext(ctx, "go", "install", "sigs.k8s.io/cri-tools/cmd/crictl@"+crictlVersion)
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
	if out, err := install.CombinedOutput(); err != nil {
		return "", "crictl " + crictlVersion + " not found and go install failed: " + err.Error() + "\n" + string(out)
	}
	return cached, ""
}
