package archdoc

import (
	"go/ast"
	"go/token"
)

// decls returns the names a file declares: top-level ones as "Name",
// methods and members as "Type.Name", and members alone as ".Name".
func decls(f *ast.File) map[string]bool {
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			addFunc(out, d)
		case *ast.GenDecl:
			addGen(out, d)
		}
	}
	return out
}

func addFunc(out map[string]bool, d *ast.FuncDecl) {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		out[d.Name.Name] = true
		return
	}
	out["."+d.Name.Name] = true
	if recv := receiverType(d.Recv.List[0].Type); recv != "" {
		out[recv+"."+d.Name.Name] = true
	}
}

// receiverType names a method's receiver type: T, *T, T[K], *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func addGen(out map[string]bool, d *ast.GenDecl) {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			out[s.Name.Name] = true
			addMembers(out, s.Name.Name, s.Type)
		case *ast.ValueSpec:
			if d.Tok == token.VAR || d.Tok == token.CONST {
				for _, n := range s.Names {
					out[n.Name] = true
				}
			}
		}
	}
}

// addMembers adds a struct's fields (embedded ones by their type's name)
// and an interface's methods.
func addMembers(out map[string]bool, typ string, e ast.Expr) {
	var fields *ast.FieldList
	switch t := e.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		names := f.Names
		if len(names) == 0 {
			if n := receiverType(embedded(f.Type)); n != "" {
				names = []*ast.Ident{{Name: n}}
			}
		}
		for _, n := range names {
			out["."+n.Name] = true
			out[typ+"."+n.Name] = true
		}
	}
}

// embedded strips a package qualifier from an embedded field's type.
func embedded(e ast.Expr) ast.Expr {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if s, ok := e.(*ast.SelectorExpr); ok {
		return s.Sel
	}
	return e
}
