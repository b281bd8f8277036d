// Package walk reads a command line the way the shell would run it and
// says what runs: every program, after wrappers, quoting and paths are
// resolved, and every fact the shape of the line shows, as
// [rules.Command] records for the rules to judge.
//
// An [Analyzer] parses the (normalised) text with mvdan.cc/sh/v3/syntax
// and visits every simple command wherever it stands (walk.go). Each is
// resolved through the program table (programs.go, runners.go, git.go):
// one handler per program family says what the program runs, so sudo,
// env, xargs, find -exec, bash -c, eval, ssh HOST CMD, tmux, make, git
// aliases and the rest are looked through, and code they are given as a
// string is parsed and walked in turn. Programs without a handler are
// resolved by their class (classes.go: shells, interpreters, tools with
// subcommands, SQL clients). Beside the programs, the walker derives
// facts from the line's shape: writes and where they go, pipes into a
// shell, secrets read and sent (flows.go), input piped to a program that
// runs it (stdin.go), and, when the gate protects paths, writes that
// reach one (guard.go, guard_targets.go, protection.go).
//
// The program handlers live here, beside the walker, and not in a
// package of their own because the two call each other: a walk resolves
// each program, and a program that runs code hands that code back to the
// walk. What a program is (its class, its options that take a value, its
// subcommands) is in tables; what it runs is in its handler.
//
// # What it refuses to do
//
// The walker runs nothing, expands nothing from the environment and
// reads no file: it judges the text. A command word it cannot know
// ($CMD, $(…)) is the fact "@dynamic"; what a program runs out of its
// sight is "@runs-hidden". Input beyond the bounds in limits.go
// ([MaxDepth], [MaxNesting], [MaxCommands], [MaxWrappers], and the bytes
// parsed per check) is not walked further but reported as "@too-deep" or
// "@too-complex", and what was read before the bound still counts.
//
// # What callers may rely on
//
//   - A check does work linear in the size of the command: every stage is
//     linear in its input and the code parsed is a bounded multiple of
//     the command.
//   - An Analyzer serves one check at a time. The commands [Analyzer.Run]
//     returns are the Analyzer's until its next run, which reuses its
//     parser, maps and buffers; a caller that checks concurrently keeps a
//     pool of them (the gate does).
//   - The records of one run do not depend on the runs before it.
package walk
