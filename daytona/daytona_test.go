package daytona_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/daytona/internal/fake"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/testwait"
)

const testKey = "dtn_test-key-7f3a9c"

func newFake(t *testing.T) *fake.Server {
	t.Helper()
	f := fake.New(testKey, t.TempDir())
	t.Cleanup(f.Close)
	return f
}

// options are a test's Options against f, with the credentials read as
// runbox reads them: from a launch environment, not this process's.
func options(t *testing.T, f *fake.Server) daytona.Options {
	t.Helper()
	launch := map[string]string{"DAYTONA_API_KEY": testKey, "DAYTONA_API_URL": f.APIURL}
	c, err := daytona.CredentialsFrom(func(k string) string { return launch[k] })
	if err != nil {
		t.Fatal(err)
	}
	return daytona.Options{Credentials: c, Image: "debian:12", Owner: "tester",
		AgentBinary: agentBin, AgentDir: agentDir(t)}
}

// agentDir is where a test's sandboxes keep the agent (the fake's
// sandboxes share this machine's paths).
func agentDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "agent")
}

func open(t *testing.T, o daytona.Options) *remote.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	env, err := daytona.New(ctx, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return env
}

func run(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Run(%q): %v", shell, err)
	}
	return res
}

// TestEnv_Conformance runs the suite with the agent over a PTY session
// (TestEnv_AgentOverPTY checks that nothing in it is reported
// unsupported, so no check is skipped).
func TestEnv_Conformance(t *testing.T) {
	f := newFake(t)
	envtest.Run(t, func(t *testing.T) envs.Environment { return open(t, options(t, f)) })
}

// TestEnv_ConformanceWithoutAgent runs the suite on the degraded toolbox
// session path, which must keep every promise it reports.
func TestEnv_ConformanceWithoutAgent(t *testing.T) {
	f := newFake(t)
	envtest.Run(t, func(t *testing.T) envs.Environment {
		o := options(t, f)
		o.NoAgent = true
		return open(t, o)
	})
}

func TestCredentialsFrom_Sources(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		source  string
		url     string
		wantErr bool
	}{
		{"none", map[string]string{}, "", "", true},
		{"api key", map[string]string{"DAYTONA_API_KEY": "k", "DAYTONA_SERVER_URL": "http://s/api"}, "environment variable DAYTONA_API_KEY", "http://s/api", false},
		{"api url wins over server url", map[string]string{"DAYTONA_API_KEY": "k", "DAYTONA_API_URL": "http://a/api", "DAYTONA_SERVER_URL": "http://s/api"}, "environment variable DAYTONA_API_KEY", "http://a/api", false},
		{"jwt with organization", map[string]string{"DAYTONA_JWT_TOKEN": "j", "DAYTONA_ORGANIZATION_ID": "o"}, "environment variables DAYTONA_JWT_TOKEN and DAYTONA_ORGANIZATION_ID", "", false},
		{"jwt without organization", map[string]string{"DAYTONA_JWT_TOKEN": "j"}, "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := daytona.CredentialsFrom(func(k string) string { return tc.env[k] })
			if tc.wantErr {
				if !errors.Is(err, daytona.ErrNoCredentials) {
					t.Fatalf("err = %v; want ErrNoCredentials", err)
				}
				return
			}
			if err != nil || c.Source != tc.source || c.APIURL != tc.url {
				t.Fatalf("got %+v, %v; want source %q url %q", c.Source, err, tc.source, tc.url)
			}
		})
	}
}

func TestNew_MissingCredentials(t *testing.T) {
	_, err := daytona.New(t.Context(), daytona.Options{})
	if !errors.Is(err, daytona.ErrNoCredentials) || !strings.Contains(err.Error(), "DAYTONA_API_KEY") {
		t.Fatalf("New without credentials = %v; want ErrNoCredentials naming DAYTONA_API_KEY", err)
	}
}

