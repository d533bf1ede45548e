package archdoc

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrNoModule: the root has no go.mod with a module line.
var ErrNoModule = errors.New("no module line in go.mod")

// Module is what the page is checked against: every package of the module
// rooted at Root, parsed once with go/parser (no type checking, no build:
// fast, and every file counts whatever its build constraints).
type Module struct {
	Root     string
	Path     string              // the module path from go.mod
	Packages map[string]*Package // by path relative to Root ("ipamd/server")
}

// Package is one directory of Go files.
type Package struct {
	Dir     string           // relative to the module root, slash-separated
	Name    string           // the package clause of its non-test files
	Files   map[string]*File // by base name
	Imports map[string]bool  // module packages its non-test files import, relative
}

// File holds the names one Go file declares: top-level names ("Store"),
// methods and members by "Type.Name" (methods, struct fields, interface
// methods), and every member name alone (".Name"), so that a page may name
// a method or field bare after naming the file.
type File struct {
	Path  string
	Decls map[string]bool
	Funcs map[string][]Ref // what each function's body calls or names, by "Name" or "Type.Name"
	// Imports maps the name each import is known by in the file to the
	// module package's path ("ipamd/datastore"), or to "" for a package
	// outside the module, so a ref's qualifier can be told from a variable.
	Imports map[string]string
	imports []importSpec // as written, resolved into Imports once every package is known
}

type importSpec struct{ alias, path string }

// LoadModule parses every Go file under root, skipping testdata, vendor,
// hidden directories and nested modules (tools/ has its own go.mod).
func LoadModule(root string) (*Module, error) {
	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := &Module{Root: root, Path: modPath, Packages: map[string]*Package{}}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		return m.addFile(fset, path)
	})
	if err != nil {
		return nil, fmt.Errorf("load module %s: %w", root, err)
	}
	m.resolveImports()
	return m, nil
}

// resolveImports names each file's imports as its code calls them: the
// alias, else the module package's own name, else the path's last element
// (its major version skipped).
func (m *Module) resolveImports() {
	for _, p := range m.Packages {
		for _, f := range p.Files {
			f.Imports = map[string]string{}
			for _, imp := range f.imports {
				rel, inModule := strings.CutPrefix(imp.path, m.Path+"/")
				name := imp.alias
				if name == "" && inModule && m.Packages[rel] != nil {
					name = m.Packages[rel].Name
				}
				if name == "" {
					name = lastElem(imp.path)
				}
				if !inModule {
					rel = ""
				}
				f.Imports[name] = rel
			}
		}
	}
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

func lastElem(path string) string {
	parts := strings.Split(path, "/")
	last := parts[len(parts)-1]
	if majorVersion.MatchString(last) && len(parts) > 1 {
		last = parts[len(parts)-2]
	}
	return strings.TrimPrefix(last, "go-")
}

// skipDir skips what is not part of the module's packages.
func skipDir(root, path, name string) error {
	if path == root {
		return nil
	}
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

func modulePath(goMod string) (string, error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", fmt.Errorf("read module path: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: %w", goMod, ErrNoModule)
}

func (m *Module) addFile(fset *token.FileSet, path string) error {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	rel, err := filepath.Rel(m.Root, filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	dir := filepath.ToSlash(rel)
	p := m.Packages[dir]
	if p == nil {
		p = &Package{Dir: dir, Files: map[string]*File{}, Imports: map[string]bool{}}
		m.Packages[dir] = p
	}
	test := strings.HasSuffix(path, "_test.go")
	if !test || p.Name == "" {
		p.Name = strings.TrimSuffix(f.Name.Name, "_test")
	}
	if !test {
		m.addImports(p, f)
	}
	p.Files[filepath.Base(path)] = &File{Path: dir + "/" + filepath.Base(path), Decls: decls(f), Funcs: funcRefs(fset, f), imports: importSpecs(f)}
	return nil
}

func (m *Module) addImports(p *Package, f *ast.File) {
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if rel, ok := strings.CutPrefix(path, m.Path+"/"); ok {
			p.Imports[rel] = true
		}
	}
}

func importSpecs(f *ast.File) []importSpec {
	var out []importSpec
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		spec := importSpec{path: path}
		if imp.Name != nil {
			spec.alias = imp.Name.Name
		}
		out = append(out, spec)
	}
	return out
}

// PackageList returns the packages' paths, sorted.
func (m *Module) PackageList() []string {
	out := make([]string, 0, len(m.Packages))
	for dir := range m.Packages {
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

// ImportList returns what package dir imports from the module, sorted.
func (m *Module) ImportList(dir string) []string {
	p := m.Packages[dir]
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Imports))
	for imp := range p.Imports {
		out = append(out, imp)
	}
	slices.Sort(out)
	return out
}
