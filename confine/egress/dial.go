package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
)

// DeniedError is a refused destination: not allowed by the lists or the
// person asked, or a name that resolves only to internal addresses its
// rule does not cover. Proxy handlers turn it into an HTTP 403 or a SOCKS5
// reply 0x02 and a [Violation].
type DeniedError struct {
	Host   string
	Port   int
	Reason string
	Rule   string // the rule that refused, if one did
}

func (e *DeniedError) Error() string {
	return "runbox sandbox: egress to " + net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) + " denied: " + e.Reason
}

// shared100 is the shared address space of carrier-grade NAT, which
// some clouds use for their metadata services.
var shared100 = netip.MustParsePrefix("100.64.0.0/10")

// internalAddr says whether a is an address a domain rule must not
// reach: loopback, private (RFC 1918, IPv6 ULA), link-local (where cloud
// metadata services live), unspecified (0.0.0.0 reaches this host),
// multicast, "this network" 0.0.0.0/8 and carrier-grade NAT space.
func internalAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || shared100.Contains(a) ||
		(a.Is4() && a.As4()[0] == 0)
}

// dial connects to host:port after d allowed it, resolving names in the
// proxy. Addresses the decision does not reach are dropped, and so are
// those a deny rule names; if none is left the result is a *DeniedError.
func (p *Proxy) dial(ctx context.Context, host string, port int, d decision) (net.Conn, error) {
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	if port == p.Port() && slices.ContainsFunc(addrs, p.isSelf) {
		return nil, &DeniedError{Host: host, Port: port, Rule: d.rule, Reason: "that is this proxy itself"}
	}
	var usable []netip.Addr
	var dropped netip.Addr
	for _, a := range addrs {
		if _, denied := Match(p.policy.deny, a.String(), port); denied || (!d.internalOK && internalAddr(a)) {
			dropped = a
			continue
		}
		usable = append(usable, a)
	}
	if len(usable) == 0 {
		return nil, &DeniedError{Host: host, Port: port, Rule: d.rule, Reason: fmt.Sprintf(
			"%s resolves only to internal or denied addresses (%s); a domain rule does not reach them: allow the address itself (%s) under sandbox.network.allow",
			host, dropped, net.JoinHostPort(dropped.String(), strconv.Itoa(port)))}
	}
	dialer := net.Dialer{Timeout: p.opts.DialTimeout}
	var errs []error
	for _, a := range usable {
		c, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("egress: connecting to %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), errors.Join(errs...))
}

// isSelf says whether a, on the proxy's port, may be the proxy's own
// listener: a tunnel into itself would only chain tunnels.
func (p *Proxy) isSelf(a netip.Addr) bool {
	ln := p.ln.Addr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	return a == ln || a.IsLoopback() || a.IsUnspecified() || ln.IsUnspecified()
}

// resolve returns host's addresses, unmapped: the address itself for an
// IP literal, else the answer of the proxy's resolver.
func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := p.opts.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("egress: resolving %s: %w", host, err)
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}
