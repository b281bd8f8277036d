package walk

import (
	"regexp"
	"strings"

	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// factKillBroad is a kill whose selection reaches more than the processes
// meant: args are the program and what makes the selection broad.
const factKillBroad = "@kill-broad"

// resolveKillPattern judges pkill and killall, which select the processes
// they signal by a pattern or by owner rather than by id.
//
// A selection is broad, and asks, when it may reach processes nobody
// meant: a pattern that the gate cannot read (a variable), one that
// matches almost anything (".", ".*", "" or fewer than three literal
// characters; four with -f), every program of an interpreter (pkill -f
// python, pkill node), the command lines of several unrelated programs
// (pkill -f server), system processes or every shell (killall sshd,
// killall bash), runbox itself (pkill -f runbox, killall -r 'run.*'), an
// inverted match (-v), or a whole user, session, process group or
// terminal with no pattern (pkill -u bob, killall -u bob, pkill -s 0).
// A specific pattern (pkill -f 'node server.js --port 3000', pkill
// vite) and killall of a program by its exact name (killall node) stay
// allowed, as a kill by process id does.
func resolveKillPattern(r *resolution) bool {
	r.in.final = r.done(shell.Texts(r.rest))
	var why string
	if r.name == "killall" {
		why = killallBroad(r.rest)
	} else {
		why = pkillBroad(r.rest)
	}
	if why != "" {
		r.fact(factKillBroad, r.name, why)
	}
	return false
}

// resolveKill judges kill, which signals the processes its arguments
// name. Process ids listed by pgrep or pidof in a command substitution
// (kill $(pgrep -f python)) are a selection like pkill's, and judged
// the same way.
func resolveKill(r *resolution) bool {
	r.in.final = r.done(shell.Texts(r.rest))
	for _, a := range r.rest {
		if a.Word == nil {
			continue
		}
		syntax.Walk(a.Word, func(n syntax.Node) bool {
			cs, ok := n.(*syntax.CmdSubst)
			if !ok || len(cs.Stmts) != 1 {
				return true
			}
			if why, lister := listedPids(cs.Stmts[0].Cmd); why != "" {
				r.fact(factKillBroad, "kill "+lister, why)
			}
			return false
		})
	}
	return false
}

// listedPids judges the command that lists the process ids: pgrep (as
// pkill) or pidof (as killall by name), first in a pipeline.
func listedPids(cmd syntax.Command) (why, lister string) {
	for {
		b, ok := cmd.(*syntax.BinaryCmd)
		if !ok || b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
			break
		}
		cmd = b.X.Cmd
	}
	ce, ok := cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 {
		return "", ""
	}
	args, _ := shell.Words(ce.Args)
	switch shell.CanonicalName(args[0].Text) {
	case "pgrep":
		return pkillBroad(args[1:]), "pgrep"
	case "pidof":
		return killallBroad(args[1:]), "pidof"
	}
	return "", ""
}

// killSelection is what a pkill or killall command line selects by.
type killSelection struct {
	patterns []shell.Arg
	full     bool // -f: match the whole command line (pkill)
	regex    bool // killall -r
	exact    bool // pkill -x
	icase    bool
	inverse  bool
	whole    string // a selection of whole groups of processes (-u bob)
	listOnly bool   // killall -l, -V: nothing is signalled
}

func pkillBroad(args []shell.Arg) string {
	sel := parseKill(args, "dgGPstuUFqrO", map[string]bool{"--signal": true, "--parent": true, "--pgroup": true, "--group": true,
		"--session": true, "--terminal": true, "--euid": true, "--uid": true, "--pidfile": true, "--ns": true, "--nslist": true,
		"--runstates": true, "--older": true, "--queue": true, "--logpidfile": true, "--cgroup": true, "--env": true},
		func(o, v string, s *killSelection) {
			switch o {
			case "-f", "--full":
				s.full = true
			case "-x", "--exact":
				s.exact = true
			case "-i", "--ignore-case":
				s.icase = true
			case "-v", "--inverse":
				s.inverse = true
			case "-u", "-U", "-G", "-g", "-s", "-t", "--euid", "--uid", "--group", "--pgroup", "--session", "--terminal", "--cgroup", "--ns":
				s.whole = o + " " + v
			case "-P", "--parent":
				if v == "0" || v == "1" {
					s.whole = o + " " + v
				}
			}
		})
	return sel.broad()
}

