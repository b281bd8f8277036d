package walk

import (
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/inline"
	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// resolve finds the program a simple command really runs. It looks
// through wrappers (sudo, env, nice, timeout, xargs, find -exec …), which it
// also records, takes the base name of paths, and collects shell code
// passed as a string (bash -c, eval, ssh host CMD, trap, alias) for the
// walker to analyse in turn. What each program means is a handler in
// [programs]; programs without one are judged by the classes below
// (shells, interpreters, programs with subcommands, SQL) or as themselves.
//
// nested is how many programs that run a command were passed to reach
// args (find -exec, bash -c … around this command line); each wrapper
// passed here adds one, and past [MaxWrappers] the rest of the line is
// not looked at but reported, which asks.
func (a *Analyzer) resolve(in *stmtInfo, args []shell.Arg, env, via []string, source string, nested int) {
	r := a.newResolution()
	defer a.freeResolution(r)
	*r = resolution{a: a, in: in, args: args, env: env, via: via, source: source, nested: nested}
	defer func() { in.nested = r.nested }()
	for _, code := range envCode(env) {
		r.addCode(code, nil)
	}
	for ; r.nested <= MaxWrappers; r.nested++ {
		if len(r.args) == 0 {
			if len(r.env) > 0 {
				r.emit(rules.Command{Env: r.env, Via: r.via, Source: r.source})
			}
			return
		}
		w := r.args[0]
		if w.Dyn || w.Glob {
			r.fact(rules.FactDynamic, w.Text)
			if w.Word != nil {
				r.substFact(w.Word)
			}
			return
		}
		r.w, r.name, r.rest = w, shell.CanonicalName(w.Text), r.args[1:]
		r.c = rules.Command{Name: r.name, Path: w.Text, Env: r.env, Via: r.via, Source: r.source}
		if strings.Contains(w.Text, "/") {
			in.scripts = append(in.scripts, w.Text)
		}
		h, ok := programs[r.name]
		if !ok {
			h = byClass
		}
		if !h(r) {
			return
		}
	}
	r.fact(rules.FactTooDeep, TooManyWrappersDetail(MaxWrappers))
}

// newResolution returns a resolution from the analyzer's free list (a
// new one when it is empty): resolve runs for every simple command, and
// a resolution is too large to make for each.
func (a *Analyzer) newResolution() *resolution {
	if n := len(a.freeRes); n > 0 {
		r := a.freeRes[n-1]
		a.freeRes = a.freeRes[:n-1]
		return r
	}
	return new(resolution)
}

// freeResolution puts r back, holding nothing of the command it resolved.
func (a *Analyzer) freeResolution(r *resolution) {
	*r = resolution{}
	a.freeRes = append(a.freeRes, r)
}

// resolution is the state of one resolve: what is left of the command
// line, the wrappers passed so far, and the program being looked at.
type resolution struct {
	a      *Analyzer
	in     *stmtInfo
	args   []shell.Arg // the command line from the program being looked at
	env    []string    // assignments seen so far (FOO=1 sudo BAR=2 …)
	via    []string    // the wrappers passed so far
	source string
	// nested counts the programs that run a command passed to reach the
	// one being looked at, from the top of the check: wrappers, find
	// -exec, bash -c … (see [MaxWrappers]).
	nested int

	w    shell.Arg     // the program word
	name string        // its canonical name
	rest []shell.Arg   // its arguments
	c    rules.Command // its record, to emit
}

// handler resolves one program. It returns true when the program wraps
// another, which the walk then looks at (r.args), and false when the
// command is resolved.
type handler func(r *resolution) (wraps bool)

func (r *resolution) emit(c rules.Command) *rules.Command {
	r.in.cmds = append(r.in.cmds, c)
	return &r.in.cmds[len(r.in.cmds)-1]
}

// done records the program with args as its arguments.
func (r *resolution) done(args []string) *rules.Command {
	r.c.Args = args
	return r.emit(r.c)
}

func (r *resolution) fact(name string, args ...string) {
	r.in.cmds = append(r.in.cmds, rules.Command{Name: name, Args: args, Via: r.via, Source: r.source})
}

// substFact records what a command substitution in w runs, when known.
func (r *resolution) substFact(w *syntax.Word) {
	if k, ok := r.a.substKind(w, r.a.src, r.via); ok && k != kindInit {
		r.fact(rules.FactSubstCode, k.String())
	}
}

// addCode queues shell code passed as a string for the walker. Code that
// is nothing but a substitution is judged by what the substitution runs,
// not by its placeholder.
func (r *resolution) addCode(text string, w *syntax.Word) {
	if w == nil || !onlySubst(text) {
		r.in.codes = append(r.in.codes, code{text: text, via: r.via, nested: r.nested + 1})
	}
	if w != nil {
		r.substFact(w)
	}
}

// runsFile notes a script file the command runs.
func (r *resolution) runsFile(f shell.Arg) {
	r.in.scripts = append(r.in.scripts, f.Text)
	if f.Word != nil {
		r.substFact(f.Word)
	}
}

// next records the program as a wrapper with opts and continues with the
// wrapped command line rest.
func (r *resolution) next(opts []string, rest []shell.Arg) bool {
	// The assignments in effect are for the wrapped program, which
	// carries them; the wrapper's own record does not, so a rule about
	// the environment judges the program that uses it.
	r.c.Env = nil
	r.done(opts)
	r.args = rest
	r.via = append(r.via[:len(r.via):len(r.via)], r.name)
	return true
}

// takeAssigns moves leading NAME=value words of rest into the environment.
func (r *resolution) takeAssigns(rest []shell.Arg) []shell.Arg {
	for len(rest) > 0 && shell.IsAssign(rest[0].Text) {
		r.env = append(r.env[:len(r.env):len(r.env)], rest[0].Text)
		for _, code := range envCode([]string{rest[0].Text}) {
			r.addCode(code, nil)
		}
		rest = rest[1:]
	}
	return rest
}

// onlySubst reports whether text is only command-substitution
// placeholders, as [wordParts] writes them.
func onlySubst(text string) bool {
	t := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(text, "$(…)", ""), "<(…)", ""))
	return t == "" && text != ""
}