func TestNew_AuthFailureNamesSource(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.Credentials.APIKey = "dtn_wrong"
	_, err := daytona.New(t.Context(), o)
	if err == nil {
		t.Fatal("New with a wrong key succeeded")
	}
	for _, want := range []string{"refused the credentials", "environment variable DAYTONA_API_KEY", f.APIURL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(f.Sandboxes()) != 0 {
		t.Errorf("a sandbox was created with refused credentials")
	}
}

// TestEnv_CredentialsStayOutside checks that the API key reaches Daytona's
// API only as the Authorization header: not in the sandbox's environment,
// not in any command, file or request body.
func TestEnv_CredentialsStayOutside(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.Env = map[string]string{"GREETING": "hello"}
	env := open(t, o)
	defer env.Close(t.Context())
	res := run(t, env, `echo "$GREETING"; env; tr '\0' '\n' </proc/$$/environ; tr '\0' '\n' </proc/$PPID/environ`)
	if !strings.Contains(res.Output, "hello") {
		t.Fatalf("the environment's own variable is missing: %q", res.Output)
	}
	if strings.Contains(res.Output, testKey) || strings.Contains(res.Output, "DAYTONA_") {
		t.Fatalf("the API key or a DAYTONA_ variable is visible in the sandbox")
	}
	reqs := f.Requests()
	if len(reqs) == 0 {
		t.Fatal("no requests recorded")
	}
	for _, r := range reqs {
		if strings.Contains(r.Body, testKey) || strings.Contains(r.Path, testKey) {
			t.Errorf("%s %s carries the API key in its body or URL", r.Method, r.Path)
		}
		if r.Auth != "Bearer "+testKey {
			t.Errorf("%s %s: Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
	for _, sb := range f.Sandboxes() {
		for k, v := range sb.Env {
			if strings.Contains(v, testKey) || strings.HasPrefix(k, "DAYTONA_") {
				t.Errorf("sandbox %s created with %s in its environment", sb.ID, k)
			}
		}
	}
}

func TestNew_ProvisionsAsConfigured(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.Image, o.CPU, o.MemoryGB, o.DiskGB = "python:3.12", 2, 4, 10
	o.NetworkBlockAll, o.Task = true, "build"
	env := open(t, o)
	defer env.Close(t.Context())
	boxes := f.Sandboxes()
	if len(boxes) != 1 {
		t.Fatalf("%d sandboxes; want 1", len(boxes))
	}
	b := boxes[0]
	if b.Dockerfile != "FROM python:3.12" || b.CPU != 2 || b.Memory != 4 || b.Disk != 10 || !b.NetworkBlockAll {
		t.Errorf("sandbox = %+v; want python:3.12, cpu 2, memory 4, disk 10, network blocked", b)
	}
	if b.Labels[daytona.LabelOwner] != "tester" || b.Labels[daytona.LabelTask] != "build" || b.Labels[daytona.LabelManaged] != "true" {
		t.Errorf("labels = %v", b.Labels)
	}
	if b.AutoStop != nil {
		t.Errorf("an ephemeral sandbox got auto-stop %d", *b.AutoStop)
	}
	if got := env.Capabilities()[envs.CapNetworkPolicy]; got.State != envs.Active {
		t.Errorf("network policy capability = %+v; want active", got)
	}

	o = options(t, f)
	o.Snapshot, o.Task = "daytona-small", "snap"
	env2 := open(t, o)
	defer env2.Close(t.Context())
	for _, b := range f.Sandboxes() {
		if b.ID == env2.ID() && (b.Snapshot != "daytona-small" || b.Dockerfile != "") {
			t.Errorf("snapshot sandbox = %+v; want snapshot daytona-small, no build", b)
		}
	}
}

func state(t *testing.T, f *fake.Server, id string) string {
	t.Helper()
	for _, b := range f.Sandboxes() {
		if b.ID == id {
			return b.State
		}
	}
	return "absent"
}

// TestEnv_TaskPersistence: a persistent task's sandbox is stopped (not
// deleted) on close, found again by its labels and started by the next
// New, with its files intact; an ephemeral one is deleted.
func TestEnv_TaskPersistence(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.Persistent, o.Task = true, "T"
	env := open(t, o)
	id := env.ID()
	run(t, env, "echo kept > state.txt")
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := state(t, f, id); st != "stopped" {
		t.Fatalf("after Close the task's sandbox is %s; want stopped", st)
	}
	var b fake.Sandbox
	for _, x := range f.Sandboxes() {
		if x.ID == id {
			b = x
		}
	}
	if b.AutoStop == nil || *b.AutoStop != 0 {
		t.Errorf("persistent sandbox auto-stop = %v; want 0 (disabled)", b.AutoStop)
	}

	env2 := open(t, o)
	defer env2.Close(t.Context())
	if env2.ID() != id {
		t.Fatalf("second New made sandbox %s; want the task's %s", env2.ID(), id)
	}
	if st := state(t, f, id); st != "started" {
		t.Fatalf("reopened sandbox is %s; want started", st)
	}
	if res := run(t, env2, "cat state.txt"); res.Output != "kept\n" {
		t.Fatalf("file after reopening = %q; want kept", res.Output)
	}

	// Archived behind runbox's back: the agent went with it (the next
	// command is told its session state was reset), the sandbox is
	// started again with its files, and it is the same sandbox.
	if err := f.SetState(id, "archived"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 30*time.Second, "the agent's loss to be seen", func() bool { return env2.Ping(t.Context()) != nil })
	if res := run(t, env2, "cat state.txt"); res.Output != "kept\n" || !res.EnvironmentRecreated || env2.ID() != id {
		t.Fatalf("after an archive behind its back: %q recreated=%v in %s; want kept, session reset, sandbox %s", res.Output, res.EnvironmentRecreated, env2.ID(), id)
	}
	if len(f.Sandboxes()) != 1 {
		t.Fatalf("%d sandboxes; want only the task's", len(f.Sandboxes()))
	}

	other := options(t, f)
	eph := open(t, other)
	eid := eph.ID()
	if eid == id {
		t.Fatalf("an ephemeral environment reused the task's sandbox")
	}
	eph.Close(t.Context())
	if st := state(t, f, eid); st != "absent" {
		t.Fatalf("ephemeral sandbox after Close is %s; want deleted", st)
	}
}

// TestEnv_DeletedMidSession: a command whose sandbox is deleted under it
// fails at once saying so, and the next one runs in a new sandbox and
// says it was recreated — with the agent, and on the toolbox path.
func TestEnv_DeletedMidSession(t *testing.T) {
	for _, noAgent := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoAgent=%v", noAgent), func(t *testing.T) {
			f := newFake(t)
			o := options(t, f)
			o.NoAgent = noAgent
			env := open(t, o)
			defer env.Close(t.Context())
			id := env.ID()
			run(t, env, "true")
			fifo := filepath.Join(t.TempDir(), "started")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := env.Run(ctx, envs.Command{Shell: "echo started >" + fifo + "; sleep 30"})
				done <- err
			}()
			started := make(chan error, 1)
			go func() { // opening a fifo waits for its writer: the command has started
				b, err := os.ReadFile(fifo)
				if err == nil && string(b) != "started\n" {
					err = fmt.Errorf("read %q", b)
				}
				started <- err
			}()
			select {
			case err := <-started:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the command never started")
			}
			if err := f.Delete(id); err != nil {
				t.Fatal(err)
			}
			err := <-done
			if err == nil || !strings.Contains(err.Error(), "gone (deleted)") || !strings.Contains(err.Error(), "recreates") {
				t.Fatalf("Run in a deleted sandbox = %v; want an error saying it is gone and will be recreated", err)
			}
			res := run(t, env, "echo again")
			if res.Output != "again\n" || !res.EnvironmentRecreated {
				t.Fatalf("next Run = %q recreated=%v; want again, recreated", res.Output, res.EnvironmentRecreated)
			}
			if env.ID() == id {
				t.Fatalf("still sandbox %s after it was deleted", id)
			}
		})
	}
}

