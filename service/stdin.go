package service

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
)

// Bounds on a command's piped stdin (Command.Stdin) where the gate judges
// it.
const (
	// MaxStdinLine bounds a line, and a statement of a shell's input
	// spread over lines (an if … fi, a here-document): the gate judges
	// whole statements, so a longer one cannot be judged and is refused.
	MaxStdinLine = 1 << 20
	// MaxStdinCode bounds the program an interpreter reads from its
	// stdin (python3 < script): it is judged whole before the
	// interpreter starts, so a larger one is refused.
	MaxStdinCode = 16 << 20
	// maxStdinHeld bounds the input held back, judged, until its end:
	// past it the input is a stream (see gateStdin).
	maxStdinHeld = 16 << 20
	// stdinSettle is how long input may pause before its end before it
	// counts as a stream (a program writing commands and waiting for
	// their output): what was judged so far is then passed on.
	stdinSettle = 250 * time.Millisecond
	// maxStatement bounds the text a statement of a shell's input is
	// parsed as, line after line, to find where it ends; a longer one is
	// judged as it is (the gate asks about what it cannot parse).
	maxStatement = 64 << 10
)

// StdinRefusedError is how a command ends when a line of its piped stdin
// (Command.Stdin) was refused by the gate: the line never reached it.
// Input that ended (a file, a pipe that was closed) was judged whole
// before the command started, and it was not started; input that went on
// (a stream) was passed on as it was judged, and the command was killed
// at the refused line. It matches envs.ErrDenied and unwraps to the
// gate's *envs.DeniedError.
type StdinRefusedError struct {
	// Line is the refused line's number, from 1; for a statement over
	// several lines, its first. 0 for a program an interpreter reads
	// whole.
	Line int
	// Text is the refused line or statement, without its last newline.
	Text string
	// Program is the program that reads the input ("bash", "python3").
	Program string
	// Started says the command had started (a stream): it was killed. It
	// was not started otherwise.
	Started bool
	Err     error
}

func (e *StdinRefusedError) Error() string {
	what := fmt.Sprintf("line %d of stdin refused (%q)", e.Line, e.Text)
	if e.Line == 0 {
		what = fmt.Sprintf("stdin refused (the %s program it holds, %d bytes)", e.Program, len(e.Text))
	}
	if e.Started {
		return fmt.Sprintf("service: %s: the command was killed before reading it: %v", what, e.Err)
	}
	return fmt.Sprintf("service: %s: the command was not started: %v", what, e.Err)
}

func (e *StdinRefusedError) Unwrap() error { return e.Err }

// tooLong is the refusal of input beyond a bound of the judgement.
func tooLong(what string, limit int) error {
	return fmt.Errorf("service: %s longer than %d bytes cannot be judged: %w", what, limit,
		&envs.DeniedError{Decision: envs.DecisionDeny, Reasons: []string{what + " too long to judge"}})
}

