package inline

import "strings"

// shebang skips a #! line at the very start, which node, deno and bun
// treat as a comment.
func (l *lexer) shebang() {
	if strings.HasPrefix(l.src, "#!") {
		l.skipLine()
	}
}

// jsCode lexes JavaScript up to the end of the source or, inside a
// template's ${…}, up to its closing brace; it returns '}' or 0.
func (l *lexer) jsCode(inField bool) (byte, error) {
	depth := 0
	for l.i < len(l.src) {
		c := l.src[l.i]
		var err error
		switch {
		case c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\n' || c == '\r':
			l.i++
		case c == '/' && l.peek(1) == '/':
			err = l.jsLineComment()
		case c == '/' && l.peek(1) == '*':
			err = l.jsBlockComment()
		case c == '/':
			err = l.jsSlash()
		case isIdentStart(c, true):
			l.emit(tIdent, l.ident())
		case isDigit(c) || c == '.' && isDigit(l.peek(1)):
			l.number()
		case c == '\'' || c == '"':
			err = l.jsString(c)
		case c == '`':
			err = l.jsTemplate()
		case c >= 0x80 || c < 0x20 || c == '\\':
			// Non-ASCII and \u escapes can spell names (\u0065val is
			// eval); U+2028 ends lines. None of it is followed.
			return 0, errUnreadable
		case inField && depth == 0 && c == '}':
			l.i++
			return c, nil
		default:
			if err := l.punctuation(&depth); err != nil {
				return 0, err
			}
		}
		if err != nil {
			return 0, err
		}
	}
	if inField || depth != 0 {
		return 0, errUnreadable
	}
	return 0, nil
}

// jsLineComment skips a // comment. A line separator (U+2028, U+2029)
// would end it for the interpreter, so meeting one is an error.
func (l *lexer) jsLineComment() error {
	start := l.i
	l.skipLine()
	if strings.Contains(l.src[start:l.i], "\u2028") || strings.Contains(l.src[start:l.i], "\u2029") {
		return errUnreadable
	}
	return nil
}

func (l *lexer) jsBlockComment() error {
	end := strings.Index(l.src[l.i+2:], "*/")
	if end < 0 {
		return errUnreadable
	}
	l.i += 2 + end + 2
	return nil
}

// regexAfter are the keywords after which a slash starts a regular
// expression rather than a division.
var regexAfter = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true,
	"new": true, "delete": true, "void": true, "throw": true, "case": true,
	"do": true, "else": true, "yield": true, "await": true,
}

// slashMode says how a slash at the cursor reads after the previous
// token: surely a regular expression, surely a division, or either.
func (l *lexer) slashMode() (regex, ambiguous bool) {
	if len(l.toks) == 0 {
		return true, false
	}
	prev := l.toks[len(l.toks)-1]
	switch prev.kind {
	case tIdent:
		return regexAfter[prev.text], false
	case tPunct:
		switch prev.text {
		case ")", "}", "]", "++", "--":
			return false, true
		}
		return true, false
	}
	return false, false
}

// jsSlash reads a slash as a regular expression or a division. Where the
// grammar could mean either, it reads a division, which shows more code,
// but refuses the source when the regex reading would differ in what is
// string or comment: a quote, backquote, slash or backslash inside it,
// or a slash or star right after it.
func (l *lexer) jsSlash() error {
	regex, ambiguous := l.slashMode()
	if regex {
		end, ok := l.regexEnd()
		if !ok {
			return errUnreadable
		}
		l.emit(tRegex, l.src[l.i:end])
		l.i = end
		return nil
	}
	if ambiguous {
		if end, ok := l.regexEnd(); ok {
			body := l.src[l.i+1 : end]
			if strings.ContainsAny(body, "'\"`/\\") || end < len(l.src) && (l.src[end] == '/' || l.src[end] == '*') {
				return errUnreadable
			}
		}
	}
	l.emit(tPunct, l.punct())
	return nil
}

// regexEnd finds where a regular expression literal starting at the
// cursor ends (after its flags), within one line.
func (l *lexer) regexEnd() (int, bool) {
	inClass := false
	for j := l.i + 1; j < len(l.src); j++ {
		switch c := l.src[j]; {
		case c == '\n' || c == '\r':
			return 0, false
		case c == '\\':
			j++
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			j++
			for j < len(l.src) && isIdentByte(l.src[j], true) {
				j++
			}
			return j, true
		}
	}
	return 0, false
}

// jsString reads a '…' or "…" literal.
func (l *lexer) jsString(q byte) error {
	start := l.i + 1
	for l.i++; l.i < len(l.src); {
		c := l.src[l.i]
		switch {
		case c == '\\':
			if l.peek(1) == '\r' && l.peek(2) == '\n' {
				l.i++
			}
			l.i += 2
		case c == '\n' || c == '\r':
			return errUnreadable
		case c == q:
			l.emit(tStr, l.src[start:l.i])
			l.i++
			return nil
		default:
			l.i++
		}
	}
	return errUnreadable
}

// jsTemplate reads a `…` literal; its ${…} parts are code.
func (l *lexer) jsTemplate() error {
	at := len(l.toks)
	l.emit(tStr, "")
	start := l.i + 1
	for l.i++; l.i < len(l.src); {
		c := l.src[l.i]
		switch {
		case c == '\\':
			l.i += 2
		case c == '`':
			l.toks[at].text = l.src[start:l.i]
			l.i++
			return nil
		case c == '$' && l.peek(1) == '{':
			l.i += 2
			l.toks[at].built = true
			if _, err := l.field(func() (byte, error) { return l.jsCode(true) }); err != nil {
				return err
			}
		default:
			l.i++
		}
	}
	return errUnreadable
}
