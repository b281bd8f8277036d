// Package local runs commands on this machine: the local backend of runbox.
//
// Each command gets its own process group (its own session with a PTY), a
// child environment built by package spawn from the caller's base
// environment, and, where the host allows, its own container of processes
// (systemd scope or cgroup, chosen by package termination). Killing a
// command, its timeout, or cancelling its context tears down its whole tree
// through termination.KillTree: parent first, then survivors, then SIGKILL,
// then the container.
//
// # Session state
//
// Shell commands ([envs.Command.Shell]) on one [Env] share a session: the
// working directory, exported variables, shell functions and aliases that
// one command leaves are seen by the next. The state is carried out of band:
// a wrapper script restores it from a private file before the command and,
// from an EXIT trap, writes the new state to another private file, which is
// adopted only when the command ended by itself (not timed out, interrupted
// or killed). Nothing is mixed into the command's output. With sh instead of
// bash only the directory and exported variables persist. Commands running
// concurrently each start from the last adopted state; the one that finishes
// last wins.
//
// Argv commands ([envs.Command.Args]) run without a shell and without
// session state, in the session's directory.
//
// # What it refuses to do
//
// It never copies os.Environ() into a child: the base environment goes
// through spawn, which strips secrets. A per-command Dir that cannot be
// entered yields exit 126 rather than running elsewhere; only the session
// directory, when it was deleted, falls back to its nearest existing
// ancestor (with a warning in the result).
package local