// TestEnv_FilesRefuseEscapingPaths: the toolbox path's file transfer
// puts a file exactly where it is named. (With the agent, file transfer
// is the agent's, with its own rules; the fake's sandboxes share this
// machine's paths, so it is not exercised with escaping paths here.)
func TestEnv_FilesRefuseEscapingPaths(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.NoAgent = true
	env := open(t, o)
	defer env.Close(t.Context())
	for _, p := range []string{"rel/f", "/tmp/../etc/x", "/tmp//x", "/tmp/a/.."} {
		if err := env.PutFile(t.Context(), p, strings.NewReader("x"), 0o644); !errors.Is(err, envs.ErrBadCommand) {
			t.Errorf("PutFile(%q) = %v; want ErrBadCommand", p, err)
		}
		if _, err := env.GetFile(t.Context(), p); !errors.Is(err, envs.ErrBadCommand) {
			t.Errorf("GetFile(%q) = %v; want ErrBadCommand", p, err)
		}
	}
}

// TestEnv_OutlastsSDKTimeout runs a command longer than the SDK's shared
// 60 s http.Client timeout.
func TestEnv_OutlastsSDKTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("65 s command; run without -short")
	}
	f := newFake(t)
	env := open(t, options(t, f))
	defer env.Close(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: "sleep 65; echo finished"})
	if err != nil || res.Code != 0 || res.Output != "finished\n" {
		t.Fatalf("65 s command = %+v, %v; want exit 0 and finished", res, err)
	}
}

