package outline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// outlineGo outlines Go with the standard parser: funcs, methods (named
// Receiver.Name), types (struct, interface or type), top-level consts and
// vars, and imports. On a syntax error the parser still returns what it
// understood, and that is outlined.
func outlineGo(src []byte, c *collector) {
	// go/parser is not ours to fuzz; a panic in it must not take down an
	// index of 10,000 files, so it costs this one file's outline only.
	defer func() { _ = recover() }()
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if f == nil {
		return
	}
	// Unadjusted positions: a //line directive must not move symbols
	// outside the file.
	line := func(p token.Pos) int { return max(fset.PositionFor(p, false).Line, 1) }
	for _, d := range f.Decls {
		if c.full() {
			return
		}
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name == nil {
				continue
			}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				c.add(goRecvName(d.Recv.List[0].Type)+"."+d.Name.Name, "method", line(d.Pos()), 0)
			} else {
				c.add(d.Name.Name, "function", line(d.Pos()), 0)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ImportSpec:
					if s.Path != nil {
						p, err := strconv.Unquote(s.Path.Value)
						if err != nil {
							p = s.Path.Value
						}
						c.add(p, "import", line(s.Pos()), 0)
					}
				case *ast.TypeSpec:
					kind := "type"
					switch s.Type.(type) {
					case *ast.StructType:
						kind = "struct"
					case *ast.InterfaceType:
						kind = "interface"
					}
					c.add(s.Name.Name, kind, line(s.Pos()), 0)
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					for _, n := range s.Names {
						if n.Name != "_" {
							c.add(n.Name, kind, line(n.Pos()), 0)
						}
					}
				}
			}
		}
	}
}

// goRecvName returns the type name of a receiver: *List[T] → List.
func goRecvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}
