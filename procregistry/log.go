package procregistry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
)

// Read limits of [Registry.ReadLog].
const (
	DefaultReadLimit = 64 << 10
	MaxReadLimit     = 4 << 20
	// maxTailLines bounds the bytes TailLines returns.
	maxTailLines = 4 << 20
)

// Chunk is a piece of a job's log.
type Chunk struct {
	// Offset is where Data starts in the log; Next is where it ends, the
	// offset to ask for next. Reading from Next after every chunk yields
	// every byte exactly once, across reconnects and registry restarts.
	Offset int64  `json:"offset"`
	Next   int64  `json:"next"`
	Data   []byte `json:"data"`
	// Size is the log's length when the chunk was read.
	Size int64 `json:"size"`
	// Done is true when the job had finished before the read: once Next
	// reaches Size, no more output will come.
	Done bool `json:"done"`
}

// ReadLog returns up to limit bytes of the job's log from offset (limit
// 0 means DefaultReadLimit; it is capped at MaxReadLimit). An offset past
// the end returns an empty chunk at the end.
func (r *Registry) ReadLog(id string, offset int64, limit int) (Chunk, error) {
	if offset < 0 {
		return Chunk{}, fmt.Errorf("procregistry: log %s: negative offset: %w", id, envs.ErrBadCommand)
	}
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	limit = min(limit, MaxReadLimit)
	return r.readLog(id, func(_ io.ReaderAt, size int64) (int64, int64) {
		offset = min(offset, size)
		return offset, min(int64(limit), size-offset)
	})
}

// TailLines returns the last n lines of the job's log (at most 4 MiB).
// A last line without a newline counts as a line.
func (r *Registry) TailLines(id string, n int) (Chunk, error) {
	return r.readLog(id, func(f io.ReaderAt, size int64) (int64, int64) {
		start := tailStart(f, size, n)
		return start, size - start
	})
}

// readLog reads one chunk of the job's log: span picks its start and
// length from the log's current size. Done is sampled before the read, so
// a chunk marked done holds everything up to the end.
func (r *Registry) readLog(id string, span func(f io.ReaderAt, size int64) (start, length int64)) (Chunk, error) {
	j, err := r.resolve(id)
	if err != nil {
		return Chunk{}, err
	}
	done := isClosed(j.done)
	f, err := openPrivateFile(j.logPath(), os.O_RDONLY, 0)
	if err != nil {
		return Chunk{}, fmt.Errorf("procregistry: log %s: %w", j.id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Chunk{}, fmt.Errorf("procregistry: log %s: %w", j.id, err)
	}
	size := fi.Size()
	start, length := span(f, size)
	buf := make([]byte, length)
	n, err := f.ReadAt(buf, start)
	if err != nil && err != io.EOF {
		return Chunk{}, fmt.Errorf("procregistry: log %s: %w", j.id, err)
	}
	return Chunk{Offset: start, Next: start + int64(n), Data: buf[:n], Size: size, Done: done}, nil
}

// tailStart finds where the last n lines of f[0:size) begin, reading
// backwards in blocks, and never more than maxTailLines before size.
func tailStart(f io.ReaderAt, size int64, n int) int64 {
	if n <= 0 {
		return size
	}
	const block = 32 << 10
	buf := make([]byte, block)
	end := size
	// A final newline ends the last line; it does not start a new one.
	count := 0
	pos := size
	floor := max(0, size-maxTailLines)
	first := true
	for pos > floor {
		lo := max(floor, pos-block)
		b := buf[:pos-lo]
		if _, err := f.ReadAt(b, lo); err != nil && err != io.EOF {
			return lo
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				first = false
				continue
			}
			if first && lo+int64(i) == end-1 {
				first = false
				continue
			}
			count++
			if count == n {
				return lo + int64(i) + 1
			}
		}
		pos = lo
	}
	return floor
}

// readTail returns the log's size and its last n bytes as text.
func readTail(path string, n int64) (int64, string) {
	f, err := openPrivateFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, ""
	}
	size := fi.Size()
	return size, readRangeText(f, max(0, size-n), size)
}

