package envs

import (
	"fmt"
	"os"
	"sync"
	"unicode/utf8"
)

// Capture is an io.Writer that keeps a bounded window of what is written to
// it: the first 40% of the limit and the last 60%. While the stream fits,
// nothing is dropped and no file is made. The moment it outgrows the limit,
// everything seen so far and every later byte goes to a private spill file
// (mode 0600), so the whole stream is never lost. Capture is safe for
// concurrent writers (stdout and stderr copied into one Capture interleave
// in arrival order).
//
// The window never splits a UTF-8 character: the head ends before a
// sequence the cut left incomplete and the tail starts after the
// continuation bytes of one, so valid UTF-8 in gives valid UTF-8 out (each
// end may give up to 3 bytes of its share for that). Bytes that were
// invalid to begin with are kept as they are.
type Capture struct {
	mu        sync.Mutex
	limit     int
	head      []byte
	tail      []byte // ring buffer of the last tailCap bytes
	tailStart int    // index of the oldest byte in tail when full
	tailCap   int
	total     int64
	spillDir  string
	spill     *os.File
	spillErr  error
	spillMax  int64 // the spill file's bound; 0: DefaultSpillMax
	spilled   int64 // bytes written to the spill file
	spillCut  bool  // the stream outgrew the spill file too
}

// DefaultSpillMax bounds a spill file when [Capture.SetSpillMax] was not
// given one: a command that prints without end fills no disk.
const DefaultSpillMax int64 = 1 << 30

// SetSpillMax bounds the spill file to n bytes (n <= 0: DefaultSpillMax).
// Past it the spill file stops growing and the window's notice says
// where it stopped. Call it before the first Write.
func (c *Capture) SetSpillMax(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spillMax = n
}

// writeSpill appends p to the spill file, up to its bound.
func (c *Capture) writeSpill(p []byte) {
	if c.spill == nil || c.spillErr != nil {
		return
	}
	bound := c.spillMax
	if bound <= 0 {
		bound = DefaultSpillMax
	}
	if room := bound - c.spilled; int64(len(p)) > room {
		p, c.spillCut = p[:max(room, 0)], true
	}
	n, err := c.spill.Write(p)
	c.spilled += int64(n)
	if err != nil {
		c.spillErr = err
	}
}

// NewCapture returns a Capture bounded to limit bytes. limit < 0 means
// unbounded (everything is kept in memory). dir is where a spill file goes;
// empty means [DefaultSpillDir] (or os.TempDir() when that cannot be used),
// where making a spill file also removes spills older than [SpillRetention].
func NewCapture(limit int, dir string) *Capture {
	c := &Capture{limit: limit, spillDir: dir}
	if limit >= 0 {
		headCap := limit * 2 / 5
		c.tailCap = limit - headCap
		c.head = make([]byte, 0, min(headCap, 64<<10))
	}
	return c
}

// Write always consumes all of p. A failure to spill is remembered and
// reported by [Capture.Close], never returned here, so a full disk cannot
// make the command see a broken pipe.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if c.limit < 0 {
		c.head = append(c.head, p...)
		return n, nil
	}
	if c.spill == nil && c.total > int64(c.limit) {
		c.startSpill()
	}
	c.writeSpill(p)
	headCap := c.limit - c.tailCap
	if room := headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.appendTail(p)
	return n, nil
}

