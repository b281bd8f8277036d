package confine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// sharedNS is the private mount namespace a Prepared builds for the
// programs it starts (see sharedMounts). The next Start after what a
// build depends on changed builds it anew before joining it:
//   - what it protects (the repository's files at the workspace's root,
//     a path it binds, a pin taken away from it): a program started
//     before such a change is no longer intact (see [Prepared.Start]);
//   - this machine's mount table: only so that a program started later
//     sees the mounts as a program with a namespace of its own would;
//     the programs already started stay intact.
//
// The Landlock rules are not built again for that, and Current does not
// turn false: a machine that starts containers changes its mounts
// often.
type sharedNS struct {
	p  Policy
	mu sync.RWMutex // held for reading while a thread joins b, for writing to build
	b  *nsBuild     // nil after a build failed
}

// nsBuild is one build of the namespace.
type nsBuild struct {
	fd   int    // the namespace
	w    *watch // what it protects was built from
	host int    // this machine's mount table, as it was when built
	// hostMoved: the table changed since (the kernel says so once).
	hostMoved atomic.Bool
}

// current reports whether b is what a build now would give.
func (b *nsBuild) current() bool {
	if !b.hostMoved.Load() && tablesChanged([]int{b.host}) {
		b.hostMoved.Store(true)
	}
	return b.w.current() && !b.hostMoved.Load()
}

// intact reports whether what b protects is as it was built.
func (b *nsBuild) intact() bool { return b.w.current() }

func (b *nsBuild) close() {
	unix.Close(b.fd)
	unix.Close(b.host)
	b.w.close()
}

// newSharedNS builds the namespace of p; nil without the mount layer.
func newSharedNS(p Policy) (*sharedNS, error) {
	if !mountLayer() {
		return nil, nil
	}
	s := &sharedNS{p: p}
	if err := s.build(); err != nil {
		return nil, err
	}
	return s, nil
}

// use runs join with the namespace's descriptor, built anew first if
// what it was built from changed, and returns what says whether it is
// still intact; with -1 when s is nil (each thread builds its own
// namespace, or none). The descriptor stays open until join returns.
func (s *sharedNS) use(join func(mounts int) error) (intact func() bool, err error) {
	if s == nil {
		return func() bool { return true }, join(-1)
	}
	s.mu.RLock()
	if s.b == nil || !s.b.current() {
		s.mu.RUnlock()
		if err := s.rebuild(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotEnforced, err)
		}
		// Just built: joined as it is, whatever changed since, so that
		// a machine whose mounts never stop changing still gets its
		// programs started.
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	b := s.b
	if b == nil {
		return nil, fmt.Errorf("%w: no private mount namespace", ErrNotEnforced)
	}
	return b.intact, join(b.fd)
}

// rebuild builds the namespace anew unless another Start just did.
func (s *sharedNS) rebuild() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b != nil && s.b.current() {
		return nil
	}
	if s.b != nil {
		// A program started from it keeps its own reference to the
		// namespace; its intact still reads the watch, closed now:
		// a closed watch compares in full.
		s.b.close()
		s.b = nil
	}
	return s.build()
}

// build builds the namespace (under mu for writing, or before s is
// shared).
func (s *sharedNS) build() error {
	host, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("confine: watching the mount table: %w", err)
	}
	w := newWatch()
	fd, err := sharedMounts(s.p, w)
	if err != nil {
		unix.Close(host)
		w.close()
		return err
	}
	w.seal()
	s.b = &nsBuild{fd: fd, w: w, host: host}
	return nil
}

// close releases the namespace, once every Start using it has joined.
func (s *sharedNS) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b != nil {
		s.b.close()
		s.b = nil
	}
}
