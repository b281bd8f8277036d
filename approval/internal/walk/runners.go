package walk

import (
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
)

// Programs that run a command handed to them in some form of their own:
// job runners and multiplexers (GNU parallel, tmux, screen, at, crontab),
// wrappers with options of their own (perf, gdb --args, bwrap,
// hyperfine, entr, watchexec, package runners such as npx and uvx),
// programs with a "run this" option (tar -I, rsync -e, zip -TT, man -P,
// scp -S, ssh -o ProxyCommand, sed's e command, editors' -c and --eval)
// and make, which runs the makefile. Each hands the command to the walker
// as code or as the rest of its line, so it is judged as if typed; where
// the command is out of the gate's sight (a file at installs, a script
// gdb or emacs evaluates) the fact [rules.FactHidden] asks.

// runnerGroups are the programs of this file, for [programs].
var runnerGroups = []struct {
	names []string
	h     handler
}{
	{[]string{"parallel", "sem"}, resolveParallel},
	{[]string{"tmux"}, resolveTmux},
	{[]string{"screen"}, resolveScreen},
	{[]string{"at", "batch"}, resolveAt},
	{[]string{"crontab"}, resolveCrontab},
	{[]string{"perf"}, resolvePerf},
	{[]string{"gdb", "cgdb", "gdb-multiarch"}, resolveGdb},
	{[]string{"lldb"}, resolveLldb},
	{[]string{"valgrind", "fakeroot", "fakechroot", "eatmydata", "chronic", "ifne", "tsp", "nq", "lckdo",
		"heaptrack", "memusage", "shx", "flatpak-spawn", "distrobox-enter", "cross-env", "dotenv", "env-cmd",
		"pueue", "nocache", "rr", "uftrace", "sandbox-exec", "proot", "schroot"}, resolveOptsWrapper},
	{[]string{"hyperfine"}, resolveHyperfine},
	{[]string{"entr"}, resolveEntr},
	{[]string{"watchexec", "nodemon", "concurrently"}, resolveWatcher},
	{[]string{"bwrap"}, resolveBwrap},
	{[]string{"expect"}, resolveExpect},
	{[]string{"xterm", "uxterm", "urxvt", "rxvt", "alacritty", "konsole", "kitty", "st", "foot", "wezterm",
		"gnome-terminal", "xfce4-terminal", "terminator", "tilix"}, resolveTerminal},
	{[]string{"npx", "bunx", "pnpx", "uvx"}, resolveFetchRunner},
	{[]string{"npm", "pnpm", "yarn", "bun", "uv", "pipx", "poetry", "pdm", "pipenv", "hatch", "conda", "mamba",
		"micromamba", "bundle", "mise", "rtx", "asdf", "devbox", "direnv", "nix", "nix-shell"}, resolveToolRunner},
	{[]string{"rimraf", "del-cli", "premove", "rm-rf", "rmrf"}, resolveDeleteTool},
	{[]string{"tar", "bsdtar", "gtar"}, resolveTar},
	{[]string{"rsync"}, resolveRsync},
	{[]string{"zip"}, resolveZip},
	{[]string{"man"}, resolveMan},
	{[]string{"scp", "sftp"}, resolveScp},
	{[]string{"sed", "gsed"}, resolveSed},
	{[]string{"vi", "vim", "nvim", "view", "ex", "gvim", "vimdiff", "nvi", "elvis"}, resolveVim},
	{[]string{"emacs", "emacsclient", "xemacs"}, resolveEmacs},
	{[]string{"make", "gmake", "bmake", "remake"}, resolveMake},
	{[]string{"sort", "split", "rg", "less", "more"}, resolveCodeOpts},
	{[]string{"sshpass", "ssh-agent", "cpulimit", "daemonize", "prlimit", "trickle", "dbus-launch"}, resolveOptsWrapper},
	{[]string{"dtach", "abduco"}, resolveDetacher},
	{[]string{"byobu"}, resolveTmux},
	{[]string{"zellij"}, resolveZellij},
	{[]string{"start-stop-daemon"}, resolveStartStop},
	{[]string{"cmake"}, resolveCmake},
	{[]string{"ansible"}, resolveAnsible},
	{[]string{"docker", "podman", "nerdctl", "docker-compose", "podman-compose", "kubectl", "oc", "lxc", "incus", "systemd-nspawn"}, resolveContainerExec},
}

// execOpts are the options of docker exec (and podman's, nerdctl's) that
// take a value.
var execOpts = shell.OptSpec{Short: "euw", Long: []string{"--env", "--env-file", "--user", "--workdir", "--detach-keys"}}

// composeRunOpts are the options of compose exec and compose run that
// take a value.
var composeRunOpts = shell.OptSpec{Short: "eluvwp", Long: []string{"--env", "--env-file", "--label", "--user", "--volume", "--workdir", "--publish", "--entrypoint", "--name",
	"--index", "--cap-add", "--cap-drop", "--pull"}}

// nspawnOpts are systemd-nspawn's options that take a value.
var nspawnOpts = shell.OptSpec{Short: "DMuSiE", Long: []string{"--directory", "--machine", "--user", "--slice", "--image", "--setenv",
	"--bind", "--bind-ro", "--template", "--chdir", "--network-interface", "--network-bridge", "--property", "--uuid"}}

// resolveContainerExec: docker, podman and nerdctl exec, kubectl and oc
// exec, lxc and incus exec and systemd-nspawn run a command in a container
// as ssh HOST CMD runs one on a host: it is judged as typed (a store
// dropped inside its container is still dropped). Their other
// subcommands are the tools' own.
func resolveContainerExec(r *resolution) bool {
	switch r.name {
	case "systemd-nspawn":
		opts, cmd := shell.SplitOpts(r.rest, nspawnOpts)
		if len(cmd) == 0 {
			r.done(opts)
			return false
		}
		return r.next(opts, cmd)
	case "kubectl", "oc", "lxc", "incus":
		// The command follows "--"; exec must come before it.
		dash := slices.IndexFunc(r.rest, func(a shell.Arg) bool { return a.Text == "--" })
		if dash > 0 && dash+1 < len(r.rest) && slices.ContainsFunc(r.rest[:dash], func(a shell.Arg) bool { return a.Text == "exec" }) {
			return r.execIn(r.rest[:dash], r.rest[dash+1:])
		}
	default:
		_, rest := shell.SplitOpts(r.rest, dockerSpec)
		if r.name == "docker-compose" || r.name == "podman-compose" {
			rest = append([]shell.Arg{{Text: "compose"}}, r.rest...)
		}
		n, opts := 0, execOpts
		switch {
		case len(rest) > 0 && rest[0].Text == "exec":
			n = 1
		case len(rest) > 1 && rest[0].Text == "container" && rest[1].Text == "exec":
			n = 2
		case len(rest) > 1 && rest[0].Text == "compose":
			// docker compose exec SERVICE CMD, compose run SERVICE CMD.
			_, sub := shell.SplitOpts(rest[1:], composeSpec)
			if len(sub) > 0 && (sub[0].Text == "exec" || sub[0].Text == "run") {
				rest, n, opts = sub, 1, composeRunOpts
			}
		}
		if n > 0 {
			if _, after := shell.SplitOpts(rest[n:], opts); len(after) > 1 {
				// After the options: the container, then the command.
				own := len(r.rest) - len(after) + 1
				return r.execIn(r.rest[:own], r.rest[own:])
			}
		}
	}
	return byClass(r)
}

// execIn records the tool with its own arguments (split into globals and
// subcommand as rules on the tool expect, its environment kept: a rule on
// DOCKER_CONTEXT judges docker exec) and goes on with cmd, the command it
// runs in the container.
func (r *resolution) execIn(own, cmd []shell.Arg) bool {
	if spec, ok := subcommandSpecs[subcommandKey(r.name)]; ok {
		r.a.subcommand(&r.c, spec, own)
	} else {
		r.c.Args = shell.Texts(own)
	}
	r.emit(r.c)
	r.args = cmd
	r.via = append(r.via[:len(r.via):len(r.via)], r.name)
	return true
}

// maxRunnerInputs bounds the inputs of one parallel (::: a b c) that are
// judged each with its command; more ask.
const maxRunnerInputs = 32

