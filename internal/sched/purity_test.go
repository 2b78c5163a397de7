package sched_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The core, the model and the pure functions the server and the simulators
// share with it (operator policies, the autoscaler) are pure: no I/O, no
// network, no storage, no randomness, no logging, no wall clock, no
// goroutines. This test reads their sources and fails on a forbidden
// import, a call of the clock (time.Now, Since, Sleep, …) or a go
// statement.
func TestCoreIsPure(t *testing.T) {
	forbidden := []string{"net", "os", "io", "syscall", "go.etcd.io/", "math/rand", "crypto/rand", "log", "sync",
		"github.com/allot-dev/allot/internal/store"}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
		"Tick": true, "NewTimer": true, "NewTicker": true}
	for _, dir := range []string{".", "../model", "../policy", "../autoscale", "../strategy", "../sim/engine", "../forecast", "../admission", "../alert", "../price"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") || (strings.HasSuffix(bad, "/") && strings.HasPrefix(path, bad)) {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: starts a goroutine; the caller owns concurrency", fset.Position(g.Pos()))
				}
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && clock[sel.Sel.Name] {
					t.Errorf("%s: uses time.%s; time is an input of the core", fset.Position(sel.Pos()), sel.Sel.Name)
				}
				return true
			})
		}
		if checked == 0 {
			t.Fatalf("no sources found in %s", dir)
		}
	}
}
