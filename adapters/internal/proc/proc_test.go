package proc_test

import (
	"os"
	"testing"

	"github.com/sandboxipam/sandboxipam/adapters/internal/proc"
)

func TestInContainer(t *testing.T) {
	cgroups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if proc.InContainer(os.Getpid(), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") {
		t.Errorf("this test process is not in that container; its cgroups:\n%s", cgroups)
	}
	for _, pid := range []int{0, -1} {
		if proc.InContainer(pid, "0123456789abcdef") {
			t.Errorf("InContainer(%d) = true", pid)
		}
	}
	if proc.InContainer(os.Getpid(), "") {
		t.Error("an empty ID matches every cgroup")
	}
}
