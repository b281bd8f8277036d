package walk

import "fmt"

// Bounds on the work one check may do. Input beyond them is not analysed
// further and asks instead, in every mode but yolo (see the "too-complex"
// rule, limitRule): a command the gate cannot read through is never let
// through unread, unless the user started runbox with yolo to be asked
// nothing.
//
// Every stage of the analysis runs in time linear in the text it is given,
// and the text handed to the parser, nested code included, is bounded by
// maxParseFactor times the command; together these bound a check's work
// by the command's size, which [approval.Options.MaxCommandBytes] bounds in turn.
const (
	MaxDepth    = 6    // code nested in strings: bash -c "eval '…'" …
	MaxNesting  = 100  // brackets and compound commands nested in one script
	MaxCommands = 4096 // simple commands and facts per check
	// MaxWrappers bounds the programs that run a command passed on the
	// way to one program, however each runs the next: as a wrapper (sudo
	// env nice timeout xargs …), through find -exec, -execdir, -ok, or
	// as code in a string (bash -c, eval, ssh host CMD, watch …). One
	// bound over all of them keeps every chain short, however it mixes
	// them; each level of a chain does work linear in the rest of it.
	MaxWrappers = 32
	// maxParseFactor bounds the bytes parsed in one check, nested code
	// and files written then run included, as a multiple of the command.
	maxParseFactor = 8
	// minParseBudget is the parse budget of a short command.
	minParseBudget = 64 << 10
)

// Details of the limit facts; the verdict shows them as reasons.
func TooLargeDetail(n, limit int) string {
	return fmt.Sprintf("command too large to analyse (%d bytes > limit %d)", n, limit)
}

func tooNestedDetail(depth, limit int) string {
	return fmt.Sprintf("command too deeply nested to analyse (depth %d > limit %d)", depth, limit)
}

// walkNestedDetail is tooNestedDetail for nesting the walker finds; it
// stops at the limit, so the depth is not known.
func walkNestedDetail(limit int) string {
	return fmt.Sprintf("command too deeply nested to analyse (depth > limit %d)", limit)
}

func tooManyCommandsDetail(limit int) string {
	return fmt.Sprintf("command has too many parts to analyse (more than %d)", limit)
}

func tooDeepCodeDetail(limit int) string {
	return fmt.Sprintf("code nested in strings too deeply to analyse (more than %d levels of bash -c, eval …)", limit)
}

// TooManyWrappersDetail is the reason given past [MaxWrappers].
func TooManyWrappersDetail(limit int) string {
	return fmt.Sprintf("command wrapped too deeply to analyse (more than %d programs that run a command: sudo, env, find -exec, bash -c …)", limit)
}

func tooMuchCodeDetail(limit int) string {
	return fmt.Sprintf("command holds too much code to analyse (more than %d bytes parsed)", limit)
}

func tooManyBracesDetail(n, limit int) string {
	return fmt.Sprintf("word with too many brace expressions to analyse (%d > limit %d)", n, limit)
}