func killallBroad(args []shell.Arg) string {
	sel := parseKill(args, "suyoZn", map[string]bool{"--signal": true, "--user": true, "--younger-than": true,
		"--older-than": true, "--context": true, "--ns": true},
		func(o, v string, s *killSelection) {
			switch o {
			case "-r", "--regexp":
				s.regex = true
			case "-I", "--ignore-case":
				s.icase = true
			case "-u", "--user":
				s.whole = o + " " + v
			case "-l", "--list", "-V", "--version":
				s.listOnly = true
			}
		})
	if !sel.regex {
		// Exact names: each is the pattern of its own whole name.
		sel.exact = true
		for i, p := range sel.patterns {
			sel.patterns[i].Text = regexp.QuoteMeta(shell.CanonicalName(p.Text))
		}
	}
	return sel.broad()
}

// parseKill reads a kill command line: signals (-9, -KILL, -SIGTERM),
// options, and the patterns. short lists the short options that take a
// value, long the long ones; each option is passed to set.
func parseKill(args []shell.Arg, short string, long map[string]bool, set func(opt, value string, s *killSelection)) killSelection {
	var s killSelection
	for i := 0; i < len(args); i++ {
		t := args[i].Text
		switch {
		case t == "--":
			s.patterns = append(s.patterns, args[i+1:]...)
			return s
		case strings.HasPrefix(t, "--"):
			name, v, hasValue := strings.Cut(t, "=")
			if !hasValue && long[name] && i+1 < len(args) {
				i++
				v = args[i].Text
			}
			set(name, v, &s)
		case len(t) > 1 && t[0] == '-':
			if isSignalSpec(t[1:]) {
				continue
			}
			for j := 1; j < len(t); j++ {
				o := "-" + t[j:j+1]
				if strings.IndexByte(short, t[j]) < 0 {
					set(o, "", &s)
					continue
				}
				v := t[j+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i].Text
				}
				set(o, v, &s)
				break
			}
		default:
			s.patterns = append(s.patterns, args[i])
		}
	}
	return s
}

// isSignalSpec reports whether s (after the dash) names a signal: 9,
// KILL, SIGKILL, RTMIN+1.
func isSignalSpec(s string) bool {
	if s == "" {
		return false
	}
	if strings.Trim(s, "0123456789") == "" {
		return true
	}
	return strings.ToUpper(s) == s && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+") == "" && len(s) > 1
}

// broad says why a pattern selection reaches too far, or "".
func (s killSelection) broad() string {
	if s.listOnly {
		return ""
	}
	if s.inverse {
		return "inverted match (every process but the pattern's)"
	}
	if len(s.patterns) == 0 {
		if s.whole != "" {
			return "selects every process of " + s.whole
		}
		return ""
	}
	for _, p := range s.patterns {
		if why := s.broadPattern(p); why != "" {
			return why
		}
	}
	return ""
}

