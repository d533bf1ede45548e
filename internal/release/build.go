package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// VersionVar is the variable a release's binaries report for --version,
// set at link time (the Makefile's GOFLAGS_BUILD links the same one).
const VersionVar = "github.com/sandboxipam/sandboxipam/internal/version.override"

// Binaries are the paths of one release's binaries as BuildBinaries lays
// them out in its output directory.
type Binaries struct {
	// Dir is the output directory.
	Dir string
	// IPAMD, IPAMCtl and Plugin are ipamd, ipamctl and the CNI plugin
	// (sandboxipam, static).
	IPAMD, IPAMCtl, Plugin string
	// Adapters is the directory of the runtime adapters, one binary per
	// cmd/adapters/<name>, as make build lays them out.
	Adapters string
	// TestAdapter is the release's test adapter (a runtime read from a
	// JSON state file), for tests that run its ipamd without a runtime.
	TestAdapter string
}

// BinariesIn names the binaries BuildBinaries writes into dir.
func BinariesIn(dir string) Binaries {
	return Binaries{
		Dir:         dir,
		IPAMD:       filepath.Join(dir, "ipamd"),
		IPAMCtl:     filepath.Join(dir, "ipamctl"),
		Plugin:      filepath.Join(dir, "sandboxipam"),
		Adapters:    filepath.Join(dir, "adapters"),
		TestAdapter: filepath.Join(dir, "testadapter"),
	}
}

// buildStep is one go build of BuildBinaries: packages, the directory
// (under outDir) they go to, and whether static, as the Makefile builds
// the CNI plugin.
type buildStep struct {
	pkgs   []string
	subdir string
	static bool
}

var buildSteps = []buildStep{
	{pkgs: []string{"./cmd/ipamd", "./cmd/ipamctl", "./internal/testadapter/cmd/testadapter"}},
	// exec'd per ADD and DEL: static, so no dynamic loader runs.
	{pkgs: []string{"./cmd/sandboxipam"}, static: true},
	{pkgs: []string{"./cmd/adapters/..."}, subdir: "adapters"},
}

// BuildBinaries builds the release's ipamd, ipamctl, CNI plugin, adapters
// and test adapter from tree (a checkout of r, as Checkout writes it) into
// outDir, with that tree's own go.mod, each stamped with r.Version. The
// tree has no .git, so VCS stamping is off; the build cache is the
// caller's (GOCACHE, GOFLAGS), so dependencies this tree shares with the
// running one are not compiled again.
func (r Release) BuildBinaries(ctx context.Context, tree, outDir string) (Binaries, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return Binaries{}, fmt.Errorf("build release %s: %w", r.Version, err)
	}
	for _, step := range buildSteps {
		dir := filepath.Join(outDir, step.subdir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Binaries{}, fmt.Errorf("build release %s: %w", r.Version, err)
		}
		args := []string{"build", "-buildvcs=false", "-ldflags", "-X " + VersionVar + "=" + r.Version, "-o", dir + string(filepath.Separator)}
		cmd := exec.CommandContext(ctx, goTool, append(args, step.pkgs...)...)
		cmd.Dir = tree
		if step.static {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return Binaries{}, fmt.Errorf("build release %s in %s: go %s: %w\n%s",
				r.Version, tree, strings.Join(append(args, step.pkgs...), " "), err, out)
		}
	}
	return BinariesIn(outDir), nil
}

// CacheDir is where r's tree, binaries and image are kept across runs, by
// commit: ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/releases/<commit>,
// holding tree/ (Tree), bin/ (CachedBinaries) and whatever else a test
// builds from the tree (the upgrade test's image), each in a directory of
// its own made whole by one rename, so that none of them removes another.
// A commit's tree never changes, so nothing there goes stale; remove the
// directory to rebuild from nothing.
func (r Release) CacheDir() (string, error) {
	if r.Commit == "" {
		return "", fmt.Errorf("release %s has no commit: it is this tree, never cached", r.Version)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache of release %s: %w", r.Version, err)
	}
	return filepath.Join(base, "sandboxipam", "releases", r.Commit), nil
}

// Tree returns r's tree, checked out from repoRoot's history into
// CacheDir()/tree the first time. The path stays the same across runs, so
// go's build cache serves its packages too. ErrHistoryAbsent, wrapped, when
// the repository lacks the commit.
func (r Release) Tree(ctx context.Context, repoRoot string) (string, error) {
	cache, err := r.CacheDir()
	if err != nil {
		return "", err
	}
	tree := filepath.Join(cache, "tree")
	return tree, once(tree, func(tmp string) error { return r.Checkout(ctx, repoRoot, tmp) })
}

// CachedBinaries returns r's binaries, built by BuildBinaries from Tree
// into CacheDir()/bin the first time.
func (r Release) CachedBinaries(ctx context.Context, repoRoot string) (Binaries, error) {
	tree, err := r.Tree(ctx, repoRoot)
	if err != nil {
		return Binaries{}, err
	}
	cache, err := r.CacheDir()
	if err != nil {
		return Binaries{}, err
	}
	bin := filepath.Join(cache, "bin")
	err = once(bin, func(tmp string) error {
		_, err := r.BuildBinaries(ctx, tree, tmp)
		return err
	})
	return BinariesIn(bin), err
}

// once makes dir by fill, at most once across processes: an exclusive
// lock on a file beside dir makes a second process (make test runs two
// packages at once, and the upgrade test may run beside them) wait for the
// first's build instead of doing it again, and fill writes a fresh
// temporary directory that is renamed to dir only when fill succeeded, so
// dir is complete whenever it exists.
func once(dir string, fill func(tmp string) error) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(parent, "."+filepath.Base(dir)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	defer lock.Close() // and with it the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("cache %s: lock: %w", dir, err)
	}
	if _, err := os.Stat(dir); err == nil {
		return nil // made while this process waited
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	if err := fill(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	return nil
}
