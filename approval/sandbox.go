package approval

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"github.com/runbox/runbox/approval/internal/walk"
)

// SandboxProfile names the kernel confinement a command will run under.
// It is a closed set: [SandboxOff], [SandboxReadOnly], [SandboxWorkspace].
type SandboxProfile string

const (
	// SandboxOff: no confinement. The gate judges as if it knew nothing
	// of a sandbox, which is also what the empty profile means.
	SandboxOff SandboxProfile = "off"
	// SandboxReadOnly: the command reads what workspace lets it read and
	// writes only under [Sandbox].Writable (its temporary directory).
	SandboxReadOnly SandboxProfile = "read-only"
	// SandboxWorkspace: the command writes only under [Sandbox].Writable
	// (the workspace root, its temporary directory, caches) and reads
	// everything but [Sandbox].Unreadable.
	SandboxWorkspace SandboxProfile = "workspace"
)

// ParseSandboxProfile parses "off", "read-only" or "workspace"; the empty
// string is [SandboxOff].
func ParseSandboxProfile(s string) (SandboxProfile, error) {
	switch p := SandboxProfile(s); p {
	case "", SandboxOff:
		return SandboxOff, nil
	case SandboxReadOnly, SandboxWorkspace:
		return p, nil
	}
	return "", fmt.Errorf("approval: unknown sandbox profile %q (want workspace, read-only or off)", s)
}

// confines reports whether p is a profile the kernel enforces.
func (p SandboxProfile) confines() bool { return p == SandboxReadOnly || p == SandboxWorkspace }

// Sandbox is what the gate knows of the confinement a command will run
// under ([Request].Sandbox). The zero value is no sandbox: verdicts are
// exactly those without one.
//
// Under a confining profile the gate changes four things, and nothing
// else:
//
//   - A command that writes or deletes where the kernel will not let it
//     (a path it resolves outside Writable, such as rm -rf ~/x or
//     sed -i on /etc/hosts) or reads what the kernel hides (a path under
//     Unreadable, such as cat ~/.ssh/id_rsa) is denied, with the sandbox
//     named in the reason: it would fail anyway, and the agent learns why
//     before it runs.
//   - Under [SandboxWorkspace], a dangerous command whose only risk is to
//     files the sandbox lets it write is allowed without asking: a
//     recursive or absolute delete (rm -rf node_modules build, find .
//     -name '*.o' -delete, find … -exec rm), git clean -f, and overwriting
//     a project's .env or configuration file, when every path it changes
//     resolves inside Writable. What the gate cannot resolve (a variable
//     it does not know, a relative path after a cd it cannot follow, ".."
//     after a name that may be a symbolic link, a glob that may reach out
//     of the workspace, files fed by xargs) is not relaxed, and neither is
//     deleting a writable root itself, anything in a .git directory, or a
//     shell start-up file. Nor is a command that runs elsewhere (ssh host
//     CMD, git submodule foreach, chroot, env -C DIR, systemd-run …), or
//     one in a script that may make links (ln, archives extracted), move
//     HOME or the directory where the gate cannot follow (HOME=…, source,
//     CDPATH), or holds more than 512 simple commands. Other dangerous
//     commands ask as before: git
//     reset --hard and git branch -D lose work no sandbox can give back,
//     and processes, services, remote systems and permissions are not
//     files the sandbox confines.
//   - Under either profile, code given to an interpreter inline (python3
//     -c, node -e, perl -e, a here-document or a pipe into python3, and
//     the input of runbox run read by one) is allowed without asking when
//     it runs on this machine: the kernel confines it exactly as it
//     confines the same code in a script (python3 script.py), which the
//     gate lets run. Code run elsewhere (ssh host python3 -c …, docker
//     exec) still asks.
//   - Hardline rules, forbidden rules, the deny list and the limits of the
//     analysis hold as before.
//
// A gate built with Options.Yolo or ModeOff ignores the sandbox: it lets
// dangerous commands through anyway, and what the kernel refuses it
// reports as a violation of the command rather than a denial of the gate.
//
// The gate does not look at the disk: paths are compared as written,
// after ~, $HOME, the command's literal cd and "." and ".." are
// resolved. The kernel, not the gate, holds what is reached through a
// symbolic link.
type Sandbox struct {
	// Profile is the confinement. The empty string is [SandboxOff].
	Profile SandboxProfile
	// Writable lists the absolute directories the command may write
	// under: the workspace root first, its temporary directory, the
	// caches package managers use. Entries that are not absolute are
	// ignored. /dev/null and the other harmless devices are always
	// writable. Nil under a confining profile means nothing else is.
	Writable []string
	// Unreadable lists absolute files and directories the command cannot
	// read (credentials, runbox's own files). Nil means the gate refuses
	// no read.
	Unreadable []string
	// Network is the sandbox's network mode: [NetworkAllowlist],
	// [NetworkOff], "open", or "" when the gate is not told. It only
	// decides bash's connections through /dev/tcp and /dev/udp, which
	// the gate otherwise leaves to the kernel (they are not files).
	Network string
}

