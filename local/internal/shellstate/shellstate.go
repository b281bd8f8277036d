package shellstate

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// harmless are the builtins that change none of the saved state whatever
// their arguments, given that no argument assigns as it expands (checked
// apart). Any other builtin, or keyword, may: cd, export, read (into an
// exported variable), printf -v, getopts, mapfile, source, eval, exec,
// set, shopt, trap, command and builtin (which run any builtin), enable.
var harmless = map[string]bool{
	"true": true, "false": true, ":": true, "echo": true, "test": true, "[": true,
	"pwd": true, "exit": true, "type": true, "help": true, "jobs": true, "times": true, "wait": true,
}

// builtins are bash 5's builtins and reserved words: a command of one of
// these names is not a program found in PATH.
var builtins = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "bind": true, "break": true,
	"builtin": true, "caller": true, "cd": true, "command": true, "compgen": true, "complete": true,
	"compopt": true, "continue": true, "declare": true, "dirs": true, "disown": true, "echo": true,
	"enable": true, "eval": true, "exec": true, "exit": true, "export": true, "false": true, "fc": true,
	"fg": true, "getopts": true, "hash": true, "help": true, "history": true, "jobs": true, "kill": true,
	"let": true, "local": true, "logout": true, "mapfile": true, "popd": true, "printf": true,
	"pushd": true, "pwd": true, "read": true, "readarray": true, "readonly": true, "return": true,
	"set": true, "shift": true, "shopt": true, "source": true, "suspend": true, "test": true,
	"times": true, "trap": true, "true": true, "type": true, "typeset": true, "ulimit": true,
	"umask": true, "unalias": true, "unset": true, "wait": true,
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true, "in": true,
	"function": true, "time": true, "{": true, "}": true, "!": true, "[[": true, "]]": true, "coproc": true,
}

// maxText bounds the text read: a longer command is answered false
// without parsing (the save then runs, as it always did).
const maxText = 16 << 10

// Unchanging reports whether running text with bash, in a session that
// defines no function or alias, cannot change the session's exported
// variables, functions, aliases or working directory.
func Unchanging(text string) bool {
	if len(text) > maxText {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		return false
	}
	return stmts(f.Stmts)
}

func stmts(list []*syntax.Stmt) bool {
	for _, s := range list {
		if !stmt(s) {
			return false
		}
	}
	return true
}

func stmt(s *syntax.Stmt) bool {
	if s.Coprocess || s.Disown {
		return false
	}
	for _, r := range s.Redirs {
		if !redirect(r) {
			return false
		}
	}
	if s.Cmd == nil {
		return true
	}
	return command(s.Cmd)
}

// command reads one command run by this shell (not by a subshell).
func command(c syntax.Command) bool {
	switch c := c.(type) {
	case *syntax.CallExpr:
		return call(c)
	case *syntax.Subshell:
		return true // a process of its own
	case *syntax.Block:
		return stmts(c.Stmts)
	case *syntax.BinaryCmd:
		// The elements of a pipeline run in subshells unless lastpipe
		// is set; read as if each ran here.
		return stmt(c.X) && stmt(c.Y)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			if !stmts(c.Cond) || !stmts(c.Then) {
				return false
			}
		}
		return true
	case *syntax.WhileClause:
		return stmts(c.Cond) && stmts(c.Do)
	case *syntax.CaseClause:
		if !word(c.Word) {
			return false
		}
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				if !word(p) {
					return false
				}
			}
			if !stmts(it.Stmts) {
				return false
			}
		}
		return true
	case *syntax.TimeClause:
		return c.Stmt == nil || stmt(c.Stmt)
	}
	// ForClause (assigns its variable), FuncDecl, DeclClause, LetClause,
	// ArithmCmd, TestClause (evaluates -eq's operands as arithmetic),
	// CoprocClause, and whatever else.
	return false
}

func call(c *syntax.CallExpr) bool {
	if len(c.Args) == 0 {
		return false // X=1: an assignment in this shell
	}
	name, ok := literal(c.Args[0])
	if !ok {
		return false // $cmd may name anything
	}
	if builtins[name] {
		if !harmless[name] || len(c.Assigns) > 0 {
			// An assignment before a special builtin stays in the shell.
			return false
		}
	}
	for _, a := range c.Assigns {
		if a.Index != nil || a.Array != nil || a.Naked || a.Value != nil && !word(a.Value) {
			return false
		}
	}
	for _, w := range c.Args {
		if !word(w) {
			return false
		}
	}
	return true
}

// literal returns w's text when it has no expansion at all.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	s := b.String()
	if s == "[" {
		return s, true
	}
	// A name with a backslash, a glob, a brace or a tilde is not taken at
	// face value: read only plain names and paths.
	return s, s != "" && !strings.ContainsAny(s, "\\*?[~={}")
}

func redirect(r *syntax.Redirect) bool {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		return false // {fd}>file assigns fd
	}
	return (r.Word == nil || word(r.Word)) && (r.Hdoc == nil || word(r.Hdoc))
}

// word reports whether expanding w cannot assign a variable in this shell.
func word(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if !part(p) {
			return false
		}
	}
	return true
}

func part(p syntax.WordPart) bool {
	switch p := p.(type) {
	case *syntax.Lit, *syntax.SglQuoted, *syntax.ExtGlob:
		return true
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			if !part(q) {
				return false
			}
		}
		return true
	case *syntax.ParamExp:
		return param(p)
	case *syntax.CmdSubst:
		// $(...) and `...` run in a subshell; bash 5.3's ${ ...; } runs
		// here.
		return !p.TempFile && !p.ReplyVar
	case *syntax.ProcSubst:
		return true
	case *syntax.BraceExp:
		for _, e := range p.Elems {
			if !word(e) {
				return false
			}
		}
		return true
	}
	return false // $((...)) may assign, and whatever else
}

func param(p *syntax.ParamExp) bool {
	if p.Index != nil || p.Slice != nil || p.NestedParam != nil || p.Flags != nil || len(p.Modifiers) > 0 {
		return false // indexes and slices are arithmetic
	}
	if r := p.Repl; r != nil && (r.Orig != nil && !word(r.Orig) || r.With != nil && !word(r.With)) {
		return false
	}
	if e := p.Exp; e != nil {
		if e.Op == syntax.AssignUnset || e.Op == syntax.AssignUnsetOrNull {
			return false
		}
		if e.Word != nil && !word(e.Word) {
			return false
		}
	}
	return true
}
