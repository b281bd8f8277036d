package walk

import (
	"maps"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// The program table: what each wrapper, code runner and special program
// means for resolution, one handler per program family. Programs without
// a handler are resolved by their class ([byClass]).

// programs maps a program's name to what it means for resolution.
var programs = map[string]handler{}

func init() {
	// Registration only (a constant table); nothing here runs or reads.
	for _, group := range []struct {
		names []string
		h     handler
	}{
		{[]string{"sudo", "doas", "pkexec", "run0", "please"}, resolveSudo},
		{[]string{"env"}, resolveEnv},
		{[]string{"nice", "nohup", "setsid", "time", "stdbuf", "builtin", "exec", "then", "do",
			"noglob", "nocorrect", "catchsegv", "unbuffer", "dbus-run-session", "proxychains",
			"proxychains4", "torsocks", "tsocks", "firejail", "caffeinate", "xvfb-run",
			"systemd-run", "strace", "ltrace", "unshare", "nsenter", "setpriv", "doit",
			"with-contenv", "s6-setuidgid", "gosu", "su-exec", "chpst", "rlwrap", "ionice",
			"numactl", "cgexec", "systemd-inhibit", "retry", "tini", "dumb-init"}, resolvePrefix},
		{[]string{"timeout", "chroot", "chrt", "taskset", "faketime", "busybox", "toybox"}, resolveWithOperand},
		{[]string{"command"}, resolveCommand},
		{[]string{"xargs"}, resolveXargs},
		{[]string{"watch"}, resolveWatch},
		{[]string{"flock"}, resolveFlock},
		{[]string{"su", "runuser", "sg", "script", "sudosh", "ksu"}, resolveSu},
		{[]string{"eval"}, resolveEval},
		{[]string{"source", "."}, resolveSource},
		{[]string{"trap"}, resolveTrap},
		{[]string{"alias"}, resolveAlias},
		{[]string{"ssh", "mosh"}, resolveSSH},
		{[]string{"find", "fd", "fdfind"}, resolveFind},
		{[]string{"echo"}, resolveEcho},
		{[]string{"printf"}, resolvePrintf},
		{[]string{"chmod"}, resolveChmod},
		{[]string{"pkill", "killall"}, resolveKillPattern},
		{[]string{"kill"}, resolveKill},
		{[]string{"git"}, resolveGit},
	} {
		for _, n := range group.names {
			programs[n] = group.h
		}
	}
	for _, group := range runnerGroups {
		for _, n := range group.names {
			programs[n] = group.h
		}
	}
}

// resolveSudo: privilege wrappers; -e/-l/-v run no command.
func resolveSudo(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	rest = r.takeAssigns(rest)
	if shell.HasOpt(opts, "-e", "--edit", "-l", "--list", "-v", "--validate") {
		r.done(opts)
		return false
	}
	return r.next(opts, rest)
}

// resolveEnv: env [-S string] [NAME=value…] command.
func resolveEnv(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	if s, ok := shell.OptValue(opts, "-S", "--split-string"); ok {
		r.done(opts)
		r.addCode(s+" "+shell.Line(shell.Texts(rest), true), nil)
		return false
	}
	rest = r.takeAssigns(rest)
	r.c.Env = r.env
	return r.next(opts, rest)
}

// resolvePrefix: programs that run their arguments as a command after
// their own options.
func resolvePrefix(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	if r.name == "ionice" && shell.HasOpt(opts, "-p", "-P", "-u") {
		r.done(opts)
		return false
	}
	if (r.name == "gosu" || r.name == "su-exec" || r.name == "s6-setuidgid" || r.name == "chpst" && shell.HasOpt(opts, "-u")) && len(rest) > 0 {
		rest = rest[1:] // the user
	}
	return r.next(opts, rest)
}

// resolveWithOperand: programs with one operand (a duration, a new root,
// a priority, a mask, a time) before the command.
func resolveWithOperand(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	if shell.HasOpt(opts, "-p", "--pid", "--all-tasks") || len(rest) == 0 {
		r.done(opts)
		return false
	}
	if r.name != "busybox" && r.name != "toybox" {
		rest = rest[1:]
	}
	return r.next(opts, rest)
}

// resolveCommand: `command -v` only looks the name up; `command prog`
// runs prog, unrecorded.
func resolveCommand(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{})
	if shell.HasOpt(opts, "-v", "-V") {
		return false
	}
	r.args = rest
	return true
}

