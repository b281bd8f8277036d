package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ParsePlain builds the syntax tree of a command line made only of plain
// words ("git status", "go test ./...", "rm -rf node_modules"), the
// commonest input by far, without the parser: the tree is the one
// [syntax.Parser] builds, node for node (a test holds the two to each
// other), at a fraction of the cost. Anything else, and anything that
// might not be one simple command of literal words (quotes, expansions,
// operators, globs, comments, reserved words, assignments, declarations,
// several lines), reports false and goes to the parser.
//
// With b, the nodes come from b's blocks, kept from one check to the next
// (see [PlainBuf]); with nil, they are allocated.
func ParsePlain(src string, b *PlainBuf) (*syntax.File, bool) {
	// First pass: check every byte and count the words.
	n := 0
	for i := 0; i < len(src); {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		if i == len(src) {
			break
		}
		start := i
		for i < len(src) && src[i] != ' ' && src[i] != '\t' {
			c := src[i]
			if !plainByte(c) && (c != '=' || n == 0) {
				return nil, false
			}
			i++
		}
		if n == 0 && plainKeywords[src[start:i]] {
			return nil, false
		}
		n++
	}
	if n == 0 {
		return nil, false
	}
	// Second pass: two allocations for the words, one for the rest, or
	// none from b.
	nodes, args, t := b.get(n)
	k := 0
	for i := 0; i < len(src); {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		if i == len(src) {
			break
		}
		start := i
		for i < len(src) && src[i] != ' ' && src[i] != '\t' {
			i++
		}
		w := &nodes[k]
		w.lit = syntax.Lit{ValuePos: linePos(start), ValueEnd: linePos(i), Value: src[start:i]}
		w.part[0] = &w.lit
		w.word.Parts = w.part[:]
		args[k] = &w.word
		k++
	}
	t.call.Args = args
	t.stmt = syntax.Stmt{Cmd: &t.call, Position: args[0].Pos()}
	t.stmts[0] = &t.stmt
	t.file.Stmts = t.stmts[:]
	return &t.file, true
}

// plainWord holds the nodes of one plain word.
type plainWord struct {
	word syntax.Word
	part [1]syntax.WordPart
	lit  syntax.Lit
}

// PlainBuf holds the nodes of the plain trees of one check in blocks
// kept for the next check: a plain line is most lines, and its three
// allocations were a good part of a check's. Trees handed out in one
// check never share nodes; none outlives the check.
type PlainBuf struct {
	words []plainWord
	args  []*syntax.Word
	trees []plainTree
}

// Reset makes b's blocks free for a new check.
func (b *PlainBuf) Reset() {
	b.words, b.args, b.trees = b.words[:0], b.args[:0], b.trees[:0]
}

// get returns the nodes of n words and of a tree, from b when b is not
// nil. A block too small is replaced (the trees already handed out keep
// the old one).
func (b *PlainBuf) get(n int) ([]plainWord, []*syntax.Word, *plainTree) {
	if b == nil {
		return make([]plainWord, n), make([]*syntax.Word, n), &plainTree{}
	}
	if cap(b.words)-len(b.words) < n {
		b.words = make([]plainWord, 0, max(plainBlock, n))
	}
	if cap(b.args)-len(b.args) < n {
		b.args = make([]*syntax.Word, 0, max(plainBlock, n))
	}
	if len(b.trees) == cap(b.trees) {
		b.trees = make([]plainTree, 0, 16)
	}
	w, a := len(b.words), len(b.args)
	b.words, b.args, b.trees = b.words[:w+n], b.args[:a+n], b.trees[:len(b.trees)+1]
	t := &b.trees[len(b.trees)-1]
	*t = plainTree{}
	return b.words[w : w+n : w+n], b.args[a : a+n : a+n], t
}

// plainBlock is the smallest block of words a plainBuf allocates: enough
// for the words of most checks.
const plainBlock = 256

// plainTree holds the nodes of a plain command line but its words.
type plainTree struct {
	file  syntax.File
	stmts [1]*syntax.Stmt
	stmt  syntax.Stmt
	call  syntax.CallExpr
}

// linePos is the position of byte offset off on the first line.
func linePos(off int) syntax.Pos { return syntax.NewPos(uint(off), 1, uint(off)+1) }

// plainByte reports whether c can be part of a plain word anywhere; "=",
// which makes a first word an assignment, is plain only after it.
func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '_', '.', '/', ':', '@', '%', '+', ',', '-':
		return true
	}
	return false
}

// plainKeywords are the words that, first on a line, the parser reads as
// something other than a program name: bash's reserved words and the
// builtins it parses as clauses of their own.
var plainKeywords = setOf(`if then else elif fi case esac for select while until do done in function time coproc
let declare local export readonly typeset nameref`)

// setOf makes a set of the words in list.
func setOf(list string) map[string]bool {
	m := make(map[string]bool)
	for _, f := range strings.Fields(list) {
		m[f] = true
	}
	return m
}
