package service

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/runbox/runbox/envs"
)

// MaxStdinLine bounds a line of a command's piped stdin (Command.Stdin):
// the gate judges whole lines, so a longer one cannot be judged and is
// refused.
const MaxStdinLine = 1 << 20

// StdinRefusedError is how a command ends when a line of its piped stdin
// (Command.Stdin) was refused by the gate: the line never reached it, and
// it was killed. It matches envs.ErrDenied and unwraps to the gate's
// *envs.DeniedError.
type StdinRefusedError struct {
	// Line is the refused line's number, from 1.
	Line int
	// Text is the refused line, without its newline.
	Text string
	Err  error
}

func (e *StdinRefusedError) Error() string {
	return fmt.Sprintf("service: line %d of stdin refused (%q): the command was killed before reading it: %v", e.Line, e.Text, e.Err)
}

func (e *StdinRefusedError) Unwrap() error { return e.Err }

// gatedReader is a command's piped stdin read through the gate: each line
// is judged as it streams in, the way a session's stdin writes are (see
// [GatedInput]), since a shell or interpreter reading its stdin runs it.
// At the first refused line it stops (the backend sees the refusal as a
// read error) and calls refuse, which kills the command: a command that
// read half a script must not go on to the next line as if it had ended.
type gatedReader struct {
	r      *bufio.Reader
	ctx    context.Context
	judge  func(context.Context, string) error
	refuse func(error)

	mu   sync.Mutex
	n    int    // lines read
	buf  []byte // the admitted part not yet read
	err  error  // sticky: io.EOF, a read error or the refusal
	deny *StdinRefusedError
}

func newGatedReader(ctx context.Context, r io.Reader, judge func(context.Context, string) error, refuse func(error)) *gatedReader {
	return &gatedReader{r: bufio.NewReaderSize(r, 64<<10), ctx: ctx, judge: judge, refuse: refuse}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		g.next()
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// next reads and judges one line into g.buf, or sets g.err.
func (g *gatedReader) next() {
	line, err := g.readLine()
	if len(line) > 0 {
		g.n++
		text := string(bytes.TrimSuffix(line, []byte("\n")))
		if err == errLongLine {
			g.refuseLine(text[:80]+"...", fmt.Errorf("service: a line longer than %d bytes cannot be judged: %w", MaxStdinLine, &envs.DeniedError{Decision: envs.DecisionDeny, Reasons: []string{"stdin line too long to judge"}}))
			return
		}
		if jerr := g.judge(g.ctx, text); jerr != nil {
			g.refuseLine(text, jerr)
			return
		}
		g.buf = line
	}
	if err != nil {
		g.err = err
	}
}

var errLongLine = errors.New("line too long")

// readLine reads up to and including a newline, at most MaxStdinLine bytes.
func (g *gatedReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxStdinLine {
			return line, errLongLine
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

func (g *gatedReader) refuseLine(text string, err error) {
	g.deny = &StdinRefusedError{Line: g.n, Text: text, Err: err}
	g.err = g.deny
	g.refuse(g.deny)
}

// refusal is the refusal that ended the stdin, nil if none did.
func (g *gatedReader) refusal() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deny == nil {
		return nil
	}
	return g.deny
}

// gateStdin replaces c.Stdin, if any, with a gated reader. It returns the
// context to run c under (cancelled at a refused line, which kills a
// command run with Run) and done, which releases it and returns the
// refusal, if there was one.
func (ss *Session) gateStdin(ctx context.Context, c *envs.Command) (context.Context, func() error) {
	if c.Stdin == nil {
		return ctx, func() error { return nil }
	}
	run, cancel := context.WithCancelCause(ctx)
	g := newGatedReader(ctx, c.Stdin, ss.authorize, cancel)
	c.Stdin = g
	return run, func() error {
		cancel(nil)
		return g.refusal()
	}
}

// gatedProcess is a started process whose stdin is gated.
type gatedProcess struct {
	envs.Process
	in  *GatedInput
	raw bool // a person's terminal: Stdin is the process's own

	// stop releases the kill at a refused line of piped stdin (nil
	// without one); done ends the gating and returns the refusal.
	stop func() bool
	done func() error
}

// SandboxDenials passes on the process's own (envs.Denier), when it has
// them.
func (p *gatedProcess) SandboxDenials() []envs.Violation {
	if d, ok := p.Process.(envs.Denier); ok {
		return d.SandboxDenials()
	}
	return nil
}

func (p *gatedProcess) Stdin() io.WriteCloser {
	if p.raw {
		return p.Process.Stdin()
	}
	if p.in == nil {
		return nil
	}
	return p.in
}

// Wait is the process's Wait; once it has exited, a refused line of its
// piped stdin is the error (the process was killed for it).
func (p *gatedProcess) Wait(ctx context.Context) (envs.ExitStatus, error) {
	st, err := p.Process.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		return st, err // the wait was stopped, not the process
	}
	if p.stop != nil {
		p.stop()
	}
	if rerr := p.done(); rerr != nil {
		return st, rerr
	}
	return st, err
}
