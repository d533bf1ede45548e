// Command sandboxipam-reclaimer returns dead nodes' IPBlocks to the
// cluster pool, only on evidence, and runs the cluster-wide check for the
// metrics (package cluster/reclaim says how). Run two replicas: they contend
// for one Lease and only the leader acts. main only maps flags onto
// reclaim.Config.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/cluster/reclaim"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

// DefaultMetricsAddress serves /metrics and /healthz, on every address:
// Prometheus scrapes it from elsewhere, and its numbers name no pod.
const DefaultMetricsAddress = ":61680"

// DefaultDecisionsAddress serves the last pass's decisions, which name
// pods and their addresses (what RBAC keeps from most of the cluster):
// on loopback, reached on the node or through kubectl port-forward.
const DefaultDecisionsAddress = "127.0.0.1:61681"

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("sandboxipam-reclaimer"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxipam-reclaimer:", err)
		os.Exit(1)
	}
}

type flags struct {
	cfg                                   reclaim.Config
	kubeconfig, identity                  string
	metricsAddr, decisionsAddr, logFormat string
}

func parse(args []string, stderr io.Writer) (flags, error) {
	f := flags{cfg: reclaim.DefaultConfig()}
	fs := flag.NewFlagSet("sandboxipam-reclaimer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	le := &f.cfg.LeaderElection
	fs.DurationVar(&f.cfg.Grace, "grace", f.cfg.Grace, fmt.Sprintf("how long a gone node's Lease and its ipamd's Lease must stay unrenewed before its blocks may be reclaimed (at least 1m); "+
		"for ipamd's Lease the wait is never shorter than its leaseDuration (the longest seen, kept when the Lease is deleted; %s when none was seen) "+
		"× (1+ε)/(1−ε) + %s, ε = %g%% the clocks' rate error", ipamdlease.MaxLeaseDuration, ipamdlease.ReclaimWaitMargin, ipamdlease.ClockRateError*100))
	fs.StringVar(&f.cfg.IpamdLeaseNamespace, "ipamd-lease-namespace", f.cfg.IpamdLeaseNamespace, "namespace of each node's ipamd Lease (where ipamd's DaemonSet runs)")
	fs.DurationVar(&f.cfg.Interval, "interval", f.cfg.Interval, "time between reclaim passes")
	fs.DurationVar(&f.cfg.AliveTimeout, "alive-timeout", f.cfg.AliveTimeout, "bound of one probe of a gone node's ipamd on an address its Lease records (a block is reclaimed only once none has answered for the grace, or an operator confirmed the node gone)")
	fs.DurationVar(&f.cfg.WatchReclaimed, "watch-reclaimed", f.cfg.WatchReclaimed, "how long after reclaiming a node's blocks the reclaimer keeps asking its ipamd, to report (Warning Event ReclaimedNodeAnswers, log, metric) a node that comes back while another node holds its blocks")
	fs.DurationVar(&f.cfg.CheckInterval, "check-interval", f.cfg.CheckInterval, "time between cluster checks (the sandboxipam_cluster_* metrics)")
	fs.StringVar(&le.Namespace, "leader-election-namespace", le.Namespace, "namespace of the leader Lease")
	fs.StringVar(&le.Name, "leader-election-name", le.Name, "name of the leader Lease")
	fs.DurationVar(&le.LeaseDuration, "leader-election-lease-duration", le.LeaseDuration, "how long a non-leader waits before taking over an unrenewed leader Lease")
	fs.DurationVar(&le.RenewDeadline, "leader-election-renew-deadline", le.RenewDeadline, "how long the leader retries renewing before it stops leading")
	fs.DurationVar(&le.RetryPeriod, "leader-election-retry-period", le.RetryPeriod, "time between attempts to take or renew the leader Lease")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `path`; the pod's service account when empty")
	fs.StringVar(&f.identity, "identity", os.Getenv("POD_NAME"), "this replica's name in the leader Lease and the Events (default $POD_NAME, else the host name)")
	fs.StringVar(&f.metricsAddr, "metrics-address", DefaultMetricsAddress, "`host:port` serving /metrics and /healthz; empty turns it off")
	fs.StringVar(&f.decisionsAddr, "decisions-address", DefaultDecisionsAddress, "`host:port` serving "+reclaim.PathDecisions+" (why each block is kept or reclaimed; it names pods, so keep it on loopback); empty turns it off")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or text")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() != 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.logFormat != "json" && f.logFormat != "text" {
		return f, fmt.Errorf("--log-format must be json or text, got %q", f.logFormat)
	}
	if f.identity == "" {
		h, err := os.Hostname()
		if err != nil {
			return f, fmt.Errorf("--identity not set and no host name: %w", err)
		}
		f.identity = h
	}
	return f, f.cfg.Validate()
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if f.logFormat == "text" {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	clients, err := connect(f.kubeconfig)
	if err != nil {
		return err
	}
	r, err := reclaim.New(clients, reclaim.Options{Config: f.cfg, Identity: f.identity, Logger: log})
	if err != nil {
		return err
	}
	for _, l := range []struct {
		flag, addr string
		h          http.Handler
		private    bool
	}{{"--metrics-address", f.metricsAddr, metricsMux(r, f.decisionsAddr), false}, {"--decisions-address", f.decisionsAddr, decisionsMux(r), true}} {
		if l.addr == "" {
			continue
		}
		srv, err := serve(l.addr, l.h, l.private, log)
		if err != nil {
			return fmt.Errorf("%s: %w", l.flag, err)
		}
		defer srv.Close()
	}
	log.Info("sandboxipam-reclaimer: contending for the leader Lease", "identity", f.identity,
		"lease", f.cfg.LeaderElection.Namespace+"/"+f.cfg.LeaderElection.Name, "grace", f.cfg.Grace)
	return r.Run(ctx, reclaim.Elector{})
}

func connect(kubeconfig string) (reclaim.Clients, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return reclaim.Clients{}, fmt.Errorf("in-cluster config (set --kubeconfig outside a pod): %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return reclaim.Clients{}, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = reclaim.Component
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return reclaim.Clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return reclaim.Clients{}, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return reclaim.Clients{Kube: kube, Dynamic: dyn}, nil
}

// metricsMux serves /metrics and /healthz. A request for the decisions
// there is answered 404 naming where they are.
func metricsMux(r *reclaim.Reclaimer, decisionsAddr string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.Metrics().Registry(), promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET "+reclaim.PathDecisions, func(w http.ResponseWriter, _ *http.Request) {
		where := "off (--decisions-address is empty)"
		if decisionsAddr != "" {
			where = "on " + decisionsAddr + " (--decisions-address), on the leader's node or through kubectl port-forward"
		}
		http.Error(w, "the decisions name pods, so they are not served here: they are "+where, http.StatusNotFound)
	})
	return mux
}

// decisionsMux serves the last pass's decisions (reclaim.PathDecisions).
func decisionsMux(r *reclaim.Reclaimer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET "+reclaim.PathDecisions, r.DecisionsHandler())
	return mux
}

// serve serves reads only (nothing there changes state) on addr. What
// names pods (private) draws a warning when addr reaches beyond loopback.
func serve(addr string, h http.Handler, private bool, log *slog.Logger) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if tcp, ok := l.Addr().(*net.TCPAddr); ok && private && !tcp.IP.IsLoopback() {
		log.Warn("sandboxipam-reclaimer: the decisions, which name pods and their addresses, are served beyond loopback: every host that reaches "+addr+" reads them",
			"address", addr)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("sandboxipam-reclaimer: HTTP listener", "address", addr, "err", err)
		}
	}()
	return srv, nil
}
