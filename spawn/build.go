package spawn

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
)

// HomeVar is the variable that tells a child which runbox profile home it
// serves. Build pins it, with HOME, to [Request].Served.Home.
const HomeVar = "RUNBOX_HOME"

// Profile identifies a runbox profile by its home directory and its env file.
type Profile struct {
	// Home is the profile's home directory. When it is set on the served
	// profile, Build pins HOME and RUNBOX_HOME to it. It must be absolute.
	Home string

	// EnvFile is the path of the profile's dotenv-style file. Build reads
	// the launch profile's file only; see [Request].
	EnvFile string
}

// IsZero reports whether p names no profile.
func (p Profile) IsZero() bool { return p.Home == "" && p.EnvFile == "" }

func (p Profile) same(o Profile) bool {
	return clean(p.Home) == clean(o.Home) && clean(p.EnvFile) == clean(o.EnvFile)
}

func clean(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// Request is everything Build needs. Build does not keep it or change it.
type Request struct {
	// Base is the environment the child would otherwise inherit, as
	// KEY=VALUE entries (the shape of os.Environ and exec.Cmd.Env). For a
	// later duplicate key the later entry wins. Entries without '=', with an
	// empty name or with a NUL byte are dropped as malformed. Nil means the
	// child inherits nothing: it gets only the overlay and the defaults.
	Base []string

	// Overlay is the command's own variables. They win over Base and over
	// Build's defaults (PAGER, HOME, ...), but not over the policy: a blocked
	// name is dropped here too unless passed through, and an always-strip
	// name always is. An overlay key RUNBOX_FORCE_NAME hands NAME to the
	// child with that key's value (see [ForcePrefix]). Names may not be
	// empty or contain '=' or NUL, and values may not contain NUL. Nil means
	// no overlay.
	Overlay map[string]string

	// Served is the profile this command runs for. The zero Profile means
	// the launch profile, and HOME is then left as Base has it.
	Served Profile

	// Launch is the profile the runbox process was started with. When it
	// has an EnvFile and Served is a different profile (a non-zero Served
	// whose cleaned Home or EnvFile differs), every name that file
	// defines is dropped from Base: it is the launch profile's residue. The
	// zero Profile means the launch profile is unknown, and nothing is
	// dropped as residue. A launch EnvFile that does not exist defines
	// nothing; one that exists but cannot be read fails the build.
	Launch Profile

	// Policy says which names are blocked and which pass. The zero Policy is
	// [DefaultPolicy].
	Policy Policy
}

// Reason says why a variable was dropped.
type Reason uint8

const (
	_ Reason = iota
	// ReasonAlwaysStrip: the name is on the always-strip list.
	ReasonAlwaysStrip
	// ReasonBlocked: the name is blocked and not passed through.
	ReasonBlocked
	// ReasonLaunchProfile: the launch profile's env file defines the name
	// and another profile is being served.
	ReasonLaunchProfile
	// ReasonVirtualenv: the name marks an active virtualenv or conda env.
	ReasonVirtualenv
	// ReasonForceKey: a RUNBOX_FORCE_ key that was not honoured (it came
	// from Base, or its prefix was not in upper case). Honoured ones are in
	// [Result].Forced instead.
	ReasonForceKey
	// ReasonForceRefused: a RUNBOX_FORCE_ key named an always-strip name.
	ReasonForceRefused
	// ReasonMalformed: the Base entry or force key could not be read.
	ReasonMalformed
	// ReasonRunbox: an inherited variable of runbox's own (its name
	// starts with RUNBOX_, in any case): it configures runbox, not the
	// command, and would tell the command where runbox keeps its state.
	ReasonRunbox
)

var reasonNames = [...]string{
	ReasonAlwaysStrip:   "always-strip",
	ReasonBlocked:       "blocked",
	ReasonLaunchProfile: "launch-profile",
	ReasonVirtualenv:    "virtualenv",
	ReasonForceKey:      "force-key",
	ReasonForceRefused:  "force-refused",
	ReasonMalformed:     "malformed",
	ReasonRunbox:        "runbox",
}

func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// MarshalText makes a Reason appear as its name in JSON.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Drop records one name the child does not get. It never holds a value.
type Drop struct {
	Name   string `json:"name"`
	Reason Reason `json:"reason"`
}

// Result is a built child environment and the account of how it was built.
// Printing it never shows the value of a dropped variable, and its JSON
// form holds names only.
type Result struct {
	// Env is the child's environment as KEY=VALUE entries sorted by key,
	// one entry per key, ready for exec.Cmd.Env. It is never nil. It is
	// left out of JSON: it holds values, passed-through secrets among them.
	Env []string `json:"-"`

	// Dropped lists the names offered by Base or Overlay that are not in
	// Env, with the reason, sorted by name then reason.
	Dropped []Drop `json:"dropped,omitempty"`

	// Forced lists, sorted, the names handed over by RUNBOX_FORCE_ keys.
	Forced []string `json:"forced,omitempty"`

	// Warnings are notes for a human (runbox doctor), naming variables but
	// never showing values.
	Warnings []string `json:"warnings,omitempty"`

	// secrets is behind a pointer so that fmt's %v, which prints
	// unexported fields, shows an address rather than the values.
	secrets *secretSet
}

// quiet holds the variables that keep children from waiting on a human:
// pagers print straight through, editors accept what they were given, and
// git and apt do not prompt. Overlay values win; Base values do not.
var quiet = [...]struct{ name, value string }{
	{"DEBIAN_FRONTEND", "noninteractive"},
	{"EDITOR", "true"},
	{"GIT_EDITOR", "true"},
	{"GIT_PAGER", "cat"},
	{"GIT_TERMINAL_PROMPT", "0"},
	{"MANPAGER", "cat"},
	{"PAGER", "cat"},
	{"SYSTEMD_PAGER", "cat"},
	{"VISUAL", "true"},
}

// venvDirs are the markers of an active environment whose value is a
// directory with a bin/ that activation put on PATH.
var venvDirs = [...]string{"VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_PREFIX_*"}

// venvBin returns the bin directory that activating the environment in
// name=val put on PATH, if name is such a marker.
func venvBin(name, val string) (string, bool) {
	if !matchAny(venvDirs[:], name) || !path.IsAbs(val) {
		return "", false
	}
	return path.Join(val, "bin"), true
}

// venvMarkers are all the markers of an active environment.
var venvMarkers = [...]string{
	"VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONHOME",
	"CONDA_PREFIX", "CONDA_PREFIX_*", "CONDA_DEFAULT_ENV", "CONDA_PROMPT_MODIFIER", "CONDA_SHLVL",
	"PIPENV_ACTIVE", "POETRY_ACTIVE",
}

// Build returns the environment for one child process. It reads nothing but
// the launch profile's env file: not the calling process's environment, not
// the served profile's env file. Errors start with "spawn: " and come from a
// bad Request (an invalid pattern, overlay name or home) or an unreadable
// launch env file.
func Build(req Request) (*Result, error) {
	r, err := compile(req.Policy)
	if err != nil {
		return nil, err
	}
	for k, v := range req.Overlay {
		if !validName(k) {
			return nil, fmt.Errorf("spawn: invalid overlay name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("spawn: overlay value of %s contains NUL", k)
		}
	}
	if h := req.Served.Home; h != "" && !path.IsAbs(h) {
		return nil, fmt.Errorf("spawn: served profile home %q is not absolute", h)
	}

	b := &builder{
		rules:   r,
		env:     make(map[string]string),
		mine:    make(map[string]bool),
		drops:   make(map[Drop]bool),
		secrets: &secretSet{},
	}
	residue, err := b.residue(req.Served, req.Launch)
	if err != nil {
		return nil, err
	}
	removeBins := b.base(req.Base, residue)
	keys := sortedKeys(req.Overlay)
	for _, k := range keys {
		if !strings.HasPrefix(k, ForcePrefix) {
			b.overlay(k, req.Overlay[k], removeBins)
		}
	}
	for _, k := range keys { // after the plain keys, so that a forced value wins
		if name, ok := strings.CutPrefix(k, ForcePrefix); ok {
			b.force(name, req.Overlay[k])
		}
	}
	b.defaults(req.Served.Home)
	b.path(removeBins)
	return b.result(), nil
}

type builder struct {
	rules    *rules
	env      map[string]string
	mine     map[string]bool // set by Overlay or a force key: Build's defaults leave it alone
	forced   []string
	drops    map[Drop]bool
	warnings []string
	secrets  *secretSet
}

func (b *builder) drop(name string, why Reason) { b.drops[Drop{name, why}] = true }

func (b *builder) warnf(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

// residue returns the names the launch profile's env file defines, when
// another profile is being served.
func (b *builder) residue(served, launch Profile) (map[string]bool, error) {
	if launch.EnvFile == "" || served.IsZero() || served.same(launch) {
		return nil, nil
	}
	vars, bad, exists, err := readEnvFile(launch.EnvFile)
	if err != nil {
		return nil, err
	}
	if !exists {
		b.warnf("launch env file %s does not exist: no launch-profile variables to drop", launch.EnvFile)
	}
	for _, n := range bad {
		b.warnf("launch env file %s: line %d not fully understood; a variable it sets may reach the child", launch.EnvFile, n)
	}
	names := make(map[string]bool, len(vars))
	for _, v := range vars {
		names[v.key] = true
	}
	return names, nil
}

// base applies the policy to the inherited entries and returns the bin
// directories of the environments they had activated.
func (b *builder) base(entries []string, residue map[string]bool) map[string]bool {
	vals := make(map[string]string, len(entries))
	for _, kv := range entries {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.IndexByte(kv, 0) >= 0 {
			if !ok {
				name = kv // no '=': the entry is all name
			}
			b.drop(name, ReasonMalformed)
			continue
		}
		vals[name] = val
	}
	bins := make(map[string]bool)
	for _, name := range sortedKeys(vals) {
		val := vals[name]
		c := b.rules.classify(name)
		if c.secret() {
			b.secrets.add(name, val)
		}
		if bin, ok := venvBin(name, val); ok {
			bins[bin] = true
		}
		switch {
		case c == control:
			b.drop(name, ReasonForceKey)
		case c == always:
			b.drop(name, ReasonAlwaysStrip)
		case isRunboxVar(name):
			b.drop(name, ReasonRunbox)
		case residue[name]:
			b.drop(name, ReasonLaunchProfile)
		case c == blocked && !b.rules.passes(name):
			b.drop(name, ReasonBlocked)
		case matchAny(venvMarkers[:], name):
			b.drop(name, ReasonVirtualenv)
		default:
			b.env[name] = val
		}
	}
	return bins
}

// RunboxPrefix starts the names of runbox's own variables, which a child
// never inherits (see rule 2 in the package documentation).
const RunboxPrefix = "RUNBOX_"

// isRunboxVar reports whether name is one of runbox's own variables.
func isRunboxVar(name string) bool {
	return len(name) >= len(RunboxPrefix) && upper(name[:len(RunboxPrefix)]) == RunboxPrefix
}

// overlay applies one overlay variable. A venv the overlay activates itself
// keeps its bin directory on PATH.
func (b *builder) overlay(name, val string, removeBins map[string]bool) {
	c := b.rules.classify(name)
	if c.secret() {
		b.secrets.add(name, val)
	}
	switch {
	case c == control:
		b.drop(name, ReasonForceKey)
		b.warnf("overlay key %s ignored: only the exact prefix %s forces a variable", name, ForcePrefix)
		return
	case c == always:
		b.drop(name, ReasonAlwaysStrip)
		return
	case c == blocked && !b.rules.passes(name):
		b.drop(name, ReasonBlocked)
		return
	}
	if bin, ok := venvBin(name, val); ok {
		delete(removeBins, bin)
	}
	b.env[name] = val
	b.mine[name] = true
}

func (b *builder) force(name, val string) {
	if name == "" {
		b.drop(ForcePrefix, ReasonMalformed)
		b.warnf("overlay key %s names no variable", ForcePrefix)
		return
	}
	c := b.rules.classify(name)
	if c.secret() {
		b.secrets.add(name, val)
	}
	if c == always || c == control {
		b.drop(name, ReasonForceRefused)
		b.warnf("%s%s refused: %s is always stripped", ForcePrefix, name, name)
		return
	}
	b.env[name] = val
	b.mine[name] = true
	b.forced = append(b.forced, name)
}

// defaults sets the quiet variables and pins the served profile's home,
// unless the overlay set them or the policy always strips them.
func (b *builder) defaults(home string) {
	set := func(name, val string) {
		if !b.mine[name] && b.rules.classify(name) != always {
			b.env[name] = val
		}
	}
	for _, q := range quiet {
		set(q.name, q.value)
	}
	if home != "" {
		set("HOME", home)
		set(HomeVar, home)
	}
}

func (b *builder) path(removeBins map[string]bool) {
	if b.rules.classify("PATH") == always {
		return // ExtraStrip asked for no PATH at all
	}
	remove := removeBins
	if b.mine["PATH"] {
		remove = nil // the command chose its PATH: keep what it asked for
	}
	p, unsafe := cleanPath(b.env["PATH"], remove)
	if unsafe > 0 {
		b.warnf("PATH: dropped %d empty or relative entries (they search the working directory)", unsafe)
	}
	b.env["PATH"] = p
}

func (b *builder) result() *Result {
	res := &Result{Env: make([]string, 0, len(b.env)), secrets: b.secrets}
	for _, k := range sortedKeys(b.env) {
		res.Env = append(res.Env, k+"="+b.env[k])
	}
	for d := range b.drops {
		if _, ok := b.env[d.Name]; !ok {
			res.Dropped = append(res.Dropped, d)
		}
	}
	slices.SortFunc(res.Dropped, func(x, y Drop) int {
		return cmp.Or(strings.Compare(x.Name, y.Name), cmp.Compare(x.Reason, y.Reason))
	})
	slices.Sort(b.forced)
	res.Forced = b.forced
	res.Warnings = b.warnings
	b.secrets.sort()
	return res
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
