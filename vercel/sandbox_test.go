package vercel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/vercel"
)

// TestEnv_StoppedMidCommandIsRecreated: Vercel stops the sandbox (its
// timeout, the dashboard) while a command runs. The command fails at
// once with an error that says the sandbox stopped; the next command
// runs in a new sandbox and says the environment was recreated.
func TestEnv_StoppedMidCommandIsRecreated(t *testing.T) {
	srv := fake(t)
	env := open(t, options(t, srv))
	first := env.Sandbox()
	marker := filepath.Join(t.TempDir(), "started")
	type outcome struct {
		res *envs.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		res, err := env.Run(ctx, envs.Command{Shell: "touch " + marker + "; sleep 600"})
		done <- outcome{res, err}
	}()
	testwait.Within(t, hang, "the command started", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	if err := srv.StopSandbox(first); err != nil {
		t.Fatal(err)
	}
	var got outcome
	select {
	case got = <-done:
	case <-time.After(hang):
		t.Fatal("the command outlived its sandbox")
	}
	if got.err == nil {
		t.Fatalf("the command whose sandbox stopped returned %+v and no error", got.res)
	}
	t.Logf("the command's error: %v", got.err)
	if msg := got.err.Error(); !strings.Contains(msg, "stopped") || !strings.Contains(msg, first) {
		t.Errorf("error = %q; want it to say sandbox %s stopped", msg, first)
	}
	res := run(t, env, envs.Command{Shell: "echo back"})
	if res.Code != 0 || strings.TrimSpace(res.Output) != "back" || !res.EnvironmentRecreated {
		t.Fatalf("next command = %+v; want it run, in a recreated environment", res)
	}
	if env.Sandbox() == first {
		t.Errorf("the next command ran in the stopped sandbox %s", first)
	}
}

// TestTask_FindsTheSandboxAgain: a persistent task's sandbox is stopped
// at close and found by name and resumed at the next open, with its
// files; another task does not see them.
func TestTask_FindsTheSandboxAgain(t *testing.T) {
	srv := fake(t)
	o := options(t, srv)
	o.Task, o.Persistent = "build-42", true
	env := open(t, o)
	if res := run(t, env, envs.Command{Shell: "echo kept > state.txt"}); res.Code != 0 {
		t.Fatalf("write state: %+v", res)
	}
	name := env.Sandbox()
	if err := env.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := srv.Running(); len(r) != 0 {
		t.Fatalf("sessions %v still run after the persistent task's close; want it stopped", r)
	}
	again := open(t, o)
	res := run(t, again, envs.Command{Shell: "cat state.txt"})
	if again.Sandbox() != name || strings.TrimSpace(res.Output) != "kept" {
		t.Fatalf("reopened task: sandbox %s, cat = %+v; want sandbox %s with state.txt", again.Sandbox(), res, name)
	}
	other := o
	other.Task = "build-43"
	res = run(t, open(t, other), envs.Command{Shell: "cat state.txt"})
	if res.Code == 0 {
		t.Fatalf("another task's sandbox sees state.txt: %+v", res)
	}
	if n := len(srv.Sandboxes()); n != 2 {
		t.Errorf("%d sandboxes (%v); want one per task", n, srv.Sandboxes())
	}
}

// TestNew_RefusedCredentialsAreClear: a wrong token, team or project is
// refused by the API before any sandbox exists, with an error that names
// the credentials' source and matches ErrAuth (or ErrNotFound for the
// project).
func TestNew_RefusedCredentialsAreClear(t *testing.T) {
	srv := fake(t)
	tests := []struct {
		name    string
		mutate  func(*vercel.Credentials)
		want    error
		message string
	}{
		{"wrong token", func(c *vercel.Credentials) { c.Token = "vcp_wrong" }, vercel.ErrAuth, "refused the token from environment variable VERCEL_TOKEN"},
		{"wrong team", func(c *vercel.Credentials) { c.TeamID = "team_other" }, vercel.ErrAuth, "(403)"},
		{"wrong project", func(c *vercel.Credentials) { c.ProjectID = "prj_other" }, vercel.ErrNotFound, "Project not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, srv)
			tc.mutate(&o.Credentials)
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			env, err := vercel.New(ctx, o)
			if err == nil {
				env.Close(ctx)
				t.Fatal("New succeeded with refused credentials")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v; want %v saying %q", err, tc.want, tc.message)
			}
			if strings.Contains(err.Error(), "vcp_wrong") {
				t.Errorf("the error shows the token: %v", err)
			}
			if err := vercel.Check(ctx, o.Credentials); !errors.Is(err, tc.want) {
				t.Errorf("Check = %v; want %v", err, tc.want)
			}
		})
	}
	if n := len(srv.Sandboxes()); n != 0 {
		t.Errorf("refused credentials made %d sandboxes", n)
	}
	// Control: the right credentials pass the same check.
	if err := vercel.Check(context.Background(), options(t, srv).Credentials); err != nil {
		t.Errorf("Check with the right credentials = %v", err)
	}
}

// TestNew_NetworkPolicyAndResources: the configured policy, resources,
// timeout, ports and tags reach the create call in the API's shapes, and
// the capabilities say which policy holds.
func TestNew_NetworkPolicyAndResources(t *testing.T) {
	srv := fake(t)
	tests := []struct {
		name    string
		set     func(*vercel.Options)
		body    []string
		network envs.CapState
	}{
		{"defaults", func(*vercel.Options) {}, []string{`"tags":{"runbox.managed":"true","runbox.owner":"tester"}`}, envs.Unsupported},
		{"deny all", func(o *vercel.Options) { o.Network = vercel.NetworkDenyAll }, []string{`"networkPolicy":{"mode":"deny-all"}`}, envs.Active},
		{"allowed domains", func(o *vercel.Options) { o.AllowDomains = []string{"example.com", "*.example.org"} }, []string{`"networkPolicy":{"allow":["example.com","*.example.org"]}`}, envs.Active},
		{"sized", func(o *vercel.Options) { o.VCPUs, o.Timeout, o.Ports = 8, 45*time.Minute, []int{3000} }, []string{`"resources":{"vcpus":8}`, `"timeout":2700000`, `"ports":[3000]`}, envs.Unsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(requestsTo(srv, "/v2/sandboxes"))
			o := options(t, srv)
			tc.set(&o)
			env := open(t, o)
			if got := env.Capabilities().State(envs.CapNetworkPolicy); got != tc.network {
				t.Errorf("network policy capability = %v; want %v", got, tc.network)
			}
			created := requestsTo(srv, "/v2/sandboxes")[before:]
			if len(created) != 1 {
				t.Fatalf("%d create calls; want 1", len(created))
			}
			for _, want := range tc.body {
				if !strings.Contains(string(created[0].Body), want) {
					t.Errorf("create body %s lacks %s", created[0].Body, want)
				}
			}
		})
	}
}

// TestEnv_DirIsWhereCommandsRun: Options.Dir is the directory of
// commands that name none (the agent starts there).
func TestEnv_DirIsWhereCommandsRun(t *testing.T) {
	srv := fake(t)
	o := options(t, srv)
	o.Dir = t.TempDir()
	res := run(t, open(t, o), envs.Command{Shell: "pwd"})
	if got := strings.TrimSpace(res.Output); got != o.Dir {
		t.Fatalf("pwd = %q; want %q", got, o.Dir)
	}
}
