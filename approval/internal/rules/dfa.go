package rules

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
	"sync"
)

// dfa answers whether an expression matches somewhere in an ASCII line,
// one table lookup a byte. Go's regexp package runs a rule's expression
// by backtracking, which tries the expression's alternatives again at
// every position of the line; with a table of hundreds of expressions
// each run also starts cold, and the expressions a command reaches were
// half of the time of a typical check. A dfa's states are the sets of
// the program's instructions that can be running at once, built the
// first time a line reaches them and kept, so a line already seen in
// shape costs its length in lookups.
//
// Only MatchString's question is answered (is there a match), which a
// set of threads answers exactly: no priorities, no captures. The text
// anchors ^ and $ are the only zero-width assertions it follows; an
// expression with any other (\b, multi-line anchors) gets no dfa. A
// line with a byte from 0x80 up is not answered either: the caller asks
// the regular expression, as for a dfa that holds too many states
// (maxDFAStates) until its states are dropped.
type dfa struct {
	prog *syntax.Prog

	mu sync.Mutex
	// states[0] is the state at the start of the text; next[b] of a
	// state is the index+1 of the state after byte b, 0 until known.
	states []*dfaState
	known  map[string]uint16 // a state's instructions, encoded: its index
	max    int               // states kept before they are dropped
	// again is what a match starting after the first byte begins with
	// (the closure of the program's start away from the text's start),
	// added to every state a byte leads to: the search is unanchored.
	again *dfaState
	// Scratch space of a closure, kept between builds: an instruction
	// is in the closure being built when seen holds gen for it.
	seen  []uint32
	gen   uint32
	stack []uint32
	key   []byte
}

type dfaState struct {
	// pcs are the instructions waiting on the next byte, and the $
	// assertions waiting on the end of the text, in order.
	pcs   []uint32
	match bool // a match ended at or before this position
	// atEnd: 1 if the text ending here gives a match, -1 if not, 0
	// until known.
	atEnd int8
	next  [128]uint16
}

// maxDFAStates bounds the states one expression keeps (each a few
// hundred bytes): lines of ordinary commands reach far fewer, and a
// line that reaches more is answered by the expression itself.
const maxDFAStates = 256

// newDFA compiles expr's program, as regexp.Compile does; nil when the
// expression holds an assertion other than ^ and $.
func newDFA(expr string) *dfa {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	return dfaOf(re.Simplify())
}

// dfaOf is newDFA for an expression already parsed and simplified.
func dfaOf(re *syntax.Regexp) *dfa {
	if !dfaFollows(re) {
		return nil
	}
	prog, err := syntax.Compile(re)
	if err != nil {
		return nil
	}
	d := &dfa{prog: prog, known: make(map[string]uint16), max: maxDFAStates, seen: make([]uint32, len(prog.Inst))}
	d.stack = append(d.stack[:0], uint32(prog.Start))
	d.again = d.closure(false, false)
	d.reset()
	return d
}

// dfaFollows reports whether a dfa follows every assertion of re (the
// text anchors ^ and $ alone), as newDFA finds in its program.
func dfaFollows(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return false
	}
	for _, sub := range re.Sub {
		if !dfaFollows(sub) {
			return false
		}
	}
	return true
}

// reset drops every state but the start's.
func (d *dfa) reset() {
	clear(d.known)
	d.states = d.states[:0]
	d.stack = append(d.stack[:0], uint32(d.prog.Start))
	d.intern(d.closure(true, false))
}

// matchString reports whether the expression matches somewhere in s;
// ok is false when the dfa cannot tell (a byte from 0x80 up, or too
// many states), and the caller must ask the regular expression.
func (d *dfa) matchString(s string) (matched, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s == "" {
		d.stack = append(d.stack[:0], uint32(d.prog.Start))
		return d.closure(true, true).match, true
	}
	st := d.states[0]
	for i := 0; i < len(s); i++ {
		if st.match {
			return true, true
		}
		c := s[i]
		if c >= 0x80 {
			return false, false
		}
		if n := st.next[c]; n != 0 {
			st = d.states[n-1]
			continue
		}
		n, ok := d.step(st, c)
		if !ok {
			d.reset()
			return false, false
		}
		st.next[c] = n
		st = d.states[n-1]
	}
	return st.match || d.endsHere(st), true
}

