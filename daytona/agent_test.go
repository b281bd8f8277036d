package daytona_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
)

// fullContract is what the agent gives a Daytona sandbox: without it
// (the toolbox session path) each of these is degraded or unsupported.
var fullContract = []envs.Capability{envs.CapSessionState, envs.CapPTY, envs.CapStdin, envs.CapSignals, envs.CapTreeKill, envs.CapFileTransfer}

// TestEnv_AgentOverPTY: by default the agent runs in the sandbox over a
// toolbox PTY session, and the environment reports the whole contract as
// active, with no "degraded" warning. The conformance suite below then
// checks each of those for real (a check is skipped only when reported
// unsupported, so this is what keeps the suite from skipping them).
func TestEnv_AgentOverPTY(t *testing.T) {
	f := newFake(t)
	env := open(t, options(t, f))
	defer env.Close(t.Context())
	if fb := env.Fallback(); fb != "" {
		t.Fatalf("the agent is not in use: %s", fb)
	}
	caps := env.Capabilities()
	for _, c := range fullContract {
		if caps.State(c) != envs.Active {
			t.Errorf("%s = %v (%s); want active", c, caps.State(c), caps[c].Detail)
		}
	}
	if got := daytona.Capabilities(options(t, f)); got.State(envs.CapSessionState) != envs.Active || got.State(envs.CapPTY) != envs.Active {
		t.Errorf("Capabilities(Options) without a sandbox = %v; want the agent's", got)
	}
	res := run(t, env, "echo hi")
	if res.Output != "hi\n" || len(res.Warnings) != 0 {
		t.Fatalf("Run = %q, warnings %q; want hi and no warning", res.Output, res.Warnings)
	}

	// Options.Dir is where the agent starts, so where commands start.
	o := options(t, f)
	o.Dir = t.TempDir()
	env2 := open(t, o)
	defer env2.Close(t.Context())
	if res := run(t, env2, "pwd"); res.Output != o.Dir+"\n" || env2.Fallback() != "" {
		t.Errorf("pwd with Options.Dir %s = %q (fallback %q); want the directory, with the agent", o.Dir, res.Output, env2.Fallback())
	}
	var pty bool
	for _, r := range f.Requests() {
		if strings.HasSuffix(trimQuery(r.Path), "/connect") && strings.Contains(r.Path, "/process/pty/") {
			pty = true
		}
		if strings.Contains(r.Path, "/process/session") {
			t.Errorf("a toolbox session was used with the agent running: %s %s", r.Method, r.Path)
		}
	}
	if !pty {
		t.Errorf("no PTY websocket was opened")
	}
}

func trimQuery(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p
}

