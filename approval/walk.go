package approval

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bounds on the work one check may do. Input beyond them is not analysed
// further and asks instead (see the "too-complex" rule).
const (
	maxDepth      = 6    // nested shells: bash -c "eval '…'" …
	maxCommands   = 4096 // simple commands and facts per check
	maxBraceWords = 64   // words one brace expression may expand to
)

// stdinRole says what a program does with its standard input.
type stdinRole int

const (
	roleNone   stdinRole = iota
	roleShell            // runs it as shell code (bash, sh, ssh host)
	roleInterp           // runs it as code in another language (python, node …)
	roleSQL              // runs it as SQL (psql, mysql, sqlite3 …)
)

// stmtInfo is what a simple command resolved to.
type stmtInfo struct {
	cmds  []command
	codes []code   // shell code given as a string, to analyse in turn
	final *command // the program that runs, if known
	role  stdinRole
	// prints is the text the command writes, when it is echo or printf
	// with literal arguments; printsOK says whether prints is known.
	prints   string
	printsOK bool
	// scripts are files the command runs as code.
	scripts []string
}

type code struct {
	text string
	via  []string
}

// scriptWrite is literal text written to a file by the script.
type scriptWrite struct {
	target, text string
	via          []string
}

// analyzer walks one input, with everything nested in it, and collects
// the commands and facts that rules then judge.
type analyzer struct {
	parser   *syntax.Parser
	src      string // source of the script being walked
	cmds     []command
	infos    map[*syntax.Stmt]*stmtInfo
	budget   int
	full     bool // budget exhausted: stop adding
	writes   []scriptWrite
	executed []string // files run as scripts or programs by path
	chmodX   []string // files made executable
	cwd      string   // directory of a literal cd seen before, canonical; "" unknown
}

// analyze returns every command and fact in src, which must be normalised.
func analyze(src string) []command {
	a := &analyzer{
		parser: syntax.NewParser(syntax.Variant(syntax.LangBash)),
		infos:  make(map[*syntax.Stmt]*stmtInfo),
		budget: maxCommands,
	}
	a.script(src, 0, nil)
	a.finish()
	return a.cmds
}

