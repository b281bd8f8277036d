package walk

import (
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// Bounds on resolving the paths a command writes. Past them a path is
// not known, and a write to it asks when protected paths are configured:
// a bound the command chose to pass must not hide the one value that
// mattered.
const (
	maxPathValues = 64   // values one path may resolve to
	maxVarValues  = 64   // assignments to one variable
	maxNearCwds   = 64   // directories a command may be in that are, hold or are under a protected path
	maxOtherCwds  = 16   // other directories it may be in, and unknown ones
	maxCdWords    = 4096 // cd and pushd in one command (each is a command too)
	maxAliases    = 64   // links to protected paths made by one command
	maxVarDepth   = 64   // variables defined through variables
)

// unknownMark stands for a part of a path the gate cannot know; what
// follows it is a known tail. overflowMark stands for a path past the
// bounds above.
const (
	unknownMark  = "\x00"
	overflowMark = "\x01"
)

// Guard follows, through one check, what the gate needs to see writes to
// protected paths: the variables the command assigns, the directories it
// may be in, and links it makes to protected paths. Its sets are unions
// over the whole command, so the order of loops and functions cannot
// hide a write: every value a variable may hold and every directory a cd
// names are considered.
type Guard struct {
	prot      *Protector
	paths     []guarded // the protected paths and links made to them
	vars      map[string][]*syntax.Word
	overflow  map[string]bool     // variables assigned more than maxVarValues times
	cache     map[string][]string // resolved variables; reset when vars grow
	resolving map[string]bool     // variables being resolved, to stop cycles
	cdWords   []*syntax.Word      // targets of literal cd and pushd; nil for a bare cd
	cdDone    int                 // cdWords resolved so far
	// The directories the command may be in: those that are, hold or
	// are under a protected path (kept however many), and the others
	// (kept up to maxOtherCwds, which only paths with ".." need), and
	// whether some are unknown.
	cwdsNear, cwdsFar []pathValue
	cwdTails          []pathValue // unknown directories, by their known tails
	cwdSeen           map[string]bool
	cwdOverflow       bool // more directories than the bounds: relative paths are not known
	// dir and dirParts are the last check's directory, split: the next
	// check is most often in the same one.
	dir      string
	dirProt  *Protector
	dirParts []string
	dirKey   string // dir as a cwdSeen key
	dirNear  bool   // dir is, holds or is under one of dirProt's paths
	// collectFn is collectNode bound to this guard, kept with it.
	collectFn func(syntax.Node) bool
	// allCwds makes relative paths resolve in every directory the
	// command may be in, not only those near a protected path: a link
	// made anywhere may become one ([Analyzer.linkValues]).
	allCwds bool
}

// pathValue is one value a path may have: resolved to components with
// the root first, or, when known is false, only the known components at
// its end. overflow marks a path past the bounds of resolution.
type pathValue struct {
	parts    []string
	known    bool
	overflow bool
}

func newGuard(prot *Protector, dir string) *Guard {
	if prot == nil {
		return nil
	}
	g := &Guard{
		vars:      make(map[string][]*syntax.Word),
		overflow:  make(map[string]bool),
		cache:     make(map[string][]string),
		resolving: make(map[string]bool),
		cwdSeen:   make(map[string]bool),
	}
	g.start(prot, dir)
	return g
}

// reuse readies g, a guard of a check that has ended, for the next check
// (nil: a new one): its maps and buffers are kept, emptied, because
// making them anew cost more than a short command costs to analyse.
func (g *Guard) reuse(prot *Protector, dir string) *Guard {
	if prot == nil {
		return nil
	}
	if g == nil || len(g.vars)+len(g.cache)+len(g.cwdSeen) > maxKept {
		return newGuard(prot, dir)
	}
	clear(g.vars)
	clear(g.overflow)
	clear(g.cache)
	clear(g.resolving)
	clear(g.cwdSeen)
	clear(g.cdWords) // let the last command's syntax tree go
	*g = Guard{
		vars: g.vars, overflow: g.overflow, cache: g.cache, resolving: g.resolving, cwdSeen: g.cwdSeen,
		paths:    g.paths[:0],
		cwdsNear: g.cwdsNear[:0], cwdsFar: g.cwdsFar[:0], cwdTails: g.cwdTails[:0],
		dir: g.dir, dirProt: g.dirProt, dirParts: g.dirParts, dirKey: g.dirKey, dirNear: g.dirNear,
		collectFn: g.collectFn,
	}
	g.start(prot, dir)
	return g
}

// start begins a check of a command run in dir.
func (g *Guard) start(prot *Protector, dir string) {
	g.prot = prot
	g.paths = append(g.paths, prot.paths...)
	if !path.IsAbs(dir) {
		g.addCwd(pathValue{}) // unknown, with no known tail
		return
	}
	if dir != g.dir || prot != g.dirProt || g.dirParts == nil {
		// Clipped: a path built on it appends to a copy, never to this.
		g.dir, g.dirProt, g.dirParts = dir, prot, slices.Clip(SplitPath(path.Clean(dir)))
		d := pathValue{parts: g.dirParts, known: true}
		g.dirKey, g.dirNear = d.String(), g.near(d.parts)
	}
	// What addCwd does with the first directory, known from the last
	// check in the same one.
	d := pathValue{parts: g.dirParts, known: true}
	g.cwdSeen[g.dirKey] = true
	if g.dirNear {
		g.cwdsNear = append(g.cwdsNear, d)
	} else {
		g.cwdsFar = append(g.cwdsFar, d)
	}
}

// addCwd adds a directory the command may be in.
func (g *Guard) addCwd(d pathValue) {
	key := d.String()
	if g.cwdSeen[key] {
		return
	}
	g.cwdSeen[key] = true
	switch {
	case d.overflow:
		g.cwdOverflow = true
	case !d.known && len(g.cwdTails) < maxOtherCwds:
		g.cwdTails = append(g.cwdTails, d)
	case !d.known:
		g.cwdOverflow = true
	case g.near(d.parts) && len(g.cwdsNear) < maxNearCwds:
		g.cwdsNear = append(g.cwdsNear, d)
	case g.near(d.parts):
		g.cwdOverflow = true
	case len(g.cwdsFar) < maxOtherCwds:
		g.cwdsFar = append(g.cwdsFar, d)
	default:
		g.addCwd(pathValue{}) // too many to follow: somewhere unknown
	}
}

// near reports whether parts is, holds or is under a protected path.
func (g *Guard) near(parts []string) bool {
	for _, p := range g.paths {
		n := min(len(parts), len(p.parts))
		same := true
		for i := range n {
			if !ComponentMatch(parts[i], p.parts[i]) {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// collect records, before a script is walked, the variables it assigns
// and the directories it changes to. src is the script's text: one with
// none of what collectNode looks for is not walked a second time.
func (a *Analyzer) collect(f *syntax.File, src string) {
	g := a.guard
	if g == nil || !mayCollect(src) {
		return
	}
	if g.collectFn == nil {
		g.collectFn = g.collectNode // made once: a method value is an allocation
	}
	syntax.Walk(f, g.collectFn)
}

// mayCollect reports whether src can hold what collectNode records: an
// assignment with a value has its '=', a for or select loop its keyword,
// a directory change its command's name, all as literal text (a quoted
// keyword is no keyword, and collectNode takes only a literal cd) unless
// a line continuation splits them (c\<newline>d is cd, and the parser
// takes a carriage return before that newline too).
func mayCollect(src string) bool {
	return strings.Contains(src, "=") || strings.Contains(src, "cd") || strings.Contains(src, "pushd") ||
		strings.Contains(src, "for") || strings.Contains(src, "select") ||
		strings.Contains(src, "\\\n") || strings.Contains(src, "\\\r")
}

// collectNode is collect's visit of one node.
func (g *Guard) collectNode(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Assign:
		if n.Name == nil {
			return true
		}
		g.setVar(n.Name.Value, n.Value)
		if n.Array != nil {
			for _, e := range n.Array.Elems {
				g.setVar(n.Name.Value, e.Value)
			}
		}
	case *syntax.WordIter:
		if n.Name != nil {
			for _, w := range n.Items {
				g.setVar(n.Name.Value, w)
			}
		}
	case *syntax.CallExpr:
		if len(n.Args) == 0 {
			return true
		}
		if name := n.Args[0].Lit(); name == "cd" || name == "pushd" {
			var target *syntax.Word
			for _, w := range n.Args[1:] {
				if t := w.Lit(); t == "" || !strings.HasPrefix(t, "-") || t == "-" {
					target = w
					break
				}
			}
			if len(g.cdWords) < maxCdWords {
				g.cdWords = append(g.cdWords, target)
			} else {
				g.addCwd(pathValue{})
			}
		}
	}
	return true
}

// setVar records a value variable name may hold.
func (g *Guard) setVar(name string, w *syntax.Word) {
	if w == nil {
		return
	}
	if len(g.vars[name]) >= maxVarValues {
		g.overflow[name] = true
	} else {
		g.vars[name] = append(g.vars[name], w)
	}
	clear(g.cache)
}

// resolveCwds resolves the cd targets collected so far into the
// directories the command may be in.
func (a *Analyzer) resolveCwds() {
	g := a.guard
	for g.cdDone < len(g.cdWords) {
		// A relative cd is resolved against the directories known before
		// it; the count moves first, so resolving it does not come back here.
		w := g.cdWords[g.cdDone]
		g.cdDone++
		var vals []pathValue
		switch {
		case w == nil:
			vals = []pathValue{a.homeValue()}
		case w.Lit() == "-":
			vals = []pathValue{{}}
		default:
			vals = a.pathValues(w, "")
		}
		for _, v := range vals {
			g.addCwd(v)
		}
	}
}

// dirsFor returns the directories a relative path may be relative to:
// all of them when it climbs with "..", else only those that are, hold
// or are under a protected path, and the unknown ones.
func (a *Analyzer) dirsFor(rel string) []pathValue {
	a.resolveCwds()
	g := a.guard
	out := append(slices.Clone(g.cwdsNear), g.cwdTails...)
	if g.allCwds || slices.Contains(strings.Split(rel, "/"), "..") {
		out = append(out, g.cwdsFar...)
	}
	if g.cwdOverflow {
		out = append(out, pathValue{overflow: true})
	}
	return out
}

func (a *Analyzer) homeValue() pathValue {
	if h := a.guard.prot.home; h != nil {
		return pathValue{parts: h, known: true}
	}
	return pathValue{parts: []string{"~"}, known: true}
}

func (a *Analyzer) homeString() string {
	if h := a.guard.prot.home; h != nil {
		return "/" + strings.Join(h[1:], "/")
	}
	return "~"
}

// pathValues resolves a path a command names, given as a shell word or,
// when w is nil, as text (with $NAME placeholders for what is unknown).
func (a *Analyzer) pathValues(w *syntax.Word, text string) []pathValue {
	var strs []string
	switch {
	case w != nil:
		strs = a.wordStrings(w.Parts, true, 0)
	case text == "~" || strings.HasPrefix(text, "~/"):
		strs = []string{a.homeString() + textWithUnknowns(text[1:])}
	default:
		strs = []string{textWithUnknowns(text)}
	}
	var out []pathValue
	for _, s := range strs {
		out = append(out, a.stringValues(s)...)
	}
	return out
}

// textWithUnknowns marks the expansions in text (written as $NAME, $(…)
// or `…` by wordParts) as unknown.
func textWithUnknowns(text string) string {
	if i := strings.LastIndexAny(text, "$`"); i >= 0 {
		rest := text[i:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return text[:i] + unknownMark + rest[j:]
		}
		return text[:i] + unknownMark
	}
	return text
}

// stringValues turns one resolved string into path values: absolute,
// under the home directory, relative to each directory the command may
// be in, or, past an unknown part, its known tail.
func (a *Analyzer) stringValues(s string) []pathValue {
	if s == "" {
		return nil
	}
	if strings.Contains(s, overflowMark) {
		return []pathValue{{overflow: true}}
	}
	if i := strings.LastIndex(s, unknownMark); i >= 0 {
		return []pathValue{{parts: tailParts(s[i+len(unknownMark):])}}
	}
	switch {
	case strings.HasPrefix(s, "/"):
		return []pathValue{{parts: SplitPath(path.Clean(s)), known: true}}
	case s == "~" || strings.HasPrefix(s, "~/"):
		// Under a home directory the gate does not know: it may be any
		// protected path's, so the tail is judged too.
		return []pathValue{pathValue{parts: []string{"~"}, known: true}.join(s[1:]), {parts: tailParts(s[1:])}}
	}
	var out []pathValue
	for _, d := range a.dirsFor(s) {
		out = append(out, d.join(s))
	}
	return out
}

// join returns the path rel names relative to v.
func (v pathValue) join(rel string) pathValue {
	if v.overflow {
		return v
	}
	if !v.known {
		return pathValue{parts: tailParts(strings.Join(v.parts, "/") + "/" + rel)}
	}
	// Cleaning under "/" keeps ".." from climbing past the root, as the
	// kernel does, and for a "~" root the shell would too.
	clean := path.Clean("/" + strings.Join(v.parts[1:], "/") + "/" + rel)
	if v.parts[0] == "/" {
		return pathValue{parts: SplitPath(clean), known: true}
	}
	return pathValue{parts: SplitPath(v.parts[0] + strings.TrimSuffix(clean, "/")), known: true}
}

// tailParts splits the known end of a path into components: empty and
// "." components dropped, ".." taking the one before it back, or, at the
// start, climbing into the unknown part.
func tailParts(s string) []string {
	var parts []string
	for _, c := range strings.Split(s, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, c)
		}
	}
	return parts
}

// wordStrings returns the strings word parts may expand to, with
// unknownMark where a value is unknown; tilde says a leading ~ expands.
func (a *Analyzer) wordStrings(parts []syntax.WordPart, tilde bool, depth int) []string {
	out := []string{""}
	for i, p := range parts {
		alts := a.partStrings(p, tilde && i == 0, depth)
		next := make([]string, 0, len(out)*len(alts))
		for _, o := range out {
			for _, s := range alts {
				next = append(next, o+s)
			}
		}
		if len(next) > maxPathValues {
			return []string{overflowMark}
		}
		out = next
	}
	return out
}

func (a *Analyzer) partStrings(p syntax.WordPart, tilde bool, depth int) []string {
	switch p := p.(type) {
	case *syntax.Lit:
		v := p.Value
		if tilde && strings.HasPrefix(v, "~") {
			prefix, rest, _ := strings.Cut(v, "/")
			if rest != "" || strings.HasSuffix(v, "/") {
				rest = "/" + rest
			}
			if prefix != "~" {
				return []string{unknownMark + shell.UnescapeBare(rest)} // ~user, ~+, ~-
			}
			return []string{a.homeString() + shell.UnescapeBare(rest)}
		}
		return []string{shell.UnescapeBare(v)}
	case *syntax.SglQuoted:
		if p.Dollar {
			return []string{shell.DecodeANSIC(p.Value)}
		}
		return []string{p.Value}
	case *syntax.DblQuoted:
		return a.wordStrings(p.Parts, false, depth)
	case *syntax.ParamExp:
		return a.paramStrings(p, depth)
	case *syntax.CmdSubst:
		// $(echo PATH) is PATH.
		if len(p.Stmts) == 1 {
			if in := a.info(p.Stmts[0], a.src, nil); in.printsOK && in.final != nil && in.final.Name == "echo" {
				s := strings.TrimRight(in.prints, "\n")
				if s == "~" || strings.HasPrefix(s, "~/") {
					s = a.homeString() + s[1:]
				}
				return []string{s}
			}
		}
	}
	return []string{unknownMark}
}

// paramStrings resolves $NAME and ${NAME…} from the command's own
// assignments and Protection.Env; default values (${X:-d}) count when
// the variable may be unset or empty.
func (a *Analyzer) paramStrings(p *syntax.ParamExp, depth int) []string {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || len(p.Modifiers) > 0 || p.NestedParam != nil {
		return []string{unknownMark}
	}
	if depth >= maxVarDepth {
		return []string{overflowMark}
	}
	vals, mayBeEmpty := a.varStrings(p.Param.Value, depth)
	if p.Exp == nil {
		return vals
	}
	var word []string
	if p.Exp.Word != nil {
		word = a.wordStrings(p.Exp.Word.Parts, true, depth+1)
	} else {
		word = []string{""}
	}
	switch p.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		if mayBeEmpty {
			return appendBounded(vals, word)
		}
		return vals
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		return appendBounded([]string{""}, word)
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return vals
	}
	return []string{unknownMark}
}

// varStrings returns the values a variable may hold, and whether it may
// be unset or empty where it is used. Values are remembered per name, so
// variables defined through variables resolve in linear time.
func (a *Analyzer) varStrings(name string, depth int) (vals []string, mayBeEmpty bool) {
	g := a.guard
	env, inEnv := g.prot.env[name]
	mayBeEmpty = env == "" && name != "HOME" && name != "PWD"
	if v, ok := g.cache[name]; ok {
		return v, mayBeEmpty
	}
	if g.overflow[name] {
		return []string{overflowMark}, mayBeEmpty
	}
	if g.resolving[name] {
		// Defined through itself (f=$f/x): its earlier value is not known.
		return []string{unknownMark}, mayBeEmpty
	}
	g.resolving[name] = true
	defer delete(g.resolving, name)
	var out []string
	switch {
	case name == "HOME":
		out = append(out, a.homeString())
	case name == "PWD":
		a.resolveCwds()
		for _, d := range slices.Concat(g.cwdsNear, g.cwdsFar, g.cwdTails) {
			out = appendBounded(out, []string{d.String()})
		}
	case env != "":
		out = append(out, env)
	case !inEnv && len(g.vars[name]) == 0:
		out = append(out, unknownMark)
	}
	for _, w := range g.vars[name] {
		out = appendBounded(out, a.wordStrings(w.Parts, true, depth+1))
	}
	if len(out) == 0 {
		out = []string{""}
	}
	if !slices.Contains(out, overflowMark) || depth == 0 {
		g.cache[name] = out
	}
	return out, mayBeEmpty
}

// String writes v as a path: rooted, or its known tail after an unknown
// part.
func (v pathValue) String() string {
	if v.overflow {
		return overflowMark
	}
	if !v.known {
		return unknownMark + "/" + strings.Join(v.parts, "/")
	}
	if len(v.parts) == 1 {
		return v.parts[0]
	}
	root := v.parts[0]
	if root != "/" {
		root += "/"
	}
	return root + strings.Join(v.parts[1:], "/")
}

func appendBounded(a, b []string) []string {
	if len(a)+len(b) > maxPathValues || slices.Contains(a, overflowMark) || slices.Contains(b, overflowMark) {
		return []string{overflowMark}
	}
	return append(a[:len(a):len(a)], b...)
}

// protects returns the class of the protected path that a change (how
// far it reaches: r) to any value of the path v affects; "" for none.
func (a *Analyzer) protects(vals []pathValue, r reach) string {
	class := ""
	for _, v := range vals {
		switch {
		case v.overflow:
			class = stronger(class, classUnresolved)
		case !v.known:
			if matchTail(a.guard.paths, v.parts) {
				class = stronger(class, classUnresolved)
			}
			class = stronger(class, matchLinkTail(a.guard.paths, v.parts))
		default:
			class = stronger(class, matchResolved(a.guard.paths, v.parts, r))
			if a.guard.prot.home == nil && v.parts[0] == "/" {
				// Paths under a home directory nobody named may be
				// anywhere: any part of this path may be where one starts.
				for k := 1; k < len(v.parts); k++ {
					if matchTail(a.guard.homePaths(), v.parts[k:]) {
						class = stronger(class, classUnresolved)
						break
					}
				}
			}
		}
	}
	return class
}

// homePaths returns the protected paths under an unknown home directory.
func (g *Guard) homePaths() []guarded {
	var out []guarded
	for _, p := range g.paths {
		if p.parts[0] == "~" {
			out = append(out, p)
		}
	}
	return out
}

// link records that the path link now names the file or directory target
// names (ln), so a protected path reached through it stays protected.
func (a *Analyzer) link(target, link []pathValue) {
	g := a.guard
	for _, t := range target {
		if !t.known {
			continue
		}
		for _, p := range g.paths[:len(g.paths)] {
			n := min(len(t.parts), len(p.parts))
			same := true
			for i := range n {
				if t.parts[i] != p.parts[i] {
					same = false
					break
				}
			}
			if !same || len(t.parts) > len(p.parts) && !p.dir {
				continue
			}
			for _, l := range link {
				if l.overflow || len(l.parts) == 0 || len(g.paths) >= len(g.prot.paths)+maxAliases {
					continue
				}
				alias := guarded{parts: l.parts, dir: true, policy: p.policy, tail: !l.known}
				if len(t.parts) <= len(p.parts) { // target is p or holds it
					alias.parts = append(append([]string(nil), l.parts...), p.parts[len(t.parts):]...)
					alias.dir = p.dir
				}
				g.paths = append(g.paths, alias)
			}
		}
	}
	// A directory that holds a new link is now near a protected path:
	// relative paths in it must resolve there.
	far := g.cwdsFar[:0]
	for _, d := range g.cwdsFar {
		switch {
		case !g.near(d.parts):
			far = append(far, d)
		case len(g.cwdsNear) < maxNearCwds:
			g.cwdsNear = append(g.cwdsNear, d)
		default:
			g.cwdOverflow = true
		}
	}
	g.cwdsFar = far
}

// linkValues resolves the path of a link a command makes, relative to
// every directory the command may be in.
func (a *Analyzer) linkValues(w *syntax.Word, text string) []pathValue {
	a.guard.allCwds = true
	defer func() { a.guard.allCwds = false }()
	return a.pathValues(w, text)
}
