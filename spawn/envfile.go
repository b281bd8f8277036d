package spawn

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// maxEnvFile bounds how much of a profile's env file is read. Env files are a
// few hundred bytes; anything past a megabyte is not one.
const maxEnvFile = 1 << 20

// envVar is one assignment read from an env file.
type envVar struct{ key, value string }

// readEnvFile reads the dotenv-style file at path. A file that does not exist
// defines nothing and is not an error (exists reports it). Any other failure
// is, because a caller that cannot tell what the file defines cannot drop it.
func readEnvFile(path string) (vars []envVar, bad []int, exists bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("spawn: launch env file: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return nil, nil, true, fmt.Errorf("spawn: launch env file: %w", err)
	}
	if len(src) > maxEnvFile {
		return nil, nil, true, fmt.Errorf("spawn: launch env file %s: larger than %d bytes", path, maxEnvFile)
	}
	vars, bad = parseEnvFile(string(src))
	return vars, bad, true, nil
}

// parseEnvFile parses the dotenv dialect profiles use:
//
//	# comment
//	KEY=value              # unquoted; " #" starts a comment, spaces are trimmed
//	export KEY=value       # "export " is ignored
//	KEY='literal $value'   # single quotes: no escapes
//	KEY="a\nb \"c\""       # double quotes: \n \t \" \\ \$ escapes
//	KEY="spans
//	lines"                 # quoted values may span lines
//
// It returns the assignments in file order (a later one for the same key
// does not replace an earlier one here) and the 1-based numbers of lines it
// could not fully read. It never fails: a line without a valid KEY= is
// skipped and reported; a line with a valid key but a bad quoted value is
// reported and still returned, so its key counts as defined.
func parseEnvFile(src string) (vars []envVar, bad []int) {
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		ln := strings.TrimLeft(strings.TrimSuffix(lines[i], "\r"), " \t")
		if ln == "" || ln[0] == '#' || strings.TrimSpace(ln) == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(ln, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			ln = strings.TrimLeft(rest, " \t")
		}
		key, raw, ok := strings.Cut(ln, "=")
		key = strings.TrimRight(key, " \t")
		if !ok || !validKey(key) {
			bad = append(bad, start+1)
			continue
		}
		raw = strings.TrimLeft(raw, " \t")
		if raw == "" || (raw[0] != '"' && raw[0] != '\'') {
			if j := strings.Index(raw, " #"); j >= 0 {
				raw = raw[:j]
			}
			if j := strings.Index(raw, "\t#"); j >= 0 {
				raw = raw[:j]
			}
			vars = append(vars, envVar{key, strings.TrimSpace(raw)})
			continue
		}
		q, body := raw[0], raw[1:]
		end := closingQuote(body, q)
		for end < 0 && i+1 < len(lines) {
			i++
			body += "\n" + strings.TrimSuffix(lines[i], "\r")
			end = closingQuote(body, q)
		}
		// A bad value still defines its key: a caller dropping what the
		// file defines must drop it too.
		if end < 0 {
			// Unterminated quote: read the lines after it as lines of their
			// own, so that no key they set is missed.
			bad = append(bad, start+1)
			vars = append(vars, envVar{key, raw[1:]})
			i = start
			continue
		}
		if after := strings.TrimSpace(body[end+1:]); after != "" && after[0] != '#' {
			bad = append(bad, start+1) // text after the closing quote
			vars = append(vars, envVar{key, body[:end]})
			continue
		}
		val := body[:end]
		if q == '"' {
			val = unescape(val)
		}
		vars = append(vars, envVar{key, val})
	}
	return vars, bad
}

// closingQuote returns the index in s of the quote q that ends the value, or
// -1. Inside double quotes a backslash escapes the next byte.
func closingQuote(s string, q byte) int {
	if q == '\'' {
		return strings.IndexByte(s, q)
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i
		}
	}
	return -1
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '"', '\\', '$':
			b.WriteByte(s[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// validKey accepts the names env files use: a letter or '_' first, then
// letters, digits, '_', '.' or '-'.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case i > 0 && ('0' <= c && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}
