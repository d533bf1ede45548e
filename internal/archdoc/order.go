package archdoc

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"
)

// Ref is one call, or method value, in a function's body: `f(...)` is
// {Name: f}, `x.f(...)` and `x.f` are {Qual: x, Name: f}. Qual is the
// identifier before the dot, whatever it is (a package, a receiver, a
// variable): go/parser without type checking cannot tell, and the order
// check only needs to know that a body reaches a name, and where.
type Ref struct {
	Qual, Name string
	Line       int
	Offset     int
}

// funcRefs returns, for every function and method with a body, the refs
// of its body in source order. A method is keyed "Type.Name".
func funcRefs(fset *token.FileSet, f *ast.File) map[string][]Ref {
	out := map[string][]Ref{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		key := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			key = receiverType(fd.Recv.List[0].Type) + "." + key
		}
		out[key] = bodyRefs(fset, fd.Body)
	}
	return out
}

// bodyRefs walks a body in source order: the callee of every call, and
// every function or method value handed to a call
// (`slices.DeleteFunc(s, r.keptByNetNS)` reaches its method as surely as
// a call). A field read or written is no ref: `res.Listed = n` does not
// reach a method Listed.
func bodyRefs(fset *token.FileSet, body *ast.BlockStmt) []Ref {
	var refs []Ref
	add := func(e ast.Expr) {
		var qual string
		var id *ast.Ident
		switch e := e.(type) {
		case *ast.Ident:
			id = e
		case *ast.SelectorExpr:
			id = e.Sel
			if x, ok := e.X.(*ast.Ident); ok {
				qual = x.Name
			}
		default:
			return
		}
		pos := fset.Position(id.Pos())
		refs = append(refs, Ref{Qual: qual, Name: id.Name, Line: pos.Line, Offset: pos.Offset})
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			add(call.Fun)
			for _, arg := range call.Args {
				add(arg)
			}
		}
		return true
	})
	slices.SortFunc(refs, func(a, b Ref) int { return a.Offset - b.Offset })
	return refs
}

// mention is a Go name an ordered step gives, as the checker resolved it:
// the package (and file, when the step named one) that declares it, and
// the package name it was qualified with, if any.
type mention struct {
	line  int
	text  string
	steps []Step
	pkg   *Package
	file  *File  // nil when the name was looked up in the whole package
	key   string // the name within its package: "Name" or "Type.Name"
	qual  string // "pkg" of pkg.Name; "" otherwise
	final string // the last part of the name: what a body calls
}

// fn is the function a mention names, with its body's refs.
type fn struct {
	refs   []Ref
	file   *File
	method bool
}

// fn finds the function a mention names, if it names one with a body:
// in the file the step named, else anywhere in the package; a bare name
// after a file may be a method of a type of that file.
func (mn mention) fn() (fn, bool) {
	files := []*File{mn.file}
	if mn.file == nil {
		files = mn.pkg.sortedFiles()
	}
	for _, f := range files {
		if refs, ok := f.Funcs[mn.key]; ok {
			return fn{refs: refs, file: f, method: strings.Contains(mn.key, ".")}, true
		}
	}
	if strings.Contains(mn.key, ".") {
		return fn{}, false
	}
	for _, f := range files {
		for _, k := range sortedKeys(f.Funcs) {
			if strings.HasSuffix(k, "."+mn.key) {
				return fn{refs: f.Funcs[k], file: f, method: true}, true
			}
		}
	}
	return fn{}, false
}