// The network modes a [Sandbox] may name (sandbox.network.mode).
const (
	NetworkAllowlist = "allowlist" // connections only through the session's egress proxy
	NetworkOff       = "off"       // no connections
)

// sandboxRelaxable are the dangerous rules whose only risk is to the
// files a command changes, so that a sandbox which confines those files
// to the workspace confines the risk.
var sandboxRelaxable = setOf(`rm-recursive rm-absolute rm-bulk find-delete git-clean-force
	write-project-config edit-config-elsewhere`)

// maxSandboxCwds bounds the directories a command may be in that the
// sandbox judgement follows; past it relative paths are unknown.
const maxSandboxCwds = 64

// sandboxCode are the dangerous rules about code given to an interpreter
// inline (python -c, node -e, a here-document, a pipe, the input of
// runbox run): the gate cannot read it, but the kernel confines it
// exactly as it confines the same code in a script (python3 script.py),
// which the gate lets run.
var sandboxCode = setOf(`inline-code heredoc-code pipe-code`)

// sandboxJudgement is what the sandbox a request runs under changes in
// its verdict.
type sandboxJudgement struct {
	profile SandboxProfile
	denial  string // why the kernel would refuse part of the command; "" for nothing
	relaxed []bool // per finding: the sandbox confines its only risk
	// files and code say which kinds of finding were relaxed: changes to
	// files the sandbox lets the command write, and inline code.
	files, code bool
}

// relaxes reports whether finding i is let through by the sandbox.
func (j sandboxJudgement) relaxes(i int) bool { return i < len(j.relaxed) && j.relaxed[i] }

// notes are the reasons added to a verdict that relaxed findings let
// through.
func (j sandboxJudgement) notes() []string {
	var out []string
	if j.files {
		out = append(out, "sandbox "+string(j.profile)+": allowed without asking, the only risk is to files the sandbox lets it write")
	}
	if j.code {
		out = append(out, "sandbox "+string(j.profile)+": inline code allowed without asking, the kernel confines it as it does a script")
	}
	return out
}

// judgeSandbox judges cmds, the analysed command, under req.Sandbox. A
// gate told to stand aside (Options.Yolo, ModeOff) leaves it to the
// kernel, which refuses what it must and reports it as a violation.
func (g *Gate) judgeSandbox(req Request, cmds []rules.Command, fs []rules.Finding) sandboxJudgement {
	sb := req.Sandbox
	if !sb.Profile.confines() || g.opts.Yolo || g.opts.Mode == ModeOff {
		return sandboxJudgement{}
	}
	s := newSandboxScope(sb, g.opts.Protect.Env["HOME"], req.Dir, shell.Normalize(req.Command), cmds)
	ctx := newContexts(cmds)
	j := sandboxJudgement{profile: sb.Profile, denial: s.denial(cmds, ctx)}
	if j.denial != "" {
		return j
	}
	j.relaxed = make([]bool, len(fs))
	// Inline code run here is confined under either profile, whatever
	// else the command does: the kernel holds it as it holds a script.
	for i, f := range fs {
		if f.Rule.Tier == rules.Dangerous && sandboxCode[f.Rule.ID] && ctx.same(f.Cmd) {
			j.relaxed[i], j.code = true, true
		}
	}
	if sb.Profile != SandboxWorkspace || makesLinks(cmds) {
		return j
	}
	for i, f := range fs {
		if !j.relaxed[i] && f.Rule.Tier == rules.Dangerous && sandboxRelaxable[f.Rule.ID] &&
			ctx.same(f.Cmd) && s.confined(f.Cmd, cmds) {
			j.relaxed[i], j.files = true, true
		}
	}
	return j
}

// makesLinks reports whether cmds may create symbolic links or mounts,
// through which a path inside the workspace may lead out of it: nothing
// in such a command is relaxed. Links that exist before the command are
// the kernel's to hold.
func makesLinks(cmds []rules.Command) bool {
	for i := range cmds {
		c := &cmds[i]
		switch c.Name {
		case "ln", "link", "mount", "bindfs", "unzip", "cpio", "7z", "7za", "bsdtar", "ar", "pax":
			return true
		case "tar", "gtar":
			if !tarLists(c.Args) {
				return true
			}
		case "rsync":
			return true // copies links as links with -a
		case "cp":
			// -s and -l make links; -a, -d, -P and -R copy links as links.
			if slices.ContainsFunc(c.Args, func(a string) bool {
				return strings.HasPrefix(a, "--") && a != "--" && !strings.HasPrefix(a, "--force") && !strings.HasPrefix(a, "--verbose") ||
					len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "sladPRr")
			}) {
				return true
			}
		}
	}
	return false
}

