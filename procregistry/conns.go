package procregistry

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// connState is where a served connection is in its call.
type connState uint8

const (
	// connIdle: connected, its request not read yet.
	connIdle connState = iota
	// connBusy: running a call that ends by itself (start, kill, log...).
	connBusy
	// connWaiting: a call that waits for a job or an event (follow,
	// wait, events with wait); its client can ask again from where it
	// stopped.
	connWaiting
)

// connSet is what a [Server] serves at once. When it is full, room for
// a new connection is made by closing the oldest idle connection, else
// the oldest waiting one: a client that holds every connection open,
// idle or waiting, cannot lock the others out. Only when every
// connection runs a call that ends by itself is a new one refused.
type connSet struct {
	max int

	mu    sync.Mutex
	seq   uint64
	conns map[*servedConn]struct{}
}

type servedConn struct {
	c     net.Conn
	seq   uint64    // order of arrival: lower is older
	state connState // guarded by connSet.mu
}

func newConnSet(max int) *connSet {
	return &connSet{max: max, conns: map[*servedConn]struct{}{}}
}

// add admits c, closing the oldest idle (else waiting) connection when
// the set is full; it returns nil when nothing can be closed.
func (s *connSet) add(c net.Conn) *servedConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) >= s.max {
		victim := s.oldest(connIdle)
		if victim == nil {
			victim = s.oldest(connWaiting)
		}
		if victim == nil {
			return nil
		}
		// Its handler sees the close and ends; it no longer counts. An
		// idle one is told, so its client asks again: its request, if
		// sent, is never run (see begin).
		delete(s.conns, victim)
		if victim.state == connIdle {
			victim.c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			writeFrame(victim.c, frame{Error: toWire(fmt.Errorf("%w (%d): closed to make room", ErrOverloaded, s.max))})
		}
		victim.c.Close()
	}
	s.seq++
	sc := &servedConn{c: c, seq: s.seq}
	s.conns[sc] = struct{}{}
	return sc
}

func (s *connSet) oldest(st connState) *servedConn {
	var o *servedConn
	for sc := range s.conns {
		if sc.state == st && (o == nil || sc.seq < o.seq) {
			o = sc
		}
	}
	return o
}

// begin marks sc as running a call (busy or waiting). It returns false
// when sc was closed to make room meanwhile: the call must not run, its
// client was told it was refused.
func (s *connSet) begin(sc *servedConn, st connState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[sc]; !ok {
		return false
	}
	sc.state = st
	return true
}

func (s *connSet) remove(sc *servedConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
}
