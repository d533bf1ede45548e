package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	versionapi "github.com/containerd/containerd/api/services/version/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// ContainerdOptions configures StartContainerd.
type ContainerdOptions struct {
	// Dir holds all of the daemon's state; required, absolute, at most 64
	// bytes. It is wiped first if an earlier instance used it.
	Dir string
	// CNIConfList is the CNI network config (a conflist JSON). Default:
	// Debian's bridge plugin (bridge "sbxipam0", in the instance's own
	// network namespace) with host-local IPAM on 198.19.0.0/24, leases
	// under Dir.
	CNIConfList []byte
	// CNIBinDirs are searched for CNI plugins before /usr/lib/cni, e.g. a
	// directory holding a CNI plugin under test.
	CNIBinDirs []string
	// DisableCRI starts containerd with its CRI plugin disabled
	// (disabled_plugins), as Docker starts its own containerd: the
	// containerd API answers, CRI does not, and no network namespace, CNI
	// config or pause image is set up. For tests that an adapter refuses
	// such a containerd. Default: false.
	DisableCRI bool
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// InNode, when set, starts containerd inside a node's network and
	// mount namespaces (a test cluster's node) instead of a network
	// namespace of its own, with the node's CNI directories. No CNI
	// config is written and the network need not be ready: the node's
	// CNI (ipamd's conflist) comes later. Default: nil.
	InNode *NodeNamespaces
}

// NodeNamespaces are the namespaces of a test node that containerd and its
// CNI plugins run in, so that they see the node's own files.
type NodeNamespaces struct {
	// NetNS is the path of the node's network namespace. Required.
	NetNS string
	// MountNS is the path of the node's mount namespace, e.g.
	// /proc/PID/ns/mnt of the process that holds it. Required.
	MountNS string
	// CNIConfDir and CNIBinDir are the CNI directories as containerd sees
	// them inside the node; /etc/cni/net.d and /opt/cni/bin by default.
	CNIConfDir, CNIBinDir string
}

// Containerd is a running private containerd with its CRI plugin, the
// pause image imported, and a CNI config of its own. It runs inside a
// network namespace of its own (NetNSPath), so the bridge plugin's host
// side never touches the host's network; CNI plugins run there too, in the
// host's mount namespace, so they reach unix sockets by their host paths.
// Pod network namespaces are bind-mounted under Dir's state directory.
type Containerd struct {
	CRIDaemon         // Address is the gRPC socket; PauseImage also the sandbox_image
	Namespace  string // "k8s.io", where the CRI plugin keeps its containers
	WithoutCRI bool   // started with ContainerdOptions.DisableCRI
	inNode     bool   // started in a node's namespaces (ContainerdOptions.InNode)
}

// containerdNamespace is where the CRI plugin keeps images and containers.
const containerdNamespace = "k8s.io"

// StartContainerd creates a network namespace, writes a config and CNI
// setup under opts.Dir, starts containerd inside that namespace, imports
// the pause image and waits until CRI reports the runtime and network
// ready.
func StartContainerd(ctx context.Context, opts ContainerdOptions) (*Containerd, error) {
	logger := loggerOrDiscard(opts.Logger)
	sweepStale(ctx, logger)
	c := newContainerd(opts.Dir, logger)
	start := func(ctx context.Context) error { return c.start(ctx, opts) }
	if err := launch(ctx, "containerd", c.record, start, c.Stop); err != nil {
		return nil, err
	}
	return c, nil
}

func newContainerd(dir string, logger *slog.Logger) *Containerd {
	c := &Containerd{CRIDaemon: newCRIDaemon("containerd", newRecord("containerd", dir), "containerd.sock", logger), Namespace: containerdNamespace}
	c.record.ShimAddress, c.record.ShimNamespace, c.record.RuncRoot = c.Address, c.Namespace, c.runcRoot()
	return c
}

func (c *Containerd) runcRoot() string { return filepath.Join(c.Dir, "runc") }

func (c *Containerd) start(ctx context.Context, opts ContainerdOptions) error {
	if err := writeRecord(c.record); err != nil {
		return err
	}
	if opts.DisableCRI {
		return c.startWithoutCRI(ctx)
	}
	if opts.InNode != nil {
		return c.startInNode(ctx, *opts.InNode)
	}
	if err := c.prepareNetwork(ctx, opts.CNIConfList, opts.CNIBinDirs); err != nil {
		return err
	}
	configPath, err := c.writeConfig(containerdConfig(c))
	if err != nil {
		return err
	}
	began, err := c.run("containerd.log", "nsenter", "--net="+c.NetNSPath, "containerd", "--config", configPath)
	if err != nil {
		return err
	}
	return c.waitUsable(ctx, began, true, c.importPauseImage)
}

