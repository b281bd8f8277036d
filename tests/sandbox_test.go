package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testproc"
)

// sandboxCase is one attack on the machine from a command that the gate
// lets through (--yolo): it must fail under the workspace sandbox, be
// reported as a violation, and succeed with the sandbox off.
type sandboxCase struct {
	name     string
	cmd      string
	rootOnly bool                    // only root can do it at all (the control run proves nothing for others)
	happened func(t *testing.T) bool // whether the attack took effect
	reset    func(t *testing.T)      // undo it before the next run
	op       string                  // the violation expected under workspace ("" = any)
}

// runResult is the part of `runbox run --json` these tests read.
type runResult struct {
	ExitCode   int    `json:"exit_code"`
	Output     string `json:"output"`
	Sandbox    string `json:"sandbox"`
	Violations []struct {
		Op, Target, Rule string
	} `json:"sandbox_violations"`
}

func decodeRun(t *testing.T, out, errOut string) runResult {
	t.Helper()
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("run --json printed %q (stderr %q): %v", out, errOut, err)
	}
	return r
}

// TestSandbox_HoldsWhatTheGateLetsThrough protects the promise of the
// workspace profile: with the gate off, as root and as an unprivileged
// user, a command cannot write outside its workspace (directly or
// through a link it makes), read credentials or runbox's own files, read
// runbox's memory, leave its cgroup, reach a loopback port the profile
// does not allow, or send UDP — and each denial is in the result. The same
// commands with the sandbox off succeed, so the attacks are real.
func TestSandbox_HoldsWhatTheGateLetsThrough(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, outside := sandboxDirs(t, u)
			victim := filepath.Join(outside, "victim.txt")
			writeOwned(t, u, victim, "keep me\n", 0o644)
			mkdirOwned(t, u, filepath.Join(home, ".ssh"))
			key := "-----BEGIN OPENSSH PRIVATE KEY----- canary-" + randomSecret(t, "k")
			writeOwned(t, u, filepath.Join(home, ".ssh", "id_ed25519"), key, 0o600)
			mkdirOwned(t, u, filepath.Join(home, ".config", "runbox"))
			cfg := filepath.Join(home, ".config", "runbox", "config.yaml")
			open := testproc.AcceptTCP(t)
			cfgText := fmt.Sprintf("approval:\n  mode: manual\nsandbox:\n  network:\n    ports: [%d]\n", open)
			writeOwned(t, u, cfg, cfgText, 0o600)
			tcp := listenTCP(t)
			udp := listenUDP(t)
			dgram := testproc.ServeDatagrams(t)
			secret := randomSecret(t, "ghp_")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state"), "GITHUB_TOKEN=" + secret}

			cases := []sandboxCase{
				{name: "overwrite outside", op: "write", cmd: "echo pwned > " + victim,
					happened: fileIsNot(victim, "keep me\n"), reset: rewrite(u, victim, "keep me\n")},
				{name: "delete outside", cmd: "rm -f " + victim,
					happened: fileIsNot(victim, "keep me\n"), reset: rewrite(u, victim, "keep me\n")},
				{name: "link and write the configuration", op: "write",
					cmd:      "ln -s " + cfg + " cfglink && printf 'approval:\\n  mode: off\\n' > cfglink",
					happened: fileIsNot(cfg, cfgText), reset: func(t *testing.T) { rewrite(u, cfg, cfgText)(t); os.Remove(filepath.Join(ws, "cfglink")) }},
				{name: "hard link the configuration", cmd: "ln " + cfg + " cfghard && echo 'approval: {mode: off}' > cfghard",
					happened: fileIsNot(cfg, cfgText), reset: func(t *testing.T) { rewrite(u, cfg, cfgText)(t); os.Remove(filepath.Join(ws, "cfghard")) }},
				{name: "read an ssh key", op: "read", cmd: "cat ~/.ssh/id_ed25519",
					happened: nil},
				// Metadata, which Landlock does not cover: as root the
				// file system outside the writable roots is a read-only
				// mount. (A normal user's chmod of their own files
				// outside is not covered yet: docs/sandbox.md.)
				{name: "chmod outside", rootOnly: true, cmd: "chmod 777 " + victim,
					happened: modeIsNot(victim, 0o644), reset: func(t *testing.T) { os.Chmod(victim, 0o644) }},
				{name: "chmod the ssh directory", rootOnly: true, cmd: "chmod 777 ~/.ssh",
					happened: modeIsNot(filepath.Join(home, ".ssh"), 0o755), reset: func(t *testing.T) { os.Chmod(filepath.Join(home, ".ssh"), 0o755) }},
				{name: "backdate a file outside", rootOnly: true, cmd: "touch -d 2001-01-01 " + victim,
					happened: func(t *testing.T) bool { fi, err := os.Stat(victim); return err == nil && fi.ModTime().Year() == 2001 },
					reset:    func(t *testing.T) { os.Chtimes(victim, time.Now(), time.Now()) }},
				{name: "chown outside", rootOnly: true, cmd: "chown 12345 " + victim,
					happened: func(t *testing.T) bool { return ownerOf(victim) == 12345 },
					reset:    func(t *testing.T) { os.Lchown(victim, int(u.uid), int(u.gid)) }},
				{name: "read runbox's memory", rootOnly: true, cmd: memoryScan(secret), happened: nil},
				{name: "leave the cgroup", rootOnly: true, cmd: cgroupEscape(), happened: nil},
				{name: "start a child in another cgroup", rootOnly: true, cmd: cloneIntoRootCgroup, happened: nil},
				{name: "loopback port not allowed", op: "connect", cmd: fmt.Sprintf("echo hello-tcp > /dev/tcp/127.0.0.1/%d", tcp.port),
					happened: tcp.got("hello-tcp")},
				// Reported though the command prints nothing of it.
				{name: "loopback port not allowed, silently", op: "connect", cmd: fmt.Sprintf("(echo hello-quiet > /dev/tcp/127.0.0.1/%d) 2>/dev/null; true", tcp.port),
					happened: tcp.got("hello-quiet")},
				{name: "udp", cmd: fmt.Sprintf("echo hello-udp > /dev/udp/127.0.0.1/%d; sleep 0.5", udp.port),
					happened: udp.got("hello-udp")},
				// A daemon that acts for its callers, on a unix socket
				// anyone may write: only the sandbox stands between.
				{name: "a daemon's unix socket", op: "connect", cmd: unixGreeting(unixDaemon(t)), happened: nil},
				// journald's and syslog's kind: sendmsg names the
				// receiver in memory that seccomp cannot read.
				{name: "a daemon's unix datagram socket", op: "socket", cmd: datagramTo(dgram.Path, "hello-dgram"), happened: datagramGot(dgram, "hello-dgram")},
				// The kernel takes an IPv6 address of 24 bytes (no
				// scope id): another host on a port the configuration
				// allows on loopback.
				{name: "24-byte IPv6 address of another host", op: "connect", cmd: shortIPv6Connect(testproc.NonLoopbackIPv4(t), open), happened: nil},
			}
			if dockerAnswers() {
				cases = append(cases, sandboxCase{name: "the docker engine's socket", rootOnly: true, op: "connect", cmd: dockerVersion, happened: nil})
			}
			for _, c := range cases {
				if c.rootOnly && u.uid != 0 {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					// The attack is in a script: the gate sees only `bash
					// ./attack.sh`, as it would miss any spelling it does
					// not recognise, so only the sandbox stands.
					writeOwned(t, u, filepath.Join(ws, "attack.sh"), c.cmd+"\n", 0o755)
					check := func(profile string) (runResult, bool) {
						out, errOut, _ := u.run(t, env, "--yolo", "--sandbox", profile, "run", "--json", "--cwd", ws, "--", "bash ./attack.sh")
						r := decodeRun(t, out, errOut)
						if c.happened != nil {
							return r, c.happened(t)
						}
						return r, r.ExitCode == 0 && (strings.Contains(r.Output, key) || strings.Contains(r.Output, "FOUND") || strings.Contains(r.Output, "ESCAPED"))
					}
					r, ok := check("workspace")
					if ok {
						t.Errorf("under workspace the attack succeeded: %+v", r)
					}
					if r.Sandbox != "workspace" {
						t.Errorf("result says sandbox %q, want workspace", r.Sandbox)
					}
					if c.op != "" && !hasViolation(r, c.op) {
						t.Errorf("no %s violation reported: %+v", c.op, r)
					}
					if c.reset != nil {
						c.reset(t)
					}
					r, ok = check("off")
					if !ok {
						t.Errorf("control: with the sandbox off the attack failed, so the test proves nothing: %+v", r)
					}
					if c.reset != nil {
						c.reset(t)
					}
				})
			}
		})
	}
}

