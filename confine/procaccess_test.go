//go:build linux

package confine_test

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/confine"
)

// ptracePy attaches to the process its argument names, or, given
// "child", to a child it forks, and prints what the kernel answered.
const ptracePy = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def attach(pid):
    if libc.ptrace(16, pid, 0, 0) == 0:
        print("ATTACHED", pid)
    else:
        print("REFUSED", pid, ctypes.get_errno())
if sys.argv[1] == "child":
    c = os.fork()
    if c == 0:
        time.sleep(30)
        os._exit(0)
    attach(c)
    os.kill(c, 9)
else:
    attach(int(sys.argv[1]))
`

// fileHandlePy opens the file its argument names through a file handle
// (name_to_handle_at, then open_by_handle_at) and prints what it read.
const fileHandlePy = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class FH(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("handle", ctypes.c_ubyte * 128)]
fh = FH(); fh.bytes = 128
mount = ctypes.c_int()
if libc.name_to_handle_at(-100, sys.argv[1].encode(), ctypes.byref(fh), ctypes.byref(mount), 0) != 0:
    print("NO-HANDLE", ctypes.get_errno()); sys.exit(0)
fd = libc.open_by_handle_at(os.open("/", os.O_RDONLY), ctypes.byref(fh), os.O_RDONLY)
print("OPENED", os.read(fd, 64)) if fd >= 0 else print("REFUSED", ctypes.get_errno())
`

// TestProcessAccess_PtraceDecided: a confined command cannot attach to a
// process it did not start (the control attaches unconfined), and the
// refusal is runbox's decision, reported with the process named; it
// still attaches to its own child (gdb, strace -f).
func TestProcessAccess_PtraceDecided(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		victim := exec.Command("sleep", "600")
		victim.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
		pid := strconv.Itoa(victim.Process.Pid)
		script := `python3 -c "$PY" "$TARGET"`
		f := newFixture(t, u)
		if out, _ := f.run(t, f.policy(confine.ProfileOff), script, "PY="+ptracePy, "TARGET="+pid); !strings.Contains(out, "ATTACHED") {
			t.Fatalf("control under off: no attach: the test proves nothing\n%s", out)
		}
		f = newFixture(t, u)
		got := collect(f)
		out, _ := f.run(t, f.policy(confine.ProfileWorkspace), script, "PY="+ptracePy, "TARGET="+pid)
		if !strings.Contains(out, "REFUSED "+pid+" 1") {
			t.Errorf("under workspace: want EPERM for the attach, got\n%s", out)
		}
		if vs := got(); !hasViolation(vs, "ptrace", "process "+pid+" (sleep)") {
			t.Errorf("violations %+v; want ptrace of process %s (sleep)", vs, pid)
		}
		out, _ = f.run(t, f.policy(confine.ProfileWorkspace), script, "PY="+ptracePy, "TARGET=child")
		if !strings.Contains(out, "ATTACHED") {
			t.Errorf("under workspace the command could not attach to its own child:\n%s", out)
		}
	})
}

// TestProcessAccess_FileHandleDecided: open_by_handle_at, which opens a
// file by a handle and not by a path the file rules see, is refused and
// reported as runbox's decision; as root unconfined it reads the deny
// list's canary (the control).
func TestProcessAccess_FileHandleDecided(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		if u.cred != nil {
			t.Skip("without CAP_DAC_READ_SEARCH the kernel refuses file handles to every user")
		}
		script := `python3 -c "$PY" "$SECRET"`
		f := newFixture(t, u)
		if out, _ := f.run(t, f.policy(confine.ProfileOff), script, "PY="+fileHandlePy, "SECRET="+f.secret); !strings.Contains(out, secretText) {
			t.Fatalf("control under off: the secret was not read: the test proves nothing\n%s", out)
		}
		f = newFixture(t, u)
		got := collect(f)
		out, _ := f.run(t, f.policy(confine.ProfileWorkspace), script, "PY="+fileHandlePy, "SECRET="+f.secret)
		if strings.Contains(out, secretText) || !strings.Contains(out, "REFUSED 1") {
			t.Errorf("under workspace: want EPERM from open_by_handle_at, got\n%s", out)
		}
		if vs := got(); !hasViolation(vs, "open_by_handle_at", "file handle") {
			t.Errorf("violations %+v; want open_by_handle_at", vs)
		}
	})
}
