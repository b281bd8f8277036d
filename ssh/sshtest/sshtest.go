// Package sshtest runs a real OpenSSH server for tests: Debian's sshd on
// 127.0.0.1 with a random port, a generated host key and a generated key
// for the current user (root, in CI), stopped with everything it started
// at the end of the test. It is for tests only.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/termination"
)

// Path is Debian's OpenSSH server (scripts/test installs it).
const Path = "/usr/sbin/sshd"

// Server is a real OpenSSH server on 127.0.0.1 with a generated host key,
// accepting one generated user key for root.
type Server struct {
	t *testing.T
	// Dir is the server's private directory (keys, configuration, log).
	Dir string
	// Port is the port it listens on.
	Port int
	// HostKey is its host key.
	HostKey gossh.PublicKey
	// UserKey is the private key file it accepts for root.
	UserKey string
	// Container is the docker container sshd runs in ([StartContainer]);
	// empty for an sshd on this machine.
	Container string
	config    string
	cmd       *exec.Cmd
	stderr    *os.File
}

// Option changes the server [Start] runs.
type Option func(*options)

type options struct {
	env []string // NAME=value
}

// WithEnv sets name=value in the environment of every session the server
// starts (sshd_config SetEnv): a test gives the far side a state or cache
// directory of its own this way. value must hold no space or quote.
func WithEnv(name, value string) Option {
	return func(o *options) { o.env = append(o.env, name+"="+value) }
}

// Start starts sshd, stopped (with every process it started) at the end
// of the test. It skips when sshd is absent, under -short, or when not
// root (it fails instead under RUNBOX_INTEGRATION=require).
func Start(t *testing.T, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	if testing.Short() {
		t.Skip("sshd tests are integration tests (-short)")
	}
	if _, err := os.Stat(Path); err != nil {
		integration.Skip(t, "no sshd (apt-get install openssh-server; scripts/test does): %v", err)
	}
	if os.Geteuid() != 0 {
		integration.Skip(t, "sshd tests run as root (sshd needs privilege separation)")
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		integration.Skip(t, "no /run/sshd: %v", err)
	}
	d := newServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	d.config = d.writeConfig(d.Port, "127.0.0.1", d.Dir, o)
	if d.stderr, err = os.Create(filepath.Join(d.Dir, "sshd.log")); err != nil {
		t.Fatal(err)
	}
	d.Restart()
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(d.stderr.Name())
			t.Logf("sshd log:\n%s", b)
		}
		d.stderr.Close()
	})
	return d
}

// newServer generates the host key and the user key, and authorizes the
// user key, in a new private directory.
func newServer(t *testing.T) *Server {
	t.Helper()
	d := &Server{t: t, Dir: t.TempDir()}
	d.HostKey = WriteKey(t, filepath.Join(d.Dir, "host_ed25519"))
	d.UserKey = filepath.Join(d.Dir, "id_user")
	userPub := WriteKey(t, d.UserKey)
	if err := os.WriteFile(filepath.Join(d.Dir, "authorized_keys"), gossh.MarshalAuthorizedKey(userPub), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// writeConfig writes the server's sshd_config, for sshd listening on
// listen:port and seeing d.Dir as dir; it returns the file's path.
func (d *Server) writeConfig(port int, listen, dir string, o options) string {
	d.t.Helper()
	cfg := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
PidFile none
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 64
MaxStartups 64
LogLevel VERBOSE
`, port, listen, path.Join(dir, "host_ed25519"), path.Join(dir, "authorized_keys"))
	if len(o.env) > 0 {
		cfg += "SetEnv " + strings.Join(o.env, " ") + "\n"
	}
	p := filepath.Join(d.Dir, "sshd_config")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		d.t.Fatal(err)
	}
	return p
}

// Restart runs sshd on d's port (again, after Stop) and waits until it
// accepts connections.
func (d *Server) Restart() {
	t := d.t
	t.Helper()
	d.local("Restart")
	d.cmd = exec.Command(Path, "-D", "-e", "-f", d.config)
	d.cmd.Stderr = d.stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", d.Addr())
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(d.stderr.Name())
			t.Fatalf("sshd does not listen on %s: %v\n%s", d.Addr(), err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills sshd and everything it started (its connection handlers and
// their sessions), by PID.
func (d *Server) Stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	pid := d.cmd.Process.Pid
	kids, _ := termination.Descendants(pid)
	d.cmd.Process.Kill()
	for _, k := range kids {
		if p, err := os.FindProcess(k.PID); err == nil {
			p.Kill()
		}
	}
	d.cmd.Wait()
	d.cmd = nil
}

// Addr is 127.0.0.1:port.
func (d *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)) }

// Target is root@127.0.0.1:port.
func (d *Server) Target() string { return "root@" + d.Addr() }

// KnownHosts writes a known_hosts file that lists key for d (nil: an
// empty file) and returns its path.
func (d *Server) KnownHosts(key gossh.PublicKey) string {
	p := filepath.Join(d.t.TempDir(), "known_hosts")
	var b []byte
	if key != nil {
		b = []byte(knownhosts.Line([]string{knownhosts.Normalize(d.Addr())}, key) + "\n")
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		d.t.Fatal(err)
	}
	return p
}

// WriteKey generates an ed25519 key, writes its private half to p in
// OpenSSH format (and the public half to p.pub), and returns the public key.
func WriteKey(t *testing.T, p string) gossh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".pub", gossh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	return sp
}

// EncryptedKey writes an ed25519 key encrypted with a passphrase to p.
func EncryptedKey(t *testing.T, p string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := gossh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Freeze stops (SIGSTOP) every process sshd started — its connection
// handlers and their sessions — so that the open connections go silent
// while the TCP connections stay up; sshd itself still accepts new ones.
// The returned func resumes them.
func (d *Server) Freeze() (resume func()) {
	d.t.Helper()
	d.local("Freeze")
	kids, err := termination.Descendants(d.cmd.Process.Pid)
	if err != nil || len(kids) == 0 {
		d.t.Fatalf("no connection to freeze: %v", err)
	}
	for _, k := range kids {
		syscall.Kill(k.PID, syscall.SIGSTOP)
	}
	return func() {
		for _, k := range kids {
			syscall.Kill(k.PID, syscall.SIGCONT)
		}
	}
}

// Cut drops every open connection the way a network failure does: it
// SIGKILLs the sshd processes that serve them (not the listener, and not
// the sessions' own processes, which lose their channel). It returns how
// many it killed; new connections are accepted as before.
func (d *Server) Cut() int {
	d.t.Helper()
	d.local("Cut")
	kids, err := termination.Descendants(d.cmd.Process.Pid)
	if err != nil {
		d.t.Fatalf("cut: %v", err)
	}
	n := 0
	for _, k := range kids {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", k.PID))
		if err != nil || exe != Path {
			continue
		}
		if k.Signal(syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// local fails the test when d runs in a container: what acts on sshd's
// processes acts on this machine's.
func (d *Server) local(what string) {
	d.t.Helper()
	if d.Container != "" {
		d.t.Fatalf("sshtest: %s is for an sshd on this machine, not in container %s", what, d.Container)
	}
}
