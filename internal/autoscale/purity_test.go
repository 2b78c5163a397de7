package autoscale

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The autoscaler is pure, as doc.go promises: no I/O, no network, no
// randomness, no wall clock, no goroutines. This test reads the package's
// sources and fails on a forbidden import, a call of the clock or a go
// statement.
func TestIsPure(t *testing.T) {
	forbidden := []string{"os", "net", "io", "io/ioutil", "syscall", "math/rand", "math/rand/v2", "crypto/rand", "log", "log/slog", "sync"}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
		"Tick": true, "NewTimer": true, "NewTicker": true}
	files, err := filepath.Glob("*.go")
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
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: starts a goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && clock[n.Sel.Name] {
					t.Errorf("%s: uses time.%s; time is an input", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 3 {
		t.Fatalf("checked %d source files, want the package's", checked)
	}
}
