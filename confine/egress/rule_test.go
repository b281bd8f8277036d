package egress

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
	}{
		{"example.com", Rule{"example.com", 0}},
		{"Example.COM.", Rule{"example.com", 0}},
		{"*.example.com:443", Rule{"*.example.com", 443}},
		{"*", Rule{"*", 0}},
		{"*:8080", Rule{"*", 8080}},
		{"127.0.0.1:8080", Rule{"127.0.0.1", 8080}},
		{"::1", Rule{"::1", 0}},
		{"[::1]:9000", Rule{"::1", 9000}},
		{"[0:0::1]", Rule{"::1", 0}},
		{"::ffff:10.0.0.1", Rule{"10.0.0.1", 0}},
		{" registry_x.internal ", Rule{"registry_x.internal", 0}},
		{"localhost:65535", Rule{"localhost", 65535}},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	bad := []string{
		"", "example.com:0", "example.com:65536", "example.com:http", "example.com:+80",
		"a.*.com", "*example.com", "*.", "*.*.com", "exa mple.com", "a..b", ".", "[example.com]:80",
		"[::1", "[::1]x", "fe80::1%eth0", "1.2.3.4:80:90x", "-",
		strings.Repeat("a", 64) + ".com", "é.com",
	}
	for _, in := range bad {
		if got, err := ParseRule(in); !errors.Is(err, ErrBadRule) {
			t.Errorf("ParseRule(%q) = %+v, %v; want an ErrBadRule", in, got, err)
		}
	}
}

func TestRule_Matches(t *testing.T) {
	tests := []struct {
		rule string
		host string
		port int
		want bool
	}{
		{"packages.example", "packages.example", 443, true},
		{"packages.example", "Packages.Example.", 80, true},
		{"packages.example", "files.packages.example", 443, false},
		{"packages.example", "evilpackages.example", 443, false},
		{"packages.example:443", "packages.example", 80, false},
		{"packages.example:443", "packages.example", 443, true},
		{"*.registry.example", "pkg.registry.example", 443, true},
		{"*.registry.example", "a.b.registry.example", 443, true},
		{"*.registry.example", "registry.example", 443, false},
		{"*.registry.example", "evilregistry.example", 443, false},
		{"*.registry.example", "registry.example.evil.com", 443, false},
		{"*", "anything.example", 1, true},
		{"*", "10.0.0.1", 22, true},
		{"*:443", "10.0.0.1", 22, false},
		{"127.0.0.1:8080", "127.0.0.1", 8080, true},
		{"127.0.0.1:8080", "::ffff:127.0.0.1", 8080, true},
		{"127.0.0.1:8080", "localhost", 8080, false},
		{"localhost", "127.0.0.1", 80, false},
		{"::1", "[::1]", 80, true},
		{"::1", "0:0:0:0:0:0:0:1", 80, true},
		{"*.1", "127.0.0.1", 80, false},
		{"*.example.com", "fe80::1%eth0", 80, false},
		{"*", "fe80::1%eth0", 80, false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", tt.rule, err)
		}
		if got := r.Matches(tt.host, tt.port); got != tt.want {
			t.Errorf("Rule(%q).Matches(%q, %d) = %v; want %v", tt.rule, tt.host, tt.port, got, tt.want)
		}
		if _, got := Match([]Rule{r}, tt.host, tt.port); got != tt.want {
			t.Errorf("Match([%q], %q, %d) = %v; want %v", tt.rule, tt.host, tt.port, got, tt.want)
		}
	}
}

// FuzzParseRule checks the invariants callers rely on: a parsed rule
// prints back to itself, matches its own host in any case and with a
// trailing dot, and a wildcard never matches its bare suffix.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "127.0.0.1:8080", "[::1]:9000", "*", "::ffff:1.2.3.4", "A.B.", "x:0"} {
		f.Add(s, "Sub.Example.com.", uint16(443))
	}
	f.Fuzz(func(t *testing.T, s, host string, port uint16) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRule(%q) = %+v; its String %q parses to %+v, %v", s, r, r.String(), back, err)
		}
		p := r.Port
		if p == 0 {
			p = int(port)
		}
		switch {
		case r.Host == "*":
		case strings.HasPrefix(r.Host, "*."):
			suffix := r.Host[2:]
			if r.Matches(suffix, p) {
				t.Fatalf("%v matches its bare suffix %q", r, suffix)
			}
			if !r.Matches("X."+strings.ToUpper(suffix)+".", p) {
				t.Fatalf("%v does not match a subdomain", r)
			}
		default:
			if !r.Matches(strings.ToUpper(r.Host), p) {
				t.Fatalf("%v does not match its own host", r)
			}
			if !r.IsIP() && !r.Matches(r.Host+".", p) {
				t.Fatalf("%v does not match its host with a trailing dot", r)
			}
		}
		if r.Port != 0 && r.Matches(r.Host, r.Port%65535+1) {
			t.Fatalf("%v matches another port", r)
		}
		// An IP rule and a name rule never cover each other's kind.
		if r.Host != "*" && r.Matches(host, int(port)) && r.IsIP() != isIPLiteral(normalizeHost(host)) {
			t.Fatalf("%v matches %q of the other kind", r, host)
		}
	})
}
