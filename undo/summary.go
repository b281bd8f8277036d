package undo

import (
	"fmt"
	"strings"
)

// Name is how a change is shown to a person: the path, with a trailing
// slash for a directory, and "old -> new" for a rename.
func (c Change) Name() string {
	name := c.Path
	if c.Type == TypeDir {
		name += "/"
	}
	if c.From != "" {
		name = c.From + " -> " + name
	}
	return name
}

// Summary is the record in one line for a person: how many paths
// changed, the step that undoes them, and the first n changes with the
// rest counted, e.g. `3 path(s) (step 12): modified src/main.go,
// deleted build/, 1 more`. It is "" for a record of no change.
func (r *Record) Summary(n int) string {
	if r == nil || r.Step == 0 {
		return ""
	}
	total := len(r.Changes) + r.More
	names := make([]string, 0, n+1)
	for _, c := range r.Changes[:min(len(r.Changes), n)] {
		names = append(names, c.Kind+" "+c.Name())
	}
	if rest := total - len(names); rest > 0 {
		names = append(names, fmt.Sprintf("%d more", rest))
	}
	return fmt.Sprintf("%d path(s) (step %d): %s", total, r.Step, strings.Join(names, ", "))
}