func (c *Capture) appendTail(p []byte) {
	if c.tailCap == 0 || len(p) == 0 {
		return
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		c.tailStart = 0
		return
	}
	if len(c.tail) < c.tailCap {
		room := c.tailCap - len(c.tail)
		k := min(room, len(p))
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 { // ring is full: overwrite the oldest bytes
		k := copy(c.tail[c.tailStart:], p)
		p = p[k:]
		c.tailStart = (c.tailStart + k) % c.tailCap
	}
}

func (c *Capture) tailBytes() []byte {
	if len(c.tail) < c.tailCap || c.tailStart == 0 {
		return c.tail
	}
	out := make([]byte, 0, len(c.tail))
	out = append(out, c.tail[c.tailStart:]...)
	return append(out, c.tail[:c.tailStart]...)
}

// startSpill opens the spill file and writes everything held so far, which
// is still the complete stream: nothing is dropped before the limit is passed.
func (c *Capture) startSpill() {
	dir, prune := c.spillDir, false
	if dir == "" {
		if d, err := DefaultSpillDir(); err == nil {
			dir, prune = d, true
		}
	}
	f, err := os.CreateTemp(dir, spillPattern)
	if err != nil {
		c.spillErr = fmt.Errorf("envs: create spill file: %w", err)
		return
	}
	c.spill = f
	if err := f.Chmod(0o600); err != nil {
		c.spillErr = err
	}
	c.writeSpill(c.head)
	c.writeSpill(c.tailBytes())
	if prune {
		PruneSpills(dir, SpillRetention)
		BoundSpills(dir, DefaultSpillDirMax, f.Name())
	}
}

// Total is the number of bytes written so far.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Truncated reports whether the stream outgrew the limit.
func (c *Capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit >= 0 && c.total > int64(c.limit)
}

// SpillPath is the spill file's path, or "" if the stream fit.
func (c *Capture) SpillPath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spill == nil {
		return ""
	}
	return c.spill.Name()
}

// Bytes returns the window: the whole stream if it fit, else head, one
// notice line, and tail (see [Capture.Window]).
func (c *Capture) Bytes() []byte {
	head, notice, tail := c.Window()
	out := make([]byte, 0, len(head)+len(notice)+len(tail))
	out = append(out, head...)
	out = append(out, notice...)
	return append(out, tail...)
}

// Window returns the window in its parts. While the stream fits, head is
// all of it and notice and tail are empty. Over the limit, head is at most
// the first 40% of the limit, tail at most the last 60%, each cut on a
// character boundary, and notice is one line (with a newline before and
// after) that says how many bytes were left out and where the whole
// stream is.
func (c *Capture) Window() (head, notice, tail []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit < 0 || c.total <= int64(c.limit) {
		return append(append([]byte(nil), c.head...), c.tailBytes()...), nil, nil
	}
	head = append([]byte(nil), c.head[:headCut(c.head)]...)
	tail = c.tailBytes()
	tail = append([]byte(nil), tail[tailCut(tail):]...)
	cut := c.total - int64(len(head)) - int64(len(tail))
	where := "spill file unavailable"
	switch {
	case c.spill != nil && c.spillErr == nil && c.spillCut:
		where = fmt.Sprintf("the first %d bytes in %s (the spill file's bound)", c.spilled, c.spill.Name())
	case c.spill != nil && c.spillErr == nil:
		where = "full output in " + c.spill.Name()
	}
	notice = fmt.Appendf(nil, "\n[runbox: output truncated: %d of %d bytes omitted; %s]\n", cut, c.total, where)
	return head, notice, tail
}

// headCut is how much of b to keep so that it does not end inside a UTF-8
// sequence: b up to the start of a last sequence that is incomplete.
func headCut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// tailCut is where b starts once the continuation bytes of a sequence
// whose start was cut away are skipped (at most UTFMax-1 of them).
func tailCut(b []byte) int {
	i := 0
	for i < len(b) && i < utf8.UTFMax-1 && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

// Close closes the spill file (which stays on disk for the caller) and
// reports any error met while spilling.
func (c *Capture) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spill != nil {
		if err := c.spill.Close(); err != nil && c.spillErr == nil {
			c.spillErr = err
		}
	}
	return c.spillErr
}

// TakeOutput closes out (and errc, when it is a different capture: the
// separate stderr) and fills r's output fields from them: the windowed
// text, whether it was cut, the spill files and the byte count.
func (r *Result) TakeOutput(out, errc *Capture) {
	out.Close()
	r.Output, r.Truncated, r.SpillPath, r.TotalBytes = string(out.Bytes()), out.Truncated(), out.SpillPath(), out.Total()
	if errc != nil && errc != out {
		errc.Close()
		r.Stderr, r.StderrSpillPath = string(errc.Bytes()), errc.SpillPath()
		r.Truncated = r.Truncated || errc.Truncated()
		r.TotalBytes += errc.Total()
	}
}
