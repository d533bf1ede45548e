package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	versionapi "github.com/containerd/containerd/api/services/version/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// probeTimeout bounds the probe of one candidate socket.
const probeTimeout = 2 * time.Second

// dockerContainerdCandidates are where the containerd a Docker Engine runs
// on keeps its socket, for an Engine at dockerEndpoint: beside the Engine's
// socket (a private daemon's layout), under the Engine's exec root when
// dockerd manages containerd itself (/var/run/docker/containerd), and at
// containerd's default socket, where a Docker node's system containerd
// listens with its CRI plugin off.
func dockerContainerdCandidates(dockerEndpoint string) []string {
	sock, ok := strings.CutPrefix(dockerEndpoint, "unix://")
	if !ok {
		return nil
	}
	dir := filepath.Dir(sock)
	return []string{
		filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "docker", "containerd", "containerd.sock"),
		"/run/containerd/containerd.sock",
	}
}

// findDockerContainerd returns the URI of the first candidate that serves
// containerd's own API and not CRI: Docker's own containerd, which the
// containerd-without-cri-refused and (for the docker fixture)
// wrong-runtime-refused checks point the adapter at. "" when none does.
func findDockerContainerd(ctx context.Context, dockerEndpoint string) string {
	for _, path := range dockerContainerdCandidates(dockerEndpoint) {
		if info, err := os.Stat(path); err != nil || info.Mode()&os.ModeSocket == 0 {
			continue
		}
		if servesContainerdWithoutCRI(ctx, path) {
			return "unix://" + path
		}
	}
	return ""
}

// servesContainerdWithoutCRI reports whether the socket at path answers
// containerd's version service and refuses CRI as unimplemented.
func servesContainerdWithoutCRI(ctx context.Context, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := versionapi.NewVersionClient(conn).Version(ctx, &emptypb.Empty{}); err != nil {
		return false
	}
	_, err = criapi.NewRuntimeServiceClient(conn).Version(ctx, &criapi.VersionRequest{})
	return status.Code(err) == codes.Unimplemented
}
