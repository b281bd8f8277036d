package procregistry

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// jobWatch is one job's watch patterns and rate window. It is touched
// only by the job's follower goroutine (and, for the counters, under
// Registry.mu from hit, which that goroutine calls).
type jobWatch struct {
	pats     []*regexp.Regexp
	disabled []bool
	winStart time.Time
	sent     int   // events sent in this window
	pending  int   // matches suppressed since the last event sent
	patSupp  []int // per pattern: matches suppressed in this window
}

func newJobWatch(pats []*regexp.Regexp) *jobWatch {
	return &jobWatch{pats: pats, disabled: make([]bool, len(pats)), patSupp: make([]int, len(pats))}
}

// watchLimiter is the breaker across all jobs. Guarded by Registry.mu.
type watchLimiter struct {
	winStart  time.Time
	sent      int
	tripped   bool
	trippedAt time.Time
	dropped   int
}

func (l *watchLimiter) init(now time.Time) { l.winStart = now }

// watchLoop is a job's follower: it reads the log from `from` as it
// grows, cuts it into lines and matches them. Memory is one read buffer
// and one line (maxLine) whatever the volume. When the job's exit is
// known it reads to the end once more and closes j.drained.
func (r *Registry) watchLoop(j *job, from int64) {
	defer close(j.drained)
	f, err := openPrivateFile(j.logPath(), os.O_RDONLY, 0)
	if err != nil {
		r.log.Warn("procregistry: follow", "job", j.id, "err", err)
		return
	}
	defer f.Close()
	// Woken by each write to the log; without a watcher, an idle log is
	// looked at less and less often (up to once a second) instead.
	changed, stop := r.logChanges(j.logPath())
	defer stop()
	buf := make([]byte, 64<<10)
	var sp lineSplitter
	off := from
	emit := func(line []byte) { r.matchLine(j, line) }
	wait := r.opts.PollInterval
	for {
		if r.ctx.Err() != nil {
			return
		}
		exited := isClosed(j.exitSeen)
		if next := nextData(f, off); next != off {
			// A hole ends the line it cut into: the text after it is a
			// line of its own, not the tail of a line of zeros.
			sp.flush(emit)
			off = next
		}
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			sp.feed(buf[:n], emit)
			off += int64(n)
			wait = r.opts.PollInterval
			continue
		}
		if err != nil && err != io.EOF {
			r.log.Warn("procregistry: follow", "job", j.id, "err", err)
			return
		}
		if exited {
			sp.flush(emit)
			return
		}
		var tick <-chan time.Time
		var t *time.Timer
		if changed == nil {
			t = time.NewTimer(wait)
			tick = t.C
			wait = min(2*wait, max(time.Second, r.opts.PollInterval))
		}
		select {
		case <-changed:
		case <-tick:
		case <-j.exitSeen:
		case <-r.ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		}
		if t != nil {
			t.Stop()
		}
	}
}

// nextData is where the log's next written byte lies from off: past a
// hole, which the job made by growing its output with ftruncate or a
// seek rather than by writing (a 20 GB log of 8 blocks), and which holds
// no text a pattern could match. Reading it would cost the follower the
// hole's length in zeros. Where the file system cannot tell, off.
func nextData(f *os.File, off int64) int64 {
	// The size is taken first: SEEK_DATA also fails at the end of the
	// file, and bytes written after the look must not be skipped.
	fi, err := f.Stat()
	if err != nil || fi.Size() <= off {
		return off
	}
	next, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	switch {
	case err == nil && next > off:
		return next
	case errors.Is(err, unix.ENXIO): // a hole up to the size seen
		return fi.Size()
	}
	return off
}

func (r *Registry) matchLine(j *job, line []byte) {
	w := j.watch
	for i, re := range w.pats {
		if !w.disabled[i] && re.Match(line) {
			r.hit(j, i, line)
		}
	}
}

// hit applies the rate limits to one match and sends what they allow:
// per job, PerJob events per window (the rest counted in the next
// event's Suppressed); a pattern with DisableAfter suppressed matches in
// one window is switched off (one event); across jobs, Global events per
// window, beyond which the breaker trips (one event) until a window has
// passed.
func (r *Registry) hit(j *job, i int, line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	lim := r.opts.Watch
	w := j.watch
	if now.Sub(w.winStart) >= lim.Window {
		w.winStart, w.sent = now, 0
		clear(w.patSupp)
	}
	r.rollLocked(now)
	g := &r.limits
	pat := w.pats[i].String()
	suppress := func() {
		w.pending++
		w.patSupp[i]++
		if w.patSupp[i] >= lim.DisableAfter {
			w.disabled[i] = true
			r.emitLocked(&Event{
				Type: EventWatchDisabled, Consumer: j.rec.Owner, Job: j.id, Command: j.rec.command(), Pattern: pat,
				Suppressed: w.pending,
				Message: fmt.Sprintf("watch pattern %q matched %d times within %v beyond the limit of %d events; it is switched off for this job",
					pat, w.patSupp[i], lim.Window, lim.PerJob),
			})
		}
	}
	switch {
	case g.tripped:
		g.dropped++
		suppress()
	case w.sent >= lim.PerJob:
		suppress()
	case g.sent >= lim.Global:
		g.tripped, g.trippedAt, g.dropped = true, now, 1
		w.pending++
		r.emitLocked(&Event{
			Type: EventBreakerTripped,
			Message: fmt.Sprintf("watch events from all jobs exceeded %d per %v; matches are dropped until the breaker releases",
				lim.Global, lim.Window),
		})
	default:
		w.sent++
		g.sent++
		r.emitLocked(&Event{
			Type: EventWatch, Consumer: j.rec.Owner, Job: j.id, Command: j.rec.command(), Pattern: pat,
			Line: strings.ToValidUTF8(string(line[:min(len(line), TailBytes)]), "\uFFFD"), Suppressed: w.pending,
		})
		w.pending = 0
	}
}

// rollLocked starts a new global window when the current one is over,
// releasing a breaker that has been tripped for a whole window.
func (r *Registry) rollLocked(now time.Time) {
	g := &r.limits
	win := r.opts.Watch.Window
	if now.Sub(g.winStart) < win {
		return
	}
	g.winStart, g.sent = now, 0
	if g.tripped && now.Sub(g.trippedAt) >= win {
		g.tripped = false
		r.emitLocked(&Event{
			Type: EventBreakerReleased, Suppressed: g.dropped,
			Message: fmt.Sprintf("watch breaker released; %d matches were dropped", g.dropped),
		})
		g.dropped = 0
	}
}

// sweeper runs once per watch window (by the registry's clock): it
// releases the breaker on time even when no match comes, and removes
// finished jobs past their retention.
func (r *Registry) sweeper() {
	defer r.wg.Done()
	for {
		t := r.clock.NewTimer(r.opts.Watch.Window)
		select {
		case <-t.C():
		case <-r.ctx.Done():
			t.Stop()
			return
		}
		r.mu.Lock()
		r.rollLocked(r.clock.Now())
		r.mu.Unlock()
		r.reap()
	}
}
