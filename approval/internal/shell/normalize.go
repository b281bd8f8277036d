package shell

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns the form of command that the gate analyses. It removes
// what a terminal would hide or a shell would ignore before the parser sees
// the text:
//
//   - ANSI and C1 escape sequences (CSI, OSC, DCS and friends), NUL bytes,
//     other C0 control characters except tab and newline (a carriage
//     return, which would let a terminal redraw the line, included), and
//     invalid UTF-8;
//   - compatibility forms, through Unicode NFKC ("ｒｍ" becomes "rm");
//   - backslash-newline line continuations, which are joined;
//   - $IFS and ${IFS…}, which are replaced by a space, because that is how
//     they split words in an attack like rm${IFS}-rf${IFS}/.
//
// Normalize runs in time linear in the length of command. Removing
// characters can only make the gate see more, never less: a byte the shell
// would have kept but Normalize drops makes a command word harder to hide,
// not easier.
func Normalize(command string) string {
	s := stripControls(command)
	if !isASCII(s) {
		s = norm.NFKC.String(s)
		// NFKC never produces escape sequences, but it can turn a
		// compatibility character into a control one; strip again.
		s = stripControls(s)
	}
	s = joinContinuations(s)
	return replaceIFS(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stripControls removes escape sequences and control characters.
func stripControls(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			i++ // invalid UTF-8: drop the byte
			continue
		}
		switch {
		case r == 0x1b: // ESC
			i = skipEscape(s, i+size)
			continue
		case r == 0x9b: // C1 CSI
			i = skipCSI(s, i+size)
			continue
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i = skipString(s, i+size)
			continue
		case r < 0x20 && r != '\t' && r != '\n', r == 0x7f, r >= 0x80 && r <= 0x9f:
			i += size
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// skipEscape skips the sequence after an ESC byte and returns the index of
// the first byte after it.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// Two-byte sequences (ESC c, ESC =, ESC 7 …) and charset selections
	// (ESC ( B) have at most one intermediate byte.
	if s[i] >= 0x20 && s[i] <= 0x2f && i+1 < len(s) {
		return i + 2
	}
	if s[i] >= 0x20 && s[i] < 0x7f {
		return i + 1
	}
	return i
}

// skipCSI skips parameter and intermediate bytes and the final byte.
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		if c >= 0x40 && c <= 0x7e {
			return i
		}
		if c < 0x20 || c > 0x3f && c < 0x40 || c >= 0x7f {
			return i - 1 // malformed: stop before the odd byte
		}
	}
	return i
}

// skipString skips an OSC/DCS-style string up to BEL or ST (ESC \ or C1 ST).
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c: // U+009C ST
			return i + 2
		case s[i] == '\n':
			// Terminals end a runaway string at the line; so do we, so a
			// stray ESC ] cannot swallow the rest of a script.
			return i
		}
		i++
	}
	return i
}

// joinContinuations removes each backslash-newline pair whose backslash is
// not itself escaped.
func joinContinuations(s string) string {
	if !strings.Contains(s, "\\\n") {
		return s
	}
	buf := make([]byte, 0, len(s))
	backslashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' && backslashes%2 == 1 {
			buf = buf[:len(buf)-1] // drop the backslash, skip the newline
			backslashes = 0
			continue
		}
		if c == '\\' {
			backslashes++
		} else {
			backslashes = 0
		}
		buf = append(buf, c)
	}
	return string(buf)
}

// replaceIFS turns $IFS, ${IFS} and ${IFS…} into a space. $IFSX, a different
// variable, is left alone.
func replaceIFS(s string) string {
	if !strings.Contains(s, "IFS") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == '$' {
			rest := s[i+1:]
			if strings.HasPrefix(rest, "IFS") && (len(rest) == 3 || !isNameByte(rest[3])) {
				b.WriteByte(' ')
				i += 4
				continue
			}
			if strings.HasPrefix(rest, "{IFS") && len(rest) > 4 && !isNameByte(rest[4]) {
				if end := strings.IndexByte(rest, '}'); end > 0 {
					b.WriteByte(' ')
					i += 1 + end + 1
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
