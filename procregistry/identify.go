package procregistry

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/jobdir"
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
// owner. A peer that cannot be placed acts for no owner. Apart from that,
// it finds whether the peer is confined (see "Confined callers"), from
// the kernel's record of the connecting process, never from the request.
func (s *Server) identify(ctx context.Context, c net.Conn, q *request, fronts *frontEnds) (caller, error) {
	pid, err := peerPID(c)
	if err != nil {
		return caller{why: "the peer process cannot be known", confined: true}, nil
	}
	chain, err := ancestry(pid)
	if err != nil {
		return caller{why: fmt.Sprintf("peer process %d cannot be read", pid), confined: true}, nil
	}
	conf := s.peerConfinement(c)
	if q.Token != "" {
		if err := s.Reg.authenticate(q.As, q.Token); err != nil {
			return caller{}, err
		}
		fronts.add(chain[0])
		return conf.of(caller{owner: q.As, why: "its token holds owner " + q.As}, nil), nil
	}
	j, ok := s.Reg.jobOfProcs(chain, cgroupsOf(pid))
	if !ok {
		// A job's command may call before its start has settled.
		sctx, cancel := context.WithTimeout(ctx, startSettleWait)
		if s.Reg.settleStarts(sctx) {
			j, ok = s.Reg.jobOfProcs(chain, cgroupsOf(pid))
		}
		cancel()
	}
	if ok {
		s.Reg.mu.Lock()
		owner := j.rec.Owner
		s.Reg.mu.Unlock()
		return conf.of(caller{owner: owner, why: fmt.Sprintf("process %d belongs to a job of owner %s", pid, owner)}, j), nil
	}
	if fe, ok := fronts.below(chain); ok {
		return conf.of(caller{why: fmt.Sprintf("process %d runs under a runbox front end (process %d) and holds no token", pid, fe.pid)}, nil), nil
	}
	return conf.of(caller{unclaimed: true, why: fmt.Sprintf("process %d holds no token: it may act only for owners no token holds", pid)}, nil), nil
}

// peerConf is what the server found of a peer's confinement.
type peerConf struct {
	confined bool
	// layers is how many seccomp filters the peer stacked beyond the
	// server: runbox's sandbox stacks one each time it confines.
	layers int
	why    string
}

// peerConfinement compares c's peer with this process (see
// jobdir.Confinement): a peer the kernel shows confined beyond the
// server, or whose confinement cannot be read, is confined.
func (s *Server) peerConfinement(c net.Conn) peerConf {
	base, err := jobdir.SelfConfinement()
	if err != nil {
		return peerConf{confined: true, why: err.Error()}
	}
	p, err := jobdir.PeerOf(c)
	if err != nil {
		return peerConf{confined: true, why: err.Error()}
	}
	if !p.Confinement.Beyond(base) {
		return peerConf{}
	}
	return peerConf{confined: true, layers: p.Confinement.Layers(base), why: fmt.Sprintf("process %d is confined (%v)", p.PID, p.Confinement)}
}

// of completes who with the peer's confinement. A confined process of job
// j, under one sandbox only, is in j's sandbox when the registry confined
// j: that is then the caller's known sandbox. Any other confined caller's
// is unknown.
func (pc peerConf) of(who caller, j *job) caller {
	if !pc.confined {
		return who
	}
	who.confined = true
	who.why += "; " + pc.why
	if j == nil || pc.layers != 1 {
		return who
	}
	// j's record is written once, at the start, and only read after.
	if p := j.rec.Confine; p != nil && p.Profile != confine.ProfileOff && len(j.rec.Confiner) > 0 {
		cp := *p
		who.policy, who.confiner = &cp, slices.Clone(j.rec.Confiner)
	}
	return who
}
