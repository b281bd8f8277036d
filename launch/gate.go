package launch

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/runbox/runbox/termination"
)

// GateFD is the file descriptor on which a gated child finds its gate:
// the first of exec.Cmd.ExtraFiles.
const GateFD = 3

// ExitGateClosed is the exit code of a gated child whose gate was closed
// without being opened: it ran nothing of its user's.
const ExitGateClosed = 125

// holdScript waits at the gate on fd [GateFD], closes it, and execs its
// arguments. It exits [ExitGateClosed] when the gate closes unopened.
func holdScript() string {
	return fmt.Sprintf(`IFS= read -r _ <&%[1]d || exit %[2]d; exec %[1]d<&-; exec "$@"`, GateFD, ExitGateClosed)
}

// HoldShell is the shell [HoldArgv] runs the wait in: /bin/sh, which
// POSIX systems have.
const HoldShell = "/bin/sh"

// HoldArgv is the argv that runs path (as argv[0], with argv[1:]) once
// its gate, inherited at [GateFD], opens. The waiter execs the program,
// so the PID the parent started is the program's own. argv[0] is not
// kept: a shell cannot exec a program under another name.
func HoldArgv(path string, argv []string) []string {
	return append([]string{HoldShell, "-c", holdScript(), "runbox", path}, argv[1:]...)
}

// A Gate holds a child at its start until its parent has placed it. Its
// zero value is not usable; make one with [NewGate], hand [Gate.File] to
// the child at [GateFD], call [Gate.Started] once the child has been
// started, and then exactly one of [Gate.Admit], [Gate.Open] or
// [Gate.Close]. Close is safe to call again (deferred) after any of them.
type Gate struct {
	r, w *os.File
}

// NewGate makes a gate.
func NewGate() (*Gate, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("launch: gate pipe: %w", err)
	}
	return &Gate{r: r, w: w}, nil
}

// File is the child's end of the gate, for exec.Cmd.ExtraFiles.
func (g *Gate) File() *os.File { return g.r }

// Started closes the parent's copy of the child's end, so that the
// child alone holds it.
func (g *Gate) Started() {
	if g.r != nil {
		g.r.Close()
		g.r = nil
	}
}

// Open lets the child run.
func (g *Gate) Open() error {
	if g.w == nil {
		return errors.New("launch: gate already closed")
	}
	_, err := g.w.Write([]byte("go\n"))
	g.Close()
	if err != nil {
		return fmt.Errorf("launch: open the gate: %w", err)
	}
	return nil
}

// Close shuts the gate; if it was not opened, the child exits
// [ExitGateClosed] without running anything.
func (g *Gate) Close() {
	g.Started()
	if g.w != nil {
		g.w.Close()
		g.w = nil
	}
}

// Admit places the started child pid in cont and then opens the gate.
// A nil cont only opens the gate. When the placement fails the error
// matches [ErrNotContained]; then, with required (the command asked for
// limits, or must be contained), the gate is closed unopened and the
// child exits [ExitGateClosed] having run nothing; without it the gate
// is opened anyway and the child runs in its process group only — the
// error is the caller's warning to report.
func (g *Gate) Admit(ctx context.Context, cont termination.Container, pid int, required bool) error {
	if cont == nil {
		return g.Open()
	}
	perr := Place(ctx, cont, pid)
	if perr != nil && required {
		g.Close()
		return perr
	}
	if err := g.Open(); err != nil {
		return errors.Join(perr, err)
	}
	return perr
}
