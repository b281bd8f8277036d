package workspace

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzPlainTask: plainTask takes exactly the names of the expression the
// file names were first defined by; a name it does not take is hashed.
func FuzzPlainTask(f *testing.F) {
	for _, s := range []string{"t9", "my-task_1.2", "", "-x", ".hidden", "../up", "a/b", "a\n", strings.Repeat("a", 64), strings.Repeat("a", 65), "Ünïcode"} {
		f.Add(s)
	}
	want := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	f.Fuzz(func(t *testing.T, task string) {
		if got := plainTask(task); got != want.MatchString(task) {
			t.Fatalf("plainTask(%q) = %v", task, got)
		}
		if name := TaskFileName(task); strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			t.Fatalf("TaskFileName(%q) = %q: not a plain file name", task, name)
		}
	})
}
