package rules

// Command is one program the gate found in the input, after quoting,
// wrappers and paths were resolved, or one fact derived from the shape of
// the script. Fact names start with "@" (see facts.go); program names are
// base names in lower case without ".exe".
type Command struct {
	Name    string
	Path    string   // the command word as written, after quote removal
	Globals []string // options before the subcommand, for tools with subcommands
	Args    []string
	Env     []string // NAME=value assignments in effect
	Via     []string // wrappers it was reached through: sudo, xargs, find …
	Source  string   // source text of the simple command, for allow and deny globs
}
