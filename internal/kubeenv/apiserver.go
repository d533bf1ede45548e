package kubeenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultServiceCIDR is never routed: the API server only allocates
	// the kubernetes Service's address from it.
	DefaultServiceCIDR = "198.19.200.0/24"
	// DefaultToken is the kubeconfig's token, of system:masters.
	DefaultToken = "sbxipam-e2e-admin-token"

	etcdTimeout      = time.Minute
	apiServerTimeout = 3 * time.Minute
)

// Binaries are the control plane components tools/kubernetes/build.sh
// caches.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler string
}

// BinariesIn names the components in dir, as the build caches them.
func BinariesIn(dir string) Binaries {
	return Binaries{
		Etcd:              filepath.Join(dir, "etcd"),
		APIServer:         filepath.Join(dir, "kube-apiserver"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Scheduler:         filepath.Join(dir, "kube-scheduler"),
	}
}

// ErrNotBuilt: a binary tools/kubernetes/build.sh caches is not there;
// its message says how to build them, so no caller repeats it.
var ErrNotBuilt = errors.New("not built: run tools/kubernetes/build.sh (make kubernetes-tools) first")

// Missing returns an error naming the first component that is not there.
func (b Binaries) Missing() error {
	return Built(b.Etcd, b.APIServer, b.ControllerManager, b.Scheduler)
}

// Built returns an error wrapping ErrNotBuilt for the first of the cached
// binaries (kubelet and crictl besides the control plane's) that is not
// there.
func Built(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: %w", err, ErrNotBuilt)
		}
	}
	return nil
}

// CacheDir is where tools/kubernetes/build.sh caches the components:
// $KUBE_CACHE_DIR, or ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/kubernetes/<version>.
func CacheDir() string {
	if cache := os.Getenv("KUBE_CACHE_DIR"); cache != "" {
		return cache
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(base, "sandboxipam", "kubernetes", "v1.37.2")
}

// Options say where and how the control plane runs.
type Options struct {
	// Binaries are the components; BinariesIn(CacheDir()) by default.
	Binaries Binaries
	// Dir holds everything the components write. Required.
	Dir string
	// NetNS is the path of the network namespace the components run in;
	// "" (the default) runs them in the caller's own.
	NetNS string
	// Address is the IPv4 address the API server advertises and the
	// kubeconfig names; 127.0.0.1 by default. etcd listens on 127.0.0.1.
	Address string
	// BindAddress is the address the API server listens on; Address by
	// default ("0.0.0.0" for every address of its namespace).
	BindAddress string
	// EtcdPort, EtcdPeerPort and APIPort default to 2379, 2380 and 6443
	// inside NetNS, and to free ports in the caller's own namespace.
	EtcdPort, EtcdPeerPort, APIPort int
	// ServiceCIDR is --service-cluster-ip-range: one CIDR, or two of
	// different families separated by a comma for a dual-stack cluster,
	// the first the primary (the kubernetes Service's family);
	// DefaultServiceCIDR by default.
	ServiceCIDR string
	// APIServerArgs are added to kube-apiserver's flags.
	APIServerArgs []string
	// Authorization is --authorization-mode; AlwaysAllow by default. RBAC
	// tests a component's roles (the kubeconfig's token is of
	// system:masters, which RBAC allows everything).
	Authorization string
	// Logf, when set, reports progress (t.Logf).
	Logf func(format string, args ...any)

	// pickPort picks a free port on addr; freePort unless a test stands
	// in for another process taking the port first.
	pickPort func(addr string) (int, error)
}

// APIServer is a running etcd and kube-apiserver, and the components
// started against them.
type APIServer struct {
	// URL is the API server's https URL; NetNS the namespace it listens in.
	URL, NetNS string
	// Kubeconfig is the path of a kubeconfig with Token.
	Kubeconfig string
	// Token is a bearer token of system:masters; CAPEM the CA that signed
	// the serving certificate.
	Token string
	CAPEM []byte
	PKI   PKI

	opts  Options
	mu    sync.Mutex
	procs []*Process
}

// withDefaults fills in the defaults and checks what is required.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("kubeenv: Options.Dir is required")
	}
	if o.Binaries == (Binaries{}) {
		o.Binaries = BinariesIn(CacheDir())
	}
	if o.Address == "" {
		o.Address = "127.0.0.1"
	}
	if _, err := netip.ParseAddr(o.Address); err != nil {
		return o, fmt.Errorf("kubeenv: Options.Address: %w", err)
	}
	if o.BindAddress == "" {
		o.BindAddress = o.Address
	}
	if o.Authorization == "" {
		o.Authorization = "AlwaysAllow"
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = DefaultServiceCIDR
	}
	if _, err := ServiceCIDRs(o.ServiceCIDR); err != nil {
		return o, fmt.Errorf("kubeenv: Options.ServiceCIDR: %w", err)
	}
	for _, port := range []struct {
		p    *int
		def  int
		addr string
	}{{&o.EtcdPort, 2379, "127.0.0.1"}, {&o.EtcdPeerPort, 2380, "127.0.0.1"}, {&o.APIPort, 6443, o.Address}} {
		if *port.p != 0 {
			continue
		}
		if o.NetNS != "" {
			*port.p = port.def
			continue
		}
		if o.pickPort == nil {
			o.pickPort = freePort
		}
		p, err := o.pickPort(port.addr)
		if err != nil {
			return o, err
		}
		*port.p = p
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o, nil
}

