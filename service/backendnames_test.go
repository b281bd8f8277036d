package service_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runbox/runbox/config"
)

// TestCore_AsksProvidersNotNames holds the core to the provider table: no
// production file outside a backend's own folder and the table
// (service/backends.go) compares a string with a backend's name, in an
// == or != or a switch case. What a backend can do is asked of its row
// (envs.Provider: OnThisMachine, Jobs, TaskEnvs, Tasks, ...).
//
// Not counted: the command gate (approval), where "docker" and "local"
// are the names of programs and shell builtins a command runs, and the
// benchmarks (internal/bench, and files named *bench*.go until they move
// there), where a measurement names the backend it measures; scripts/ is
// not runbox.
func TestCore_AsksProvidersNotNames(t *testing.T) {
	s := newService(t, config.Default())
	names := s.Providers().Names()
	if len(names) < 8 {
		t.Fatalf("provider table holds %v; want every backend", names)
	}
	root := ".."
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		if d.IsDir() {
			if slices.Contains(names, top) || top == "approval" || top == "scripts" || filepath.ToSlash(rel) == "internal/bench" ||
				strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		base := d.Name()
		if !strings.HasSuffix(base, ".go") || strings.HasSuffix(base, "_test.go") ||
			strings.Contains(base, "bench") || filepath.ToSlash(rel) == "service/backends.go" {
			return nil
		}
		found = append(found, nameComparisons(t, path, names)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d comparisons with a backend's name outside the provider table; ask the provider instead:\n%s", len(found), strings.Join(found, "\n"))
	}
}

// nameComparisons lists where the file at path compares a string
// literal naming a backend.
func nameComparisons(t *testing.T, path string, names []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	isName := func(e ast.Expr) bool {
		l, ok := e.(*ast.BasicLit)
		if !ok || l.Kind != token.STRING {
			return false
		}
		v, err := strconv.Unquote(l.Value)
		return err == nil && slices.Contains(names, v)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
				out = append(out, fset.Position(n.Pos()).String())
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if isName(e) {
					out = append(out, fset.Position(e.Pos()).String())
				}
			}
		}
		return true
	})
	return out
}
