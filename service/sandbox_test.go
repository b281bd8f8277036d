package service_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// asker answers every question with kind and remembers the questions.
type asker struct {
	kind approval.AnswerKind
	mu   sync.Mutex
	asks []approval.Prompt
}

func (a *asker) Ask(_ context.Context, p approval.Prompt) (approval.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asks = append(a.asks, p)
	return approval.Answer{Kind: a.kind}, nil
}

func (a *asker) questions() []approval.Prompt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]approval.Prompt(nil), a.asks...)
}

// sandboxedService is a Service whose local commands run confined, with
// this test binary as the trampoline.
func sandboxedService(t *testing.T, cfg config.Config, home string) *service.Service {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := service.New(service.Options{
		Config:   cfg,
		Getenv:   func(k string) string { return map[string]string{"HOME": home}[k] },
		Confiner: []string{exe, confine.Command},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// TestSession_EgressAsksThroughTheSessionsAsker protects the network half
// of the sandbox as a session uses it: a host not on the allow list is
// put to the session's asker as a question of the gate; answered "no",
// the command's connection is refused and the result names the host;
// answered "once", the same command gets through the session's proxy.
// Every confined command reports the profile in force.
func TestSession_EgressAsksThroughTheSessionsAsker(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "through-the-proxy") })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"
	curl := "curl -sS --max-time 30 " + url

	for _, tc := range []struct {
		answer approval.AnswerKind
		reach  bool
	}{{approval.AnswerDeny, false}, {approval.AnswerOnce, true}} {
		t.Run(tc.answer.String(), func(t *testing.T) {
			home := t.TempDir()
			ws := filepath.Join(t.TempDir(), "ws")
			os.Mkdir(ws, 0o755)
			s := sandboxedService(t, config.Default(), home)
			a := &asker{kind: tc.answer}
			ss, err := s.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: ws}, Asker: a})
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close(context.Background())
			res, err := ss.Run(t.Context(), envs.Command{Shell: curl})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sandbox != confine.ProfileWorkspace {
				t.Errorf("result says sandbox %q", res.Sandbox)
			}
			got := strings.Contains(res.Output, "through-the-proxy")
			if got != tc.reach {
				t.Errorf("reached the server: %v, want %v; output %q", got, tc.reach, res.Output)
			}
			qs := a.questions()
			if len(qs) != 1 || !strings.Contains(qs[0].Command, ln.Addr().String()) || qs[0].Rules[0] != service.RuleEgress {
				t.Errorf("questions %+v; want one about %s", qs, ln.Addr())
			}
			denied := false
			for _, v := range res.SandboxViolations {
				denied = denied || v.Op == "connect" && v.Target == ln.Addr().String()
			}
			if denied == tc.reach {
				t.Errorf("violations %+v; want a denied connect only when refused", res.SandboxViolations)
			}
		})
	}
}

// TestSession_SandboxProfileChosen: a profile named by the user is the
// one in force; off runs unconfined (a control for the write below).
func TestSession_SandboxProfileChosen(t *testing.T) {
	home := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	ws := t.TempDir()
	// In a script, so that only the sandbox stands: the gate would
	// refuse the write up front under a confining profile.
	os.WriteFile(filepath.Join(ws, "w.sh"), []byte("echo x > "+outside+"\n"), 0o755)
	for _, tc := range []struct {
		profile string
		wrote   bool
	}{{"read-only", false}, {"workspace", false}, {"off", true}} {
		s := sandboxedService(t, config.Default(), home)
		ss, err := s.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: ws, Sandbox: tc.profile}})
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(outside)
		res, err := ss.Run(t.Context(), envs.Command{Shell: "bash ./w.sh"})
		ss.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(outside)
		if wrote := statErr == nil; wrote != tc.wrote || res.Sandbox != tc.profile {
			t.Errorf("%s: wrote outside %v (want %v), result sandbox %q", tc.profile, wrote, tc.wrote, res.Sandbox)
		}
	}
}

// TestSession_OwnLoopbackServer: in a sandboxed session a command reaches
// a loopback server it starts itself, on a port no rule allows, directly
// (not through the session's proxy).
func TestSession_OwnLoopbackServer(t *testing.T) {
	home := t.TempDir()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "page.txt"), []byte("own-page\n"), 0o644)
	s := sandboxedService(t, config.Default(), home)
	ss, err := s.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: ws}})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close(context.Background())
	// The server takes a port of the kernel's choosing and says which: a
	// port the test picked and freed could be the session proxy's by now.
	script := `python3 -u -m http.server 0 -b 127.0.0.1 >srv.log 2>&1 &
for i in $(seq 600); do port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' srv.log); [ -n "$port" ] && break; sleep 0.1; done
for i in $(seq 600); do curl -s --noproxy '*' --max-time 10 "http://127.0.0.1:$port/page.txt" && break; sleep 0.1; done
kill $!`
	for i := range 2 {
		res, err := ss.Run(t.Context(), envs.Command{Shell: script})
		if err != nil {
			t.Fatal(err)
		}
		if res.Sandbox != confine.ProfileWorkspace || !strings.Contains(res.Output, "own-page") {
			t.Fatalf("command %d: sandbox %q, output %q; want the page from its own server", i, res.Sandbox, res.Output)
		}
	}
}