func (a *analyzer) add(c command) {
	if a.full {
		return
	}
	if a.budget--; a.budget <= 0 {
		a.full = true
		a.cmds = append(a.cmds, command{name: factTooComplex})
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
func (a *analyzer) followDir(c *command) {
	switch c.name {
	case "cd", "pushd":
		a.cwd = ""
		switch {
		case len(c.args) == 0:
			a.cwd = "~"
		case len(c.args) == 1:
			if p, ok := canonicalPath(c.args[0]); ok {
				a.cwd = p
			}
		}
		return
	}
	if a.cwd == "" {
		return
	}
	for i, s := range c.args {
		switch s {
		case ".", "./", "*", "./*", ".*", "./.*":
			if p, ok := canonicalPath(path.Join(a.cwd, s)); ok {
				c.args[i] = p
			}
		}
	}
}

func (a *analyzer) fact(name string, via []string, args ...string) {
	a.add(command{name: name, args: args, via: via})
}

// script parses src as bash and walks it. Input that does not parse is a
// fact of its own; each of its lines that does parse is still walked, so a
// stray quote cannot hide the command before it.
func (a *analyzer) script(src string, depth int, via []string) {
	if depth > maxDepth {
		a.fact(factTooDeep, via)
		return
	}
	f, err := a.parser.Parse(strings.NewReader(src), "")
	if err == nil {
		a.file(f, src, depth, via)
		return
	}
	a.fact(factUnparsed, via, err.Error())
	if !strings.Contains(src, "\n") {
		// One line: try the part before the error position.
		if pe, ok := err.(syntax.ParseError); ok {
			if off := int(pe.Pos.Offset()); off > 0 && off < len(src) {
				if f, err := a.parser.Parse(strings.NewReader(src[:off]), ""); err == nil {
					a.file(f, src[:off], depth, via)
				}
			}
		}
		return
	}
	for l := range strings.Lines(src) {
		if f, err := a.parser.Parse(strings.NewReader(l), ""); err == nil {
			a.file(f, l, depth, via)
		}
	}
}

func (a *analyzer) file(f *syntax.File, src string, depth int, via []string) {
	outer := a.src
	a.src = src
	defer func() { a.src = outer }()
	seenPipes := make(map[*syntax.BinaryCmd]bool)
	syntax.Walk(f, func(n syntax.Node) bool {
		if a.full {
			return false
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			a.stmt(n, src, depth, via)
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && !seenPipes[n] {
				a.pipe(n, src, depth, via, seenPipes)
			}
		case *syntax.FuncDecl:
			a.funcDecl(n, via)
		case *syntax.DeclClause:
			var env []string
			for _, as := range n.Args {
				env = append(env, assignText(as))
			}
			a.add(command{name: n.Variant.Value, env: env, via: via})
		}
		return true
	})
}

func assignText(as *syntax.Assign) string {
	if as.Name == nil {
		if as.Value != nil {
			return wordArg(as.Value).text
		}
		return ""
	}
	s := as.Name.Value + "="
	if as.Value != nil {
		s += wordArg(as.Value).text
	}
	return s
}

// info resolves a statement's simple command once.
func (a *analyzer) info(st *syntax.Stmt, src string, via []string) *stmtInfo {
	if in, ok := a.infos[st]; ok {
		return in
	}
	in := &stmtInfo{}
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
	a.resolve(in, words(ce.Args), env, via, source)
	return in
}

func (a *analyzer) stmt(st *syntax.Stmt, src string, depth int, via []string) {
	in := a.info(st, src, via)
	for _, c := range in.cmds {
		a.add(c)
	}
	for _, cd := range in.codes {
		a.script(cd.text, depth+1, cd.via)
	}
	a.executed = append(a.executed, in.scripts...)
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll,
			syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
			if r.Word == nil {
				continue
			}
			target := wordArg(r.Word).text
			how := ">"
			if r.Op == syntax.AppOut || r.Op == syntax.AppAll || r.Op == syntax.AppAllClob {
				how = ">>"
			}
			a.write(how, target, via)
			if text, ok := a.stmtText(st, in); ok {
				a.writes = append(a.writes, scriptWrite{target: target, text: text, via: via})
			}
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			w := r.Hdoc
			if r.Op == syntax.WordHdoc {
				w = r.Word
			}
			if w == nil {
				continue
			}
			wa := wordArg(w)
			a.stdin(in, wa.text, depth, via, factHeredocCode)
			if in.final != nil && in.final.name == "tee" {
				for _, t := range in.final.args {
					if !strings.HasPrefix(t, "-") {
						a.writes = append(a.writes, scriptWrite{target: t, text: wa.text, via: via})
					}
				}
			}
		case syntax.RdrIn:
			if r.Word != nil && in.role != roleNone {
				if k := a.substKind(r.Word, src, via); k != "" {
					a.fact(factSubstCode, via, k)
				}
			}
		}
	}
}

// stmtText returns the literal text a statement writes to its output, when
// the gate can know it: echo or printf with literal arguments, or cat with
// a here-document.
func (a *analyzer) stmtText(st *syntax.Stmt, in *stmtInfo) (string, bool) {
	if in.printsOK {
		return in.prints, true
	}
	if in.final == nil || in.final.name != "cat" {
		return "", false
	}
	for _, r := range st.Redirs {
		if (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil {
			return wordArg(r.Hdoc).text, true
		}
	}
	return "", false
}

// stdin judges text fed to a program's standard input.
func (a *analyzer) stdin(in *stmtInfo, text string, depth int, via []string, interpFact string) {
	if in.final == nil {
		return
	}
	switch in.role {
	case roleShell:
		a.script(text, depth+1, append(via, in.final.name))
	case roleInterp:
		a.fact(interpFact, via, in.final.name)
	case roleSQL:
		a.sql(text, via)
	}
}

// pipe judges what each stage of a pipeline feeds into the next.
func (a *analyzer) pipe(n *syntax.BinaryCmd, src string, depth int, via []string, seen map[*syntax.BinaryCmd]bool) {
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
		in := a.info(stages[i], src, via)
		if in.role == roleNone || in.final == nil {
			continue
		}
		kind := ""
		for _, prev := range stages[:i] {
			if k := a.stmtsKind([]*syntax.Stmt{prev}, src, via); k == "fetch" || k == "decode" {
				kind = k
				break
			}
		}
		if kind != "" {
			a.fact(factPipeShell, via, kind, in.final.name)
			continue
		}
		prev := a.info(stages[i-1], src, via)
		if prev.printsOK {
			a.stdin(in, prev.prints, depth, via, factPipeCode)
			continue
		}
		switch in.role {
		case roleShell:
			a.fact(factPipeShell, via, "stdin", in.final.name)
		case roleInterp:
			a.fact(factPipeCode, via, in.final.name)
		}
	}
}

