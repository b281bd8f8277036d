package approval

import (
	"errors"
	"fmt"
	"strings"
)

// Decision is what the gate says about a command. The zero value is not a
// decision; anything but [Allow] means the command must not run as is.
type Decision int

const (
	// Allow: run the command.
	Allow Decision = iota + 1
	// Ask: run it only after a human approved it.
	Ask
	// Deny: never run it.
	Deny
)

// String returns "allow", "ask" or "deny" ("invalid" for anything else).
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "invalid"
}

// MarshalText implements [encoding.TextMarshaler]; an invalid decision is an error.
func (d Decision) MarshalText() ([]byte, error) {
	if d < Allow || d > Deny {
		return nil, fmt.Errorf("approval: invalid decision %d", int(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler].
func (d *Decision) UnmarshalText(b []byte) error {
	switch string(b) {
	case "allow":
		*d = Allow
	case "ask":
		*d = Ask
	case "deny":
		*d = Deny
	default:
		return fmt.Errorf("approval: unknown decision %q", b)
	}
	return nil
}

// Verdict is the gate's answer for one command.
type Verdict struct {
	Decision Decision
	// Hardline is true when a hardline rule matched: the command is denied
	// and nothing can change that.
	Hardline bool
	// Reasons are the descriptions of the rules that matched, in table
	// order, without duplicates (for a hardline verdict, of the hardline
	// rules only), followed by any policy explanation (why a dangerous
	// command was denied rather than asked). Never nil.
	Reasons []string
	// Rules are the ids of the rules that matched, in table order.
	Rules []string
	// Hint, when set, tells a human how to allow a command that was denied
	// only because nobody was present to approve it.
	Hint string
}

// ErrDenied is matched by every [*DeniedError] through [errors.Is].
var ErrDenied = errors.New("approval: command denied")

// DeniedError is returned by [Gate.Decide] when a command must not run.
type DeniedError struct {
	// Decision is Deny for commands that were refused outright and Ask
	// for commands that needed an approval they did not get.
	Decision Decision
	Hardline bool
	Reasons  []string
	Rules    []string
	// Hint tells a human how to allow the command, if it can be allowed.
	Hint string
	// Err is the underlying failure, when the denial came from one
	// (a broker timeout or a cancelled context).
	Err error
}

func (e *DeniedError) Error() string {
	var b strings.Builder
	b.WriteString("approval: command denied")
	if e.Hardline {
		b.WriteString(" (hardline)")
	}
	if len(e.Reasons) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(e.Reasons, "; "))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is [ErrDenied].
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Unwrap returns the underlying failure, if any.
func (e *DeniedError) Unwrap() error { return e.Err }