func (s killSelection) broadPattern(p shell.Arg) string {
	if p.Dyn {
		return "pattern only known at run time"
	}
	expr := p.Text
	if s.exact {
		expr = "^(?:" + expr + ")$"
	}
	if s.icase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "pattern the gate cannot read"
	}
	matchesAny := func(list []string) bool {
		for _, x := range list {
			if re.MatchString(x) {
				return true
			}
		}
		return false
	}
	switch {
	case matchesAny(runboxProcesses):
		return "pattern matches runbox itself"
	case matchesAny(systemProcesses):
		return "pattern matches system processes"
	case matchesAny(shellNames):
		return "pattern matches every shell (runbox runs commands in one)"
	case s.exact:
		return ""
	case matchesAny(runtimes):
		return "pattern matches every program of an interpreter"
	}
	probes, min := processNames, 3
	if s.full {
		probes, min = processCommandLines, 4
	}
	if literalLen(p.Text) < min {
		return "pattern too short to select one program"
	}
	n := 0
	for _, probe := range probes {
		if re.MatchString(probe) {
			n++
		}
	}
	if n >= 2 {
		return "pattern matches many unrelated processes"
	}
	return ""
}

// literalLen counts the characters of a pattern that match themselves.
func literalLen(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
			n++
		case strings.IndexByte(".*+?()[]{}|^$", c) >= 0:
		default:
			n++
		}
	}
	return n
}

// runboxProcesses are runbox's own process names and command lines: a
// pattern that matches one would signal the gate's own process.
var runboxProcesses = []string{"runbox", "runbox-agent", "/usr/local/bin/runbox serve", "runbox run -- make test",
	"runbox jobs __daemon", "runbox jobs __supervise /home/user/.local/state/runbox/jobs/1"}

// systemProcesses are the names of processes a machine needs: init, its
// daemons, the login and container services.
var systemProcesses = []string{"init", "systemd", "systemd-journald", "systemd-logind", "systemd-udevd", "sshd",
	"dockerd", "containerd", "containerd-shim", "dbus-daemon", "rsyslogd", "cron", "crond", "agetty", "login",
	"kubelet", "polkitd", "networkmanager", "udevd", "launchd", "xorg", "gnome-shell"}

// runtimes are interpreters: each runs many unrelated programs
// under its own name, so a pattern matching one reaches all of them.
var runtimes = []string{"python", "python3", "python3.12", "node", "java", "ruby", "perl", "php", "php-fpm",
	"dotnet", "deno", "bun", "beam.smp", "erl", "lua", "Rscript", "julia"}

// shellNames are the shells: killing every one of them, even by exact
// name, ends the shells runbox and its user run commands in.
var shellNames = []string{"bash", "sh", "zsh", "dash", "fish", "ksh", "tcsh", "csh", "ash"}

// processNames and processCommandLines stand for the unrelated processes
// of a typical machine: a pattern matching two of them selects more than
// one program's processes.
var (
	processNames = []string{"nginx", "postgres", "mysqld", "redis-server", "code", "chrome", "firefox", "npm",
		"tmux", "screen", "gpg-agent", "ssh-agent", "ssh", "go", "make", "cargo", "gunicorn", "uvicorn", "vite",
		"webpack", "esbuild", "jest", "pytest", "git", "vim", "less", "top", "htop", "kworker/0:1", "rcu_sched"}
	processCommandLines = []string{"/sbin/init splash", "/usr/sbin/sshd -D", "-bash", "/bin/sh -c make test",
		"python3 -m http.server 8000", "/usr/bin/python3 /usr/bin/unattended-upgrade --wait",
		"node /usr/lib/node_modules/npm/bin/npm-cli.js run dev", "node /home/user/app/node_modules/.bin/vite",
		"java -jar /opt/app/service.jar", "/usr/bin/dockerd -H fd://", "/usr/bin/containerd", "postgres: checkpointer",
		"nginx: worker process", "/usr/lib/systemd/systemd-journald", "sshd: user@pts/0", "tmux new -s work",
		"/usr/bin/ruby /usr/local/bin/rails server", "perl /usr/bin/parallel", "go run ./cmd/server",
		"/usr/share/code/code --type=renderer", "/usr/bin/gpg-agent --supervised", "/usr/bin/ssh-agent -s",
		"/usr/sbin/cron -f", "bash ./scripts/dev.sh", "redis-server *:6379", "/usr/bin/make -j4 all"}
)