// hidden records that the program runs a command the gate cannot see.
func (r *resolution) hidden(what string) {
	r.fact(rules.FactHidden, r.name, what)
}

// optVals returns the values of an option in args, wherever it stands
// (tar, rsync and others take options after their operands): "-X v",
// "-Xv", "--long v" or "--long=v". Short options are matched as whole
// words or with the value attached; cluster says a short option may end
// a cluster of flags ("-avze v").
func optVals(args []shell.Arg, short string, cluster bool, long ...string) []shell.Arg {
	var out []shell.Arg
	for i := 0; i < len(args); i++ {
		t := args[i].Text
		if t == "--" {
			break
		}
		next := func() {
			if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		}
		if strings.HasPrefix(t, "--") {
			name, _, eq := strings.Cut(t, "=")
			if slices.Contains(long, name) {
				if eq {
					out = append(out, subArg(args[i], name+"="))
				} else {
					next()
				}
			}
			continue
		}
		if short == "" || !strings.HasPrefix(t, "-") {
			continue
		}
		switch {
		case t == short:
			next()
		case len(short) == 2 && strings.HasPrefix(t, short) && len(t) > 2 && !cluster:
			out = append(out, subArg(args[i], short))
		case cluster && len(short) == 2 && len(t) > 2 && t[1] != '-':
			if j := strings.IndexByte(t[1:], short[1]); j >= 0 {
				if rest := t[j+2:]; rest != "" {
					out = append(out, shell.Arg{Text: rest})
				} else {
					next()
				}
			}
		}
	}
	return out
}

// codeOf queues each value as shell code.
func (r *resolution) codeOf(vals []shell.Arg) {
	for _, v := range vals {
		r.addCode(v.Text, v.Word)
	}
}

// resolveParallel: GNU parallel runs its command once per input, through
// a shell, with {} and its kin replaced by the input; without a command
// each input is a command. Inputs from a file (::::) or standard input
// are not known: the command is judged as written.
func resolveParallel(r *resolution) bool {
	f := r.done(shell.Texts(r.rest))
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "ajSdEILlnNs", Long: []string{"--arg-file", "--jobs", "--sshlogin",
		"--delimiter", "--colsep", "--joblog", "--results", "--tmpdir", "--max-args", "--max-replace-args", "--retries",
		"--timeout", "--delay", "--halt", "--memfree", "--load", "--tagstring", "--tag-string", "--workdir", "--wd",
		"--env", "--basefile", "--return", "--transferfile", "--block", "--recstart", "--recend", "--header", "--replace",
		"--semaphorename", "--id", "--max-line-length-allowed", "--shebang-wrap", "--sshloginfile", "--resume-failed"}})
	if shell.HasOpt(opts, "--help", "-h", "--version", "-V", "--wait", "--citation", "--bibtex", "--number-of-cpus",
		"--number-of-cores", "--number-of-threads", "--number-of-sockets", "--max-line-length-allowed") {
		return false // nothing runs
	}
	repl := "{}"
	if v, ok := shell.OptValue(opts, "-I", "--replace"); ok && v != "" {
		repl = v
	}
	sep := slices.IndexFunc(rest, func(a shell.Arg) bool { return strings.HasPrefix(a.Text, ":::") })
	if sep < 0 {
		// moreutils' parallel: COMMAND -- ARGS, or -- COMMANDS.
		sep = slices.IndexFunc(rest, func(a shell.Arg) bool { return a.Text == "--" })
	}
	tmpl := rest
	var inputs []string
	if sep >= 0 {
		tmpl = rest[:sep]
		for _, a := range rest[sep:] {
			switch {
			case a.Text == ":::" || a.Text == ":::+" || a.Text == "--":
			case strings.HasPrefix(a.Text, "::::"):
				r.hidden("inputs read from a file")
			default:
				inputs = append(inputs, a.Text)
			}
		}
	}
	if len(inputs) > maxRunnerInputs {
		r.hidden("more inputs than the gate judges one by one")
		inputs = inputs[:maxRunnerInputs]
	}
	text := strings.Join(shell.Texts(tmpl), " ")
	if shell.HasOpt(opts, "--pipe", "--pipepart") && len(tmpl) > 0 && IsShell(path.Base(tmpl[0].Text)) {
		// parallel --pipe bash: the input, in blocks, is the shell's code.
		r.in.final, r.in.role = f, RoleShell
	}
	switch {
	case text == "" && len(inputs) == 0:
		r.hidden("commands read from standard input")
	case text == "":
		for _, in := range inputs {
			r.addCode(in, nil)
		}
	case len(inputs) == 0:
		r.addCode(text, nil)
	default:
		for _, in := range inputs {
			r.addCode(parallelFill(text, repl, in), nil)
		}
	}
	return false
}

// parallelPlaceholder matches GNU parallel's replacement strings.
var parallelPlaceholder = lazyRegexp(`\{(\d+)?(\.|/|//|/\.|#|%)?\}`)

// parallelFill puts one input into a command template, as parallel does:
// in place of its replacement strings, or at the end when it has none.
func parallelFill(tmpl, repl, input string) string {
	q := ShellJoin([]string{input})
	if strings.HasPrefix(input, "~") {
		q = input // the caller's shell already expanded it
	}
	out := strings.ReplaceAll(tmpl, repl, q)
	out = parallelPlaceholder().ReplaceAllLiteralString(out, q)
	if out == tmpl {
		return tmpl + " " + q
	}
	return out
}

// tmuxShellCommands are tmux's commands whose operands are a shell
// command, with the options of each that take a value.
var tmuxShellCommands = map[string]shell.OptSpec{
	"new-session": {Short: "cesnxytfF"}, "new": {Short: "cesnxytfF"},
	"new-window": {Short: "cenFt"}, "neww": {Short: "cenFt"},
	"split-window": {Short: "ceFlpt"}, "splitw": {Short: "ceFlpt"},
	"respawn-pane": {Short: "cet"}, "respawnp": {Short: "cet"},
	"respawn-window": {Short: "cet"}, "respawnw": {Short: "cet"},
	"run-shell": {Short: "dtc"}, "run": {Short: "dtc"},
	"display-popup": {Short: "bcdehsStTwxy"}, "popup": {Short: "bcdehsStTwxy"},
	"pipe-pane": {Short: "t"}, "pipep": {Short: "t"},
	"if-shell": {Short: "t"}, "if": {Short: "t"},
}

// resolveTmux: tmux's commands (separated by ";") start shells in its
// server, outside the caller's reach: new-session, new-window,
// split-window, respawn-*, run-shell, if-shell, display-popup and
// pipe-pane take a shell command; send-keys types into a shell.
func resolveTmux(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "LSfcT"})
	r.done(shell.Texts(r.rest))
	if v, ok := shell.OptValue(opts, "-c"); ok {
		r.addCode(v, nil)
	}
	for len(rest) > 0 {
		end := slices.IndexFunc(rest, func(a shell.Arg) bool { return a.Text == ";" })
		if end < 0 {
			end = len(rest)
		}
		r.tmuxCommand(rest[:end])
		rest = rest[min(end+1, len(rest)):]
	}
	return false
}

func (r *resolution) tmuxCommand(args []shell.Arg) {
	if len(args) == 0 {
		return
	}
	sub := args[0].Text
	if spec, ok := tmuxShellCommands[sub]; ok {
		_, ops := shell.SplitOpts(args[1:], spec)
		if (sub == "if-shell" || sub == "if") && len(ops) > 1 {
			r.hidden("tmux commands run by if-shell")
			ops = ops[:1]
		}
		if len(ops) > 0 {
			r.addCode(strings.Join(shell.Texts(ops), " "), nil)
		}
		return
	}
	if sub == "send-keys" || sub == "send" {
		opts, ops := shell.SplitOpts(args[1:], shell.OptSpec{Short: "tNc"})
		if shell.HasOpt(opts, "-X") {
			return // copy-mode commands
		}
		r.addCode(typedKeys(shell.Texts(ops), shell.HasOpt(opts, "-l")), nil)
	}
}

