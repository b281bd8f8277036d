package envs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
)

// TestProviders_Unknown protects the error a user sees for a typo: it must
// name the backend, list the known ones, and match ErrNotFound.
func TestProviders_Unknown(t *testing.T) {
	tab := envs.NewProviders()
	for _, n := range []string{"local", "docker"} {
		if err := tab.Register(envs.Provider{Name: n, New: func(context.Context, envs.Spec) (envs.Environment, error) { return nil, nil }}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := tab.Open(t.Context(), "dokcer", envs.Spec{})
	var ub *envs.UnknownBackendError
	if !errors.As(err, &ub) || !errors.Is(err, envs.ErrNotFound) {
		t.Fatalf("Open(dokcer) = %v; want *UnknownBackendError matching ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "docker, local") {
		t.Errorf("error %q does not list the known backends", err)
	}
}

func TestProviders_RegisterRejects(t *testing.T) {
	tab := envs.NewProviders()
	ok := envs.Provider{Name: "x", New: func(context.Context, envs.Spec) (envs.Environment, error) { return nil, nil }}
	if err := tab.Register(ok); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]envs.Provider{
		"duplicate": ok,
		"no name":   {New: ok.New},
		"no New":    {Name: "y"},
	} {
		if err := tab.Register(p); err == nil {
			t.Errorf("Register(%s) = nil; want an error", name)
		}
	}
}

// TestProviders_CheckFirst: a backend whose requirement check fails is
// reported with the check's error, and its factory is never called.
func TestProviders_CheckFirst(t *testing.T) {
	tab := envs.NewProviders()
	called := false
	missing := errors.New("engine not reachable")
	tab.Register(envs.Provider{
		Name:  "docker",
		New:   func(context.Context, envs.Spec) (envs.Environment, error) { called = true; return nil, nil },
		Check: func(context.Context) error { return missing },
	})
	if _, err := tab.Open(t.Context(), "docker", envs.Spec{}); !errors.Is(err, missing) || called {
		t.Fatalf("Open = %v (factory called: %v); want the check's error and no call", err, called)
	}
}

func TestExitStatus_Err(t *testing.T) {
	if err := (envs.ExitStatus{}).Err(); err != nil {
		t.Fatalf("success Err() = %v", err)
	}
	err := envs.ExitStatus{Code: 124, TimedOut: true}.Err()
	var ee *envs.ExitError
	if !errors.As(err, &ee) || ee.Code != 124 || !ee.TimedOut {
		t.Fatalf("Err() = %#v; want *ExitError{124, TimedOut}", err)
	}
}

func TestStatusFromContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if _, ok := envs.StatusFromContext(ctx); ok {
		t.Fatal("live context reported a status")
	}
	cancel()
	if st, _ := envs.StatusFromContext(ctx); st.Code != 130 || !st.Interrupted {
		t.Errorf("cancelled: %+v; want 130 interrupted", st)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	if st, _ := envs.StatusFromContext(ctx); st.Code != 124 || !st.TimedOut {
		t.Errorf("deadline: %+v; want 124 timed out", st)
	}
}

// TestProviders_AskedByAbility protects what the core asks instead of a
// backend's name: the names whose row says so, in registration order
// (listings and messages follow it), and an unknown name that runs
// nowhere here.
func TestProviders_AskedByAbility(t *testing.T) {
	open := func(context.Context, envs.Spec) (envs.Environment, error) { return nil, nil }
	tab := envs.NewProviders()
	for _, p := range []envs.Provider{
		{Name: "zeta", New: open, TaskEnvs: true},
		{Name: "here", New: open, OnThisMachine: true},
		{Name: "alpha", New: open, TaskEnvs: true, Jobs: envs.LastingJobs},
	} {
		if err := tab.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(tab.Where(func(p envs.Provider) bool { return p.TaskEnvs }), ","); got != "zeta,alpha" {
		t.Errorf("Where(TaskEnvs) = %s; want zeta,alpha (registration order)", got)
	}
	if got := tab.Where(func(envs.Provider) bool { return false }); len(got) != 0 {
		t.Errorf("Where(none) = %v; want none", got)
	}
	for name, want := range map[string]bool{"here": true, "zeta": false, "nosuch": false} {
		if got := tab.OnThisMachine(name); got != want {
			t.Errorf("OnThisMachine(%s) = %v; want %v", name, got, want)
		}
	}
}