var echoOpt = lazyRegexp(`^-[neE]+$`)

func allLiteral(args []shell.Arg) bool {
	for _, a := range args {
		if a.Dyn {
			return false
		}
	}
	return true
}

// printfText formats like printf for %s, %b, %d and %%; enough to see
// the text a script pipes into a shell.
func printfText(format string, args []string) string {
	format = shell.DecodeANSIC(format)
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
				b.WriteString(shell.DecodeANSIC(args[0]))
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

// findExec resolves the commands find -exec (and fd -x) runs and
// returns find's own arguments. Each command is one program deeper than
// find: a chain of finds, each running the next, meets the bound on
// wrappers like any other chain.
//
// A command that runs another in turn (find . -exec sudo rm …, -exec
// find …) leaves only its program's name in find's arguments: the words
// after it are in the records of the programs it runs. So each word of
// a line of nested finds is copied and judged once, not once per level,
// and the rules on find still see which program each -exec runs.
func (r *resolution) findExec() []string {
	via := append(r.via[:len(r.via):len(r.via)], "find")
	in, rest := r.in, r.rest
	var own []string
	for i := 0; i < len(rest); i++ {
		t := rest[i].Text
		own = append(own, t)
		isExec := t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir"
		if r.name != "find" {
			isExec = t == "-x" || t == "--exec" || t == "-X" || t == "--exec-batch"
		}
		if !isExec {
			continue
		}
		j := i + 1
		for j < len(rest) && rest[j].Text != ";" && rest[j].Text != "+" {
			j++
		}
		from := len(in.cmds)
		r.a.resolve(in, rest[i+1:j], r.env, via, r.source, r.nested+1)
		in.final, in.role, in.printsOK = nil, roleNone, false
		words := rest[i+1 : min(j+1, len(rest))]
		if j > i+1 && runsOthers(in.cmds[from:], len(via)) {
			words = words[:1] // the program; the terminator follows
			if j < len(rest) {
				words = append(words[:1:1], rest[j])
			}
		}
		for _, w := range words {
			own = append(own, w.Text)
		}
		i = j
	}
	return own
}

// runsOthers reports whether cmds, the records of a command reached
// through via of length depth, show that it ran another command (a
// record reached through more wrappers) or that the analysis stopped at
// the bound on them.
func runsOthers(cmds []rules.Command, depth int) bool {
	for _, c := range cmds {
		if len(c.Via) > depth || c.Name == rules.FactTooDeep {
			return true
		}
	}
	return false
}

// djangoShell handles manage.py's shells, given python's operands r:
// "shell -c CODE" is inline Python, "shell" reads Python from its
// standard input and "dbshell" SQL, as the interpreter and the database
// client would. It reports whether r was one.
func (a *Analyzer) djangoShell(in *stmtInfo, c rules.Command, r []shell.Arg, inline func(string), stdin func()) bool {
	if len(r) < 2 || path.Base(r[0].Text) != "manage.py" {
		return false
	}
	switch r[1].Text {
	case "shell", "shell_plus":
		opts, _ := shell.SplitOpts(r[2:], shell.OptSpec{Short: "ci", Long: []string{"--command", "--interface", "--settings", "--pythonpath"}})
		if shell.HasOpt(opts, "-c", "--command") || hasOptPrefix(opts, "--command=") {
			inline("-c")
		} else {
			stdin()
		}
	case "dbshell":
		in.cmds = append(in.cmds, c)
		in.final, in.role = &in.cmds[len(in.cmds)-1], RoleSQL
	default:
		return false
	}
	return true
}

// codeOperand returns the code given to an interpreter's code option
// (python -c CODE, node -e CODE, --eval=CODE), false when it is not there
// as a word whose whole text is known.
func codeOperand(args []shell.Arg, flag string) (string, bool) {
	names := []string{flag}
	switch flag {
	case "-e":
		names = append(names, "-p", "--eval", "--print")
	case "-c":
		names = append(names, "--command")
	}
	for i, a := range args {
		if a.Text == "--" {
			break
		}
		for _, n := range names {
			if a.Text == n && i+1 < len(args) {
				v := args[i+1]
				return v.Text, !v.Dyn
			}
			if strings.HasPrefix(n, "--") && strings.HasPrefix(a.Text, n+"=") {
				return a.Text[len(n)+1:], !a.Dyn
			}
		}
	}
	return "", false
}

// quietCode reports whether code, a program for an interpreter of kind
// (interpKind), plainly only computes and reads local files (see package
// inline): the gate lets it run as it lets cat and grep. Quiet code that
// reads the environment is an environment dump as env is: where the line
// sends data, it sends that (python3 -c 'print(os.environ)' | curl -d @-).
func (a *Analyzer) quietCode(kind, code string) bool {
	if !quietCode(kind, code) {
		return false
	}
	if strings.Contains(code, "environ") || strings.Contains(code, "getenv") || strings.Contains(code, ".env") {
		a.readsIn = append(a.readsIn, secretEnv)
	}
	// And the files it names are files it may read and print, as cat's
	// are (open('/home/u/.ssh/id_rsa').read() | curl -d @-).
	a.readsIn = append(a.readsIn, lineWords(code)...)
	return true
}

func quietCode(kind, code string) bool {
	var lang inline.Lang
	switch kind {
	case "python":
		lang = inline.Python
	case "node", "bun", "deno":
		lang = inline.JavaScript
	default:
		return false
	}
	ok, _ := inline.Quiet(lang, code)
	return ok
}

// chmodTargets records files made executable.
func (a *Analyzer) chmodTargets(rest []shell.Arg) {
	_, r := shell.SplitOpts(rest, shell.OptSpec{Long: []string{"--reference"}})
	if len(r) < 2 || !execMode().MatchString(r[0].Text) {
		return
	}
	for _, f := range r[1:] {
		a.chmodX = append(a.chmodX, f.Text)
	}
}

var execMode = lazyRegexp(`^([ugoa]*[+=][rwxXst]*x|[0-7]*[1357][0-7]?[0-7]?)$|^[0-7]*[1357][0-7][0-7]$`)

// interp handles an interpreter: inline code and stdin are facts, a script
// operand is a file it runs, and "-m module" resolves the module like a
// program (reported through the ok result).
func (a *Analyzer) interp(in *stmtInfo, c rules.Command, kind string, rest []shell.Arg, runsFile func(shell.Arg)) (module string, r []shell.Arg, ok bool) {
	inline := func(flag string) {
		if code, ok := codeOperand(rest, flag); ok && a.quietCode(kind, code) {
			in.cmds = append(in.cmds, c) // plainly local, read-only code
			return
		}
		in.cmds = append(in.cmds, c, rules.Command{Name: rules.FactInlineCode, Args: []string{c.Name, flag}, Via: c.Via, Source: c.Source})
	}
	runs := runsFile // an interpreter's file is also noted as one (see writtenForInterp)
	runsFile = func(f shell.Arg) {
		runs(f)
		a.interpRuns = append(a.interpRuns, interpRun{path: f.Text, c: c})
	}
	c.Args = shell.Texts(rest)
	stdin := func() {
		in.cmds = append(in.cmds, c)
		in.final, in.role = &in.cmds[len(in.cmds)-1], RoleInterp
	}
	switch kind {
	case "python":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "WXcm", Long: []string{"--check-hash-based-pycs"}})
		if shell.HasOpt(opts, "-c") {
			inline("-c")
			return "", nil, false
		}
		if m, ok := shell.OptValue(opts, "-m"); ok {
			in.cmds = append(in.cmds, c)
			return m, r, true
		}
		if len(r) == 0 || r[0].Text == "-" {
			stdin()
			return "", nil, false
		}
		if a.djangoShell(in, c, r, inline, stdin) {
			runsFile(r[0])
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		runsFile(r[0])
	case "node", "bun":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "epr", Long: []string{"--eval", "--print", "--require", "--import", "--loader", "--experimental-loader", "--input-type", "--conditions", "--title", "--env-file", "--cwd", "--config"}})
		if _, ok := shell.OptValue(opts, "-e", "-p", "--eval", "--print"); ok || shell.HasOpt(opts, "-e", "-p") {
			inline("-e")
			return "", nil, false
		}
		if len(r) == 0 || r[0].Text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		if kind == "node" {
			runsFile(r[0])
		}
	case "deno":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "e", Long: []string{"--eval"}})
		if shell.HasOpt(opts, "-e", "--eval") || len(r) > 0 && r[0].Text == "eval" {
			inline("eval")
			return "", nil, false
		}
		if len(r) == 0 || r[0].Text == "repl" || len(r) > 1 && r[0].Text == "run" && r[1].Text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
	case "perl", "ruby":
		spec := shell.OptSpec{Short: "eE"}
		if kind == "ruby" {
			spec = shell.OptSpec{Short: "eIrCEF"}
		}
		opts, r := shell.SplitOpts(rest, spec)
		code := shell.HasOpt(opts, "-e") || kind == "perl" && shell.HasOpt(opts, "-E")
		files := r
		if !code && len(r) > 0 {
			files = r[1:]
		}
		if shell.HasOpt(opts, "-i") || hasOptPrefix(opts, "--in-place") {
			for _, f := range files {
				in.cmds = append(in.cmds, rules.Command{Name: rules.FactWrite, Args: []string{kind + "-i", f.Text}, Via: c.Via, Source: c.Source})
				a.guardTarget(in, &c, kind+"-i", f, reachWrite)
			}
		}
		if code && kind == "perl" && perlEditOnly(optValues(opts, "-e", "-E")) {
			// perl -pi -e 's/a/b/': an edit like sed's, not a program.
			in.cmds = append(in.cmds, c)
			return "", nil, false
		}
		if code {
			inline("-e")
			return "", nil, false
		}
		if len(r) == 0 || r[0].Text == "-" {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
		runsFile(r[0])
	case "php":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "rcdfzt", Long: []string{"--run"}})
		if shell.HasOpt(opts, "-r", "--run") {
			inline("-r")
			return "", nil, false
		}
		if len(r) == 0 && !shell.HasOpt(opts, "-f", "-S", "-a", "-v", "-m", "-i", "-h", "-l") {
			stdin()
			return "", nil, false
		}
		in.cmds = append(in.cmds, c)
	case "eflag": // lua, Rscript, julia, osascript, groovy …
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "el", Long: []string{"--eval", "--expr", "--execute"}})
		if shell.HasOpt(opts, "-e", "--eval", "--expr", "--execute") || hasOptPrefix(opts, "--eval=", "--expr=") {
			inline("-e")
			return "", nil, false
		}
		if len(r) == 0 || r[0].Text == "-" {
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
			if isPwshCodeFlag(r.Text) || i == 0 && !strings.HasPrefix(r.Text, "-") && !strings.HasPrefix(r.Text, "/") {
				inline(r.Text)
				return "", nil, false
			}
		}
		in.cmds = append(in.cmds, c)
	case "cmd":
		for _, r := range rest {
			if t := strings.ToLower(r.Text); t == "/c" || t == "/k" || t == "/r" {
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

// optValues returns the values of every occurrence of names in expanded opts.
func optValues(opts []string, names ...string) []string {
	var out []string
	for i := 0; i+1 < len(opts); i++ {
		if containsStr(names, opts[i]) {
			out = append(out, opts[i+1])
			i++
		}
	}
	return out
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

// subcommand splits a tool's global options from its subcommand. The
// subcommand is the first operand that is a known one ([subcommandNames]),
// so a value of an option the gate does not know ("docker --opt val ps",
// "git --foo bar push") is not mistaken for it; operands skipped on the way
// stay with the global options. When no operand is a known subcommand, the
// first operand is the subcommand.
func (a *Analyzer) subcommand(c *rules.Command, spec shell.OptSpec, rest []shell.Arg) {
	name := c.Name
	if name == "docker-compose" || name == "podman-compose" {
		c.Name = "docker"
		rest = append([]shell.Arg{{Text: "compose"}}, rest...)
	}
	if name == "podman" || name == "nerdctl" {
		c.Name = "docker"
	}
	known := subcommandNames[subcommandKey(c.Name)]
	var globals []string
	i, first, firstGlobals := 0, -1, 0
	for i < len(rest) {
		t := rest[i].Text
		if t == "--" {
			i++
			break
		}
		if !rest[i].IsOpt() {
			if known == nil || known[t] {
				break
			}
			if first < 0 {
				first, firstGlobals = i, len(globals)
			}
			globals = append(globals, t)
			i++
			continue
		}
		o, _ := shell.SplitOpts(rest[i:i+1], spec)
		globals = append(globals, o...)
		i++
		n, _, hasValue := strings.Cut(t, "=")
		takes := strings.HasPrefix(t, "--") && !hasValue && containsStr(spec.Long, n) ||
			!strings.HasPrefix(t, "--") && len(t) >= 2 && strings.IndexByte(spec.Short, t[len(t)-1]) >= 0 && !strings.ContainsAny(t[1:len(t)-1], spec.Short)
		if takes && i < len(rest) {
			globals = append(globals, rest[i].Text)
			i++
		}
	}
	if i >= len(rest) && first >= 0 {
		// No known subcommand: the first operand is it.
		i, globals = first, globals[:firstGlobals]
	}
	c.Globals = globals
	c.Args = a.texts(rest[i:])
	if c.Name == "docker" && len(c.Args) > 0 && c.Args[0] == "compose" {
		sub := &rules.Command{Name: "compose"}
		a.subcommand(sub, composeSpec, rest[i+1:])
		c.Globals = append(c.Globals, sub.Globals...)
		c.Args = append([]string{"compose"}, sub.Args...)
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
func (a *Analyzer) writeTargets(in *stmtInfo, c *rules.Command, rest []shell.Arg) {
	add := func(how, target string) {
		in.cmds = append(in.cmds, rules.Command{Name: rules.FactWrite, Args: []string{how, target}, Via: c.Via, Source: c.Source})
	}
	switch c.Name {
	case "tee":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Long: []string{"--output-error"}})
		how := "tee"
		if shell.HasOpt(opts, "-a", "--append") {
			how = "tee-a"
		}
		for _, f := range r {
			add(how, f.Text)
		}
	case "cp", "mv", "install", "ln", "rsync", "scp", "ditto":
		opts, r := shell.SplitOpts(rest, wrapperSpecs["cp"])
		if t, ok := shell.OptValue(opts, "-t", "--target-directory"); ok {
			add(c.Name, t)
			return
		}
		if c.Name == "install" && shell.HasOpt(opts, "-d", "--directory") {
			for _, f := range r {
				add(c.Name, f.Text)
			}
			return
		}
		if len(r) >= 2 {
			how := c.Name
			if (c.Name == "cp" || c.Name == "mv") && (shell.HasOpt(opts, "-n", "--no-clobber", "--update=none") || r[len(r)-1].Word != nil && slices.Contains(a.createOnly, r[len(r)-1].Word)) {
				how += "-n" // creates the file, never replaces it
			}
			add(how, r[len(r)-1].Text)
		}
	case "sed", "gsed":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "efl", Long: []string{"--expression", "--file", "--line-length"}})
		if !shell.HasOpt(opts, "-i") && !hasOptPrefix(opts, "--in-place") {
			return
		}
		scripts := optValues(opts, "-e", "--expression")
		if !shell.HasOpt(opts, "-e", "-f", "--expression", "--file") && len(r) > 0 {
			scripts = append(scripts, r[0].Text)
			r = r[1:]
		}
		for _, f := range r {
			add("sed-i", f.Text)
			// What the edit inserts into a file a tool runs later is
			// judged as the code it is (laterRunCode).
			if laterRunExtract(f.Text) != nil || autorunPython(f.Text) {
				for _, rep := range sedReplacements(strings.Join(scripts, ";")) {
					a.writes = append(a.writes, scriptWrite{target: f.Text, text: rep, via: c.Via, nested: in.nested})
				}
			}
		}
	case "dd":
		for _, r := range rest {
			if t, ok := strings.CutPrefix(r.Text, "of="); ok {
				add("dd", t)
			}
		}
	case "curl", "wget":
		opts, _ := shell.SplitOpts(rest, shell.OptSpec{Short: "oOdHXuAeEbcFmrTwYyzKPD", Long: []string{"--output", "--output-document", "--data", "--header", "--request", "--user", "--user-agent", "--referer", "--cookie", "--form", "--max-time", "--range", "--upload-file", "--write-out", "--config", "--directory-prefix", "--connect-timeout", "--retry", "--cert", "--key", "--cacert", "--proxy", "--resolve", "--data-binary", "--data-raw", "--url"}})
		flag := "-o"
		if c.Name == "wget" {
			flag = "-O"
		}
		t, ok := shell.OptValue(opts, flag, "--output", "--output-document")
		if !ok {
			// curl reads its options after the URL too (curl URL -o f).
			t, ok = optAfterOperands(rest, flag, "--output", "--output-document")
		}
		if ok && t != "-" {
			add(c.Name, t)
		} else if c.Name == "wget" || shell.HasOpt(opts, "-O", "--remote-name") {
			for _, r := range rest {
				if u, ok := strings.CutPrefix(r.Text, "http"); ok && strings.Contains(u, "://") {
					if b := path.Base(strings.SplitN(strings.SplitN(u, "?", 2)[0], "://", 2)[1]); b != "." && b != "/" {
						add(c.Name, b)
					}
				}
			}
		}
	case "truncate":
		_, r := shell.SplitOpts(rest, shell.OptSpec{Short: "sr", Long: []string{"--size", "--reference"}})
		for _, f := range r {
			add("truncate", f.Text)
		}
	}
}

// optAfterOperands returns the value of the first of names that stands
// after an operand, for programs that read options wherever they stand.
func optAfterOperands(rest []shell.Arg, names ...string) (string, bool) {
	for i := 0; i+1 < len(rest); i++ {
		if containsStr(names, rest[i].Text) {
			return rest[i+1].Text, true
		}
	}
	return "", false
}

// sqlClient collects the SQL a database client is given as an argument
// (its SQL options are found wherever they stand: psql DB -c …), or marks
// that it reads SQL from its input. SQL the gate cannot read (a file,
// a variable) is the fact factStoreHidden.
func (a *Analyzer) sqlClient(in *stmtInfo, name string, rest []shell.Arg, via []string) {
	spec := shell.OptSpec{Short: "cedhpUuWfFqQoPSDBIN", Long: []string{"--command", "--execute", "--query", "--eval", "--dbname", "--host", "--port", "--username", "--user", "--file", "--password", "--database"}}
	_, r := shell.SplitOpts(rest, spec)
	found := false
	for _, f := range strings.Fields(sqlClients[name]) {
		var vals []shell.Arg
		if strings.HasPrefix(f, "--") {
			vals = optVals(rest, "", false, f)
		} else {
			vals = append(optVals(rest, f, false), clusterVals(rest, f, sqlFlagLetters[name])...)
		}
		for _, v := range vals {
			found = true
			if v.Dyn {
				in.cmds = append(in.cmds, rules.Command{Name: factStoreHidden, Args: []string{name, "statements held in a variable or substitution"}, Via: via})
				continue
			}
			in.cmds = append(in.cmds, sqlFacts(v.Text, via)...)
		}
	}
	if name == "sqlite3" || name == "duckdb" {
		if len(r) > 1 {
			in.cmds = append(in.cmds, sqlFacts(strings.Join(shell.Texts(r[1:]), " "), via)...)
			found = true
		}
	}
	if f := sqlFileOpts[name]; f != "" {
		short, long, _ := strings.Cut(f, " ")
		if len(optVals(rest, short, false, strings.Fields(long)...)) > 0 {
			in.cmds = append(in.cmds, rules.Command{Name: factStoreHidden, Args: []string{name, "statements read from a file"}, Via: via})
			found = true
		}
	}
	if !found && in.final != nil {
		in.role = RoleSQL
	}
}

// sqlFlagLetters are the one-letter options of a database client that
// take no value, which may come before its SQL option in one word
// (psql -Xc, mysql -Be).
var sqlFlagLetters = map[string]string{
	"psql": "XAtqeEanlsSwWbx1", "mysql": "BNsrtvnqEHXfGAC", "mariadb": "BNsrtvnqEHXfGAC",
}

// clusterVals returns the values of short, a one-letter option, given at
// the end of a cluster of flags that take no value (-Xc SQL, -XcSQL).
func clusterVals(args []shell.Arg, short, flags string) []shell.Arg {
	var out []shell.Arg
	for i, a := range args {
		t := a.Text
		if t == "--" {
			break
		}
		if len(t) < 3 || t[0] != '-' || t[1] == '-' {
			continue
		}
		j := strings.IndexByte(t[1:], short[1])
		if j < 1 || strings.Trim(t[1:j+1], flags) != "" {
			continue
		}
		if v := t[j+2:]; v != "" {
			out = append(out, subArg(a, t[:j+2]))
		} else if i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

// sqlFileOpts are the options that name a file of SQL a client runs: a
// short option, then long ones.
var sqlFileOpts = map[string]string{
	"psql": "-f --file", "cqlsh": "-f --file", "duckdb": "-f", "sqlcmd": "-i --input-file",
	"clickhouse-client": " --queries-file", "clickhouse": " --queries-file", "cockroach": " --file", "snowsql": "-f --filename",
}

func sqlFacts(text string, via []string) []rules.Command {
	var out []rules.Command
	for st := range strings.SplitSeq(text, ";") {
		st = strings.Join(strings.Fields(st), " ")
		if st != "" {
			out = append(out, rules.Command{Name: rules.FactSQL, Args: []string{st}, Via: via})
		}
	}
	return out
}
