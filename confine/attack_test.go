//go:build linux

package confine_test

import (
	"archive/tar"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/integration"
)

// attack is one thing a confined command must not be able to do. setup
// prepares it and returns extra environment for the script; worked
// reports, after the run, whether the attack succeeded; want is the
// violation Explain must report under the workspace profile.
type attack struct {
	name     string
	rootOnly bool
	setup    func(t *testing.T, f *fixture) []string
	script   string
	worked   func(f *fixture, out string) bool
	want     func(f *fixture) (op, target string)
}

func victimChanged(f *fixture, _ string) bool { return f.victimChanged() }
func writeVictim(f *fixture) (string, string) { return "write", f.victim }
func printed(marker string) func(*fixture, string) bool {
	return func(_ *fixture, out string) bool { return strings.Contains(out, marker) }
}

var attacks = []attack{
	{
		name:   "symlink-write",
		script: `ln -s "$VICTIM" link && echo PWNED > link`,
		worked: victimChanged, want: writeVictim,
	},
	{
		name:   "hardlink-write",
		script: `ln "$VICTIM" hardlink && echo PWNED >> hardlink`,
		worked: victimChanged, want: writeVictim,
	},
	{
		name:   "tar-extract",
		setup:  evilTar,
		script: `tar -xPf evil.tar`,
		worked: victimChanged, want: writeVictim,
	},
	{
		name:   "delete-outside",
		script: `rm -f "$VICTIM"`,
		worked: victimChanged, want: writeVictim,
	},
	{
		name:   "overwrite-outside",
		script: `echo PWNED > "$VICTIM"`,
		worked: victimChanged, want: writeVictim,
	},
	{
		name:   "read-ssh-key",
		script: `cat ~/.ssh/id_ed25519`,
		worked: printed(secretText),
		want:   func(f *fixture) (string, string) { return "read", f.secret },
	},
	{
		name:   "setuid-outside",
		script: `chmod 4755 "$VICTIM" || chmod u+s "$VICTIM"; python3 -c 'import os, sys; os.chmod(sys.argv[1], 0o2755)' "$VICTIM"`,
		worked: func(f *fixture, _ string) bool {
			fi, err := os.Stat(f.victim)
			return err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0
		},
		want: func(f *fixture) (string, string) { return "", "" },
	},
	{
		name:   "read-npm-token",
		script: `cat ~/.npmrc`,
		worked: printed("NPM-TOKEN-CANARY"),
		want:   func(f *fixture) (string, string) { return "read", filepath.Join(f.home, ".npmrc") },
	},
	{
		name:     "read-password-hashes",
		rootOnly: true, // nobody may not read them anyway
		script:   `cat /etc/shadow`,
		worked:   func(_ *fixture, out string) bool { return strings.Contains(out, "root:") },
		want:     func(*fixture) (string, string) { return "read", "/etc/shadow" },
	},
	{
		name:     "read-parent-memory",
		rootOnly: true, // nobody may not read root's memory anyway
		setup:    memAddress,
		script:   `dd if=/proc/$PPID/mem iflag=skip_bytes skip=$ADDR bs=${#CANARY} count=1 status=none`,
		worked:   func(_ *fixture, out string) bool { return strings.Contains(out, string(memCanary[:])) },
		want: func(*fixture) (string, string) {
			return "ptrace", fmt.Sprintf("/proc/%d/", os.Getpid())
		},
	},
	{
		name:     "move-to-another-cgroup",
		rootOnly: true,
		setup:    otherCgroup,
		script:   `echo $$ > "$CG/cgroup.procs" && grep -qx $$ "$CG/cgroup.procs" && echo MOVED`,
		worked:   printed("MOVED"),
		want:     func(*fixture) (string, string) { return "write", "/sys/fs/cgroup/" },
	},
	{
		// The kernel checks only file modes before starting a child in
		// another cgroup (clone3's CLONE_INTO_CGROUP): root passes them
		// everywhere, and Landlock does not see the check.
		name:     "fork-into-another-cgroup",
		rootOnly: true,
		setup:    otherCgroup2,
		script:   forkIntoCgroup,
		worked:   printed("MOVED"),
		want:     func(*fixture) (string, string) { return "cgroup", "clone3" },
	},
	{
		name:     "write-kernel-setting",
		rootOnly: true,
		// Writes back the value it reads: the control run changes nothing.
		script: `v=$(cat /proc/sys/vm/swappiness) && echo "$v" > /proc/sys/vm/swappiness && echo WROTE`,
		worked: printed("WROTE"),
		want:   func(*fixture) (string, string) { return "write", "/proc/sys/vm/swappiness" },
	},
	{
		name:   "tcp-to-unlisted-port",
		setup:  tcpListener,
		script: `exec 3<>/dev/tcp/127.0.0.1/$PORT && echo CONNECTED`,
		worked: printed("CONNECTED"),
		want:   func(*fixture) (string, string) { return "connect", "127.0.0.1:" },
	},
	{
		name:   "udp-send",
		setup:  udpListener,
		script: `echo data > /dev/udp/127.0.0.1/$PORT && echo SENT`,
		worked: printed("SENT"),
		want:   func(*fixture) (string, string) { return "connect", "udp 127.0.0.1:" },
	},
	{
		name:   "signal-outside",
		setup:  outsideSleeper,
		script: `kill -TERM $VPID && echo KILLED`,
		worked: printed("KILLED"),
		want:   func(*fixture) (string, string) { return "signal", "process " },
	},
}