func sortedKeys(m map[string][]Ref) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// reachedAt returns every place the caller's body reaches the function
// the mention names: for a function, a call qualified with its package's
// import name, or unqualified inside that package; for a method, a
// selector on a value (not a package) of the same name. Without types the
// receiver's type is not known: a method is matched by its name.
func (mn mention) reachedAt(caller fn, callerPkg *Package, callee fn) []Ref {
	var out []Ref
	for _, r := range caller.refs {
		if r.Name != mn.final {
			continue
		}
		dir, isPkg := caller.file.Imports[r.Qual]
		var ok bool
		switch {
		case r.Qual == "":
			ok = !callee.method && callerPkg == mn.pkg
		case isPkg:
			ok = !callee.method && dir == mn.pkg.Dir
		default:
			ok = callee.method
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// order checks the page's ordered lists against the code. For every
// function a list names whose body reaches functions named in two of its
// steps, the earlier step's must not all come after the later step's in
// that body: the page gives the steps in the order the code takes them.
// A name counts in the step that first gives it ("as in step 4" names an
// earlier step's function again), and a step counts with the steps nested
// in it. Source order stands for the order taken: two branches of a
// switch may come in any order, so a step is out of order only when every
// place the body reaches it comes before every place it reaches the
// earlier step.
func (c *checker) order() {
	lists := map[int]bool{}
	var ids []int
	for _, mn := range c.mentions {
		for _, st := range mn.steps {
			if !lists[st.List] {
				lists[st.List] = true
				ids = append(ids, st.List)
			}
		}
	}
	for _, id := range ids {
		c.orderList(id)
	}
}

// reach is where one caller's body reaches the functions a step names.
type reach struct {
	item     int
	first    mention // the step's name the body reaches first
	min, max Ref
}

func (c *checker) orderList(list int) {
	steps := map[string]int{} // function → the item of this list that first names it
	var ms []mention
	for _, mn := range c.mentions {
		item := mn.itemOf(list)
		if item == 0 {
			continue
		}
		if _, ok := steps[mn.pkgKey()]; !ok {
			steps[mn.pkgKey()] = item
			ms = append(ms, mn)
		}
	}
	// The step a nested list sits in names the function that runs it:
	// its functions are callers of the nested steps, counted as step 0.
	if parent, nested := c.parents[list]; nested {
		for _, mn := range c.mentions {
			if mn.itemOf(parent.List) == parent.Item && mn.itemOf(list) == 0 {
				if _, ok := steps[mn.pkgKey()]; !ok {
					steps[mn.pkgKey()] = 0
					ms = append(ms, mn)
				}
			}
		}
	}
	for _, caller := range ms {
		body, ok := caller.fn()
		if !ok {
			continue
		}
		c.orderReaches(caller, body.file.Path, reachesBy(caller, body, ms, steps))
	}
}

// reachesBy groups where caller's body reaches the list's functions by
// the step that names them, in step order. Only the caller's own step
// and the steps after it count: a step that names a function before the
// caller's describes what ran before it, whatever the caller's body
// reaches by the same name.
func reachesBy(caller mention, body fn, ms []mention, steps map[string]int) []reach {
	byItem := map[int]*reach{}
	var items []int
	for _, callee := range ms {
		item := steps[callee.pkgKey()]
		if callee.pkgKey() == caller.pkgKey() || item < steps[caller.pkgKey()] {
			continue
		}
		target, ok := callee.fn()
		if !ok {
			continue // a type, field or variable
		}
		for _, at := range callee.reachedAt(body, caller.pkg, target) {
			r := byItem[item]
			if r == nil {
				r = &reach{item: item, first: callee, min: at, max: at}
				byItem[item] = r
				items = append(items, item)
			}
			if at.Offset < r.min.Offset {
				r.min, r.first = at, callee
			}
			if at.Offset > r.max.Offset {
				r.max = at
			}
		}
	}
	slices.Sort(items)
	out := make([]reach, len(items))
	for i, item := range items {
		out[i] = *byItem[item]
	}
	return out
}

func (c *checker) orderReaches(caller mention, path string, reaches []reach) {
	for j, later := range reaches {
		for _, earlier := range reaches[:j] {
			if later.max.Offset >= earlier.min.Offset {
				continue
			}
			c.addf(later.first.line, "step %d gives `%s` after step %d's `%s` (line %d), but `%s` (%s) reaches it first (line %d, against line %d): give the steps in the order the code takes them",
				later.item, later.first.text, earlier.item, earlier.first.text, earlier.first.line, caller.text, path, later.max.Line, earlier.min.Line)
			break
		}
	}
}

// itemOf returns the item of list the mention is in, 0 when none.
func (mn mention) itemOf(list int) int {
	for _, st := range mn.steps {
		if st.List == list {
			return st.Item
		}
	}
	return 0
}

// pkgKey identifies the function a mention names, so that a name given
// twice, or the caller itself, counts once.
func (mn mention) pkgKey() string {
	return mn.pkg.Dir + "." + mn.key
}