// freePort is a port nothing listens on at addr now. Another process (a
// parallel test's component, or any outgoing connection given an
// ephemeral port) may take it before the component binds it; the
// component then exits with errPortTaken and StartAPIServer picks again.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("kubeenv: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// errPortTaken marks a component that exited because the port it was told
// to bind was taken between freePort and the bind.
var errPortTaken = errors.New("its port was taken before it could bind it")

// portAttempts bounds how many times StartAPIServer picks fresh ports
// after a component found its port taken.
const portAttempts = 5

// StartAPIServer starts etcd and kube-apiserver and waits, bounded by ctx,
// until the API server is ready. On error nothing it started runs on.
//
// Ports it picked itself (those left zero outside a namespace) can be
// taken by another process before etcd or the API server binds them; it
// then starts both again on fresh ports, up to portAttempts times.
func StartAPIServer(ctx context.Context, opts Options) (*APIServer, error) {
	for attempt := 1; ; attempt++ {
		o, err := opts.withDefaults()
		if err != nil {
			return nil, err
		}
		a, err := startAPIServerOnce(ctx, o)
		picked := opts.NetNS == "" && (opts.EtcdPort == 0 || opts.EtcdPeerPort == 0 || opts.APIPort == 0)
		if err == nil || !errors.Is(err, errPortTaken) || !picked || attempt == portAttempts {
			return a, err
		}
		o.Logf("attempt %d: %v; starting again on fresh ports", attempt, errPortTaken)
		// etcd recorded its peer URL in its data directory.
		if err := os.RemoveAll(filepath.Join(o.Dir, "etcd", "data")); err != nil {
			return nil, err
		}
	}
}

func startAPIServerOnce(ctx context.Context, opts Options) (*APIServer, error) {
	var err error
	began := time.Now()
	host := net.JoinHostPort(opts.Address, strconv.Itoa(opts.APIPort))
	a := &APIServer{URL: "https://" + host, NetNS: opts.NetNS, Token: DefaultToken, opts: opts}
	cidrs, err := ServiceCIDRs(opts.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("kubeenv: Options.ServiceCIDR: %w", err)
	}
	// The kubernetes Service is single-stack, of the primary family.
	serviceIP := cidrs[0].Masked().Addr().Next()
	a.PKI, err = makePKI(pkiRequest{
		dir: filepath.Join(opts.Dir, "pki"), serverURL: a.URL, token: a.Token,
		serverIPs: uniqueIPs("127.0.0.1", opts.Address, serviceIP.String()),
	})
	if err != nil {
		return nil, fmt.Errorf("kubeenv: certificates: %w", err)
	}
	a.Kubeconfig, a.CAPEM = a.PKI.Kubeconfig, a.PKI.CAPEM
	for _, d := range []string{"etcd", "apiserver", "controller-manager", "scheduler"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	if err := a.startEtcd(ctx); err != nil {
		a.Stop()
		return nil, err
	}
	opts.Logf("etcd healthy at %s", time.Since(began).Round(time.Millisecond))
	if err := a.startAPIServer(ctx); err != nil {
		a.Stop()
		return nil, err
	}
	opts.Logf("kube-apiserver ready at %s", time.Since(began).Round(time.Millisecond))
	return a, nil
}

// ServiceCIDRs parses a --service-cluster-ip-range value: one CIDR, or
// two of different families separated by a comma, as kube-apiserver
// accepts it.
func ServiceCIDRs(s string) ([]netip.Prefix, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%q: at most two CIDRs, one per family", s)
	}
	var out []netip.Prefix
	for _, part := range parts {
		p, err := netip.ParsePrefix(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4() {
		return nil, fmt.Errorf("%q: the two CIDRs must be of different families", s)
	}
	return out, nil
}

func uniqueIPs(addrs ...string) []net.IP {
	var ips []net.IP
	seen := map[string]bool{}
	for _, a := range addrs {
		if !seen[a] {
			seen[a] = true
			ips = append(ips, net.ParseIP(a))
		}
	}
	return ips
}

func (a *APIServer) start(name string, argv ...string) (*Process, error) {
	p, err := startProcess(a.opts.Dir, a.opts.NetNS, name, argv...)
	if err != nil {
		return nil, fmt.Errorf("kubeenv: %w", err)
	}
	a.mu.Lock()
	a.procs = append(a.procs, p)
	a.mu.Unlock()
	return p, nil
}

func (a *APIServer) startEtcd(ctx context.Context) error {
	o := a.opts
	// etcd serves the API server alone: loopback is enough.
	client := fmt.Sprintf("http://127.0.0.1:%d", o.EtcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", o.EtcdPeerPort)
	etcd, err := a.start("etcd", o.Binaries.Etcd,
		"--name=e2e", "--data-dir="+filepath.Join(o.Dir, "etcd", "data"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=e2e="+peer)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: NetNSDialer(o.NetNS), DisableKeepAlives: true}}
	return waitFor(ctx, etcdTimeout, "etcd is healthy", etcd, func(ctx context.Context) error {
		code, body, err := get(ctx, hc, client+"/health", "")
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, `"true"`) {
			return fmt.Errorf("etcd /health %d: %s", code, body)
		}
		return nil
	})
}