// resolveXargs: without a command, xargs runs echo.
func resolveXargs(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	// xargs -a FILE reads its arguments from FILE: what it runs is
	// given what FILE holds, as if FILE were its input.
	for _, f := range optVals(r.rest, "-a", false, "--arg-file") {
		r.a.readsIn = append(r.a.readsIn, f.Text)
	}
	if len(rest) == 0 {
		r.done(opts)
		return false
	}
	return r.next(opts, rest)
}

// resolveWatch: watch runs its arguments through sh -c unless -x;
// plain words ([Analyzer.plainWords]) are resolved in place.
func resolveWatch(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	if shell.HasOpt(opts, "-x", "--exec") || r.a.plainWords(rest) {
		return r.next(opts, rest)
	}
	r.done(opts)
	r.addCode(strings.Join(shell.Texts(rest), " "), nil)
	return false
}

// resolveFlock: flock [-c code] | flock FILE command.
func resolveFlock(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	// -c may follow the lock file (flock FILE -c CMD), as flock's own
	// usage writes it.
	if vs := optVals(r.rest, "-c", false, "--command"); len(vs) > 0 {
		r.done(opts)
		r.codeOf(vs)
		return false
	}
	if len(rest) < 2 {
		r.done(opts)
		return false
	}
	return r.next(opts, rest[1:])
}

// resolveSu: user switchers, whose code comes with -c (or, for sg, as
// the arguments; runuser -u USER runs a command, as a wrapper does: its
// record holds its options, so a chain of them is not copied per level).
func resolveSu(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs[r.name])
	if r.name == "sg" && len(rest) > 1 && !shell.HasOpt(opts, "-c") && rest[1].Text != "-c" && r.a.plainWords(rest[1:]) {
		// sg GROUP CMD …: the shell sg starts reads the words back.
		return r.next(append(opts, rest[0].Text), rest[1:])
	}
	code, w, ok := suCode(r.name, opts, rest)
	if !ok && r.name == "runuser" && shell.HasOpt(opts, "-u", "--user") && len(rest) > 0 {
		return r.next(opts, rest)
	}
	r.done(shell.Texts(r.rest))
	if ok {
		r.addCode(code, w)
	}
	return false
}

// suCode returns the code a user switcher runs, and the word that holds
// it when it is one word.
func suCode(name string, opts []string, rest []shell.Arg) (string, *syntax.Word, bool) {
	if s, ok := shell.OptValue(opts, "-c", "--command"); ok {
		return s, nil, true
	}
	for i := 0; i+1 < len(rest); i++ {
		if rest[i].Text == "-c" || rest[i].Text == "--command" {
			return rest[i+1].Text, rest[i+1].Word, true
		}
	}
	if name == "sg" && len(rest) > 1 {
		return strings.Join(shell.Texts(rest[1:]), " "), nil, true
	}
	return "", nil, false
}

// resolveEval: its arguments are shell code; plain words
// ([Analyzer.plainWords]) are resolved in place.
func resolveEval(r *resolution) bool {
	if len(r.rest) > 0 && r.rest[0].Text == "--" {
		r.rest = r.rest[1:] // eval -- CODE: the end of (no) options
	}
	if r.a.plainWords(r.rest) {
		return r.next(nil, r.rest)
	}
	r.done(shell.Texts(r.rest))
	if text := strings.Join(shell.Texts(r.rest), " "); !onlySubst(text) {
		r.addCode(text, nil)
	}
	for _, a := range r.rest {
		if a.Word != nil {
			r.substFact(a.Word)
		}
	}
	return false
}

