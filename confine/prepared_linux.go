package confine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNotEnforced: [Prepared.Start] could not confine its thread, and
// started nothing.
var ErrNotEnforced = errors.New("confine: the sandbox could not be enforced")

// Prepared is a policy made ready, once, to confine many programs this
// process starts, without the trampoline: its Landlock ruleset built, its
// seccomp filter assembled. [Prepared.Start] enforces it on a new thread
// of this process, and what that thread starts (fork and exec) inherits
// every layer, as a program the trampoline executes does: the same
// rules, and a Landlock domain of its own per Start, so programs started
// by two Starts can no more signal or trace each other than two
// programs of two trampolines. What it saves is the trampoline's own
// start and the building of the ruleset: one fork and exec per program.
//
// A ruleset names the files its rules grant as they were when it was
// built. [Prepared.Current] says whether a fresh build would give the
// same rules; a caller checks it before each Start (one read while
// nothing changed) and prepares anew when it does not, so a program
// started later sees the file system as a program the trampoline starts
// then would.
//
// It needs Linux 6.9 or later (a pidfd of a thread, to wait for the
// confined thread's end); Prepare refuses older kernels.
//
// A Prepared is safe for concurrent use. Close releases the ruleset.
type Prepared struct {
	w *watch

	mu     sync.RWMutex // held for reading by each Start, for writing by Close
	r      *ready
	ns     *sharedNS // nil without the read-only mount layer
	closed bool
}

// Prepare makes p ready for [Prepared.Start]. It refuses ProfileOff (there
// is nothing to enforce) and, like the trampoline, a policy the kernel
// cannot give.
func Prepare(p Policy) (*Prepared, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Profile == ProfileOff {
		return nil, fmt.Errorf("confine: profile %s has nothing to prepare", ProfileOff)
	}
	// The first process this process starts makes the os package
	// check, once, which pidfd calls work. Made from a confined thread,
	// that check could conclude differently than from any other and
	// decide for the whole process: it is made here, unconfined.
	if self, err := os.FindProcess(os.Getpid()); err == nil {
		self.Release()
	}
	fd, err := unix.PidfdOpen(unix.Gettid(), pidfdThread)
	if err != nil {
		return nil, fmt.Errorf("confine: no pidfd of a thread (Linux 6.9 or later is needed to start from a confined thread): %w", err)
	}
	unix.Close(fd)
	w := newWatch()
	r, err := prepare(p, w)
	if err != nil {
		return nil, err
	}
	// Resolved now, with the file rules: w sees a link among these
	// paths change as it sees the rest, and a new Prepared resolves
	// them again.
	r.unix = newUnixRules(p)
	ns, err := newSharedNS(p)
	if err != nil {
		r.close()
		return nil, err
	}
	w.seal()
	return &Prepared{w: w, r: r, ns: ns}, nil
}

// Current reports whether the files the ruleset was built from are as
// they were (see the type's documentation): false means a Start now would
// grant what a fresh build would not, or miss what it would grant. While
// nothing changed in the directories the rules depend on (inotify says
// so) it costs one read; after a change, a few directory listings.
func (pp *Prepared) Current() bool {
	return pp.w.current()
}

