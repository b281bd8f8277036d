package egress

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestDial_DomainRuleDoesNotReachInternal performs the DNS-rebinding
// attack for real: names served by a real DNS server resolve to the
// loopback server, as a hostile domain's could. A domain rule, "*" and
// an allowed answer about a domain do not reach it; the control rows
// (AllowPrivate, a rule naming the address or "localhost") show the
// same requests do get through without the protection. Each row is
// tried over plain HTTP, CONNECT and SOCKS5.
func TestDial_DomainRuleDoesNotReachInternal(t *testing.T) {
	plain, _ := backend(t)
	port := serverPort(t, plain)
	resolver := startDNS(t, map[string][4]byte{
		"registry.test.":     {127, 0, 0, 1},
		"pkg.registry.test.": {127, 0, 0, 1},
	})
	askYes := func(context.Context, string, int) (bool, string, error) { return true, ScopeSession, nil }
	tests := []struct {
		name    string
		opts    Options
		host    string
		allowed bool
		reason  string
	}{
		{"domain rule", Options{Allow: rules(t, "registry.test")}, "registry.test", false, "resolves only to internal"},
		{"wildcard rule", Options{Allow: rules(t, "*.registry.test")}, "pkg.registry.test", false, "resolves only to internal"},
		{"any host", Options{Allow: rules(t, "*")}, "registry.test", false, "resolves only to internal"},
		{"asked about a domain", Options{Ask: askYes}, "registry.test", false, "resolves only to internal"},
		{"wildcard leaves the bare name", Options{Allow: rules(t, "*.registry.test"), AllowPrivate: true}, "registry.test", false, "not on the allow-list"},
		{"deny rule names the address", Options{Allow: rules(t, "*"), Deny: rules(t, "127.0.0.1"), AllowPrivate: true}, "registry.test", false, "internal or denied"},
		{"control: AllowPrivate", Options{Allow: rules(t, "registry.test"), AllowPrivate: true}, "registry.test", true, ""},
		{"control: wildcard, AllowPrivate", Options{Allow: rules(t, "*.registry.test"), AllowPrivate: true}, "pkg.registry.test", true, ""},
		{"control: rule names the address", Options{Allow: rules(t, "127.0.0.1")}, "127.0.0.1", true, ""},
		{"control: rule names localhost", Options{Allow: rules(t, "localhost")}, "localhost", true, ""},
		{"control: asked about the address", Options{Ask: askYes}, "127.0.0.1", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Resolver = resolver
			p := startProxy(t, tt.opts)
			u := fmt.Sprintf("http://%s:%d/r", tt.host, port)
			ways := map[string][]string{
				"http":   {"-x", "http://" + p.Addr()},
				"tunnel": {"-p", "-x", "http://" + p.Addr()},
				"socks5": {"--socks5-hostname", p.Addr()},
			}
			for way, args := range ways {
				out, stderr, code := run(t, nil, "curl", append([]string{"-sS", "--noproxy", "", u}, args...)...)
				ok := code == 0 && out == "backend: GET /r "
				if ok != tt.allowed {
					t.Errorf("%s: curl %s = %q (exit %d, %q); want reached=%v", way, u, out, code, stderr, tt.allowed)
				}
			}
			v, _ := p.Violations(0)
			if want := map[bool]int{true: 0, false: len(ways)}[tt.allowed]; len(v) != want {
				t.Fatalf("violations = %+v; want %d", v, want)
			}
			for _, x := range v {
				if x.Host != tt.host || x.Port != port || !strings.Contains(x.Reason, tt.reason) {
					t.Errorf("violation %+v; want %s:%d, %q", x, tt.host, port, tt.reason)
				}
			}
		})
	}
}

// TestDial_InternalAddr: the address classes a domain rule does not
// reach.
func TestDial_InternalAddr(t *testing.T) {
	tests := map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true,
		"192.168.1.1": true, "169.254.169.254": true, "fe80::1": true, "fd00::1": true, "0.0.0.0": true,
		"::": true, "0.1.2.3": true, "100.100.100.200": true, "224.0.0.1": true, "::ffff:127.0.0.1": true,
		"::ffff:169.254.169.254": true,
		"93.184.215.14":          false, "2606:4700::1111": false, "172.32.0.1": false, "100.128.0.1": false,
	}
	for s, want := range tests {
		if got := internalAddr(mustAddr(t, s)); got != want {
			t.Errorf("internalAddr(%s) = %v; want %v", s, got, want)
		}
	}
}

// TestDial_NotItself: even "*" with AllowPrivate does not let a client
// tunnel into the proxy through the proxy.
func TestDial_NotItself(t *testing.T) {
	p := startProxy(t, Options{Allow: rules(t, "*"), AllowPrivate: true})
	for _, host := range []string{"127.0.0.1", "localhost"} {
		rep, _ := socksDial(t, p.Addr(), socksConnect, socksAtypName, []byte(host), p.Port())
		if rep != socksNotAllowd {
			t.Fatalf("SOCKS5 CONNECT to the proxy as %s: reply %#x; want %#x", host, rep, socksNotAllowd)
		}
	}
}