// tmuxKey matches the key names send-keys turns into keys other than
// text; each ends what the shell reads as one line.
var tmuxKey = lazyRegexp(`^([CMS]-.+|\^.|Enter|KPEnter|Escape|Up|Down|Left|Right|BSpace|Home|End|PageUp|PageDown|PgUp|PgDn|NPage|PPage|Tab|BTab|DC|IC|F[0-9]+)$`)

// typedKeys is what send-keys types: its arguments one after the other,
// Space as a space and other key names as the end of a line.
func typedKeys(keys []string, literal bool) string {
	var b strings.Builder
	for _, k := range keys {
		switch {
		case literal:
			b.WriteString(k)
		case k == "Space":
			b.WriteByte(' ')
		case tmuxKey().MatchString(k):
			b.WriteByte('\n')
		default:
			b.WriteString(k)
		}
	}
	return b.String()
}

// resolveScreen: screen CMD ARGS runs CMD in a new window; -X sends a
// command to a running session: stuff types text, exec and screen run
// a program.
func resolveScreen(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "SchpstTe"})
	if !shell.HasOpt(opts, "-X") {
		if len(rest) == 0 {
			r.done(shell.Texts(r.rest))
			return false
		}
		return r.next(opts, rest)
	}
	r.done(shell.Texts(r.rest))
	if len(rest) == 0 {
		return false
	}
	switch rest[0].Text {
	case "stuff":
		r.addCode(screenText(strings.Join(shell.Texts(rest[1:]), " ")), nil)
	case "exec", "screen":
		_, cmd := shell.SplitOpts(rest[1:], shell.OptSpec{})
		if len(cmd) > 0 {
			r.addCode(ShellJoin(shell.Texts(cmd)), nil)
		}
	case "eval", "source":
		r.hidden("screen commands")
	}
	return false
}

