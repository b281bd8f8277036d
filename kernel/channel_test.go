package kernel_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/kernel"
)

// forgeCell is a cell that writes forged protocol frames into every pipe
// it can reach: each of its descriptors, and each pipe reopened for
// writing through /proc/self/fd (which also reaches the driver's stdin).
// The frames claim every cell id from 0 to 20 and the running cell's own
// (read from the driver): a done with a forged result, forged output, a
// tool call that would touch dir/forged-call, an exec that would touch
// dir/injected. Each comes raw (first), then with a MAC under keyExpr in
// either direction, all with sequence numbers far ahead. keyExpr is the key the MACs use: a guess
// for the attack, the driver's own key for the control. then is what the
// cell does afterwards.
func forgeCell(dir, keyExpr, then string) string {
	return fmt.Sprintf(`import base64, hashlib, hmac, json, os, stat, runbox
KEY = %s
DIR = %q
ids = list(range(21)) + [runbox.call.__globals__['State'].cell]
def sealed(label, msg):
    body = json.dumps(msg, separators=(",", ":")).encode()
    mac = hmac.new(KEY, label + body, hashlib.sha256).hexdigest().encode()
    return b"\n" + mac + b" " + body + b"\n"
raw, frames, seq = [], [], 1 << 40
for i in ids:
    for m in ({"op": "done", "id": i, "status": "ok", "result": "'forged'", "execution_count": 99},
              {"op": "out", "id": i, "stream": "stdout", "data": base64.b64encode(b"FORGED-OUT").decode()},
              {"op": "call", "id": i, "call": 7, "tool": "terminal", "args": {"command": "touch " + DIR + "/forged-call"}},
              {"op": "exec", "id": i, "code": "open(%%r, 'w').close()" %% (DIR + "/injected")}):
        seq += 1
        m = dict(m, seq=seq)
        raw.append(("\n" + json.dumps(m) + "\n").encode())
        frames += [sealed(b"runbox-kernel driver\n", m), sealed(b"runbox-kernel host\n", m)]
frames = raw + frames
fds = set()
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            continue
    except OSError:
        continue
    fds.add(fd)
    try:
        fds.add(os.open("/proc/self/fd/%%d" %% fd, os.O_WRONLY))
    except OSError:
        pass
hit = 0
for fd in sorted(fds):
    try:
        for f in frames:
            os.write(fd, f)
        hit += 1
    except OSError:
        pass
assert hit >= 3, hit
%s`, keyExpr, dir, then)
}

const (
	guessedKey = `b"\0" * 32`
	driverKey  = `runbox.call.__globals__['CHANNEL'].key`
	sleepLong  = "import time\ntime.sleep(3600)\n"
	sleepStuck = "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass\n"
)

// TestKernel_ForgedFramesChangeNothing: frames a cell writes into any
// descriptor, with any id, neither end the cell nor change its reply, run
// a tool or inject a cell; the host's timeout holds (the interrupt lands,
// or the kernel is killed when the cell swallows it). Without the MAC
// check the forged done would be taken at once: the control run seals
// the same frames with the driver's own key (dug out of the driver, which
// code in the kernel can do: see the package doc) and gets the forged
// result back before its timeout.
func TestKernel_ForgedFramesChangeNothing(t *testing.T) {
	ss := newSession(t)
	for _, tc := range []struct {
		name      string
		then      string
		stateLost bool
	}{
		{"interruptible", sleepLong, false},
		{"swallows the interrupt", sleepStuck, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			k := newKernel(t, ss, kernel.Options{InterruptGrace: time.Second})
			mustOK(t, k, "kept = 1")
			pid := k.PID()
			r := run(t, k, forgeCell(dir, guessedKey, tc.then), 4*time.Second)
			if r.Result != nil || !r.TimedOut || !r.Interrupted || r.StateLost != tc.stateLost {
				t.Fatalf("reply = %+v; want the timeout (state lost: %v), not the forged result", r, tc.stateLost)
			}
			if strings.Contains(r.Stdout, "FORGED-OUT") {
				t.Errorf("forged output frames reached the reply: %q", r.Stdout)
			}
			if tc.stateLost {
				if alive(pid) {
					t.Errorf("kernel %d outlived the timeout of a cell that swallowed its interrupt", pid)
				}
			} else if r.EName != "KeyboardInterrupt" {
				t.Errorf("ename = %q; want the interrupt", r.EName)
			}
			want := "1"
			if tc.stateLost {
				want = "0"
			}
			if r := mustOK(t, k, "globals().get('kept', 0)"); r.Result == nil || *r.Result != want {
				t.Errorf("next cell: kept = %v; want %s", r.Result, want)
			}
			for _, f := range []string{"forged-call", "injected"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("a forged frame ran something: %s exists", f)
				}
			}
		})
	}
	t.Run("control: sealed with the driver's key", func(t *testing.T) {
		k := newKernel(t, ss, kernel.Options{})
		r := run(t, k, forgeCell(t.TempDir(), driverKey, sleepLong), 50*time.Second)
		if r.Result == nil || *r.Result != "'forged'" || r.TimedOut {
			t.Fatalf("reply = %+v; want the forged result: the forged frames are well formed and only the key stops them", r)
		}
	})
}

