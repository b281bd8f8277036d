package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
)

// Factory opens a fresh environment for one subtest. The suite closes it.
type Factory func(t *testing.T) envs.Environment

// hang bounds every wait in the suite: far above any honest duration, it
// only turns a hang into a failure.
const hang = 60 * time.Second

// Run runs the conformance suite against environments made by open.
func Run(t *testing.T, open Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, env envs.Environment)
	}{
		{"ExitCodes", testExitCodes},
		{"CannotEnterDir", testCannotEnterDir},
		{"Timeout", testTimeout},
		{"Interrupt", testInterrupt},
		{"HugeOutput", testHugeOutput},
		{"BinaryOutput", testBinaryOutput},
		{"Interleaved", testInterleaved},
		{"SeparateStreams", testSeparateStreams},
		{"GrandchildHoldsPipe", testGrandchildHoldsPipe},
		{"PagerNeutralised", testPager},
		{"Stdin", testStdin},
		{"PTY", testPTY},
		{"SessionState", testSessionState},
		{"StateUnchangedByTimeout", testStateUnchangedByTimeout},
		{"TreeKill", testTreeKill},
		{"StreamingProcess", testStreaming},
		{"Concurrency", testConcurrency},
		{"FileTransfer", testFileTransfer},
		{"Signals", testSignals},
		{"Resize", testResize},
		{"CapabilitiesMatch", testCapabilitiesMatch},
		{"Undo", testUndo},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := open(t)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), hang)
				defer cancel()
				env.Close(ctx)
			})
			tc.fn(t, env)
		})
	}
}

func run(t *testing.T, env envs.Environment, cmd envs.Command) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	res, err := env.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("Run(%q) error: %v", cmd.Shell, err)
	}
	return res
}

func sh(s string) envs.Command { return envs.Command{Shell: s} }

func testExitCodes(t *testing.T, env envs.Environment) {
	cases := []struct {
		shell  string
		code   int
		signal int
	}{
		{"true", 0, 0},
		{"exit 3", 3, 0},
		{"exit 255", 255, 0},
		{"false", 1, 0},
		{"runbox-no-such-command-xyz", envs.ExitNotFound, 0},
		{"kill -9 $$", 128 + 9, 9},
	}
	for _, c := range cases {
		res := run(t, env, sh(c.shell))
		if res.Code != c.code {
			t.Errorf("Run(%q).Code = %d; want %d (output %q)", c.shell, res.Code, c.code, res.Output)
		}
		if int(res.Signal) != c.signal {
			t.Errorf("Run(%q).Signal = %d; want %d", c.shell, res.Signal, c.signal)
		}
	}
}

func testCannotEnterDir(t *testing.T, env envs.Environment) {
	res := run(t, env, envs.Command{Shell: "pwd", Dir: "/runbox-no-such-dir"})
	if res.Code != envs.ExitCannotEnter {
		t.Fatalf("Run in a missing dir: Code = %d; want %d (output %q)", res.Code, envs.ExitCannotEnter, res.Output)
	}
	if !strings.Contains(res.Output, "runbox-no-such-dir") {
		t.Errorf("output %q does not name the directory", res.Output)
	}
}

func testTimeout(t *testing.T, env envs.Environment) {
	start := time.Now()
	res := run(t, env, envs.Command{Shell: "echo started; sleep 30", Timeout: 500 * time.Millisecond})
	if res.Code != envs.ExitTimeout || !res.TimedOut {
		t.Fatalf("timed-out command: Code = %d, TimedOut = %v; want 124, true", res.Code, res.TimedOut)
	}
	if res.Interrupted {
		t.Errorf("timed-out command reports Interrupted")
	}
	if !strings.Contains(res.Output, "started") {
		t.Errorf("output before the timeout was lost: %q", res.Output)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeout of 0.5s took %v", d)
	}
}

