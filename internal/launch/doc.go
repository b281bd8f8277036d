// Package launch holds the steps that every runbox process launcher
// takes the same way, so the local backend (package local) and a
// background job's supervisor (package internal/supervisor) cannot
// disagree about them:
//
//  1. Shell lookup. [Shell] picks the shell for shell-string commands:
//     the one asked for, else bash, else sh, found on PATH.
//  2. The start barrier. A [Barrier] is a pipe whose read end the child
//     inherits as fd [BarrierFD]. The child (a wrapper script, or the
//     session prologue of a shell) reads one line from it before it runs
//     any code of its user; the parent places the child in its container
//     meanwhile, so everything the command forks is born inside. A barrier
//     closed without being opened makes the child exit [ExitBarrierClosed]
//     having run nothing. [HoldArgv] wraps a program in the smallest such
//     waiter, a /bin/sh that waits and then execs it.
//  3. Placement. [NewContainer] makes the command's container with its
//     limits and refuses — with an error matching [ErrLimitUnavailable] —
//     when a requested limit cannot be applied here: a command never runs
//     silently without the limit it asked for. [Barrier.Admit] adds the
//     child to its container and opens the barrier; a failed Add matches
//     [ErrNotContained] and, when the container was required (limits were
//     asked for), leaves the barrier shut so the child never runs.
//  4. Terminal defaults. [StartPTY] starts a command on a new terminal of
//     the requested size (24 rows, 80 columns where unset) as the leader
//     of a session of its own, with the terminal as its controlling one.
//  5. Exit status. [Status] maps how a reaped process ended to an
//     envs.ExitStatus: a signal n becomes code 128+n with Signal set.
//     [ShellStatus] reads a code a shell reported for its child, where
//     128+n stands for a terminating signal n. [LimitKilled] names the
//     container limit (memory, pids) that killed a command.
//
// # What it does not do
//
// launch does not build the child's environment (package spawn does),
// wire its stdio, time it out, or tear its tree down (package
// termination): each launcher keeps those, since they are what makes it
// different. It keeps no state between calls. It never touches cgroupfs
// or systemd itself: a container is package termination's from creation
// to removal (its doc says why no cgroup library drives them).
//
// # Invariants callers may rely on
//
//   - A requested limit is applied or the launch fails; there is no
//     fallback that drops it.
//   - A held child runs no code of its user before [Barrier.Open] (or
//     [Barrier.Admit]) is called, and none at all if the barrier is closed
//     unopened or the parent goes away.
//   - A status with Signal set has Code 128+Signal and KilledBy "signal"
//     (or the limit that killed it).
package launch
