package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartCompilesNoRegexp: no package of hermes compiles a regular
// expression when the program starts (a package-level variable's
// initialiser), since every command, thousands of times a test run and
// in every script of a user, would pay for it whether or not it uses the
// expression: hermes's own four were 2% of a start's processor time. They
// are compiled on first use (sync.OnceValue).
func TestStartCompilesNoRegexp(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go command to list hermes's packages: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}|{{join .GoFiles \",\"}}{{end}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	for _, line := range strings.Fields(string(out)) {
		dir, files, _ := strings.Cut(line, "|")
		for _, name := range strings.Split(files, ",") {
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				ast.Inspect(g, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncLit:
						return false // runs when called, not at start
					case *ast.SelectorExpr:
						if id, ok := n.X.(*ast.Ident); ok && id.Name == "regexp" && strings.HasPrefix(n.Sel.Name, "MustCompile") {
							t.Errorf("%s: a regular expression compiled at start", fset.Position(n.Pos()))
						}
					}
					return true
				})
			}
		}
	}
}
