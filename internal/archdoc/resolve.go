package archdoc

import (
	"slices"
	"strings"
)

// name resolves a Go name in the scope:
//
//   - Name and Type.Member: declared in the file the unit named last, or,
//     when it named a package after that, in the package;
//   - pkg.Name and pkg.Type.Member: declared in the package whose name is
//     pkg (the one the unit named, when two share the name), anywhere.
//
// A type of the scope's package wins over a package of the same name
// (cni's type plugin over package runtime/plugin).
func (c *checker) name(line int, text string, sc *scope) {
	parts := strings.Split(text, ".")
	if sc.pkg == nil && (len(parts) == 1 || len(c.packagesNamed(parts[0], sc)) == 0) {
		c.addf(line, "`%s` comes before any file or package in its step: name the file first, or qualify it with its package's name%s", text, c.where(text, nil))
		return
	}
	if len(parts) == 3 || len(parts) == 2 && !c.typeInScope(parts[0], sc) {
		c.qualified(line, text, parts, sc)
		return
	}
	key := text
	switch {
	case sc.file != nil:
		if !has(sc.file, key) {
			c.addf(line, "`%s` is not declared in %s, the file named before it%s", text, sc.file.Path, c.where(key, sc.pkg))
			return
		}
	default:
		if !pkgHas(sc.pkg, key) {
			c.addf(line, "`%s` is not declared in package %s, the package named before it%s", text, sc.pkg.Dir, c.where(key, nil))
			return
		}
	}
	c.mention(line, text, sc, mention{pkg: sc.pkg, file: sc.file, key: key})
}

// mention records a name an ordered step gives, resolved, for the order
// check.
func (c *checker) mention(line int, text string, sc *scope, mn mention) {
	if len(sc.steps) == 0 {
		return
	}
	parts := strings.Split(text, ".")
	mn.line, mn.text, mn.steps, mn.final = line, text, sc.steps, parts[len(parts)-1]
	c.mentions = append(c.mentions, mn)
}

// has reports whether f declares key: a top-level name, a Type.Member, or
// a member alone.
func has(f *File, key string) bool {
	return f.Decls[key] || !strings.Contains(key, ".") && f.Decls["."+key]
}

func pkgHas(p *Package, key string) bool {
	for _, f := range p.Files {
		if has(f, key) {
			return true
		}
	}
	return false
}

// typeInScope: t is declared at the top level of the scope's package.
func (c *checker) typeInScope(t string, sc *scope) bool {
	if sc.pkg == nil {
		return false
	}
	for _, f := range sc.pkg.Files {
		if f.Decls[t] {
			return true
		}
	}
	return false
}

// qualified resolves pkg.Name and pkg.Type.Member.
func (c *checker) qualified(line int, text string, parts []string, sc *scope) {
	cands := c.packagesNamed(parts[0], sc)
	key := strings.Join(parts[1:], ".")
	switch {
	case len(cands) == 0:
		c.addf(line, "`%s`: %s is neither declared in %s, the package named before it, nor the name of a package of the module%s", text, parts[0], sc.pkg.Dir, c.where(text, nil))
	case len(cands) > 1:
		c.addf(line, "`%s`: %d packages are named %s (%s): name the one meant before it", text, len(cands), parts[0], dirs(cands))
	case !pkgHas(cands[0], key):
		c.addf(line, "`%s` is not declared in package %s%s", text, cands[0].Dir, c.where(key, nil))
	default:
		qual := parts[0]
		if len(parts) == 3 {
			qual = "" // pkg.Type.Member: reached through a value, not the package
		}
		c.mention(line, text, sc, mention{pkg: cands[0], key: key, qual: qual})
	}
}

// packagesNamed returns the packages whose name is name: those the unit
// named, when any of them is; else all the module's.
func (c *checker) packagesNamed(name string, sc *scope) []*Package {
	var seen, all []*Package
	for _, dir := range c.m.PackageList() {
		p := c.m.Packages[dir]
		if p.Name != name || p.Name == "main" {
			continue
		}
		all = append(all, p)
		if slices.Contains(sc.seen, p) {
			seen = append(seen, p)
		}
	}
	if len(seen) > 0 {
		return seen
	}
	return all
}

// where says where key is declared, in files of pkg first, else in the
// whole module, for the message that tells the page what to name.
func (c *checker) where(key string, pkg *Package) string {
	var found []string
	for _, dir := range c.m.PackageList() {
		p := c.m.Packages[dir]
		if pkg != nil && p != pkg {
			continue
		}
		for _, f := range p.sortedFiles() {
			if has(f, key) {
				found = append(found, f.Path)
			}
		}
	}
	switch {
	case len(found) == 0 && pkg != nil:
		return c.where(key, nil)
	case len(found) == 0:
		return "; no file of the module declares it: fix or remove it"
	case len(found) > 4:
		found = append(found[:4], "...")
	}
	return "; it is declared in " + strings.Join(found, ", ")
}

func (p *Package) sortedFiles() []*File {
	names := make([]string, 0, len(p.Files))
	for n := range p.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*File, len(names))
	for i, n := range names {
		out[i] = p.Files[n]
	}
	return out
}

func dirs(ps []*Package) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Dir
	}
	return strings.Join(out, ", ")
}
