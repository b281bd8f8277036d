package envtest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/envs"
)

// testSignals: a signal sent to a started process reaches the command,
// which may handle it; where the backend says signals are unsupported,
// Signal says so with envs.ErrUnsupported instead of pretending.
func testSignals(t *testing.T, env envs.Environment) {
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	p, err := env.Start(ctx, sh(`trap 'echo got-usr1; exit 7' USR1; echo ready; while :; do sleep 0.05; done`))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer p.Kill(context.WithoutCancel(ctx))
	r := bufio.NewReader(p.Output())
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("first line %q, %v; want ready", line, err)
	}
	err = p.Signal(ctx, syscall.SIGUSR1)
	if env.Capabilities().State(envs.CapSignals) == envs.Unsupported {
		if !errors.Is(err, envs.ErrUnsupported) {
			t.Fatalf("signals reported unsupported, but Signal = %v; want ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Signal(SIGUSR1): %v", err)
	}
	rest, _ := io.ReadAll(r)
	st, err := p.Wait(ctx)
	if err != nil || st.Code != 7 || !strings.Contains(string(rest), "got-usr1") {
		t.Fatalf("after SIGUSR1: status %+v, %v, output %q; want the trap's exit 7", st, err, rest)
	}
}

// testResize: a PTY process sees a new window size; without a PTY,
// Resize is envs.ErrUnsupported.
func testResize(t *testing.T, env envs.Environment) {
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	plain, err := env.Start(ctx, sh("true"))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := plain.Resize(ctx, envs.WindowSize{Rows: 10, Cols: 10}); !errors.Is(err, envs.ErrUnsupported) && err != nil {
		t.Errorf("Resize without a PTY = %v; want ErrUnsupported (or nil once it ended)", err)
	}
	plain.Wait(ctx)
	if env.Capabilities().State(envs.CapPTY) == envs.Unsupported {
		t.Skip("backend reports PTY unsupported")
	}
	p, err := env.Start(ctx, envs.Command{Shell: `stty size; read x; stty size`, PTY: &envs.WindowSize{Rows: 20, Cols: 70}})
	if err != nil {
		t.Fatalf("Start with a PTY: %v", err)
	}
	defer p.Kill(context.WithoutCancel(ctx))
	r := bufio.NewReader(p.Output())
	first, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(first) != "20 70" {
		t.Fatalf("first size %q, %v; want 20 70", first, err)
	}
	if err := p.Resize(ctx, envs.WindowSize{Rows: 41, Cols: 123}); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	io.WriteString(p.Stdin(), "go\n")
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), "41 123") {
		t.Errorf("after Resize the command saw %q; want 41 123", rest)
	}
	p.Wait(ctx)
}

// testCapabilitiesMatch: what Capabilities says is what the environment
// does — file transfer offered exactly when the interface is there, and
// an unsupported PTY refused rather than faked.
func testCapabilitiesMatch(t *testing.T, env envs.Environment) {
	caps := env.Capabilities()
	_, ft := env.(envs.FileTransfer)
	if st := caps.State(envs.CapFileTransfer); (st != envs.Unsupported) != ft {
		t.Errorf("file transfer reported %v, but the environment implements FileTransfer: %v", st, ft)
	}
	if caps.State(envs.CapPTY) == envs.Unsupported {
		ctx, cancel := context.WithTimeout(t.Context(), hang)
		defer cancel()
		res, err := env.Run(ctx, envs.Command{Shell: "test -t 1", PTY: &envs.WindowSize{Rows: 24, Cols: 80}})
		if err == nil && res.Code == 0 {
			t.Errorf("PTY reported unsupported, but a command got a terminal")
		}
	}
}
