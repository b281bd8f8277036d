package main

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// TestRun_EgressAskedOnTerminal: on a terminal, runbox run asks about a
// host its sandbox's egress proxy does not know, while the command runs,
// and honours the answer: "y" lets curl reach the server (its page is
// printed), "n" refuses the connection (the proxy's 403 says so, and the
// page is not printed). Before, the prompter was closed once the command
// started, and every such host was refused "broker closed" unasked.
// The server is this test's own, on a non-loopback address of this
// machine when it has one (an address, so the answer reaches it: see
// docs/egress.md), else on loopback.
func TestRun_EgressAskedOnTerminal(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		integration.Skip(t, "no curl: %v", err)
	}
	host := localAddress()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "page-of-the-test-server\n") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"

	for _, tc := range []struct {
		answer string
		served bool
	}{{"y", true}, {"n", false}} {
		t.Run(tc.answer, func(t *testing.T) {
			tt := newTestTerminal(t, false)
			cmd := tt.startRunbox(t, "run", "--sandbox", "workspace", "--cwd", t.TempDir(), "--", "curl", "-sS", url)
			out := tt.waitForAny(t, "Allow?", "runbox: ")
			if !strings.Contains(out, "Allow?") {
				code := waitExit(t, cmd)
				if strings.Contains(tt.output(), "sandbox") && code == 125 {
					integration.Skip(t, "no workspace sandbox here: %q", tt.output())
				}
				t.Fatalf("runbox did not ask (exit %d): %q", code, tt.output())
			}
			if !strings.Contains(out, "connect to "+ln.Addr().String()) || !strings.Contains(out, "sandbox.egress") {
				t.Errorf("the question does not name the host and the rule: %q", out)
			}
			tt.typeIn(t, tc.answer+"\n")
			// The command's output reaches the terminal in its own time:
			// wait for what ends it before reading the whole.
			if tc.served {
				tt.waitForAny(t, "page-of-the-test-server", "curl: (")
			} else {
				tt.waitForAny(t, "refused when asked", "curl: (")
			}
			code := waitExit(t, cmd)
			out = tt.output()
			if served := strings.Contains(out, "page-of-the-test-server"); served != tc.served || code != 0 {
				t.Fatalf("answer %q: exit %d, served = %v; want %v; terminal:\n%s", tc.answer, code, served, tc.served, out)
			}
			if strings.Contains(out, "broker closed") {
				t.Errorf("the question was closed unasked: %q", out)
			}
			if !tc.served && !strings.Contains(out, "refused when asked") {
				t.Errorf("the refusal does not say it was refused when asked: %q", out)
			}
		})
	}
}

// localAddress is an IPv4 address of this machine other than loopback,
// else 127.0.0.1.
func localAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return "127.0.0.1"
}
