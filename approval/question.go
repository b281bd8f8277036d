package approval

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what a question shows, in bytes of escaped text.
const (
	// MaxQuestionCommand bounds the command a [Question] shows; the rest
	// is cut, and the question says how many bytes were.
	MaxQuestionCommand = 2048
	// maxQuestionReason bounds each reason and the list of rule ids.
	maxQuestionReason = 512
)

// Question returns the text that asks a human whether p's command may
// run: the one rendering every front end shows (the terminal prompt, an
// MCP elicitation), each adding only how to answer after it.
//
// The command is text from whoever asked to run it, so the question is
// built such that it cannot pass for runbox's own words:
//
//   - runbox's words come first: the backend, the rule ids, then each
//     reason on a line of its own;
//   - the command follows on one line of its own, starting with its first
//     byte and escaped: control characters (C0, DEL, C1), bidirectional
//     and other format characters (U+202E, U+2066…U+2069, zero-width
//     characters), non-ASCII spaces, characters a font draws as nothing,
//     stacked combining marks and bytes that are not UTF-8 are written as
//     \n, \r, \t, \xNN, \uNNNN or \UNNNNNNNN, so no newline, carriage
//     return or terminal escape of the command reaches the screen, and
//     no text can be reordered or hidden. A backslash of the command is
//     doubled where it would otherwise read as the start of such an
//     escape, so the escaped text reads back to exactly the command. In
//     a run of more than eight spaces the rest are \x20, so blanks cannot
//     push a command's end out of view;
//   - a command longer than [MaxQuestionCommand] escaped bytes is cut,
//     and the line after it says how many bytes were cut.
//
// Reasons and rule ids are escaped the same way. The text ends with a
// newline.
func Question(p Prompt) string {
	var b strings.Builder
	b.WriteString("runbox: approval needed to run a command")
	if p.Backend != "" {
		b.WriteString(" on ")
		writeBounded(&b, p.Backend, maxQuestionReason)
	}
	b.WriteString("\nrules: ")
	if len(p.Rules) == 0 {
		b.WriteString("(none)")
	}
	writeBounded(&b, strings.Join(p.Rules, ", "), maxQuestionReason)
	b.WriteByte('\n')
	for _, r := range p.Reasons {
		b.WriteString("  - ")
		writeBounded(&b, r, maxQuestionReason)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "command (%d bytes, control and invisible characters escaped as \\n, \\x1b, \\u202e …):\n  $ ", len(p.Command))
	shown, cut := escapeText(p.Command, MaxQuestionCommand)
	b.WriteString(shown)
	b.WriteByte('\n')
	if cut > 0 {
		fmt.Fprintf(&b, "  … (%d more bytes cut)\n", cut)
	}
	return b.String()
}

// writeBounded writes s escaped, cut to limit bytes with the cut said.
func writeBounded(b *strings.Builder, s string, limit int) {
	shown, cut := escapeText(s, limit)
	b.WriteString(shown)
	if cut > 0 {
		fmt.Fprintf(b, " … (%d more bytes cut)", cut)
	}
}

// maxSpaceRun is how many spaces in a row are shown as themselves.
const maxSpaceRun = 8

// escapeText returns s with every character that could hide or forge
// text escaped (see [Question]), at most limit bytes of it, and how many
// bytes of s were left out. It never cuts an escape or a character in
// two.
func escapeText(s string, limit int) (shown string, cut int) {
	var b strings.Builder
	b.Grow(min(len(s), limit))
	e := escaper{s: s}
	for i := 0; i < len(s); {
		piece, n := e.piece(i)
		if b.Len()+len(piece) > limit {
			return b.String(), len(s) - i
		}
		b.WriteString(piece)
		i += n
	}
	return b.String(), 0
}

// escaper writes s one character at a time, remembering what it has
// shown: runs of spaces and whether a combining mark may follow.
type escaper struct {
	s        string
	spaces   int  // spaces shown in a row so far
	afterLtr bool // the last thing shown was a letter as itself
}

// piece returns how the character at s[i:] is shown and its length in s.
func (e *escaper) piece(i int) (string, int) {
	r, n := utf8.DecodeRuneInString(e.s[i:])
	afterLtr := e.afterLtr
	e.afterLtr = false
	if r != ' ' {
		e.spaces = 0
	}
	switch {
	case r == utf8.RuneError && n == 1:
		return fmt.Sprintf(`\x%02x`, e.s[i]), 1
	case r == '\\':
		// Doubled only where what is shown next would make it read as
		// an escape. A backslash next is always shown starting with one;
		// anything else is looked at by an escaper of its own, in the
		// state this one leaves (no spaces, no letter), which does not
		// look further: a run of backslashes costs linear time.
		if i+1 < len(e.s) {
			if e.s[i+1] == '\\' {
				return `\\`, 1
			}
			next := escaper{s: e.s}
			if p, _ := next.piece(i + 1); strings.ContainsRune(`\nrtxuU`, rune(p[0])) {
				return `\\`, 1
			}
		}
		return `\`, 1
	case r == ' ':
		if e.spaces++; e.spaces > maxSpaceRun {
			return `\x20`, 1
		}
		return " ", 1
	case r == '\n':
		return `\n`, 1
	case r == '\r':
		return `\r`, 1
	case r == '\t':
		return `\t`, 1
	case r < utf8.RuneSelf && unicode.IsPrint(r):
		e.afterLtr = unicode.IsLetter(r)
		return e.s[i : i+n], n
	case r < utf8.RuneSelf:
		return fmt.Sprintf(`\x%02x`, r), n
	case !unicode.IsPrint(r) || invisible(r) || unicode.Is(unicode.M, r) && !afterLtr:
		if r > 0xffff {
			return fmt.Sprintf(`\U%08x`, r), n
		}
		return fmt.Sprintf(`\u%04x`, r), n
	}
	e.afterLtr = unicode.IsLetter(r)
	return e.s[i : i+n], n
}

// invisible reports whether r is a printable character that fonts draw
// as blank (Hangul fillers, the braille blank, Khmer inherent vowels) or
// that only changes how its neighbour is drawn (variation selectors, the
// combining grapheme joiner).
func invisible(r rune) bool {
	switch r {
	case 0x115f, 0x1160, 0x3164, 0xffa0, 0x2800, 0x17b4, 0x17b5, 0x034f, 0x180b, 0x180c, 0x180d, 0x180f:
		return true
	}
	return 0xfe00 <= r && r <= 0xfe0f || 0xe0100 <= r && r <= 0xe01ef
}
