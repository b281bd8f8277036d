package docker

import (
	"regexp"
	"testing"
)

// TestSanitize_DistinctTasksDistinctNames: a task's container name is
// the task's own when it is short and plain, and otherwise still differs
// for every two tasks: long names with a common start (a busy test run
// once made two of them collide on a container name) and names that
// differ only in characters a container name cannot hold.
func TestSanitize_DistinctTasksDistinctNames(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	if got := sanitize("build-42"); got != "build-42" {
		t.Errorf("sanitize(build-42) = %q; want it unchanged", got)
	}
	pairs := [][2]string{
		{"server-testsandboxjobs_dockergatefirst-28068", "server-testsandboxjobs_dockergatefirst-29999"},
		{"a b", "a_b"},
		{"fix/42", "fix_42"},
		{"x", "x "},
	}
	for _, p := range pairs {
		a, b := sanitize(p[0]), sanitize(p[1])
		if a == b {
			t.Errorf("sanitize(%q) = sanitize(%q) = %q", p[0], p[1], a)
		}
		for _, n := range []string{a, b} {
			if !valid.MatchString(n) || len(n) > 52 {
				t.Errorf("container name runbox-%s is not one docker takes, or too long", n)
			}
		}
	}
}
