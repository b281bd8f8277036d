package spawn

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrSecretInArgv is what an [ArgvError] unwraps to, for errors.Is.
var ErrSecretInArgv = errors.New("spawn: secret value in argv")

// ArgvError reports an argv element that contains the value of a secret
// variable. It names the variable, never the value.
type ArgvError struct {
	Index int    // position in argv
	Name  string // the variable whose value it contains
}

func (e *ArgvError) Error() string {
	return fmt.Sprintf("spawn: argv[%d] contains the value of %s", e.Index, e.Name)
}

func (e *ArgvError) Unwrap() error { return ErrSecretInArgv }

// MinSecretLen is the shortest value CheckArgv looks for. Shorter values
// ("1", "true", "cat") occur in ordinary arguments far more often than as
// secrets, and a substring check cannot tell them apart.
const MinSecretLen = 6

// CheckArgv returns an [*ArgvError] if an element of argv contains the value
// of a secret variable seen by the build that made r, and nil otherwise.
// Secret variables are those on the always-strip or block lists, whether
// they were dropped or handed over (by Passthrough or a force key): a value
// the child may read from its environment must still not show in ps.
// Backends call it on every argv they are about to start. A nil r checks
// nothing.
func (r *Result) CheckArgv(argv []string) error {
	if r == nil || r.secrets == nil {
		return nil
	}
	for i, arg := range argv {
		for _, s := range r.secrets.list {
			if strings.Contains(arg, s.value) {
				return &ArgvError{Index: i, Name: s.name}
			}
		}
	}
	return nil
}

type secret struct{ name, value string }

// secretSet holds the secret values a build saw, for CheckArgv only.
type secretSet struct{ list []secret }

func (s *secretSet) add(name, value string) {
	if len(value) >= MinSecretLen {
		s.list = append(s.list, secret{name, value})
	}
}

// sort orders by name so that CheckArgv names the same variable every time,
// and removes duplicates.
func (s *secretSet) sort() {
	slices.SortFunc(s.list, func(x, y secret) int {
		return cmp.Or(strings.Compare(x.name, y.name), strings.Compare(x.value, y.value))
	})
	s.list = slices.Compact(s.list)
}

// String keeps the values out of any print of the set itself.
func (s *secretSet) String() string { return fmt.Sprintf("[%d secret values]", len(s.list)) }
