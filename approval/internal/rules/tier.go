package rules

// Tier says how bad a rule's match is.
type Tier int

const (
	// Dangerous commands ask a human first; modes, allow lists and
	// approvals may let them through.
	Dangerous Tier = iota + 1
	// Forbidden commands are denied in every mode, without asking. Only an
	// allow-list entry that names the rule id lets one through.
	Forbidden
	// Hardline commands are never run: no mode, allow list, approval or
	// yolo switch lets one through.
	Hardline
)

// String returns "dangerous", "forbidden" or "hardline".
func (t Tier) String() string {
	switch t {
	case Dangerous:
		return "dangerous"
	case Forbidden:
		return "forbidden"
	case Hardline:
		return "hardline"
	}
	return "invalid"
}
