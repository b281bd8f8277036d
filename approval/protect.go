package approval

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ProtectedPath is a file or directory that commands must not change:
// not write, append to, replace, move, delete, link over, extract into or
// change the mode or owner of. Reading it stays allowed.
type ProtectedPath struct {
	// Path is absolute ("/etc/runbox.yaml") or starts with "~/" (under
	// the home directory, [Protection].Env["HOME"]). It is cleaned and
	// compared as written: the gate does not look at the disk, so it does
	// not follow symbolic links that exist before the command runs.
	Path string
	// Dir protects everything under Path as well as Path itself.
	Dir bool
	// Policy marks a path that holds the gate's own policy (a
	// configuration file, saved approvals): a write to it is hardline
	// ("protected-policy"). Without it a write is denied without asking
	// ("protected-state", which only an allow entry naming it lets
	// through): a command has no business there either.
	Policy bool
}

// Protection is the set of paths a [Gate] keeps commands from changing,
// and what it needs to recognise them in a command.
//
// A command's paths are resolved the way the shell would: quotes and
// escapes removed, ~ and variables expanded (from Env and from
// assignments earlier in the same command, every value a variable may
// hold counted), relative paths joined to the directory of a literal cd
// in the command or to [Request].Dir, "." and ".." segments, doubled and
// trailing slashes cleaned, globs matched against each protected path.
// A path that cannot be resolved (a variable nobody knows, a relative
// path in an unknown directory) asks when its known tail could be a
// protected path ("$X/runbox/config.yaml"), in every mode
// ("protected-unresolved"). Deleting or moving a directory that holds a
// protected path counts as changing it; copying or extracting a tree into
// one, or changing its modes recursively, asks.
type Protection struct {
	// Paths are the protected files and directories. Nil protects
	// nothing (but see [Options].ConfigFile).
	Paths []ProtectedPath
	// Env holds the values of environment variables as the commands
	// will see them, used only to resolve the paths commands write:
	// HOME for ~ and $HOME, and any other variable a path may name
	// ($XDG_CONFIG_HOME …). A name present with the empty value is known
	// to be empty or unset, so ${XDG_CONFIG_HOME:-~/.config} resolves to
	// its default. An absent name is unknown. Nil knows no variable: ~
	// then matches only paths given as "~/…".
	Env map[string]string
}

// DefaultProtection returns runbox's own protected paths, computed from
// getenv (os.Getenv in production) the way runbox finds them:
//
//   - the configuration directory, $XDG_CONFIG_HOME/runbox (else
//     $HOME/.config/runbox), and $HOME/.config/runbox in any case, as
//     policy: the configuration file and the approvals saved with
//     "always" live there;
//   - the file $RUNBOX_CONFIG names, when set, as policy;
//   - the state directory, $RUNBOX_STATE_DIR (a relative one under $PWD),
//     else $XDG_STATE_HOME/runbox, else $HOME/.local/state/runbox, denied:
//     job records, logs and the job daemon's socket live there.
//
// Env holds HOME, XDG_CONFIG_HOME, XDG_STATE_HOME, RUNBOX_CONFIG and
// RUNBOX_STATE_DIR as getenv reports them. Without HOME the paths under
// it are given as "~/…". The file a Gate saves approvals to
// ([Options].ConfigFile) is protected by the Gate itself.
func DefaultProtection(getenv func(string) string) Protection {
	env := make(map[string]string)
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "RUNBOX_CONFIG", "RUNBOX_STATE_DIR"} {
		env[k] = getenv(k)
	}
	home := "~"
	if h := env["HOME"]; path.IsAbs(h) {
		home = h
	}
	var paths []ProtectedPath
	add := func(p string, dir, policy bool) {
		if p != "" {
			paths = append(paths, ProtectedPath{Path: p, Dir: dir, Policy: policy})
		}
	}
	if x := env["XDG_CONFIG_HOME"]; path.IsAbs(x) {
		add(path.Join(x, "runbox"), true, true)
	}
	add(path.Join(home, ".config", "runbox"), true, true)
	if f := env["RUNBOX_CONFIG"]; path.IsAbs(f) {
		add(f, false, true)
	}
	switch s, x := env["RUNBOX_STATE_DIR"], env["XDG_STATE_HOME"]; {
	case path.IsAbs(s):
		add(s, true, false)
	case s != "":
		// Relative: runbox makes it absolute in its working directory.
		if pwd := getenv("PWD"); path.IsAbs(pwd) {
			add(path.Join(pwd, s), true, false)
		}
	case path.IsAbs(x):
		add(path.Join(x, "runbox"), true, false)
	default:
		add(path.Join(home, ".local", "state", "runbox"), true, false)
	}
	return Protection{Paths: paths, Env: env}
}

// protector is a compiled [Protection].
type protector struct {
	paths []guarded
	env   map[string]string
	home  []string // components of HOME; nil when unknown
}

// guarded is one protected path, split into components whose first is
// the root: "/" or, under an unknown home directory, "~".
type guarded struct {
	parts       []string
	dir, policy bool
	// tail marks a link made in a directory the gate does not know: parts
	// are the link's path relative to it, matched against paths known
	// only by the same tail (ln -s ~/.config/runbox/config.yaml c && echo
	// … > c, in an unknown directory).
	tail bool
}

