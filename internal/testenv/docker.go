package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// DockerOptions configures StartDocker.
type DockerOptions struct {
	// Dir holds all of the daemon's state; required, absolute, at most 64
	// bytes. It is wiped first if an earlier instance used it.
	Dir string
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// Docker is a running private dockerd, on a containerd of its own (CRI
// plugin off, namespace "moby"), with the pause image loaded. It runs in
// the host's network namespace but creates no bridge, route or iptables
// rule there: pods get "none" or "host" networking only.
type Docker struct {
	Dir          string
	Host         string // "unix://" + Socket, for the Engine API client
	Socket       string
	PauseImage   string // fixture.DefaultPauseImage
	CgroupParent string // every container's cgroup parent (dockerd --cgroup-parent)
	PID          int    // dockerd's
	// ContainerdEndpoint is "unix://" + the socket of dockerd's own
	// containerd: Docker's containerd, CRI plugin off, what a Docker node
	// has at containerd's default socket.
	ContainerdEndpoint string

	daemon     *daemon
	containerd *daemon // dockerd's own containerd, started by us
	record     instanceRecord
	logger     *slog.Logger
}

// dockerDaemonConfig is dockerd's daemon.json. deprecated-key-path keeps
// dockerd 20.10 from writing /etc/docker/key.json; only the file accepts it.
// The default runtime is runc behind runcWrapperScript: cri-dockerd asks
// for oom_score_adj -998 on every sandbox, which root without
// CAP_SYS_RESOURCE cannot set.
type dockerDaemonConfig struct {
	DeprecatedKeyPath string                   `json:"deprecated-key-path"`
	Runtimes          map[string]dockerRuntime `json:"runtimes"`
	DefaultRuntime    string                   `json:"default-runtime"`
}

type dockerRuntime struct {
	Path string `json:"path"`
}

// dockerRuntimeName names the wrapped runc in daemon.json.
const dockerRuntimeName = "sandboxipam-runc"

// StartDocker starts a containerd and a dockerd on it, without touching the
// host's network (no bridge, no iptables, no forwarding), waits until the
// Engine API answers, and loads the pause image.
func StartDocker(ctx context.Context, opts DockerOptions) (*Docker, error) {
	logger := loggerOrDiscard(opts.Logger)
	sweepStale(ctx, logger)
	rec := newRecord("docker", opts.Dir)
	d := &Docker{
		Dir:          opts.Dir,
		Socket:       filepath.Join(opts.Dir, "docker.sock"),
		PauseImage:   fixture.DefaultPauseImage,
		CgroupParent: rec.CgroupParent,
		logger:       logger,
	}
	d.Host = "unix://" + d.Socket
	d.ContainerdEndpoint = "unix://" + d.containerdAddress()
	rec.ShimAddress = d.containerdAddress()
	rec.ShimNamespace = "moby"
	rec.RuncRoot = filepath.Join(d.execRoot(), "runtime-runc")
	d.record = rec
	if err := launch(ctx, "docker", rec, d.start, d.Stop); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Docker) execRoot() string { return filepath.Join(d.Dir, "exec") }

func (d *Docker) containerdAddress() string { return filepath.Join(d.Dir, "containerd.sock") }

// startContainerd starts the containerd dockerd will use. dockerd 20.10
// would start one itself, unless /run/containerd/containerd.sock exists:
// then it would share the host's containerd, and its containers would
// escape this instance. Ours also keeps /opt/containerd untouched.
func (d *Docker) startContainerd(ctx context.Context) error {
	configPath := filepath.Join(d.Dir, "containerd.toml")
	if err := os.WriteFile(configPath, []byte(dockerContainerdConfig(d.Dir, d.containerdAddress())), 0o600); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	daemon, err := startDaemon("containerd for dockerd", filepath.Join(d.Dir, "containerd.log"), d.logger, "containerd", "--config", configPath)
	if err != nil {
		return err
	}
	d.containerd = daemon
	return daemon.waitReady(ctx, func(ctx context.Context) error { return dialUnix(ctx, d.containerdAddress()) })
}

func (d *Docker) start(ctx context.Context) error {
	if err := writeRecord(d.record); err != nil {
		return err
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("runc: %w", err)
	}
	wrapper := filepath.Join(d.Dir, "runc-wrapper")
	if err := writeRuncWrapper(wrapper, runc); err != nil {
		return err
	}
	configPath := filepath.Join(d.Dir, "daemon.json")
	config, _ := json.Marshal(dockerDaemonConfig{
		DeprecatedKeyPath: filepath.Join(d.Dir, "key.json"),
		Runtimes:          map[string]dockerRuntime{dockerRuntimeName: {Path: wrapper}},
		DefaultRuntime:    dockerRuntimeName,
	})
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return fmt.Errorf("write daemon.json: %w", err)
	}
	began := time.Now()
	if err := d.startContainerd(ctx); err != nil {
		return err
	}
	daemon, err := startDaemon("dockerd", filepath.Join(d.Dir, "dockerd.log"), d.logger, d.argv(configPath)...)
	if err != nil {
		return err
	}
	if err := d.await(ctx, daemon, began, "dockerd answers"); err != nil {
		return err
	}
	return d.loadPauseImage(ctx)
}

// await makes daemon d's dockerd, waits until the Engine API answers and
// logs said with the time since began.
func (d *Docker) await(ctx context.Context, daemon *daemon, began time.Time, said string) error {
	d.daemon, d.PID = daemon, daemon.pid()
	if err := daemon.waitReady(ctx, d.ping); err != nil {
		return err
	}
	d.logger.Info(said, "after", time.Since(began), "host", d.Host)
	return nil
}

func (d *Docker) argv(configPath string) []string {
	return []string{
		"dockerd",
		"--config-file", configPath,
		"--host", d.Host,
		"--containerd", d.containerdAddress(),
		"--data-root", filepath.Join(d.Dir, "data"),
		"--exec-root", d.execRoot(),
		"--pidfile", filepath.Join(d.Dir, "docker.pid"),
		"--cgroup-parent", d.CgroupParent,
		"--exec-opt", "native.cgroupdriver=cgroupfs",
		// The default -500 needs CAP_SYS_RESOURCE, which a VM's root may lack.
		"--oom-score-adjust=0",
		// Leave the host's network alone.
		"--iptables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none",
	}
}

// ping asks the Engine's /_ping over the socket: cheaper than a client.
func (d *Docker) ping(ctx context.Context) error {
	httpClient := http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", d.Socket)
		},
	}}
	defer httpClient.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ping: %s", resp.Status)
	}
	return nil
}

func (d *Docker) loadPauseImage(ctx context.Context) error {
	return putPauseImage(ctx, d.Dir, d.PauseImage, d.logger, func(ctx context.Context, tarPath string) error {
		f, err := os.Open(tarPath)
		if err != nil {
			return err
		}
		defer f.Close()
		return fixture.LoadImageDocker(ctx, d.Host, f)
	})
}

// Stop removes every container through the API, stops dockerd, then kills
// whatever is left in its cgroup parent or names its Dir, unmounts
// everything under Dir and removes Dir. It is safe to call twice.
func (d *Docker) Stop(ctx context.Context) error {
	return stopInstance(ctx, instance{name: "docker", dir: d.Dir, daemon: d.daemon, then: d.containerd, record: d.record, logger: d.logger},
		d.removeAllContainers)
}

// removeAllContainers force-removes every container, by ID, while the
// daemon still runs, so it unmounts and forgets them itself.
func (d *Docker) removeAllContainers(ctx context.Context) error {
	select {
	case <-d.daemon.exited:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	containers, err := cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range containers {
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}