// tarLists reports whether tar's arguments only list an archive.
func tarLists(args []string) bool {
	if slices.Contains(args, "--list") {
		return true
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "--") {
		return false
	}
	mode := strings.TrimPrefix(args[0], "-")
	return strings.ContainsRune(mode, 't') && !strings.ContainsAny(mode, "xcruA")
}

// localWrappers run the command they are given here, as the shell would:
// the files it names are where they would be without them.
var localWrappers = setOf(`sudo doas run0 env nice nohup time timeout stdbuf command builtin exec setsid ionice chrt
	taskset flock busybox find`)

// dirOptions are the options of wrappers that run a command in another
// directory (env -C, sudo -D, please -d …).
var dirOptions = setOf(`-C -D -d -w --chdir --dir --wd --working-directory`)

// maxContextCmds bounds the commands a check relates to each other to
// know where a command runs: a command of more simple commands than
// this is not relaxed.
const maxContextCmds = 512

// contexts tells whether the commands of one check run on this machine,
// in the directory the shell is in (see [contexts.same]).
type contexts struct {
	cmds   []rules.Command
	args   []string // each command's arguments, joined
	memo   map[*rules.Command]bool
	active map[*rules.Command]bool
}

func newContexts(cmds []rules.Command) *contexts {
	c := &contexts{cmds: cmds, memo: make(map[*rules.Command]bool), active: make(map[*rules.Command]bool)}
	if len(cmds) <= maxContextCmds {
		c.args = make([]string, len(cmds))
		for i := range cmds {
			c.args[i] = strings.Join(slices.Concat(cmds[i].Globals, cmds[i].Args), " ")
		}
	}
	return c
}

// same reports whether c runs on this machine, in the directory the
// shell is in: reached through no wrapper that changes either, and not
// code held by another command (ssh host CMD, git submodule foreach CMD,
// su -c CMD …) but by a shell run here (bash -c, eval) or by none.
func (x *contexts) same(c *rules.Command) bool {
	if x.args == nil || x.active[c] {
		return false
	}
	if v, ok := x.memo[c]; ok {
		return v
	}
	x.active[c] = true
	v := x.compute(c)
	delete(x.active, c)
	x.memo[c] = v
	return v
}

func (x *contexts) compute(c *rules.Command) bool {
	for _, w := range c.Via {
		if !localWrappers[w] {
			return false
		}
	}
	if len(c.Via) > 0 {
		for _, f := range strings.Fields(c.Source) {
			name, _, _ := strings.Cut(f, "=")
			if dirOptions[name] {
				return false
			}
		}
	}
	src := strings.TrimSpace(c.Source)
	if src == "" {
		// A fact of the script's shape (a redirection) says not which
		// command it belongs to: it is known to run here when every
		// command does.
		for i := range x.cmds {
			if o := &x.cmds[i]; strings.TrimSpace(o.Source) != "" && !x.same(o) {
				return false
			}
		}
		return true
	}
	for i := range x.cmds {
		o := &x.cmds[i]
		if o == c || o.Source == c.Source || strings.HasPrefix(o.Name, "@") || !strings.Contains(x.args[i], src) {
			continue // a fact runs nothing: its args only describe (@pipe-code python3)
		}
		// c's text is an argument of o: o runs it, or prints it.
		if !walk.IsShell(o.Name) && o.Name != "eval" || !x.same(o) {
			return false
		}
	}
	return true
}

// sandboxScope resolves the paths of one command against a sandbox.
type sandboxScope struct {
	profile    SandboxProfile
	network    string     // Sandbox.Network
	writable   [][]string // components, root first ("/")
	unreadable [][]string
	home       string   // absolute, or "" when unknown
	cwds       []string // directories the command may be in, absolute
	cwdUnknown bool     // it may be in one the gate cannot know
	dir        string   // the request's directory, whose ".." is known; "" unknown
	gitEnv     bool     // the command sets git's environment (GIT_WORK_TREE …)
	pwdSet     bool     // the command may give PWD a value of its own
}

