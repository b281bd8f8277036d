package local

import (
	"slices"
	"sync"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// denials collects, as they happen, the connects the sandbox refused a
// command (confine reports them as it decides them: exact, whatever the
// command prints). A warm shell's belong to the command it runs.
type denials struct {
	mu sync.Mutex
	v  []envs.Violation
}

// add records v once.
func (d *denials) add(v confine.Violation) {
	e := envs.Violation{Op: v.Op, Target: v.Target, Rule: v.Rule}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.v, e) {
		d.v = append(d.v, e)
	}
}

// list returns what was recorded (d may be nil: nothing).
func (d *denials) list() []envs.Violation {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.v)
}

// SandboxDenials are the connects the sandbox refused the command so far
// (envs.Denier).
func (p *process) SandboxDenials() []envs.Violation { return p.denials.list() }
