package walk

import (
	"maps"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
)

// Git runs other programs where its configuration, its environment or an
// option says so: an alias starting with "!" is shell code, core.pager,
// core.sshCommand, core.editor, diff.external, credential helpers and
// others are commands, --upload-pack and --receive-pack name the program
// run on the other side (locally, for a local or ext:: remote), rebase
// --exec runs a command after each commit. The gate judges each such
// command as if it were typed: `git -c core.pager=less log` runs, `git -c
// alias.x='!rm -rf /' x` is `rm -rf /`.

// resolveGit resolves git like any tool with subcommands, then queues the
// commands git would run for the walker to judge.
func resolveGit(r *resolution) bool {
	r.tool(subcommandSpecs["git"])
	r.gitWorkTree()
	for _, run := range gitRuns(r.c.Globals, r.c.Args) {
		if run.hooks {
			r.hidden("hooks from the directory " + run.text)
			continue
		}
		if run.dynamic {
			r.fact(rules.FactDynamic, run.text)
			continue
		}
		r.addCode(run.text, nil)
	}
	return false
}

// gitRun is a command git runs: shell code, or a value only known at run
// time (--config-env names an environment variable).
type gitRun struct {
	text    string
	dynamic bool
	hooks   bool // text is a hooks directory (core.hooksPath): programs git runs that the gate cannot read
}

// gitRuns lists the commands a git command line runs besides git itself.
func gitRuns(globals, args []string) []gitRun {
	var out []gitRun
	config := func(key, value string) {
		if gitKey(key) == "core.hookspath" && strings.TrimSpace(value) != "" {
			out = append(out, gitRun{text: value, hooks: true})
		}
		if code, ok := gitConfigCommand(key, value); ok {
			out = append(out, gitRun{text: code})
		}
	}
	for i := 0; i < len(globals); i++ {
		g := globals[i]
		switch {
		case g == "-c" && i+1 < len(globals):
			i++
			k, v, _ := strings.Cut(globals[i], "=")
			config(k, v)
		case g == "--config-env" && i+1 < len(globals) || strings.HasPrefix(g, "--config-env="):
			spec := strings.TrimPrefix(g, "--config-env=")
			if g == "--config-env" {
				i++
				spec = globals[i]
			}
			if k, v, _ := strings.Cut(spec, "="); isGitCommandKey(k) {
				out = append(out, gitRun{text: "$" + v, dynamic: true})
			}
		}
	}
	if len(args) == 0 {
		return out
	}
	sub, rest := args[0], args[1:]
	opts := gitProgramOptions[sub]
	for i := 0; i < len(rest); i++ {
		t := rest[i]
		if t == "--" {
			break
		}
		name, value, hasValue := strings.Cut(t, "=")
		switch {
		case opts[name] && strings.HasPrefix(name, "--") && hasValue:
			out = append(out, gitRun{text: value})
		case opts[t] && i+1 < len(rest):
			i++
			out = append(out, gitRun{text: rest[i]})
		case len(t) > 2 && t[0] == '-' && t[1] != '-' && opts[t[:2]]:
			out = append(out, gitRun{text: t[2:]}) // -x'make test'
		case sub == "grep" && (strings.HasPrefix(t, "-O") && len(t) > 2 || name == "--open-files-in-pager" && hasValue):
			out = append(out, gitRun{text: strings.TrimPrefix(strings.TrimPrefix(t, "-O"), "--open-files-in-pager=")})
		case strings.HasPrefix(t, "ext::"):
			out = append(out, gitRun{text: extCommand(t[len("ext::"):])})
		}
	}
	if sub == "clone" {
		// clone -c key=value: configuration of the new repository, in
		// effect for the checkout that clone makes.
		for i := 0; i+1 < len(rest); i++ {
			if rest[i] == "-c" || rest[i] == "--config" {
				k, v, _ := strings.Cut(rest[i+1], "=")
				config(k, v)
			} else if v, ok := strings.CutPrefix(rest[i], "--config="); ok {
				k, v, _ := strings.Cut(v, "=")
				config(k, v)
			}
		}
	}
	switch sub {
	case "config":
		if k, v, ok := gitConfigSet(rest); ok {
			config(k, v)
		}
	case "submodule":
		if cmd, ok := afterWord(rest, "foreach", gitForeachFlags); ok {
			out = append(out, gitRun{text: strings.Join(cmd, " ")})
		}
	case "bisect":
		if cmd, ok := afterWord(rest, "run", nil); ok {
			out = append(out, gitRun{text: ShellJoin(cmd)})
		}
	}
	return out
}

