package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// crioConfigTemplate keeps every piece of CRI-O's state under the
// instance's Dir; --config-dir points at an empty directory of its own, so
// no drop-in of the host's applies. Each setting is here because a private
// instance went wrong without it, or would write outside Dir:
//   - default_runtime "runc": the default, crun, is not installed and its
//     absence is fatal at start;
//   - cgroup_manager "cgroupfs" and monitor_cgroup "pod": the systemd
//     defaults fail every RunPodSandbox without systemd;
//   - runtime_path: a wrapper that clears the infra container's
//     oomScoreAdj (-998), which root without CAP_SYS_RESOURCE cannot set
//     ("can't get final child's PID from pipe: EOF", as containerd's
//     restrict_oom_score_adj works around);
//   - apparmor_profile "unconfined": the default would install CRI-O's
//     profile into the host's kernel where AppArmor is enabled;
//   - drop_infra_ctr false: every sandbox gets a pause process and runc
//     state under the runtime root, where teardown finds its ID (and the
//     CNI results to remove) even after the daemon was killed;
//   - signature_policy_dir, decryption_keys_path, hooks_dir, cdi_spec_dirs,
//     namespaces_dir, the exits, attach, log and version paths: each
//     defaults to a host path CRI-O creates or writes.
const crioConfigTemplate = `[crio]
root = %[1]s
runroot = %[2]s
storage_driver = "overlay"
log_dir = %[3]s
version_file = %[4]s
version_file_persist = %[5]s
clean_shutdown_file = %[6]s

[crio.api]
listen = %[7]s
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
drop_infra_ctr = false
selinux = false
apparmor_profile = "unconfined"
pinns_path = %[8]s
namespaces_dir = %[9]s
container_exits_dir = %[10]s
container_attach_socket_dir = %[11]s
decryption_keys_path = %[12]s
hooks_dir = [%[13]s]
cdi_spec_dirs = [%[14]s]
irqbalance_config_file = ""
irqbalance_config_restore_file = ""
log_to_journald = false

[crio.runtime.runtimes.runc]
runtime_path = %[15]s
runtime_type = "oci"
runtime_root = %[16]s
monitor_path = %[17]s
monitor_cgroup = "pod"

[crio.image]
pause_image = %[18]s
signature_policy_dir = %[19]s

[crio.network]
network_dir = %[20]s
plugin_dirs = [%[21]s]

[crio.metrics]
enable_metrics = false

[crio.nri]
enable_nri = false
`

// crioConfig renders the config file of c. Paths are quoted as TOML basic
// strings (strconv.Quote's escapes are a subset TOML accepts).
func crioConfig(c *CRIO, pinns, conmon string) string {
	q := strconv.Quote
	d := func(elem ...string) string { return q(filepath.Join(append([]string{c.Dir}, elem...)...)) }
	return fmt.Sprintf(crioConfigTemplate,
		d("root"), d("runroot"), d("pods-logs"),
		d("run", "version"), d("version"), d("clean.shutdown"),
		q(c.Address),
		q(pinns), d("ns"), d("run", "exits"), d("run", "attach"),
		d("keys"), d("hooks"), d("cdi"),
		q(c.runcWrapper()), q(c.runtimeRoot()), q(conmon),
		q(c.PauseImage), d("policies"),
		q(c.CNIConfDir), q(c.CNIBinDir),
	)
}

// runcWrapperScript runs runc after replacing, in a bundle it is about to
// create, the OCI process's oomScoreAdj with the wrapper's own value: CRI-O
// gives every infra container -998, and cri-dockerd every sandbox
// container -998 through dockerd, which only a process with
// CAP_SYS_RESOURCE may set (a VM's or container's root may lack it).
// It also empties the bundle's hugepageLimits: kubelet limits every
// container to 0 of each hugepage size, and CRI-O passes that on because
// /proc/cgroups lists hugetlb, but on a hybrid host whose hugetlb
// controller is only in the unified hierarchy runc's cgroupfs (v1) manager
// cannot set it ("cannot set hugetlb limit"; containerd's CRI drops the
// limits itself, tolerate_missing_hugetlb_controller). The config is
// indented JSON: sed -z reads it whole, and the limits hold no "]".
const runcWrapperScript = `#!/bin/sh
bundle=
prev=
for arg in "$@"; do
	case "$prev" in --bundle|-b) bundle=$arg ;; esac
	case "$arg" in --bundle=*) bundle=${arg#--bundle=} ;; esac
	prev=$arg
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
	own=$(cat /proc/self/oom_score_adj)
	sed -i -E "s/\"oomScoreAdj\": *-?[0-9]+/\"oomScoreAdj\": $own/" "$bundle/config.json"
	sed -i -z -E "s/\"hugepageLimits\": *\\[[^]]*\\]/\"hugepageLimits\": []/" "$bundle/config.json"
fi
exec %s "$@"
`

// writeRuncWrapper writes the runc wrapper CRI-O runs as its runtime.
func (c *CRIO) writeRuncWrapper(runc string) error {
	return writeRuncWrapper(c.runcWrapper(), runc)
}

// writeRuncWrapper writes runcWrapperScript, running runc, to path.
func writeRuncWrapper(path, runc string) error {
	script := fmt.Sprintf(runcWrapperScript, strconv.Quote(runc))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write runc wrapper: %w", err)
	}
	return nil
}

func (c *CRIO) runcWrapper() string { return filepath.Join(c.Dir, "runc-wrapper") }

// runtimeRoot is runc's state directory: one level below the record's
// RuncRoot, where teardown looks for namespace/ID/state.json as it does
// under containerd's.
func (c *CRIO) runtimeRoot() string { return filepath.Join(c.Dir, "runc", crioRuncNamespace) }

// crioRuncNamespace names the runc state directory under RuncRoot.
const crioRuncNamespace = "crio"
