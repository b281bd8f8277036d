package ssh_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/runbox/runbox/termination"
)

// sshdPath is Debian's OpenSSH server (scripts/test installs it).
const sshdPath = "/usr/sbin/sshd"

// skip skips, or fails under RUNBOX_INTEGRATION=require.
func skip(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("RUNBOX_INTEGRATION") == "require" {
		t.Fatalf("RUNBOX_INTEGRATION=require: "+format, args...)
	}
	t.Skipf(format, args...)
}

// sshd is a real OpenSSH server on 127.0.0.1 with a generated host key,
// accepting one generated user key for the current user.
type sshd struct {
	t       *testing.T
	dir     string
	port    int
	hostKey gossh.PublicKey
	userKey string // private key file for the current user
	config  string
	cmd     *exec.Cmd
	stderr  *os.File
}

// startSSHD starts sshd, stopped (with every process it started) at the
// end of the test.
func startSSHD(t *testing.T) *sshd {
	t.Helper()
	if testing.Short() {
		t.Skip("sshd tests are integration tests (-short)")
	}
	if _, err := os.Stat(sshdPath); err != nil {
		skip(t, "no sshd (apt-get install openssh-server; scripts/test does): %v", err)
	}
	if os.Geteuid() != 0 {
		skip(t, "sshd tests run as root (sshd needs privilege separation)")
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		skip(t, "no /run/sshd: %v", err)
	}
	d := &sshd{t: t, dir: t.TempDir()}
	hostPub := writeKey(t, filepath.Join(d.dir, "host_ed25519"))
	d.hostKey = hostPub
	d.userKey = filepath.Join(d.dir, "id_user")
	userPub := writeKey(t, d.userKey)
	if err := os.WriteFile(filepath.Join(d.dir, "authorized_keys"), gossh.MarshalAuthorizedKey(userPub), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	d.config = filepath.Join(d.dir, "sshd_config")
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
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
`, d.port, filepath.Join(d.dir, "host_ed25519"), filepath.Join(d.dir, "authorized_keys"))
	if err := os.WriteFile(d.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if d.stderr, err = os.Create(filepath.Join(d.dir, "sshd.log")); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			b, _ := os.ReadFile(d.stderr.Name())
			t.Logf("sshd log:\n%s", b)
		}
		d.stderr.Close()
	})
	return d
}

// start runs sshd on d's port and waits until it accepts connections.
func (d *sshd) start() {
	t := d.t
	t.Helper()
	d.cmd = exec.Command(sshdPath, "-D", "-e", "-f", d.config)
	d.cmd.Stderr = d.stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", d.addr())
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(d.stderr.Name())
			t.Fatalf("sshd does not listen on %s: %v\n%s", d.addr(), err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills sshd and everything it started (its connection handlers and
// their sessions), by PID.
func (d *sshd) stop() {
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

func (d *sshd) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port)) }

// target is user@127.0.0.1:port for the current user.
func (d *sshd) target() string { return "root@" + d.addr() }

// knownHosts writes a known_hosts file that lists key for d (nil: an
// empty file) and returns its path.
func (d *sshd) knownHosts(key gossh.PublicKey) string {
	p := filepath.Join(d.t.TempDir(), "known_hosts")
	var b []byte
	if key != nil {
		b = []byte(knownhosts.Line([]string{knownhosts.Normalize(d.addr())}, key) + "\n")
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		d.t.Fatal(err)
	}
	return p
}

// writeKey generates an ed25519 key, writes its private half to p in
// OpenSSH format (and the public half to p.pub), and returns the public key.
func writeKey(t *testing.T, p string) gossh.PublicKey {
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

// encryptedKey writes an ed25519 key encrypted with a passphrase to p.
func encryptedKey(t *testing.T, p string) {
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

// ctx is a test context bounded by a generous hang limit.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// gosshFingerprint is d's host key fingerprint.
func gosshFingerprint(d *sshd) string { return gossh.FingerprintSHA256(d.hostKey) }
