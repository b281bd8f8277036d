package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
)

// Verdict is the outcome of [Proxy.Check]. Its zero value is Deny, so a
// verdict nobody set refuses.
type Verdict int

const (
	Deny Verdict = iota
	Allow
)

func (v Verdict) String() string {
	if v == Allow {
		return "allow"
	}
	return "deny"
}

// Scopes an [Asker] answers with. Anything else counts as ScopeOnce.
const (
	// ScopeOnce applies the answer to the connection that asked (and to
	// those that were waiting on the same question) only.
	ScopeOnce = "once"
	// ScopeSession remembers the answer for host:port until the Proxy
	// is closed.
	ScopeSession = "session"
	// ScopeAlways is ScopeSession and, for an allow, a call to
	// [Options.Persist] so that later sessions have the rule too.
	ScopeAlways = "always"
)

// Asker asks whoever can answer (the approval broker) whether the
// command may reach host:port, a destination on neither list. An error
// is a denial, and so is no answer: the broker's own timeout ends the
// wait, and so does the closing of the Proxy (ctx is cancelled).
type Asker func(ctx context.Context, host string, port int) (allow bool, scope string, err error)

// reasonNotListed is the reason of a refusal where nobody could be asked.
const reasonNotListed = "not on the allow-list; add it under sandbox.network.allow"

// decision is what the policy says about one destination.
type decision struct {
	verdict Verdict
	// internalOK lets the connection reach loopback, private and other
	// internal addresses; see internalAddr.
	internalOK bool
	reason     string // why a Deny
	rule       string // the rule that decided, if one did
}

// hostPort keys remembered answers and questions in flight.
type hostPort struct {
	host string
	port int
}

// question is one call of the Asker that concurrent connections to the
// same destination share; done is closed once d is set.
type question struct {
	done chan struct{}
	d    decision
}

// policy applies the lists, remembered answers and the Asker, in that
// order.
type policy struct {
	allow, deny  []Rule
	ask          Asker
	persist      func(Rule) error
	allowPrivate bool
	log          *slog.Logger

	mu      sync.Mutex
	answers map[hostPort]bool      // answers given for the session or always
	asking  map[hostPort]*question // questions being asked
}

// decide says whether a connection to host:port (host already through
// normalizeHost) may be made. ctx bounds the wait for an answer.
func (p *policy) decide(ctx context.Context, host string, port int) decision {
	if r, ok := Match(p.deny, host, port); ok {
		return decision{reason: "on the deny-list (rule " + r.String() + ")", rule: r.String()}
	}
	if r, ok := Match(p.allow, host, port); ok {
		// A rule that names an address, or "localhost", names the
		// internal destination itself; a domain rule does not.
		internal := p.allowPrivate || r.IsIP() || r.Host == "localhost"
		return decision{verdict: Allow, internalOK: internal, rule: r.String()}
	}
	key := hostPort{host, port}
	p.mu.Lock()
	if allow, ok := p.answers[key]; ok {
		p.mu.Unlock()
		return p.answered(host, allow, ScopeSession)
	}
	if p.ask == nil {
		p.mu.Unlock()
		return decision{reason: reasonNotListed}
	}
	q, shared := p.asking[key]
	if !shared {
		q = &question{done: make(chan struct{})}
		p.asking[key] = q
	}
	p.mu.Unlock()
	if shared {
		select {
		case <-q.done:
			return q.d
		case <-ctx.Done():
			return decision{reason: "not on the allow-list and the question was not answered: " + ctx.Err().Error()}
		}
	}
	q.d = p.askOnce(ctx, key)
	p.mu.Lock()
	delete(p.asking, key)
	p.mu.Unlock()
	close(q.done)
	return q.d
}

// askOnce calls the Asker and remembers a session or always answer.
func (p *policy) askOnce(ctx context.Context, key hostPort) decision {
	allow, scope, err := p.ask(ctx, key.host, key.port)
	if err != nil {
		return decision{reason: fmt.Sprintf("not on the allow-list and the question was not answered (%v); add it under sandbox.network.allow", err)}
	}
	p.log.Info("egress: answer", "host", key.host, "port", key.port, "allow", allow, "scope", scope)
	if scope == ScopeSession || scope == ScopeAlways {
		p.mu.Lock()
		p.answers[key] = allow
		p.mu.Unlock()
	}
	if scope == ScopeAlways && allow && p.persist != nil {
		if err := p.persist(Rule{Host: key.host, Port: key.port}); err != nil {
			p.log.Warn("egress: saving an always answer", "host", key.host, "port", key.port, "err", err)
		}
	}
	return p.answered(key.host, allow, scope)
}

// answered turns an answer about host into a decision. The person asked
// saw the exact name: an IP literal is that address, internal or not,
// while a domain gets no more than a domain rule would.
func (p *policy) answered(host string, allow bool, scope string) decision {
	if !allow {
		return decision{reason: "refused when asked"}
	}
	_, err := netip.ParseAddr(host)
	return decision{verdict: Allow, internalOK: p.allowPrivate || err == nil, rule: "asked (" + scope + ")"}
}