// compileProtection checks p and splits its paths. configFile, where the
// Gate saves approvals, is protected as policy.
func compileProtection(p Protection, configFile string) (*protector, error) {
	pr := &protector{env: make(map[string]string, len(p.Env))}
	for k, v := range p.Env {
		pr.env[k] = v
	}
	if h := p.Env["HOME"]; path.IsAbs(h) {
		pr.home = splitPath(path.Clean(h))
	}
	for _, pp := range p.Paths {
		g, err := pr.compile(pp)
		if err != nil {
			return nil, err
		}
		pr.paths = append(pr.paths, g)
	}
	if configFile != "" {
		if abs, err := filepath.Abs(configFile); err == nil {
			g, err := pr.compile(ProtectedPath{Path: filepath.ToSlash(abs), Policy: true})
			if err != nil {
				return nil, err
			}
			pr.paths = append(pr.paths, g)
		}
	}
	if len(pr.paths) == 0 {
		return nil, nil
	}
	return pr, nil
}

func (pr *protector) compile(pp ProtectedPath) (guarded, error) {
	p := pp.Path
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if pr.home != nil {
			p = path.Join("/", strings.Join(pr.home[1:], "/"), p[1:])
		}
	case !path.IsAbs(p):
		return guarded{}, fmt.Errorf("approval: protected path %q is neither absolute nor under ~/", pp.Path)
	}
	return guarded{parts: splitPath(path.Clean(p)), dir: pp.Dir, policy: pp.Policy}, nil
}

// splitPath splits a cleaned path that starts with "/" or "~" into its
// root and components: "/a/b" is ["/", "a", "b"], "~" is ["~"].
func splitPath(p string) []string {
	root, rest := p[:1], strings.TrimPrefix(p[1:], "/")
	if rest == "" {
		return []string{root}
	}
	return append([]string{root}, strings.Split(rest, "/")...)
}

// Classes of a write to a protected path, as the "@protected" fact names
// them.
const (
	classPolicy     = "policy"     // a path that holds policy: hardline
	classState      = "state"      // another protected path: denied
	classUnresolved = "unresolved" // might be one: asks
)

// reach says what a command does to a path it names, and so which
// protected paths it affects.
type reach int

const (
	// reachWrite changes the path and, for a directory, what is under it.
	reachWrite reach = iota
	// reachDestroy also removes or moves everything under the path, so
	// a protected path under it is changed too (rm -r, mv, chmod -R).
	reachDestroy
	// reachMaybe changes what is under the path in ways the gate cannot
	// tell: a tree of unknown content copied or extracted into it (cp -r,
	// tar -x -C), modes changed recursively. A protected path under it
	// asks.
	reachMaybe
)

// matchResolved returns the class of the protected path that parts (a
// resolved path, whose components may be globs) affects; "" for none.
func matchResolved(paths []guarded, parts []string, r reach) string {
	class := ""
	for _, g := range paths {
		n := min(len(parts), len(g.parts))
		same := true
		for i := range n {
			if !componentMatch(parts[i], g.parts[i]) {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		var c string
		switch {
		case len(parts) == len(g.parts) || len(parts) > len(g.parts) && g.dir:
			c = g.class()
		case len(parts) < len(g.parts) && r == reachDestroy:
			c = g.class()
		case len(parts) < len(g.parts) && r == reachMaybe:
			c = classUnresolved
		}
		class = stronger(class, c)
	}
	return class
}

// matchTail reports whether tail, the known components at the end of a
// path whose beginning is unknown, could name a protected path or a path
// under a protected directory. The tail must cover at least the last two
// components of the protected path, or its last one and something below
// it for a directory: "$X/runbox/config.yaml" or "$X/.config/runbox"
// match ~/.config/runbox, "$X/config.yaml" alone does not.
func matchTail(paths []guarded, tail []string) bool {
	for _, g := range paths {
		if g.tail {
			continue // see matchLinkTail
		}
		m := len(g.parts) - 1 // without the root
		for i := 1; i <= min(len(tail), m); i++ {
			aligned := true
			for j := range i {
				if !componentMatch(tail[j], g.parts[len(g.parts)-i+j]) {
					aligned = false
					break
				}
			}
			if !aligned {
				continue
			}
			if i == len(tail) && i >= 2 || i < len(tail) && g.dir {
				return true
			}
		}
	}
	return false
}

// matchLinkTail returns the class of the link made in an unknown
// directory that tail, a path in an unknown directory, is or is under;
// "" for none.
func matchLinkTail(paths []guarded, tail []string) string {
	class := ""
	for _, g := range paths {
		if !g.tail || len(tail) < len(g.parts) || len(tail) > len(g.parts) && !g.dir {
			continue
		}
		if slices.Equal(tail[:len(g.parts)], g.parts) {
			class = stronger(class, g.class())
		}
	}
	return class
}

func (g guarded) class() string {
	if g.policy {
		return classPolicy
	}
	return classState
}

// stronger returns the more severe of two classes.
func stronger(a, b string) string {
	rank := func(c string) int {
		switch c {
		case classPolicy:
			return 3
		case classState:
			return 2
		case classUnresolved:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// componentMatch matches one component of a command's path, which may be
// a glob, against one of a protected path.
func componentMatch(pattern, name string) bool {
	if pattern == name {
		return true
	}
	if name == "/" || name == "~" || !strings.ContainsAny(pattern, "*?[") {
		return false
	}
	ok, err := path.Match(pattern, name)
	return ok || err != nil // a malformed glob is not known to miss
}
