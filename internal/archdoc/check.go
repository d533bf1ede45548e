package archdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Problem is one thing the page says that the tree does not hold, worded
// as what to change.
type Problem struct {
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Msg) }

// Check returns every problem of the page against the module, in page
// order, the missing rows last. A page with package tables must give
// every package a row; a page without (internal/README.md) is checked for
// the names it gives only.
func Check(m *Module, page *Page) []Problem {
	c := &checker{m: m, parents: page.Parents}
	for _, u := range page.Units {
		c.unit(u)
	}
	c.order()
	for _, b := range page.Bad {
		c.addf(b.Line, "%q is not a package path: a table's first cell names one package in backticks; a diagram's segments are packages (comments go in parentheses)", b.Text)
	}
	for _, e := range page.Edges {
		c.edge(e)
	}
	rows := map[string]int{}
	for _, r := range page.Rows {
		if first, dup := rows[r.Package]; dup {
			c.addf(r.Line, "package %s has a second row (the first is on line %d): keep one", r.Package, first)
			continue
		}
		rows[r.Package] = r.Line
		c.row(r)
	}
	for _, dir := range m.PackageList() {
		if _, ok := rows[dir]; !ok && len(page.Rows) > 0 {
			c.addf(0, "package %s is missing from the package tables: add the row | `%s` | what it owns | %s |", dir, dir, c.importCell(dir))
		}
	}
	slices.SortStableFunc(c.problems, func(a, b Problem) int {
		return cmpLine(a.Line) - cmpLine(b.Line)
	})
	return c.problems
}

// cmpLine sorts the problems without a line (0) last.
func cmpLine(n int) int {
	if n == 0 {
		return 1 << 30
	}
	return n
}

type checker struct {
	m        *Module
	problems []Problem
	mentions []mention // the Go names the numbered lists give, in page order
	parents  map[int]Step
}

func (c *checker) addf(line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

// importCell is the imports cell a row for dir must hold.
func (c *checker) importCell(dir string) string {
	imps := c.m.ImportList(dir)
	if len(imps) == 0 {
		return "none"
	}
	return "`" + strings.Join(imps, "`, `") + "`"
}

// pkg reports whether dir is a package of the module, with a hint of
// where a package of that name is when it is not.
func (c *checker) pkg(line int, dir, what string) bool {
	if c.m.Packages[dir] != nil {
		return true
	}
	c.addf(line, "%s %s is not a package of the module%s", what, dir, c.samePackageName(dir))
	return false
}

func (c *checker) samePackageName(dir string) string {
	base := filepath.Base(dir)
	var near []string
	for _, d := range c.m.PackageList() {
		if filepath.Base(d) == base || c.m.Packages[d].Name == base {
			near = append(near, d)
		}
	}
	if len(near) == 0 {
		return ": fix or remove it"
	}
	return "; a package of that name: " + strings.Join(near, ", ")
}

// row checks that a table row's package exists and that its imports
// cell lists exactly the module packages it imports.
func (c *checker) row(r Row) {
	if !c.pkg(r.Line, r.Package, "the row's package") {
		return
	}
	real := c.m.Packages[r.Package].Imports
	listed := map[string]bool{}
	var extra, lacking []string
	for _, imp := range r.Imports {
		listed[imp] = true
		if imp != "none" && !real[imp] {
			extra = append(extra, imp)
		}
	}
	for _, imp := range c.m.ImportList(r.Package) {
		if !listed[imp] {
			lacking = append(lacking, imp)
		}
	}
	if len(extra)+len(lacking) == 0 {
		return
	}
	var why []string
	if len(lacking) > 0 {
		why = append(why, "it imports "+strings.Join(lacking, ", ")+", not listed")
	}
	if len(extra) > 0 {
		why = append(why, "it does not import "+strings.Join(extra, ", "))
	}
	c.addf(r.Line, "row %s: its imports cell should be %s (%s)", r.Package, c.importCell(r.Package), strings.Join(why, "; "))
}

// edge checks one diagram arrow.
func (c *checker) edge(e Edge) {
	if !c.pkg(e.Line, e.From, "the diagram's") || !c.pkg(e.Line, e.To, "the diagram's") {
		return
	}
	if !c.m.Packages[e.From].Imports[e.To] {
		c.addf(e.Line, "the diagram draws %s ─> %s, but %s does not import %s (it imports %s)", e.From, e.To, e.From, e.To, c.importCell(e.From))
	}
}

// file resolves a file span: from the module root, else in the scope's
// package. It returns the file's package and, for a Go file, the file.
func (c *checker) file(line int, text string, scope *scope) (*Package, *File, bool) {
	cands := []string{text}
	first, _, _ := strings.Cut(text, "/")
	if scope.pkg != nil && (!strings.Contains(text, "/") || !c.isDir(first)) {
		cands = append(cands, scope.pkg.Dir+"/"+text)
	}
	for _, cand := range cands {
		if _, err := os.Stat(filepath.Join(c.m.Root, filepath.FromSlash(cand))); err != nil {
			continue
		}
		p := c.m.Packages[filepath.ToSlash(filepath.Dir(cand))]
		if p == nil {
			return nil, nil, true
		}
		return p, p.Files[filepath.Base(cand)], true
	}
	c.addf(line, "file %s does not exist (looked for %s)%s", text, strings.Join(cands, " and "), c.sameFileName(text))
	return nil, nil, false
}

func (c *checker) sameFileName(text string) string {
	base := filepath.Base(text)
	var near []string
	for _, dir := range c.m.PackageList() {
		if f := c.m.Packages[dir].Files[base]; f != nil {
			near = append(near, f.Path)
		}
	}
	if len(near) == 0 {
		return ""
	}
	return "; a file of that name: " + strings.Join(near, ", ")
}
