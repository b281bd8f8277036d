package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress tells a person at a terminal what the bench is doing: one
// line per step on stderr, and at most one update a second from a long
// loop. It says nothing when stderr is not a terminal (a pipe, a file, a
// test), so `--json` output and logs stay clean. Its methods are safe
// for concurrent use: the job measurements report from several workers.
type progress struct {
	mu   sync.Mutex
	w    *os.File // nil: silent
	last time.Time
}

// newProgress reports on w when it is a terminal, else nowhere.
func newProgress(w io.Writer) *progress {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &progress{w: f}
	}
	return &progress{}
}

// say prints one line.
func (p *progress) say(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "runbox bench: "+format+"\n", args...)
	p.last = time.Now()
}

// step reports progress i of total in a loop, at most once a second (and
// always for the last one).
func (p *progress) step(what string, i, total int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	due := i == total || time.Since(p.last) >= time.Second
	p.mu.Unlock()
	if due {
		p.say("  %s %d/%d", what, i, total)
	}
}
