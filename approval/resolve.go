package approval

import (
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// resolve finds the program a simple command really runs. It looks
// through wrappers (sudo, env, nice, timeout, xargs, find -exec …), which it
// also records, takes the base name of paths, and collects shell code
// passed as a string (bash -c, eval, ssh host CMD, trap, alias) for the
// walker to analyse in turn.
func (a *analyzer) resolve(in *stmtInfo, args []arg, env, via []string, source string) {
	emit := func(c command) *command {
		in.cmds = append(in.cmds, c)
		return &in.cmds[len(in.cmds)-1]
	}
	fact := func(name string, args ...string) {
		in.cmds = append(in.cmds, command{name: name, args: args, via: via, source: source})
	}
	addCode := func(text string, w *syntax.Word) {
		// Code that is nothing but a substitution is judged by what the
		// substitution runs (below), not by its placeholder.
		if w == nil || !onlySubst(text) {
			in.codes = append(in.codes, code{text: text, via: via})
		}
		if w != nil {
			if k, ok := a.substKind(w, a.src, via); ok && k != kindInit {
				fact(factSubstCode, k.String())
			}
		}
	}
	runsFile := func(f arg) {
		in.scripts = append(in.scripts, f.text)
		if f.word != nil {
			if k, ok := a.substKind(f.word, a.src, via); ok && k != kindInit {
				fact(factSubstCode, k.String())
			}
		}
	}
	for range maxWrappers { // wrappers nest; a bound keeps a pathological chain finite
		if len(args) == 0 {
			if len(env) > 0 {
				emit(command{env: env, via: via, source: source})
			}
			return
		}
		w := args[0]
		if w.dyn || w.glob {
			fact(factDynamic, w.text)
			if w.word != nil {
				if k, ok := a.substKind(w.word, a.src, via); ok && k != kindInit {
					fact(factSubstCode, k.String())
				}
			}
			return
		}
		name := canonicalName(w.text)
		rest := args[1:]
		c := command{name: name, path: w.text, env: env, via: via, source: source}
		if strings.Contains(w.text, "/") {
			in.scripts = append(in.scripts, w.text)
		}
		next := func(opts []string, r []arg) {
			c.args = opts
			emit(c)
			args = r
			via = append(via[:len(via):len(via)], name)
		}
		switch name {
		case "sudo", "doas", "pkexec", "run0", "please":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			for len(r) > 0 && isAssign(r[0].text) {
				env = append(env[:len(env):len(env)], r[0].text)
				r = r[1:]
			}
			if hasOpt(opts, "-e", "--edit", "-l", "--list", "-v", "--validate") {
				c.args = opts
				emit(c)
				return
			}
			next(opts, r)
			continue
		case "env":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			if s, ok := optValue(opts, "-S", "--split-string"); ok {
				c.args = opts
				emit(c)
				addCode(s+" "+line(texts(r), true), nil)
				return
			}
			for len(r) > 0 && isAssign(r[0].text) {
				env = append(env[:len(env):len(env)], r[0].text)
				r = r[1:]
			}
			c.env = env
			next(opts, r)
			continue
		case "nice", "nohup", "setsid", "time", "stdbuf", "builtin", "exec", "then", "do",
			"noglob", "nocorrect", "catchsegv", "unbuffer", "dbus-run-session", "proxychains",
			"proxychains4", "torsocks", "tsocks", "firejail", "caffeinate", "xvfb-run",
			"systemd-run", "strace", "ltrace", "unshare", "nsenter", "setpriv", "doit",
			"with-contenv", "s6-setuidgid", "gosu", "su-exec", "chpst", "rlwrap", "ionice",
			"numactl", "cgexec", "systemd-inhibit", "retry", "tini", "dumb-init":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			if name == "ionice" && hasOpt(opts, "-p", "-P", "-u") {
				c.args = opts
				emit(c)
				return
			}
			if (name == "gosu" || name == "su-exec" || name == "s6-setuidgid" || name == "chpst" && hasOpt(opts, "-u")) && len(r) > 0 {
				r = r[1:] // the user
			}
			next(opts, r)
			continue
		case "timeout", "chroot", "chrt", "taskset", "faketime", "busybox", "toybox":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			if hasOpt(opts, "-p", "--pid", "--all-tasks") || len(r) == 0 {
				c.args = opts
				emit(c)
				return
			}
			if name != "busybox" && name != "toybox" {
				r = r[1:] // duration, new root, priority, mask or time
			}
			next(opts, r)
			continue
		case "command":
			opts, r := splitOpts(rest, optSpec{})
			if hasOpt(opts, "-v", "-V") {
				return // only looks the name up
			}
			args = r
			continue
		case "xargs":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			if len(r) == 0 {
				c.args = opts
				emit(c)
				return // runs echo
			}
			next(opts, r)
			continue
		case "watch":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			if hasOpt(opts, "-x", "--exec") {
				next(opts, r)
				continue
			}
			c.args = opts
			emit(c)
			addCode(strings.Join(texts(r), " "), nil)
			return
		case "flock":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			if s, ok := optValue(opts, "-c", "--command"); ok {
				c.args = opts
				emit(c)
				addCode(s, nil)
				return
			}
			if len(r) < 2 {
				c.args = opts
				emit(c)
				return
			}
			next(opts, r[1:])
			continue
		case "su", "runuser", "sg", "script", "sudosh", "ksu":
			opts, r := splitOpts(rest, wrapperSpecs[name])
			c.args = texts(rest)
			emit(c)
			if s, ok := optValue(opts, "-c", "--command"); ok {
				addCode(s, nil)
				return
			}
			for i := 0; i+1 < len(r); i++ {
				if r[i].text == "-c" || r[i].text == "--command" {
					addCode(r[i+1].text, r[i+1].word)
					return
				}
			}
			if name == "sg" && len(r) > 1 {
				addCode(strings.Join(texts(r[1:]), " "), nil)
				return
			}
			if name == "runuser" && hasOpt(opts, "-u", "--user") && len(r) > 0 {
				args = r
				via = append(via[:len(via):len(via)], name)
				continue
			}
			return
		case "eval":
			c.args = texts(rest)
			emit(c)
			var ws []*syntax.Word
			for _, r := range rest {
				if r.word != nil {
					ws = append(ws, r.word)
				}
			}
			if text := strings.Join(texts(rest), " "); !onlySubst(text) {
				addCode(text, nil)
			}
			for _, w := range ws {
				if k, ok := a.substKind(w, a.src, via); ok && k != kindInit {
					fact(factSubstCode, k.String())
				}
			}
			return
		case "source", ".":
			c.args = texts(rest)
			emit(c)
			if len(rest) > 0 {
				runsFile(rest[0])
			}
			return
		case "trap":
			c.args = texts(rest)
			emit(c)
			if len(rest) > 1 && !rest[0].isOpt() && rest[0].text != "-" {
				addCode(rest[0].text, rest[0].word)
			}
			return
		case "alias":
			c.args = texts(rest)
			emit(c)
			for _, r := range rest {
				if _, v, ok := strings.Cut(r.text, "="); ok {
					addCode(v, nil)
				}
			}
			return
		case "ssh", "mosh":
			opts, r := splitOpts(rest, wrapperSpecs["ssh"])
			c.args = texts(rest)
			f := emit(c)
			if len(r) == 0 || hasOpt(opts, "-N", "-W") {
				return
			}
			if len(r) == 1 {
				in.final, in.role = f, roleShell
				return
			}
			addCode(strings.Join(texts(r[1:]), " "), nil)
			return
		case "find", "fd", "fdfind":
			c.args = texts(rest)
			emit(c)
			if name == "find" {
				a.guardCommand(in, &c, rest)
			}
			a.findExec(in, name, rest, env, via, source)
			return
		case "echo":
			c.args = texts(rest)
			in.final = emit(c)
			r, decode := rest, false
			for len(r) > 0 && echoOpt.MatchString(r[0].text) {
				decode = decode || strings.Contains(r[0].text, "e")
				r = r[1:]
			}
			text := strings.Join(texts(r), " ")
			if decode {
				text = decodeANSIC(text)
			}
			in.prints, in.printsOK = text, allLiteral(r)
			return
		case "printf":
			c.args = texts(rest)
			in.final = emit(c)
			if len(rest) > 0 && !rest[0].isOpt() && allLiteral(rest) {
				in.prints, in.printsOK = printfText(rest[0].text, texts(rest[1:])), true
			}
			return
		case "chmod":
			c.args = texts(rest)
			in.final = emit(c)
			a.chmodTargets(rest)
			a.guardCommand(in, &c, rest)
			return
		}
		if isShell(name) {
			opts, r := splitOpts(rest, optSpec{short: "o", long: []string{"--rcfile", "--init-file"}})
			c.args = texts(rest)
			f := emit(c)
			switch {
			case hasOpt(opts, "-c"):
				if len(r) > 0 {
					addCode(r[0].text, r[0].word)
				}
			case hasOpt(opts, "-s") || len(r) == 0 || r[0].text == "-":
				in.final, in.role = f, roleShell
			default:
				runsFile(r[0])
			}
			return
		}
		if kind := interpKind(name); kind != "" {
			if mod, r, ok := a.interp(in, c, kind, rest, runsFile); ok {
				// python -m pip …: judge the module like the program.
				args = append([]arg{{text: mod}}, r...)
				via = append(via[:len(via):len(via)], name)
				continue
			}
			return
		}
		if spec, ok := subcommandSpecs[subcommandKey(name)]; ok {
			a.subcommand(&c, spec, rest)
			in.final = emit(c)
			a.writeTargets(in, &c, rest)
			a.guardCommand(in, &c, rest)
			return
		}
		c.args = texts(rest)
		in.final = emit(c)
		switch {
		case sqlKeywords[name] && (w.text == strings.ToUpper(w.text) || len(rest) > 0 && sqlObjects[strings.ToLower(rest[0].text)]):
			in.cmds = append(in.cmds, sqlFacts(w.text+" "+strings.Join(texts(rest), " "), via)...)
		case sqlClients[name] != "":
			a.sqlClient(in, name, rest, via)
		case name == "chpasswd":
			in.role = roleAccounts
		}
		a.writeTargets(in, &c, rest)
		a.guardCommand(in, &c, rest)
		return
	}
	fact(factTooDeep, tooManyWrappersDetail(maxWrappers))
}

// onlySubst reports whether text is only command-substitution
// placeholders, as [wordParts] writes them.
func onlySubst(text string) bool {
	t := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(text, "$(…)", ""), "<(…)", ""))
	return t == "" && text != ""
}

