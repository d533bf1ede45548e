package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	// killWait bounds how long killed processes get to disappear.
	killWait = 10 * time.Second
	// shimSocketDir is where containerd 1.6 shims put their sockets,
	// whatever the daemon's own state dir: a hash of the daemon's address,
	// namespace and ID names each.
	shimSocketDir = "/run/containerd/s"
)

// teardown removes every trace of one instance, whether it was stopped
// cleanly before or its test binary was killed: processes whose command
// line names its Dir (the daemon, its shims, dockerd's containerd), every
// process in its cgroup parent, shim sockets, mounts under Dir, and Dir.
func teardown(ctx context.Context, rec instanceRecord) error {
	var errs []error
	if err := killProcessesReferencing(ctx, rec.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := killRuncContainers(ctx, rec.RuncRoot); err != nil {
		errs = append(errs, err)
	}
	if err := killCgroup(ctx, rec.CgroupParent); err != nil {
		errs = append(errs, err)
	}
	ids := runcContainerIDs(rec)
	removeShimSockets(rec.ShimAddress, rec.ShimNamespace, ids)
	removeCNICache(ids)
	removeCNINetworkCache(rec.CNINetwork)
	removeEmptyHostDirs(rec.HostDirs)
	if err := unmountUnder(rec.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(rec.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", rec.Dir, err))
	}
	return errors.Join(errs...)
}

// killProcessesReferencing SIGKILLs every process (but this one) whose
// command line contains dir, and waits until they are gone.
func killProcessesReferencing(ctx context.Context, dir string) error {
	needle := []byte(filepath.Clean(dir) + "/")
	find := func() []int {
		var pids []int
		for _, pid := range allPIDs() {
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if err == nil && bytes.Contains(cmdline, needle) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	if err := killUntilGone(ctx, find); err != nil {
		return fmt.Errorf("kill processes using %s: %w", dir, err)
	}
	return nil
}

func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killUntilGone SIGKILLs what find returns until it returns nothing. A
// killed process can linger as a zombie of its parent; zombies hold no
// mounts or sockets, so they count as gone.
func killUntilGone(ctx context.Context, find func() []int) error {
	ctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	// Processes announce their end to their parent only: poll.
	return testsupport.Poll(ctx, "processes gone after SIGKILL", func(context.Context) error {
		pids := livePIDs(find())
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return fmt.Errorf("processes %v survive SIGKILL", pids)
	})
}

// livePIDs drops zombies and processes that are already gone.
func livePIDs(pids []int) []int {
	var live []int
	for _, pid := range pids {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 0 && fields[0] != "Z" && fields[0] != "X" {
			live = append(live, pid)
		}
	}
	return live
}

// runcState is the part of runc's state.json that locates a container.
type runcState struct {
	InitPID     int               `json:"init_process_pid"`
	InitStart   uint64            `json:"init_process_start"`
	CgroupPaths map[string]string `json:"cgroup_paths"`
}

// killRuncContainers kills the init process of every container whose runc
// state lies under runcRoot, then removes its cgroups: this catches
// containers outside the instance's cgroup parent (created by a client
// that set none).
func killRuncContainers(ctx context.Context, runcRoot string) error {
	if runcRoot == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(runcRoot, "*", "*", "state.json"))
	var errs []error
	for _, path := range paths {
		data, err := os.ReadFile(path)
		var state runcState
		if err != nil || json.Unmarshal(data, &state) != nil || state.InitPID <= 0 {
			continue
		}
		// The PID may have been reused since: compare start times.
		if processStartTime(state.InitPID) == strconv.FormatUint(state.InitStart, 10) {
			if err := killUntilGone(ctx, func() []int { return []int{state.InitPID} }); err != nil {
				errs = append(errs, fmt.Errorf("kill container %s: %w", filepath.Base(filepath.Dir(path)), err))
				continue
			}
		}
		for _, dir := range state.CgroupPaths {
			if strings.HasPrefix(dir, cgroupRoot+"/") {
				_ = removeCgroupTree(dir)
			}
		}
	}
	return errors.Join(errs...)
}

// cgroupDirs returns the directory of parent in every cgroup hierarchy:
// one on cgroup v2, one per mounted controller on v1.
func cgroupDirs(parent string) []string {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(cgroupRoot, parent)}
	}
	entries, _ := os.ReadDir(cgroupRoot)
	var dirs []string
	for _, e := range entries {
		// Symlinks such as cpu -> cpu,cpuacct name a hierarchy twice.
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			dirs = append(dirs, filepath.Join(cgroupRoot, e.Name(), parent))
		}
	}
	return dirs
}