// TestAttacks_FailUnderWorkspace performs each attack for real, as root
// and as nobody: under the off profile it succeeds (so the attack is
// real), under workspace it fails and Explain names it. A layer that
// stopped working would let the workspace run succeed.
func TestAttacks_FailUnderWorkspace(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) { runAttacks(t, u, false) })
}

// TestAttacks_FailFromPreparedThread performs the same attacks on
// programs started from a thread a Prepared confined (in this test
// process as root, in a helper process running as nobody): they must
// hold exactly what the trampoline's programs hold.
func TestAttacks_FailFromPreparedThread(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) { runAttacks(t, u, true) })
}

func runAttacks(t *testing.T, u user, thread bool) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if a.rootOnly && u.cred != nil {
				t.Skip("root only")
			}
			for _, profile := range []string{confine.ProfileOff, confine.ProfileWorkspace} {
				f := newFixture(t, u)
				f.thread = thread
				env := []string{"VICTIM=" + f.victim}
				if a.setup != nil {
					env = append(env, a.setup(t, f)...)
				}
				p := f.policy(profile)
				out, code := f.run(t, p, a.script, env...)
				worked := a.worked(f, out)
				if profile == confine.ProfileOff {
					if !worked {
						t.Fatalf("control run under off: the attack did not work (exit %d):\n%s", code, out)
					}
					continue
				}
				if worked {
					t.Fatalf("under workspace the attack worked (exit %d):\n%s", code, out)
				}
				vs := confine.Explain(p, out)
				t.Logf("output: %s\nviolations: %v", out, vs)
				op, target := a.want(f)
				if op != "" && !hasViolation(vs, op, target) {
					t.Errorf("Explain = %v; want %s %s... from output:\n%s", vs, op, target, out)
				}
			}
		})
	}
}

// memCanary is a secret in this test process's memory, which the command
// (its child) tries to read through /proc/$PPID/mem.
var memCanary = [...]byte{'M', 'E', 'M', '-', 'C', 'A', 'N', 'A', 'R', 'Y', '-', '4', '2'}

func memAddress(*testing.T, *fixture) []string {
	return []string{
		"ADDR=" + strconv.FormatUint(uint64(uintptr(unsafe.Pointer(&memCanary[0]))), 10),
		"CANARY=" + string(memCanary[:]),
	}
}

// evilTar writes, in the workspace, an archive whose member is the
// victim's absolute path.
func evilTar(t *testing.T, f *fixture) []string {
	t.Helper()
	path := filepath.Join(f.ws, "evil.tar")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(fh)
	body := "PWNED\n"
	if err := tw.WriteHeader(&tar.Header{Name: f.victim, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(body))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if f.u.cred != nil {
		os.Chown(path, int(f.u.cred.Uid), int(f.u.cred.Gid))
	}
	return nil
}

// otherCgroup makes a cgroup the command is not in and removes it after.
func otherCgroup(t *testing.T, _ *fixture) []string {
	t.Helper()
	for _, h := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		dir, err := os.MkdirTemp(h, "confine-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.Remove(dir) })
		return []string{"CG=" + dir}
	}
	integration.Skip(t, "no cgroup hierarchy to create a group in")
	return nil
}

// forkIntoCgroup starts a child in $CG (a cgroup2 group) with clone3 and
// prints MOVED when the child is there; the child waits on a pipe until
// its parent has looked.
const forkIntoCgroup = `python3 - <<'EOF'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
cg = os.environ["CG"]
fd = os.open(cg, os.O_RDONLY | os.O_DIRECTORY)
r, w = os.pipe()
CLONE_INTO_CGROUP, SIGCHLD, SYS_clone3 = 0x200000000, 17, 435
args = ctypes.create_string_buffer(struct.pack("11Q", CLONE_INTO_CGROUP, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, fd), 88)
pid = libc.syscall(SYS_clone3, args, 88)
if pid == 0:
    os.close(w)
    os.read(r, 1)
    os._exit(0)
if pid < 0:
    print("clone3 into " + cg + ": " + os.strerror(ctypes.get_errno()))
    sys.exit(1)
os.close(r)
print("MOVED" if str(pid) in open(cg + "/cgroup.procs").read().split() else "stayed")
os.close(w)
os.waitpid(pid, 0)
EOF`

// otherCgroup2 makes a group in the cgroup2 hierarchy, which the command
// is not in, and removes it after (once the command's child has left it).
func otherCgroup2(t *testing.T, _ *fixture) []string {
	t.Helper()
	for _, h := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(h, "cgroup.controllers")); err != nil {
			continue
		}
		dir, err := os.MkdirTemp(h, "confine-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
		return []string{"CG=" + dir}
	}
	integration.Skip(t, "no cgroup2 hierarchy to create a group in")
	return nil
}

// removeCgroup removes an empty group, waiting while a process that has
// exited still counts in it.
func removeCgroup(t *testing.T, dir string) {
	deadline := time.Now().Add(time.Minute)
	for {
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("removing %s: %v", dir, err)
			return
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by deadline
	}
}

func tcpListener(t *testing.T, _ *fixture) []string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return []string{"PORT=" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
}

func udpListener(t *testing.T, _ *fixture) []string {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return []string{"PORT=" + strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port)}
}

// outsideSleeper starts a process of the same user outside the sandbox.
func outsideSleeper(t *testing.T, f *fixture) []string {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.u.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return []string{"VPID=" + strconv.Itoa(cmd.Process.Pid)}
}
