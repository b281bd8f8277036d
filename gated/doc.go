// Package gated puts the command gate in front of an environment: the
// library's runner. An [Env] wraps any [envs.Environment] so that every
// command passes [approval.Gate.Decide] before the backend sees it; a
// refused command returns an error matching [envs.ErrDenied] (an
// [*envs.DeniedError] with the rule descriptions) and never reaches the
// backend.
//
// Argv commands are judged as the shell line that quotes each word, so
// `[]string{"rm", "-rf", "/"}` is refused like the string "rm -rf /".
//
// It decides and forwards; it never rewrites a command.
package gated