// stmtsKind classifies what statements (a pipeline stage or the inside of
// a substitution) produce: "fetch" when a network client runs in them,
// "decode" when a decoder does, "init" when only well-known shell-setup
// tools do (eval "$(ssh-agent -s)"), and "other" otherwise.
func (a *analyzer) stmtsKind(stmts []*syntax.Stmt, src string, via []string) string {
	kind := "init"
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			s, ok := n.(*syntax.Stmt)
			if !ok || kind == "fetch" {
				return kind != "fetch"
			}
			in := a.info(s, src, via)
			for i := range in.cmds {
				c := &in.cmds[i]
				switch {
				case fetchers[c.name]:
					kind = "fetch"
				case isDecoder(c) && kind != "fetch":
					kind = "decode"
				case kind == "init" && c.name != "" && !initTools[c.name] && !strings.HasPrefix(c.name, "@"):
					kind = "other"
				}
			}
			if _, ok := s.Cmd.(*syntax.CallExpr); !ok && kind == "init" {
				if _, isBin := s.Cmd.(*syntax.BinaryCmd); !isBin {
					kind = "other"
				}
			}
			return true
		})
	}
	return kind
}

// substKind classifies the substitutions in w; "" when it has none.
func (a *analyzer) substKind(w *syntax.Word, src string, via []string) string {
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
		return ""
	}
	return a.stmtsKind(stmts, src, via)
}

// funcDecl reports a function that calls itself in the background or
// through a pipe: the shape of a fork bomb.
func (a *analyzer) funcDecl(fd *syntax.FuncDecl, via []string) {
	if fd.Name == nil {
		return
	}
	name := fd.Name.Value
	selfCall, spawns := false, false
	syntax.Walk(fd.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background || n.Coprocess || n.Disown {
				spawns = true
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				spawns = true
			}
		case *syntax.CallExpr:
			if len(n.Args) > 0 && wordArg(n.Args[0]).text == name {
				selfCall = true
			}
		}
		return true
	})
	if selfCall && spawns {
		a.fact(factForkBomb, via, name)
	}
}

// write records that the script writes to target.
func (a *analyzer) write(how, target string, via []string) {
	a.add(command{name: factWrite, args: []string{how, target}, via: via})
}

// sql splits text into statements and records each.
func (a *analyzer) sql(text string, via []string) {
	for _, c := range sqlFacts(text, via) {
		a.add(c)
	}
}

// finish judges what only the whole input shows: text written to a file
// that is then run, and a file made executable and then run.
func (a *analyzer) finish() {
	run := make(map[string]bool, len(a.executed))
	for _, p := range a.executed {
		run[cleanRel(p)] = true
	}
	for _, w := range a.writes {
		t := cleanRel(w.target)
		if run[t] || isScriptPath(t) || containsClean(a.chmodX, t) {
			a.script(w.text, 1, append(w.via, "write:"+w.target))
		}
	}
	var fetched []string
	for _, c := range a.cmds {
		if c.name == factWrite && (c.args[0] == "curl" || c.args[0] == "wget") {
			fetched = append(fetched, c.args[1])
		}
	}
	for _, p := range a.executed {
		if slices.ContainsFunc(fetched, func(x string) bool { return path.Base(x) == path.Base(p) }) {
			a.fact(factFetchExec, nil, p)
			break
		}
	}
	for _, p := range a.executed {
		if slices.ContainsFunc(a.chmodX, func(x string) bool { return path.Base(x) == path.Base(p) }) {
			a.fact(factChmodExec, nil, p)
			break
		}
	}
}

func cleanRel(p string) string {
	if c, ok := canonicalPath(p); ok {
		return c
	}
	return path.Clean(p)
}

func containsClean(list []string, p string) bool {
	for _, s := range list {
		if cleanRel(s) == p {
			return true
		}
	}
	return false
}

func isScriptPath(p string) bool {
	switch path.Ext(p) {
	case ".sh", ".bash", ".zsh", ".ksh":
		return true
	}
	return strings.Contains(p, ".git/hooks/") || strings.HasPrefix(p, "/etc/cron") ||
		strings.Contains(p, "/etc/profile.d/")
}
