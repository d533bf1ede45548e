package archdoc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	// goName: Name, Type.Member or pkg.Type.Member; no underscore, so
	// metric names and reasons (runtime_gone) are prose.
	goName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*){0,2}$`)
	// fileName: a file of the repository, by its extension.
	fileName = regexp.MustCompile(`^[A-Za-z0-9_./-]+\.(go|md|ya?ml|proto|json|sh|toml|txt|mod)$`)
	// pkgPath: a package path has a slash (a top-level package is looked
	// up by name); a span with a space, colon or angle brackets is prose
	// or a placeholder.
	pkgPath = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*(/[a-z0-9_.-]+)+$`)
)

// scope is what a unit has named so far: the file and package that a
// bare name or Type.Method is looked up in, and every package named,
// which settles which package a "pkg.Name" means when two share a name.
type scope struct {
	pkg   *Package
	file  *File
	seen  []*Package
	steps []Step // the ordered-list items the unit is in (Unit.Steps)
}

// unit walks a unit's spans in order: a file or package sets the scope,
// a Go name is resolved in it.
func (c *checker) unit(u Unit) {
	sc := &scope{steps: u.Steps}
	if u.Pkg != "" {
		p := c.m.Packages[u.Pkg]
		if p == nil {
			return // the row's package is reported; its names would only echo it
		}
		sc.pkg, sc.seen = p, []*Package{p}
	}
	for _, s := range u.Spans {
		c.span(s, sc)
	}
}

func (c *checker) span(s Span, sc *scope) {
	text := s.Text
	switch {
	case strings.ContainsAny(text, " :<>*=") && !strings.Contains(text, "{"):
		return
	case strings.Contains(text, "{"):
		for _, dir := range expand(text) {
			if c.pkg(s.Line, dir, "package") {
				sc.seen = append(sc.seen, c.m.Packages[dir])
			}
		}
	case fileName.MatchString(text):
		if p, f, ok := c.file(s.Line, text, sc); ok && p != nil {
			sc.pkg, sc.file, sc.seen = p, f, append(sc.seen, p)
		}
	case pkgPath.MatchString(text) && c.m.Packages[text] == nil && c.isDir(text):
		return // a directory that holds no Go package: deploy/..., docs
	case pkgPath.MatchString(text) || c.m.Packages[text] != nil:
		if c.pkg(s.Line, text, "package") {
			p := c.m.Packages[text]
			sc.pkg, sc.file, sc.seen = p, nil, append(sc.seen, p)
		}
	case !strings.Contains(text, ".") && !c.declaredInScope(text, sc) && len(c.packagesNamed(text, sc)) == 1:
		p := c.packagesNamed(text, sc)[0] // a package by its name: `kubeenv`
		sc.pkg, sc.file, sc.seen = p, nil, append(sc.seen, p)
	case goName.MatchString(text):
		c.name(s.Line, text, sc)
	}
}

func (c *checker) isDir(dir string) bool {
	st, err := os.Stat(filepath.Join(c.m.Root, filepath.FromSlash(dir)))
	return err == nil && st.IsDir()
}

// declaredInScope: the scope's file, or else package, declares name.
func (c *checker) declaredInScope(name string, sc *scope) bool {
	switch {
	case sc.file != nil:
		return has(sc.file, name)
	case sc.pkg != nil:
		return pkgHas(sc.pkg, name)
	}
	return false
}
