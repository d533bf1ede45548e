package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
)

// controlPlane is etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler of a cluster (internal/kubeenv).
type controlPlane struct {
	*kubeenv.APIServer
	api *apiClient
}

// startControlPlane starts the four components in nsPath, the API server
// on 127.0.0.1, and waits until the API server is ready. Everything they
// write stays under dir. cmArgs are added to kube-controller-manager's
// flags. The one-node cluster listens on loopback inside the private
// containerd's network namespace, so its ports never meet the host's.
func startControlPlane(t *testing.T, bins kubeenv.Binaries, dir, nsPath string, cmArgs ...string) *controlPlane {
	t.Helper()
	return startControlPlaneAt(t, kubeenv.Options{Binaries: bins, Dir: dir, NetNS: nsPath}, cmArgs...)
}

// startControlPlaneAt starts the control plane opts describe; each
// component's log tail is printed if the test fails.
func startControlPlaneAt(t *testing.T, opts kubeenv.Options, cmArgs ...string) *controlPlane {
	t.Helper()
	opts.Logf = t.Logf
	a, err := kubeenv.StartAPIServer(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			for _, p := range a.Processes() {
				t.Logf("%s log (last 3 KiB):\n%s", p.Name, p.LogTail(3072))
			}
		}
	})
	if _, err := a.StartControllerManager(cmArgs...); err != nil {
		t.Fatal(err)
	}
	if _, err := a.StartScheduler(); err != nil {
		t.Fatal(err)
	}
	return &controlPlane{APIServer: a, api: newAPIClient(a)}
}

// apiClient speaks plain REST to the API server: the test needs a handful
// of creates, gets, patches and deletes, not client-go.
type apiClient struct {
	hc         *http.Client
	url, token string
}

func newAPIClient(a *kubeenv.APIServer) *apiClient {
	return &apiClient{hc: a.HTTPClient(), url: a.URL, token: a.Token}
}

// errNotFound: the API server answered 404.
var errNotFound = errors.New("not found")

// do sends body (JSON, or nil) to path and decodes the answer into out
// (or discards it); any status but 2xx is an error carrying the body.
func (c *apiClient) do(ctx context.Context, method, path, contentType string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s %s: %w", method, path, errNotFound)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

func (c *apiClient) get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, "", nil, out)
}

func (c *apiClient) create(ctx context.Context, path string, obj any) error {
	return c.do(ctx, http.MethodPost, path, "application/json", obj, nil)
}

// mergePatch applies a JSON merge patch (RFC 7386).
func (c *apiClient) mergePatch(ctx context.Context, path string, patch any) error {
	return c.do(ctx, http.MethodPatch, path, "application/merge-patch+json", patch, nil)
}

func (c *apiClient) delete(ctx context.Context, path string) error {
	return c.do(ctx, http.MethodDelete, path, "", nil, nil)
}
