package service_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
// benchmarks (cmd/internal/bench), where a measurement names the backend it
// measures; scripts/ is not runbox.
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
		if d.IsDir() {
			if rel != "." && skipDir(filepath.ToSlash(rel), names) {
				return filepath.SkipDir
			}
			return nil
		}
		if checked(filepath.ToSlash(rel)) {
			found = append(found, nameComparisons(t, path, names)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d comparisons with a backend's name outside the provider table; ask the provider instead:\n%s", len(found), strings.Join(found, "\n"))
	}
}

// skipDir says whether the folder rel (slash-separated, from the
// repository's root) is left out: a backend's own folder, the gate, the
// benchmarks, scripts, and hidden folders.
func skipDir(rel string, names []string) bool {
	top := strings.Split(rel, "/")[0]
	return slices.Contains(names, top) || top == "approval" || top == "scripts" ||
		rel == "cmd/internal/bench" || strings.HasPrefix(filepath.Base(rel), ".")
}

// checked says whether the file rel, in a folder that is not skipped, is
// production Go code held to the rule: the provider table itself is not.
func checked(rel string) bool {
	return strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") && rel != "service/backends.go"
}

// TestCore_AsksProvidersNotNames_Scope: the exceptions are exactly the
// ones named, so a comparison anywhere else in the core is caught. Breaks
// if an exception grows to cover the core (the benchmarks' old one
// matched any file whose name held "bench", in any folder).
func TestCore_AsksProvidersNotNames_Scope(t *testing.T) {
	names := []string{"local", "docker", "ssh", "kubernetes"}
	for _, tc := range []struct {
		rel   string
		dir   bool
		where string
	}{
		{"cmd/internal/bench", true, "skipped"},
		{"approval", true, "skipped"},
		{"docker", true, "skipped"},
		{"scripts", true, "skipped"},
		{".git", true, "skipped"},
		{"internal", true, "walked"},
		{"internal/benchmarks", true, "walked"},
		{"service", true, "walked"},
		{"cmd/runbox", true, "walked"},
		{"service/backends.go", false, "skipped"},
		{"service/session_test.go", false, "skipped"},
		{"service/session.go", false, "checked"},
		{"service/dockerbench.go", false, "checked"},
		{"cmd/runbox/bench.go", false, "checked"},
		{"cmd/runbox/docker_bench.go", false, "checked"},
	} {
		where := "walked"
		switch {
		case tc.dir && skipDir(tc.rel, names), !tc.dir && !checked(tc.rel):
			where = "skipped"
		case !tc.dir:
			where = "checked"
		}
		if where != tc.where {
			t.Errorf("%s is %s; want %s", tc.rel, where, tc.where)
		}
	}
}

// TestCore_AsksProvidersNotNames_FindsComparisons: the check finds ==, != and case with a
// backend's name, and nothing else.
func TestCore_AsksProvidersNotNames_FindsComparisons(t *testing.T) {
	path := filepath.Join(t.TempDir(), "core.go")
	src := `package core

func f(backend string) int {
	if backend == "docker" || "ssh" != backend {
		return 1
	}
	switch backend {
	case "local":
		return 2
	}
	if backend == "dockerd" {
		return 3
	}
	_ = map[string]int{"docker": 1}
	return 0
}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found := nameComparisons(t, path, []string{"local", "docker", "ssh"})
	var lines []string
	for _, f := range found {
		lines = append(lines, f[strings.LastIndex(f[:strings.LastIndex(f, ":")], ":")+1:])
	}
	if want := []string{"4:5", "4:28", "8:7"}; !slices.Equal(lines, want) {
		t.Errorf("found %q at %q; want line:column %q", found, lines, want)
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
