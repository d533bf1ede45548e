package endpoint_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"

	"github.com/sandboxipam/sandboxipam/adapters/internal/endpoint"
)

func TestSocketPath(t *testing.T) {
	valid := map[string]string{
		"unix:///run/containerd/containerd.sock": "/run/containerd/containerd.sock",
		"/var/run/crio/crio.sock":                "/var/run/crio/crio.sock",
		"unix:///run//x/../docker.sock":          "/run/docker.sock",
	}
	for uri, want := range valid {
		if got, err := endpoint.SocketPath(uri); err != nil || got != want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", uri, got, err, want)
		}
	}
	for _, uri := range []string{"", "unix://", "unix://relative.sock", "relative.sock", "tcp://127.0.0.1:2375", "npipe:////./pipe/docker_engine"} {
		if got, err := endpoint.SocketPath(uri); err == nil {
			t.Errorf("SocketPath(%q) = %q, want an error", uri, got)
		}
	}
}

func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ep")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s.sock")
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return listener, "unix://" + path
}

func TestIdentifyGRPCServer(t *testing.T) {
	listener, uri := listen(t)
	server := grpc.NewServer()
	go server.Serve(listener)
	t.Cleanup(server.Stop)
	identity, err := endpoint.Identify(context.Background(), uri)
	if err != nil || identity.Protocol != endpoint.ProtocolHTTP2 || identity.IsDocker() {
		t.Errorf("Identify = %+v, %v; want HTTP/2", identity, err)
	}
}

func TestIdentifyHTTPServers(t *testing.T) {
	cases := map[string]struct {
		headers  map[string]string
		docker   bool
		describe string
	}{
		"docker": {map[string]string{"Api-Version": "1.41", "Server": "Docker/20.10.24 (linux)"}, true, "the Docker Engine API 1.41"},
		"other":  {map[string]string{"Server": "nginx"}, false, `an HTTP/1 server "nginx"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			listener, uri := listen(t)
			server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for key, value := range tc.headers {
					w.Header().Set(key, value)
				}
			})}
			go server.Serve(listener)
			t.Cleanup(func() { server.Close() })
			identity, err := endpoint.Identify(context.Background(), uri)
			if err != nil || identity.Protocol != endpoint.ProtocolHTTP1 || identity.IsDocker() != tc.docker || identity.Describe() != tc.describe {
				t.Errorf("Identify = %+v (%s), %v", identity, identity.Describe(), err)
			}
		})
	}
}

func TestIdentifyAbsentSocket(t *testing.T) {
	listener, uri := listen(t)
	listener.Close() // removes the socket file
	_, err := endpoint.Identify(context.Background(), uri)
	if !endpoint.IsAbsent(err) {
		t.Errorf("Identify error = %v, want an absent socket", err)
	}
}