// Start runs start on a new thread of this process confined by the
// policy, and returns start's error. start is meant to start a process
// (exec.Cmd.Start, which forks from the calling thread): the process
// inherits every layer. It must start it itself, not through another
// goroutine (which runs on another, unconfined, thread), and must not ask
// for a parent-death signal (the thread, its parent, ends at once). When
// the thread cannot be confined, start is not called and the error
// matches [ErrNotEnforced].
//
// The thread ends when start returns, its rights with it, and is never
// used for anything else; Start returns without waiting for that. Until
// the thread is gone the program shares its Landlock domain, and so could
// signal or trace it (and through it, read this process's memory): the
// caller calls gone, which returns once the thread has ended, before it
// hands the program any work of its own (a command, input). A program
// busy starting (a shell reading its start-up files) gives the thread the
// time to end, so gone rarely waits. gone is never nil, and is to be
// called whatever the error; calls after the first return at once.
//
// intact (never nil) reports, at any time later, whether what the
// program's mount namespace protects is as it was built: false once the
// repository's files at the workspace's root, a path it binds, or its
// pins changed (a repository made by a command, say). A
// caller that started a program ahead of its work (a pre-started shell)
// asks before it hands the program that work, and starts another when
// it is false: a command in a sandbox made before a repository appeared
// could otherwise write the repository's hooks.
//
// report, when not nil, is told of each connect the sandbox refuses
// the program (or anything it starts) as runbox decides it (see
// "Connects" in the package documentation), as it happens,
// from another goroutine.
func (pp *Prepared) Start(start func() error, report func(Violation)) (gone func() error, intact func() bool, err error) {
	pp.mu.RLock()
	defer pp.mu.RUnlock()
	never := func() bool { return false }
	if pp.closed {
		return func() error { return nil }, never, fmt.Errorf("%w: prepared sandbox closed", ErrNotEnforced)
	}
	pidfd := -1
	mounts, err := pp.ns.use(func(mounts int) error {
		pidfd, err = pp.onThread(start, report, mounts)
		return err
	})
	gone = sync.OnceValue(func() error { return threadGone(pidfd) })
	if mounts == nil {
		return gone, never, err
	}
	return gone, mounts, err
}

// onThread runs enforce and start on a thread of their own, which ends
// with them, and returns a pidfd of that thread (-1 when there was none
// to wait for).
func (pp *Prepared) onThread(start func() error, report func(Violation), mounts int) (pidfd int, err error) {
	type result struct {
		err   error
		pidfd int
	}
	r := onSpareThread(func() result {
		fd, err := unix.PidfdOpen(unix.Gettid(), pidfdThread)
		if err != nil {
			return result{err: fmt.Errorf("%w: watching the thread (Linux 6.9 or later is needed): %w", ErrNotEnforced, err), pidfd: -1}
		}
		listener, err := pp.r.enforce(true, mounts)
		if err != nil {
			return result{err: fmt.Errorf("%w: %w", ErrNotEnforced, err), pidfd: fd}
		}
		if listener >= 0 {
			// Served by a goroutine of an unconfined thread until
			// the programs this thread starts (and the thread) are
			// gone.
			go serveListener(listener, pp.r.p, pp.r.unix, report)
		}
		return result{err: start(), pidfd: fd}
	})
	return r.pidfd, r.err
}

// onSpareThread runs f on a thread of its own, which ends when f
// returns: whatever f changes of the thread (its namespaces, its
// rights) goes with it and reaches no other goroutine.
func onSpareThread[T any](f func() T) T {
	res := make(chan T, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread is never ended by the runtime (it is
			// parked for good instead): changed, it would stay so.
			// Holding it, locked and idle, while another goroutine
			// does the work puts that one on another thread; the
			// main thread is then let go as it was.
			v := onSpareThread(f)
			runtime.UnlockOSThread()
			res <- v
			return
		}
		// Never unlocked: the runtime ends a thread whose goroutine
		// exits locked to it, instead of running other goroutines on
		// a changed thread.
		res <- f()
	}()
	return <-res
}

// pidfdThread is PIDFD_THREAD (O_EXCL in linux/pidfd.h): a pidfd of one
// thread, readable when that thread has exited (Linux 6.9).
const pidfdThread = unix.O_EXCL

// threadGone waits for the thread of pidfd to exit, and closes pidfd
// (-1: there is nothing to wait for).
func threadGone(pidfd int) error {
	if pidfd < 0 {
		return nil
	}
	defer unix.Close(pidfd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, -1)
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("confine: waiting for the confined thread to end: %w", err)
			}
			return nil
		}
	}
}

// Close releases the ruleset, once every Start under way has returned.
// Start fails after Close.
func (pp *Prepared) Close() error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if !pp.closed {
		pp.closed = true
		pp.r.close()
		pp.ns.close()
		pp.w.close()
	}
	return nil
}
