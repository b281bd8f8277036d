package approval

import (
	"github.com/runbox/runbox/approval/internal/shell"
	"github.com/runbox/runbox/approval/internal/walk"
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
	role    walk.Role
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
	cmd := shell.Normalize(command)
	if len(cmd) > g.maxSize {
		return Input{Kind: InputCommands, role: walk.RoleShell}
	}
	a, _ := g.analyzers.Get().(*walk.Analyzer)
	if a == nil {
		a = walk.NewAnalyzer()
	}
	defer g.analyzers.Put(a)
	a.Run(cmd, nil)
	best := Input{}
	for _, r := range a.Reads {
		if in := inputOf(r.Program, r.Role); best.Kind == InputData || rank(in.Kind) > rank(best.Kind) {
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
func inputOf(name string, r walk.Role) Input {
	switch r {
	case walk.RoleShell, walk.RoleCron:
		return Input{Kind: InputCommands, Program: name, role: r}
	case walk.RoleInterp:
		return Input{Kind: InputCode, Program: name, role: r}
	case walk.RoleSQL, walk.RoleStore, walk.RoleAccounts:
		return Input{Kind: InputStatements, Program: name, role: r}
	}
	return Input{}
}
