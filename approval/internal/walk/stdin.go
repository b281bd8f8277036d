package walk

import (
	"slices"

	"github.com/runbox/runbox/approval/internal/rules"
	"mvdan.cc/sh/v3/syntax"
)

// Reader is a program that reads the command's own standard input, and
// how it reads it ([approval.Gate.Input] tells the kind from the role).
type Reader struct {
	Program string
	Role    Role
}

// noteInput records the program of st, which reads its standard input as
// in.role says, when that input may be the command's own: neither st nor
// a statement around it (a block, a subshell, the command whose string
// of code it is) redirects it. A later stage of a pipeline counts: what
// it reads may be the command's input passed on (cat | bash).
func (a *Analyzer) noteInput(st *syntax.Stmt, in *stmtInfo) {
	if in.role == roleNone || in.final == nil {
		return
	}
	for _, s := range a.path {
		if o, ok := s.node.(*syntax.Stmt); ok && redirectsInput(o) {
			return
		}
	}
	if r := (Reader{Program: in.final.Name, Role: in.role}); !slices.Contains(a.Reads, r) {
		a.Reads = append(a.Reads, r)
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
func (a *Analyzer) input(in Reader, text string) {
	switch in.Role {
	case RoleShell:
		a.script(text, 0, 0, nil)
	case RoleCron:
		a.script(cronCommands(text, false), 1, 1, []string{in.Program})
	case RoleInterp:
		if !a.quietCode(interpKind(in.Program), text) {
			a.fact(rules.FactInlineCode, nil, in.Program, "stdin")
		}
	case RoleSQL:
		a.sql(text, nil)
	case RoleStore:
		a.storeInput(in.Program, text, nil)
	case RoleAccounts:
		a.fact(rules.FactPasswords, nil, passwordUsers(text)...)
	}
}