// TestSandboxes_FindsWhatRunboxLeft: the reaper's listing finds the
// owner's runbox-labelled sandboxes, stopped ones included, and Remove
// deletes them.
func TestSandboxes_FindsWhatRunboxLeft(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.Persistent, o.Task = true, "left"
	env := open(t, o)
	id := env.ID()
	env.Close(t.Context())
	other := options(t, f)
	other.Owner = "someone-else"
	env2 := open(t, other)
	defer env2.Close(t.Context())

	got, err := daytona.Sandboxes(t.Context(), o.Credentials, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[id] != "stopped" {
		t.Fatalf("Sandboxes(tester) = %v; want only %s, stopped", got, id)
	}
	if err := daytona.Remove(t.Context(), o.Credentials, id); err != nil {
		t.Fatal(err)
	}
	if st := state(t, f, id); st != "absent" {
		t.Fatalf("after Remove the sandbox is %s", st)
	}
	if err := daytona.Remove(t.Context(), o.Credentials, id); err != nil {
		t.Fatalf("Remove of a gone sandbox = %v; want nil", err)
	}
}

// TestEnv_ReportsWhatItCannotDo: with the agent turned off the
// environment says so in every result and in its capabilities.
func TestEnv_ReportsWhatItCannotDo(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.NoAgent = true
	env := open(t, o)
	defer env.Close(t.Context())
	res := run(t, env, "true")
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "degraded") || !strings.Contains(w, "agent turned off") {
		t.Errorf("warnings = %q; want the degraded mode and its reason named", res.Warnings)
	}
	caps := env.Capabilities()
	want := map[envs.Capability]envs.CapState{
		envs.CapPTY: envs.Unsupported, envs.CapSessionState: envs.Unsupported, envs.CapSignals: envs.Unsupported,
		envs.CapStdin: envs.Degraded, envs.CapTreeKill: envs.Degraded,
		envs.CapFileTransfer: envs.Active, envs.CapContainment: envs.Active, envs.CapHostAccess: envs.Unsupported,
	}
	for c, st := range want {
		if caps.State(c) != st {
			t.Errorf("%s = %v; want %v", c, caps.State(c), st)
		}
	}
	if got := daytona.Capabilities(o); got.State(envs.CapSessionState) != envs.Unsupported {
		t.Errorf("Capabilities(Options{NoAgent}) reports session state %v; want unsupported", got.State(envs.CapSessionState))
	}
}
