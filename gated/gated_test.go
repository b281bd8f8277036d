package gated_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/gated"
	"github.com/runbox/runbox/local"
)

func newEnv(t *testing.T, dir string) *gated.Env {
	t.Helper()
	l, err := local.New(local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	g, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := gated.New(l, gated.Options{Gate: g, Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestEnv_RefusedNeverRuns: a refused command does not reach the backend
// (its side effect never happens), in shell and argv form.
func TestEnv_RefusedNeverRuns(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.MkdirAll(victim, 0o755)
	env := newEnv(t, dir)
	for _, cmd := range []envs.Command{
		{Shell: "rm -rf " + victim},
		{Args: []string{"rm", "-rf", victim}},
		{Shell: "rm -rf /"},
	} {
		_, err := env.Run(t.Context(), cmd)
		var de *envs.DeniedError
		if !errors.Is(err, envs.ErrDenied) || !errors.As(err, &de) || len(de.Reasons) == 0 {
			t.Errorf("Run(%q) = %v; want a DeniedError with reasons", gated.Line(cmd), err)
		}
		if _, err := env.Start(t.Context(), cmd); !errors.Is(err, envs.ErrDenied) {
			t.Errorf("Start(%q) = %v; want ErrDenied", gated.Line(cmd), err)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("a refused command ran: %v", err)
	}
	_, err := env.Run(t.Context(), envs.Command{Shell: "rm -rf /"})
	var de *envs.DeniedError
	if errors.As(err, &de); !de.Hardline {
		t.Errorf("rm -rf / not hardline: %v", err)
	}
}

func TestEnv_AllowedRuns(t *testing.T) {
	env := newEnv(t, t.TempDir())
	res, err := env.Run(t.Context(), envs.Command{Shell: "ls -la && echo ok"})
	if err != nil || !strings.HasSuffix(res.Output, "ok\n") {
		t.Fatalf("Run = %v, %v", res, err)
	}
}

func TestNew_RequiresGate(t *testing.T) {
	l, _ := local.New(local.Options{})
	defer l.Close(context.Background())
	if _, err := gated.New(l, gated.Options{}); err == nil {
		t.Fatal("New without a gate: no error")
	}
}
