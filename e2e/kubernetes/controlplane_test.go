package kubernetes

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The one-node cluster listens on loopback inside the private
// containerd's network namespace, so its ports never meet the host's.
const (
	etcdClientURL = "http://127.0.0.1:2379"
	apiServerURL  = "https://127.0.0.1:6443"
	// serviceCIDR is never routed: the apiserver only allocates the
	// kubernetes Service's address from it.
	serviceCIDR = "198.19.200.0/24"
	adminToken  = "sbxipam-e2e-admin-token"
)

// clusterBinaries are the components tools/kubernetes/build.sh caches.
type clusterBinaries struct {
	etcd, apiserver, controllerManager, scheduler string
}

func clusterBinariesIn(cacheDir string) clusterBinaries {
	return clusterBinaries{
		etcd:              filepath.Join(cacheDir, "etcd"),
		apiserver:         filepath.Join(cacheDir, "kube-apiserver"),
		controllerManager: filepath.Join(cacheDir, "kube-controller-manager"),
		scheduler:         filepath.Join(cacheDir, "kube-scheduler"),
	}
}

// pki is what the control plane authenticates with: a CA, the API
// server's serving certificate, the service account signing key and a
// kubeconfig holding a token of system:masters.
type pki struct {
	caCert, serverCert, serverKey, saKey, tokens, kubeconfig string
	caPEM                                                    []byte
}

// makePKI writes the cluster's certificates and keys under dir with
// crypto/x509: no openssl, no cfssl.
func makePKI(t *testing.T, dir string) pki {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := pki{
		caCert: filepath.Join(dir, "ca.crt"), serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey: filepath.Join(dir, "apiserver.key"), saKey: filepath.Join(dir, "sa.key"),
		tokens: filepath.Join(dir, "tokens.csv"), kubeconfig: filepath.Join(dir, "kubeconfig"),
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	writeKey := func(path string, k *ecdsa.PrivateKey) {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandboxipam-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(p.caCert, p.caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	serverKey := newKey()
	serverTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("198.19.200.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTmpl, ca, &serverKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.serverCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	writeKey(p.serverKey, serverKey)
	writeKey(p.saKey, newKey())
	// One token, of system:masters: with AlwaysAllow every component
	// (kubelet, controller-manager, scheduler) may use it.
	if err := os.WriteFile(p.tokens, []byte(adminToken+`,sbxipam-admin,sbxipam-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
`, apiServerURL, base64.StdEncoding.EncodeToString(p.caPEM), adminToken)
	if err := os.WriteFile(p.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// process is one control plane component, run in the node's network
// namespace, in a process group of its own.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// startProcess starts argv inside the network namespace at nsPath and
// registers its stop: SIGTERM, then SIGKILL after 20 s. Its output goes to
// dir/<name>.log, whose tail the test prints when it fails.
func startProcess(t *testing.T, dir, nsPath, name string, argv ...string) *process {
	t.Helper()
	p := &process{name: name, exited: make(chan struct{}), log: filepath.Join(dir, name+".log")}
	log, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command("nsenter", append([]string{"--net=" + nsPath, "--"}, argv...)...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); log.Close(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			if b, err := os.ReadFile(p.log); err == nil {
				t.Logf("%s log (last 3 KiB):\n%s", name, tail(b, 3072))
			}
		}
	})
	return p
}

func (p *process) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// alive fails the wait it is called from when the component has exited.
func (p *process) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v (log %s)", p.name, p.cmd.ProcessState, p.log)
	default:
		return nil
	}
}

// controlPlane is etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler of a one-node cluster on 127.0.0.1.
type controlPlane struct {
	pki pki
	api *apiClient
}

// startControlPlane starts the four components in nsPath and waits until
// the API server is ready. Everything they write stays under dir.
func startControlPlane(t *testing.T, bins clusterBinaries, dir, nsPath string) *controlPlane {
	t.Helper()
	began := time.Now()
	pk := makePKI(t, filepath.Join(dir, "pki"))
	for _, d := range []string{"etcd", "apiserver", "controller-manager", "scheduler"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	etcd := startProcess(t, dir, nsPath, "etcd", bins.etcd,
		"--name=e2e", "--data-dir="+filepath.Join(dir, "etcd", "data"),
		"--listen-client-urls="+etcdClientURL, "--advertise-client-urls="+etcdClientURL,
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=e2e=http://127.0.0.1:2380")
	eventually(t, time.Minute, "etcd is healthy", func(ctx context.Context) error {
		if err := etcd.alive(); err != nil {
			t.Fatal(err)
		}
		code, body, err := httpInNetNS(ctx, nsPath, etcdClientURL+"/health")
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, `"true"`) {
			return fmt.Errorf("etcd /health %d: %s", code, body)
		}
		return nil
	})
	t.Logf("etcd healthy at %s", time.Since(began).Round(time.Millisecond))

	apiserver := startProcess(t, dir, nsPath, "kube-apiserver", bins.apiserver,
		"--etcd-servers="+etcdClientURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=6443",
		// The advertise address is loopback, which the endpoint
		// reconciler refuses to publish.
		"--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(dir, "apiserver"),
		"--tls-cert-file="+pk.serverCert, "--tls-private-key-file="+pk.serverKey,
		"--token-auth-file="+pk.tokens, "--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+pk.saKey, "--service-account-signing-key-file="+pk.saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--enable-priority-and-fairness=false", "--profiling=false")
	api := newAPIClient(nsPath, pk.caPEM)
	eventually(t, 3*time.Minute, "kube-apiserver is ready", func(ctx context.Context) error {
		if err := apiserver.alive(); err != nil {
			t.Fatal(err)
		}
		return api.ready(ctx)
	})
	t.Logf("kube-apiserver ready at %s", time.Since(began).Round(time.Millisecond))

	startProcess(t, dir, nsPath, "kube-controller-manager", bins.controllerManager,
		"--kubeconfig="+pk.kubeconfig, "--leader-elect=false",
		"--bind-address=127.0.0.1", "--cert-dir="+filepath.Join(dir, "controller-manager"),
		// Service account tokens for the app pods' projected volumes.
		"--root-ca-file="+pk.caCert, "--service-account-private-key-file="+pk.saKey,
		"--use-service-account-credentials=false", "--profiling=false")
	schedConfig := filepath.Join(dir, "scheduler", "config.yaml")
	if err := os.WriteFile(schedConfig, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
`, pk.kubeconfig)), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, dir, nsPath, "kube-scheduler", bins.scheduler,
		"--config="+schedConfig, "--bind-address=127.0.0.1",
		"--cert-dir="+filepath.Join(dir, "scheduler"), "--profiling=false")
	return &controlPlane{pki: pk, api: api}
}

// apiClient speaks plain REST to the API server: the test needs a handful
// of creates, gets, patches and deletes, not client-go.
type apiClient struct {
	hc *http.Client
}

func newAPIClient(nsPath string, caPEM []byte) *apiClient {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &apiClient{hc: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:     netnsDialer(nsPath),
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		},
	}}
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
	req, err := http.NewRequestWithContext(ctx, method, apiServerURL+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
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

func (c *apiClient) ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/readyz", "", nil, nil)
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