var echoOpt = regexp.MustCompile(`^-[neE]+$`)

func allLiteral(args []arg) bool {
	for _, a := range args {
		if a.dyn {
			return false
		}
	}
	return true
}

// printfText formats like printf for %s, %b, %d and %%; enough to see
// the text a script pipes into a shell.
func printfText(format string, args []string) string {
	format = decodeANSIC(format)
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 >= len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 's', 'd', 'i', 'c':
			if len(args) > 0 {
				b.WriteString(args[0])
				args = args[1:]
			}
		case 'b':
			if len(args) > 0 {
				b.WriteString(decodeANSIC(args[0]))
				args = args[1:]
			}
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	for _, s := range args {
		b.WriteByte(' ')
		b.WriteString(s)
	}
	return b.String()
}

// findExec resolves the commands find -exec (and fd -x) runs.
func (a *analyzer) findExec(in *stmtInfo, name string, rest []arg, env, via []string, source string) {
	via = append(via[:len(via):len(via)], "find")
	for i := 0; i < len(rest); i++ {
		t := rest[i].text
		isExec := t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir"
		if name != "find" {
			isExec = t == "-x" || t == "--exec" || t == "-X" || t == "--exec-batch"
		}
		if !isExec {
			continue
		}
		j := i + 1
		for j < len(rest) && rest[j].text != ";" && rest[j].text != "+" {
			j++
		}
		a.resolve(in, rest[i+1:j], env, via, source)
		in.final, in.role, in.printsOK = nil, roleNone, false
		i = j
	}
}

