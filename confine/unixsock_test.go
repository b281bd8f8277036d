//go:build linux

package confine_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/testproc"
)

// daemonSocket is a unix socket served outside every writable root, as a
// container engine's or D-Bus's is: any user may connect to it by its
// file modes, so that only the sandbox stands between a command and it.
// It returns the socket's path.
func daemonSocket(t *testing.T) string {
	t.Helper()
	path := testproc.DaemonSocket(t, "engine.sock")
	testproc.ServeUnix(t, path)
	os.Chmod(path, 0o777)
	return path
}

// unixReach is a command that connects to the unix socket at $SOCK every
// way a path can name it: as given, relative to its directory, through a
// link in the workspace, and through /proc/self/fd of an O_PATH
// descriptor; it prints "REACHED how" for each that answers.
const unixReach = `python3 - <<'EOF'
import os, socket
sock = os.environ['SOCK']
try:
    os.symlink(sock, 'link.sock')
except OSError:
    pass
fd = os.open(sock, os.O_PATH)
def reach(how, path, cwd=None):
    s = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        s.connect(path)
        if s.recv(5) == b'` + testproc.Greeting + `':
            print('REACHED', how, flush=True)
    except OSError as e:
        print('refused', how, e, flush=True)
    finally:
        os.chdir(here)
        s.close()
reach('path', sock)
reach('relative', os.path.basename(sock), os.path.dirname(sock))
reach('link', 'link.sock')
reach('procfd', '/proc/self/fd/%d' % fd)
EOF`

// TestUnix_DaemonSocketsRefused protects the promise that a confined
// command reaches no daemon through a pathname unix socket outside its
// writable roots, whatever the profile and network mode and however the
// path is spelled, and that each refusal is reported naming the socket.
// The control runs the same command unconfined and reaches the daemon
// every way.
func TestUnix_DaemonSocketsRefused(t *testing.T) {
	sock := daemonSocket(t)
	forUsers(t, func(t *testing.T, u user) {
		f := newFixture(t, u)
		if out, _ := f.run(t, f.policy(confine.ProfileOff), unixReach, "SOCK="+sock); strings.Count(out, "REACHED") != 4 {
			t.Fatalf("control under off: the daemon is not reached every way:\n%s", out)
		}
		everyConfinement(t, u, func(t *testing.T, f *fixture, p confine.Policy) {
			reported := collect(f)
			out, _ := f.run(t, p, unixReach, "SOCK="+sock)
			if strings.Contains(out, "REACHED") || strings.Count(out, "refused") != 4 {
				t.Errorf("the daemon's socket reached from the sandbox:\n%s", out)
			}
			if f.reports() && !hasViolation(reported(), "connect", sock) {
				t.Errorf("violations %+v; want a connect to %s", reported(), sock)
			}
		})
	})
}

// everyConfinement runs check under workspace and read-only, in every
// network mode, by both start paths, each with a fixture of its own for u.
func everyConfinement(t *testing.T, u user, check func(t *testing.T, f *fixture, p confine.Policy)) {
	viaBoth(t, func(t *testing.T, thread bool) {
		for _, profile := range []string{confine.ProfileWorkspace, confine.ProfileReadOnly} {
			for _, network := range []string{confine.NetworkAllowlist, confine.NetworkOff, confine.NetworkOpen} {
				t.Run(profile+"/"+network, func(t *testing.T) {
					f := newFixture(t, u)
					f.thread = thread
					p := f.policy(profile)
					p.Network = network
					check(t, f, p)
				})
			}
		}
	})
}

// datagramSend is a command that sends a datagram to the unix socket at
// $SOCK every way a program can: sendto and sendmsg from a socket of its
// own, and sendto from one end of a socketpair; it prints "SENT how" for
// each that goes.
const datagramSend = `python3 - <<'EOF'
import os, socket
sock = os.environ['SOCK']
def send(how, fn):
    try:
        fn()
        print('SENT', how, flush=True)
    except OSError as e:
        print('refused', how, e, flush=True)
def plain():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'canary sendto', sock)
def msg():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendmsg([b'canary sendmsg'], [], 0, sock)
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b'canary pair', sock)
send('sendto', plain)
send('sendmsg', msg)
send('pair', pair)
EOF`

