package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// The pods' IPv6 ranges, beside the IPv4 ones: the docker fixture's
// (--pod-cidr takes both) and the private containerd's, each a /64 of
// fd00:c0f::/48 that no other test of the repository uses. Docker pods
// hold theirs only in their own network namespaces, containerd's pods in
// the namespace containerd runs in.
const (
	podCIDR6      = "fd00:c0f:1::/64"
	criPodSubnet  = "198.19.0.0/24"
	criPodSubnet6 = "fd00:c0f:2::/64"
)

// dualStackCNI is the CNI setup of the package's shared containerd: a
// bridge whose IPAM is familyipam (conformance/testdata/familyipam), which
// gives each pod the families its sandbox annotation asks for, so that
// dual-stack, IPv6-only and IPv4-only pods run side by side. Its directory
// holds the plugin's link (the only plugin containerd finds before
// /usr/lib/cni) and host-local's leases; TestMain removes it.
type dualStackCNI struct {
	dir  string
	once sync.Once
	err  error
}

// newDualStackCNI makes the setup's directory.
func newDualStackCNI() (*dualStackCNI, error) {
	dir, err := os.MkdirTemp("", "sbxipam-conf-cni-")
	if err != nil {
		return nil, fmt.Errorf("dual-stack CNI directory: %w", err)
	}
	return &dualStackCNI{dir: dir}, nil
}

func (c *dualStackCNI) binDir() string { return filepath.Join(c.dir, "bin") }

// options are the shared containerd's: the dual-stack config, with the
// plugin's directory searched first.
func (c *dualStackCNI) options() testenv.ContainerdOptions {
	return testenv.ContainerdOptions{CNIConfList: c.confList(), CNIBinDirs: []string{c.binDir()}}
}

// confList is the network config. The bridge asks containerd for the
// pod's annotations (the capability) and passes its whole config, with
// them, on to its IPAM plugin. hairpinMode makes the bridge plugin turn
// off duplicate address detection on the pod's eth0: otherwise it waits
// about a second per IPv6 pod for DAD to finish.
func (c *dualStackCNI) confList() []byte {
	ipam := map[string]any{
		"type":    "familyipam",
		"ranges":  [][]map[string]string{{{"subnet": criPodSubnet}}, {{"subnet": criPodSubnet6}}},
		"dataDir": filepath.Join(c.dir, "ipam"),
	}
	bridge := map[string]any{
		"type": "bridge", "bridge": "sbxipam0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
		"capabilities": map[string]bool{"io.kubernetes.cri.pod-annotations": true},
		"ipam":         ipam,
	}
	conf := map[string]any{"cniVersion": "1.0.0", "name": "sandboxipam-conformance-dualstack", "plugins": []any{bridge}}
	data, err := json.Marshal(conf)
	if err != nil {
		panic(fmt.Sprintf("dual-stack CNI config: %v", err)) // a literal of strings and maps always marshals
	}
	return data
}

// linkPlugin puts the built familyipam into the plugin directory, once;
// the containerd must not start before: it links the plugins it finds when
// it starts.
func (c *dualStackCNI) linkPlugin(t testing.TB) {
	t.Helper()
	plugin := binary(t, "familyipam")
	c.once.Do(func() {
		if c.err = os.MkdirAll(c.binDir(), 0o755); c.err == nil {
			c.err = os.Symlink(plugin, filepath.Join(c.binDir(), "familyipam"))
		}
	})
	if c.err != nil {
		t.Fatalf("link the familyipam CNI plugin: %v", c.err)
	}
}

// remove removes the setup's directory.
func (c *dualStackCNI) remove() error {
	return os.RemoveAll(c.dir)
}

// criContainerd returns the package's shared dual-stack containerd,
// linking its IPAM plugin first.
func criContainerd(t testing.TB) *testenv.Containerd {
	t.Helper()
	cni.linkPlugin(t)
	return containerd.Get(t)
}
