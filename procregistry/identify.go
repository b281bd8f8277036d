package procregistry

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// startSettleWait bounds how long a caller that no job claims waits for the
// jobs being started to settle (see identify).
const startSettleWait = 30 * time.Second

// maxFrontEnds bounds the front ends a [Server] remembers; the dead are
// forgotten first.
const maxFrontEnds = 1024

// frontEnds are the processes that have called with a token (runbox
// serve, say): what they run is not the user's own shell, so a process
// below one of them that proves nothing acts for no owner.
type frontEnds struct {
	mu   sync.Mutex
	seen map[peerProc]struct{} // pid and start time only
}

func (f *frontEnds) add(p peerProc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[peerProc]struct{}{}
	}
	key := peerProc{pid: p.pid, start: p.start}
	if _, ok := f.seen[key]; ok {
		return
	}
	if len(f.seen) >= maxFrontEnds {
		for k := range f.seen {
			if cur, err := readPeerStat(k.pid); err != nil || cur.start != k.start {
				delete(f.seen, k)
			}
		}
		if len(f.seen) >= maxFrontEnds {
			return // nothing died: the newest is not remembered
		}
	}
	f.seen[key] = struct{}{}
}

// below returns the front end that is an ancestor of the chain's first
// process (not that process itself).
func (f *frontEnds) below(chain []peerProc) (peerProc, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range chain[1:] {
		if _, ok := f.seen[peerProc{pid: p.pid, start: p.start}]; ok {
			return p, true
		}
	}
	return peerProc{}, false
}

// identify decides who the connection acts for (see "Owners" in the
// package documentation), in this order: a token for its owner; a process
// of a running job's tree, for that job's owner; a process below a front
// end, for no owner; any other process of this user, for every unclaimed
// owner. A peer that cannot be placed acts for no owner.
func (s *Server) identify(ctx context.Context, c net.Conn, q *request, fronts *frontEnds) (caller, error) {
	pid, err := peerPID(c)
	if err != nil {
		return caller{why: "the peer process cannot be known"}, nil
	}
	chain, err := ancestry(pid)
	if err != nil {
		return caller{why: fmt.Sprintf("peer process %d cannot be read", pid)}, nil
	}
	if q.Token != "" {
		if err := s.Reg.authenticate(q.As, q.Token); err != nil {
			return caller{}, err
		}
		fronts.add(chain[0])
		return caller{owner: q.As, why: "its token holds owner " + q.As}, nil
	}
	owner, ok := s.Reg.ownerOfProcs(chain, cgroupsOf(pid))
	if !ok {
		// A job's command may call before its start has settled.
		sctx, cancel := context.WithTimeout(ctx, startSettleWait)
		if s.Reg.settleStarts(sctx) {
			owner, ok = s.Reg.ownerOfProcs(chain, cgroupsOf(pid))
		}
		cancel()
	}
	if ok {
		return caller{owner: owner, why: fmt.Sprintf("process %d belongs to a job of owner %s", pid, owner)}, nil
	}
	if fe, ok := fronts.below(chain); ok {
		return caller{why: fmt.Sprintf("process %d runs under a runbox front end (process %d) and holds no token", pid, fe.pid)}, nil
	}
	return caller{unclaimed: true, why: fmt.Sprintf("process %d holds no token: it may act only for owners no token holds", pid)}, nil
}