// gitCommandKeys match the configuration keys whose value is a command
// git runs (keys are matched in lower case; subsections are free).
var gitCommandKeys = lazyRegexp(`^(alias\..+|core\.(pager|editor|sshcommand|askpass|fsmonitor|gitproxy|alternaterefscommand)|` +
	`pager\..+|sequence\.editor|interactive\.difffilter|diff\.external|diff\..+\.(command|textconv)|merge\..+\.driver|` +
	`(merge|diff)tool\..+\.(cmd|path)|guitool\..+\.cmd|filter\..+\.(clean|smudge|process)|gpg\.program|gpg\..+\.program|` +
	`gpg\.ssh\.defaultkeycommand|credential\.helper|credential\..+\.helper|remote\..+\.(uploadpack|receivepack)|` +
	`uploadpack\.packobjectshook|sendemail\.(.+\.)?(sendmailcmd|smtpserver|tocmd|cccmd|headercmd)|trailer\..+\.(command|cmd)|` +
	`hook\..+\.command|submodule\..+\.update|imap\.tunnel|browser\..+\.(cmd|path)|man\..+\.(cmd|path)|instaweb\.httpd|` +
	`lfs\.customtransfer\..+\.path|lfs\.extension\..+\.(clean|smudge)|web\.browser|core\.hookspath)$`)

func isGitCommandKey(key string) bool { return gitCommandKeys().MatchString(gitKey(key)) }

// gitKey lowers a key's section and name, which git compares without
// case.
func gitKey(key string) string { return strings.ToLower(strings.TrimSpace(key)) }

// gitConfigCommand returns the shell code a configuration entry makes git
// run, if it names one.
func gitConfigCommand(key, value string) (string, bool) {
	k := gitKey(key)
	if !gitCommandKeys().MatchString(k) || strings.TrimSpace(value) == "" {
		return "", false
	}
	switch {
	case strings.HasPrefix(k, "alias."):
		if code, ok := strings.CutPrefix(value, "!"); ok {
			return code, true
		}
		return "git " + value, true // an alias for git's own subcommands
	case k == "core.hookspath":
		// Hooks are files, judged as any script run from a file is.
		return "", false
	case k == "web.browser":
		return "", false // a name of a browser.<name>.cmd
	case k == "core.pager" || strings.HasPrefix(k, "pager.") || k == "core.fsmonitor":
		if gitBool(value) {
			return "", false
		}
	case strings.HasPrefix(k, "credential."):
		// "!code" is shell code and an absolute path a program; any
		// other value is the name of git-credential-<value>.
		if code, ok := strings.CutPrefix(value, "!"); ok {
			return code, true
		}
		if !strings.HasPrefix(value, "/") {
			return "", false
		}
	case strings.HasSuffix(k, ".smtpserver"):
		if !strings.HasPrefix(value, "/") {
			return "", false // a host name
		}
	case strings.HasPrefix(k, "submodule."):
		// "!code" runs code; checkout, rebase, merge and none do not.
		code, ok := strings.CutPrefix(value, "!")
		return code, ok
	}
	return value, true
}