// plainWords reports whether the shell, given args joined by spaces as
// code, reads back the same words as a simple command: each is a known,
// non-empty word of letters, digits and punctuation the shell gives no
// meaning to ("=" too, but in the first word, where it would make an
// assignment), and none is read as syntax ([syntaxWords]). eval, watch,
// sg and ssh HOST then run args as a wrapper runs its command line, and
// the gate resolves them as one instead of parsing them again: a chain
// of them (eval eval …, find -exec watch find …) would otherwise be
// parsed once per level.
//
// Each word is tested once per check: the args of every level of a chain
// end where the line ends, so args that end where a list already found
// plain ends are part of it.
func (a *Analyzer) plainWords(args []shell.Arg) bool {
	if len(args) == 0 {
		return false
	}
	if p := a.plainTail; len(p) >= len(args) && &p[len(p)-1] == &args[len(args)-1] {
		// Part of a plain list: plain too, unless its first word was
		// one of the list's later ones and holds "=".
		return !strings.Contains(args[0].Text, "=")
	}
	for k, w := range args {
		if w.Dyn || w.Glob || w.Text == "" || syntaxWords[w.Text] {
			return false
		}
		for i := 0; i < len(w.Text); i++ {
			c := w.Text[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_./:,+@%^", c) >= 0 || c == '=' && k > 0) {
				return false
			}
		}
	}
	a.plainTail = args
	return true
}

// syntaxWords are the words read as syntax at the start of a command:
// bash's reserved words, and the builtins the parser reads as clauses of
// their own.
var syntaxWords = setOf(`if then else elif fi case esac for select while until do done in function time coproc
	let declare local export readonly typeset nameref`)

// resolveSource: runs a file in this shell.
func resolveSource(r *resolution) bool {
	f := r.done(shell.Texts(r.rest))
	if len(r.rest) > 0 {
		if stdinFiles[r.rest[0].Text] {
			// source /dev/stdin: the input is the script.
			r.in.final, r.in.role = f, RoleShell
			return false
		}
		r.runsFile(r.rest[0])
	}
	return false
}

// stdinFiles are the names of a process's own standard input.
var stdinFiles = setOf(`/dev/stdin /dev/fd/0 /proc/self/fd/0`)

// resolveTrap: its first argument is code run later.
func resolveTrap(r *resolution) bool {
	r.done(shell.Texts(r.rest))
	if len(r.rest) > 1 && !r.rest[0].IsOpt() && r.rest[0].Text != "-" {
		r.addCode(r.rest[0].Text, r.rest[0].Word)
	}
	return false
}

// resolveAlias: each definition is code run when the alias is used.
func resolveAlias(r *resolution) bool {
	r.done(shell.Texts(r.rest))
	for _, a := range r.rest {
		if _, v, ok := strings.Cut(a.Text, "="); ok {
			r.addCode(v, nil)
		}
	}
	return false
}

// resolveSSH: ssh HOST CMD runs CMD on the remote shell; ssh HOST alone
// is a shell reading its input.
func resolveSSH(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, wrapperSpecs["ssh"])
	r.sshOptions(r.rest[:len(r.rest)-len(rest)])
	if len(rest) > 2 && rest[1].Text == "--" {
		rest = append(rest[:1:1], rest[2:]...) // mosh HOST -- CMD
	}
	if len(rest) > 1 && !shell.HasOpt(opts, "-N", "-W") && r.a.plainWords(rest[1:]) {
		// ssh HOST CMD …: the remote shell reads the words back.
		return r.next(append(opts, rest[0].Text), rest[1:])
	}
	f := r.done(shell.Texts(r.rest))
	if len(rest) == 0 || shell.HasOpt(opts, "-N", "-W") {
		return false
	}
	if len(rest) == 1 {
		r.in.final, r.in.role = f, RoleShell
		return false
	}
	r.addCode(strings.Join(shell.Texts(rest[1:]), " "), nil)
	return false
}

// resolveFind: find's targets are guarded, and -exec runs commands.
// find's record comes before those of the commands it runs; its
// arguments are known once they are resolved (see findExec).
func resolveFind(r *resolution) bool {
	at := len(r.in.cmds)
	r.done(nil)
	if r.name == "find" {
		r.a.guardCommand(r.in, &r.c, r.rest)
	}
	r.in.cmds[at].Args = r.findExec()
	return false
}