// screenText decodes the escapes stuff understands for the end of a line.
func screenText(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\r`, "\n", `^M`, "\n", `^J`, "\n", `\015`, "\n", `\012`, "\n").Replace(s)
}

// resolveAt: at and batch run their standard input later, from a daemon,
// as shell code; -f names a file the gate does not read.
func resolveAt(r *resolution) bool {
	opts, _ := shell.SplitOpts(r.rest, shell.OptSpec{Short: "qft"})
	f := r.done(shell.Texts(r.rest))
	if shell.HasOpt(opts, "-l", "-d", "-r", "-c", "-V") {
		return false
	}
	if v, ok := shell.OptValue(opts, "-f"); ok {
		r.hidden("the job in " + v)
		return false
	}
	r.in.final, r.in.role = f, RoleShell
	return false
}

// resolveCrontab: crontab installs its standard input (crontab -, or no
// file) or a file as the user's table, whose commands cron runs later.
func resolveCrontab(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "uc"})
	f := r.done(shell.Texts(r.rest))
	if len(rest) == 0 && shell.HasOpt(opts, "-l", "-r", "-e", "-i", "-V", "-T") {
		return false
	}
	if len(rest) == 0 || rest[0].Text == "-" {
		r.in.final, r.in.role = f, RoleCron
		return false
	}
	r.hidden("the table in " + rest[0].Text)
	r.runsFile(rest[0])
	if r.a.cronTabs == nil {
		r.a.cronTabs = make(map[string]bool)
	}
	r.a.cronTabs[cleanRel(rest[0].Text)] = true
	return false
}

// cronCommands returns the commands of a crontab's lines, each on a line
// of its own: the schedule (five fields or an @keyword) and, in a system
// table, the user are dropped; assignments and comments are kept as
// they are, which the shell reads the same way.
func cronCommands(text string, system bool) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		f := strings.Fields(l)
		skip := 0
		switch {
		case len(f) == 0 || strings.HasPrefix(l, "#") || shell.IsAssign(f[0]):
		case strings.HasPrefix(f[0], "@"):
			skip = 1
		default:
			skip = 5
		}
		if skip > 0 && system {
			skip++
		}
		if skip > 0 {
			// Cut by fields, keeping the command's own spacing and quotes.
			for range skip {
				l = strings.TrimLeft(l, " \t")
				if i := strings.IndexAny(l, " \t"); i >= 0 {
					l = l[i:]
				} else {
					l = ""
				}
			}
		}
		b.WriteString(strings.ReplaceAll(strings.TrimSpace(l), "%", "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// isCronPath reports whether a file written is a table cron reads, and
// whether it is a system one (with a user field).
func isCronPath(p string) (cron, system bool) {
	switch {
	case p == "/etc/crontab" || strings.HasPrefix(p, "/etc/cron.d/"):
		return true, true
	case strings.HasPrefix(p, "/var/spool/cron/") || strings.HasPrefix(p, "/var/cron/tabs/"):
		return true, false
	}
	return false, false
}

// resolvePerf: perf record, stat and trace run a command.
func resolvePerf(r *resolution) bool {
	if len(r.rest) == 0 {
		r.done(nil)
		return false
	}
	switch r.rest[0].Text {
	case "record", "stat", "trace", "mem", "c2c", "kmem", "lock", "sched", "kvm", "ftrace", "top":
	default:
		r.done(shell.Texts(r.rest))
		return false
	}
	opts, rest := shell.SplitOpts(r.rest[1:], shell.OptSpec{Short: "eoptCFcrxIGjmuDMLSdNaAWz", Long: []string{"--event", "--output",
		"--pid", "--tid", "--cpu", "--freq", "--count", "--repeat", "--field-separator", "--interval-print", "--cgroup",
		"--mmap-pages", "--uid", "--delay", "--call-graph", "--filter", "--control", "--switch-output"}})
	if shell.HasOpt(opts, "-p", "--pid", "-t", "--tid") || len(rest) == 0 {
		r.done(shell.Texts(r.rest))
		return false
	}
	if slices.Contains([]string{"mem", "c2c", "kmem", "lock", "sched", "kvm"}, r.rest[0].Text) {
		// perf mem record CMD …: the second word is the mode.
		if rest[0].Text != "record" && rest[0].Text != "stat" {
			r.done(shell.Texts(r.rest))
			return false
		}
		_, rest = shell.SplitOpts(rest[1:], shell.OptSpec{Short: "eotCF"})
	}
	return r.next(append([]string{r.rest[0].Text}, opts...), rest)
}

// resolveGdb: gdb --args PROG ARGS debugs (and with -ex run, runs) PROG;
// -ex commands starting with shell or ! run shell code; other commands
// that reach a shell or an interpreter ask.
func resolveGdb(r *resolution) bool {
	at := slices.IndexFunc(r.rest, func(a shell.Arg) bool { return a.Text == "--args" || a.Text == "-args" })
	own := r.rest
	if at >= 0 {
		own = r.rest[:at]
	}
	for _, v := range optVals(own, "-ex", false, "--ex", "-eval-command", "--eval-command", "-iex", "--iex",
		"-init-eval-command", "--init-eval-command") {
		r.debuggerCommand(v.Text)
	}
	if at >= 0 && at+1 < len(r.rest) {
		return r.next(shell.Texts(own), r.rest[at+1:])
	}
	r.done(shell.Texts(r.rest))
	return false
}

// resolveLldb: lldb -- PROG ARGS, and -o/-O commands.
func resolveLldb(r *resolution) bool {
	at := slices.IndexFunc(r.rest, func(a shell.Arg) bool { return a.Text == "--" })
	own := r.rest
	if at >= 0 {
		own = r.rest[:at]
	}
	for _, s := range []string{"-o", "-O", "-k", "-K"} {
		for _, v := range optVals(own, s, false, "--one-line", "--one-line-before-file", "--one-line-on-crash") {
			r.debuggerCommand(v.Text)
		}
	}
	if at >= 0 && at+1 < len(r.rest) {
		return r.next(shell.Texts(own), r.rest[at+1:])
	}
	r.done(shell.Texts(r.rest))
	return false
}

// debuggerShell matches a debugger command that runs shell code.
var debuggerShell = lazyRegexp(`^\s*(shell|platform shell|!)\s*(.*)$`)

// debuggerHidden matches a debugger command that reaches code the gate
// does not read: an interpreter, a call into the process, a script.
var debuggerHidden = lazyRegexp(`(?i)\b(python|python-interactive|pi|guile|script|source|pipe|system|exec|execl|execve|popen|dlopen)\b|\|`)

func (r *resolution) debuggerCommand(cmd string) {
	if m := debuggerShell().FindStringSubmatch(cmd); m != nil {
		r.addCode(m[2], nil)
		return
	}
	if debuggerHidden().MatchString(cmd) {
		r.hidden("debugger command " + cmd)
	}
}

// wrapperOpts lists, for the wrappers resolveOptsWrapper resolves, the
// options that take a value.
var wrapperOpts = map[string]shell.OptSpec{
	"fakeroot":      {Short: "lsib", Long: []string{"--lib", "--faked"}},
	"fakechroot":    {Short: "lsbc", Long: []string{"--lib", "--config-dir"}},
	"tsp":           {Short: "LNDE"},
	"lckdo":         {Short: "W"},
	"heaptrack":     {Short: "o", Long: []string{"--output"}},
	"uftrace":       {Short: "FNTtDdA", Long: []string{"--filter", "--notrace", "--trigger", "--time-filter", "--depth", "--data"}},
	"sandbox-exec":  {Short: "fpD"},
	"proot":         {Short: "rbwqk", Long: []string{"--rootfs", "--bind", "--mount", "--cwd", "--qemu", "--kernel-release"}},
	"schroot":       {Short: "cudn", Long: []string{"--chroot", "--user", "--directory", "--session-name"}},
	"pueue":         {Short: "wdgl", Long: []string{"--working-directory", "--delay", "--group", "--label", "--after", "--priority"}},
	"flatpak-spawn": {Long: []string{"--directory", "--env", "--forward-fd"}},
	"sshpass":       {Short: "pfdP"},
	"ssh-agent":     {Short: "aEPt"},
	"cpulimit":      {Short: "lpe", Long: []string{"--limit", "--pid", "--exe", "--path"}},
	"daemonize":     {Short: "ceEolpu"},
	"prlimit":       {Short: "p", Long: []string{"--pid", "--output"}},
	"trickle":       {Short: "udwtsnL"},
	"dbus-launch":   {Long: []string{"--config-file", "--autolaunch"}},
	"dotenv":        {Short: "ecv"},
	"env-cmd":       {Short: "fer", Long: []string{"--file", "--environments", "--rc-file"}},
}

// resolveOptsWrapper: programs that run the command after their options
// (valgrind, fakeroot, eatmydata, shx …); subcommand-style ones (rr
// record, uftrace record, pueue add) skip their subcommand first.
func resolveOptsWrapper(r *resolution) bool {
	rest := r.rest
	switch r.name {
	case "rr", "pueue":
		if len(rest) == 0 || rest[0].Text != map[string]string{"rr": "record", "pueue": "add"}[r.name] {
			r.done(shell.Texts(r.rest))
			return false
		}
		rest = rest[1:]
	case "uftrace":
		// uftrace PROG records and replays PROG; its other subcommands
		// read a recording.
		if len(rest) > 0 {
			switch rest[0].Text {
			case "record", "live":
				rest = rest[1:]
			case "replay", "report", "dump", "graph", "info", "tui", "script", "recv":
				r.done(shell.Texts(r.rest))
				return false
			}
		}
	}
	opts, cmd := shell.SplitOpts(rest, wrapperOpts[r.name])
	if shell.HasOpt(opts, "-p", "--pid", "-e", "--exe") && (r.name == "cpulimit" || r.name == "prlimit") {
		r.done(opts) // a running process, not a command
		return false
	}
	if r.name == "cross-env" || r.name == "dotenv" || r.name == "env-cmd" {
		cmd = r.takeAssigns(cmd)
	}
	if len(cmd) == 0 {
		r.done(opts)
		return false
	}
	if r.name == "pueue" && !r.a.plainWords(cmd) {
		r.done(opts)
		r.addCode(strings.Join(shell.Texts(cmd), " "), nil) // pueue runs its command through a shell
		return false
	}
	return r.next(opts, cmd)
}

// resolveHyperfine: each operand, and the values of --prepare, --setup,
// --cleanup and --conclude, is shell code hyperfine runs.
func resolveHyperfine(r *resolution) bool {
	spec := shell.OptSpec{Short: "wrmMpcsSnLPDuo", Long: []string{"--warmup", "--runs", "--min-runs", "--max-runs", "--prepare",
		"--setup", "--cleanup", "--conclude", "--shell", "--command-name", "--parameter-list", "--parameter-scan",
		"--parameter-step-size", "--time-unit", "--export-json", "--export-csv", "--export-markdown", "--export-asciidoc",
		"--export-orgmode", "--output", "--style", "--sort", "--input", "--reference"}}
	r.done(shell.Texts(r.rest))
	r.codeOf(optVals(r.rest, "-p", false, "--prepare", "--setup", "--cleanup", "--conclude", "--reference"))
	r.codeOf(optVals(r.rest, "-c", false))
	r.codeOf(optVals(r.rest, "-s", false))
	rest := r.rest
	for len(rest) > 0 {
		var ops []shell.Arg
		_, ops = shell.SplitOpts(rest, spec)
		if len(ops) == 0 {
			break
		}
		r.addCode(ops[0].Text, ops[0].Word)
		rest = ops[1:]
	}
	return false
}

// resolveEntr: entr UTILITY ARGS runs the utility on each change; with
// -s its operand is shell code.
func resolveEntr(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{})
	if len(rest) == 0 {
		r.done(opts)
		return false
	}
	if shell.HasOpt(opts, "-s") {
		r.done(shell.Texts(r.rest))
		r.addCode(strings.Join(shell.Texts(rest), " "), nil)
		return false
	}
	return r.next(opts, rest)
}

// watcherOpts are the options of watchexec, nodemon and concurrently that
// take a value; watcherCode those whose value is a command.
var watcherOpts = map[string]shell.OptSpec{
	"watchexec": {Short: "wWefisdEFpo", Long: []string{"--watch", "--watch-non-recursive", "--exts", "--filter", "--ignore",
		"--signal", "--debounce", "--shell", "--on-busy-update", "--stop-signal", "--stop-timeout", "--delay-run",
		"--project-origin", "--workdir", "--env", "--emit-events-to", "--filter-file", "--ignore-file", "--poll", "--color",
		"--filter-prog", "--fs-events", "--wrap-process", "--timeout", "--log-file"}},
	"nodemon": {Short: "wexdVIC", Long: []string{"--watch", "--ext", "--exec", "--delay", "--ignore", "--signal", "--config"}},
	"concurrently": {Short: "npcksr", Long: []string{"--names", "--prefix", "--prefix-colors", "--kill-others-on-fail",
		"--success", "--restart-tries", "--restart-after", "--max-processes", "--default-input-target", "--handle-input"}},
}

// resolveWatcher: watchexec and nodemon run their command (through a
// shell when it is one string) on each change; concurrently runs each
// operand as a command.
func resolveWatcher(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, watcherOpts[r.name])
	switch r.name {
	case "nodemon":
		if v, ok := shell.OptValue(opts, "-x", "--exec"); ok {
			r.done(shell.Texts(r.rest))
			r.addCode(v+" "+ShellJoin(shell.Texts(rest)), nil)
			return false
		}
		r.done(shell.Texts(r.rest)) // nodemon SCRIPT runs node on the script
		return false
	case "concurrently":
		r.done(shell.Texts(r.rest))
		for _, c := range rest {
			r.addCode(c.Text, c.Word)
		}
		return false
	}
	if len(rest) == 0 {
		r.done(opts)
		return false
	}
	if r.a.plainWords(rest) {
		return r.next(opts, rest)
	}
	r.done(shell.Texts(r.rest))
	r.addCode(strings.Join(shell.Texts(rest), " "), nil)
	return false
}

// bwrapArity is how many values each of bwrap's options takes.
var bwrapArity = func() map[string]int {
	m := map[string]int{}
	for _, o := range strings.Fields(`--bind --ro-bind --dev-bind --bind-try --ro-bind-try --dev-bind-try --symlink --setenv
		--chmod --file --bind-data --ro-bind-data --overlay`) {
		m[o] = 2
	}
	for _, o := range strings.Fields(`--tmpfs --proc --dev --dir --chdir --unsetenv --uid --gid --hostname --lock-file
		--sync-fd --info-fd --json-status-fd --userns --userns2 --pidns --args --seccomp --add-seccomp-fd --exec-label
		--file-label --cap-add --cap-drop --remount-ro --mqueue --perms --size --argv0 --block-fd --userns-block-fd
		--overlay-src --tmp-overlay --ro-overlay`) {
		m[o] = 1
	}
	m["--overlay"] = 3
	return m
}()

// resolveBwrap: bubblewrap runs the command after its options, some of
// which take two or three values.
func resolveBwrap(r *resolution) bool {
	rest := r.rest
	var opts []string
	for len(rest) > 0 && rest[0].IsOpt() {
		if rest[0].Text == "--" {
			rest = rest[1:]
			break
		}
		n := min(1+bwrapArity[rest[0].Text], len(rest))
		opts = append(opts, shell.Texts(rest[:n])...)
		rest = rest[n:]
	}
	if len(rest) == 0 {
		r.done(opts)
		return false
	}
	return r.next(opts, rest)
}

// expectSpawn matches the commands an expect script starts.
var expectSpawn = lazyRegexp(`(?:^|[;\n\[{]\s*)(?:spawn|exec|system)\s+(?:-\S+\s+)*([^;\n\]}]+)`)

// resolveExpect: expect -c SCRIPT: the programs it spawns or execs are
// judged as commands; other Tcl is not code the gate reads.
func resolveExpect(r *resolution) bool {
	r.done(shell.Texts(r.rest))
	for _, v := range optVals(r.rest, "-c", false) {
		for _, m := range expectSpawn().FindAllStringSubmatch(v.Text, -1) {
			r.addCode(m[1], nil)
		}
		if strings.Contains(v.Text, "eval") || strings.Contains(v.Text, "source") {
			r.hidden("Tcl code")
		}
	}
	return false
}

// resolveTerminal: terminal emulators run the command after -e (or, for
// some, after --, -x or as their operands).
func resolveTerminal(r *resolution) bool {
	for i, a := range r.rest {
		switch a.Text {
		case "-e", "-x", "--", "--command", "--execute":
			if i+1 >= len(r.rest) {
				break
			}
			cmd := r.rest[i+1:]
			if a.Text != "--" && len(cmd) == 1 {
				r.done(shell.Texts(r.rest[:i]))
				r.addCode(cmd[0].Text, cmd[0].Word) // one string: some run it through a shell
				return false
			}
			return r.next(shell.Texts(r.rest[:i]), cmd)
		}
		if strings.HasPrefix(a.Text, "--command=") || strings.HasPrefix(a.Text, "-e=") {
			r.done(shell.Texts(r.rest))
			r.addCode(a.Text[strings.IndexByte(a.Text, '=')+1:], nil)
			return false
		}
	}
	if (r.name == "kitty" || r.name == "foot" || r.name == "st") && len(r.rest) > 0 {
		if _, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "cdoT", Long: []string{"--config", "--directory", "--override", "--title", "--class", "--name"}}); len(rest) > 0 {
			return r.next(nil, rest)
		}
	}
	r.done(shell.Texts(r.rest))
	return false
}

// resolveFetchRunner: npx, bunx, pnpx and uvx fetch a package and run its
// program with the arguments that follow; npx -c runs shell code.
func resolveFetchRunner(r *resolution) bool {
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "pcw", Long: []string{"--package", "--call", "--from", "--with",
		"--python", "--index", "--index-url", "--extra-index-url", "--with-requirements", "--constraints", "--overrides",
		"--workspace", "--registry", "--cache", "--prefix"}})
	if v, ok := shell.OptValue(opts, "-c", "--call"); ok && r.name != "uvx" {
		r.done(opts)
		r.addCode(v, nil)
		return false
	}
	remoteRun(r, opts, rest)
	if len(rest) == 0 {
		r.done(opts)
		return false
	}
	return r.next(opts, withoutVersion(rest))
}

// remoteRun records a package runner told to fetch what it runs from a
// URL or a git repository rather than its registry (npx github:x/y,
// uvx --from git+https://…, pipx run --spec URL): code nobody reviewed.
func remoteRun(r *resolution, opts []string, rest []shell.Arg) {
	for i, o := range opts {
		if i > 0 && isRemoteSpec(o) && (strings.HasPrefix(opts[i-1], "-")) {
			r.fact(factRunsRemote, r.name, o)
			return
		}
		if v, ok := cutAnyPrefix(o, "--from=", "--package="); ok && isRemoteSpec(v) {
			r.fact(factRunsRemote, r.name, v)
			return
		}
	}
	if len(rest) > 0 && isRemoteSpec(rest[0].Text) {
		r.fact(factRunsRemote, r.name, rest[0].Text)
	}
}

// isRemoteSpec reports whether a package spec names a URL or a git
// repository (git+https://…, github:x/y, git@host:x/y, x/y#ref).
func isRemoteSpec(s string) bool {
	for _, p := range []string{"git+", "http://", "https://", "git://", "ssh://", "github:", "gitlab:", "bitbucket:", "gist:", "git@"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.Contains(s, "/") && strings.Contains(s, "#") && !strings.HasPrefix(s, "@") && !strings.HasPrefix(s, ".")
}

// withoutVersion drops the version from a package named as the program
// to run (rimraf@5, @scope/tool@latest): the program is the package's.
func withoutVersion(args []shell.Arg) []shell.Arg {
	if i := strings.LastIndexByte(args[0].Text, '@'); i > 0 {
		out := slices.Clone(args)
		out[0] = shell.Arg{Text: args[0].Text[:i], Word: nil}
		return out
	}
	return args
}

// toolRunners are the subcommands of package and environment managers
// that run the command after them.
var toolRunners = map[string][]string{
	"npm": {"exec", "x"}, "pnpm": {"dlx", "exec"}, "yarn": {"dlx", "exec"}, "bun": {"x"},
	"uv": {"run", "tool run"}, "pipx": {"run"}, "poetry": {"run"}, "pdm": {"run"}, "pipenv": {"run"},
	"hatch": {"run"}, "conda": {"run"}, "mamba": {"run"}, "micromamba": {"run"}, "bundle": {"exec"},
	"mise": {"exec", "x"}, "rtx": {"exec", "x"}, "asdf": {"exec"}, "devbox": {"run"}, "direnv": {"exec"},
	"nix": {"develop", "shell"},
}

// runnerSubOpts are the options of those subcommands that take a value.
var runnerSubOpts = shell.OptSpec{Short: "pwnCe", Long: []string{"--package", "--with", "--python", "--from", "--project",
	"--directory", "--env-file", "--extra", "--group", "--index", "--index-url", "--extra-index-url", "--spec",
	"--pip-args", "--name", "--prefix", "--cwd", "--gemfile", "--filter", "--workspace", "--with-requirements",
	"--config", "--env", "--environment"}}

// scriptEdits returns the code a package manager is told to keep as a
// package.json script (npm pkg set scripts.NAME=CODE, npm set-script NAME
// CODE), which a later npm run, or npm itself at install (prepare,
// postinstall), runs.
func scriptEdits(name string, args []shell.Arg) []string {
	switch name {
	case "npm", "pnpm", "yarn", "bun":
	default:
		return nil
	}
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a.Text, "-") {
			words = append(words, a.Text)
		}
	}
	var out []string
	switch {
	case len(words) >= 3 && words[0] == "pkg" && words[1] == "set":
		for _, w := range words[2:] {
			if k, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(k, "scripts.") && v != "" {
				out = append(out, v)
			}
		}
	case len(words) >= 3 && words[0] == "set-script":
		out = append(out, words[2])
	}
	return out
}

// resolveToolRunner: npm exec, pnpm dlx, uv run, poetry run, bundle exec
// … run the command that follows; nix-shell --run and nix develop -c run
// shell code. Other subcommands are the tool's own.
func resolveToolRunner(r *resolution) bool {
	if r.name == "nix-shell" {
		if vs := optVals(r.rest, "", false, "--run", "--command"); len(vs) > 0 {
			r.done(shell.Texts(r.rest))
			r.codeOf(vs)
			return false
		}
		r.done(shell.Texts(r.rest))
		return false
	}
	if code := scriptEdits(r.name, r.rest); len(code) > 0 {
		// The script is judged now, as the npm run that follows would
		// run it: a publish or a curl | sh set as a script is not
		// hidden by its name.
		r.done(shell.Texts(r.rest))
		for _, c := range code {
			r.addCode(c, nil)
		}
		return false
	}
	subs := toolRunners[r.name]
	probe := rules.Command{Name: r.name}
	r.a.subcommand(&probe, subcommandSpecs[subcommandKey(r.name)], r.rest)
	if len(probe.Args) == 0 {
		return byClass(r)
	}
	sub := probe.Args[0]
	if sub == "tool" && len(probe.Args) > 1 {
		sub += " " + probe.Args[1]
	}
	if !slices.Contains(subs, sub) {
		return byClass(r)
	}
	at := slices.IndexFunc(r.rest, func(a shell.Arg) bool { return a.Text == probe.Args[0] })
	after := r.rest[at+1:]
	if strings.Contains(sub, " ") {
		after = after[1:]
	}
	opts, rest := shell.SplitOpts(after, runnerSubOpts)
	remoteRun(r, opts, rest)
	isCode := shell.HasOpt(opts, "-c", "--call", "--command")
	if code, ok := shell.OptValue(opts, "--call", "--command"); ok && !isCode {
		isCode, rest = true, append([]shell.Arg{{Text: code}}, rest...) // --call=CODE
	}
	if r.name == "nix" {
		// nix develop/shell INSTALLABLE… -c CMD ARGS; without -c, an
		// interactive shell.
		at := slices.IndexFunc(after, func(a shell.Arg) bool { return a.Text == "-c" || a.Text == "--command" })
		if at < 0 || at+1 >= len(after) {
			r.done(shell.Texts(r.rest))
			return false
		}
		return r.next(shell.Texts(r.rest[:len(r.rest)-len(after)+at+1]), after[at+1:])
	}
	if isCode {
		// npm exec -c CODE, pnpm exec -c CODE …: shell code.
		r.done(shell.Texts(r.rest))
		r.addCode(strings.Join(shell.Texts(rest), " "), nil)
		return false
	}
	switch r.name {
	case "direnv":
		if len(rest) > 0 {
			rest = rest[1:] // direnv exec DIR CMD …
		}
	case "mise", "rtx":
		if dd := slices.IndexFunc(rest, func(a shell.Arg) bool { return a.Text == "--" }); dd >= 0 {
			rest = rest[dd+1:] // mise exec TOOL@VERSION… -- CMD …
		}
	}
	if len(rest) == 0 {
		r.done(shell.Texts(r.rest))
		return false
	}
	return r.next(append(shell.Texts(r.rest[:at+1]), opts...), withoutVersion(rest))
}

// resolveDeleteTool: rimraf, del-cli and premove delete what they are
// given, recursively: judged as rm -r of the same operands.
func resolveDeleteTool(r *resolution) bool {
	var opts []string
	ops := []shell.Arg{{Text: "rm"}, {Text: "-r"}, {Text: "--"}}
	for _, a := range r.rest {
		if a.IsOpt() {
			opts = append(opts, a.Text)
		} else {
			ops = append(ops, a)
		}
	}
	return r.next(opts, ops)
}

// resolveTar: tar's compression program (-I, --use-compress-program),
// --to-command, checkpoint actions (exec=), --info-script and
// --new-volume-script, and --rsh-command run commands.
func resolveTar(r *resolution) bool {
	r.codeOf(optVals(r.rest, "-I", false, "--use-compress-program", "--to-command", "--info-script",
		"--new-volume-script", "--rsh-command"))
	r.codeOf(optVals(r.rest, "-F", false))
	for _, v := range optVals(r.rest, "", false, "--checkpoint-action") {
		if code, ok := strings.CutPrefix(v.Text, "exec="); ok {
			r.addCode(code, nil)
		}
	}
	return byClass(r)
}

// resolveRsync: the remote shell (-e, --rsh) runs locally; the program on
// the other side (--rsync-path) is shell code run there.
func resolveRsync(r *resolution) bool {
	r.codeOf(optVals(r.rest, "-e", true, "--rsh", "--rsync-path"))
	return byClass(r)
}

// resolveZip: zip -T tests the archive with -TT's or --unzip-command's
// command.
func resolveZip(r *resolution) bool {
	r.codeOf(optVals(r.rest, "-TT", false, "--unzip-command"))
	return byClass(r)
}

// resolveMan: man's pager (-P, --pager) and browser (-H, --html=) are
// commands.
func resolveMan(r *resolution) bool {
	r.codeOf(optVals(r.rest, "-P", false, "--pager"))
	for _, v := range optVals(r.rest, "", false, "--html") {
		r.addCode(v.Text, nil)
	}
	return byClass(r)
}

// resolveScp: scp -S names the program it runs for the connection (and
// sftp -D the server it runs in its place); -o ProxyCommand and kin are
// commands as they are for ssh.
func resolveScp(r *resolution) bool {
	for _, v := range optVals(r.rest, "-S", false) {
		r.addCode(v.Text, v.Word)
		if !sshPrograms[path.Base(strings.TrimSpace(v.Text))] {
			// Any program but ssh is run with the transfer's arguments,
			// a program the gate cannot read.
			r.hidden("a program in place of ssh (-S)")
		}
	}
	if r.name == "sftp" {
		r.codeOf(optVals(r.rest, "-D", false)) // the server program, run locally
	}
	r.sshOptions(r.rest)
	return byClass(r)
}

// sshPrograms are the programs scp -S and sftp -S may name to connect.
var sshPrograms = setOf(`ssh autossh ssh.exe dbclient`)

// sshCommandOptions are ssh's configuration keys whose value is a
// command: run locally before or after connecting, or on the remote side.
var sshCommandOptions = setOf(`proxycommand localcommand knownhostscommand remotecommand`)

// sshOptions queues the commands ssh's -o options name.
func (r *resolution) sshOptions(args []shell.Arg) {
	for _, v := range optVals(args, "-o", false) {
		key, val, ok := strings.Cut(strings.TrimSpace(v.Text), "=")
		if !ok {
			key, val, _ = strings.Cut(strings.TrimSpace(v.Text), " ")
		}
		if sshCommandOptions[strings.ToLower(strings.TrimSpace(key))] && strings.TrimSpace(val) != "" && !strings.EqualFold(strings.TrimSpace(val), "none") {
			r.addCode(sshTokens(val), nil)
		}
	}
}

// sshToken matches ssh's %-tokens (%h host, %p port …).
var sshToken = lazyRegexp(`%[%a-zA-Z]`)

// sshTokens replaces ssh's %-tokens with words.
func sshTokens(s string) string {
	return sshToken().ReplaceAllString(s, "x")
}

// sedExec matches sed's e command ("e cmd", "1e cmd", "/re/e cmd", "e"
// alone) and the s command's e flag.
var (
	sedExecCmd = lazyRegexp(`(?:^|[;\n}{]|[0-9$]|/)\s*e(?:\s+([^;\n}]*)|\s*(?:$|[;\n}]))`)
)

// resolveSed: GNU sed's e command runs its argument (or the pattern
// space) as shell code, and s///e runs what the substitution leaves.
func resolveSed(r *resolution) bool {
	var scripts []string
	opts, rest := shell.SplitOpts(r.rest, shell.OptSpec{Short: "efl", Long: []string{"--expression", "--file", "--line-length"}})
	for _, v := range optVals(r.rest, "-e", false, "--expression") {
		scripts = append(scripts, v.Text)
	}
	if len(scripts) == 0 && !shell.HasOpt(opts, "-f", "--file") && len(rest) > 0 {
		scripts = append(scripts, rest[0].Text)
	}
	for _, s := range scripts {
		r.sedScript(s)
	}
	return byClass(r)
}

func (r *resolution) sedScript(s string) {
	for _, m := range sedExecCmd().FindAllStringSubmatch(s, -1) {
		if strings.TrimSpace(m[1]) != "" {
			r.addCode(m[1], nil)
		} else {
			r.hidden("the pattern space run as a command")
		}
	}
	if code, ok := sedSubstExec(s); ok {
		if code == "" {
			r.hidden("the result of s///e run as a command")
		} else {
			r.addCode(code, nil)
		}
	}
}

// sedSubstExec finds an s command with the e flag in a sed script and
// returns its replacement when that is all the line becomes (s/.*/CMD/e).
func sedSubstExec(s string) (string, bool) {
	for i := 0; i+1 < len(s); i++ {
		if s[i] != 's' || (i > 0 && !strings.ContainsRune(" ;{}\n/0123456789$,", rune(s[i-1]))) {
			continue
		}
		d := s[i+1]
		if d == '\\' || d == '\n' || d == ' ' || (d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || (d >= '0' && d <= '9') {
			continue
		}
		parts, end := splitSedS(s[i+2:], d)
		if len(parts) != 2 {
			continue
		}
		flags := s[i+2+end:]
		if j := strings.IndexAny(flags, ";\n}"); j >= 0 {
			flags = flags[:j]
		}
		if strings.ContainsRune(strings.TrimSpace(flags), 'e') && !strings.ContainsAny(flags, " \t") {
			if parts[0] == ".*" || parts[0] == "^.*$" || parts[0] == "^.*" {
				return parts[1], true
			}
			return "", true
		}
	}
	return "", false
}

// splitSedS splits the pattern and replacement of an s command after its
// delimiter, returning where the flags start.
func splitSedS(s string, d byte) ([]string, int) {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			if s[i+1] != d {
				b.WriteByte('\\')
			}
			b.WriteByte(s[i+1])
			i++
		case s[i] == d:
			parts = append(parts, b.String())
			b.Reset()
			if len(parts) == 2 {
				return parts, i + 1
			}
		default:
			b.WriteByte(s[i])
		}
	}
	return parts, len(s)
}

// vimBang matches an Ex command that runs shell code: ":!cmd", a range
// filtered through a command (":%!cmd"), ":r !cmd", ":w !cmd".
var vimBang = lazyRegexp(`^[:\s]*(?:sil(?:ent)?!?\s*)?(?:[%.$,0-9'<>]*|r|read|(?:w|write)\s)\s*!(.+)$`)

// vimHidden matches Ex commands that reach code the gate does not read:
// functions that run programs, terminals, interpreters, scripts.
var vimHidden = lazyRegexp(`(?i)\b(system|systemlist|jobstart|job_start|termopen|term_start|libcall)\s*\(|` +
	`^[:\s]*(sil(ent)?!?\s*)?(ter(m(inal)?)?|lua|luado|luafile|py[3x]?|python3?|pyfile|py3file|perl|ruby|rubyfile|tcl|mzscheme|so(urce)?|exe(cute)?)\b`)

// resolveVim: -c CMD, +CMD and --cmd CMD are Ex commands; those that run
// shell code are judged as it, those that reach other code ask.
func resolveVim(r *resolution) bool {
	var cmds []string
	for _, v := range optVals(r.rest, "-c", false, "--cmd") {
		cmds = append(cmds, v.Text)
	}
	for _, a := range r.rest {
		if c, ok := strings.CutPrefix(a.Text, "+"); ok && c != "" && !isNumber(c) && !strings.HasPrefix(c, "/") {
			cmds = append(cmds, c)
		}
	}
	for _, c := range cmds {
		for part := range strings.SplitSeq(c, "|") {
			if m := vimBang().FindStringSubmatch(part); m != nil {
				r.addCode(strings.ReplaceAll(m[1], "%", "file"), nil)
				break
			}
			if vimHidden().MatchString(part) {
				r.hidden("editor command " + part)
			}
		}
	}
	return byClass(r) // a session or script file (-S) is a script, as python FILE is
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// emacsShell matches the Lisp forms that run a shell command given as a
// string; emacsHidden the forms that run or delete anything else.
var (
	emacsShell  = lazyRegexp(`\((?:async-)?shell-command(?:-to-string)?\s+"((?:\\.|[^"\\])*)"`)
	emacsHidden = lazyRegexp(`\b(shell-command|async-shell-command|call-process|call-process-shell-command|start-process|` +
		`start-process-shell-command|make-process|process-lines|delete-directory|delete-file|rename-file|write-region|eshell-command)\b`)
)

// resolveEmacs: --eval, -eval and --execute take Lisp; a shell command in
// it is judged as shell code, other ways to run or delete ask. Lisp
// loaded from a file (-l) is a script, as python FILE is.
func resolveEmacs(r *resolution) bool {
	for _, v := range optVals(r.rest, "", false, "--eval", "--execute") {
		r.emacsLisp(v.Text)
	}
	for i, a := range r.rest {
		if (a.Text == "-eval" || a.Text == "-execute") && i+1 < len(r.rest) {
			r.emacsLisp(r.rest[i+1].Text)
		}
	}
	return byClass(r)
}

func (r *resolution) emacsLisp(code string) {
	for _, m := range emacsShell().FindAllStringSubmatch(code, -1) {
		r.addCode(strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[1]), nil)
	}
	if emacsHidden().MatchString(emacsShell().ReplaceAllString(code, "")) {
		r.hidden("Lisp code")
	}
}

// resolveMake: make runs the recipes of its makefile: -f FILE, else the
// first of GNUmakefile, makefile and Makefile in the directory (-C DIR).
// A makefile written earlier in the same command is judged as the script
// it becomes (see [Analyzer.finish]); one read from a process
// substitution or standard input asks.
func resolveMake(r *resolution) bool {
	opts, _ := shell.SplitOpts(r.rest, shell.OptSpec{Short: "fCIoWjlE", Long: []string{"--file", "--makefile", "--directory",
		"--include-dir", "--old-file", "--new-file", "--what-if", "--jobs", "--load-average", "--eval", "--assume-old", "--assume-new"}})
	dir := ""
	if v, ok := shell.OptValue(opts, "-C", "--directory"); ok {
		dir = strings.TrimSuffix(v, "/") + "/"
	}
	files := optVals(r.rest, "-f", false, "--file", "--makefile")
	for _, f := range files {
		if f.Text == "-" || f.Dyn || stdinFiles[f.Text] || strings.Contains(f.Text, "<(") || strings.HasPrefix(f.Text, "/dev/fd/") || strings.HasPrefix(f.Text, "/proc/self/fd/") {
			r.hidden("a makefile read from a pipe")
		}
		f.Text = dir + f.Text
		r.runsFile(f)
		r.a.makefile(f.Text)
	}
	for _, v := range optVals(r.rest, "-E", false, "--eval") {
		r.hidden("make code given with --eval: " + v.Text)
	}
	if len(files) == 0 {
		for _, n := range []string{"GNUmakefile", "makefile", "Makefile"} {
			r.in.scripts = append(r.in.scripts, dir+n)
			r.a.makefile(dir + n)
		}
	}
	return byClass(r)
}

// makefile records a file make reads as its makefile.
func (a *Analyzer) makefile(p string) {
	if a.makefiles == nil {
		a.makefiles = make(map[string]bool)
	}
	a.makefiles[cleanRel(p)] = true
}

var (
	// makeAssign matches a variable assignment of a makefile; "!=" runs
	// its value as shell code when the makefile is read.
	makeAssign = lazyRegexp(`^\s*(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*(::?=|:::=|\?=|\+=|!=|=)\s*(.*)$`)
	// makeRef matches a reference to a variable: $(NAME) or ${NAME}.
	makeRef = lazyRegexp(`\$[({]([A-Za-z_][A-Za-z0-9_.]*)[)}]`)
	// makeAuto matches make's automatic variables ($@, $<, $(@D) …).
	makeAuto = lazyRegexp(`\$([@<^?*+|%]|[({][@<^?*+|%][DF]?[)}])`)
	// makeShell matches the shell function, which runs its argument.
	makeShell = lazyRegexp(`\$[({]shell\s+([^)}]*)[)}]`)
)

// makeDefaults are the values GNU make gives the variables recipes most
// often run as commands.
var makeDefaults = map[string]string{"CC": "cc", "CXX": "c++", "RM": "rm -f", "MAKE": "make", "AR": "ar", "LD": "ld",
	"CPP": "cc -E", "INSTALL": "install", "SHELL": "/bin/sh"}

// makeRecipes returns the shell code a makefile runs: each recipe line
// (a tab, then @, - or + flags), the recipe after "target: ;", the value
// of a "!=" assignment and of a $(shell …), with variables the makefile
// assigns (or make defaults) put in and others left as shell variables,
// so that a command held in an unknown one asks. Targets, assignments and
// directives are not shell code and are dropped.
func makeRecipes(text string) string {
	vars := maps.Clone(makeDefaults)
	var code []string
	for l := range strings.Lines(text) {
		l = strings.TrimRight(l, "\r\n")
		switch m := makeAssign().FindStringSubmatch(l); {
		case strings.HasPrefix(l, "\t"):
			code = append(code, strings.TrimLeft(l, "\t@-+ "))
		case m != nil && m[2] == "!=":
			code = append(code, m[3])
		case m != nil:
			vars[m[1]] = m[3]
		default:
			if i := strings.IndexByte(l, ':'); i > 0 {
				if _, recipe, ok := strings.Cut(l[i:], ";"); ok {
					code = append(code, strings.TrimLeft(recipe, "\t@-+ "))
				}
			}
		}
		for _, s := range makeShell().FindAllStringSubmatch(l, -1) {
			code = append(code, s[1])
		}
	}
	out := strings.ReplaceAll(strings.Join(code, "\n"), "$$", "\x00")
	out = makeAuto().ReplaceAllLiteralString(out, "file") // a target or prerequisite
	for range 2 {                                         // values may name other variables
		out = makeRef().ReplaceAllStringFunc(out, func(ref string) string {
			if v, ok := vars[makeRef().FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return "${" + ref[2:len(ref)-1] + "}"
		})
	}
	return strings.ReplaceAll(out, "\x00", "$")
}

// gitTreeWriters are git's subcommands that write files of the work tree.
var gitTreeWriters = setOf(`checkout switch reset restore stash merge pull rebase cherry-pick revert apply am clean
	read-tree checkout-index clone worktree mv rm`)

// gitWorkTree guards the work tree a git command writes when it is named
// apart from the current directory (--work-tree, GIT_WORK_TREE, -C, the
// directory clone makes): checking files out into a directory that holds
// policy writes the policy.
func (r *resolution) gitWorkTree() {
	if r.a.guard == nil || len(r.c.Args) == 0 || !gitTreeWriters[r.c.Args[0]] {
		return
	}
	var dirs []string
	g := r.c.Globals
	for i := 0; i < len(g); i++ {
		switch {
		case (g[i] == "--work-tree" || g[i] == "-C") && i+1 < len(g):
			i++
			dirs = append(dirs, g[i])
		case strings.HasPrefix(g[i], "--work-tree="):
			dirs = append(dirs, strings.TrimPrefix(g[i], "--work-tree="))
		}
	}
	for _, e := range r.c.Env {
		if v, ok := strings.CutPrefix(e, "GIT_WORK_TREE="); ok {
			dirs = append(dirs, v)
		}
	}
	if r.c.Args[0] == "clone" || r.c.Args[0] == "worktree" {
		var ops []string
		for _, a := range r.c.Args[1:] {
			if !strings.HasPrefix(a, "-") {
				ops = append(ops, a)
			}
		}
		if len(ops) >= 2 {
			dirs = append(dirs, ops[len(ops)-1], ops[len(ops)-2])
		}
	}
	for _, d := range dirs {
		r.a.guardTarget(r.in, &r.c, "git-"+r.c.Args[0], shell.Arg{Text: d}, reachMaybe)
	}
}

// codeOpts are, for programs that are not wrappers, the options whose
// value is a command they run: sort's compression program, split's
// filter, ripgrep's preprocessor.
var codeOpts = map[string]struct {
	short string
	long  []string
}{
	"sort":  {long: []string{"--compress-program"}},
	"split": {long: []string{"--filter"}},
	"rg":    {long: []string{"--pre"}},
}

// resolveCodeOpts: the command in an option (codeOpts), and less's
// +!CMD, which runs CMD in a shell; then the program as itself.
func resolveCodeOpts(r *resolution) bool {
	o := codeOpts[r.name]
	r.codeOf(optVals(r.rest, o.short, false, o.long...))
	if r.name == "less" || r.name == "more" {
		for _, a := range r.rest {
			if code, ok := strings.CutPrefix(a.Text, "+!"); ok {
				r.addCode(code, nil)
			}
		}
	}
	return byClass(r)
}

// resolveDetacher: dtach -n SOCKET CMD and abduco -c NAME CMD run CMD in
// a session that outlives the caller.
func resolveDetacher(r *resolution) bool {
	rest := r.rest
	if len(rest) < 2 || !strings.HasPrefix(rest[0].Text, "-") {
		r.done(shell.Texts(r.rest))
		return false
	}
	opts, cmd := shell.SplitOpts(rest[2:], shell.OptSpec{Short: "erz"})
	if len(cmd) == 0 {
		r.done(shell.Texts(r.rest))
		return false
	}
	return r.next(append(shell.Texts(rest[:2]), opts...), cmd)
}

// resolveZellij: zellij run [OPTIONS] [--] CMD runs CMD in a new pane.
func resolveZellij(r *resolution) bool {
	at := slices.IndexFunc(r.rest, func(a shell.Arg) bool { return a.Text == "run" })
	if at < 0 {
		r.done(shell.Texts(r.rest))
		return false
	}
	opts, cmd := shell.SplitOpts(r.rest[at+1:], shell.OptSpec{Short: "ndx", Long: []string{"--name", "--direction", "--cwd", "--height", "--width", "-x", "-y"}})
	if len(cmd) == 0 {
		r.done(shell.Texts(r.rest))
		return false
	}
	return r.next(append(shell.Texts(r.rest[:at+1]), opts...), cmd)
}

// resolveStartStop: start-stop-daemon --start --exec PROG -- ARGS runs
// PROG (or --startas's) with ARGS.
func resolveStartStop(r *resolution) bool {
	prog := optVals(r.rest, "-x", false, "--exec", "--startas")
	prog = append(prog, optVals(r.rest, "-a", false)...)
	at := slices.IndexFunc(r.rest, func(a shell.Arg) bool { return a.Text == "--" })
	start := slices.ContainsFunc(r.rest, func(a shell.Arg) bool { return a.Text == "--start" || a.Text == "-S" })
	if !start || len(prog) == 0 {
		r.done(shell.Texts(r.rest))
		return false
	}
	cmd := []shell.Arg{prog[len(prog)-1]}
	if at >= 0 {
		cmd = append(cmd, r.rest[at+1:]...)
	}
	return r.next(shell.Texts(r.rest), cmd)
}

// resolveCmake: cmake -E rm, remove and remove_directory delete, as rm
// and rm -r do; the rest of cmake is itself.
func resolveCmake(r *resolution) bool {
	if len(r.rest) < 2 || r.rest[0].Text != "-E" {
		return byClass(r)
	}
	ops := r.rest[2:]
	switch r.rest[1].Text {
	case "rm":
		return r.next([]string{"-E"}, append([]shell.Arg{{Text: "rm"}}, ops...))
	case "remove":
		return r.next([]string{"-E"}, append([]shell.Arg{{Text: "rm"}}, ops...))
	case "remove_directory":
		return r.next([]string{"-E"}, append([]shell.Arg{{Text: "rm"}, {Text: "-r"}, {Text: "--"}}, ops...))
	}
	return byClass(r)
}

// ansibleCommandModules run their arguments as a command line.
var ansibleCommandModules = setOf(`shell command raw ansible.builtin.shell ansible.builtin.command ansible.builtin.raw
	ansible.legacy.shell ansible.legacy.command ansible.legacy.raw`)

// resolveAnsible: an ad-hoc command's -a is a command line when the
// module (-m, command by default) runs one.
func resolveAnsible(r *resolution) bool {
	mod := "command"
	if m := optVals(r.rest, "-m", false, "--module-name"); len(m) > 0 {
		mod = m[len(m)-1].Text
	}
	if ansibleCommandModules[mod] {
		r.codeOf(optVals(r.rest, "-a", false, "--args"))
	}
	return byClass(r)
}

// cutAnyPrefix is strings.CutPrefix with the first of prefixes s has.
func cutAnyPrefix(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if v, ok := strings.CutPrefix(s, p); ok {
			return v, true
		}
	}
	return s, false
}
