package supervisor

import (
	"sync"
	"syscall"
)

// reaper waits for a host's children: the wrappers and copiers of all its
// jobs. One goroutine serves them all, woken by SIGCHLD (and by each new
// watch), never on a timer; it waits only for the PIDs it was given, so
// a child waited for elsewhere (a wrapper whose gate was shut) is left
// alone. A goroutine per child blocked in wait4 would hold an OS thread
// per idle job.
type reaper struct {
	mu      sync.Mutex
	watched map[int]chan waited
	kick    chan struct{}
}

func newReaper() *reaper {
	return &reaper{watched: map[int]chan waited{}, kick: make(chan struct{}, 1)}
}

// watch returns a channel that yields the end of child pid, once.
func (r *reaper) watch(pid int) <-chan waited {
	ch := make(chan waited, 1)
	r.mu.Lock()
	r.watched[pid] = ch
	r.mu.Unlock()
	// The child may have died before it was watched: look now.
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return ch
}

// run reaps until stop is closed; the returned channel is closed when it
// has ended.
func (r *reaper) run(stop <-chan struct{}) <-chan struct{} {
	return onSIGCHLD(stop, r.kick, r.reap, false)
}

// reap collects every watched child that has ended.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid, ch := range r.watched {
		var ws syscall.WaitStatus
		n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		for err == syscall.EINTR {
			n, err = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		switch {
		case err != nil:
			ch <- waited{} // not our child (any more): its end is unknown
		case n == pid:
			ch <- waited{ws: ws, ok: true}
		default:
			continue // still running
		}
		delete(r.watched, pid)
	}
}