// resolveEcho: what echo prints matters when it is piped into a shell.
func resolveEcho(r *resolution) bool {
	r.in.final = r.done(shell.Texts(r.rest))
	rest, decode := r.rest, false
	for len(rest) > 0 && echoOpt().MatchString(rest[0].Text) {
		decode = decode || strings.Contains(rest[0].Text, "e")
		rest = rest[1:]
	}
	text := strings.Join(shell.Texts(rest), " ")
	if decode {
		text = shell.DecodeANSIC(text)
	}
	r.in.prints, r.in.printsOK = text, allLiteral(rest)
	return false
}

// resolvePrintf: likewise, for a literal format.
func resolvePrintf(r *resolution) bool {
	r.in.final = r.done(shell.Texts(r.rest))
	if len(r.rest) > 0 && !r.rest[0].IsOpt() && allLiteral(r.rest) {
		r.in.prints, r.in.printsOK = printfText(r.rest[0].Text, shell.Texts(r.rest[1:])), true
	}
	return false
}

// resolveChmod: its targets are guarded.
func resolveChmod(r *resolution) bool {
	r.in.final = r.done(shell.Texts(r.rest))
	r.a.chmodTargets(r.rest)
	r.a.guardCommand(r.in, &r.c, r.rest)
	return false
}

// tool resolves a program with subcommands: its global options, its
// subcommand and arguments (in r.c), and the files it writes.
func (r *resolution) tool(spec shell.OptSpec) {
	r.a.subcommand(&r.c, spec, r.rest)
	r.in.final = r.emit(r.c)
	r.a.writeTargets(r.in, &r.c, r.rest)
	r.a.guardCommand(r.in, &r.c, r.rest)
}

// byClass resolves a program without a handler of its own: shells,
// interpreters, programs with subcommands, SQL, or a plain program.
func byClass(r *resolution) bool {
	a, in, name, rest := r.a, r.in, r.name, r.rest
	if IsShell(name) {
		opts, after := shell.SplitOpts(rest, shell.OptSpec{Short: "o", Long: []string{"--rcfile", "--init-file"}})
		f := r.done(a.texts(rest))
		switch {
		case shell.HasOpt(opts, "-c"):
			if len(after) > 0 {
				r.addCode(after[0].Text, after[0].Word)
			}
		case shell.HasOpt(opts, "-s") || len(after) == 0 || after[0].Text == "-":
			in.final, in.role = f, RoleShell
		default:
			r.runsFile(after[0])
		}
		return false
	}
	if kind := interpKind(name); kind != "" {
		if mod, after, ok := a.interp(in, r.c, kind, rest, r.runsFile); ok {
			// python -m pip …: judge the module like the program.
			r.args = append([]shell.Arg{{Text: mod}}, after...)
			r.via = append(r.via[:len(r.via):len(r.via)], name)
			return true
		}
		return false
	}
	if spec, ok := subcommandSpecs[subcommandKey(name)]; ok {
		r.tool(spec)
		return false
	}
	if _, ok := subcommandNames[name]; ok {
		r.tool(shell.OptSpec{}) // a tool known by its subcommands only
		return false
	}
	in.final = r.done(a.texts(rest))
	switch {
	case sqlKeywords[name] && (r.w.Text == strings.ToUpper(r.w.Text) || len(rest) > 0 && sqlObjects[strings.ToLower(rest[0].Text)]):
		in.cmds = append(in.cmds, sqlFacts(r.w.Text+" "+strings.Join(shell.Texts(rest), " "), r.via)...)
	case sqlClients[name] != "":
		a.sqlClient(in, name, rest, r.via)
	case name == "bq":
		// bq query [flags] SQL: the statement is its operand.
		if _, ops := shell.SplitOpts(rest, shell.OptSpec{}); len(ops) > 1 && ops[0].Text == "query" {
			var sql []string
			for _, o := range ops[1:] {
				if !o.IsOpt() {
					sql = append(sql, o.Text)
				}
			}
			in.cmds = append(in.cmds, sqlFacts(strings.Join(sql, " "), r.via)...)
		}
	case storeClients[name] != "":
		in.role = RoleStore
	case name == "chpasswd":
		in.role = RoleAccounts
	}
	a.writeTargets(in, &r.c, rest)
	a.guardCommand(in, &r.c, rest)
	return false
}

// ProgramNames returns the names of the programs the table has a handler
// for, sorted.
func ProgramNames() []string {
	return slices.Sorted(maps.Keys(programs))
}