// TestKernel_FloodKeepsHostMemoryBounded: a cell that writes 1.5 GB
// without a newline into the protocol descriptor is failed after
// MaxFrame bytes, its kernel killed, and the host's memory grows by a few
// MiB at most. The control raises MaxFrame and floods 300 MiB: the host
// then buffers the whole line, so the bound is what protects it.
func TestKernel_FloodKeepsHostMemoryBounded(t *testing.T) {
	ss := newSession(t)
	flood := func(mib int, after string) string {
		// An output frame whose data never ends: a valid start, so
		// no decoder can reject it early.
		return fmt.Sprintf("import os, runbox\nfd = runbox.call.__globals__['PROTO_OUT']\n"+
			"os.write(fd, b'\\n{\"op\":\"out\",\"id\":1,\"stream\":\"stdout\",\"data\":\"')\nchunk = b'x' * (1 << 20)\n"+
			"for _ in range(%d):\n    os.write(fd, chunk)\n%s", mib, after)
	}
	t.Run("bounded", func(t *testing.T) {
		k := newKernel(t, ss, kernel.Options{})
		mustOK(t, k, "1")
		pid := k.PID()
		before, hwm := totalAlloc(), vmHWM(t)
		r := run(t, k, flood(1536, ""), 0)
		grew, hwmGrew := totalAlloc()-before, vmHWM(t)-hwm
		if grew > 200<<20 || hwmGrew > 200<<20 {
			t.Errorf("host allocated %d MiB (peak RSS +%d MiB) while the cell flooded; want < 200", grew>>20, hwmGrew>>20)
		}
		if !r.StateLost || !strings.Contains(r.Notice, kernel.ErrFrameTooLarge.Error()) {
			t.Fatalf("reply = %+v; want the cell failed for its oversized frame", r)
		}
		if alive(pid) {
			t.Errorf("flooding kernel %d still alive", pid)
		}
		if r := mustOK(t, k, "2"); !r.Restarted {
			t.Errorf("next cell: %+v; want a fresh kernel", r)
		}
	})
	t.Run("control: bound raised", func(t *testing.T) {
		k := newKernel(t, ss, kernel.Options{MaxFrame: 1 << 30})
		before := totalAlloc()
		r := run(t, k, flood(300, "os.write(fd, b'\\n')\n'survived'"), 0)
		if grew := totalAlloc() - before; grew < 300<<20 {
			t.Errorf("host allocated %d MiB for a 300 MiB line under a 1 GiB bound; want at least 300 (the flood must reach the host)", grew>>20)
		}
		if r.Status != kernel.StatusOK || r.Result == nil || *r.Result != "'survived'" {
			t.Errorf("reply = %+v; want the cell to end normally (its garbage line dropped)", r)
		}
	})
}

// TestKernel_OwnFramesStayUnderTheBound: what a well-behaved cell sends
// never trips the bound: huge tool arguments are refused in the code, a
// huge exception text is cut, and the kernel lives on.
func TestKernel_OwnFramesStayUnderTheBound(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{MaxFrame: kernel.MinMaxFrame})
	mustOK(t, k, "kept = 1")
	for _, tc := range []struct {
		name, code, ename string
		status            kernel.Status
	}{
		{"tool arguments", "import runbox\ntry:\n    runbox.terminal('echo ' + 'x' * (1 << 20))\nexcept runbox.ToolError as e:\n    print(e.kind)", "", kernel.StatusOK},
		{"exception text", "raise ValueError('v' * (8 << 20))", "ValueError", kernel.StatusError},
		{"result repr", "'r' * (8 << 20)", "", kernel.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, k, tc.code, 0)
			if r.Status != tc.status || r.EName != tc.ename || r.StateLost {
				t.Fatalf("reply = status %s ename %q lost %v notice %q; want %s %q with the kernel kept", r.Status, r.EName, r.StateLost, r.Notice, tc.status, tc.ename)
			}
			if tc.name == "tool arguments" && r.Stdout != "too_large\n" {
				t.Errorf("stdout = %q; want the call refused as too_large", r.Stdout)
			}
		})
	}
	if r := mustOK(t, k, "kept"); r.Restarted {
		t.Errorf("the kernel was restarted: %+v", r)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// vmHWM is this process's peak resident set, in bytes.
func vmHWM(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
