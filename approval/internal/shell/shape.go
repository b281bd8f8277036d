package shell

import "strings"

// Shape is what a cheap scan of shell text finds before the parser runs.
type Shape struct {
	// Depth is how deeply brackets nest: ( $( <( $(( { ${ and
	// backquotes, with double quotes as a level of their own.
	Depth int
	// Links counts pipeline and list operators (| |& && ||): a chain of
	// them nests in the syntax tree, one level per link.
	Links int
}

// ScanShape measures shell text without parsing it. What single quotes,
// $'…' strings, backslashes, comments and here-document bodies hold is not
// counted. It reads each byte once, so it is cheap enough to run before
// the parser, whose work and recursion grow with both measures.
//
// It is an estimate, not a parse: unbalanced text may count as open, and
// a level may close early where the scan misreads the text. The walker
// measures statement nesting exactly as it goes, so an estimate that is
// low only moves the refusal from here to there.
func ScanShape(s string) Shape {
	var sh Shape
	var stack []byte // open levels: ( { " ` and c for case … esac
	push := func(k byte) {
		stack = append(stack, k)
		sh.Depth = max(sh.Depth, len(stack))
	}
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	pop := func(k byte) {
		if top() == k {
			stack = stack[:len(stack)-1]
		}
	}
	var heredocs []heredocEnd // delimiters whose bodies start at the next line
	// wordStart: the next byte starts a word; cmdStart: that word is in
	// command position, where case and esac are keywords.
	wordStart, cmdStart, dollar := true, true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		wasDollar := dollar
		dollar = false
		if c == '\\' {
			i++
			wordStart, cmdStart = false, false
			continue
		}
		if top() == '"' {
			switch {
			case c == '"':
				pop('"')
			case c == '`':
				push('`')
			case c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
				i++
				push(s[i])
			}
			continue
		}
		if wordStart && isNameByte(c) {
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			word := s[i:j]
			keyword := cmdStart && (j == len(s) || strings.IndexByte(" \t\n;&|()", s[j]) >= 0)
			switch {
			case keyword && word == "case":
				push('c') // its patterns' ")" close nothing
			case keyword && word == "esac":
				pop('c')
			}
			cmdStart = keyword && (word == "then" || word == "do" || word == "else" || word == "elif" || word == "time")
			wordStart = false
			i = j - 1
			continue
		}
		switch c {
		case '\'':
			i = skipSingleQuoted(s, i+1, wasDollar)
		case '"':
			push('"')
		case '`':
			if top() == '`' {
				pop('`')
			} else {
				push('`')
			}
		case '(', '{':
			push(c)
		case ')':
			pop('(')
		case '}':
			pop('{')
		case '#':
			if wordStart {
				for i+1 < len(s) && s[i+1] != '\n' {
					i++
				}
			}
		case '$':
			dollar = true
		case '|':
			if i == 0 || s[i-1] != '>' {
				sh.Links++
			}
			if i+1 < len(s) && (s[i+1] == '|' || s[i+1] == '&') {
				i++
			}
		case '&':
			if i+1 < len(s) && s[i+1] == '&' {
				sh.Links++
				i++
			}
		case '<':
			if i+2 < len(s) && s[i+1] == '<' && s[i+2] != '<' {
				var h heredocEnd
				h, i = heredocDelimiter(s, i+2)
				heredocs = append(heredocs, h)
			} else if i+1 < len(s) && s[i+1] == '<' {
				i += 2 // a here-string
			}
		case '\n':
			for _, h := range heredocs {
				i = skipHeredoc(s, i+1, h)
			}
			heredocs = heredocs[:0]
		}
		switch c {
		case ' ', '\t':
			wordStart = true
		case '\n', ';', '&', '|', '(', '{', '`':
			wordStart, cmdStart = true, true
		case ')', '<', '>':
			wordStart = true
		default:
			wordStart, cmdStart = false, false
		}
	}
	return sh
}

// heredocEnd is the line that ends a here-document body.
type heredocEnd struct {
	word      string
	stripTabs bool // <<-: leading tabs of the body's lines are ignored
}

// heredocDelimiter reads the delimiter after "<<" at s[i:] (an optional
// "-", blanks, then one word whose quotes are removed) and returns it with
// the index of its last byte.
func heredocDelimiter(s string, i int) (heredocEnd, int) {
	var h heredocEnd
	if i < len(s) && s[i] == '-' {
		h.stripTabs = true
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	var b []byte
	for ; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(" \t\n;&|()<>", c) >= 0 {
			break
		}
		switch c {
		case '\'', '"':
			continue
		case '\\':
			if i+1 < len(s) {
				i++
				c = s[i]
			}
		}
		b = append(b, c)
	}
	h.word = string(b)
	return h, i - 1
}

// skipHeredoc returns the index of the newline that ends the line holding
// h's delimiter, the body starting at s[i:]; the end of s when no line
// does.
func skipHeredoc(s string, i int, h heredocEnd) int {
	for i < len(s) {
		end := strings.IndexByte(s[i:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += i
		}
		l := s[i:end]
		if h.stripTabs {
			l = strings.TrimLeft(l, "\t")
		}
		if l == h.word {
			return end
		}
		i = end + 1
	}
	return len(s)
}

// skipSingleQuoted returns the index of the quote that closes a '…'
// string starting at i (or a $'…' string, where a backslash escapes the
// next byte), or the last index when it does not close.
func skipSingleQuoted(s string, i int, ansiC bool) int {
	for ; i < len(s); i++ {
		switch {
		case ansiC && s[i] == '\\':
			i++
		case s[i] == '\'':
			return i
		}
	}
	return len(s) - 1
}
