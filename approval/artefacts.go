package approval

import (
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/walk"
)

// artefactNames are what builds and package managers make in a project
// and make again (dependencies, outputs, caches, virtual environments):
// removing them loses no work, and agents do it all the time.
var artefactNames = setOf(`node_modules dist build target out _build __pycache__ .venv venv .tox .nox
	.pytest_cache .mypy_cache .ruff_cache .hypothesis .next .nuxt .svelte-kit .turbo .parcel-cache .angular
	.cache coverage .coverage htmlcov .nyc_output .gradle .eggs .dart_tool .expo storybook-static tmp .tmp .ipynb_checkpoints
	.terraform.lock.hcl package-lock.json yarn.lock pnpm-lock.yaml`)

// inArtefact reports whether rel, a path relative to the request's
// directory, lies in a build artefact: one of its elements is an
// artefact's name (build, target/debug, node_modules/.cache, dist/*,
// pkg/__pycache__), or *.egg-info or cmake-build-*.
func inArtefact(rel string) bool {
	if rel == "vendor/bundle" || strings.HasPrefix(rel, "vendor/bundle/") {
		return true // Bundler's installed gems (bundle config path vendor/bundle)
	}
	for e := range strings.SplitSeq(rel, "/") {
		if artefactNames[e] || strings.HasSuffix(e, ".egg-info") && len(e) > len(".egg-info") ||
			strings.HasPrefix(e, "cmake-build-") && len(e) > len("cmake-build-") {
			return true
		}
	}
	return false
}

// dropArtefactDeletes removes from fs the recursive deletes whose every
// target is a build artefact inside dir, the directory the command runs
// in, in every sandbox profile and with none. It holds the deletes to
// what the workspace profile lets through (see [sandboxScope.confined]):
// the command runs here, in a directory the gate can follow (no unknown
// cd, no ssh, no sudo -D), no link is made first, and every target
// resolves under dir without being dir itself. rm -rf ~, /, .. and any
// path that is not an artefact's name still ask.
func dropArtefactDeletes(home, dir, text string, cmds []rules.Command, fs []rules.Finding) []rules.Finding {
	if dir == "" || !path.IsAbs(dir) || !slices.ContainsFunc(fs, isArtefactFinding) || makesLinks(cmds) {
		return fs
	}
	s := newSandboxScope(Sandbox{Profile: SandboxWorkspace, Writable: []string{dir}}, home, dir, text, cmds)
	roots := s.projectCds()
	ctx := newContexts(cmds)
	return slices.DeleteFunc(fs, func(f rules.Finding) bool {
		if !isArtefactFinding(f) || !ctx.same(f.Cmd) {
			return false
		}
		if find := findOf(f.Cmd, cmds); find != nil {
			return findSelectsArtefacts(find.Args) && s.confined(f.Cmd, cmds)
		}
		return f.Rule.ID == rules.ArtefactRule && s.removesScratch(f.Cmd, cmds) ||
			(f.Rule.ID == rules.ArtefactRule || f.Rule.ID == rules.GitCleanRule) && s.removesArtefacts(roots, f.Cmd, cmds)
	})
}

func isArtefactFinding(f rules.Finding) bool {
	return f.Rule.ID == rules.ArtefactRule || f.Rule.ID == rules.FindDeleteRule || f.Rule.ID == rules.BulkDeleteRule || f.Rule.ID == rules.GitCleanRule
}

// findOf returns the find command that removes what c removes: c itself
// (find -delete), or the find whose -exec runs c on each file it finds
// (find … -exec rm -rf {} +); nil for any other command.
func findOf(c *rules.Command, cmds []rules.Command) *rules.Command {
	if c.Name == "find" {
		return c
	}
	if !slices.Contains(c.Via, "find") || !slices.Contains(c.Args, "{}") {
		return nil
	}
	return findRunning(c, cmds)
}

// artefactGlobs are the name patterns of files builds leave beside the
// sources: compiled Python, objects, Java classes, Finder's litter.
var artefactGlobs = setOf(`*.pyc *.pyo *.o *.obj *.class *.tsbuildinfo .DS_Store *.egg-info`)

// findSelectsArtefacts reports whether find's expression (args) reaches
// only build artefacts: a plain conjunction of tests (no -o, !, or
// parentheses, which could widen it), one of them a -name or -iname of an
// artefact (__pycache__, node_modules, *.pyc). Where it starts is the
// sandbox scope's to judge.
func findSelectsArtefacts(args []string) bool {
	if findStartsInArtefacts(args) {
		return true
	}
	artefact := false
	for i, a := range args {
		switch a {
		case "-o", "-or", ",", "!", "-not", "(", ")", "-L", "-follow":
			return false
		case "-name", "-iname":
			if i+1 < len(args) && (artefactNames[args[i+1]] || artefactGlobs[args[i+1]]) {
				artefact = true
			}
		}
	}
	return artefact
}

// findStartsInArtefacts reports whether find starts only inside build
// artefacts of the project (find build -name '*.tmp' -delete, find dist
// -type f -delete), following no link: whatever its expression selects
// there is an artefact too.
func findStartsInArtefacts(args []string) bool {
	starts, _, ok := findParts(args) // not ok: -L or -follow
	if !ok || slices.Contains(args, "-H") {
		return false
	}
	for _, a := range starts {
		p := path.Clean(a)
		if path.IsAbs(p) || p == "." || p == ".." || strings.HasPrefix(p, "../") || !inArtefact(p) {
			return false
		}
	}
	return true
}

// removesArtefacts reports whether every path c removes is confined
// under dir and lies in a build artefact there.
func (s *sandboxScope) removesArtefacts(roots []string, c *rules.Command, cmds []rules.Command) bool {
	if !s.confined(c, cmds) {
		return false
	}
	ts, _ := s.targets(c, cmds)
	for _, t := range ts {
		ps, _ := s.resolveTarget(c, t)
		for _, p := range ps {
			if !slices.ContainsFunc(roots, func(root string) bool {
				rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
				return ok && inArtefact(rel)
			}) {
				return false
			}
		}
	}
	return true
}

// removesScratch reports whether every target of c is one entry of the
// temporary directory named outright (rm -rf /tmp/build-cache): scratch
// space, whose sticky bit keeps other users' entries out of reach. A
// pattern, a trailing slash (which would follow a link to its target) or
// an expansion is not one.
func (s *sandboxScope) removesScratch(c *rules.Command, cmds []rules.Command) bool {
	ts, ok := s.targets(c, cmds)
	if !ok || len(ts) == 0 {
		return false
	}
	for _, t := range ts {
		dir, name := path.Split(t.text)
		if dir != "/tmp/" && dir != "/var/tmp/" || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "*?[$`\\{~") {
			return false
		}
	}
	return true
}

// projectCds adds to the scope's writable roots the directories the
// command changes into below the home directory (cd ~/src/app && rm -rf
// dist): an agent working in a project it was not started in removes
// that project's artefacts as it would its own. The home directory
// itself and its hidden directories (~/.config, ~/.ssh) are not one.
// It returns every root, the request's directory first.
func (s *sandboxScope) projectCds() []string {
	roots := []string{s.dir}
	if s.home == "" || s.dir == "" {
		return roots
	}
	for _, d := range s.cwds {
		rel, ok := strings.CutPrefix(d, strings.TrimSuffix(s.home, "/")+"/")
		if !ok || rel == "" || strings.HasPrefix(rel, ".") || slices.Contains(roots, d) {
			continue
		}
		roots = append(roots, d)
		s.writable = append(s.writable, walk.SplitPath(d))
	}
	return roots
}