func newSandboxScope(sb Sandbox, home, dir, text string, cmds []rules.Command) *sandboxScope {
	s := &sandboxScope{profile: sb.Profile, network: sb.Network}
	for _, w := range sb.Writable {
		if path.IsAbs(w) {
			s.writable = append(s.writable, walk.SplitPath(path.Clean(w)))
		}
	}
	for _, u := range sb.Unreadable {
		if path.IsAbs(u) {
			s.unreadable = append(s.unreadable, walk.SplitPath(path.Clean(u)))
		}
	}
	homeSet, cwdMoved := stateChanges(text, cmds)
	if path.IsAbs(home) && !homeSet {
		s.home = path.Clean(home)
	}
	if path.IsAbs(dir) && !cwdMoved {
		s.dir = path.Clean(dir)
		s.cwds = []string{s.dir}
	} else {
		s.cwdUnknown = true
	}
	s.gitEnv = mentionsGitEnv(cmds)
	s.pwdSet = strings.Contains(text, "PWD=") || strings.Contains(text, "PWD ") || strings.Contains(text, "PWD;")
	s.followCds(cmds)
	return s
}

// namesHome reports whether t names HOME other than reading it as $HOME
// or ${HOME…}: an assignment (HOME=/ …, export HOME, read HOME, for HOME
// in …) may give ~ another value than the one the gate knows.
func namesHome(t string) bool {
	word := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
	}
	for i := 0; ; {
		j := strings.Index(t[i:], "HOME")
		if j < 0 {
			return false
		}
		j += i
		end := j + len("HOME")
		before := j > 0 && (word(t[j-1]) || t[j-1] == '$' || t[j-1] == '{')
		after := end < len(t) && word(t[end])
		if !before && !after {
			return true
		}
		i = end
	}
}

// stateChanges reports whether the command, as text and as resolved
// commands, may set HOME, or may move the shell to a directory the gate
// cannot follow: code it cannot see (source, .), popd, CDPATH, autocd,
// cdable_vars, or a declaration whose name is itself an expansion.
func stateChanges(text string, cmds []rules.Command) (homeSet, cwdMoved bool) {
	texts := []string{text}
	pushes := 0
	for i := range cmds {
		c := &cmds[i]
		texts = append(texts, c.Source)
		texts = append(texts, c.Env...)
		texts = append(texts, c.Args...)
		switch c.Name {
		case "source", ".":
			if !venvActivate(c.Args) {
				homeSet, cwdMoved = true, true
			}
		case "pushd":
			pushes++
		case "popd":
			// Back to a directory a pushd of the line left, which the
			// scope follows; past them, to one of the session's stack.
			if pushes--; pushes < 0 {
				homeSet, cwdMoved = true, true
			}
		case "declare", "typeset", "local", "export", "readonly", "read", "printf", "mapfile", "readarray", "let", "unset":
			if slices.ContainsFunc(c.Args, func(a string) bool { return strings.ContainsAny(a, "$`") }) {
				homeSet, cwdMoved = true, true
			}
		}
	}
	for _, t := range texts {
		homeSet = homeSet || namesHome(t)
		cwdMoved = cwdMoved || strings.Contains(t, "CDPATH") || strings.Contains(t, "autocd") || strings.Contains(t, "cdable_vars")
	}
	return homeSet, cwdMoved
}

// venvActivate reports whether args (of source or .) are a Python
// virtual environment's activate script alone (. .venv/bin/activate): it
// sets PATH and VIRTUAL_ENV and a prompt, and moves nowhere. An agent
// sources one between recreating the environment and installing into it
// (rm -rf .venv && python3 -m venv .venv && . .venv/bin/activate && pip
// install -r requirements.txt), and the artefact it removes must not ask
// for it.
func venvActivate(args []string) bool {
	return len(args) == 1 && !strings.ContainsAny(args[0], "$`") && path.Base(args[0]) == "activate" && path.Base(path.Dir(args[0])) == "bin"
}

// followCds adds every directory a cd or pushd in the command may lead
// to. The set is a union over the whole command, whatever the order of
// lists, subshells and loops: a path is known only when it resolves the
// same way from every directory the command may be in.
func (s *sandboxScope) followCds(cmds []rules.Command) {
	pushes := 0
	for i := range cmds {
		c := &cmds[i]
		switch c.Name {
		case "cd":
		case "pushd":
			pushes++
		case "popd":
			// A popd back to where a pushd of the line left leads to a
			// directory already among cwds.
			if pushes--; pushes < 0 {
				s.cwdUnknown = true
			}
			continue
		default:
			continue
		}
		ops := operands(c.Args, "", nil)
		var targets []string
		switch {
		case len(ops) == 0 && s.home != "":
			targets = []string{s.home}
		case len(ops) == 1 && ops[0] != "-":
			var ok bool
			if targets, ok = s.resolve(ops[0]); !ok {
				targets = nil
			}
		}
		if targets == nil {
			s.cwdUnknown = true
		}
		for _, t := range targets {
			if !slices.Contains(s.cwds, t) {
				s.cwds = append(s.cwds, t)
			}
		}
		if len(s.cwds) > maxSandboxCwds {
			s.cwds, s.cwdUnknown = s.cwds[:maxSandboxCwds], true
		}
	}
}

