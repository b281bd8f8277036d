package inline

import "strings"

// pyCode lexes Python code up to the end of the source or, in a field of
// an f-string, up to the ':' or '}' that ends the field's expression at
// bracket depth zero; it returns that byte (0 at the end of the source).
func (l *lexer) pyCode(inField bool) (byte, error) {
	depth := 0
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\f' || c == '\n' || c == '\r':
			l.i++
		case c == '#':
			l.skipLine()
		case c == '\\':
			if err := l.pyContinuation(); err != nil {
				return 0, err
			}
		case isIdentStart(c, false):
			if err := l.pyWord(); err != nil {
				return 0, err
			}
		case isDigit(c) || c == '.' && isDigit(l.peek(1)):
			l.number()
		case c == '\'' || c == '"':
			if err := l.pyString(""); err != nil {
				return 0, err
			}
		case c >= 0x80 || c < 0x20 || c == '`' || c == '$' || c == '?':
			// Python folds non-ASCII names by NFKC (ｅval is eval), and
			// these bytes are no part of Python outside strings.
			return 0, errUnreadable
		case inField && depth == 0 && (c == ':' || c == '}'):
			l.i++
			return c, nil
		default:
			if err := l.punctuation(&depth); err != nil {
				return 0, err
			}
		}
	}
	if inField || depth != 0 {
		return 0, errUnreadable
	}
	return 0, nil
}

// skipLine skips a comment. Python and JS both end a line at \r as well
// as \n, so a comment must too, or code after a lone \r would be hidden.
func (l *lexer) skipLine() {
	for l.i < len(l.src) && l.src[l.i] != '\n' && l.src[l.i] != '\r' {
		l.i++
	}
}

// pyContinuation accepts a backslash only as an explicit line joint.
func (l *lexer) pyContinuation() error {
	switch {
	case l.peek(1) == '\n':
		l.i += 2
	case l.peek(1) == '\r' && l.peek(2) == '\n':
		l.i += 3
	case l.peek(1) == '\r':
		l.i += 2
	default:
		return errUnreadable
	}
	return nil
}

// pyPrefixes are the string prefixes Python accepts, lower-cased; t is
// the template string of Python 3.14, which holds code like f.
var pyPrefixes = map[string]bool{
	"r": true, "u": true, "b": true, "f": true, "t": true,
	"br": true, "rb": true, "fr": true, "rf": true, "tr": true, "rt": true,
}

// pyWord reads a name, or a string when the name is a prefix glued to a
// quote.
func (l *lexer) pyWord() error {
	name := l.ident()
	if c := l.peek(0); (c == '\'' || c == '"') && pyPrefixes[strings.ToLower(name)] {
		return l.pyString(strings.ToLower(name))
	}
	l.emit(tIdent, name)
	return nil
}

// pyString reads a string literal whose opening quote is at the cursor.
// The fields of f- and t-strings are lexed as code.
func (l *lexer) pyString(prefix string) error {
	q := l.src[l.i]
	triple := l.peek(1) == q && l.peek(2) == q
	open := 1
	if triple {
		open = 3
	}
	l.i += open
	fmtd := strings.ContainsAny(prefix, "ft")
	at := len(l.toks)
	l.emit(tStr, "")
	start := l.i
	for {
		if l.i >= len(l.src) {
			return errUnreadable
		}
		c := l.src[l.i]
		switch {
		case c == '\\':
			// A backslash keeps the next byte from closing the string,
			// raw or not; but a brace after it still opens a field.
			if n := l.peek(1); n == 0 {
				return errUnreadable
			} else if fmtd && (n == '{' || n == '}') {
				l.i++
			} else if n == '\r' && l.peek(2) == '\n' {
				l.i += 3
			} else {
				l.i += 2
			}
		case c == '\n' || c == '\r':
			if !triple {
				return errUnreadable
			}
			l.i++
		case c == q && (!triple || l.peek(1) == q && l.peek(2) == q):
			l.toks[at].text = l.src[start:l.i]
			l.i += open
			return nil
		case fmtd && (c == '{' || c == '}'):
			if err := l.pyBrace(c, q, triple); err != nil {
				return err
			}
			l.toks[at].built = true
		default:
			l.i++
		}
	}
}

// pyBrace handles a brace inside an f-string: a doubled brace is text, a
// lone } is an error, and { opens a replacement field.
func (l *lexer) pyBrace(c, q byte, triple bool) error {
	if l.peek(1) == c {
		l.i += 2
		return nil
	}
	if c == '}' {
		return errUnreadable
	}
	l.i++
	return l.pyField(q, triple)
}

// pyField lexes a replacement field after its '{': an expression, and,
// after a ':', a format spec whose own {…} fields are code again.
func (l *lexer) pyField(q byte, triple bool) error {
	end, err := l.field(func() (byte, error) { return l.pyCode(true) })
	if err != nil {
		return err
	}
	if end == '}' {
		return nil
	}
	return l.pySpec(q, triple)
}

// pySpec reads a format spec up to the '}' that closes its field. A quote
// or a line end of the enclosing string inside a spec is refused rather
// than guessed at.
func (l *lexer) pySpec(q byte, triple bool) error {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '}':
			l.i++
			return nil
		case c == '{':
			l.i++
			if err := l.pyField(q, triple); err != nil {
				return err
			}
		case c == q || c == '\\' || !triple && (c == '\n' || c == '\r'):
			return errUnreadable
		default:
			l.i++
		}
	}
	return errUnreadable
}
