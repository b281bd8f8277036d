package envs

import (
	"strconv"
	"sync"
)

// MaxViolations is how many distinct violations a [ViolationSet] lists.
const MaxViolations = 100

// ViolationSet collects the violations a sandbox decides as it decides
// them. A command refused in a loop must not grow the process that
// collects them without bound: each distinct violation is kept once (a
// set, so in constant time), the first MaxViolations in order, the rest
// only counted. The zero value is empty and ready; it is safe for
// concurrent use.
type ViolationSet struct {
	mu   sync.Mutex
	seen map[Violation]bool
	list []Violation
	more int
}

// Add records v, once.
func (s *ViolationSet) Add(v Violation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.seen[v]:
	case len(s.list) >= MaxViolations:
		s.more++ // not remembered: the count alone is bounded
	default:
		if s.seen == nil {
			s.seen = map[Violation]bool{}
		}
		s.seen[v] = true
		s.list = append(s.list, v)
	}
}

// List returns what was recorded, ending with an [OpMore] entry when some
// were only counted (s may be nil: nothing).
func (s *ViolationSet) List() []Violation {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Violation(nil), s.list...)
	if s.more > 0 {
		out = append(out, Violation{Op: OpMore, Target: strconv.Itoa(s.more) + " more", Rule: "the sandbox's refusals past the first " + strconv.Itoa(MaxViolations) + " are counted, not listed", Source: SourceDecided})
	}
	return out
}