func testInterrupt(t *testing.T, env envs.Environment) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel)
	res, err := env.Run(ctx, sh("sleep 30"))
	if err != nil {
		t.Fatalf("interrupted Run error: %v", err)
	}
	if res.Code != envs.ExitInterrupted || !res.Interrupted || res.TimedOut {
		t.Fatalf("interrupted command: Code=%d Interrupted=%v TimedOut=%v; want 130 true false", res.Code, res.Interrupted, res.TimedOut)
	}
}

func testHugeOutput(t *testing.T, env envs.Environment) {
	const total = 4 << 20
	const limit = 10000
	res := run(t, env, envs.Command{Shell: fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; printf END", total), OutputLimit: limit})
	if res.Code != 0 {
		t.Fatalf("Code = %d; want 0", res.Code)
	}
	if !res.Truncated {
		t.Fatalf("4 MiB output under a 10000-byte limit not truncated")
	}
	if res.TotalBytes != total+3 {
		t.Errorf("TotalBytes = %d; want %d", res.TotalBytes, total+3)
	}
	if len(res.Output) > limit+300 {
		t.Errorf("len(Output) = %d; want about %d", len(res.Output), limit)
	}
	if !strings.HasSuffix(res.Output, "END") || !strings.HasPrefix(res.Output, "xxxx") {
		t.Errorf("window lost its head or tail")
	}
	if !strings.Contains(res.Output, "truncated") {
		t.Errorf("no truncation notice in the window")
	}
	if res.SpillPath == "" {
		t.Errorf("no spill path for a truncated stream")
	}
}

func testBinaryOutput(t *testing.T, env envs.Environment) {
	res := run(t, env, sh(`printf 'a\377\376\000b\303('`))
	want := "a\xff\xfe\x00b\xc3("
	if res.Output != want {
		t.Fatalf("binary output = %q; want %q", res.Output, want)
	}
}

func testInterleaved(t *testing.T, env envs.Environment) {
	res := run(t, env, sh("echo a; echo b >&2; echo c"))
	if res.Output != "a\nb\nc\n" {
		t.Fatalf("interleaved output = %q; want %q", res.Output, "a\nb\nc\n")
	}
}

func testSeparateStreams(t *testing.T, env envs.Environment) {
	res := run(t, env, envs.Command{Shell: "echo a; echo b >&2; echo c", SeparateStreams: true})
	if res.Output != "a\nc\n" || res.Stderr != "b\n" {
		t.Fatalf("separate streams = %q / %q; want %q / %q", res.Output, res.Stderr, "a\nc\n", "b\n")
	}
}

func testGrandchildHoldsPipe(t *testing.T, env envs.Environment) {
	start := time.Now()
	res := run(t, env, sh("(sleep 8 &) ; echo done"))
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("a grandchild holding the pipe held the call for %v", d)
	}
	if res.Code != 0 || !strings.Contains(res.Output, "done") {
		t.Fatalf("Code=%d Output=%q; want 0 and done", res.Code, res.Output)
	}
}

func testPager(t *testing.T, env envs.Environment) {
	res := run(t, env, sh(`echo "$PAGER $GIT_PAGER"; cat; echo eof`))
	if res.Output != "cat cat\neof\n" {
		t.Fatalf("pager/stdin output = %q; want %q", res.Output, "cat cat\neof\n")
	}
}

func testStdin(t *testing.T, env envs.Environment) {
	if env.Capabilities().State(envs.CapStdin) == envs.Unsupported {
		t.Skip("backend reports stdin unsupported")
	}
	res := run(t, env, envs.Command{Shell: "cat; echo .", Stdin: strings.NewReader("hello\x00\xffworld\n")})
	if res.Output != "hello\x00\xffworld\n.\n" {
		t.Fatalf("stdin round trip = %q", res.Output)
	}
}

func testPTY(t *testing.T, env envs.Environment) {
	if env.Capabilities().State(envs.CapPTY) == envs.Unsupported {
		t.Skip("backend reports PTY unsupported")
	}
	res := run(t, env, envs.Command{Shell: "test -t 0 && test -t 1 && stty size", PTY: &envs.WindowSize{Rows: 33, Cols: 101}})
	if res.Code != 0 || strings.TrimSpace(res.Output) != "33 101" {
		t.Fatalf("PTY: Code=%d Output=%q; want 0 and \"33 101\"", res.Code, res.Output)
	}
}

func testSessionState(t *testing.T, env envs.Environment) {
	if env.Capabilities().State(envs.CapSessionState) == envs.Unsupported {
		t.Skip("backend reports session state unsupported")
	}
	run(t, env, sh("cd /tmp && export RUNBOX_T_VAR='a b' && RUNBOX_T_LOCAL=1"))
	res := run(t, env, sh(`pwd; echo "$RUNBOX_T_VAR"`))
	if res.Output != "/tmp\na b\n" {
		t.Fatalf("state not carried: %q; want %q", res.Output, "/tmp\na b\n")
	}
	if res.Cwd != "/tmp" {
		t.Errorf("Result.Cwd = %q; want /tmp", res.Cwd)
	}
	run(t, env, sh("unset RUNBOX_T_VAR"))
	if res := run(t, env, sh(`echo "[${RUNBOX_T_VAR-unset}]"`)); res.Output != "[unset]\n" {
		t.Errorf("unset not carried: %q", res.Output)
	}
	// No marker of the state mechanism leaks into output.
	if res := run(t, env, sh("echo only")); res.Output != "only\n" {
		t.Errorf("output polluted: %q", res.Output)
	}
}

func testStateUnchangedByTimeout(t *testing.T, env envs.Environment) {
	if env.Capabilities().State(envs.CapSessionState) == envs.Unsupported {
		t.Skip("backend reports session state unsupported")
	}
	run(t, env, sh("cd /tmp && export RUNBOX_T_V=kept"))
	res := run(t, env, envs.Command{Shell: "cd / && export RUNBOX_T_V=changed && sleep 30", Timeout: 300 * time.Millisecond})
	if !res.TimedOut {
		t.Fatalf("command did not time out: %+v", res.ExitStatus)
	}
	if res := run(t, env, sh(`pwd; echo $RUNBOX_T_V`)); res.Output != "/tmp\nkept\n" {
		t.Fatalf("a timed-out command changed the state: %q", res.Output)
	}
}

// treeKillGrace is how long a process of a killed tree may take to be
// gone before it counts as a survivor.
const treeKillGrace = 10 * time.Second

// testTreeKill starts a tree with a setsid child, a SIGTERM trapper and a
// plain child, kills it, and checks from inside the environment that none
// of them is left.
func testTreeKill(t *testing.T, env envs.Environment) {
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	script := `setsid sleep 300 & echo $!; (trap '' TERM; exec sleep 301) & echo $!; sleep 302 & echo $!; echo ready; wait`
	p, err := env.Start(ctx, sh(script))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	lines := readLines(t, p.Output(), "ready")
	pids := lines[:len(lines)-1]
	if len(pids) != 3 {
		t.Fatalf("want 3 pids, got %q", lines)
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait after Kill: %v", err)
	}
	check := "for p in " + strings.Join(pids, " ") + "; do if kill -0 $p 2>/dev/null && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null; then echo alive $p; fi; done"
	// A process killed may take a moment to die on a busy machine (it
	// was seen alive once, and gone when the processes were listed right
	// after): a survivor is one still alive after treeKillGrace. The
	// check is made again each second, and stops as soon as none is.
	settle := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do out=$(%s); [ -z "$out" ] && break; sleep 1; i=$((i+1)); done; echo "$out"`, int(treeKillGrace/time.Second), check)
	if res := run(t, env, sh(settle)); strings.Contains(res.Output, "alive") {
		// What the environment holds, for the failure: every process's
		// pid, name, state, parent, group and session, then the same
		// check a second later (a survivor, or one slow to die).
		diag := run(t, env, sh(`for d in /proc/[0-9]*; do cut -d' ' -f1-6 "$d/stat" 2>/dev/null; done; sleep 1; echo "a second later:"; `+check))
		t.Fatalf("processes survived the tree kill: %q (the tree's pids %q); processes:\n%s", res.Output, pids, diag.Output)
	}
}

// readLines reads lines from r until one equals last (io.Copy keeps reading
// in the background until r ends, so the process is never blocked on output).
func readLines(t *testing.T, r io.Reader, last string) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var buf bytes.Buffer
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			buf.Write(b[:n])
			if lines := strings.Split(buf.String(), "\n"); len(lines) > 1 {
				for i, l := range lines[:len(lines)-1] {
					if l == last {
						got <- lines[:i+1]
						io.Copy(io.Discard, r)
						return
					}
				}
			}
			if err != nil {
				got <- strings.Split(buf.String(), "\n")
				return
			}
		}
	}()
	select {
	case l := <-got:
		if len(l) == 0 || l[len(l)-1] != last {
			t.Fatalf("output ended before %q: %q", last, l)
		}
		return l
	case <-time.After(hang):
		t.Fatalf("no %q line within %v", last, hang)
	}
	return nil
}

func testStreaming(t *testing.T, env envs.Environment) {
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	p, err := env.Start(ctx, sh("cat; echo bye; exit 7"))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if p.Stdin() == nil {
		t.Fatalf("Stdin() is nil")
	}
	if _, err := io.WriteString(p.Stdin(), "ping\n"); err != nil {
		t.Fatalf("write stdin: %v", err)
	}
	if err := p.Stdin().Close(); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	out, err := io.ReadAll(p.Output())
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	if string(out) != "ping\nbye\n" {
		t.Errorf("streamed output = %q", out)
	}
	st, err := p.Wait(ctx)
	if err != nil || st.Code != 7 {
		t.Fatalf("Wait = %+v, %v; want code 7", st, err)
	}
}

func testConcurrency(t *testing.T, env envs.Environment) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), hang)
			defer cancel()
			res, err := env.Run(ctx, sh(fmt.Sprintf("echo %d; sleep 0.1; echo %d", i, i*i)))
			switch {
			case err != nil:
				errs <- err
			case res.Output != fmt.Sprintf("%d\n%d\n", i, i*i):
				errs <- fmt.Errorf("command %d output %q", i, res.Output)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// testFileTransfer round-trips bytes that are not text through PutFile and
// GetFile, and checks that the file is there for commands too.
func testFileTransfer(t *testing.T, env envs.Environment) {
	ft, ok := env.(envs.FileTransfer)
	if !ok || env.Capabilities().State(envs.CapFileTransfer) == envs.Unsupported {
		t.Skip("backend does not transfer files")
	}
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	dir := fmt.Sprintf("/tmp/runbox-envtest-%d", time.Now().UnixNano())
	defer run(t, env, sh("rm -rf "+dir))
	data := bytes.Repeat([]byte("a\x00\xff\n"), 100000)
	if err := ft.PutFile(ctx, dir+"/sub/f.bin", bytes.NewReader(data), 0o640); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	rc, err := ft.GetFile(ctx, dir+"/sub/f.bin")
	if err != nil {
		t.Fatalf("GetFile: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetFile returned %d bytes (%v); want the %d put", len(got), err, len(data))
	}
	if res := run(t, env, sh("wc -c < "+dir+"/sub/f.bin")); strings.TrimSpace(res.Output) != fmt.Sprint(len(data)) {
		t.Errorf("commands see %q bytes; want %d", res.Output, len(data))
	}
	if _, err := ft.GetFile(ctx, dir+"/missing"); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("GetFile of a missing file = %v; want ErrNotFound", err)
	}
}

func testClosed(t *testing.T, env envs.Environment) {
	ctx := t.Context()
	if err := env.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := env.Run(ctx, sh("true")); !errors.Is(err, envs.ErrClosed) {
		t.Fatalf("Run after Close = %v; want ErrClosed", err)
	}
}