// readRangeText reads f[from:to) as text: invalid UTF-8 replaced, and a
// first rune cut in half dropped.
func readRangeText(f io.ReaderAt, from, to int64) string {
	if to <= from {
		return ""
	}
	b := make([]byte, to-from)
	k, _ := f.ReadAt(b, from)
	b = b[:k]
	if from > 0 {
		for i := 0; i < 3 && len(b) > 0 && b[0]&0xC0 == 0x80; i++ {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Poll is a job's status with a preview of its latest output.
type Poll struct {
	Info
	// Preview is the end of the output (at most TailBytes) as text.
	Preview string `json:"preview"`
}

// Poll returns the job's status and the tail of its output.
func (r *Registry) Poll(id string) (Poll, error) {
	j, err := r.resolve(id)
	if err != nil {
		return Poll{}, err
	}
	info := r.info(j)
	_, tail := readTail(j.logPath(), TailBytes)
	return Poll{Info: info, Preview: tail}, nil
}

// Follow copies the job's log from offset to w as it grows, until the
// job has finished and everything is copied, or ctx ends. It returns the
// offset after the last byte written, from which a reconnecting reader
// continues.
func (r *Registry) Follow(ctx context.Context, id string, offset int64, w io.Writer) (int64, error) {
	j, err := r.resolve(id)
	if err != nil {
		return offset, err
	}
	f, err := openPrivateFile(j.logPath(), os.O_RDONLY, 0)
	if err != nil {
		return offset, fmt.Errorf("procregistry: follow %s: %w", j.id, err)
	}
	defer f.Close()
	changed, stop := r.logChanges(j.logPath())
	defer stop()
	buf := make([]byte, 64<<10)
	for {
		done := isClosed(j.done)
		n, rerr := f.ReadAt(buf, offset)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return offset, fmt.Errorf("procregistry: follow %s: %w", j.id, err)
			}
			offset += int64(n)
			continue
		}
		if rerr != nil && rerr != io.EOF {
			return offset, fmt.Errorf("procregistry: follow %s: %w", j.id, rerr)
		}
		if done {
			return offset, nil
		}
		if err := r.waitLog(ctx, j, changed); err != nil {
			return offset, fmt.Errorf("procregistry: follow %s: %w", j.id, err)
		}
	}
}

// waitLog waits until the log may have grown (a token on changed, or
// PollInterval without a watcher), the job is done, or ctx or the
// registry ends (envs.ErrClosed).
func (r *Registry) waitLog(ctx context.Context, j *job, changed <-chan struct{}) error {
	var tick <-chan time.Time
	if changed == nil {
		t := time.NewTimer(r.opts.PollInterval)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-changed:
	case <-tick:
	case <-j.done:
	case <-ctx.Done():
		return ctx.Err()
	case <-r.ctx.Done():
		return envs.ErrClosed
	}
	return nil
}

// logChanges subscribes to writes to the log at path: changed gets a
// token after each one. Without a watcher (or when the watch cannot be
// set) changed is nil, and the caller looks again on a timer instead.
// stop ends the subscription.
func (r *Registry) logChanges(path string) (changed <-chan struct{}, stop func()) {
	if r.lw == nil {
		return nil, func() {}
	}
	c, stop, err := r.lw.subscribe(path)
	if err != nil {
		r.log.Debug("procregistry: log reader will poll", "path", path, "err", err)
		return nil, func() {}
	}
	return c, stop
}

// lineSplitter cuts a byte stream into lines of at most maxLine bytes
// (the rest of a longer line is dropped), with a trailing "\r" removed.
type lineSplitter struct {
	line []byte
}

func (s *lineSplitter) feed(b []byte, emit func(line []byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if room := maxLine - len(s.line); room > 0 {
			s.line = append(s.line, part[:min(room, len(part))]...)
		}
		if i < 0 {
			return
		}
		emit(bytes.TrimSuffix(s.line, []byte("\r")))
		s.line = s.line[:0]
		b = b[i+1:]
	}
}

// flush emits a last line without a newline.
func (s *lineSplitter) flush(emit func(line []byte)) {
	if len(s.line) > 0 {
		emit(bytes.TrimSuffix(s.line, []byte("\r")))
		s.line = s.line[:0]
	}
}
