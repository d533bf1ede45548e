package release_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	kubernetes "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/release"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

// TestChangelogNamesEveryRelease: CHANGELOG.md has a section for the
// previous release and this one, newest first, and the previous one's
// names the commit it was cut from, so an operator can find its tree.
func TestChangelogNamesEveryRelease(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testsupport.Root(t), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := changelogSections(string(data))
	current, ok := sections[release.Current.Version]
	if !ok {
		t.Errorf("CHANGELOG.md has no section \"## %s\" for this tree's release; sections: %v", release.Current.Version, keys(sections))
	}
	previous, ok := sections[release.Previous.Version]
	if !ok {
		t.Fatalf("CHANGELOG.md has no section \"## %s\" for the previous release; sections: %v", release.Previous.Version, keys(sections))
	}
	if short := release.Previous.Commit[:7]; !strings.Contains(previous.text, short) {
		t.Errorf("CHANGELOG.md's %s section does not name its commit %s", release.Previous.Version, short)
	}
	if current.at > previous.at {
		t.Errorf("CHANGELOG.md lists %s before %s: newest first", release.Previous.Version, release.Current.Version)
	}
	if !strings.Contains(current.text, image.DefaultRef) {
		t.Errorf("CHANGELOG.md's %s section does not name the image %s an operator loads", release.Current.Version, image.DefaultRef)
	}
}

type section struct {
	at   int // byte offset of its heading
	text string
}

// changelogSections splits the changelog at its "## vX.Y.Z" headings.
func changelogSections(doc string) map[string]section {
	heading := regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+)\b.*$`)
	idx := heading.FindAllStringSubmatchIndex(doc, -1)
	out := map[string]section{}
	for i, m := range idx {
		end := len(doc)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[doc[m[2]:m[3]]] = section{at: m[0], text: doc[m[0]:end]}
	}
	return out
}

func keys(m map[string]section) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestImageTagIsTheRelease: this tree's release, the image make image
// builds and the image every rendered manifest references are one
// version, so applying this release's manifests over the previous one's
// changes the pod spec, and the DaemonSet rolls.
func TestImageTagIsTheRelease(t *testing.T) {
	want := "localhost/sandboxipam/sandboxipam:" + release.Current.Version
	if release.Current.Version != version.Release {
		t.Errorf("release.Current.Version %q, version.Release %q", release.Current.Version, version.Release)
	}
	if image.DefaultRef != want {
		t.Errorf("image.DefaultRef %q, want %q", image.DefaultRef, want)
	}
	if release.Current.Version == release.Previous.Version {
		t.Errorf("this release and the previous one are both %s", release.Current.Version)
	}
	overlays, err := kubernetes.Overlays()
	if err != nil {
		t.Fatal(err)
	}
	components, err := kubernetes.Components()
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range overlays {
		r, err := kubernetes.RenderWith(overlay, components...)
		if err != nil {
			t.Fatal(err)
		}
		spec := r.DaemonSet.Spec.Template.Spec
		images := map[string]string{}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			images["DaemonSet "+c.Name] = c.Image
		}
		if r.Reclaimer == nil {
			t.Fatalf("overlay %s with every component renders no reclaimer", overlay)
		}
		for _, c := range r.Reclaimer.Deployment.Spec.Template.Spec.Containers {
			images["reclaimer "+c.Name] = c.Image
		}
		for name, got := range images {
			if got != want {
				t.Errorf("overlay %s: %s runs %q, want %q", overlay, name, got, want)
			}
		}
	}
}

// TestPreviousReleaseBuilds builds the previous release from its own tree
// (cached by commit) and runs each binary with --version: each says the
// previous release's version, nothing else.
func TestPreviousReleaseBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testsupport.SkipOrFail(t, "cannot build the previous release: %v", err)
	}
	start := time.Now()
	bins, err := release.Previous.CachedBinaries(t.Context(), testsupport.Root(t))
	if errors.Is(err, release.ErrHistoryAbsent) {
		testsupport.SkipOrFail(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the previous release's binaries in %s (%s)", bins.Dir, time.Since(start).Round(time.Millisecond))
	adapters, err := filepath.Glob(filepath.Join(bins.Adapters, "*"))
	if err != nil || len(adapters) != 4 {
		t.Fatalf("adapters %q (%v), want the 4 of cmd/adapters", adapters, err)
	}
	for _, path := range append([]string{bins.IPAMD, bins.IPAMCtl, bins.Plugin}, adapters...) {
		out, err := exec.Command(path, "--version").CombinedOutput()
		line := strings.TrimSpace(string(out))
		if err != nil || !strings.HasSuffix(line, " "+release.Previous.Version) || strings.Contains(line, "\n") {
			t.Errorf("%s --version = %q, %v; want one line ending in %q", path, out, err, " "+release.Previous.Version)
		}
	}
}