// TestSandbox_SilentConnectReportedOnStderr: in plain mode (the output
// streamed) a connect the sandbox refused is one line on stderr, though
// the command printed nothing of it.
func TestSandbox_SilentConnectReportedOnStderr(t *testing.T) {
	u := users(t)[0]
	home, ws, _ := sandboxDirs(t, u)
	tcp := listenTCP(t)
	env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
	writeOwned(t, u, filepath.Join(ws, "quiet.sh"), fmt.Sprintf("(echo hi > /dev/tcp/127.0.0.1/%d) 2>/dev/null; true\n", tcp.port), 0o755)
	want := fmt.Sprintf("runbox: sandbox denied connect 127.0.0.1:%d (", tcp.port)
	for _, profile := range []string{"off", "workspace"} {
		_, errOut, code := u.run(t, env, "--yolo", "--sandbox", profile, "run", "--cwd", ws, "--", "bash ./quiet.sh")
		if code != 0 || strings.Contains(errOut, want) != (profile == "workspace") {
			t.Errorf("%s: exit %d, stderr %q; want the denial reported under workspace only", profile, code, errOut)
		}
	}
}

// TestSandbox_OrdinaryWorkSucceeds: what an agent does all day works under
// the workspace profile — files in the workspace, git, TMPDIR, and an
// allowed loopback server through the session's proxy.
func TestSandbox_OrdinaryWorkSucceeds(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			ws := mkdirOwned(t, u, filepath.Join(filepath.Dir(home), "ws"))
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "registry-ok") })}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			cfg := filepath.Join(filepath.Dir(home), "config.yaml")
			writeOwned(t, u, cfg, fmt.Sprintf("sandbox:\n  network:\n    allow: [\"%s\"]\n", ln.Addr()), 0o644)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state"), "RUNBOX_CONFIG=" + cfg}
			script := strings.Join([]string{
				"set -e",
				"echo hi > notes.txt && mkdir -p build && rm -rf build",
				"printf '#!/bin/sh\\necho x-ok\\n' > run.sh && chmod 755 run.sh && ./run.sh && chmod u+x,g-w run.sh",
				"git init -q . && git -c user.email=a@b -c user.name=a add notes.txt && git -c user.email=a@b -c user.name=a commit -qm first",
				"echo tmp > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"",
				// A fresh account has no caches yet: the build and
				// package caches (the workspace's own) still work.
				"mkdir -p \"${XDG_CACHE_HOME:?}/pip/wheels\" && echo w > \"$PIP_CACHE_DIR/w\" && echo w > \"$npm_config_cache/w\" && echo cache-ok",
				"if command -v go >/dev/null; then m=$(go env GOMODCACHE) && touch \"$m/ok\" && rm \"$m/ok\"; fi",
				"curl -sS --max-time 20 http://" + ln.Addr().String() + "/simple/",
				ownServer(freePort(t)),
			}, "\n")
			out, errOut, code := u.run(t, env, "--yolo", "run", "--json", "--cwd", ws, "--", script)
			r := decodeRun(t, out, errOut)
			if code != 0 || r.ExitCode != 0 || !strings.Contains(r.Output, "registry-ok") || !strings.Contains(r.Output, "tmp") || !strings.Contains(r.Output, "cache-ok") || !strings.Contains(r.Output, "x-ok") || !strings.Contains(r.Output, "own-server-ok") {
				t.Fatalf("ordinary work failed under the default sandbox: exit %d, %+v, stderr %q", code, r, errOut)
			}
			if r.Sandbox != "workspace" || len(r.Violations) != 0 {
				t.Errorf("sandbox %q, violations %+v; want workspace and none", r.Sandbox, r.Violations)
			}
		})
	}
}