// step builds the state after st reads c: the threads that take c, and
// a match starting anew after it (the search is unanchored). It returns
// the state's index+1; ok is false when the dfa is full.
func (d *dfa) step(st *dfaState, c byte) (uint16, bool) {
	d.stack = d.stack[:0]
	for _, pc := range st.pcs {
		in := &d.prog.Inst[pc]
		if in.Op != syntax.InstEmptyWidth && takes(in, c) {
			d.stack = append(d.stack, in.Out)
		}
	}
	next := d.closure(false, false)
	for _, pc := range d.again.pcs {
		if d.seen[pc] != d.gen {
			next.pcs = append(next.pcs, pc)
		}
	}
	next.match = next.match || d.again.match
	i, ok := d.intern(next)
	return uint16(i + 1), ok
}

// endsHere reports whether the text ending after st's position (not its
// start) gives a match: a $ waiting in st holds there.
func (d *dfa) endsHere(st *dfaState) bool {
	if st.atEnd == 0 {
		d.stack = d.stack[:0]
		for _, pc := range st.pcs {
			if in := &d.prog.Inst[pc]; in.Op == syntax.InstEmptyWidth {
				d.stack = append(d.stack, in.Out)
			}
		}
		st.atEnd = -1
		if d.closure(false, true).match {
			st.atEnd = 1
		}
	}
	return st.atEnd > 0
}

// takes reports whether in consumes the ASCII byte c.
func takes(in *syntax.Inst, c byte) bool {
	switch in.Op {
	case syntax.InstRune1:
		return in.Rune[0] == rune(c)
	case syntax.InstRune:
		return in.MatchRune(rune(c))
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return c != '\n'
	}
	return false
}

// closure follows the instructions on d.stack through everything that
// consumes nothing, at a position where begin says whether the text
// starts and end whether it ends. The state it returns (not yet
// interned) holds the instructions that wait on a byte and, before the
// end, the $ that wait on it; match says a match was reached.
func (d *dfa) closure(begin, end bool) *dfaState {
	d.gen++
	if d.gen == 0 { // wrapped: no mark may look current
		clear(d.seen)
		d.gen = 1
	}
	st := &dfaState{}
	for len(d.stack) > 0 {
		pc := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		if d.seen[pc] == d.gen {
			continue
		}
		d.seen[pc] = d.gen
		in := &d.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			d.stack = append(d.stack, in.Arg, in.Out)
		case syntax.InstCapture, syntax.InstNop:
			d.stack = append(d.stack, in.Out)
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(in.Arg)
			switch {
			case op&syntax.EmptyBeginText != 0 && !begin:
			case op&syntax.EmptyEndText != 0 && !end:
				st.pcs = append(st.pcs, pc)
			default:
				d.stack = append(d.stack, in.Out)
			}
		case syntax.InstMatch:
			st.match = true
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			st.pcs = append(st.pcs, pc)
		}
	}
	return st
}

// intern returns the index of the state with st's instructions, adding
// st if none has them yet; ok is false when d holds its maximum already.
func (d *dfa) intern(st *dfaState) (int, bool) {
	slices.Sort(st.pcs)
	d.key = d.key[:0]
	if st.match { // a match and no match differ as states
		d.key = append(d.key, 1)
	} else {
		d.key = append(d.key, 0)
	}
	for _, pc := range st.pcs {
		d.key = binary.AppendUvarint(d.key, uint64(pc))
	}
	if i, ok := d.known[string(d.key)]; ok {
		return int(i), true
	}
	if len(d.states) >= d.max {
		return 0, false
	}
	d.states = append(d.states, st)
	d.known[string(d.key)] = uint16(len(d.states) - 1)
	return len(d.states) - 1, true
}