// resolve returns every absolute path p may name, from every directory
// the command may be in, and false when it cannot know them all.
func (s *sandboxScope) resolve(p string) ([]string, bool) {
	return s.resolveFrom(p, s.cwds, s.cwdUnknown)
}

func (s *sandboxScope) resolveFrom(p string, cwds []string, cwdUnknown bool) ([]string, bool) {
	switch {
	case p == "" || strings.ContainsAny(p, "`\n") || strings.Contains(p, "$(") || strings.Contains(p, "…"):
		return nil, false
	case s.home == "" && (strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME") || strings.HasPrefix(p, "${HOME}")):
		return nil, false // the home directory is not known
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = s.home + p[1:]
	case p == "$HOME" || strings.HasPrefix(p, "$HOME/"):
		p = s.home + p[5:]
	case p == "${HOME}" || strings.HasPrefix(p, "${HOME}/"):
		p = s.home + p[7:]
	case strings.HasPrefix(p, "~"):
		return nil, false // ~user, ~+, ~-
	case !s.pwdSet && (p == "$PWD" || strings.HasPrefix(p, "$PWD/") || p == "${PWD}" || strings.HasPrefix(p, "${PWD}/")):
		// The shell's own directory, wherever the command is: "." there.
		_, rest, _ := strings.Cut(p, "/")
		p = "./" + rest
	}
	if strings.Contains(p, "$") || p == "" {
		return nil, false // a variable the gate does not know, or no home
	}
	if path.IsAbs(p) {
		q, ok := cleanKnown("/", p, false)
		return []string{q}, ok
	}
	if cwdUnknown {
		return nil, false
	}
	out := make([]string, 0, len(cwds))
	for _, d := range cwds {
		// ".." out of the request's directory climbs where its path
		// says; out of a directory a cd reached, perhaps through a
		// symbolic link, it may climb anywhere.
		q, ok := cleanKnown(d, p, d == s.dir)
		if !ok {
			return nil, false
		}
		out = append(out, q)
	}
	return out, true
}

// cleanKnown joins rel to dir and cleans the result, and reports false
// when a ".." in rel follows a name: that name may be a symbolic link,
// whose parent is not the one the path spells. Leading ".." climb out of
// dir only when upKnown says dir is spelled as it is on disk.
func cleanKnown(dir, rel string, upKnown bool) (string, bool) {
	named := !upKnown && dir != "/"
	for _, c := range strings.Split(rel, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return "", false
			}
		default:
			named = true
		}
	}
	return path.Join(dir, rel), true
}

// where says where a resolved path lies.
type where int

const (
	whereUnknown  where = iota // a glob or link may take it either way
	whereInside                // under a writable root
	whereOutside               // under none: the kernel refuses a write
	whereHarmless              // a device any command may write (/dev/null)
	whereNetwork               // bash's /dev/tcp/HOST/PORT, /dev/udp/…: a connection, not a file
)

// harmlessDevices are the devices every profile lets a command write.
var harmlessDevices = setOf(`/dev/null /dev/zero /dev/full /dev/stdout /dev/stderr /dev/stdin /dev/tty
	/dev/random /dev/urandom`)

func (s *sandboxScope) place(p string) where {
	if harmlessDevices[p] || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/dev/pts/") {
		return whereHarmless
	}
	if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
		return whereNetwork
	}
	if p == "/proc" || strings.HasPrefix(p, "/proc/") && !strings.HasPrefix(p, "/proc/sys/") {
		return whereUnknown // /proc/self/cwd and the like lead anywhere
	}
	parts := walk.SplitPath(p)
	if w := deepest(parts, s.writable); w >= 0 {
		if deepest(parts, s.unreadable) >= w {
			return whereOutside // a denied path inside a writable one
		}
		return whereInside
	}
	overlap := false
	for _, w := range s.writable {
		// A glob may match a writable root's components.
		n := min(len(parts), len(w))
		same := true
		for i := range n {
			if !walk.ComponentMatch(parts[i], w[i]) {
				same = false
				break
			}
		}
		if same && !literalPrefix(parts, len(w)) {
			overlap = true
		}
	}
	if overlap {
		return whereUnknown
	}
	return whereOutside
}

