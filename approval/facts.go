package approval

// Fact names: what the walker derives from the shape of a script rather
// than from one program. Rules match them like program names.
const (
	factWrite       = "@write"        // args: how (">", ">>", "tee", "cp", "sed-i" …), target path
	factSQL         = "@sql"          // args: one SQL statement
	factPipeShell   = "@pipe-shell"   // args: source kind ("fetch", "decode", "stdin"), the shell
	factPipeCode    = "@pipe-code"    // args: the interpreter reading a script from a pipe
	factHeredocCode = "@heredoc-code" // args: the interpreter reading a here-document
	factInlineCode  = "@inline-code"  // args: interpreter, flag (python -c, node -e …)
	factSubstCode   = "@subst-code"   // args: kind ("fetch", "decode", "other") of a substitution run as code
	factDynamic     = "@dynamic"      // args: the command word, whose value is unknown
	factForkBomb    = "@fork-bomb"    // args: the function name
	factChmodExec   = "@chmod-exec"   // args: the file made executable and run
	factFetchExec   = "@fetch-exec"   // args: the downloaded file that is then run
	factPasswords   = "@passwords"    // args: the users whose passwords chpasswd is given
	factFindXargs   = "@find-xargs"   // args: find's arguments, "--", the program xargs runs and its arguments
	factProtected   = "@protected"    // args: class ("policy", "state", "unresolved"), how, the path as written
	factHidden      = "@runs-hidden"  // args: the program, what it runs that the gate cannot read
	factUnparsed    = "@unparsed"     // args: the parse error
	factTooDeep     = "@too-deep"     // args: which nesting bound was passed
	factTooComplex  = "@too-complex"  // args: which size or count bound was passed
)
