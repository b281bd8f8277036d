// Package envtest is the conformance suite every runbox backend passes.
//
// A backend's test calls [Run] with a factory that opens a fresh
// environment; Run checks, as subtests, every contract of the design's
// "Contracts every backend keeps": exit codes, timeouts, interrupts, huge,
// binary and invalid UTF-8 output, a grandchild holding the output pipe,
// neutralised pagers, stdin, PTY, session state, whole-tree kill and
// concurrent use of one environment, and, where the environment keeps a
// change journal inside itself, undo of a command's changes byte for byte. Capabilities a backend reports as
// unsupported are skipped with that reason, so a fallback is visible in the
// test output rather than silently passing.
//
// The suite needs only a POSIX shell with the usual utilities (sh, sleep,
// cat, head, printf, kill) inside the environment.
package envtest
