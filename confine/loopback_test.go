//go:build linux

package confine_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
)

// ownServer is a command that serves on a loopback port it picks itself
// (no port is allowed but the proxy's) and connects to it twice: a
// blocking connect, one with a timeout (a non-blocking socket whose
// connect completes later) in a child process, and one from a thread
// that is not the process's first.
const ownServer = `python3 - <<'EOF'
import os, socket, threading
srv = socket.socket()
srv.bind(('127.0.0.1', 0))
srv.listen(4)
srv.settimeout(60)
port = srv.getsockname()[1]
c = socket.socket()
c.connect(('127.0.0.1', port))
a, _ = srv.accept()
c.sendall(b'one')
print('GOT', a.recv(3).decode(), flush=True)
if os.fork() == 0:
    c2 = socket.create_connection(('localhost', port), timeout=30)
    c2.sendall(b'two')
    os._exit(0)
b, _ = srv.accept()
print('GOT', b.recv(3).decode(), flush=True)
os.wait()
def from_thread():
    c3 = socket.socket()
    c3.connect(('127.0.0.1', port))
    c3.sendall(b'thr')
t = threading.Thread(target=from_thread)
t.start()
d, _ = srv.accept()
print('GOT', d.recv(3).decode(), flush=True)
t.join()
EOF`

// allowlistFixture is a fixture for u whose policy is the workspace
// profile under a network allowlist, with a loopback listener standing
// for the session's proxy (its port the only one allowed).
func allowlistFixture(t *testing.T, u user, thread bool) (*fixture, confine.Policy) {
	t.Helper()
	proxy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	f := newFixture(t, u)
	f.thread = thread
	p := f.policy(confine.ProfileWorkspace)
	p.Network = confine.NetworkAllowlist
	p.ProxyPorts = []int{proxy.Addr().(*net.TCPAddr).Port}
	return f, p
}

// TestNetwork_OwnLoopbackServerReachable: under allowlist a command
// reaches a loopback server it started itself, on a port no rule allows,
// while a server outside it on such a port stays out of reach; a command
// cannot reach an outside server by listening on the same port itself.
func TestNetwork_OwnLoopbackServerReachable(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		viaBoth(t, func(t *testing.T, thread bool) {
			outside, err := net.Listen("tcp4", "127.0.0.2:0")
			if err != nil {
				t.Fatal(err)
			}
			defer outside.Close()
			port := strconv.Itoa(outside.Addr().(*net.TCPAddr).Port)
			f, p := allowlistFixture(t, u, thread)
			out, code := f.run(t, p, ownServer)
			if code != 0 || !strings.Contains(out, "GOT one") || !strings.Contains(out, "GOT two") || !strings.Contains(out, "GOT thr") {
				t.Fatalf("own loopback server not reachable under allowlist (exit %d):\n%s", code, out)
			}

			reach := `exec 3<>/dev/tcp/127.0.0.2/` + port + ` && echo CONNECTED`
			if out, _ := f.run(t, f.policy(confine.ProfileOff), reach); !strings.Contains(out, "CONNECTED") {
				t.Fatalf("control under off: outside server not reachable:\n%s", out)
			}
			if out, _ := f.run(t, p, reach); strings.Contains(out, "CONNECTED") {
				t.Errorf("outside server on a port no rule allows reached under allowlist:\n%s", out)
			}
			// The command listens on the outside server's port (on
			// another loopback address) and then connects to it: the
			// port is not the command's alone. Another process of a busy
			// machine may hold that port on 127.0.0.1: then another
			// outside port is tried.
			squat := func(port string) string {
				out, _ := f.run(t, p, `python3 - <<'EOF'
import errno, socket
s = socket.socket()
try:
    s.bind(('127.0.0.1', `+port+`))
except OSError as e:
    if e.errno == errno.EADDRINUSE:
        print('BUSY'); raise SystemExit
    raise
s.listen(1)
c = socket.socket()
try:
    c.connect(('127.0.0.2', `+port+`)); print('CONNECTED')
except OSError as e:
    print('refused:', e)
EOF`)
				return out
			}
			out = squat(port)
			for try := 0; strings.Contains(out, "BUSY") && try < 20; try++ {
				other, err := net.Listen("tcp4", "127.0.0.2:0")
				if err != nil {
					t.Fatal(err)
				}
				out = squat(strconv.Itoa(other.Addr().(*net.TCPAddr).Port))
				other.Close()
			}
			if strings.Contains(out, "CONNECTED") || !strings.Contains(out, "refused") {
				t.Errorf("a command listening on an outside server's port reached it:\n%s", out)
			}
		})
	})
}

