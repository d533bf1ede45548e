// Package kubeclient builds the client-go clientset ipamd's node and pool
// sources and node routes share (and a dynamic client for the pool's
// custom resources): from a kubeconfig file, or the pod's service
// account when none is given. It counts every request sent, so an
// operator (and the cluster benchmark) can see that the CNI path makes
// none: after the informers' initial list and watch, ipamd talks to the
// API server only when a Node changes.
package kubeclient

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// UserAgent is what ipamd calls itself to the API server.
const UserAgent = "sandboxipam-ipamd"

// Client is a clientset with a request counter.
type Client struct {
	kubernetes.Interface
	// Dynamic reaches the pool source's custom resources (IPPool,
	// IPBlock); its requests count with the clientset's.
	Dynamic     dynamic.Interface
	requests    *atomic.Uint64
	writes      *atomic.Uint64
	blockWrites *atomic.Uint64
}

// New builds a client from kubeconfig, or from the in-cluster config when
// kubeconfig is empty.
func New(kubeconfig string) (*Client, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes in-cluster config (set ipSource.podCIDR.kubeconfig when ipamd runs outside a pod): %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("ipSource.podCIDR.kubeconfig %s: %w", kubeconfig, err)
	}
	return FromConfig(cfg)
}

// FromConfig builds a client from a rest config (tests pass their API
// server's).
func FromConfig(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = UserAgent
	requests, writes, blockWrites := new(atomic.Uint64), new(atomic.Uint64), new(atomic.Uint64)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return counting{rt: rt, n: requests, writes: writes, blockWrites: blockWrites}
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return &Client{Interface: cs, Dynamic: dyn, requests: requests, writes: writes, blockWrites: blockWrites}, nil
}

// Collector is ipamd_kubernetes_requests_total, Requests as a metric: it
// grows with Node changes, never with pods.
func (c *Client) Collector() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipamd", Name: "kubernetes_requests_total",
		Help: "Requests ipamd sent to the Kubernetes API server (the informers' lists and watches of Nodes); none is made on the CNI path."},
		func() float64 { return float64(c.Requests()) })
}

// Requests counts the requests sent to the API server so far (a watch
// counts once, when it opens).
func (c *Client) Requests() uint64 { return c.requests.Load() }

// Writes counts the requests that are not reads (GET): the pool source's
// creates, updates and deletes of IPBlocks, and ipamd's Events.
func (c *Client) Writes() uint64 { return c.writes.Load() }

// BlockWrites counts the writes of IPBlocks alone (Writes without the
// Events, whose recorder batches and retries on its own schedule).
func (c *Client) BlockWrites() uint64 { return c.blockWrites.Load() }

type counting struct {
	rt                     http.RoundTripper
	n, writes, blockWrites *atomic.Uint64
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if r.Method != http.MethodGet {
		c.writes.Add(1)
		if strings.Contains(r.URL.Path, "/ipblocks") {
			c.blockWrites.Add(1)
		}
	}
	return c.rt.RoundTrip(r)
}
