package containerd_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

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