// chmodTargets records files made executable.
func (a *analyzer) chmodTargets(rest []arg) {
	_, r := splitOpts(rest, optSpec{long: []string{"--reference"}})
	if len(r) < 2 || !execMode.MatchString(r[0].text) {
		return
	}
	for _, f := range r[1:] {
		a.chmodX = append(a.chmodX, f.text)
	}
}

var execMode = regexp.MustCompile(`^([ugoa]*[+=][rwxXst]*x|[0-7]*[1357][0-7]?[0-7]?)$|^[0-7]*[1357][0-7][0-7]$`)

// interp handles an interpreter: inline code and stdin are facts, a script
// operand is a file it runs, and "-m module" resolves the module like a
// program (reported through the ok result).
func (a *analyzer) interp(in *stmtInfo, c command, kind string, rest []arg, runsFile func(arg)) (module string, r []arg, ok bool) {
	inline := func(flag string) {
		in.cmds = append(in.cmds, c, command{name: factInlineCode, args: []string{c.name, flag}, via: c.via, source: c.source})
	}
	c.args = texts(rest)
	stdin := func() {
		in.cmds = append(in.cmds, c)
		in.final, in.role = &in.cmds[len(in.cmds)-1], roleInterp
	}
	switch kind {
	case "python":
		opts, r := splitOpts(rest, optSpec{short: "WXcm", long: []string{"--check-hash-based-pycs"}})
		if hasOpt(opts, "-c") {
			inline("-c")
			return "", nil, false
		}
		if m, ok := optValue(opts, "-m"); ok {
			in.cmds = append(in.cmds, c)
			return m, r, true
		}
		if len(r) == 0 || r[0].text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		runsFile(r[0])
	case "node", "bun":
		opts, r := splitOpts(rest, optSpec{short: "epr", long: []string{"--eval", "--print", "--require", "--import", "--loader", "--experimental-loader", "--input-type", "--conditions", "--title", "--env-file", "--cwd", "--config"}})
		if _, ok := optValue(opts, "-e", "-p", "--eval", "--print"); ok || hasOpt(opts, "-e", "-p") {
			inline("-e")
			return "", nil, false
		}
		if len(r) == 0 || r[0].text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		if kind == "node" {
			runsFile(r[0])
		}
	case "deno":
		opts, r := splitOpts(rest, optSpec{short: "e", long: []string{"--eval"}})
		if hasOpt(opts, "-e", "--eval") || len(r) > 0 && r[0].text == "eval" {
			inline("eval")
			return "", nil, false
		}
		if len(r) == 0 || r[0].text == "repl" || len(r) > 1 && r[0].text == "run" && r[1].text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
	case "perl", "ruby":
		spec := optSpec{short: "eE"}
		if kind == "ruby" {
			spec = optSpec{short: "eIrCEF"}
		}
		opts, r := splitOpts(rest, spec)
		code := hasOpt(opts, "-e") || kind == "perl" && hasOpt(opts, "-E")
		files := r
		if !code && len(r) > 0 {
			files = r[1:]
		}
		if hasOpt(opts, "-i") || hasOptPrefix(opts, "--in-place") {
			for _, f := range files {
				in.cmds = append(in.cmds, command{name: factWrite, args: []string{kind + "-i", f.text}, via: c.via, source: c.source})
				a.guardTarget(in, &c, kind+"-i", f, reachWrite)
			}
		}
		if code {
			inline("-e")
			return "", nil, false
		}
		if len(r) == 0 || r[0].text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		runsFile(r[0])
	case "php":
		opts, r := splitOpts(rest, optSpec{short: "rcdfzt", long: []string{"--run"}})
		if hasOpt(opts, "-r", "--run") {
			inline("-r")
			return "", nil, false
		}
		if len(r) == 0 && !hasOpt(opts, "-f", "-S", "-a", "-v", "-m", "-i", "-h", "-l") {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
	case "eflag": // lua, Rscript, julia, osascript, groovy …
		opts, r := splitOpts(rest, optSpec{short: "el", long: []string{"--eval", "--expr", "--execute"}})
		if hasOpt(opts, "-e", "--eval", "--expr", "--execute") || hasOptPrefix(opts, "--eval=", "--expr=") {
			inline("-e")
			return "", nil, false
		}
		if len(r) == 0 || r[0].text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		runsFile(r[0])
	case "powershell":
		if len(rest) == 0 {
			stdin()
			return "", nil, false
		}
		for i, r := range rest {
			if isPwshCodeFlag(r.text) || i == 0 && !strings.HasPrefix(r.text, "-") && !strings.HasPrefix(r.text, "/") {
				inline(r.text)
				return "", nil, false
			}
		}
		in.cmds = append(in.cmds, c)
	case "cmd":
		for _, r := range rest {
			if t := strings.ToLower(r.text); t == "/c" || t == "/k" || t == "/r" {
				inline(t)
				return "", nil, false
			}
		}
		stdin()
	}
	return "", nil, false
}

// isPwshCodeFlag reports whether s is PowerShell's -Command, -EncodedCommand
// or -File, which PowerShell accepts abbreviated and with / or -.
func isPwshCodeFlag(s string) bool {
	if len(s) < 2 || s[0] != '-' && s[0] != '/' {
		return false
	}
	f := strings.ToLower(strings.TrimLeft(s, "-/"))
	return f != "" && (strings.HasPrefix("command", f) || strings.HasPrefix("encodedcommand", f) && len(f) >= 2 ||
		strings.HasPrefix("file", f) || f == "ec" || f == "cwa" || strings.HasPrefix("commandwithargs", f) && len(f) > 7)
}

func hasOptPrefix(opts []string, prefixes ...string) bool {
	for _, o := range opts {
		for _, p := range prefixes {
			if strings.HasPrefix(o, p) {
				return true
			}
		}
	}
	return false
}

// subcommand splits a tool's global options from its subcommand. For the
// container CLIs the subcommand is the first known one, so an unknown
// option value ("--opt val ps") is not mistaken for it.
func (a *analyzer) subcommand(c *command, spec optSpec, rest []arg) {
	name := c.name
	if name == "docker-compose" || name == "podman-compose" {
		c.name = "docker"
		rest = append([]arg{{text: "compose"}}, rest...)
	}
	if name == "podman" || name == "nerdctl" {
		c.name = "docker"
	}
	var globals []string
	i := 0
	for i < len(rest) {
		t := rest[i].text
		if t == "--" {
			i++
			break
		}
		if !rest[i].isOpt() {
			if c.name != "docker" || dockerSubcommands[t] {
				break
			}
			globals = append(globals, t)
			i++
			continue
		}
		o, _ := splitOpts(rest[i:i+1], spec)
		globals = append(globals, o...)
		i++
		n, _, hasValue := strings.Cut(t, "=")
		takes := strings.HasPrefix(t, "--") && !hasValue && containsStr(spec.long, n) ||
			!strings.HasPrefix(t, "--") && len(t) >= 2 && strings.IndexByte(spec.short, t[len(t)-1]) >= 0 && !strings.ContainsAny(t[1:len(t)-1], spec.short)
		if takes && i < len(rest) {
			globals = append(globals, rest[i].text)
			i++
		}
	}
	c.globals = globals
	c.args = texts(rest[i:])
	if c.name == "docker" && len(c.args) > 0 && c.args[0] == "compose" {
		sub := &command{name: "compose"}
		a.subcommand(sub, composeSpec, rest[i+1:])
		c.globals = append(c.globals, sub.globals...)
		c.args = append([]string{"compose"}, sub.args...)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func subcommandKey(name string) string {
	if strings.HasPrefix(name, "pip") && strings.Trim(name[3:], "0123456789.") == "" {
		return "pip"
	}
	return name
}

// writeTargets records the files a command writes: tee, cp, mv, install,
// ln, rsync, sed -i, dd of=, curl -o, wget -O.
func (a *analyzer) writeTargets(in *stmtInfo, c *command, rest []arg) {
	add := func(how, target string) {
		in.cmds = append(in.cmds, command{name: factWrite, args: []string{how, target}, via: c.via, source: c.source})
	}
	switch c.name {
	case "tee":
		opts, r := splitOpts(rest, optSpec{long: []string{"--output-error"}})
		how := "tee"
		if hasOpt(opts, "-a", "--append") {
			how = "tee-a"
		}
		for _, f := range r {
			add(how, f.text)
		}
	case "cp", "mv", "install", "ln", "rsync", "scp", "ditto":
		opts, r := splitOpts(rest, wrapperSpecs["cp"])
		if t, ok := optValue(opts, "-t", "--target-directory"); ok {
			add(c.name, t)
			return
		}
		if c.name == "install" && hasOpt(opts, "-d", "--directory") {
			for _, f := range r {
				add(c.name, f.text)
			}
			return
		}
		if len(r) >= 2 {
			add(c.name, r[len(r)-1].text)
		}
	case "sed", "gsed":
		opts, r := splitOpts(rest, optSpec{short: "efl", long: []string{"--expression", "--file", "--line-length"}})
		if !hasOpt(opts, "-i") && !hasOptPrefix(opts, "--in-place") {
			return
		}
		if !hasOpt(opts, "-e", "-f", "--expression", "--file") && len(r) > 0 {
			r = r[1:]
		}
		for _, f := range r {
			add("sed-i", f.text)
		}
	case "dd":
		for _, r := range rest {
			if t, ok := strings.CutPrefix(r.text, "of="); ok {
				add("dd", t)
			}
		}
	case "curl", "wget":
		opts, _ := splitOpts(rest, optSpec{short: "oOdHXuAeEbcFmrTwYyzKPD", long: []string{"--output", "--output-document", "--data", "--header", "--request", "--user", "--user-agent", "--referer", "--cookie", "--form", "--max-time", "--range", "--upload-file", "--write-out", "--config", "--directory-prefix", "--connect-timeout", "--retry", "--cert", "--key", "--cacert", "--proxy", "--resolve", "--data-binary", "--data-raw", "--url"}})
		flag := "-o"
		if c.name == "wget" {
			flag = "-O"
		}
		if t, ok := optValue(opts, flag, "--output", "--output-document"); ok && t != "-" {
			add(c.name, t)
		} else if c.name == "wget" || hasOpt(opts, "-O", "--remote-name") {
			for _, r := range rest {
				if u, ok := strings.CutPrefix(r.text, "http"); ok && strings.Contains(u, "://") {
					if b := path.Base(strings.SplitN(strings.SplitN(u, "?", 2)[0], "://", 2)[1]); b != "." && b != "/" {
						add(c.name, b)
					}
				}
			}
		}
	case "truncate":
		_, r := splitOpts(rest, optSpec{short: "sr", long: []string{"--size", "--reference"}})
		for _, f := range r {
			add("truncate", f.text)
		}
	}
}

// sqlClient collects the SQL a database client is given as an argument,
// or marks that it reads SQL from its input.
func (a *analyzer) sqlClient(in *stmtInfo, name string, rest []arg, via []string) {
	flags := sqlClients[name]
	spec := optSpec{short: "cedhpUuWfFqQoPSDBIN", long: []string{"--command", "--execute", "--query", "--eval", "--dbname", "--host", "--port", "--username", "--user", "--file", "--password", "--database"}}
	opts, r := splitOpts(rest, spec)
	found := false
	for _, f := range strings.Fields(flags) {
		if s, ok := optValue(opts, f); ok {
			in.cmds = append(in.cmds, sqlFacts(s, via)...)
			found = true
		}
	}
	if name == "sqlite3" || name == "duckdb" {
		if len(r) > 1 {
			in.cmds = append(in.cmds, sqlFacts(strings.Join(texts(r[1:]), " "), via)...)
			found = true
		}
	}
	if !found && !hasOpt(opts, "-f", "--file") && in.final != nil {
		in.role = roleSQL
	}
}

func sqlFacts(text string, via []string) []command {
	var out []command
	for st := range strings.SplitSeq(text, ";") {
		st = strings.Join(strings.Fields(st), " ")
		if st != "" {
			out = append(out, command{name: factSQL, args: []string{st}, via: via})
		}
	}
	return out
}
