package approval

import (
	"slices"

	"mvdan.cc/sh/v3/syntax"
)

// InputKind says what a command does with the input piped to it.
type InputKind int

const (
	// InputData: the command reads its input as data (wc, grep, jq, a
	// script given by name): nothing in it runs, and the gate does not
	// judge it.
	InputData InputKind = iota
	// InputCommands: a shell runs its input as commands, each as soon as
	// it is read (bash or sh with no script or with -s, ssh HOST, source
	// /dev/stdin), or installs it as a crontab whose commands cron runs.
	InputCommands
	// InputStatements: a client runs its input as statements as it reads
	// them (psql, mysql, sqlite3, redis-cli, mongosh), or reads accounts
	// and passwords from it (chpasswd).
	InputStatements
	// InputCode: an interpreter reads its input as a program of its
	// language (python3, node, ruby, perl, php … with no script) and runs
	// it once it has read it all.
	InputCode
)

// String returns "data", "commands", "statements" or "code".
func (k InputKind) String() string {
	switch k {
	case InputCommands:
		return "commands"
	case InputStatements:
		return "statements"
	case InputCode:
		return "code"
	}
	return "data"
}

// Input is how a command reads its standard input; see [Gate.Input]. The
// zero value is data.
type Input struct {
	Kind InputKind
	// Program is the program that reads it ("bash", "python3", "psql");
	// "" for data.
	Program string
	role    stdinRole
}

// Input tells how command, a shell line, reads the input piped to it:
// from the programs in it that read their standard input as commands,
// code or statements, wherever they stand (cd src && python3, sudo bash,
// ssh host, bash -c 'python3', cat | bash: cat passes it on), unless
// their input is redirected (< FILE, a here-document). Where several do,
// commands win over statements and statements over code: the input is
// judged the strictest way any reader may take it. A command too large
// to analyse reads commands, so its input is judged rather than not.
func (g *Gate) Input(command string) Input {
	cmd := Normalize(command)
	if len(cmd) > g.maxSize {
		return Input{Kind: InputCommands, role: roleShell}
	}
	a, _ := g.analyzers.Get().(*analyzer)
	if a == nil {
		a = newAnalyzer()
	}
	defer g.analyzers.Put(a)
	a.run(cmd, nil)
	best := Input{}
	for _, in := range a.reads {
		if best.Kind == InputData || rank(in.Kind) > rank(best.Kind) {
			best = in
		}
	}
	return best
}

// rank orders the kinds of input by how strictly they are judged.
func rank(k InputKind) int {
	return [...]int{InputData: 0, InputCode: 1, InputStatements: 2, InputCommands: 3}[k]
}

// inputOf is the Input of a program whose stdin role is r.
func inputOf(name string, r stdinRole) Input {
	switch r {
	case roleShell, roleCron:
		return Input{Kind: InputCommands, Program: name, role: r}
	case roleInterp:
		return Input{Kind: InputCode, Program: name, role: r}
	case roleSQL, roleStore, roleAccounts:
		return Input{Kind: InputStatements, Program: name, role: r}
	}
	return Input{}
}

// noteInput records the program of st, which reads its standard input as
// in.role says, when that input may be the command's own: neither st nor
// a statement around it (a block, a subshell, the command whose string
// of code it is) redirects it. A later stage of a pipeline counts: what
// it reads may be the command's input passed on (cat | bash).
func (a *analyzer) noteInput(st *syntax.Stmt, in *stmtInfo) {
	if in.role == roleNone || in.final == nil {
		return
	}
	for _, s := range a.path {
		if o, ok := s.node.(*syntax.Stmt); ok && redirectsInput(o) {
			return
		}
	}
	if r := inputOf(in.final.name, in.role); !slices.Contains(a.reads, r) {
		a.reads = append(a.reads, r)
	}
}

// redirectsInput reports whether st gives its command a standard input
// of its own: < FILE, <> FILE, a here-document or here-string, or 0<&N.
func redirectsInput(st *syntax.Stmt) bool {
	for _, r := range st.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
			return true
		}
	}
	return false
}

// input walks text, piped to a program that reads it as in says: a
// shell's commands are walked as if typed (they run here, in the
// command's directory), a crontab's as commands cron runs, an
// interpreter's program is inline code of its language (the fact
// "@inline-code" with the flag "stdin"), a client's statements as the
// statements it runs.
func (a *analyzer) input(in Input, text string) {
	switch in.role {
	case roleShell:
		a.script(text, 0, 0, nil)
	case roleCron:
		a.script(cronCommands(text, false), 1, 1, []string{in.Program})
	case roleInterp:
		a.fact(factInlineCode, nil, in.Program, "stdin")
	case roleSQL:
		a.sql(text, nil)
	case roleStore:
		a.storeInput(in.Program, text, nil)
	case roleAccounts:
		a.fact(factPasswords, nil, passwordUsers(text)...)
	}
}
