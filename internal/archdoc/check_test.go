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

// orderPage gives Steps's calls in the order it makes them, once as
// steps and once as steps nested in the step that names Steps.
const orderPage = "# Steps\n\n" +
	"1. `a/steps.go` `Steps` starts with `first`.\n" +
	"2. `a/steps.go` `second` answers.\n" +
	"3. `b.Do` ends it.\n\n" +
	"## Nested\n\n" +
	"1. `a/steps.go` `Steps`, in this order:\n" +
	"   1. `a/steps.go` `first`;\n" +
	"   2. `a/steps.go` `second`, then `b.Do`.\n\n" +
	"   Steps in order.\n" +
	"2. Nothing after.\n"

// TestCheckFindsStepsOutOfOrder: a numbered list, or one nested in a
// step, that gives two functions in the other order than the function
// its steps name calls them is reported at the later step, with the
// lines of the code; a page in the code's order passes, and so does a
// branch the code may take in either order.
func TestCheckFindsStepsOutOfOrder(t *testing.T) {
	m, err := archdoc.LoadModule("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"in order", "", "", nil},
		{"steps swapped",
			"2. `a/steps.go` `second` answers.\n3. `b.Do` ends it.\n", "2. `b.Do` ends it.\n3. `a/steps.go` `second` answers.\n",
			[]string{"line 5: step 3 gives `second` after step 2's `b.Do` (line 4), but `Steps` (a/steps.go) reaches it first (line 8, against line 9)"}},
		{"first step last",
			"1. `a/steps.go` `Steps` starts with `first`.\n2. `a/steps.go` `second` answers.\n", "1. `a/steps.go` `Steps` starts with `second`.\n2. `a/steps.go` `first` answers.\n",
			[]string{"line 4: step 2 gives `first` after step 1's `second` (line 3), but `Steps` (a/steps.go) reaches it first (line 7, against line 8)"}},
		{"nested steps swapped",
			"   1. `a/steps.go` `first`;\n   2. `a/steps.go` `second`, then `b.Do`.\n", "   1. `a/steps.go` `second`, then `b.Do`.\n   2. `a/steps.go` `first`;\n",
			[]string{"line 11: step 2 gives `first` after step 1's `second` (line 10), but `Steps` (a/steps.go) reaches it first (line 7, against line 8)"}},
		{"one step may name calls in any order",
			"2. `a/steps.go` `second` answers.\n3. `b.Do` ends it.\n", "2. `b.Do` comes of `a/steps.go` `second`.\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page := orderPage
			if tc.old != "" {
				if !strings.Contains(page, tc.old) {
					t.Fatalf("the order page lacks %q", tc.old)
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
