package singularity_test

import (
	"regexp"
	"testing"

	"github.com/runbox/runbox/singularity"
)

// TestTaskInstance: a task's instance name is one the program accepts,
// readable when it can be, and distinct for distinct (owner, task) pairs
// even when replacing characters would make two of them alike.
func TestTaskInstance(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	cases := []struct{ owner, task, want string }{
		{"alice", "build", "runbox-task-alice-build"},
		{"alice", "my task/1", ""},
		{"alice", "my_task_1", "runbox-task-alice-my_task_1"},
		{"a-b", "c", ""},
		{"a", "b-c", "runbox-task-a-b-c"},
		{"bob", string(make([]byte, 100)), ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := singularity.TaskInstance(c.owner, c.task)
		if !valid.MatchString(got) || len(got) > 64 {
			t.Errorf("TaskInstance(%q, %q) = %q; not a valid instance name", c.owner, c.task, got)
		}
		if c.want != "" && got != c.want {
			t.Errorf("TaskInstance(%q, %q) = %q; want %q", c.owner, c.task, got, c.want)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("TaskInstance(%q, %q) = %q, as for %s", c.owner, c.task, got, prev)
		}
		seen[got] = c.owner + "/" + c.task
	}
}
