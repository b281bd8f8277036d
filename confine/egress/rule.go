package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBadRule is wrapped by every error [ParseRule] returns.
var ErrBadRule = errors.New("egress: bad rule")

// Rule names the destinations one allow-list or deny-list entry covers.
//
// Host is one of:
//   - "*": every host, domain names and IP addresses alike;
//   - "*.example.com": every subdomain of example.com at any depth, but not
//     example.com itself (list both when both are meant);
//   - "example.com": that name exactly;
//   - an IP address ("127.0.0.1", "::1"): that address, asked for as a
//     literal. A domain that resolves to it is not covered.
//
// Host is stored in lower case without a trailing dot, IP addresses in
// their canonical form. Port 0 means any port.
type Rule struct {
	Host string
	Port int
}

// ParseRule parses "example.com", "*.example.com:443", "127.0.0.1:8080",
// "::1" or "[::1]:9000". Names are case-insensitive and a trailing dot is
// ignored. A port, when given, is 1–65535.
func ParseRule(s string) (Rule, error) {
	host, port, err := splitRule(strings.TrimSpace(s))
	if err != nil {
		return Rule{}, fmt.Errorf("%w %q: %w", ErrBadRule, s, err)
	}
	h, err := normalizeRuleHost(host)
	if err != nil {
		return Rule{}, fmt.Errorf("%w %q: %w", ErrBadRule, s, err)
	}
	return Rule{Host: h, Port: port}, nil
}

// ParseRules parses each of ss with [ParseRule] and stops at the first
// error.
func ParseRules(ss []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(ss))
	for _, s := range ss {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// String is the form ParseRule reads back into the same Rule.
func (r Rule) String() string {
	if r.Port == 0 {
		return r.Host
	}
	if strings.Contains(r.Host, ":") {
		return "[" + r.Host + "]:" + strconv.Itoa(r.Port)
	}
	return r.Host + ":" + strconv.Itoa(r.Port)
}

// IsIP says whether the rule names one IP address.
func (r Rule) IsIP() bool {
	_, err := netip.ParseAddr(r.Host)
	return err == nil
}

// Matches says whether the rule covers a connection to host:port, where
// host is the name the client asked for (a domain or an IP literal, in any
// case, with or without a trailing dot or IPv6 brackets).
func (r Rule) Matches(host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	return r.matchesHost(normalizeHost(host))
}

// matchesHost takes a host already through normalizeHost.
func (r Rule) matchesHost(h string) bool {
	switch {
	case r.Host == "*":
		return h != ""
	case isIPLiteral(h) || r.IsIP():
		// An IP rule never covers a name and a name rule never covers an
		// IP: "a literal IP matches only IP rules".
		return h == r.Host
	case strings.HasPrefix(r.Host, "*."):
		return strings.HasSuffix(h, r.Host[1:])
	default:
		return h == r.Host
	}
}

// Match returns the first of rules that covers host:port.
func Match(rules []Rule, host string, port int) (Rule, bool) {
	h := normalizeHost(host)
	for _, r := range rules {
		if (r.Port == 0 || r.Port == port) && r.matchesHost(h) {
			return r, true
		}
	}
	return Rule{}, false
}

// splitRule separates an optional port from a rule's host.
func splitRule(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("empty")
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New("missing ]")
		}
		host, rest := s[1:end], s[end+1:]
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return "", 0, errors.New("only an IPv6 address goes in brackets")
		}
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("unexpected %q after ]", rest)
		}
		port, err := parsePort(rest[1:])
		return host, port, err
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		host, p, _ := strings.Cut(s, ":")
		port, err := parsePort(p)
		return host, port, err
	default: // a bare IPv6 address; its port would need brackets
		return s, 0, nil
	}
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("port %q is not 1-65535", s)
	}
	return n, nil
}

// normalizeRuleHost validates and canonicalises a rule's host.
func normalizeRuleHost(h string) (string, error) {
	if h == "*" {
		return h, nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", errors.New("an address with a zone cannot be matched")
		}
		return a.Unmap().String(), nil
	}
	if strings.Contains(h, ":") {
		return "", fmt.Errorf("%q is not an IP address", h)
	}
	name := strings.TrimSuffix(strings.ToLower(h), ".")
	domain, wild := strings.CutPrefix(name, "*.")
	if err := checkDomain(domain); err != nil {
		return "", err
	}
	if wild {
		return "*." + domain, nil
	}
	return domain, nil
}

// checkDomain accepts the names DNS can carry: dot-separated labels of
// letters, digits, '-' (not at a label's edge) and '_' (some service
// names use it), 1–63 bytes each, 253 in all.
func checkDomain(d string) error {
	if d == "" || len(d) > 253 {
		return fmt.Errorf("domain %q is empty or longer than 253 bytes", d)
	}
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("domain %q has an empty, over-long or hyphen-edged label", d)
		}
		for _, c := range []byte(label) {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("domain %q has %q; a wildcard is allowed only as a leading \"*.\"", d, c)
			}
		}
	}
	return nil
}

// normalizeHost puts a requested host in the form rules are stored in:
// lower case, no trailing dot, IPv6 without brackets, IP addresses
// canonical (an IPv4-mapped IPv6 address becomes IPv4, so it cannot
// slip past an IPv4 rule). An address with a zone becomes "", which
// nothing matches and the proxy refuses as malformed.
func normalizeHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return ""
		}
		return a.Unmap().String()
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func isIPLiteral(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}