// ownServer is a script that starts a loopback web server on port (one
// no rule allows) in the background, fetches a file from it directly (not
// through the session's proxy) and prints own-server-ok once it did.
func ownServer(port int) string {
	return fmt.Sprintf(`python3 -m http.server %d -b 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 600); do curl -s --noproxy '*' --max-time 10 -o /dev/null http://127.0.0.1:%d/ && { echo own-server-ok; break; }; sleep 0.1; done
kill $!`, port, port)
}

// freePort is a loopback TCP port nothing listens on (as the test
// starts).
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func hasViolation(r runResult, op string) bool {
	for _, v := range r.Violations {
		if v.Op == op {
			return true
		}
	}
	return false
}

// memoryScan prints FOUND when the secret's value is in the memory of a
// process of the command's ancestry (runbox's own heap holds it).
func memoryScan(secret string) string {
	return `python3 - <<'EOF'
import os, re
needle = b"` + secret + `"
found = False
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        exe = os.readlink("/proc/%s/exe" % pid)
    except OSError:
        continue
    if "runbox" not in exe:
        continue
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError as e:
        print("denied", pid, e)
        continue
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
        if not m:
            continue
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        if b - a > 256 << 20:
            continue
        try:
            mem.seek(a)
            if needle in mem.read(b - a):
                found = True
        except (OSError, ValueError, OverflowError):
            pass
print("FOUND" if found else "not found")
EOF`
}

