package kubernetes

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// hostNetworkSysctls are host settings a node would change were it not
// in a namespace of its own.
var hostNetworkSysctls = []string{
	"/proc/sys/net/ipv4/ip_forward",
	"/proc/sys/net/ipv6/conf/all/forwarding",
}

// guardHostNetwork fails the test unless the host's links, routes,
// forwarding settings and mounts are at its end what they were at its
// start. Mounts under /tmp are other tests' business, but for the
// cluster's own (sbxk8m-). Registered before the cluster starts, it runs
// after everything stopped.
func guardHostNetwork(t *testing.T) {
	t.Helper()
	before := hostNetworkState(t)
	t.Cleanup(func() {
		after := hostNetworkState(t)
		for what, was := range before {
			if now := after[what]; !slices.Equal(now, was) {
				t.Errorf("host %s changed:\nbefore\n  %s\nafter\n  %s", what, strings.Join(was, "\n  "), strings.Join(now, "\n  "))
			}
		}
	})
}

func hostNetworkState(t *testing.T) map[string][]string {
	t.Helper()
	state := map[string][]string{
		"links":       linesOf(run(t, "ip", "-o", "link", "show"), linkName),
		"IPv4 routes": linesOf(run(t, "ip", "-4", "route", "show", "table", "all"), nil),
		"IPv6 routes": linesOf(run(t, "ip", "-6", "route", "show", "table", "all"), nil),
		"mounts":      hostMounts(t),
	}
	for _, p := range hostNetworkSysctls {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		state[p] = []string{strings.TrimSpace(string(b))}
	}
	return state
}

// linkName keeps "index: name" of an "ip -o link" line: counters and
// flags such as carrier may change on their own.
func linkName(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return line
	}
	return f[0] + " " + f[1]
}

func linesOf(out string, keep func(string) string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if keep != nil {
			l = keep(l)
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return lines
}

// clusterMountPoint: a mount point the cluster's nodes mount over inside
// their namespaces, or one under the cluster's directories. Other tests
// on the machine mount elsewhere (/run/netns, their own /tmp dirs) while
// this one runs.
func clusterMountPoint(target string) bool {
	if strings.Contains(target, "/sbxk8m-") || strings.HasPrefix(target, "/proc/sys/") {
		return true
	}
	for _, p := range []string{"/etc", "/var", "/opt", "/run", "/etc/machine-id", "/run/containerd"} {
		if target == p {
			return true
		}
	}
	for _, d := range nodePrivateDirs {
		if target == d.path {
			return true
		}
	}
	return false
}

// hostMounts lists the host's mount points that clusterMountPoint names,
// with their types.
func hostMounts(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if target := fields[4]; !clusterMountPoint(target) {
			continue
		}
		target := fields[4]
		fstype := ""
		if i := slices.Index(fields, "-"); i >= 0 && i+1 < len(fields) {
			fstype = fields[i+1]
		}
		mounts = append(mounts, target+" "+fstype)
	}
	slices.Sort(mounts)
	return mounts
}
