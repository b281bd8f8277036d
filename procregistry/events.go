package procregistry

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/runbox/runbox/envs"
)

// EventType is the kind of an [Event]. It is a closed set.
type EventType string

const (
	// EventCompletion: a job finished (once per job, for jobs with Notify).
	EventCompletion EventType = "completion"
	// EventHeartbeat: a job wrote output since the last heartbeat.
	EventHeartbeat EventType = "heartbeat"
	// EventWatch: an output line matched a watch pattern.
	EventWatch EventType = "watch"
	// EventWatchDisabled: a pattern fired too often and was switched off.
	EventWatchDisabled EventType = "watch_disabled"
	// EventBreakerTripped: watch events from all jobs exceeded the global
	// limit; matches are dropped until the breaker releases.
	EventBreakerTripped EventType = "breaker_tripped"
	// EventBreakerReleased: the global breaker closed again.
	EventBreakerReleased EventType = "breaker_released"
	// EventHandoff: a job was handed to this consumer.
	EventHandoff EventType = "handoff"
	// EventQuiet: a job with QuietAfter wrote nothing for that long
	// (once per quiet spell).
	EventQuiet EventType = "quiet"
	// EventWaitingForInput: a process of a job with InputWait is blocked
	// reading the job's stdin, with no output (once per wait).
	EventWaitingForInput EventType = "waiting_for_input"
)

// Event is one entry of a consumer's queue.
type Event struct {
	// Seq is the event's position in the registry's event log. It grows
	// with every event; pass it to [Registry.Ack].
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	// Consumer is the owner the event is for; "" means every consumer
	// (breaker events).
	Consumer string    `json:"consumer,omitempty"`
	Job      string    `json:"job,omitempty"`
	Command  string    `json:"command,omitempty"`
	Time     time.Time `json:"time"`
	// Reason, Exit and KilledBy describe a completion. Exit is nil for a
	// lost job.
	Reason   Reason           `json:"reason,omitempty"`
	Exit     *envs.ExitStatus `json:"exit,omitempty"`
	KilledBy string           `json:"killed_by,omitempty"`
	// Tail is the end of the output (completion: of the whole log;
	// heartbeat: of the output new since the last heartbeat), at most
	// TailBytes, as text with invalid UTF-8 replaced.
	Tail string `json:"tail,omitempty"`
	// Offset is the log size the event covers; NewBytes how much of it
	// is new since the last heartbeat.
	Offset   int64 `json:"offset,omitempty"`
	NewBytes int64 `json:"new_bytes,omitempty"`
	// Pattern and Line describe a watch match; Suppressed counts matches
	// dropped by the rate limit since the last event of its kind.
	Pattern    string `json:"pattern,omitempty"`
	Line       string `json:"line,omitempty"`
	Suppressed int    `json:"suppressed,omitempty"`
	Message    string `json:"message,omitempty"`
}

// eventLog is the append-only file of every event (events.jsonl) and the
// cursors of its consumers. Its methods are called with Registry.mu held,
// except readRange, which reads a stable, already-written range.
type eventLog struct {
	dir       string
	f         *os.File
	size      int64
	completed map[string]bool // jobs whose completion is in the log
	changed   chan struct{}   // closed and replaced at each append
	cursors   map[string]int64
}