// cgroupEscape prints ESCAPED when the shell moved itself into the root
// of any cgroup hierarchy.
func cgroupEscape() string {
	return `for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs /sys/fs/cgroup/pids/cgroup.procs; do
  [ -e "$f" ] && echo $$ > "$f" 2>/dev/null && { echo ESCAPED; break; }
done; true`
}

// cloneIntoRootCgroup starts a child in the root of the cgroup2 hierarchy
// (clone3 with CLONE_INTO_CGROUP), out of the command's cgroup and so out
// of teardown, and prints ESCAPED when the child is there.
const cloneIntoRootCgroup = `python3 - <<'EOF'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
root = next(d for d in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup") if os.path.exists(d + "/cgroup.controllers"))
r, w = os.pipe()
args = ctypes.create_string_buffer(struct.pack("11Q", 0x200000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, os.open(root, os.O_RDONLY)), 88)
pid = libc.syscall(435, args, 88)  # clone3(CLONE_INTO_CGROUP)
if pid == 0:
    os.close(w)
    os.read(r, 1)
    os._exit(0)
if pid < 0:
    print("clone3: " + os.strerror(ctypes.get_errno()))
else:
    print("ESCAPED" if str(pid) in open(root + "/cgroup.procs").read().split() else "stayed")
    os.close(w)
    os.waitpid(pid, 0)
EOF`

