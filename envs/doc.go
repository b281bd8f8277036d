// Package envs is runbox's contract: the [Environment] and [Process] every
// backend implements, the [Command] and [Result] types, the exit-code
// conventions, bounded output capture, capabilities, typed errors and the
// provider table that maps a backend name to its factory.
//
// # Exit codes
//
// A [Result] reports the command's own status (0–255) and, in fields, which
// runbox convention produced it:
//
//   - 124 ([ExitTimeout]): the command's timeout expired ([ExitStatus.TimedOut]);
//   - 130 ([ExitInterrupted]): the caller's context was cancelled ([ExitStatus.Interrupted]);
//   - 126 ([ExitCannotEnter]): the working directory could not be entered;
//   - 127 ([ExitNotFound]): the command was not found;
//   - 128+n: killed by signal n ([ExitStatus.Signal]).
//
// # Output
//
// Output is bounded by [Capture]: over the limit it keeps the first 40% and
// the last 60% with one notice line between them, and spills the whole stream
// to a private (0600) file named in [Result.SpillPath]. The cuts fall on
// UTF-8 character boundaries, so text stays valid text. Bytes are otherwise
// passed through untouched: invalid UTF-8, NUL bytes and binary output never
// break capture. Spill files go to [DefaultSpillDir] unless a backend is
// given a directory; there, those older than [SpillRetention] are removed
// when a new one is made, and [Result.RemoveSpills] removes a result's own.
//
// # What this package does not do
//
// It runs nothing. It imports only the standard library, so every backend,
// the process registry and the CLI can depend on it without dragging in each
// other. Backends live in their own packages and are wired into a
// [Providers] table by the caller; there is no global registry.
package envs
