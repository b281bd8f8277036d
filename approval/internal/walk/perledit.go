package walk

import "strings"

// perlEditOnly reports whether every piece of inline Perl code is only
// substitutions and transliterations (s/a/b/g; y/a-z/A-Z/), the sed-like
// edits `perl -pi -e` is used for. Such code runs nothing: it has no /e
// flag (which evaluates the replacement), no code blocks in the pattern
// ((?{…}), (??{…})), no backticks, and interpolates nothing but capture
// groups ($1, $&) — a variable's subscript ($h{…}, @a[…], ${…}) is Perl
// code, so any other $ or @ followed by a name or brace makes it code.
// Anything else is inline code and asks.
func perlEditOnly(codes []string) bool {
	if len(codes) == 0 {
		return false
	}
	for _, code := range codes {
		if !perlEdits(code) {
			return false
		}
	}
	return true
}

func perlEdits(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for s != "" {
		var op string
		switch {
		case strings.HasPrefix(s, "tr") && len(s) > 2 && isPerlDelim(s[2]):
			op, s = "tr", s[2:]
		case (s[0] == 's' || s[0] == 'y') && len(s) > 1 && isPerlDelim(s[1]):
			op, s = s[:1], s[1:]
		default:
			return false
		}
		d := s[0]
		pattern, rest, ok := perlPart(s[1:], d)
		if !ok {
			return false
		}
		repl, rest, ok := perlPart(rest, d)
		if !ok {
			return false
		}
		i := 0
		for i < len(rest) && rest[i] >= 'a' && rest[i] <= 'z' {
			i++
		}
		flags := rest[:i]
		if op == "s" && (strings.ContainsRune(flags, 'e') || !perlQuiet(pattern) || !perlQuiet(repl)) {
			return false
		}
		s = strings.TrimLeft(rest[i:], " \t\n")
		if s != "" {
			if s[0] != ';' {
				return false
			}
			s = strings.TrimLeft(s[1:], " \t\n;")
		}
	}
	return true
}

// isPerlDelim: the delimiters accepted here are the same character on
// each side; bracketing pairs (s{…}{…}) are not, and ask.
func isPerlDelim(c byte) bool {
	return strings.IndexByte("/|#!,:%@+=~^", c) >= 0
}

// perlPart reads up to the next unescaped d.
func perlPart(s string, d byte) (part, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case d:
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// perlQuiet reports whether a pattern or replacement interpolates nothing
// that runs code.
func perlQuiet(s string) bool {
	if strings.Contains(s, "(?{") || strings.Contains(s, "(??{") || strings.ContainsRune(s, '`') {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '$', '@':
			if i+1 < len(s) {
				c := s[i+1]
				if c == '{' || c == '_' || c == ':' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
					return false
				}
			}
		}
	}
	return true
}
