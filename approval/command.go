package approval

// command is one program the gate found in the input, after quoting,
// wrappers and paths were resolved, or one fact derived from the shape of
// the script. Fact names start with "@" (see facts.go); program names are
// base names in lower case without ".exe".
type command struct {
	name    string
	path    string   // the command word as written, after quote removal
	globals []string // options before the subcommand, for tools with subcommands
	args    []string
	env     []string // NAME=value assignments in effect
	via     []string // wrappers it was reached through: sudo, xargs, find …
	source  string   // source text of the simple command, for allow and deny globs
}
