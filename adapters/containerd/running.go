package containerd

import (
	"sync"

	"github.com/containerd/containerd/api/types/task"

	"github.com/sandboxipam/sandboxipam/adapters/internal/proc"
)

// runningTasks remembers the tasks of running sandboxes. containerd
// answers a task query by asking the sandbox's shim, a process of its
// own: on a 100-pod node those round trips dominate a listing. A
// remembered task is trusted only while its process still lives in the
// sandbox's cgroup; a sandbox that stopped, or whose process cannot be
// seen from here, is asked about again.
type runningTasks struct {
	mu   sync.Mutex
	byID map[string]*task.Process
}

// lookup returns the sandbox's task if it is known to be running.
func (r *runningTasks) lookup(id string) (*task.Process, bool) {
	r.mu.Lock()
	process := r.byID[id]
	r.mu.Unlock()
	if process == nil || !proc.InContainer(int(process.GetPid()), id) {
		return nil, false
	}
	return process, true
}

// remember keeps a running task and forgets any other.
func (r *runningTasks) remember(id string, process *task.Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if process.GetStatus() != task.Status_RUNNING {
		delete(r.byID, id)
		return
	}
	if r.byID == nil {
		r.byID = make(map[string]*task.Process)
	}
	r.byID[id] = process
}

// retain forgets every sandbox not in listed.
func (r *runningTasks) retain(listed map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.byID {
		if !listed[id] {
			delete(r.byID, id)
		}
	}
}
