package service_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/supervisor"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/service"
)

func TestMain(m *testing.M) {
	// The test binary plays runbox's confinement trampoline.
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		os.Exit(confine.Main(os.Args[2:]))
	}
	// It also plays a background job's supervisor (localJobDaemon).
	if len(os.Args) > 1 && os.Args[1] == supervisorCommand {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	// Installed as runbox-confine on PATH, as the install puts it, for
	// the sessions that run confined as a Go program's would (Example).
	testproc.TrampolineMain(m)
}

// newService is a service with cfg, its local commands unconfined by
// choice when cfg names no profile: the service's own behaviour is tested
// here, the sandbox in sandbox_test.go and through the binary.
func newService(t *testing.T, cfg config.Config) *service.Service {
	t.Helper()
	if cfg.Sandbox.Profile == "" {
		cfg.Sandbox.Profile = "off"
	}
	return newServiceWith(t, service.Options{Config: cfg, Getenv: func(string) string { return "" }})
}

// newServiceWith is a service with opts, closed at the test's end.
func newServiceWith(t *testing.T, opts service.Options) *service.Service {
	t.Helper()
	s, err := service.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// TestSession_StateCarriesOver protects what a server relies on: one
// session keeps its shell state (cwd, exports) from call to call.
func TestSession_StateCarriesOver(t *testing.T) {
	s := newService(t, config.Default())
	ss, err := s.NewSession(service.SessionOptions{Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Run(t.Context(), envs.Command{Shell: "cd /tmp && export RB_X=42"}); err != nil {
		t.Fatal(err)
	}
	res, err := ss.Run(t.Context(), envs.Command{Shell: "echo $RB_X $PWD"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Output); got != "42 /tmp" {
		t.Errorf("second command saw %q; want %q", got, "42 /tmp")
	}
	if got, ok := s.Session(ss.ID); !ok || got != ss {
		t.Errorf("Session(%q) did not find the session", ss.ID)
	}
	if err := ss.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Session(ss.ID); ok {
		t.Errorf("a closed session is still listed")
	}
}

// TestSession_GateFirst: a hardline command is refused before any backend
// is opened, and the refusal is an envs.DeniedError.
func TestSession_GateFirst(t *testing.T) {
	s := newService(t, config.Default())
	ss, err := s.NewSession(service.SessionOptions{Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ss.Run(t.Context(), envs.Command{Shell: "rm -rf --no-preserve-root /"})
	var de *envs.DeniedError
	if !errors.As(err, &de) || !de.Hardline {
		t.Fatalf("rm -rf /: err = %v; want a hardline *envs.DeniedError", err)
	}
	e := service.EncodeError(err, 125)
	if e.Kind != service.KindDenied || !e.Hardline || len(e.Reasons) == 0 || e.ExitCode != 125 {
		t.Errorf("EncodeError = %+v; want a hardline verdict with reasons", e)
	}
}

// TestSession_StdinLinesGated protects the promise that writing to a
// started process's stdin passes the gate like a command: a shell reading
// its stdin never sees a refused line, and sees the lines around it. A
// program that reads its stdin as data (cat) gets every line as written.
func TestSession_StdinLinesGated(t *testing.T) {
	s := newService(t, config.Default())
	ss, err := s.NewSession(service.SessionOptions{Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ss.Start(t.Context(), envs.Command{Shell: "cat"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Stdin(), "rm -rf --no-preserve-root /\n{\"a\": (1)}\n"); err != nil {
		t.Errorf("writing data to cat: %v; want it passed on", err)
	}
	p.Stdin().Close()
	if out, _ := io.ReadAll(p.Output()); string(out) != "rm -rf --no-preserve-root /\n{\"a\": (1)}\n" {
		t.Errorf("cat read %q; want the data as written", out)
	}
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, err = ss.Start(t.Context(), envs.Command{Shell: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	in := p.Stdin()
	if _, err := io.WriteString(in, "echo before\n"); err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(in, "rm -rf --no-preserve-root /\necho never\n")
	if !errors.Is(err, envs.ErrDenied) {
		t.Errorf("writing a hardline line: err = %v; want envs.ErrDenied", err)
	}
	io.WriteString(in, "echo after")
	in.Close()
	out, _ := io.ReadAll(p.Output())
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "before\nnever\nafter\n"; got != want {
		t.Errorf("the process read %q; want %q", got, want)
	}
}

// TestService_PolicyFixedAtStart protects the promise that a command
// cannot weaken the policy of the service that runs it: rewriting the
// configuration file changes nothing until a new service is made.
func TestService_PolicyFixedAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("approval:\n  mode: manual\n"), 0o600)
	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, cfg)
	os.WriteFile(path, []byte("approval:\n  mode: off\n  allow: [\"*\"]\n"), 0o600)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = s.Authorize(ctx, service.Authorization{Command: "git push --force origin main", Backend: "local", HostAccess: true})
	if !errors.Is(err, envs.ErrDenied) {
		t.Errorf("after the file was rewritten, an ask-tier command unattended: err = %v; want refused", err)
	}
}

// A Service whose environments each serve one command (runbox run) opens
// local environments without a pre-started shell; a long-lived one keeps
// it.
func TestService_OneCommandNoPrestart(t *testing.T) {
	for _, one := range []bool{false, true} {
		s, err := service.New(service.Options{Config: config.Default(), Getenv: func(string) string { return "" }, OneCommand: one})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.LocalOptions(envs.Spec{}).NoPrestart; got != one {
			t.Errorf("OneCommand %v: NoPrestart = %v", one, got)
		}
		s.Close(t.Context())
	}
}