func openEventLog(dir string) (*eventLog, error) {
	path := filepath.Join(dir, "events.jsonl")
	f, err := openPrivateFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("procregistry: event log: %w", err)
	}
	l := &eventLog{dir: dir, f: f, completed: map[string]bool{}, changed: make(chan struct{}), cursors: map[string]int64{}}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	var good int64
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break // EOF; a partial last line (a crash mid-write) is cut below
		}
		var ev struct {
			Type EventType `json:"type"`
			Job  string    `json:"job"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.Type == EventCompletion {
			l.completed[ev.Job] = true
		}
		good += int64(len(line))
	}
	if fi, err := f.Stat(); err == nil && fi.Size() != good {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("procregistry: repair event log: %w", err)
		}
	}
	l.size = good
	return l, nil
}

func (l *eventLog) close() error { return l.f.Close() }

// append writes ev as one line (one write(2) with O_APPEND) and wakes
// the waiting consumers.
func (l *eventLog) append(ev *Event) error {
	ev.Seq = l.size
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("procregistry: event log: %w", err)
	}
	l.size += int64(len(b))
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// complete appends a completion unless the job already has one: the
// registry that holds the state directory is the only writer, and it
// learned every earlier completion when it opened the log.
func (l *eventLog) complete(ev *Event) error {
	if l.completed[ev.Job] {
		return nil
	}
	if err := l.append(ev); err != nil {
		return err
	}
	l.completed[ev.Job] = true
	return nil
}

func (l *eventLog) cursorPath(consumer string) string {
	h := sha256.Sum256([]byte(consumer))
	return filepath.Join(l.dir, "cursors", hex.EncodeToString(h[:12])+".json")
}

type cursorRecord struct {
	Consumer string `json:"consumer"`
	Next     int64  `json:"next"`
}

// cursor is where the consumer's queue starts: 0, or one past the
// offset of the last event it acknowledged.
func (l *eventLog) cursor(consumer string) int64 {
	if c, ok := l.cursors[consumer]; ok {
		return c
	}
	var rec cursorRecord
	readJSON(l.cursorPath(consumer), &rec)
	l.cursors[consumer] = rec.Next
	return rec.Next
}

func (l *eventLog) ack(consumer string, seq int64) error {
	if seq < 0 || seq >= l.size {
		return fmt.Errorf("procregistry: ack %d: no such event: %w", seq, envs.ErrNotFound)
	}
	if seq+1 <= l.cursor(consumer) {
		return nil
	}
	l.cursors[consumer] = seq + 1
	return writeJSON(l.cursorPath(consumer), cursorRecord{Consumer: consumer, Next: seq + 1})
}

// readRange returns up to max events for consumer in [cursor, size).
func (l *eventLog) readRange(consumer string, cursor, size int64, max int) ([]Event, error) {
	start := cursor
	skipFirst := false
	if cursor > 0 {
		start, skipFirst = cursor-1, true // the acknowledged event's line
	}
	if start >= size {
		return nil, nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(l.f, start, size-start), 64<<10)
	var out []Event
	for len(out) < max {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break
		}
		if skipFirst {
			skipFirst = false
			continue
		}
		var ev Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.Consumer == "" || ev.Consumer == consumer {
			out = append(out, ev)
		}
	}
	return out, nil
}

// Events returns the events queued for consumer: those not yet
// acknowledged, oldest first, at most 1000. With wait it blocks until
// there is at least one (or ctx ends). Events stay queued until [Ack]:
// a consumer that crashes before acknowledging gets them again, and
// each is in the log exactly once.
func (r *Registry) Events(ctx context.Context, consumer string, wait bool) ([]Event, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, fmt.Errorf("procregistry: events: %w", envs.ErrClosed)
		}
		cur, size, ch := r.ev.cursor(consumer), r.ev.size, r.ev.changed
		r.mu.Unlock()
		evs, err := r.ev.readRange(consumer, cur, size, 1000)
		if err != nil || len(evs) > 0 || !wait {
			return evs, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("procregistry: events: %w", ctx.Err())
		case <-r.ctx.Done():
			return nil, fmt.Errorf("procregistry: events: %w", envs.ErrClosed)
		}
	}
}

// Ack acknowledges every event of consumer up to and including seq.
func (r *Registry) Ack(consumer string, seq int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("procregistry: ack: %w", envs.ErrClosed)
	}
	return r.ev.ack(consumer, seq)
}

// emitLocked appends an event, logging a failure (an event that cannot
// be written is not a reason to stop following a job). r.mu must be held.
func (r *Registry) emitLocked(ev *Event) {
	if ev.Time.IsZero() {
		ev.Time = r.clock.Now()
	}
	if err := r.ev.append(ev); err != nil {
		r.log.Warn("procregistry: event", "type", ev.Type, "err", err)
	}
}
