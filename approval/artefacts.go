package approval

import (
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
)

// artefactNames are what builds and package managers make in a project
// and make again (dependencies, outputs, caches, virtual environments):
// removing them loses no work, and agents do it all the time.
var artefactNames = setOf(`node_modules dist build target out _build __pycache__ .venv venv .tox .nox
	.pytest_cache .mypy_cache .ruff_cache .hypothesis .next .nuxt .svelte-kit .turbo .parcel-cache .angular
	.cache coverage .coverage htmlcov .nyc_output .gradle .eggs .dart_tool .expo storybook-static
	.terraform.lock.hcl package-lock.json yarn.lock pnpm-lock.yaml`)

// inArtefact reports whether rel, a path relative to the request's
// directory, lies in a build artefact: one of its elements is an
// artefact's name (build, target/debug, node_modules/.cache, dist/*,
// pkg/__pycache__), or *.egg-info or cmake-build-*.
func inArtefact(rel string) bool {
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
	if dir == "" || !path.IsAbs(dir) || !slices.ContainsFunc(fs, func(f rules.Finding) bool { return f.Rule.ID == rules.ArtefactRule }) || makesLinks(cmds) {
		return fs
	}
	s := newSandboxScope(Sandbox{Profile: SandboxWorkspace, Writable: []string{dir}}, home, dir, text, cmds)
	ctx := newContexts(cmds)
	return slices.DeleteFunc(fs, func(f rules.Finding) bool {
		return f.Rule.ID == rules.ArtefactRule && ctx.same(f.Cmd) && s.removesArtefacts(path.Clean(dir), f.Cmd, cmds)
	})
}

// removesArtefacts reports whether every path c removes is confined
// under dir and lies in a build artefact there.
func (s *sandboxScope) removesArtefacts(dir string, c *rules.Command, cmds []rules.Command) bool {
	if !s.confined(c, cmds) {
		return false
	}
	ts, _ := s.targets(c, cmds)
	for _, t := range ts {
		ps, _ := s.resolveTarget(c, t)
		for _, p := range ps {
			rel, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
			if !ok || !inArtefact(rel) {
				return false
			}
		}
	}
	return true
}
