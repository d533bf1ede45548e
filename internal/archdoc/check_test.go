package archdoc_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/archdoc"
)

// basePage is true of testdata/mod; each case breaks it in one place.
const basePage = "# The test module\n\n" +
	"| package | what it owns | imports (project packages) |\n" +
	"| --- | --- | --- |\n" +
	"| `a` | `T.M`, `Run` (`a/a.go`) | `b` |\n" +
	"| `b` | `Do` | none |\n" +
	"| `c` | nothing | none |\n\n" +
	"1. `a/a.go` `Run` calls `b.Do`; `T.M`, the field `F`, `a/other.go` `Other`.\n" +
	"2. `c` is alone (`runtime_gone` and `GET /v1/x` are prose).\n\n" +
	"```\n" +
	"a ─┬─> b     (the only edge)\n" +
	"   └─> b\n" +
	"```\n"

// pageBreaks break basePage one way each, with the problems Check must
// report, one substring per problem, in order.
var pageBreaks = []struct {
	name, old, new string
	want           []string // one substring per problem, in order
}{
	{"true page", "", "", nil},
	{"renamed function", "`Run` calls", "`Start` calls",
		[]string{"line 9: `Start` is not declared in a/a.go, the file named before it; no file of the module declares it"}},
	{"name in another file of the package", "`a/other.go` `Other`", "`Other`",
		[]string{"line 9: `Other` is not declared in a/a.go, the file named before it; it is declared in a/other.go"}},
	{"renamed method", "; `T.M`,", "; `T.Move`,",
		[]string{"line 9: `T.Move` is not declared in a/a.go"}},
	{"qualified name gone", "`b.Do`", "`b.Done`",
		[]string{"line 9: `b.Done` is not declared in package b"}},
	{"name before any file", "2. `c` is alone", "2. `Run` is alone",
		[]string{"line 10: `Run` comes before any file or package in its step: name the file first, or qualify it with its package's name; it is declared in a/a.go"}},
	{"missing file", "`a/other.go`", "`a/gone.go`",
		[]string{"line 9: file a/gone.go does not exist", "line 9: `Other` is not declared in a/a.go"}},
	{"package missing from the map", "| `c` | nothing | none |\n", "",
		[]string{"package c is missing from the package tables: add the row | `c` | what it owns | none |"}},
	{"row for a package that does not exist", "| `c` | nothing | none |\n", "| `c` | nothing | none |\n| `d` | gone | none |\n",
		[]string{"line 8: the row's package d is not a package of the module"}},
	{"import cell lists a false edge", "| `b` | `Do` | none |", "| `b` | `Do` | `c` |",
		[]string{"line 6: row b: its imports cell should be none (it does not import c)"}},
	{"import cell lacks a real edge", "`b` |\n", "none |\n",
		[]string{"line 5: row a: its imports cell should be `b` (it imports b, not listed)"}},
	{"diagram draws a false edge", "   └─> b", "   └─> c",
		[]string{"line 14: the diagram draws a ─> c, but a does not import c"}},
	{"prose names a gone package", "2. `c` is alone", "2. `a/gone` is alone",
		[]string{"line 10: package a/gone is not a package of the module"}},
	{"prose names a renamed package", "2. `c` is alone", "2. `x/c` is alone",
		[]string{"line 10: package x/c is not a package of the module; a package of that name: c"}},
	{"diagram names a gone package", "   └─> b", "   └─> d",
		[]string{"line 14: the diagram's d is not a package of the module"}},
}

// TestCheckFindsWhatThePageGetsWrong: each break of the page is reported
// once, at its line, with what to write instead; the true page passes.
func TestCheckFindsWhatThePageGetsWrong(t *testing.T) {
	m, err := archdoc.LoadModule("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.PackageList(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("packages = %v, want a, b, c (tools/ is its own module)", got)
	}
	for _, tc := range pageBreaks {
		t.Run(tc.name, func(t *testing.T) {
			page := basePage
			if tc.old != "" {
				if !strings.Contains(page, tc.old) {
					t.Fatalf("the base page lacks %q", tc.old)
				}
				page = strings.Replace(page, tc.old, tc.new, 1)
			}
			got := archdoc.Check(m, archdoc.ParsePage(page))
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, p := range got {
				if !strings.Contains(p.String(), tc.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p, tc.want[i])
				}
			}
		})
	}
}