// under reports whether parts is base or under it, component by
// component as written: a glob in parts is not known to be under.
func under(parts, base []string) bool {
	if len(parts) < len(base) {
		return false
	}
	for i := range base {
		if parts[i] != base[i] {
			return false
		}
	}
	return true
}

// literalPrefix reports whether the first n components of parts hold no
// glob: such a path shorter than a root is its parent, not a pattern that
// may match it.
func literalPrefix(parts []string, n int) bool {
	for _, c := range parts[:min(n, len(parts))] {
		if strings.ContainsAny(c, "*?[") {
			return false
		}
	}
	return true
}

// hidden reports whether p is known to be under an unreadable path, and
// not under a writable one inside it: the more specific path decides.
func (s *sandboxScope) hidden(p string) bool {
	parts := walk.SplitPath(p)
	u := deepest(parts, s.unreadable)
	return u >= 0 && u >= deepest(parts, s.writable)
}

// deepest returns the number of components of the longest of roots that
// parts is at or under, or -1 when it is under none.
func deepest(parts []string, roots [][]string) int {
	n := -1
	for _, r := range roots {
		if len(r) > n && under(parts, r) {
			n = len(r)
		}
	}
	return n
}

// isWritableRoot reports whether p is a writable root itself.
func (s *sandboxScope) isWritableRoot(p string) bool {
	parts := walk.SplitPath(p)
	for _, w := range s.writable {
		if slices.Equal(parts, w) {
			return true
		}
	}
	return false
}

// shellStartup are files a shell runs on start: a change to one runs
// code later, outside any sandbox.
var shellStartup = setOf(`.bashrc .bash_profile .bash_login .bash_logout .profile .zshrc .zshenv .zprofile
	.zlogin .zlogout .kshrc .mkshrc .cshrc .tcshrc .login .inputrc .envrc`)

// keptInside reports whether p, inside the workspace, is still not to be
// changed without asking: a .git directory (history, hooks and
// configuration git runs later) or a shell start-up file.
func keptInside(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".git" || shellStartup[c] {
			return true
		}
	}
	return false
}

// target is one path a command changes, as written.
type target struct {
	how, text string
	// whole is set when the command removes the path with everything
	// under it (rm -r, find -delete without a test).
	whole bool
}

// denial returns why the kernel would refuse part of cmds, or "". Only
// commands known to run here, in the shell's directory, are judged: the
// kernel has no say over what ssh runs on another host.
func (s *sandboxScope) denial(cmds []rules.Command, ctx *contexts) string {
	for i := range cmds {
		c := &cmds[i]
		if !ctx.same(c) {
			continue
		}
		ts, _ := s.targets(c, cmds)
		for _, t := range ts {
			ps, ok := s.resolveTarget(c, t)
			if !ok {
				continue
			}
			if len(ps) == 1 && s.place(ps[0]) == whereNetwork {
				if r := s.netDenial(t, ps[0]); r != "" {
					return r
				}
				continue
			}
			if len(ps) > 0 && !slices.ContainsFunc(ps, func(p string) bool { return s.place(p) != whereOutside }) {
				return s.writeDenial(t)
			}
		}
	}
	for i := range cmds {
		if r := s.readDenial(&cmds[i]); r != "" && ctx.same(&cmds[i]) {
			return r
		}
	}
	return ""
}

// netDenial returns why the kernel would refuse the connection bash
// opens for a redirection to p (/dev/tcp/HOST/PORT), or "" when it would
// not or the gate does not know: with the network open, or a loopback
// address, which the kernel decides by port.
func (s *sandboxScope) netDenial(t target, p string) string {
	proto, rest, _ := strings.Cut(strings.TrimPrefix(p, "/dev/"), "/")
	host, _, _ := strings.Cut(rest, "/")
	switch s.network {
	case NetworkOff:
		return fmt.Sprintf("sandbox %s: %s %s opens a network connection, and the network is off (sandbox.network.mode: off)", s.profile, t.how, t.text)
	case NetworkAllowlist:
		if host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1" || host == "[::1]" {
			return ""
		}
		if proto == "udp" {
			return fmt.Sprintf("sandbox %s: %s %s opens a UDP connection, which the network allow-list blocks", s.profile, t.how, t.text)
		}
		return fmt.Sprintf("sandbox %s: %s %s opens a network connection straight to %s, which the network allow-list blocks: "+
			"a command connects only through the session's egress proxy, which bash's /dev/tcp does not use (curl, git, pip and npm do, through HTTP_PROXY)",
			s.profile, t.how, t.text, host)
	}
	return ""
}

