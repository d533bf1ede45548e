package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// containerdBase is how every private containerd's config begins: a
// version 2 config with root, state and the opt plugin's path (it would
// create /opt/containerd) under dir, and its gRPC and ttrpc sockets.
// top goes after state (disabled_plugins, say).
func containerdBase(dir, address, top string) string {
	q := strconv.Quote
	return fmt.Sprintf(`version = 2
root = %s
state = %s
%s
[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins."io.containerd.internal.v1.opt"]
  path = %s
`, q(filepath.Join(dir, "root")), q(filepath.Join(dir, "state")), top, q(address), q(address+".ttrpc"), q(filepath.Join(dir, "opt")))
}

// containerdCRITemplate is the CRI plugin's part of a private
// containerd's config, every path under the instance's Dir. Each setting
// is here because a private instance went wrong without it:
//   - restrict_oom_score_adj: root without CAP_SYS_RESOURCE cannot lower
//     oom_score_adj, and every sandbox failed with "can't get final
//     child's PID from pipe: EOF";
//   - runc options Root: runc state would land in /run/containerd/runc;
//   - netns_mounts_under_state_dir: pod netns would land in /run/netns;
//     off only for a node's containerd (InNode), whose /run is the node's
//     own tmpfs: there pod netns go to /var/run/netns as on a real node,
//     where ipamd's DaemonSet mounts them from.
const containerdCRITemplate = `
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[1]s
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = %[5]t

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[2]s

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[3]s
    conf_dir = %[4]s
    max_conf_num = 1
`

// containerdConfig renders the config file of c. Paths are quoted as TOML
// basic strings (strconv.Quote's escapes are a subset TOML accepts).
func containerdConfig(c *Containerd) string {
	q := strconv.Quote
	return containerdBase(c.Dir, c.Address, "") +
		fmt.Sprintf(containerdCRITemplate, q(c.PauseImage), q(c.runcRoot()), q(c.CNIBinDir), q(c.CNIConfDir), !c.inNode)
}

// dockerContainerdConfig is the config of the containerd under a private
// dockerd, and the one StartContainerd starts with DisableCRI: no CRI
// plugin, as Docker starts its own containerd, all state under dir.
func dockerContainerdConfig(dir, address string) string {
	return containerdBase(filepath.Join(dir, "containerd"), address, `disabled_plugins = ["io.containerd.grpc.v1.cri"]`+"\n")
}

const (
	// defaultBridgeName is the bridge the default CNI config creates, in
	// the instance's own network namespace.
	defaultBridgeName = "sbxipam0"
	// defaultBridgeMAC is its MAC (locally administered), set when
	// createNetNS makes it so that no port changes it.
	defaultBridgeMAC = "02:53:42:58:00:01"
	// defaultPodSubnet is inside 198.19.0.0/16 (198.18.0.0/15 is reserved
	// for benchmarks, never routed on the internet).
	defaultPodSubnet = "198.19.0.0/24"
	cniNetworkName   = "sandboxipam-testenv"
)

// defaultCNIConfList is Debian's bridge with host-local IPAM, its lease
// files under Dir. No ipMasq: that would need iptables.
func defaultCNIConfList(ipamDataDir string) ([]byte, error) {
	return namedCNIConfList(ipamDataDir, cniNetworkName)
}

// namedCNIConfList is defaultCNIConfList under another network name.
func namedCNIConfList(ipamDataDir, name string) ([]byte, error) {
	ipam := map[string]any{
		"type":    "host-local",
		"ranges":  [][]map[string]string{{{"subnet": defaultPodSubnet}}},
		"dataDir": ipamDataDir,
	}
	bridge := map[string]any{
		"type":      "bridge",
		"bridge":    defaultBridgeName,
		"isGateway": true,
		"ipMasq":    false,
		"ipam":      ipam,
	}
	conf := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{bridge}}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("default CNI config: %w", err)
	}
	return data, nil
}

// linkCNIPlugins fills binDir with symlinks to the plugins of dirs; the
// first dir holding a name wins (containerd 1.6 takes a single bin_dir).
func linkCNIPlugins(binDir string, dirs []string) error {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("CNI bin dir: %w", err)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("CNI plugins in %s: %w", dir, err)
		}
		for _, e := range entries {
			link := filepath.Join(binDir, e.Name())
			if _, err := os.Lstat(link); err == nil || e.IsDir() {
				continue
			}
			if err := os.Symlink(filepath.Join(dir, e.Name()), link); err != nil {
				return fmt.Errorf("CNI plugin %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}