// sandboxDirs makes u's HOME, a workspace and a directory outside it,
// side by side and owned by u.
func sandboxDirs(t *testing.T, u user) (home, ws, outside string) {
	t.Helper()
	home = u.home(t)
	base := filepath.Dir(home)
	return home, mkdirOwned(t, u, filepath.Join(base, "ws")), mkdirOwned(t, u, filepath.Join(base, "outside"))
}

func mkdirOwned(t *testing.T, u user, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Lchown(dir, int(u.uid), int(u.gid))
	return dir
}

func writeOwned(t *testing.T, u user, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
	os.Lchown(path, int(u.uid), int(u.gid))
}

func rewrite(u user, path, text string) func(t *testing.T) {
	return func(t *testing.T) { writeOwned(t, u, path, text, 0o644) }
}

func modeIsNot(path string, mode os.FileMode) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		fi, err := os.Stat(path)
		return err == nil && fi.Mode().Perm() != mode
	}
}

func ownerOf(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

func fileIsNot(path, text string) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		b, err := os.ReadFile(path)
		return err != nil || string(b) != text
	}
}

// listener collects what loopback clients send it.
type listener struct {
	port int
	mu   sync.Mutex
	seen []string
}

func (l *listener) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, s)
}

// got reports whether s arrived, waiting a little for a late packet.
func (l *listener) got(s string) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		deadline := time.Now().Add(2 * time.Second)
		for {
			l.mu.Lock()
			for i, x := range l.seen {
				if strings.Contains(x, s) {
					l.seen = append(l.seen[:i], l.seen[i+1:]...)
					l.mu.Unlock()
					return true
				}
			}
			l.mu.Unlock()
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func listenTCP(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{port: ln.Addr().(*net.TCPAddr).Port}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if line, err := bufio.NewReader(c).ReadString('\n'); err == nil {
					l.add(line)
				}
			})
		}
	})
	return l
}

func listenUDP(t *testing.T) *listener {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{port: pc.LocalAddr().(*net.UDPAddr).Port}
	var wg sync.WaitGroup
	t.Cleanup(func() { pc.Close(); wg.Wait() })
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			l.add(string(buf[:n]))
		}
	})
	return l
}

// TestSandbox_BackgroundJobsConfined: a background job runs in the same
// sandbox as a foreground command — its write outside the workspace and
// its connect to a daemon's unix socket fail while its own TMPDIR, output
// and loopback server work — and with the sandbox off the same job's
// write and connect succeed (the control).
func TestSandbox_BackgroundJobsConfined(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, outside := sandboxDirs(t, u)
			victim := filepath.Join(outside, "job-wrote-here")
			daemon := unixDaemon(t)
			writeOwned(t, u, filepath.Join(ws, "job.sh"), "t=${TMPDIR:-/tmp}/t.$$; echo tmp > \"$t\" && cat \"$t\" && rm -f \"$t\"\n"+
				ownServer(freePort(t))+"\n"+unixGreeting(daemon)+"\necho pwned > "+victim+"\necho done\n", 0o755)
			state := filepath.Join(home, "state")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state}
			t.Cleanup(func() { stopDaemon(state) })
			for _, profile := range []string{"workspace", "off"} {
				os.Remove(victim)
				out, errOut, code := u.run(t, env, "--yolo", "--sandbox", profile, "start", "--cwd", ws, "--", "bash ./job.sh")
				if code != 0 {
					t.Fatalf("%s: start: exit %d: %s", profile, code, errOut)
				}
				id := strings.TrimSpace(out)
				waited, waitErr, _ := u.run(t, env, "wait", "--timeout", "5m", id)
				logs, logsErr, _ := u.run(t, env, "logs", id)
				if !strings.Contains(logs, "tmp\n") || !strings.Contains(logs, "done") {
					t.Errorf("%s: the job's own TMPDIR and output: %q (logs stderr %q; wait %q %q)", profile, logs, logsErr, waited, waitErr)
				}
				if !strings.Contains(logs, "own-server-ok") {
					t.Errorf("%s: the job did not reach the loopback server it started: %q", profile, logs)
				}
				if reached := strings.Contains(logs, "FOUND"); reached != (profile == "off") {
					t.Errorf("%s: the job reached a daemon's unix socket: %v; log %q", profile, reached, logs)
				}
				// The refusal is in the job's record, as runbox decided it.
				ps, _, _ := u.run(t, env, "ps", "--json")
				var jobs []struct {
					ID         string
					Violations []struct{ Op, Target, Source string } `json:"sandbox_violations"`
				}
				json.Unmarshal([]byte(ps), &jobs)
				reported := false
				for _, j := range jobs {
					for _, v := range j.Violations {
						reported = reported || (j.ID == id && v.Op == "connect" && v.Target == daemon && v.Source == "decided")
					}
				}
				if reported != (profile == "workspace") {
					t.Errorf("%s: the job's record reports the refused connect: %v; want %v: %s", profile, reported, profile == "workspace", ps)
				}
				_, err := os.Stat(victim)
				if wrote := err == nil; wrote != (profile == "off") {
					t.Errorf("%s: the job wrote outside the workspace: %v; log %q", profile, wrote, logs)
				}
			}
		})
	}
}