// TestEnv_KeepsCdAndKillsSetsidChild is the check: a daytona
// session keeps cd (and exports) across commands, and killing a command
// kills a child that called setsid — seen from this machine, where the
// fake's sandbox processes run, not only from inside.
func TestEnv_KeepsCdAndKillsSetsidChild(t *testing.T) {
	f := newFake(t)
	env := open(t, options(t, f))
	defer env.Close(t.Context())
	dir := t.TempDir()
	run(t, env, "cd "+dir+" && export RUNBOX_T_KEPT=yes")
	if res := run(t, env, `pwd; echo "$RUNBOX_T_KEPT"`); res.Output != dir+"\nyes\n" || res.Cwd != dir {
		t.Fatalf("second command = %q (cwd %q); want %q and yes", res.Output, res.Cwd, dir)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := env.Start(ctx, envs.Command{Shell: "setsid sleep 300 & echo $!; wait"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	line := readLine(t, p.Output())
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("pid line %q: %v", line, err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the setsid child %d is not running before the kill", pid)
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	testwait.Within(t, 30*time.Second, "the setsid child to be gone", func() bool {
		return !testproc.Alive(pid)
	})
	if res := run(t, env, "pwd"); res.Output != dir+"\n" {
		t.Errorf("cwd after the kill = %q; want %q", res.Output, dir)
	}
}

// readLine reads one line from r (in the background, bounded).
func readLine(t *testing.T, r io.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for {
			n, err := r.Read(one)
			if n == 1 && one[0] == '\n' {
				break
			}
			b = append(b, one[:n]...)
			if err != nil {
				break
			}
		}
		got <- string(b)
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(time.Minute):
		t.Fatal("no line within a minute")
		return ""
	}
}

// allBytes is every byte value, then the ones a cooked terminal acts on
// in the orders that trip it: CR LF pairs, a lone CR, ^C ^D ^Z ^\,
// XOFF/XON, erase and kill characters, ^V, and bytes with the 8th bit.
func allBytes() []byte {
	var b []byte
	for i := range 256 {
		b = append(b, byte(i))
	}
	b = append(b, "\r\n\n\r\r\x03\x04\x1a\x1c\x13\x11\x7f\x08\x15\x17\x16\x12\x0f\x00\xff\xfe\x80\x9b\x1b[0m"...)
	return b
}

// TestEnv_ByteClean sends every byte value through the agent's stream in
// both directions — as a command's stdin (client to agent, over the
// terminal's input side) echoed back by cat (agent to client, over its
// output side), once small and once large enough to span many websocket
// messages — and gets back exactly what it sent.
func TestEnv_ByteClean(t *testing.T) {
	f := newFake(t)
	env := open(t, options(t, f))
	defer env.Close(t.Context())
	small := allBytes()
	large := bytes.Repeat(small, (1<<20)/len(small)+1)
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"every byte", small}, {"1 MiB of them", large}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			res, err := env.Run(ctx, envs.Command{Args: []string{"cat"}, Stdin: bytes.NewReader(tc.in), OutputLimit: -1})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Code != 0 || res.Output != string(tc.in) {
				t.Fatalf("cat returned %d bytes (exit %d); want the %d sent, byte for byte (first difference at %d)", len(res.Output), res.Code, len(tc.in), firstDiff([]byte(res.Output), tc.in))
			}
			// The toolbox drops a client that falls 256 pieces behind; a
			// busy machine must not bring the agent near that.
			d := f.DeepestPTYQueue()
			t.Logf("the deepest toolbox queue: %d pieces", d)
			if d > 224 {
				t.Errorf("the agent's output queued %d pieces deep in the toolbox (it drops a client at 256)", d)
			}
		})
	}
	t.Run("output only", func(t *testing.T) {
		res := run(t, env, `i=0; while [ $i -lt 256 ]; do printf "\\$(printf %o $i)"; i=$((i+1)); done`)
		want := small[:256]
		if res.Output != string(want) {
			t.Fatalf("printf of every byte came back as %q; first difference at %d", res.Output, firstDiff([]byte(res.Output), want))
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestEnv_FallsBackWhenAgentCannotRun: when the agent cannot run (here
// its binary is not a static build), commands still run, through the
// toolbox session path, and say so: the reason in Fallback, a
// "degraded" warning in every result, and the weaker capabilities.
func TestEnv_FallsBackWhenAgentCannotRun(t *testing.T) {
	f := newFake(t)
	o := options(t, f)
	o.AgentBinary = filepath.Join(t.TempDir(), "not-an-agent")
	if err := os.WriteFile(o.AgentBinary, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := open(t, o)
	defer env.Close(t.Context())
	if env.Fallback() == "" {
		t.Fatal("Fallback is empty; want the reason the agent cannot run")
	}
	res := run(t, env, "echo still")
	if res.Output != "still\n" || !strings.Contains(strings.Join(res.Warnings, "\n"), "degraded") {
		t.Fatalf("Run = %q, warnings %q; want still and a degraded warning", res.Output, res.Warnings)
	}
	caps := env.Capabilities()
	if caps.State(envs.CapSessionState) != envs.Unsupported || caps.State(envs.CapPTY) != envs.Unsupported || caps.State(envs.CapTreeKill) != envs.Degraded {
		t.Errorf("capabilities in the fallback = %v; want the toolbox path's", caps)
	}
}
