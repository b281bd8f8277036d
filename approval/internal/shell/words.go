package shell

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Arg is one shell word after quote removal.
type Arg struct {
	Text string
	Word *syntax.Word // nil for words split from a string
	Dyn  bool         // holds an expansion whose value is unknown here
	Glob bool         // holds an unquoted glob character
}

// IsOpt reports whether a reads as an option: a dash and more.
func (a Arg) IsOpt() bool { return len(a.Text) > 1 && a.Text[0] == '-' }

// Bounds on brace expansion: a word's expressions are expanded only
// within them (see [Words]).
const (
	maxBraceWords = 64 // words one brace expression may expand to
	// MaxBraceExprs bounds the brace expressions in one word: expanding
	// {a,b}{a,b}… costs the square of their number.
	MaxBraceExprs = 16
)

// Words turns shell words into args, expanding brace expressions the way
// bash would (a bounded number of words only). A word with more than
// maxBraceExprs brace expressions is kept as written and reported in
// braces, the largest such count, so the caller can refuse to judge it.
func Words(ws []*syntax.Word) (out []Arg, braces int) {
	return WordsInto(make([]Arg, 0, len(ws)), ws)
}

// WordsInto is words appending to out.
func WordsInto(out []Arg, ws []*syntax.Word) (_ []Arg, braces int) {
	for _, w := range ws {
		if hasBrace(w) {
			var n int
			out, n = appendBraces(out, w)
			braces = max(braces, n)
			continue
		}
		out = append(out, WordArg(w))
	}
	return out, braces
}

// appendBraces appends the words brace expression w expands to (w itself
// when it expands to none, or has too many expressions: their count is
// returned then, 0 otherwise). Apart from words, so that the common word
// without braces pays nothing for the expansion's iterator.
func appendBraces(out []Arg, w *syntax.Word) ([]Arg, int) {
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return append(out, WordArg(w)), 0
	}
	if n := countBraces(cp.Parts); n > MaxBraceExprs {
		return append(out, WordArg(w)), n
	}
	n := 0
	for ew, err := range expand.BracesSeq(nil, cp) {
		if err != nil || n >= maxBraceWords {
			break
		}
		out = append(out, WordArg(ew))
		n++
	}
	if n == 0 {
		out = append(out, WordArg(w))
	}
	return out, 0
}

// countBraces counts the brace expressions in parts, nested ones included.
func countBraces(parts []syntax.WordPart) int {
	n := 0
	for _, p := range parts {
		if b, ok := p.(*syntax.BraceExp); ok {
			n++
			for _, e := range b.Elems {
				n += countBraces(e.Parts)
			}
		}
	}
	return n
}

func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.IndexByte(l.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// WordArg is the Arg of one shell word: its value after quote removal,
// with unknown expansions written as placeholders ([wordParts]).
func WordArg(w *syntax.Word) Arg {
	a := Arg{Word: w}
	// Most words are one piece of plain or single-quoted text, whose
	// value is that text (or a part of it): no copy is needed.
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			a.Text, a.Glob = UnescapeBare(p.Value), isGlob(p.Value)
			return a
		case *syntax.SglQuoted:
			if !p.Dollar {
				a.Text = p.Value
				return a
			}
		}
	}
	var b strings.Builder
	wordParts(&b, w.Parts, false, &a)
	a.Text = b.String()
	return a
}

// wordParts writes the value of parts as the shell would see it after
// quote removal. Expansions whose value is unknown are written as a
// placeholder that parses back into the same kind of expansion.
func wordParts(b *strings.Builder, parts []syntax.WordPart, quoted bool, a *Arg) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if quoted {
				b.WriteString(unescapeDouble(p.Value))
			} else {
				if isGlob(p.Value) {
					a.Glob = true
				}
				b.WriteString(UnescapeBare(p.Value))
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(DecodeANSIC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			wordParts(b, p.Parts, true, a)
		case *syntax.ParamExp:
			a.Dyn = true
			name := ""
			if p.Param != nil {
				name = p.Param.Value
			}
			b.WriteString("$" + name)
		case *syntax.CmdSubst:
			a.Dyn = true
			b.WriteString("$(…)")
		case *syntax.ProcSubst:
			a.Dyn = true
			b.WriteString("<(…)")
		case *syntax.ArithmExp:
			a.Dyn = true
			b.WriteString("$((0))")
		case *syntax.ExtGlob:
			a.Glob = true
			b.WriteString(p.Op.String() + p.Pattern.Value + ")")
		case *syntax.BraceExp:
			a.Glob = true
			b.WriteString("{…}")
		}
	}
}

// isGlob reports whether an unquoted literal holds a glob: "*", "?" or a
// bracket expression ("[" alone, the test command, is not one).
func isGlob(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.IndexByte(s[i+1:], ']') >= 0
}