func (s *sandboxScope) writeDenial(t target) string {
	if s.profile == SandboxReadOnly {
		return fmt.Sprintf("sandbox read-only: writes are blocked by the kernel (%s %s)", t.how, t.text)
	}
	return fmt.Sprintf("sandbox workspace: writes outside the workspace are blocked by the kernel (%s %s)", t.how, t.text)
}

// readDenial returns why the kernel would refuse a read c makes, or "".
// Every argument that names a path is taken as read, but those of
// commands that only print their arguments.
func (s *sandboxScope) readDenial(c *rules.Command) string {
	switch c.Name {
	case "", "echo", "printf", "cd", "pushd", ":", "true", "false", "test", "[", "[[", "ln", "link":
		return "" // they print, test or link to their arguments without reading them
	}
	if strings.HasPrefix(c.Name, "@") {
		return ""
	}
	for _, a := range slices.Concat(c.Globals, c.Args) {
		for _, p := range []string{a, afterEquals(a)} {
			if p == "" || !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$HOME") &&
				!strings.HasPrefix(p, "${HOME}") && !strings.HasPrefix(p, ".") {
				continue
			}
			ps, ok := s.resolve(p)
			if ok && len(ps) > 0 && !slices.ContainsFunc(ps, func(q string) bool { return !s.hidden(q) }) {
				return fmt.Sprintf("sandbox %s: reading %s is blocked by the kernel (credentials and runbox's own files are unreadable)", s.profile, a)
			}
		}
	}
	return ""
}

// afterEquals is the value of an option or operand written NAME=VALUE
// (--file=PATH, dd's if=PATH), or "".
func afterEquals(a string) string {
	if _, v, ok := strings.Cut(a, "="); ok && !strings.Contains(a[:strings.IndexByte(a, '=')], "/") {
		return v
	}
	return ""
}

// confined reports whether every path c changes is known to be inside
// the writable roots and free to change: the condition on which a
// relaxable finding on c is let through.
func (s *sandboxScope) confined(c *rules.Command, cmds []rules.Command) bool {
	ts, ok := s.targets(c, cmds)
	if !ok || len(ts) == 0 {
		return false
	}
	for _, t := range ts {
		ps, ok := s.resolveTarget(c, t)
		if !ok || len(ps) == 0 {
			return false
		}
		for _, p := range ps {
			if s.place(p) != whereInside || keptInside(p) || t.whole && s.isWritableRoot(p) {
				return false
			}
		}
	}
	return true
}

// resolveTarget resolves t, a path c changes; git's -C options move the
// directory it is relative to.
func (s *sandboxScope) resolveTarget(c *rules.Command, t target) ([]string, bool) {
	if c.Name != "git" {
		return s.resolve(t.text)
	}
	cwds, unknown := s.cwds, s.cwdUnknown
	for i := 0; i < len(c.Globals); i++ {
		if c.Globals[i] != "-C" || i+1 >= len(c.Globals) {
			continue
		}
		i++
		next, ok := s.resolveFrom(c.Globals[i], cwds, unknown)
		if !ok {
			return nil, false
		}
		cwds, unknown = next, false
	}
	return s.resolveFrom(t.text, cwds, unknown)
}

