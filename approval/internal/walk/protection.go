package walk

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Protector is a compiled [approval.Protection].
type Protector struct {
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

// Protected is a [approval.ProtectedPath] as the walker takes it.
type Protected struct {
	Path        string
	Dir, Policy bool
}

// NewProtector checks paths and splits them; env holds the values of
// the variables they may name ([approval.Protection].Env). configFile, where the
// Gate saves approvals, is protected as policy.
func NewProtector(paths []Protected, env map[string]string, configFile string) (*Protector, error) {
	pr := &Protector{env: make(map[string]string, len(env))}
	for k, v := range env {
		pr.env[k] = v
	}
	if h := env["HOME"]; path.IsAbs(h) {
		pr.home = SplitPath(path.Clean(h))
	}
	for _, pp := range paths {
		g, err := pr.compile(pp)
		if err != nil {
			return nil, err
		}
		pr.paths = append(pr.paths, g)
	}
	if configFile != "" {
		if abs, err := filepath.Abs(configFile); err == nil {
			g, err := pr.compile(Protected{Path: filepath.ToSlash(abs), Policy: true})
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

func (pr *Protector) compile(pp Protected) (guarded, error) {
	p := pp.Path
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if pr.home != nil {
			p = path.Join("/", strings.Join(pr.home[1:], "/"), p[1:])
		}
	case !path.IsAbs(p):
		return guarded{}, fmt.Errorf("approval: protected path %q is neither absolute nor under ~/", pp.Path)
	}
	return guarded{parts: SplitPath(path.Clean(p)), dir: pp.Dir, policy: pp.Policy}, nil
}

// SplitPath splits a cleaned path that starts with "/" or "~" into its
// root and components: "/a/b" is ["/", "a", "b"], "~" is ["~"].
func SplitPath(p string) []string {
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
			if !ComponentMatch(parts[i], g.parts[i]) {
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
				if !ComponentMatch(tail[j], g.parts[len(g.parts)-i+j]) {
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

// ComponentMatch matches one component of a command's path, which may be
// a glob, against one of a protected path.
func ComponentMatch(pattern, name string) bool {
	if pattern == name {
		return true
	}
	if name == "/" || name == "~" || !strings.ContainsAny(pattern, "*?[") {
		return false
	}
	ok, err := path.Match(pattern, name)
	return ok || err != nil // a malformed glob is not known to miss
}
