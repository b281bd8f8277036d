package gitguard

import (
	"fmt"

	"github.com/runbox/runbox/envs"
)

// Violations are r's findings as the command's sandbox violations: op
// "git", the file as target, decided (runbox found and changed it; no
// output of the command can make one up).
func (r Report) Violations() []envs.Violation {
	var vs []envs.Violation
	for _, f := range r.Findings {
		vs = append(vs, envs.Violation{Op: "git", Target: f.Path, Rule: f.Rule, Source: envs.SourceDecided})
	}
	return vs
}

// Warnings are r's findings, an incomplete walk and err (what Check could
// not make inert) as lines for the command's result.
func (r Report) Warnings(err error) []string {
	var w []string
	for _, f := range r.Findings {
		w = append(w, fmt.Sprintf("%s: the command left git something to run outside the sandbox (%s); made inert, the original kept as %s", f.Path, f.Rule, f.Kept))
	}
	if r.Incomplete != "" {
		w = append(w, "checking the workspace for what git would run: "+r.Incomplete)
	}
	if err != nil {
		w = append(w, err.Error())
	}
	return w
}