// TestNetwork_AllowedPortsOnLoopbackOnly: an allowed port is a loopback
// service: the same port on another address of this host is refused
// (Landlock alone would allow it on every address).
func TestNetwork_AllowedPortsOnLoopbackOnly(t *testing.T) {
	other := testproc.NonLoopbackIPv4(t)
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	forUsers(t, func(t *testing.T, u user) {
		viaBoth(t, func(t *testing.T, thread bool) {
			f := newFixture(t, u)
			f.thread = thread
			p := f.policy(confine.ProfileWorkspace)
			p.Network = confine.NetworkAllowlist
			p.AllowPorts = []int{port}
			reach := func(host string) string {
				return fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && echo CONNECTED`, host, port)
			}
			if out, _ := f.run(t, p, reach("127.0.0.1")); !strings.Contains(out, "CONNECTED") {
				t.Fatalf("allowed loopback port not reachable:\n%s", out)
			}
			if out, _ := f.run(t, f.policy(confine.ProfileOff), reach(other)); !strings.Contains(out, "CONNECTED") {
				t.Fatalf("control under off: %s:%d not reachable:\n%s", other, port, out)
			}
			out, _ := f.run(t, p, reach(other))
			if strings.Contains(out, "CONNECTED") {
				t.Fatalf("allowed port reached on %s, not loopback:\n%s", other, out)
			}
			if !strings.Contains(out, "Permission denied") {
				t.Errorf("want the connect refused with EACCES:\n%s", out)
			}
		})
	})
}

// TestNetwork_NestedSandbox: a program confined inside a confined command
// (runbox in a runbox sandbox) starts and reaches an allowed port: a
// thread may have one seccomp listener only, so the inner sandbox does
// without one.
func TestNetwork_NestedSandbox(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		viaBoth(t, func(t *testing.T, thread bool) {
			f, p := allowlistFixture(t, u, thread)
			enc, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			script := `exec -a ` + helperThread + ` "$EXE" "$POLICY" /bin/bash bash -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT && echo NESTED-CONNECTED'`
			out, code := f.run(t, p, script, "EXE="+f.exe, "POLICY="+string(enc), "PORT="+strconv.Itoa(p.ProxyPorts[0]))
			if code != 0 || !strings.Contains(out, "NESTED-CONNECTED") {
				t.Fatalf("nested sandbox: exit %d\n%s", code, out)
			}
		})
	})
}

// TestNetwork_RefusedConnectsReported: the connects the sandbox refuses
// are reported as it decides them, with the address and the rule, though
// the program prints nothing; a loopback port nothing listens on is
// refused as without the sandbox (ECONNREFUSED), and not reported.
func TestNetwork_RefusedConnectsReported(t *testing.T) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root, as the fixtures do")
	}
	other := testproc.NonLoopbackIPv4(t)
	outside, err := net.Listen("tcp4", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	free, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	viaBoth(t, func(t *testing.T, thread bool) {
		f, p := allowlistFixture(t, users[0], thread)
		reported := collect(f)
		script := fmt.Sprintf(`python3 - <<'EOF'
import errno, socket
for host, port in (('127.0.0.2', %d), ('%s', %d), ('127.0.0.1', %d)):
    s = socket.socket()
    try:
        s.connect((host, port))
    except OSError as e:
        if port == %d:
            print('free port:', errno.errorcode[e.errno])
EOF`, outside.Addr().(*net.TCPAddr).Port, other, p.ProxyPorts[0], freePort, freePort)
		out, code := f.run(t, p, script)
		if code != 0 || !strings.Contains(out, "free port: ECONNREFUSED") {
			t.Fatalf("exit %d; want the free port refused as without a sandbox:\n%s", code, out)
		}
		want := []confine.Violation{
			{Op: "connect", Target: outside.Addr().String(), Rule: "port not allowed (only the session proxy, allowed ports and the command's own servers)"},
			{Op: "connect", Target: net.JoinHostPort(other, strconv.Itoa(p.ProxyPorts[0])), Rule: "not loopback (direct connections go to loopback only; other hosts through the session proxy)"},
		}
		if got := reported(); !slices.Equal(got, want) {
			t.Errorf("reported %+v\nwant %+v", got, want)
		}
	})
}