// unixDaemon serves a unix socket any user may connect to, outside every
// directory a command may write (testproc.ServeUnix: it greets each
// connection), and returns its path.
func unixDaemon(t *testing.T) string {
	t.Helper()
	path := testproc.DaemonSocket(t, "daemon.sock")
	testproc.ServeUnix(t, path)
	os.Chmod(path, 0o777)
	return path
}

// datagramGot reports whether a datagram holding word reached d.
func datagramGot(d *testproc.Datagrams, word string) func(*testing.T) bool {
	return func(*testing.T) bool { return d.Count(word) > 0 }
}

// datagramTo sends word to the unix datagram socket at path with
// sendmsg, and prints FOUND when it went.
func datagramTo(path, word string) string {
	return `python3 - <<'EOF'
import socket
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendmsg([b"` + word + `"], [], 0, "` + path + `")
    print("FOUND")
except OSError as e:
    print("refused", e)
EOF`
}

// unixGreeting prints FOUND when the unix socket at path greets it.
func unixGreeting(path string) string {
	return `python3 - <<'EOF'
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("` + path + `")
    print("FOUND" if s.recv(5) == b"` + testproc.Greeting + `" else "silent")
except OSError as e:
    print("refused", e)
EOF`
}

// shortIPv6Connect prints FOUND when a TCP connect to the v4-mapped IPv6
// address of ip, given in 24 bytes, succeeds.
func shortIPv6Connect(ip string, port int) string {
	return fmt.Sprintf(`python3 - <<'EOF'
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
s = socket.socket(socket.AF_INET6)
addr = struct.pack('<H', socket.AF_INET6) + struct.pack('>H', %d) + b'\0' * 4 + socket.inet_pton(socket.AF_INET6, '::ffff:%s')
buf = ctypes.create_string_buffer(addr, 24)
print("FOUND" if libc.connect(s.fileno(), buf, 24) == 0 else "refused %%d" %% ctypes.get_errno())
EOF`, port, ip)
}

// dockerSocket is where the docker engine listens.
const dockerSocket = "/var/run/docker.sock"

// dockerAnswers reports whether a docker engine answers on dockerSocket.
func dockerAnswers() bool {
	c, err := net.Dial("unix", dockerSocket)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// dockerVersion prints FOUND when the docker engine answers a request:
// with it, docker run -v /:/host is the whole machine.
const dockerVersion = `python3 - <<'EOF'
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("` + dockerSocket + `")
    s.sendall(b"GET /version HTTP/1.0\r\nHost: docker\r\n\r\n")
    print("FOUND" if s.recv(12).startswith(b"HTTP/1.") else "silent")
except OSError as e:
    print("refused", e)
EOF`
