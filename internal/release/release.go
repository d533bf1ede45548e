// Package release names sandboxipam's releases and pins the previous one by
// its commit in this repository, so the upgrade and rollback tests build the
// release an operator upgrades from out of the project's own history (its
// binaries, its image, its manifests), never from a registry.
//
// A release is a commit of main that passed CI; CHANGELOG.md says what an
// operator must know about each. When a new release is cut, Current becomes
// the new Previous (with the commit it was cut from), version.Release moves
// on to the next version (the image tag in deploy/kubernetes with it), and
// CHANGELOG.md gains its section; TestChangelogNamesEveryRelease and
// TestImageTagIsTheRelease keep them in step.
//
// The previous release's tree, binaries and image are cached by commit
// (CacheDir): e2e/compat runs its binaries against this tree's, and the
// three-node upgrade test in e2e/kubernetes builds its image there.
package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/sandboxipam/sandboxipam/internal/version"
)

// Release is one named release of the project.
type Release struct {
	// Version is what its binaries print for --version and its image's tag.
	Version string
	// Commit is the full commit of this repository it was cut from; empty
	// for the release this tree is becoming.
	Commit string
}

var (
	// Previous is the release an operator upgrades from to this tree, and
	// rolls back to: the tree CI passed on 2026-12-06 (stop 48, 2,775 s).
	Previous = Release{Version: "v0.1.0", Commit: "5353417e54050f78aae58a60afdec436bb984fa2"}
	// Current is the release this tree becomes once it lands: the version
	// its binaries and image tag carry (version.Release).
	Current = Release{Version: version.Release}
)

// ErrHistoryAbsent is returned by Checkout when the repository does not hold
// the release's commit: a shallow clone, or a copy of the tree without .git.
var ErrHistoryAbsent = errors.New("the repository's history does not hold the previous release's commit")

// Checkout writes the release's tree, as committed, into dir (which must
// exist and be empty), reading it from the git repository at repoRoot. It
// changes nothing in the repository: no worktree, no ref, no index.
func (r Release) Checkout(ctx context.Context, repoRoot, dir string) error {
	if r.Commit == "" {
		return fmt.Errorf("release %s has no commit: it is this tree", r.Version)
	}
	verify := exec.CommandContext(ctx, "git", "-C", repoRoot, "cat-file", "-e", r.Commit+"^{commit}")
	if out, err := verify.CombinedOutput(); err != nil {
		shallow, _ := exec.CommandContext(ctx, "git", "-C", repoRoot, "rev-parse", "--is-shallow-repository").Output()
		return fmt.Errorf("%w: release %s is commit %s (%s); git says: %s (shallow clone: %s). Fetch the full history (git fetch --unshallow) and run again",
			ErrHistoryAbsent, r.Version, r.Commit, err, strings.TrimSpace(string(out)), strings.TrimSpace(string(shallow)))
	}
	archive := exec.CommandContext(ctx, "git", "-C", repoRoot, "archive", "--format=tar", r.Commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	var errArchive, errUntar bytes.Buffer
	archive.Stderr, untar.Stderr = &errArchive, &errUntar
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return fmt.Errorf("checking out %s: tar: %w", r.Version, err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return fmt.Errorf("checking out %s: git archive %s: %w: %s", r.Version, r.Commit, err, strings.TrimSpace(errArchive.String()))
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("checking out %s: tar: %w: %s", r.Version, err, strings.TrimSpace(errUntar.String()))
	}
	if _, err := os.Stat(dir + "/go.mod"); err != nil {
		return fmt.Errorf("checking out %s: no go.mod in the tree: %w", r.Version, err)
	}
	return nil
}
