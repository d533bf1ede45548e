// Package proc answers, from /proc, whether a process still belongs to a
// container. Adapters use it to keep trusting what they learnt about a
// running sandbox (its process ID, that it runs) without asking the
// runtime again on every listing.
package proc

import (
	"bytes"
	"fmt"
	"os"
)

// InContainer reports whether process pid lives in the cgroup of the
// container with full ID id. Runtimes name a container's cgroup after its
// ID with either cgroup driver: "<parent>/<id>" with cgroupfs,
// "<prefix>-<id>.scope" or "<parent>:<prefix>:<id>" with systemd. A
// process that exited, or whose PID was reused by another, fails the
// test. So does every process where this one cannot see the container's
// (another PID or cgroup namespace): callers then ask the runtime.
func InContainer(pid int, id string) bool {
	if pid <= 0 || len(id) < 12 {
		return false
	}
	cgroups, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && bytes.Contains(cgroups, []byte(id))
}
