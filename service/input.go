package service

import (
	"bytes"
	"context"
	"io"
	"sync"
)

// WriteCloser is a process's stdin.
type WriteCloser = io.WriteCloser

// GatedInput is a process's stdin whose every line passes the gate before
// the process sees it: a shell or REPL reading its stdin runs what is
// written there, so a write is a command like any other (to a shell), or
// code (to an interpreter, as inline code is judged), or statements (to
// a database client). A partial line is held until its newline (or
// Close) completes it; a refused line is dropped, and Write returns the
// refusal (matching envs.ErrDenied) having written the lines before it.
// A process that reads its stdin as data (wc, sort, python3 script.py)
// gets what is written as it is written: judge is nil. It is safe for
// concurrent use.
type GatedInput struct {
	w     io.WriteCloser
	judge func(context.Context, string) error // nil: data, passed on as written

	mu      sync.Mutex
	pending []byte
}

// Write judges and forwards every complete line in b.
func (g *GatedInput) Write(b []byte) (int, error) {
	return g.WriteContext(context.Background(), b)
}

// WriteContext is Write with a context for the gate (a prompt to a
// human may take a while).
func (g *GatedInput) WriteContext(ctx context.Context, b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.judge == nil {
		return g.w.Write(b)
	}
	g.pending = append(g.pending, b...)
	for {
		i := bytes.IndexByte(g.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := g.pending[:i+1]
		if err := g.judge(ctx, string(line[:i])); err != nil {
			g.pending = g.pending[i+1:]
			return len(b), err
		}
		if _, err := g.w.Write(line); err != nil {
			return len(b), err
		}
		g.pending = g.pending[i+1:]
	}
}

// Close judges and forwards what is left of a last line, then closes the
// process's stdin.
func (g *GatedInput) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var err error
	if len(g.pending) > 0 && g.judge != nil {
		if err = g.judge(context.Background(), string(g.pending)); err == nil {
			_, err = g.w.Write(g.pending)
		}
		g.pending = nil
	}
	if cerr := g.w.Close(); err == nil {
		err = cerr
	}
	return err
}