// TestUnix_DatagramsRefused protects the promise that a confined command
// sends nothing to a daemon's unix datagram socket (journald, syslog, a
// notify socket), whose sendmsg address seccomp cannot read: every
// profile and network mode refuses the datagram socket itself, reports
// it, and the daemon receives nothing. The control sends all three
// unconfined.
func TestUnix_DatagramsRefused(t *testing.T) {
	daemon := testproc.ServeDatagrams(t)
	sock := daemon.Path
	drain := func() int { return daemon.Count("canary") }
	forUsers(t, func(t *testing.T, u user) {
		f := newFixture(t, u)
		drain()
		if out, _ := f.run(t, f.policy(confine.ProfileOff), datagramSend, "SOCK="+sock); strings.Count(out, "SENT") != 3 || drain() != 3 {
			t.Fatalf("control under off: the datagrams do not all arrive:\n%s", out)
		}
		everyConfinement(t, u, func(t *testing.T, f *fixture, p confine.Policy) {
			reported := collect(f)
			p.UnixSockets = []string{sock} // a connect to it is allowed; a datagram still is not
			out, _ := f.run(t, p, datagramSend, "SOCK="+sock)
			if n := drain(); n != 0 || strings.Contains(out, "SENT") || strings.Count(out, "refused") != 3 {
				t.Errorf("%d datagrams reached the daemon from the sandbox:\n%s", n, out)
			}
			if f.reports() && !hasViolation(reported(), "socket", "unix datagram socket") {
				t.Errorf("violations %+v; want the unix datagram socket", reported())
			}
		})
	})
}

// TestUnix_OwnAndListedSocketsReachable: what a command may use still
// works under the sandbox: a unix server it runs in its workspace and
// TMPDIR (pathname and abstract), and a socket outside that the policy
// lists in UnixSockets. An abstract socket served outside is refused.
func TestUnix_OwnAndListedSocketsReachable(t *testing.T) {
	sock := daemonSocket(t)
	abstract := "@runbox-test-" + strings.ToLower(rand.Text()[:10])
	testproc.ServeUnix(t, abstract)
	own := `python3 - <<'EOF'
import os, socket
def serve_and_reach(addr, how):
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(addr)
    srv.listen(1)
    c = socket.socket(socket.AF_UNIX)
    c.connect(addr)
    a, _ = srv.accept()
    c.sendall(b'x')
    if a.recv(1) == b'x':
        print('OWN', how, flush=True)
serve_and_reach('own.sock', 'workspace')
serve_and_reach(os.path.join(os.environ['TMPDIR'], 'own.sock'), 'tmpdir')
serve_and_reach('\0runbox-own-' + str(os.getpid()), 'abstract')
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('\0' + os.environ['ABSTRACT'][1:])
    print('REACHED outside abstract')
except OSError as e:
    print('refused outside abstract', e)
EOF`
	forUsers(t, func(t *testing.T, u user) {
		viaBoth(t, func(t *testing.T, thread bool) {
			f := newFixture(t, u)
			f.thread = thread
			p := f.policy(confine.ProfileWorkspace)
			out, code := f.run(t, p, own, "ABSTRACT="+abstract)
			for _, want := range []string{"OWN workspace", "OWN tmpdir", "OWN abstract", "refused outside abstract"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Errorf("exit %d, want %q:\n%s", code, want, out)
				}
			}
			p.UnixSockets = []string{sock}
			if out, _ := f.run(t, p, unixReach, "SOCK="+sock); strings.Count(out, "REACHED") < 3 {
				t.Errorf("a socket the policy lists is not reached (the /proc/self/fd spelling may be refused):\n%s", out)
			}
		})
	})
}

// TestNetwork_ShortIPv6AddressDecided: an IPv6 socket address of 24
// bytes (RFC 2133's, without the scope id, which the kernel takes) is
// decided as one of 28: a v4-mapped address of another host on an
// allowed port is refused under the allowlist. The control connects it
// unconfined.
func TestNetwork_ShortIPv6AddressDecided(t *testing.T) {
	other := testproc.NonLoopbackIPv4(t)
	port := testproc.AcceptTCP(t)
	script := fmt.Sprintf(`python3 - <<'EOF'
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
for size in (24, 28):
    s = socket.socket(socket.AF_INET6)
    addr = struct.pack('<H', socket.AF_INET6) + struct.pack('>H', %d) + b'\0' * 4 + socket.inet_pton(socket.AF_INET6, '::ffff:%s') + b'\0' * 4
    buf = ctypes.create_string_buffer(addr, 28)
    if libc.connect(s.fileno(), buf, size) == 0:
        print('CONNECTED', size, flush=True)
    else:
        print('refused', size, ctypes.get_errno(), flush=True)
EOF`, port, other)
	onAllowedPort(t, port, script, func(t *testing.T, out string) {
		if strings.Contains(out, "CONNECTED") || !strings.Contains(out, "refused 24 "+strconv.Itoa(13)) {
			t.Errorf("a v4-mapped address of another host reached on an allowed port (want EACCES, 13):\n%s", out)
		}
	})
}

