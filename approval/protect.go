package approval

import (
	"path"

	"github.com/runbox/runbox/approval/internal/walk"
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

// compileProtection checks p and splits its paths. configFile, where the
// Gate saves approvals, is protected as policy.
func compileProtection(p Protection, configFile string) (*walk.Protector, error) {
	paths := make([]walk.Protected, len(p.Paths))
	for i, pp := range p.Paths {
		paths[i] = walk.Protected(pp)
	}
	return walk.NewProtector(paths, p.Env, configFile)
}
