package inline

import (
	"errors"
	"strings"
)

// kind is what a token is. Comments leave no token at all.
type kind uint8

const (
	tIdent kind = iota + 1
	tStr        // string literal; text is its body, escapes left as written
	tNum
	tRegex // JS regular expression literal
	tPunct
)

// token is one lexical unit. A string with code inside it (a Python
// f-string or a JS template with ${…}) has built set; its code follows it
// as ordinary tokens, wrapped in a synthetic ( … ) so that the code of one
// field never joins the tokens around it.
type token struct {
	kind  kind
	text  string
	lower string // text lower-cased, for names; the tables are lower-case
	built bool
}

// errUnreadable is the one error of the lexers: whatever the reason, the
// source is not something the judge can follow, so it is not quiet.
var errUnreadable = errors.New("cannot read it")

// maxNest bounds how deeply string fields may nest code inside strings
// inside code, so a hostile source cannot exhaust the stack.
const maxNest = 64

// lexer holds the state of one tokenization; it lives for one call.
type lexer struct {
	src  string
	i    int
	toks []token
	js   bool
	nest int
}

// ops are the multi-character operators, longest first, that the rules
// need to tell apart from their one-character prefixes (= from ==, * from
// **, : from :=).
var ops = [...]string{
	"**=", "//=", ">>=", "<<=", "...", "===", "!==", ">>>",
	"**", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=",
	"|=", "^=", ":=", "->", "=>", "?.", "??", "&&", "||", "++", "--",
	"<<", ">>", "//",
}

func (l *lexer) emit(k kind, text string) {
	t := token{kind: k, text: text}
	if k == tIdent {
		t.lower = strings.ToLower(text)
	}
	l.toks = append(l.toks, t)
}

func isIdentStart(c byte, js bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || js && c == '$'
}

func isIdentByte(c byte, js bool) bool {
	return isIdentStart(c, js) || c >= '0' && c <= '9'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// peek returns the byte at offset k from the cursor, or 0 past the end.
func (l *lexer) peek(k int) byte {
	if l.i+k < len(l.src) {
		return l.src[l.i+k]
	}
	return 0
}

// ident reads an identifier at the cursor.
func (l *lexer) ident() string {
	start := l.i
	for l.i < len(l.src) && isIdentByte(l.src[l.i], l.js) {
		l.i++
	}
	return l.src[start:l.i]
}

// number reads a numeric literal loosely: digits, letters, dots and
// underscores, and a sign after an exponent. Being loose cannot hide a
// name: a name glued to a number is not a name the interpreter calls.
func (l *lexer) number() {
	start := l.i
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case isIdentByte(c, false) || c == '.':
			l.i++
		case (c == '+' || c == '-') && (l.src[l.i-1] == 'e' || l.src[l.i-1] == 'E'):
			l.i++
		default:
			l.emit(tNum, l.src[start:l.i])
			return
		}
	}
	l.emit(tNum, l.src[start:l.i])
}

// punct reads one operator or punctuation mark, preferring the longest
// operator in ops.
func (l *lexer) punct() string {
	rest := l.src[l.i:]
	switch rest[0] {
	case '(', ')', '[', ']', '{', '}', ',', ';', '~', '@', '#':
		// the common marks that start no longer operator
		l.i++
		return rest[:1]
	}
	for _, op := range ops {
		if op[0] == rest[0] && len(rest) >= len(op) && rest[:len(op)] == op {
			if op == "//" && l.js {
				continue // JS comments are handled before punct
			}
			l.i += len(op)
			return op
		}
	}
	l.i++
	return rest[:1]
}

// bracket tracks the depth of (), [] and {} within one code region. It
// reports false for a closer with no opener: the caller decides whether
// that ends the region (a string field) or is an error.
func bracket(depth *int, p string) bool {
	switch p {
	case "(", "[", "{":
		*depth++
	case ")", "]", "}":
		if *depth == 0 {
			return false
		}
		*depth--
	}
	return true
}

// field lexes the code of one string field (Python f-string {…}, JS
// template ${…}) between synthetic parentheses, one level deeper.
func (l *lexer) field(code func() (byte, error)) (byte, error) {
	l.nest++
	if l.nest > maxNest {
		return 0, errUnreadable
	}
	l.emit(tPunct, "(")
	end, err := code()
	l.emit(tPunct, ")")
	l.nest--
	return end, err
}

// tokenize splits src into tokens for lang, or fails when it cannot follow
// the source exactly.
func tokenize(lang Lang, src string) ([]token, error) {
	l := &lexer{src: src, js: lang == JavaScript, toks: make([]token, 0, len(src)/3+8)}
	var end byte
	var err error
	if l.js {
		l.shebang()
		end, err = l.jsCode(false)
	} else {
		end, err = l.pyCode(false)
	}
	if err != nil || end != 0 {
		return nil, errUnreadable
	}
	return l.toks, nil
}

// punctuation reads one punctuation token, keeping the bracket depth; a
// closing bracket with none open is unreadable.
func (l *lexer) punctuation(depth *int) error {
	p := l.punct()
	if !bracket(depth, p) {
		return errUnreadable
	}
	l.emit(tPunct, p)
	return nil
}
