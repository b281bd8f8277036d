// Package rules is the gate's rule table and what it takes to match it:
// what a rule is ([Rule], its [Tier]), every rule with the commands it
// must and must not flag ([All]), what a rule is matched against (a
// [Command]: a program after resolution, or a fact the walker derived,
// named "@…" as the Fact constants say), and the machinery that makes
// matching cheap: patterns with a test of required text in front of the
// expression, derived when first used, and the expression run as an
// automaton built as lines reach its states ([Pattern]), and an index
// from a command's name to the rules that can match it ([Index]).
//
// The table is data. Whether a command is flagged is decided here;
// what is done about it (ask, deny, let through under a sandbox, an
// allow list or a session approval) is the gate's (package approval),
// and what the commands of a line are is the walker's (package walk).
// A rule never runs a program and never looks at the disk.
//
// # Adding a rule
//
// A rule needs only its entry in a table (rules.go, rules_damage.go,
// rules_programs.go, rules_remote.go): an id, a tier, a description, its
// patterns and its Match and NoMatch examples, which the gate's tests
// run. The index files it from its Command pattern when the table is
// compiled; nothing else is kept in step by hand.
//
// # What callers may rely on
//
//   - [Table] and [TableIndex] compile the table once per process and
//     hand every caller the same values, which nobody changes.
//   - [Judge] and [Index.Judge] find the same rules, command for command,
//     in table order: the index and the required text only skip rules and
//     expressions that cannot match (the gate's tests hold them to it).
//   - Matching is linear in the commands and the length of their
//     argument lines; patterns are RE2 expressions.
package rules