// UnescapeBare removes the backslashes of unquoted text.
func UnescapeBare(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that escape inside double quotes.
func unescapeDouble(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// DecodeANSIC decodes the escapes of a $'…' string (and of printf formats
// and echo -e, which use the same ones).
func DecodeANSIC(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U', '0', '1', '2', '3', '4', '5', '6', '7':
			base, max := 16, 2
			start := i + 1
			switch e {
			case 'u':
				max = 4
			case 'U':
				max = 8
			case 'x':
			default:
				base, max, start = 8, 3, i
			}
			j := start
			for j < len(s) && j-start < max && isDigitIn(s[j], base) {
				j++
			}
			if j == start {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[start:j], base, 32)
			if e == 'u' || e == 'U' {
				if utf8.ValidRune(rune(n)) {
					b.WriteRune(rune(n))
				}
			} else {
				b.WriteByte(byte(n))
			}
			i = j - 1
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isDigitIn(c byte, base int) bool {
	if base == 8 {
		return c >= '0' && c <= '7'
	}
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// CanonicalName is the name rules see: the base name, in lower case, with
// ".exe" removed ("/usr/bin/rm" and "BUN.EXE" become "rm" and "bun").
func CanonicalName(s string) string {
	if i := strings.LastIndexAny(s, `/\`); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	s = strings.ToLower(s)
	return strings.TrimSuffix(s, ".exe")
}

// CanonicalPath gives a path-like argument one spelling, so rules can match
// it with simple patterns: the home directory in any spelling (~, ~/,
// $HOME, ${HOME}, "/home/$USER") is "~", paths are cleaned ("/./" is "/"),
// a trailing "/*" is dropped ("/home/*" is "/home"), and a glob in the
// first component stands for the root ("/e*" could be "/etc").
func CanonicalPath(s string) (string, bool) {
	const homeMark = "/\x00home"
	var p string
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		p = homeMark + s[1:]
	case strings.HasPrefix(s, "~") && !strings.ContainsAny(s[1:2], "+-"):
		// ~user: another user's home directory.
		if i := strings.IndexByte(s, '/'); i > 0 {
			p = homeMark + s[i:]
		} else {
			p = homeMark
		}
	case s == "$HOME" || strings.HasPrefix(s, "$HOME/"):
		p = homeMark + s[5:]
	case strings.HasPrefix(s, "/"):
		p = s
	default:
		return s, false
	}
	p = path.Clean(p)
	for len(p) > 2 && strings.HasSuffix(p, "/*") {
		p = path.Clean(p[:len(p)-2])
	}
	switch {
	case p == homeMark:
		return "~", true
	case strings.HasPrefix(p, homeMark+"/"):
		return "~" + p[len(homeMark):], true
	}
	if first, _, _ := strings.Cut(p[1:], "/"); strings.ContainsAny(first, "*?[") {
		return "/", true
	}
	for _, homes := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(p, homes); ok && strings.HasPrefix(rest, "$") && !strings.Contains(rest, "/") {
			return "~", true
		}
	}
	return p, true
}

// Line joins args for rule patterns: one space between args, path-like
// args in canonical form, and, when quote is set, args holding white space
// single-quoted so that one argument never reads as several. (Facts, whose
// arguments the walker builds, are not quoted: an SQL statement is one
// argument with spaces.)
func Line(args []string, quote bool) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	// One allocation for the line: canonical forms are rarely longer
	// than the words written, and quoting adds two bytes.
	n := len(args)
	for _, s := range args {
		n += len(s) + 2
	}
	b.Grow(n)
	for i, s := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if c, ok := CanonicalPath(s); ok {
			s = c
		}
		if quote && strings.ContainsAny(s, " \t\n") {
			b.WriteByte('\'')
			b.WriteString(strings.NewReplacer("\n", " ", "\t", " ").Replace(s))
			b.WriteByte('\'')
			continue
		}
		b.WriteString(s)
	}
	return b.String()
}

// Texts returns the texts of args.
func Texts(args []Arg) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.Text
	}
	return out
}

// OptSpec describes the options of a wrapper or tool: which take a value.
// Short options are listed without the dash ("u"), long ones with both
// dashes ("--user").
type OptSpec struct {
	Short string   // short options that take a value
	Long  []string // long options that take a value (also accepted with =)
}

// SplitOpts consumes the leading options of args. Clusters of short
// options are expanded ("-nS" gives "-n", "-S"); a value stays right after
// its option. It stops at the first operand, or after "--".
func SplitOpts(args []Arg, spec OptSpec) (opts []string, rest []Arg) {
	i := 0
	for i < len(args) {
		t := args[i].Text
		if t == "--" {
			return opts, args[i+1:]
		}
		if !args[i].IsOpt() {
			break
		}
		i++
		if strings.HasPrefix(t, "--") {
			name, _, hasValue := strings.Cut(t, "=")
			opts = append(opts, t)
			if !hasValue && slices.Contains(spec.Long, name) && i < len(args) {
				opts = append(opts, args[i].Text)
				i++
			}
			continue
		}
		for j := 1; j < len(t); j++ {
			c := t[j]
			opts = append(opts, "-"+string(c))
			if strings.IndexByte(spec.Short, c) >= 0 {
				if j+1 < len(t) {
					opts = append(opts, t[j+1:])
				} else if i < len(args) {
					opts = append(opts, args[i].Text)
					i++
				}
				break
			}
		}
	}
	return opts, args[i:]
}

// OptValue returns the value of the first of names in expanded opts.
func OptValue(opts []string, names ...string) (string, bool) {
	for i, o := range opts {
		for _, n := range names {
			if o == n && i+1 < len(opts) {
				return opts[i+1], true
			}
			if strings.HasPrefix(n, "--") && strings.HasPrefix(o, n+"=") {
				return o[len(n)+1:], true
			}
		}
	}
	return "", false
}

// HasOpt reports whether one of names is among expanded opts.
func HasOpt(opts []string, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o) {
			return true
		}
	}
	return false
}

// IsAssign reports whether s looks like NAME=value.
func IsAssign(s string) bool {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		if !isNameByte(s[j]) {
			return false
		}
	}
	return s[0] < '0' || s[0] > '9'
}
