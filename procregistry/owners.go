package procregistry

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// ownersDir holds the claimed owners: one file per owner with the hash of
// its token (see "Owners" in the package documentation).
const ownersDir = "owners"

// claim is one file of ownersDir. Hash is the SHA-256 of the token: the
// token itself is never written anywhere.
type claim struct {
	Owner string `json:"owner"`
	Hash  string `json:"hash"`
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// claimFile names an owner's claim by a hash of the name, so any owner
// name (slashes, dots) makes a safe file name.
func (r *Registry) claimFile(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return filepath.Join(r.opts.Dir, ownersDir, hex.EncodeToString(h[:16]))
}

// loadClaims reads ownersDir at Open. A claim whose owner has no job left
// is dropped: a front end still holding its token claims the name again
// with its next call (an owner without jobs is free to claim).
func (r *Registry) loadClaims() error {
	dir := filepath.Join(r.opts.Dir, ownersDir)
	if err := mkdirPrivate(r.opts.Dir, dir); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("procregistry: owners: %w", err)
	}
	inUse := map[string]bool{}
	for _, j := range r.jobs {
		inUse[j.rec.Owner] = true
	}
	r.claims = map[string]string{}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		var c claim
		if err := readPrivateJSON(path, &c); err != nil || c.Owner == "" || r.claimFile(c.Owner) != path {
			r.log.Warn("procregistry: skipping an unreadable owner claim", "file", path, "err", err)
			continue
		}
		if !inUse[c.Owner] {
			os.Remove(path)
			continue
		}
		r.claims[c.Owner] = c.Hash
	}
	return nil
}

