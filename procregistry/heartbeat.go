package procregistry

import (
	"os"
)

// heartbeatLoop sends the job's heartbeats: every interval (by the
// registry's clock) in which the log grew, one event with the tail of
// the new output. A quiet interval sends nothing. It ends when the job's
// exit is known (the completion says the rest) or the registry closes.
func (r *Registry) heartbeatLoop(j *job) {
	for {
		t := r.clock.NewTimer(j.rec.Heartbeat)
		select {
		case <-t.C():
		case <-j.exitSeen:
			t.Stop()
			return
		case <-r.ctx.Done():
			t.Stop()
			return
		}
		r.beat(j)
	}
}

func (r *Registry) beat(j *job) {
	f, err := openPrivateFile(j.logPath(), os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= j.hbLast {
		return
	}
	size := fi.Size()
	tail := readRangeText(f, max(j.hbLast, size-TailBytes), size)
	r.mu.Lock()
	r.emitLocked(&Event{
		Type: EventHeartbeat, Consumer: j.rec.Owner, Job: j.id, Command: j.rec.command(),
		Offset: size, NewBytes: size - j.hbLast, Tail: tail,
	})
	r.mu.Unlock()
	j.hbLast = size
}