// onAllowedPort runs script, which tries two ways to reach another host
// on port and prints CONNECTED for each that did: unconfined (the
// control, both must connect), then under the workspace profile with
// port allowed, where check judges its output.
func onAllowedPort(t *testing.T, port int, script string, check func(t *testing.T, out string)) {
	forUsers(t, func(t *testing.T, u user) {
		f := newFixture(t, u)
		if out, _ := f.run(t, f.policy(confine.ProfileOff), script); strings.Count(out, "CONNECTED") != 2 {
			t.Fatalf("control under off: not connected both ways:\n%s", out)
		}
		viaBoth(t, func(t *testing.T, thread bool) {
			f := newFixture(t, u)
			f.thread = thread
			p := f.policy(confine.ProfileWorkspace)
			p.Network = confine.NetworkAllowlist
			p.AllowPorts = []int{port}
			out, _ := f.run(t, p, script)
			check(t, out)
		})
	})
}

// TestNetwork_BlockedConnectsBounded: a command that makes hundreds of
// connects that block (a listener whose backlog is full, on an allowed
// port) costs runbox a bounded number of threads: the connects it makes
// on the command's behalf wait their turn, not each in a thread.
func TestNetwork_BlockedConnectsBounded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, as the fixtures do")
	}
	// A listener that never accepts, with the smallest backlog: once
	// it is full, a connect waits.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	port := sa.(*syscall.SockaddrInet4).Port
	script := fmt.Sprintf(`python3 - <<'EOF'
import os, socket, threading, time
def connect():
    s = socket.socket()
    try:
        s.connect(('127.0.0.1', %d))
    except OSError:
        pass
for _ in range(300):
    threading.Thread(target=connect, daemon=True).start()
print('STARTED', flush=True)
time.sleep(8)
os._exit(0)
EOF`, port)
	threads := func() int {
		b, _ := os.ReadFile("/proc/self/status")
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		return 0
	}
	before := threads()
	f := newFixture(t, users[0])
	p := f.policy(confine.ProfileWorkspace)
	p.Network = confine.NetworkAllowlist
	p.AllowPorts = []int{port}
	done, peak := make(chan struct{}), make(chan int)
	go func() { // ends when the command has
		most := 0
		for {
			select {
			case <-done:
				peak <- most
				return
			case <-time.After(50 * time.Millisecond):
				most = max(most, threads())
			}
		}
	}()
	out, _ := f.run(t, p, script)
	close(done)
	most := <-peak
	if !strings.Contains(out, "STARTED") {
		t.Fatalf("the command did not start its connects:\n%s", out)
	}
	if most-before > 150 {
		t.Errorf("threads went from %d to %d with 300 blocked connects; want at most 150 more", before, most)
	}
}

// TestNetwork_FastOpenDecided: TCP Fast Open connects with sendto or
// sendmsg (MSG_FASTOPEN), not connect: under the allowlist it must not
// reach another host on an allowed port. The control sends unconfined.
func TestNetwork_FastOpenDecided(t *testing.T) {
	other := testproc.NonLoopbackIPv4(t)
	port := testproc.AcceptTCP(t)
	script := fmt.Sprintf(`python3 - <<'EOF'
import socket
for how in ('sendto', 'sendmsg'):
    s = socket.socket()
    try:
        if how == 'sendto':
            s.sendto(b'x', socket.MSG_FASTOPEN, ('%s', %d))
        else:
            s.sendmsg([b'x'], [], socket.MSG_FASTOPEN, ('%s', %d))
        print('CONNECTED', how, flush=True)
    except OSError as e:
        print('refused', how, e, flush=True)
EOF`, other, port, other, port)
	onAllowedPort(t, port, script, func(t *testing.T, out string) {
		if strings.Contains(out, "CONNECTED") {
			t.Errorf("another host reached with TCP Fast Open on an allowed port:\n%s", out)
		}
	})
}