func readPrivateJSON(path string, v any) error {
	f, err := openPrivateFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Errors of owner checks (see "Owners").
var (
	// errOwnerInUse: a token was offered for an owner that has jobs but
	// was never claimed (the CLI's owners): claiming it would take those
	// jobs from whoever started them.
	errOwnerInUse = errors.New("owner has jobs and no token")
)

// authenticate checks token for owner, claiming owner when nobody holds
// it and it owns no job. It fails with envs.ErrDenied.
func (r *Registry) authenticate(owner, token string) error {
	if owner == "" || token == "" {
		return fmt.Errorf("procregistry: a token needs an owner: %w", envs.ErrDenied)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.claims[owner]; ok {
		if subtle.ConstantTimeCompare([]byte(h), []byte(tokenHash(token))) != 1 {
			return fmt.Errorf("procregistry: owner %q: wrong token: %w", owner, envs.ErrDenied)
		}
		return nil
	}
	for _, j := range r.jobs {
		if j.rec.Owner == owner {
			return fmt.Errorf("procregistry: owner %q: %w: %w", owner, errOwnerInUse, envs.ErrDenied)
		}
	}
	c := claim{Owner: owner, Hash: tokenHash(token)}
	if err := writeJSON(r.claimFile(owner), &c); err != nil {
		return fmt.Errorf("procregistry: claim owner %q: %w", owner, err)
	}
	r.claims[owner] = c.Hash
	return nil
}

// claimed reports whether a token holds owner.
func (r *Registry) claimed(owner string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.claims[owner]
	return ok
}

// caller is who a [Server] connection acts for, decided by the server
// from the connection, never taken from the request's word (see
// "Owners").
type caller struct {
	// owner is the one owner the caller acts for; empty for a caller that
	// acts for none, or (with unclaimed) for every unclaimed owner.
	owner string
	// unclaimed: the caller may act for every owner no token holds (a
	// process of this user outside anything runbox runs).
	unclaimed bool
	// why says how the caller was identified, for refusals.
	why string
	// confined: the kernel shows the caller confined beyond the server
	// (a sandboxed command: see "Confined callers" in the package
	// documentation). It may act only within its own sandbox.
	confined bool
	// policy is a confined caller's sandbox when the server knows it
	// (the caller is a process of a job the registry confined, under
	// that job's one sandbox and no other); nil: unknown, and the
	// strictest sandbox stands in for it.
	policy *confine.Policy
	// confiner is policy's trampoline, from the same job.
	confiner []string
}

// may reports whether c may act on owner's jobs and events.
func (c caller) may(r *Registry, owner string) bool {
	if c.owner != "" {
		return owner == c.owner
	}
	return c.unclaimed && !r.claimed(owner)
}

// mayJob reports whether c may see and act on job j (its owner aside): an
// unconfined caller every job; a confined caller only the jobs that run in
// the same sandbox as itself — a job started for a caller whose sandbox
// is unknown (they run under the strictest one) when its own is unknown,
// else a job whose sandbox is exactly the caller's.
func (c caller) mayJob(r *Registry, in Info) bool {
	if !c.confined {
		return true
	}
	r.mu.Lock()
	j := r.jobs[in.ID]
	var rec record
	if j != nil {
		rec = j.rec
	}
	r.mu.Unlock()
	if j == nil {
		return false
	}
	if c.policy == nil {
		return rec.ConfinedCaller == callerUnknownSandbox
	}
	return rec.Confine != nil && samePolicy(rec.Confine, c.policy)
}

// samePolicy reports whether a and b are one sandbox.
func samePolicy(a, b *confine.Policy) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func (c caller) deny(what string) error {
	return fmt.Errorf("procregistry: %s: %s: %w", what, c.why, envs.ErrDenied)
}

// visible lists the jobs of owner ("" for all) that c may see.
func (r *Registry) visible(c caller, owner string) []Info {
	all := r.List(owner)
	return slices.DeleteFunc(all, func(in Info) bool { return !c.may(r, in.Owner) || !c.mayJob(r, in) })
}

// resolveFor resolves id (or a unique prefix) among the jobs c may see:
// another owner's job is not found, and never makes a prefix ambiguous.
func (r *Registry) resolveFor(c caller, id string) (string, error) {
	var found []string
	for _, in := range r.visible(c, "") {
		if in.ID == id {
			return id, nil
		}
		if id != "" && strings.HasPrefix(in.ID, id) {
			found = append(found, in.ID)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("procregistry: job %q: %w", id, envs.ErrNotFound)
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("%w: %q matches %s", ErrAmbiguous, id, strings.Join(found, ", "))
}

// jobOfProcs returns the running job that one of procs
// (a process and its ancestors, nearest first) belongs to: a process of
// a running job's tree by PID and start time, a member of a running
// job's process group, or a member of a job's container (running or
// not: what a finished job left behind stays in its container).
func (r *Registry) jobOfProcs(procs []peerProc, cgroups []cgroupLine) (*job, bool) {
	type key struct {
		pid   int
		start uint64
	}
	byProc := map[key]*job{}
	byGroup := map[int]*job{}
	var conts []*job
	r.mu.Lock()
	for _, j := range r.jobs {
		if j.pids == nil {
			continue
		}
		p := j.pids
		if p.Container != nil {
			// Leftovers of a finished job stay in its container.
			conts = append(conts, j)
		}
		if j.status.Finished() {
			continue // its PIDs and group may be anyone's now
		}
		for _, pr := range []struct {
			pid   int
			start uint64
		}{{p.Command.PID, p.Command.StartTime}, {p.Wrapper.PID, p.Wrapper.StartTime}, {p.Copier.PID, p.Copier.StartTime}} {
			if pr.pid > 0 {
				byProc[key{pr.pid, pr.start}] = j
			}
		}
		if !p.Host && p.Supervisor.PID > 0 {
			// A supervisor of the job's own is its subreaper: setsid
			// orphans of the job are its children.
			byProc[key{p.Supervisor.PID, p.Supervisor.StartTime}] = j
		}
		// The wrapper (else the command) leads the job's process group;
		// while the group has a member its number is not reused.
		if p.Wrapper.PID > 0 {
			byGroup[p.Wrapper.PID] = j
		} else if p.Command.PID > 0 {
			byGroup[p.Command.PID] = j
		}
	}
	r.mu.Unlock()
	for _, p := range procs {
		if j, ok := byProc[key{p.pid, p.start}]; ok {
			return j, true
		}
		if j, ok := byGroup[p.pgid]; ok {
			return j, true
		}
	}
	if len(procs) == 0 {
		return nil, false
	}
	for _, j := range conts {
		r.mu.Lock()
		ref := j.pids.Container
		r.mu.Unlock()
		if inContainer(procs[0].pid, cgroups, ref.V2Dir, ref.V1Dirs) {
			return j, true
		}
	}
	return nil, false
}

// settleStarts waits (bounded by ctx) until every job that is starting
// now has settled, so that its PIDs are known. A job's command can call
// before its supervisor has reported them.
func (r *Registry) settleStarts(ctx context.Context) bool {
	var waits []chan struct{}
	r.mu.Lock()
	for _, j := range r.jobs {
		if j.status == StatusStarting {
			waits = append(waits, j.started)
		}
	}
	r.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return false
		case <-r.ctx.Done():
			return false
		}
	}
	return len(waits) > 0
}