// gitBool reports whether a value is one of git's booleans.
func gitBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// gitEnvConfig returns the configuration given through the environment:
// GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, and
// GIT_CONFIG_PARAMETERS ('key'='value' …).
func gitEnvConfig(env []string) [][2]string {
	// Almost no command sets git's configuration through the
	// environment: it costs nothing to find that out first.
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GIT_CONFIG_") }) {
		return nil
	}
	keys, values := map[string]string{}, map[string]string{}
	var out [][2]string
	for _, e := range env {
		name, v, ok := strings.Cut(e, "=")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "GIT_CONFIG_KEY_"):
			keys[name[len("GIT_CONFIG_KEY_"):]] = v
		case strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
			values[name[len("GIT_CONFIG_VALUE_"):]] = v
		case name == "GIT_CONFIG_PARAMETERS":
			for _, m := range gitParam().FindAllStringSubmatch(v, -1) {
				out = append(out, [2]string{m[1], m[2]})
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(keys)) {
		out = append(out, [2]string{keys[n], values[n]})
	}
	return out
}

var gitParam = lazyRegexp(`'([^']*)'='([^']*)'`)

// gitConfigSet finds the key and value of `git config [options] key
// value` and `git config set [options] key value`; reading, listing and
// unsetting set nothing.
func gitConfigSet(args []string) (key, value string, ok bool) {
	valued := gitConfigValued
	var words []string
	for i := 0; i < len(args); i++ {
		t := args[i]
		if strings.HasPrefix(t, "-") {
			switch t {
			case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--unset", "--unset-all", "--remove-section",
				"--rename-section", "-l", "--list", "-e", "--edit", "--show-origin", "--show-scope", "--name-only":
				return "", "", false
			}
			if valued[t] {
				i++
			}
			continue
		}
		words = append(words, t)
	}
	if len(words) > 0 && words[0] == "set" {
		words = words[1:]
	} else if len(words) > 0 && (words[0] == "get" || words[0] == "unset" || words[0] == "list" || words[0] == "edit" ||
		words[0] == "rename-section" || words[0] == "remove-section") {
		return "", "", false
	}
	if len(words) < 2 {
		return "", "", false
	}
	return words[0], words[1], true
}

// afterWord returns the arguments after word, skipping the options in
// skip (git submodule foreach --recursive CMD, git bisect run CMD).
func afterWord(args []string, word string, skip map[string]bool) ([]string, bool) {
	for i, a := range args {
		if a != word {
			continue
		}
		rest := args[i+1:]
		for len(rest) > 0 && skip[rest[0]] {
			rest = rest[1:]
		}
		return rest, len(rest) > 0
	}
	return nil, false
}

// extCommand turns the command of an ext:: remote URL into shell text:
// words are split at spaces, "% " is a space inside a word and "%%" a
// per cent sign.
func extCommand(s string) string {
	var words []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '%' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case s[i] == ' ':
			words = append(words, b.String())
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	words = append(words, b.String())
	return ShellJoin(words)
}

// ShellJoin quotes words so the shell reads them back as the same words.
func ShellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// gitProgramOptions are the options that name a program, by subcommand.
var gitProgramOptions = map[string]map[string]bool{
	"fetch":         setOf("--upload-pack"),
	"pull":          setOf("--upload-pack"),
	"fetch-pack":    setOf("--upload-pack --exec"),
	"clone":         setOf("--upload-pack -u"),
	"ls-remote":     setOf("--upload-pack -u"),
	"send-email":    setOf("--to-cmd --cc-cmd --header-cmd --sendmail-cmd"),
	"instaweb":      setOf("--httpd"),
	"push":          setOf("--receive-pack --exec"),
	"send-pack":     setOf("--receive-pack --exec"),
	"archive":       setOf("--exec"),
	"rebase":        setOf("--exec -x"),
	"difftool":      setOf("--extcmd -x"),
	"filter-branch": setOf("--env-filter --tree-filter --index-filter --msg-filter --commit-filter --parent-filter --tag-name-filter --setup"),
}

// gitForeachFlags are submodule foreach's flags before its command.
var gitForeachFlags = setOf("--recursive -q --quiet")

// gitConfigValued are git config's options that take a value.
var gitConfigValued = setOf("-f --file --blob --type --default --comment --value")