// targets returns the paths c changes in ways the kernel's file rules
// govern (writing, creating, removing, renaming), and false when the
// gate cannot know them all (files fed by xargs, git options that move
// the work tree). Commands it does not know change nothing here.
func (s *sandboxScope) targets(c *rules.Command, cmds []rules.Command) ([]target, bool) {
	each := func(how string, texts []string, whole bool) []target {
		out := make([]target, 0, len(texts))
		for _, t := range texts {
			out = append(out, target{how: how, text: t, whole: whole})
		}
		return out
	}
	if slices.Contains(c.Via, "xargs") {
		return nil, false
	}
	switch c.Name {
	case rules.FactWrite:
		if len(c.Args) < 2 {
			return nil, false
		}
		return []target{{how: c.Args[0], text: c.Args[1]}}, true
	case "rm", "srm", "unlink", "rmdir", "shred":
		ops := operands(c.Args, "", nil)
		if slices.Contains(c.Via, "find") && slices.ContainsFunc(ops, func(o string) bool { return strings.Contains(o, "{}") }) {
			return s.findStarts(c, cmds)
		}
		recursive := slices.ContainsFunc(c.Args, func(a string) bool {
			return a == "--recursive" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "rR")
		})
		return each(c.Name, ops, recursive), true
	case "mkdir", "truncate":
		valued := map[string]string{"mkdir": "mZ", "truncate": "sr"}[c.Name]
		return each(c.Name, operands(c.Args, valued, []string{"--mode", "--context", "--size", "--reference"}), false), true
	case "mv":
		// The sources are removed; the destination is a write fact.
		ops := operands(c.Args, "tS", []string{"--target-directory", "--suffix"})
		if !slices.ContainsFunc(c.Args, func(a string) bool { return a == "-t" || strings.HasPrefix(a, "--target-directory") }) && len(ops) > 0 {
			ops = ops[:len(ops)-1]
		}
		return each("mv", ops, true), true
	case "find":
		if !slices.Contains(c.Args, "-delete") {
			return nil, true
		}
		starts, filtered, ok := findParts(c.Args)
		return each("find-delete", starts, !filtered), ok
	case "git":
		if len(c.Args) == 0 || c.Args[0] != "clean" || !slices.ContainsFunc(c.Args[1:], isForce) {
			return nil, true
		}
		if s.gitEnv {
			return nil, false // GIT_DIR, GIT_WORK_TREE … move the tree
		}
		for i := 0; i < len(c.Globals); i++ {
			switch g := c.Globals[i]; {
			case g == "-C":
				i++
			case g == "--no-pager" || g == "-P":
			default:
				return nil, false // -c, --git-dir, --work-tree … move or reconfigure the tree
			}
		}
		ops := operands(c.Args[1:], "e", []string{"--exclude"})
		if len(ops) == 0 {
			ops = []string{"."}
		}
		if slices.ContainsFunc(ops, func(o string) bool { return strings.HasPrefix(o, ":") }) {
			return nil, false // pathspec magic (:/ is the top of the repository)
		}
		return each(strings.Join(slices.Concat([]string{"git"}, c.Globals, []string{"clean"}), " "), ops, false), true
	}
	return nil, true
}

// mentionsGitEnv reports whether the command sets git's environment.
func mentionsGitEnv(cmds []rules.Command) bool {
	for i := range cmds {
		if slices.ContainsFunc(slices.Concat(cmds[i].Env, cmds[i].Args), func(e string) bool { return strings.Contains(e, "GIT_") }) ||
			strings.Contains(cmds[i].Source, "GIT_") {
			return true
		}
	}
	return false
}

func isForce(a string) bool {
	return a == "--force" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'f')
}

// findStarts returns the start points of the find that runs c (-exec,
// -execdir, -ok).
func (s *sandboxScope) findStarts(c *rules.Command, cmds []rules.Command) ([]target, bool) {
	f := findRunning(c, cmds)
	if f == nil {
		return nil, false
	}
	starts, filtered, ok := findParts(f.Args)
	out := make([]target, 0, len(starts))
	for _, st := range starts {
		out = append(out, target{how: "find-exec-" + c.Name, text: st, whole: !filtered})
	}
	return out, ok && len(out) > 0
}

// findRunning returns the find that runs c (-exec, -execdir, -ok): the
// find command with the same source before it; nil when there is none.
func findRunning(c *rules.Command, cmds []rules.Command) *rules.Command {
	for i := range cmds {
		f := &cmds[i]
		if f == c {
			break
		}
		if f.Name == "find" && f.Source == c.Source {
			return f
		}
	}
	return nil
}

// findParts splits find's arguments into its start points ("." when it
// names none) and whether its expression tests which files it reaches;
// false when it follows symbolic links (-L, -follow), which lead out of
// the tree.
func findParts(args []string) (starts []string, filtered, ok bool) {
	i := 0
	for i < len(args) && (args[i] == "-H" || args[i] == "-L" || args[i] == "-P" || strings.HasPrefix(args[i], "-O") || strings.HasPrefix(args[i], "-D")) {
		if args[i] == "-L" {
			return nil, false, false
		}
		i++
	}
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
			break
		}
		starts = append(starts, a)
	}
	for _, a := range args[i:] {
		switch a {
		case "-follow", "-files0-from":
			return nil, false, false
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type",
			"-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-empty", "-user", "-group",
			"-perm", "-links", "-inum", "-samefile", "-nouser", "-nogroup":
			filtered = true
		}
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	return starts, filtered, true
}

// operands returns the arguments of a command that are not options:
// every argument after "--", and before it those that do not start with
// "-", less the values of the short options in valued and the long
// options in long. Options may follow operands (rm build -rf).
func operands(args []string, valued string, long []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && slices.Contains(long, a) {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			if j := strings.IndexAny(a[1:], valued); valued != "" && j >= 0 && j == len(a)-2 {
				i++ // the value is the next argument
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// setOf makes a set of the words in list.
func setOf(list string) map[string]bool {
	m := make(map[string]bool)
	for _, f := range strings.Fields(list) {
		m[f] = true
	}
	return m
}