// writeConfig writes config as Dir's config.toml and returns its path.
func (c *Containerd) writeConfig(config string) (string, error) {
	configPath := filepath.Join(c.Dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	return configPath, nil
}

// startInNode starts containerd in a node's namespaces (ContainerdOptions.InNode).
func (c *Containerd) startInNode(ctx context.Context, node NodeNamespaces) error {
	if node.NetNS == "" || node.MountNS == "" {
		return errors.New("ContainerdOptions.InNode needs NetNS and MountNS")
	}
	c.NetNSPath, c.CNIConfDir, c.CNIBinDir, c.inNode = node.NetNS, node.CNIConfDir, node.CNIBinDir, true
	if c.CNIConfDir == "" {
		c.CNIConfDir = "/etc/cni/net.d"
	}
	if c.CNIBinDir == "" {
		c.CNIBinDir = "/opt/cni/bin"
	}
	configPath, err := c.writeConfig(containerdConfig(c))
	if err != nil {
		return err
	}
	began, err := c.run("containerd.log", "nsenter", "--net="+node.NetNS, "--mount="+node.MountNS, "containerd", "--config", configPath)
	if err != nil {
		return err
	}
	return c.waitUsable(ctx, began, false, c.importPauseImage)
}

// startWithoutCRI starts containerd with the config Docker's own
// containerd gets (CRI plugin disabled) and waits until its Version
// service answers.
func (c *Containerd) startWithoutCRI(ctx context.Context) error {
	c.WithoutCRI = true
	configPath, err := c.writeConfig(dockerContainerdConfig(c.Dir, c.Address))
	if err != nil {
		return err
	}
	c.name = "containerd without CRI"
	began, err := c.run("containerd.log", "containerd", "--config", configPath)
	if err != nil {
		return err
	}
	daemon := c.daemon
	if err := daemon.waitReady(ctx, func(ctx context.Context) error { return dialUnix(ctx, c.Address) }); err != nil {
		return err
	}
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("containerd client: %w", err)
	}
	defer conn.Close()
	versionService := versionapi.NewVersionClient(conn)
	answers := func(ctx context.Context) error {
		_, err := versionService.Version(ctx, &emptypb.Empty{})
		return err
	}
	if err := daemon.waitReady(ctx, answers); err != nil {
		return err
	}
	c.logger.Info("containerd without CRI answers", "after", time.Since(began), "endpoint", c.Endpoint)
	return nil
}

func (c *Containerd) importPauseImage(ctx context.Context) error {
	return putPauseImage(ctx, c.Dir, c.PauseImage, c.logger, func(ctx context.Context, tarPath string) error {
		return runCommand(ctx, "ctr", "--address", c.Address, "--namespace", c.Namespace, "images", "import", tarPath)
	})
}

// writeCNIFiles writes conf (default: defaultCNIConfList, leases under
// dir) into confDir and links the plugins of binDirs, then Debian's, into
// binDir.
func writeCNIFiles(dir, confDir, binDir string, conf []byte, binDirs []string) error {
	if conf == nil {
		var err error
		if conf, err = defaultCNIConfList(filepath.Join(dir, "cni", "ipam")); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return fmt.Errorf("CNI conf dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-"+cniNetworkName+".conflist"), conf, 0o644); err != nil {
		return fmt.Errorf("write CNI config: %w", err)
	}
	dirs := make([]string, 0, len(binDirs)+1)
	for _, d := range binDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("CNI bin dir %s: %w", d, err)
		}
		dirs = append(dirs, abs)
	}
	return linkCNIPlugins(binDir, append(dirs, DefaultCNIBinDir))
}

// createNetNS creates a network namespace bound to path, with loopback up
// (containerd's stream server listens on 127.0.0.1). unshare binds the
// namespace and exits; no mount namespace is created, unlike "ip netns
// exec", so the daemon's mounts stay visible to the harness.
func createNetNS(ctx context.Context, path string) error {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return fmt.Errorf("netns file: %w", err)
	}
	if err := runCommand(ctx, "unshare", "--net="+path, "true"); err != nil {
		return fmt.Errorf("create netns: %w", err)
	}
	if err := runCommand(ctx, "nsenter", "--net="+path, "ip", "link", "set", "lo", "up"); err != nil {
		return fmt.Errorf("netns loopback: %w", err)
	}
	// The default CNI bridge, made here with its MAC set. A bridge the
	// bridge plugin creates takes the lowest MAC among its ports, so a
	// pod's veth joining changes it, and the plugin's CHECK of a pod added
	// just before fails ("Bridge interface sbxipam0 Mac doesn't match",
	// CRI-O's status check after a concurrent ADD, seen once in CI). A
	// MAC set when the link is made stays; the plugin adopts a bridge that
	// exists.
	if err := runCommand(ctx, "nsenter", "--net="+path, "ip", "link", "add", defaultBridgeName, "address", defaultBridgeMAC, "type", "bridge"); err != nil {
		return fmt.Errorf("netns bridge %s: %w", defaultBridgeName, err)
	}
	return nil
}

// Stop stops and removes every pod through CRI, stops containerd, then
// kills whatever is left in its cgroup parent or names its Dir (shims),
// unmounts everything under Dir (pod netns, rootfs, its own netns) and
// removes Dir. It is safe to call twice.
func (c *Containerd) Stop(ctx context.Context) error {
	if c.WithoutCRI {
		return c.stop(ctx, func(context.Context) error { return nil })
	}
	return c.stop(ctx, nil)
}