// gateStdin judges c.Stdin, if any, the way the command reads it
// ([approval.Gate.Input]):
//
//   - as data (wc, grep, python3 script.py): not at all, it is passed on
//     as it comes;
//   - as a program of an interpreter (python3, node … with no script):
//     read to its end and judged whole as inline code of that language,
//     before the command starts;
//   - as commands or statements (bash, sh -s, psql …): statement by
//     statement (a shell's, which may span lines) or line by line. Input
//     that ends is read and judged whole before the command starts, so a
//     refusal anywhere in it runs nothing; input that pauses before its
//     end for stdinSettle, or holds more than maxStdinHeld, is a stream:
//     what was judged so far is passed on, then each statement as it is
//     judged, and the command is killed at the first refused one (what
//     passed before it is what the command got).
//
// A refusal before the start is returned as err. Otherwise gateStdin
// returns the context to run c under (cancelled at a refused statement
// of a stream, which kills a command run with Run) and done, which
// releases it and returns the refusal, if there was one.
func (ss *Session) gateStdin(ctx context.Context, c *envs.Command) (run context.Context, done func() error, err error) {
	none := func() error { return nil }
	if c.Stdin == nil {
		return ctx, none, nil
	}
	in := ss.svc.gate.Input(CommandLine(*c))
	judge := func(ctx context.Context, text string) error { return ss.authorizeInput(ctx, in, text) }
	switch in.Kind {
	case approval.InputData:
		return ctx, none, nil
	case approval.InputCode:
		code, err := io.ReadAll(io.LimitReader(c.Stdin, MaxStdinCode+1))
		if err != nil {
			return ctx, none, fmt.Errorf("service: reading stdin: %w", err)
		}
		if len(code) > MaxStdinCode {
			return ctx, none, &StdinRefusedError{Program: in.Program, Text: string(code[:80]) + "...", Err: tooLong("a program on stdin", MaxStdinCode)}
		}
		if err := judge(ctx, string(code)); err != nil {
			return ctx, none, &StdinRefusedError{Program: in.Program, Text: string(code), Err: err}
		}
		c.Stdin = bytes.NewReader(code)
		return ctx, none, nil
	}
	u := newUnitReader(c.Stdin, in.Kind == approval.InputCommands)
	var held bytes.Buffer
	for {
		unit, err := u.next(stdinSettle)
		if len(unit.text) > 0 && err != errLong {
			if jerr := judge(ctx, unit.refusedText()); jerr != nil {
				u.stop()
				return ctx, none, &StdinRefusedError{Line: unit.line, Text: unit.refusedText(), Program: in.Program, Err: jerr}
			}
			held.Write(unit.text)
		}
		switch {
		case err == io.EOF:
			// The input ended, and all of it passed.
			c.Stdin = bytes.NewReader(held.Bytes())
			return ctx, none, nil
		case err == errLong:
			u.stop()
			return ctx, none, &StdinRefusedError{Line: unit.line, Text: unit.cut(), Program: in.Program, Err: tooLong("a line or statement of stdin", MaxStdinLine)}
		case err == errQuiet || err == nil && held.Len() > maxStdinHeld:
			// A stream: what passed goes on now, the rest as judged.
			run, cancel := context.WithCancelCause(ctx)
			g := &gatedReader{units: u, ctx: ctx, judge: judge, refuse: cancel, program: in.Program, buf: held.Bytes()}
			c.Stdin = g
			return run, func() error {
				cancel(nil)
				return g.refusal()
			}, nil
		case err != nil:
			// A read error ends the input where it happened, as it
			// would for the command.
			c.Stdin = io.MultiReader(bytes.NewReader(held.Bytes()), errReader{err})
			return ctx, none, nil
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// gatedReader is the rest of a stream of piped stdin, read through the
// gate: each statement (or line) is judged as it comes in. At the first
// refused one it stops (the backend sees the refusal as a read error)
// and calls refuse, which kills the command: a command that read half a
// script must not go on to the next statement as if it had ended.
type gatedReader struct {
	units   *unitReader
	ctx     context.Context
	judge   func(context.Context, string) error
	refuse  func(error)
	program string

	mu   sync.Mutex
	buf  []byte // the admitted part not yet read
	err  error  // sticky: io.EOF, a read error or the refusal
	deny *StdinRefusedError
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

// next reads and judges one statement into g.buf, or sets g.err.
func (g *gatedReader) next() {
	unit, err := g.units.next(0)
	if len(unit.text) > 0 {
		if err == errLong {
			unit.text = []byte(unit.cut())
			g.refuseUnit(unit, tooLong("a line or statement of stdin", MaxStdinLine))
			return
		}
		if jerr := g.judge(g.ctx, unit.refusedText()); jerr != nil {
			g.refuseUnit(unit, jerr)
			return
		}
		g.buf = unit.text
	}
	if err != nil {
		g.err = err
	}
}

func (g *gatedReader) refuseUnit(u unit, err error) {
	g.deny = &StdinRefusedError{Line: u.line, Text: u.refusedText(), Program: g.program, Started: true, Err: err}
	g.err = g.deny
	g.units.stop()
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

var (
	errLong  = errors.New("line too long")
	errQuiet = errors.New("input paused")
)

// unit is one statement (or line) of input, with the number of its
// first line.
type unit struct {
	text []byte
	line int
}

// refusedText is the unit as the gate is given it and a refusal names
// it: without its last newline.
func (u unit) refusedText() string { return string(bytes.TrimSuffix(u.text, []byte("\n"))) }

// cut is the start of a unit too long to judge, to name it.
func (u unit) cut() string { return string(u.text[:min(len(u.text), 80)]) + "..." }

// unitReader cuts input into what the gate judges: for a shell, whole
// statements (lines are joined until they parse as complete: if … fi, a
// function, a here-document, a quoted newline); for others, lines. The
// input is read by a goroutine of its own, so that next can tell input
// that paused from input that ended.
type unitReader struct {
	r        *bufio.Reader
	feed     *feedReader
	commands bool
	parser   *syntax.Parser
	lines    int    // lines read so far
	pending  []byte // the start of the next unit, read before a pause
	first    int    // the line pending starts on
}

func newUnitReader(r io.Reader, commands bool) *unitReader {
	f := newFeedReader(r)
	u := &unitReader{r: bufio.NewReaderSize(f, 64<<10), feed: f, commands: commands}
	if commands {
		u.parser = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	return u
}

// stop lets the goroutine reading the input end once its read returns.
func (u *unitReader) stop() { u.feed.stop() }

// next returns the next unit. With settle > 0, errQuiet says no input
// came for that long (what was read of a unit is kept for the next
// call). A unit is returned with io.EOF at the end of the input, and
// with errLong when it is longer than MaxStdinLine.
func (u *unitReader) next(settle time.Duration) (unit, error) {
	u.feed.settle = settle
	for {
		line, err := u.readLine()
		if len(line) > 0 {
			if len(u.pending) == 0 {
				u.first = u.lines + 1
			}
			if bytes.HasSuffix(line, []byte("\n")) {
				u.lines++ // a line read in parts, across pauses, counts once
			}
			u.pending = append(u.pending, line...)
		}
		switch {
		case err == errQuiet:
			return unit{}, err
		case err == errLong || len(u.pending) > MaxStdinLine:
			return u.take(), errLong
		case err != nil:
			if len(u.pending) == 0 {
				return unit{}, err
			}
			return u.take(), err
		case u.complete():
			return u.take(), nil
		}
	}
}

// complete reports whether pending, which ends with a newline, is a
// whole unit: a line, or statements a shell would run now.
func (u *unitReader) complete() bool {
	if !u.commands || len(u.pending) > maxStatement {
		return true
	}
	_, err := u.parser.Parse(bytes.NewReader(u.pending), "")
	return !syntax.IsIncomplete(err)
}

func (u *unitReader) take() unit {
	t := unit{text: u.pending, line: u.first}
	u.pending = nil
	return t
}

// readLine reads up to and including a newline, at most MaxStdinLine
// bytes; the part of a line read before a pause is returned with
// errQuiet.
func (u *unitReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := u.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxStdinLine {
			return line, errLong
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// feedReader reads r in a goroutine of its own, so that a read can give
// up after a pause (settle) and be taken up again later.
type feedReader struct {
	chunks chan []byte
	done   chan struct{}
	err    error // set before chunks is closed
	settle time.Duration
	rest   []byte
	stops  sync.Once
}

func newFeedReader(r io.Reader) *feedReader {
	f := &feedReader{chunks: make(chan []byte), done: make(chan struct{})}
	go func() {
		defer close(f.chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := r.Read(b)
			if n > 0 {
				select {
				case f.chunks <- b[:n]:
				case <-f.done:
					return
				}
			}
			if err != nil {
				f.err = err
				return
			}
		}
	}()
	return f
}

func (f *feedReader) stop() { f.stops.Do(func() { close(f.done) }) }

func (f *feedReader) Read(p []byte) (int, error) {
	if len(f.rest) == 0 {
		var timeout <-chan time.Time
		if f.settle > 0 {
			t := time.NewTimer(f.settle)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case b, ok := <-f.chunks:
			if !ok {
				if f.err == nil {
					return 0, io.EOF
				}
				return 0, f.err
			}
			f.rest = b
		case <-timeout:
			return 0, errQuiet
		}
	}
	n := copy(p, f.rest)
	f.rest = f.rest[n:]
	return n, nil
}

// authorizeInput judges text piped to the session's command, which reads
// it as in says.
func (ss *Session) authorizeInput(ctx context.Context, in approval.Input, text string) error {
	host, dir := ss.hostAccess(ctx)
	return ss.svc.Authorize(ctx, Authorization{Command: text, Backend: ss.Backend, HostAccess: host, SessionKey: ss.ID,
		Asker: ss.ask, Dir: dir, Sandbox: ss.sandbox(), Input: in})
}

// inputJudge is how writes to the stdin of a process started for c are
// judged: not at all when it reads them as data, else each line the way
// it reads them.
func (ss *Session) inputJudge(c envs.Command) func(context.Context, string) error {
	in := ss.svc.gate.Input(CommandLine(c))
	if in.Kind == approval.InputData {
		return nil
	}
	return func(ctx context.Context, text string) error {
		if strings.TrimSpace(text) == "" {
			return nil
		}
		return ss.authorizeInput(ctx, in, text)
	}
}

// gatedProcess is a started process whose stdin is gated.
type gatedProcess struct {
	envs.Process
	in  *GatedInput
	raw bool // a person's terminal, or a program reading data: Stdin is the process's own

	// stop releases the kill at a refused line of piped stdin (nil
	// without one); done ends the gating and returns the refusal.
	stop func() bool
	done func() error
}

// SandboxDenials passes on the process's own (envs.Denier), when it has
// them.
func (p *gatedProcess) SandboxDenials() []envs.Violation { return denialsOf(p.Process) }

// denialsOf is what the sandbox denied p, when p says (envs.Denier).
func denialsOf(p envs.Process) []envs.Violation {
	if d, ok := p.(envs.Denier); ok {
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
