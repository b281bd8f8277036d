// Package subreaper is a small program that runs one command as its
// child subreaper, so that nothing the command starts can escape its
// teardown where no cgroup or systemd scope holds the tree.
//
// Without a container, a process tree is found by walking /proc from its
// root. A child that double-forks and calls setsid (`( setsid sleep 1000
// & )`) is reparented to init the moment its parent exits, and is no
// longer anyone's descendant: a teardown that walks the tree misses it and
// it lives on. A process that has set PR_SET_CHILD_SUBREAPER receives such
// orphans instead of init, so they stay in its tree.
//
// The backend starts `runbox __reap ...` (see [Argv]) in place of the
// command. The subreaper
//
//  1. makes itself the child subreaper and starts the command with the
//     same standard streams, environment and directory, passing through
//     the extra descriptors it was given;
//  2. forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to
//     the command: a teardown that signals the parent first reaches the
//     command's own process first;
//  3. when the command exits, tears down whatever is left below it
//     (SIGTERM, the grace period, then SIGSTOP and SIGKILL until nothing
//     is left, with every PID checked against its start time), reaps it
//     all, and only then
//  4. writes one [Report] line on descriptor 3 — the command's own exit
//     status and how many leftover processes it killed — and exits with
//     the command's status (re-raising the signal that killed it where it
//     can).
//
// Leftover processes are killed because a foreground command owns what it
// started: work meant to outlive a command belongs in a background job.
//
// It does not replace a cgroup: a process that escapes by other means
// (a daemon started through another service) is out of its reach, and it
// sets no resource limits.
package subreaper
