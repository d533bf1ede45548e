package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	versionapi "github.com/containerd/containerd/api/services/version/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerdVersion answers containerd's version service.
type containerdVersion struct {
	versionapi.UnimplementedVersionServer
}

func (containerdVersion) Version(context.Context, *emptypb.Empty) (*versionapi.VersionResponse, error) {
	return &versionapi.VersionResponse{Version: "1.6.20"}, nil
}

// criVersion answers CRI's Version, as a containerd with its CRI plugin on.
type criVersion struct {
	criapi.UnimplementedRuntimeServiceServer
}

func (criVersion) Version(context.Context, *criapi.VersionRequest) (*criapi.VersionResponse, error) {
	return &criapi.VersionResponse{RuntimeName: "containerd"}, nil
}

// serveGRPC serves a real gRPC server on a unix socket at path with the
// given services, until the test ends.
func serveGRPC(t *testing.T, path string, withCRI bool) {
	t.Helper()
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	versionapi.RegisterVersionServer(server, containerdVersion{})
	if withCRI {
		criapi.RegisterRuntimeServiceServer(server, criVersion{})
	}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
}

func TestDockerContainerdCandidates(t *testing.T) {
	got := dockerContainerdCandidates("unix:///var/run/docker.sock")
	want := []string{"/var/run/containerd.sock", "/var/run/docker/containerd/containerd.sock", "/run/containerd/containerd.sock"}
	if !slices.Equal(got, want) {
		t.Errorf("candidates = %q, want %q", got, want)
	}
	if got := dockerContainerdCandidates("tcp://127.0.0.1:2375"); got != nil {
		t.Errorf("candidates of a TCP endpoint = %q, want none", got)
	}
}

// A containerd that serves CRI is not Docker's own; the one beside the
// Engine's socket that refuses CRI is, and it fills both options.
func TestDockerFixtureFindsContainerdWithoutCRI(t *testing.T) {
	dir, err := os.MkdirTemp("", "disc-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dockerSock := filepath.Join(dir, "docker.sock")
	serveGRPC(t, filepath.Join(dir, "containerd.sock"), true)
	if got := findDockerContainerd(t.Context(), "unix://"+dockerSock); got != "" && !strings.HasSuffix(got, "/run/containerd/containerd.sock") {
		t.Errorf("found %q, a containerd that serves CRI", got)
	}
	if err := os.MkdirAll(filepath.Join(dir, "docker", "containerd"), 0o700); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "docker", "containerd", "containerd.sock")
	serveGRPC(t, own, false)
	var out bytes.Buffer
	opts := Options{Adapter: "a", Fixture: FixtureDocker, Endpoint: "unix://" + dockerSock}.withDefaults().withDockerContainerd(t.Context(), &out)
	if opts.NoCRIEndpoint != "unix://"+own || !slices.Equal(opts.WrongRuntimeArgs, []string{"--endpoint=unix://" + own}) {
		t.Errorf("NoCRIEndpoint = %q, WrongRuntimeArgs = %q; want both at %s", opts.NoCRIEndpoint, opts.WrongRuntimeArgs, own)
	}
	if !strings.Contains(out.String(), "containerd without CRI (Docker's own): unix://"+own) {
		t.Errorf("output = %q", out.String())
	}
	given := Options{Adapter: "a", Fixture: FixtureDocker, Endpoint: "unix://" + dockerSock, WrongRuntimeArgs: []string{"--x"}}.
		withDefaults().withDockerContainerd(t.Context(), &out)
	if !slices.Equal(given.WrongRuntimeArgs, []string{"--x"}) || given.NoCRIEndpoint != "unix://"+own {
		t.Errorf("given WrongRuntimeArgs replaced: %q, NoCRIEndpoint %q", given.WrongRuntimeArgs, given.NoCRIEndpoint)
	}
	cri := Options{Adapter: "a", Fixture: FixtureCRI, Endpoint: "unix://" + dockerSock}.withDefaults().withDockerContainerd(t.Context(), &out)
	if cri.NoCRIEndpoint != "" || cri.WrongRuntimeArgs != nil {
		t.Errorf("the cri fixture got %q, %q; want nothing found for it", cri.NoCRIEndpoint, cri.WrongRuntimeArgs)
	}
}
