package kubeenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

func (a *APIServer) startAPIServer(ctx context.Context) error {
	o := a.opts
	args := []string{
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", o.EtcdPort),
		"--bind-address=" + o.BindAddress, "--advertise-address=" + o.Address, "--secure-port=" + strconv.Itoa(o.APIPort),
		// A loopback advertise address is one the endpoint reconciler
		// refuses to publish; and no test needs the Endpoints.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(o.Dir, "apiserver"),
		"--tls-cert-file=" + a.PKI.ServerCert, "--tls-private-key-file=" + a.PKI.ServerKey,
		"--token-auth-file=" + a.PKI.Tokens, "--authorization-mode=" + o.Authorization,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + a.PKI.SAKey, "--service-account-signing-key-file=" + a.PKI.SAKey,
		"--service-cluster-ip-range=" + o.ServiceCIDR,
		"--enable-priority-and-fairness=false", "--profiling=false",
	}
	p, err := a.start(apiServerName, append([]string{o.Binaries.APIServer}, append(args, o.APIServerArgs...)...)...)
	if err != nil {
		return err
	}
	return waitFor(ctx, apiServerTimeout, "kube-apiserver is ready", p, a.Ready)
}

// Ready returns nil when the API server's /readyz says so.
func (a *APIServer) Ready(ctx context.Context) error {
	code, body, err := get(ctx, a.HTTPClient(), a.URL+"/readyz", a.Token)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET /readyz: %d: %s", code, body)
	}
	return nil
}

// HTTPClient is a client that trusts the API server's CA and dials from
// its network namespace; requests need the Authorization header
// ("Bearer " + Token).
func (a *APIServer) HTTPClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(a.CAPEM)
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:     NetNSDialer(a.NetNS),
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		},
	}
}

// StartControllerManager starts kube-controller-manager against the API
// server, with the service account controllers' keys, and args added to
// its flags (--allocate-node-cidrs, --cluster-cidr, ...). It does not wait.
func (a *APIServer) StartControllerManager(args ...string) (*Process, error) {
	o := a.opts
	return a.start("kube-controller-manager", append([]string{o.Binaries.ControllerManager,
		"--kubeconfig=" + a.Kubeconfig, "--leader-elect=false",
		"--bind-address=127.0.0.1", "--cert-dir=" + filepath.Join(o.Dir, "controller-manager"),
		// Service account tokens for the app pods' projected volumes.
		"--root-ca-file=" + a.PKI.CACert, "--service-account-private-key-file=" + a.PKI.SAKey,
		"--use-service-account-credentials=false", "--profiling=false",
	}, append(a.ownNetNSArgs(), args...)...)...)
}

// ownNetNSArgs turn off the secure port (health, metrics) of a controller
// run in the caller's own network namespace, where its fixed default
// (10257, 10259) would meet another test's.
func (a *APIServer) ownNetNSArgs() []string {
	if a.opts.NetNS != "" {
		return nil
	}
	return []string{"--secure-port=0"}
}

// StartScheduler starts kube-scheduler against the API server. It does
// not wait.
func (a *APIServer) StartScheduler() (*Process, error) {
	o := a.opts
	config := filepath.Join(o.Dir, "scheduler", "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
`, a.Kubeconfig)), 0o644); err != nil {
		return nil, fmt.Errorf("kubeenv: scheduler config: %w", err)
	}
	return a.start("kube-scheduler", append([]string{o.Binaries.Scheduler,
		"--config=" + config, "--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(o.Dir, "scheduler"), "--profiling=false"}, a.ownNetNSArgs()...)...)
}

// apiServerName names kube-apiserver's Process.
const apiServerName = "kube-apiserver"

// StopAPIServer stops kube-apiserver alone and waits until it has exited:
// etcd and the components started against it run on, as on a control
// plane whose API server is down. RestartAPIServer starts it again.
func (a *APIServer) StopAPIServer() error {
	p := a.runningAPIServer()
	if p == nil {
		return errors.New("kubeenv: kube-apiserver is not running")
	}
	p.Stop()
	return nil
}

// RestartAPIServer starts kube-apiserver again after StopAPIServer, with
// the same flags, certificates and etcd (so with every object), its log
// appended to its predecessor's, and waits, bounded by ctx, until it is
// ready.
func (a *APIServer) RestartAPIServer(ctx context.Context) error {
	if a.runningAPIServer() != nil {
		return errors.New("kubeenv: kube-apiserver runs already")
	}
	return a.startAPIServer(ctx)
}

func (a *APIServer) runningAPIServer() *Process {
	for _, p := range a.Processes() {
		if p.Name == apiServerName && p.Alive() == nil {
			return p
		}
	}
	return nil
}

// Processes are the components started, in the order they started.
func (a *APIServer) Processes() []*Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.procs)
}

// Stop stops every component, the last started first, and waits until
// each has exited. Calling it again does nothing more.
func (a *APIServer) Stop() {
	procs := a.Processes()
	slices.Reverse(procs)
	for _, p := range procs {
		p.Stop()
	}
}

// waitFor polls cond (testsupport.Poll) until it returns nil, p exits,
// ctx ends or timeout passes; the error then says what was still missing.
func waitFor(ctx context.Context, timeout time.Duration, what string, p *Process, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return testsupport.Poll(ctx, "kubeenv: "+what, func(ctx context.Context) error {
		if err := p.Alive(); err != nil {
			tail := p.LogTail(3072)
			if bytes.Contains(tail, []byte("address already in use")) {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return fmt.Errorf("%w: %w\n%s", testsupport.ErrGiveUp, err, tail)
		}
		return cond(ctx)
	})
}

// get GETs url with token (if any) and returns the status and up to 4 KiB
// of the body.
func get(ctx context.Context, hc *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), err
}
