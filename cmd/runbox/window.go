package main

import (
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/runbox/runbox/envs"
)

// outputWindow bounds what a command prints on one of runbox's streams to
// the window --json keeps: the first 40% of the limit is passed through as
// it comes; past that the output is held in an [envs.Capture], which keeps
// the last 60% and, once the limit is passed, spills the whole stream to a
// private file. When the command ends, finish prints what the user has not
// seen yet: the rest, if it all fit; else the notice line (with the spill
// file's path) and the tail. Memory stays bounded by the limit however
// much the command prints.
type outputWindow struct {
	out     io.Writer
	capture *envs.Capture
	live    int // bytes still passed through as they come
	shown   int // bytes passed through so far
}

func newOutputWindow(out io.Writer, limit int) *outputWindow {
	// The head may lose up to UTFMax-1 bytes to a character boundary, and
	// what was shown cannot be taken back: hold those bytes until the end.
	live := max(0, limit*2/5-(utf8.UTFMax-1))
	return &outputWindow{out: out, capture: envs.NewCapture(limit, ""), live: live}
}

// Write consumes all of p, whatever happens to the terminal, so that the
// command never blocks on runbox.
func (w *outputWindow) Write(p []byte) (int, error) {
	w.capture.Write(p)
	if w.live > 0 {
		k := min(w.live, len(p))
		w.out.Write(p[:k])
		w.live -= k
		w.shown += k
	}
	return len(p), nil
}

// finish prints the rest of the window once the stream has ended.
func (w *outputWindow) finish() {
	w.capture.Close()
	head, notice, tail := w.capture.Window()
	if w.shown < len(head) {
		w.out.Write(head[w.shown:])
	}
	w.out.Write(notice)
	w.out.Write(tail)
}

// bounded is w through an outputWindow of limit bytes, or w itself when
// limit is 0 (everything passes).
func bounded(w io.Writer, limit int) (io.Writer, func()) {
	if limit <= 0 {
		return w, func() {}
	}
	ow := newOutputWindow(w, limit)
	return ow, ow.finish
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}
