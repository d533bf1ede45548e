package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// A sandbox the Engine lists as "removing" is Ready while its process
// still runs in the container's cgroup, as GetSandbox's inspection says
// (State.Running), and NotReady once the process is gone: List and Get
// agree. The process here is a real one, in a cgroup named after a
// 64-hex container ID as runc names it.
func TestRemovingSandboxIsReadyWhileItsProcessRuns(t *testing.T) {
	testsupport.RequireRoot(t, "sleep") // a cgroup of its own
	id := strings.Repeat("ab12", 16)
	cgroup := containerCgroup(t, id)
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	if err := os.WriteFile(filepath.Join(cgroup, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := &container.Summary{ID: id, State: container.StateRemoving, Names: []string{"/k8s_POD_web_default_uid_0"}}
	inspected := inspection{pid: sleep.Process.Pid}
	if got := factsFromSummary(summary, inspected).sandbox(); got.State != runtime.StateReady {
		t.Errorf("removing sandbox with its process running: %s, want Ready (as inspection's Running says)", got.State)
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if got := factsFromSummary(summary, inspected).sandbox(); got.State != runtime.StateNotReady {
		t.Errorf("removing sandbox whose process exited: %s, want NotReady", got.State)
	}
	summary.State = container.StateExited
	if got := factsFromSummary(summary, inspected).sandbox(); got.State != runtime.StateNotReady {
		t.Errorf("exited sandbox: %s, want NotReady", got.State)
	}
}

// containerCgroup creates a cgroup named after id in the pids hierarchy
// (cgroup v1) or the unified one, removed with the test.
func containerCgroup(t *testing.T, id string) string {
	t.Helper()
	root := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		root = filepath.Join(root, "pids")
	}
	dir := filepath.Join(root, "sandboxipam-test-"+strconv.Itoa(os.Getpid()), id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		testsupport.SkipOrFail(t, "cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		_ = os.Remove(dir)
		_ = os.Remove(filepath.Dir(dir))
	})
	return dir
}
