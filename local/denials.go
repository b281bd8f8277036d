package local

import (
	"slices"
	"strconv"
	"sync"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// denials collects, as they happen, what the sandbox refused a command
// (confine reports its connect decisions as it makes them: exact,
// whatever the command prints). A warm shell's belong to the command it
// runs. A command that is refused in a loop must not grow runbox without
// bound: each distinct denial is recorded once (a set, so in constant
// time), the first maxDenials in order, the rest counted.
type denials struct {
	mu   sync.Mutex
	seen map[envs.Violation]bool
	v    []envs.Violation
	more int
}

// maxDenials is how many distinct denials a command's result lists.
const maxDenials = 100

// add records v once.
func (d *denials) add(v confine.Violation) {
	e := envs.Violation{Op: v.Op, Target: v.Target, Rule: v.Rule, Source: envs.SourceDecided}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.seen[e]:
	case len(d.v) >= maxDenials:
		d.more++ // not remembered: the count alone is bounded
	default:
		if d.seen == nil {
			d.seen = map[envs.Violation]bool{}
		}
		d.seen[e] = true
		d.v = append(d.v, e)
	}
}

// list returns what was recorded, ending with an [envs.OpMore] entry
// when some were only counted (d may be nil: nothing).
func (d *denials) list() []envs.Violation {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.v)
	if d.more > 0 {
		out = append(out, envs.Violation{Op: envs.OpMore, Target: strconv.Itoa(d.more) + " more", Rule: "the sandbox's refusals past the first " + strconv.Itoa(maxDenials) + " are counted, not listed", Source: envs.SourceDecided})
	}
	return out
}

// SandboxDenials are the connects the sandbox refused the command so far
// (envs.Denier).
func (p *process) SandboxDenials() []envs.Violation { return p.denials.list() }
