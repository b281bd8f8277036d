package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// keyringScript adds (with "add"), reads back ("read") or revokes the
// key runbox-canary in the user's kernel keyring, through the raw system
// calls: what any program can do.
const keyringScript = `import ctypes, sys, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
USER = -4
if sys.argv[1] == "add":
    secret = sys.argv[2].encode()
    r = libc.syscall(nr[0], b"user", b"runbox-canary", secret, len(secret), USER)
    print("added" if r >= 0 else "add refused %d" % ctypes.get_errno())
else:
    kid = libc.syscall(nr[1], 10, USER, b"user", b"runbox-canary", 0)
    if kid < 0:
        print("refused %d" % ctypes.get_errno()); sys.exit(0)
    if sys.argv[1] == "revoke":
        libc.syscall(nr[1], 3, kid); sys.exit(0)
    buf = ctypes.create_string_buffer(128)
    n = libc.syscall(nr[1], 11, kid, buf, 128)
    print("read", buf.raw[:max(n, 0)].decode())
`

// TestSandbox_KernelKeyringClosed protects the promise that a confined
// command reads no secret outside the workspace through the kernel's
// keyrings, which no file rule covers: with a key in the user's keyring
// (a cached password, a ticket), a command under the workspace sandbox
// cannot find or read it, with the gate out of the way; as root and as
// an unprivileged user. The control: the same command with the sandbox
// off reads it.
func TestSandbox_KernelKeyringClosed(t *testing.T) {
	// The python3 of the PATH runbox's commands get, which every user
	// can run.
	python := ""
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		if _, err := os.Stat(filepath.Join(dir, "python3")); err == nil {
			python = filepath.Join(dir, "python3")
			break
		}
	}
	if python == "" {
		t.Skip("no python3 on the commands' PATH")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			script := filepath.Join(filepath.Dir(home), "keyring.py")
			if err := os.WriteFile(script, []byte(keyringScript), 0o644); err != nil {
				t.Fatal(err)
			}
			secret := "keyring-canary-" + u.name
			add := exec.Command(python, script, "add", secret)
			if u.switched {
				add.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
			}
			if out, err := add.CombinedOutput(); err != nil || !strings.Contains(string(out), "added") {
				t.Skipf("cannot add a key to the user's keyring here: %v %s", err, out)
			}
			t.Cleanup(func() {
				revoke := exec.Command(python, script, "revoke")
				revoke.SysProcAttr = add.SysProcAttr
				revoke.Run()
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			read := func(sandbox string) string {
				cmd := u.command(ctx, env, "--yolo", "--sandbox", sandbox, "run", "--", python+" "+script+" read")
				cmd.Dir = home
				out, _ := cmd.CombinedOutput()
				return string(out)
			}
			if got := read("off"); !strings.Contains(got, secret) {
				t.Fatalf("the control read %q: the attack is not real here", got)
			}
			if got := read("workspace"); strings.Contains(got, secret) || !strings.Contains(got, "refused") {
				t.Errorf("a confined command reached the keyring: %q", got)
			}
		})
	}
}

// TestSandbox_FileAttributesOutsideUnchanged protects the promise that a
// confined command changes no metadata outside its writable roots: chattr
// (an ioctl, which neither the file rules nor the mount layer's read-only
// view of other mounts stop for an unprivileged user) on a file of the
// user's outside the workspace is refused, and the file keeps its
// attributes. The control: with the sandbox off it sets them. As root and
// as an unprivileged user.
func TestSandbox_FileAttributesOutsideUnchanged(t *testing.T) {
	chattr, err1 := exec.LookPath("chattr")
	lsattr, err2 := exec.LookPath("lsattr")
	if err1 != nil || err2 != nil {
		t.Skip("no chattr or lsattr")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, outside := sandboxDirs(t, u)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			attrs := func(p string) string {
				out, err := exec.Command(lsattr, "-d", p).CombinedOutput()
				if err != nil {
					t.Skipf("lsattr %s: %v %s (no attributes on this file system)", p, err, out)
				}
				return strings.Fields(string(out))[0]
			}
			for _, sandbox := range []string{"off", "workspace"} {
				target := filepath.Join(outside, "attr-"+sandbox)
				writeOwned(t, u, target, "x\n", 0o644)
				before := attrs(target)
				u.run(t, env, "--yolo", "--sandbox", sandbox, "run", "--cwd", ws, "--", chattr+" +d "+target)
				after := attrs(target)
				if changed := after != before; changed != (sandbox == "off") {
					t.Errorf("%s: attributes %s -> %s; want a change only with the sandbox off", sandbox, before, after)
				}
			}
		})
	}
}
