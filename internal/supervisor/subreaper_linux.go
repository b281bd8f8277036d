package supervisor

import "golang.org/x/sys/unix"

// becomeSubreaper sets PR_SET_CHILD_SUBREAPER. It is called before the
// command starts, so no orphan can be born before it holds.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
