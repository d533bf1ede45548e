package doccheck_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/doccheck"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// tools are the binaries whose quoted calls are checked, by package.
var tools = map[string]string{
	"ipamctl":             "./cmd/ipamctl",
	"ipamd":               "./cmd/ipamd",
	"sandboxipam-install": "./cmd/sandboxipam-install",
}

func toolNames() []string {
	var out []string
	for name := range tools {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func site(t *testing.T) *doccheck.Site {
	t.Helper()
	root := testsupport.Root(t)
	paths, err := doccheck.PagePaths(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := doccheck.LoadSite(root, paths)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func report(t *testing.T, problems []doccheck.Problem) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

// TestPageLinks: every relative link of README.md, BENCHMARKS.md and
// docs/*.md reaches a file, and its fragment a heading.
func TestPageLinks(t *testing.T) {
	s := site(t)
	report(t, s.CheckLinks())
	n := 0
	for _, p := range s.Pages {
		n += len(p.Links)
	}
	t.Logf("checked %d links on %d pages", n, len(s.Pages))
}

// TestPageMakeCommands: every quoted make command names a Makefile target.
func TestPageMakeCommands(t *testing.T) {
	s := site(t)
	f, err := os.Open(filepath.Join(s.Root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	targets, err := doccheck.MakeTargets(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"build", "test", "e2e-conformance", "image"} {
		if !targets[want] {
			t.Fatalf("MakeTargets lacks %s: %v", want, targets)
		}
	}
	report(t, doccheck.CheckMake(s.Calls(), targets))
}

// TestPageToolCommands: every quoted ipamctl subcommand, ipamd flag or
// subcommand and sandboxipam-install command, with its flags, is one the
// binary built from this tree takes.
func TestPageToolCommands(t *testing.T) {
	s := site(t)
	calls := doccheck.ToolCalls(s.Calls(), toolNames())
	if len(calls) < 20 {
		t.Fatalf("found %d calls of %v on the pages; the pages quote more: the extraction broke", len(calls), toolNames())
	}
	report(t, builtTools(t).Check(t.Context(), calls))
	t.Logf("checked %d quoted calls", len(calls))
}

func builtTools(t *testing.T) *doccheck.Tools {
	t.Helper()
	bins := map[string]string{}
	for name, pkg := range tools {
		bins[name] = testsupport.Binary(t, pkg)
	}
	return &doccheck.Tools{Bins: bins}
}

// brokenPage breaks each promise once; each line is a problem.
const brokenPage = "# Broken\n\n" +
	"## A `make` heading, twice\n\n## A `make` heading, twice\n\n" +
	"[ok](#a-make-heading-twice-1) [gone](missing.md) [bad anchor](#a-make-heading) [other](other.md#its-part)\n\n" +
	"```sh\n" +
	"make build && make no-such-target\n" +
	"sudo ipamctl status\n" +
	"kubectl -n kube-system exec \"$pod\" -c ipamd -- ipamctl pods --bogus\n" +
	"```\n\n" +
	"Run `ipamd --nope`, `ipamd frobnicate`, `ipamd config-reference`, `ipamd --config FILE` and\n" +
	"`sandboxipam-install remove-conflist --path x` (`CI=true make test`, `make`).\n"

// TestChecksCatchWhatIsWrong: a page with one of each fault gets one
// problem each, at its line, against the real Makefile and binaries; what
// is right passes.
func TestChecksCatchWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "page.md"), []byte(brokenPage), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.md"), []byte("# Other\n\n## Its part\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := doccheck.LoadSite(dir, []string{"page.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.CheckLinks() {
		got = append(got, p.String())
	}
	f, err := os.Open(filepath.Join(testsupport.Root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	targets, err := doccheck.MakeTargets(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range doccheck.CheckMake(s.Calls(), targets) {
		got = append(got, p.String())
	}
	for _, p := range builtTools(t).Check(t.Context(), doccheck.ToolCalls(s.Calls(), toolNames())) {
		got = append(got, p.String())
	}
	want := []string{
		"page.md:7: link missing.md: missing.md does not exist",
		"page.md:7: link #a-make-heading: page.md has no heading with the anchor #a-make-heading (its anchors that start alike: #a-make-heading-twice, #a-make-heading-twice-1)",
		"page.md:10: `make build && make no-such-target`: the Makefile has no target no-such-target",
		"page.md:11: `sudo ipamctl status`: ipamctl has no subcommand status",
		"page.md:12: `kubectl -n kube-system exec \"$pod\" -c ipamd -- ipamctl pods --bogus`: ipamctl pods takes no flag --bogus",
		"page.md:15: `ipamd --nope`: ipamd takes no flag --nope",
		"page.md:15: `ipamd frobnicate`: ipamd has no subcommand frobnicate",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}

// TestAnchors: headings get GitHub's anchors.
func TestAnchors(t *testing.T) {
	p := doccheck.ParsePage("x.md", "# What `.ci/run` does, and how long it takes\n"+
		"## Kubernetes' own network conformance tests\n"+
		"### Where a claim starts (issue 37)\n"+
		"## See [the docs](docs/README.md) -- now\n"+
		"```sh\n# not a heading\n```\n"+
		"## Où_vas-tu 2\n## Où_vas-tu 2\n")
	want := []string{
		"what-cirun-does-and-how-long-it-takes",
		"kubernetes-own-network-conformance-tests",
		"where-a-claim-starts-issue-37",
		"see-the-docs----now",
		"où_vas-tu-2",
		"où_vas-tu-2-1",
	}
	if !slices.Equal(p.Anchors, want) {
		t.Errorf("anchors = %q, want %q", p.Anchors, want)
	}
}
