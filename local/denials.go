package local

import (
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// denials collects, as they happen, what the sandbox refused a command
// (confine reports its connect decisions as it makes them: exact,
// whatever the command prints). A warm shell's belong to the command it
// runs.
type denials struct{ set envs.ViolationSet }

// add records v once (see envs.ViolationSet for the bound).
func (d *denials) add(v confine.Violation) {
	d.set.Add(envs.Violation{Op: v.Op, Target: v.Target, Rule: v.Rule, Source: envs.SourceDecided})
}

// list returns what was recorded (d may be nil: nothing).
func (d *denials) list() []envs.Violation {
	if d == nil {
		return nil
	}
	return d.set.List()
}

// SandboxDenials are the connects the sandbox refused the command so far
// (envs.Denier).
func (p *process) SandboxDenials() []envs.Violation { return p.denials.list() }
