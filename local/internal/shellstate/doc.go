// Package shellstate tells, from a command's text alone, when running it
// in bash cannot change what a runbox session carries from one command to
// the next: the exported variables, the functions, the aliases and the
// working directory.
//
// The local backend saves that state after every command, from the
// shell's EXIT trap: export -p, declare -f, alias -p and $PWD written to
// files, one write a line. For most of what an agent runs (a build, a
// test, git, grep) nothing there can have changed, since an external
// program runs in a process of its own, and the save is the larger part
// of what the shell does after the command. [Unchanging] lets the backend
// skip it for those.
//
// The answer errs one way only: true means the state cannot change; false
// means it may, or that the text is beyond this package's reading. A
// command is unchanging when every command it runs in the shell itself
// (not in a subshell, a pipeline's other process, a command or process
// substitution) is a program found by name or path, or one of a few
// builtins that change nothing ([harmless]), and no word expands with an
// assignment (${v=x}, ${v:=x}, $((v=1)), an index or a slice, which bash
// evaluates as arithmetic) or a redirection names a variable ({fd}>f).
// Anything else (cd, export, a function or alias definition, source,
// eval, a loop's variable, [[ ]], let, (( ))) is not.
//
// Whether a name is a function or an alias of the session is not in the
// text: the caller must not ask when the session defines any.
package shellstate
