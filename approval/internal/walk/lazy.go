package walk

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled the first time it is used:
// the walker's expressions serve rare programs (debuggers, editors, make,
// expect), and every start of runbox (a trampoline's, a `runbox check`'s)
// would otherwise pay for compiling them all.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