// killCgroup kills every process under the cgroup parent in every
// hierarchy, then removes its cgroups, deepest first.
func killCgroup(ctx context.Context, parent string) error {
	if parent == "" || parent == "/" {
		return nil
	}
	dirs := cgroupDirs(parent)
	find := func() []int {
		var pids []int
		for _, dir := range dirs {
			pids = append(pids, cgroupProcs(dir)...)
		}
		return pids
	}
	if err := killUntilGone(ctx, find); err != nil {
		return fmt.Errorf("kill cgroup %s: %w", parent, err)
	}
	var errs []error
	for _, dir := range dirs {
		if err := removeCgroupTree(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgroupProcs lists the processes in dir and all its descendants.
func cgroupProcs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroupTree rmdirs dir and its sub-cgroups, deepest first (a cgroup
// directory cannot be removed with os.RemoveAll: its files are not files).
func removeCgroupTree(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := rmdirCgroup(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// rmdirCgroup removes one empty cgroup. The kernel reports EBUSY for a
// moment after its last process was killed, until the exit completes.
func rmdirCgroup(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	// No event marks the end of the exit: poll the rmdir.
	return testsupport.Poll(ctx, "remove cgroup "+dir, func(context.Context) error {
		err := unix.Rmdir(dir)
		switch {
		case err == nil || errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY):
			return err
		}
		return fmt.Errorf("%w: %w", testsupport.ErrGiveUp, err)
	})
}

// runcContainerIDs lists the containers whose runc state lies under the
// instance's runc root: with CRI, sandboxes and app containers alike.
func runcContainerIDs(rec instanceRecord) []string {
	if rec.RuncRoot == "" {
		return nil
	}
	entries, _ := os.ReadDir(filepath.Join(rec.RuncRoot, rec.ShimNamespace))
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// removeShimSockets deletes the sockets of shims that were killed instead
// of exiting cleanly. The names follow containerd 1.6's
// shim.SocketAddress: a hash of daemon address, namespace and ID.
func removeShimSockets(address, namespace string, ids []string) {
	if address == "" {
		return
	}
	for _, id := range ids {
		sum := sha256.Sum256([]byte(filepath.Join(address, namespace, id)))
		_ = os.Remove(filepath.Join(shimSocketDir, fmt.Sprintf("%x", sum)))
	}
}

// cniCacheDir is where libcni caches each attachment's result until its
// CNI DEL; containerd 1.6 offers no setting to move it. A daemon killed
// before DEL leaves "<network>-<sandbox ID>-<interface>" files behind.
const cniCacheDir = "/var/lib/cni/results"

// removeCNICache deletes the cached results of the given sandbox IDs.
func removeCNICache(ids []string) {
	for _, id := range ids {
		matches, _ := filepath.Glob(filepath.Join(cniCacheDir, "*-"+id+"-*"))
		for _, path := range matches {
			_ = os.Remove(path)
		}
	}
}

// removeCNINetworkCache deletes every cached result of a network that
// belongs to one instance alone ("<network>-<ID>-<interface>").
func removeCNINetworkCache(network string) {
	if network == "" {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(cniCacheDir, network+"-*"))
	for _, path := range matches {
		_ = os.Remove(path)
	}
}

// removeEmptyHostDirs removes, deepest first, the directories a daemon
// created outside its Dir, unless something has been put in them since.
func removeEmptyHostDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = unix.Rmdir(dirs[i])
	}
}

// unmountUnder detaches every mount at or below dir, deepest first, until
// none is left (a detached parent can reveal mounts stacked beneath).
func unmountUnder(dir string) error {
	for round := 0; round < 5; round++ {
		points, err := mountPointsUnder(dir)
		if err != nil || len(points) == 0 {
			return err
		}
		for _, p := range points {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		}
	}
	points, _ := mountPointsUnder(dir)
	if len(points) > 0 {
		return fmt.Errorf("mounts remain under %s: %v", dir, points)
	}
	return nil
}

// mountPointsUnder reads this process's mount table: the daemons run in
// the same mount namespace, so their mounts are visible here.
func mountPointsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	dir = filepath.Clean(dir)
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
