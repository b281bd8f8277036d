package rules

// Fact names: what the walker derives from the shape of a script rather
// than from one program. Rules match them like program names.
const (
	FactWrite        = "@write"         // args: how (">", ">>", "tee", "cp", "sed-i" …), target path
	FactSQL          = "@sql"           // args: one SQL statement
	FactPipeShell    = "@pipe-shell"    // args: source kind ("fetch", "decode", "stdin"), the shell
	FactPipeCode     = "@pipe-code"     // args: the interpreter reading a script from a pipe
	FactHeredocCode  = "@heredoc-code"  // args: the interpreter reading a here-document
	FactInlineCode   = "@inline-code"   // args: interpreter, flag (python -c, node -e …)
	FactSubstCode    = "@subst-code"    // args: kind ("fetch", "decode", "other") of a substitution run as code
	FactDynamic      = "@dynamic"       // args: the command word, whose value is unknown
	FactForkBomb     = "@fork-bomb"     // args: the function name
	FactChmodExec    = "@chmod-exec"    // args: the file made executable and run
	FactFetchExec    = "@fetch-exec"    // args: the downloaded file that is then run
	FactFetchInstall = "@fetch-install" // args: the installer, the downloaded file it installs
	FactPasswords    = "@passwords"     // args: the users whose passwords chpasswd is given
	FactFindXargs    = "@find-xargs"    // args: find's arguments, "--", the program xargs runs and its arguments
	FactProtected    = "@protected"     // args: class ("policy", "state", "unresolved"), how, the path as written
	FactHidden       = "@runs-hidden"   // args: the program, what it runs that the gate cannot read
	FactUnparsed     = "@unparsed"      // args: the parse error
	FactTooDeep      = "@too-deep"      // args: which nesting bound was passed
	FactTooComplex   = "@too-complex"   // args: which size or count bound was passed
)
