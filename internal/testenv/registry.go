package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Errors about the Dir a caller hands to a Start function.
var (
	// ErrBadDir: Dir is relative, "/", too long for the sockets under it,
	// or holds files this package did not create.
	ErrBadDir = errors.New("unusable instance directory")
	// ErrDirInUse: a live process runs an instance in Dir.
	ErrDirInUse = errors.New("instance directory in use by a running process")
)

const (
	// registryDir holds one record per running instance. It lives on
	// /run's tmpfs, exactly as long as the cgroups and mounts it describes.
	registryDir = "/run/sandboxipam-testenv"
	// markerFile marks a Dir as created by this package, so a reused Dir is
	// wiped only when it is really ours.
	markerFile = ".sandboxipam-testenv"
	// maxDirLen leaves room for the deepest socket path under Dir (dockerd's
	// containerd socket) within the 107 bytes a unix socket path may hold.
	maxDirLen = 64
	// cgroupPrefix starts every cgroup parent this package creates.
	cgroupPrefix = "sandboxipam-testenv-"
)

// instanceRecord says how to tear down an instance without its daemon's
// help: which Dir, cgroup and shim sockets it owns, and which process owns
// it (the instance is stale once that process is gone).
type instanceRecord struct {
	Kind          string `json:"kind"`
	Dir           string `json:"dir"`
	CgroupParent  string `json:"cgroupParent"`
	ShimAddress   string `json:"shimAddress"`
	ShimNamespace string `json:"shimNamespace"`
	RuncRoot      string `json:"runcRoot"`
	// CNINetwork, when set, is a CNI network name of this instance's own:
	// teardown removes libcni's cached results under it.
	CNINetwork string `json:"cniNetwork,omitempty"`
	// HostDirs are directories outside Dir the daemon created (CRI-O's
	// /etc/crio/policies): teardown removes them when they are empty.
	HostDirs   []string `json:"hostDirs,omitempty"`
	OwnerPID   int      `json:"ownerPID"`
	OwnerStart string   `json:"ownerStart"`
}

// newRecord describes an instance of kind in dir owned by this process.
func newRecord(kind, dir string) instanceRecord {
	return instanceRecord{
		Kind:         kind,
		Dir:          dir,
		CgroupParent: "/" + cgroupPrefix + kind + "-" + dirHash(dir),
		OwnerPID:     os.Getpid(),
		OwnerStart:   processStartTime(os.Getpid()),
	}
}

func dirHash(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:4])
}

func recordPath(dir string) string {
	return filepath.Join(registryDir, dirHash(dir)+".json")
}

// processStartTime is field 22 of /proc/PID/stat: with the PID it names a
// process uniquely, even after the PID is reused.
func processStartTime(pid int) string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

func (r instanceRecord) ownerAlive() bool {
	start := processStartTime(r.OwnerPID)
	return start != "" && start == r.OwnerStart
}

func writeRecord(r instanceRecord) error {
	if err := os.MkdirAll(registryDir, 0o700); err != nil {
		return fmt.Errorf("record instance: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record instance: %w", err)
	}
	if err := os.WriteFile(recordPath(r.Dir), data, 0o600); err != nil {
		return fmt.Errorf("record instance: %w", err)
	}
	return nil
}

func readRecord(path string) (instanceRecord, error) {
	var r instanceRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("decode %s: %w", path, err)
	}
	return r, nil
}

// sweepStale tears down every recorded instance whose owner is gone.
func sweepStale(ctx context.Context, logger *slog.Logger) {
	paths, _ := filepath.Glob(filepath.Join(registryDir, "*.json"))
	for _, path := range paths {
		r, err := readRecord(path)
		if err != nil || r.ownerAlive() {
			continue
		}
		logger.Warn("tearing down a stale instance", "kind", r.Kind, "dir", r.Dir, "ownerPID", r.OwnerPID)
		if err := teardown(ctx, r); err != nil {
			logger.Warn("stale instance not fully removed", "dir", r.Dir, "err", err)
			continue
		}
		_ = os.Remove(path)
	}
	sweepOrphanCgroups(ctx, logger)
}

// sweepOrphanCgroups kills and removes cgroups of this package's prefix
// that no record claims. A record is written before its daemon starts and
// removed after its cgroups, so such a cgroup belongs to no live instance.
func sweepOrphanCgroups(ctx context.Context, logger *slog.Logger) {
	claimed := map[string]bool{}
	paths, _ := filepath.Glob(filepath.Join(registryDir, "*.json"))
	for _, path := range paths {
		if r, err := readRecord(path); err == nil {
			claimed[r.CgroupParent] = true
		}
	}
	seen := map[string]bool{}
	for _, hierarchy := range cgroupDirs("/") {
		entries, _ := os.ReadDir(hierarchy)
		for _, e := range entries {
			parent := "/" + e.Name()
			if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) || claimed[parent] || seen[parent] {
				continue
			}
			seen[parent] = true
			logger.Warn("removing an orphaned cgroup", "cgroup", parent)
			if err := killCgroup(ctx, parent); err != nil {
				logger.Warn("orphaned cgroup not fully removed", "cgroup", parent, "err", err)
			}
		}
	}
}

// prepareDir makes dir ready for a fresh instance of rec: it tears down an
// earlier instance in the same dir, then creates dir with its marker.
func prepareDir(ctx context.Context, rec instanceRecord) error {
	dir := rec.Dir
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" || len(dir) > maxDirLen {
		return fmt.Errorf("%w: %q must be a clean absolute path of at most %d bytes", ErrBadDir, dir, maxDirLen)
	}
	if earlier, err := readRecord(recordPath(dir)); err == nil && earlier.Dir == dir {
		if earlier.ownerAlive() && earlier.OwnerPID != os.Getpid() {
			return fmt.Errorf("%w: %s (pid %d)", ErrDirInUse, dir, earlier.OwnerPID)
		}
		if err := teardown(ctx, earlier); err != nil {
			return fmt.Errorf("tear down earlier instance in %s: %w", dir, err)
		}
	}
	if err := checkDirIsOurs(dir); err != nil {
		return err
	}
	if err := teardown(ctx, rec); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(rec.Kind+"\n"), 0o600); err != nil {
		return fmt.Errorf("mark %s: %w", dir, err)
	}
	return nil
}

// launch prepares rec's Dir and runs start; when start fails, stop undoes
// whatever it did. Its errors say "start what".
func launch(ctx context.Context, what string, rec instanceRecord, start, stop func(context.Context) error) error {
	if err := prepareDir(ctx, rec); err != nil {
		return fmt.Errorf("start %s: %w", what, err)
	}
	if err := start(ctx); err != nil {
		_ = stop(context.WithoutCancel(ctx))
		return fmt.Errorf("start %s: %w", what, err)
	}
	return nil
}

// checkDirIsOurs refuses to wipe a non-empty dir this package did not make.
func checkDirIsOurs(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadDir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
		return fmt.Errorf("%w: %s is not empty and was not created by testenv", ErrBadDir, dir)
	}
	return nil
}
