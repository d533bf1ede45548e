// Package client is the client of ipamd's introspection API, used by ipamctl:
// typed calls returning the documents of package introspect/schema, and
// table renderings of them for people.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// DefaultAddr is ipamd's default introspection address.
const DefaultAddr = "127.0.0.1:61679"

// DefaultAdminSocket is ipamd's default admin socket
// (introspection.adminSocket), where release and reconcile are served.
const DefaultAdminSocket = "/run/sandboxipam/admin.sock"

// APIError is a non-2xx answer from ipamd.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("ipamd answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Client talks to one ipamd.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for the introspection API at addr (host:port or a
// URL); hc nil means http.DefaultClient.
func New(addr string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{base: strings.TrimSuffix(base, "/"), http: hc}
}

// NewAdmin returns a client for ipamd's admin socket at path: it serves the
// reads too, and release and reconcile, to root and ipamd's uid only.
func NewAdmin(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}
	return &Client{base: "http://ipamd-admin", http: &http.Client{Transport: tr}}
}

// Pods lists the assignments.
func (c *Client) Pods(ctx context.Context) (schema.Pods, error) {
	return get[schema.Pods](ctx, c, schema.PathPods)
}

// Pool reports the pool's usage.
func (c *Client) Pool(ctx context.Context) (schema.Pool, error) {
	return get[schema.Pool](ctx, c, schema.PathPool)
}

// Adapter reports the runtime adapter and the last reconcile pass.
func (c *Client) Adapter(ctx context.Context) (schema.Adapter, error) {
	return get[schema.Adapter](ctx, c, schema.PathAdapter)
}

// Routes returns the routes to other nodes (routes.nodes).
func (c *Client) Routes(ctx context.Context) (schema.Routes, error) {
	return get[schema.Routes](ctx, c, schema.PathRoutes)
}

// ENIs returns the aws source's ENI document as ipamd sent it.
func (c *Client) ENIs(ctx context.Context) (json.RawMessage, error) {
	return get[json.RawMessage](ctx, c, schema.PathENIs)
}

// Reconcile runs one pass now. A failed listing comes back as an
// *APIError (502) and the pass's document, whose Error says why.
func (c *Client) Reconcile(ctx context.Context, dryRun bool) (schema.Reconcile, error) {
	var out schema.Reconcile
	path := schema.PathReconcile + "?dryRun=" + url.QueryEscape(fmt.Sprint(dryRun))
	return out, c.do(ctx, http.MethodPost, path, &out)
}

// Ready asks GET /readyz: whether ipamd can serve ADD, and when not, why.
func (c *Client) Ready(ctx context.Context) (ready bool, why string, err error) {
	status, body, err := c.readyz(ctx)
	if err != nil {
		return false, "", err
	}
	return status == http.StatusOK, body, nil
}

// Readiness is GET /readyz read as `ipamctl ready -o json` prints it.
type Readiness struct {
	Ready bool `json:"ready"`
	// Reasons are the unmet conditions, one per "- " line of the answer;
	// empty when ready.
	Reasons []string `json:"reasons"`
}

// Readiness asks GET /readyz and reads its answer: 200 "ready", or 503
// "not ready:" and one "- reason" line per unmet condition. Any other
// answer is an *APIError: it says nothing about readiness.
func (c *Client) Readiness(ctx context.Context) (Readiness, error) {
	status, body, err := c.readyz(ctx)
	if err != nil {
		return Readiness{}, err
	}
	switch status {
	case http.StatusOK:
		return Readiness{Ready: true, Reasons: []string{}}, nil
	case http.StatusServiceUnavailable:
		out := Readiness{Reasons: []string{}}
		for _, line := range strings.Split(body, "\n") {
			if reason, ok := strings.CutPrefix(line, "- "); ok {
				out.Reasons = append(out.Reasons, reason)
			}
		}
		return out, nil
	}
	return Readiness{}, &APIError{Status: status, Message: body}
}

// readyz GETs /readyz and returns its status and trimmed body.
func (c *Client) readyz(ctx context.Context) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+schema.PathReadyz, nil)
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: %w", schema.PathReadyz, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("reach ipamd: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: read answer: %w", schema.PathReadyz, err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// Release frees one attachment's address on the operator's word, which
// ipamd checks against the runtime and the node unless req.Force.
func (c *Client) Release(ctx context.Context, req schema.ReleaseRequest) (schema.Release, error) {
	var out schema.Release
	return out, c.doBody(ctx, http.MethodPost, schema.PathRelease, req, &out)
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	return c.doBody(ctx, method, path, nil, out)
}

// doBody sends in, when not nil, as the JSON body.
func (c *Client) doBody(ctx context.Context, method, path string, in, out any) error {
	var reqBody io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reqBody)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach ipamd: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		apiErr := &APIError{Status: resp.StatusCode, Message: strings.TrimSpace(string(body))}
		var e schema.Error
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			apiErr.Message = e.Error
		}
		if resp.StatusCode == http.StatusBadGateway {
			_ = json.Unmarshal(body, out) // a failed pass still reports itself
		}
		return apiErr
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Check compares ipamd, the runtime and the kernel on ipamd's node.
func (c *Client) Check(ctx context.Context) (schema.Check, error) {
	return get[schema.Check](ctx, c, schema.PathCheck)
}

// Who says who holds an address, or what a sandbox or a pod holds, and
// the history of it.
func (c *Client) Who(ctx context.Context, query string) (schema.Who, error) {
	return get[schema.Who](ctx, c, schema.PathWho+"?q="+url.QueryEscape(query))
}

// get GETs path and decodes the answer into a T.
func get[T any](ctx context.Context, c *Client, path string) (T, error) {
	var out T
	return out, c.do(ctx, http.MethodGet, path, &out)
}
