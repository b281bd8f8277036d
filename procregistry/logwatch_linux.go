package procregistry

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// logWatcher wakes whoever reads a log that has reached its end (a job's
// follower, a Follow call) when the log is written again, instead of
// having each of them look every so often: a thousand quiet jobs then
// cost the registry nothing. It is one inotify instance per registry
// (instances are few: 128 per user by default; watches are many), with
// one watch per log that someone is reading, shared by its readers.
type logWatcher struct {
	f    *os.File // the inotify fd, in Go's poller (never f.Fd(): it would make it blocking)
	fd   int      // the same fd, for adding and removing watches while open
	done chan struct{}

	mu     sync.Mutex
	closed bool
	byWD   map[int32]map[*logSub]bool
	byPath map[string]int32
}

// logSub is one reader's subscription: c gets a token (never blocking;
// one pending token is enough) after each write to the log.
type logSub struct {
	c    chan struct{}
	wd   int32
	path string
}

// newLogWatcher starts the watcher's goroutine; close stops and joins it.
func newLogWatcher() (*logWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("procregistry: inotify: %w", err)
	}
	w := &logWatcher{
		f: os.NewFile(uintptr(fd), "inotify"), fd: fd, done: make(chan struct{}),
		byWD: map[int32]map[*logSub]bool{}, byPath: map[string]int32{},
	}
	go w.run()
	return w, nil
}

// subscribe returns a channel that receives a token after each write to
// path, and the function that ends the subscription. Subscribe before
// reading to the end, so a write in between is not missed.
func (w *logWatcher) subscribe(path string) (<-chan struct{}, func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, nil, fmt.Errorf("procregistry: watch %s: %w", path, os.ErrClosed)
	}
	wd, ok := w.byPath[path]
	if !ok {
		n, err := unix.InotifyAddWatch(w.fd, path, unix.IN_MODIFY)
		if err != nil {
			return nil, nil, fmt.Errorf("procregistry: watch %s: %w", path, err)
		}
		wd = int32(n)
		w.byPath[path] = wd
		if w.byWD[wd] == nil {
			w.byWD[wd] = map[*logSub]bool{}
		}
	}
	s := &logSub{c: make(chan struct{}, 1), wd: wd, path: path}
	w.byWD[wd][s] = true
	var once sync.Once
	return s.c, func() { once.Do(func() { w.unsubscribe(s) }) }, nil
}

func (w *logWatcher) unsubscribe(s *logSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	subs := w.byWD[s.wd]
	delete(subs, s)
	if len(subs) > 0 {
		return
	}
	delete(w.byWD, s.wd)
	if w.byPath[s.path] == s.wd {
		delete(w.byPath, s.path)
	}
	if !w.closed {
		unix.InotifyRmWatch(w.fd, uint32(s.wd))
	}
}

// run reads inotify events until the fd is closed and wakes the
// subscribers of each watch that fired (all of them if events were lost).
func (w *logWatcher) run() {
	defer close(w.done)
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if err != nil || rerr != nil {
			return // closed
		}
		w.dispatch(buf[:n])
	}
}

func (w *logWatcher) dispatch(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		b = b[min(len(b), unix.SizeofInotifyEvent+int(ev.Len)):]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			for _, subs := range w.byWD {
				wake(subs)
			}
			continue
		}
		wake(w.byWD[ev.Wd])
	}
}

func wake(subs map[*logSub]bool) {
	for s := range subs {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}
}

// close stops the watcher and waits for its goroutine.
func (w *logWatcher) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.f.Close()
	<-w.done
}
