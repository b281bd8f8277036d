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
// A command whose text cannot change the state saves none, and the
// session keeps the state it had: one that runs programs and the builtins
// that change nothing (true, echo, test, pwd, exit…), with no assignment,
// no assigning expansion (${v:=x}, $((v=1)), an index or a slice), no
// cd, export, source, eval, function or alias of its own, and whatever
// it likes in subshells and substitutions (package shellstate reads the
// text; bash is its oracle in the tests). Most of what an agent runs is
// such a command (a build, a test, git, grep), and saving is most of what
// the shell does after it. While the session defines a function or an
// alias, every command saves, since a name in the text may then be one.
//
// Argv commands ([envs.Command.Args]) run without a shell and without
// session state, in the session's directory.
//
// # Pre-started shells
//
// Starting a shell is most of what a short command costs: fork and exec of
// bash, bash's own start, a container made and the child placed in it.
// With bash, an [Env] therefore keeps the next command's shell started
// ahead of it: built with the session's child environment, already in a
// container of its own (started inside its cgroup where the container is
// a cgroup2 group, or under the subreaper), its own start done, and
// blocked reading a pipe. A command that fits it takes it and writes its
// inputs and text into the pipe (the session's state goes in the same
// write, less the variables that already have their value in the shell's
// environment); what it pays is that write and the wait for its exit. The
// replacement starts at once, in the background. The pipe is also the
// shell's start gate: it runs nothing before its command arrives, and
// exits having run nothing when the pipe closes unwritten (Close, or this
// process dying).
//
// What it costs: one idle bash per environment, in a container of its own
// that no command's teardown counts; up to three while commands come back
// to back (a command found the next shell still starting), until a
// command finds two ready. An empty container a command leaves is kept for the
// next shell instead of being removed and made anew. Close kills and reaps
// the idle shells and removes their containers.
//
// It serves commands run to completion ([Env.Run]) with bash, merged
// output, no input, no terminal, the environment's own limits and the
// environment's child environment (a command with variables of its own
// starts cold, as does a command text over 16 KiB). Everything else —
// [Env.Start], a PTY, Stdin, SeparateStreams, per-command limits, sh —
// starts cold, as before. A waiting shell found dead (killed by someone)
// is replaced and the command starts cold; a host where shells keep
// failing that way stops pre-starting them. The one visible difference:
// the command runs through eval, so a syntax error names "eval" where a
// cold shell's names "-c". [Options.NoPrestart] turns it off.
//
// # Sandbox
//
// With [Options.Confine], every command — shell, argv, PTY, pre-started
// shell — starts confined (package confine), under the subreaper where
// there is one, so the program and all it starts are held by the kernel:
// writes only to the workspace, the environment's own state directory, a
// private TMPDIR (exported, removed at Close; other sessions' are denied)
// and the policy's writable paths; no reads of the deny list; no
// capabilities, no ptrace or signals outside, TCP only to the allowed
// ports. Every result of Run names the profile ([envs.Result] Sandbox)
// and the violations its output shows (SandboxViolations).
//
// A command that starts cold goes through the runbox binary's trampoline
// ([Options.Confiner]): a program start and the building of the rules on
// its path. A pre-started shell does not: it is started (fork and exec of
// bash) from a new thread of this process that the policy confines
// (confine.Prepared), and that thread ends with the start; the shell is
// handed its command only once the thread is gone, and what it runs
// before (bash, and its start-up file: a sealed copy) is nothing a
// command can change (while it lives, the thread shares the shell's
// sandbox). The shell gets the same layers and a Landlock domain of its
// own, as the trampoline would give it; what it no longer pays is the
// trampoline's start. The rules
// are built once and kept while the files they were built from are
// unchanged, which is checked before each shell starts (inotify: one read
// while nothing changed); when they changed (an entry added beside a
// denied path, a directory renamed into one) they are built anew first,
// so a shell sees the files as one the trampoline started then would. A
// shell that runs under the subreaper (no cgroup here) still goes through
// the trampoline: from a confined thread the subreaper would share the
// command's sandbox, and the command could kill it to let its children
// escape teardown. Where the rules cannot be prepared or enforced that
// way (before Linux 6.9, which can wait for a thread's end), pre-started
// shells go back to the trampoline: they are confined either way. A
// pre-started shell is confined when it starts, ahead of its command: a
// file created beside a denied path while it waits is readable from the
// shells started after.
//
// Why a thread and not a long-lived confined process that forks the
// shells: such a process would hold one Landlock domain for every shell
// (one command could then signal or trace another), would keep the rules
// of its own start for the whole session (or need a new start, two
// programs, each time they change), and would be the shells' parent
// instead of this process, which waits for them, reads their exit and
// places them in their containers. A thread has none of these problems
// and passes nothing on to a program but what the policy gives.
//
// What it costs: `runbox bench` on a 2-core machine shared with other work
// (load average 6–11), p50 ratios of seven runs, each against the
// unconfined environment in the same run, the two builds alternating:
// `true.sandboxed` (back to back, each command waiting for its
// successor's shell) 2.54–4.10x through the trampoline, 1.04–1.41x from a
// confined thread (1.04, 1.04, 1.07 in the last three); and
// `true.sandboxed.paced` (a pause before each command, as an agent's
// come) 2.53–4.65x and 1.04–1.58x. On that machine the same runs put the
// unconfined environment itself at 0.73–1.24x of a bare `bash -c true`:
// the spread is the machine's. The per-start price is a
// thread, the layers (capabilities, no_new_privs, Landlock, seccomp) and
// the check of the rules, a fraction of a millisecond of CPU there, where
// bash's own start takes ten.
//
// # Concurrency and output
//
// An [Env] is safe for concurrent use: any number of goroutines may call
// Run and Start on one Env at once. Each command has its own pipes,
// container and state files; they share only the session state, where
// each command starts from the last adopted state and the one that
// finishes last wins (see above).
//
// Output is never dropped silently. When a command exits, its output is
// read to the end of the pipe: everything the command wrote is in the
// result however late the reader gets to run on a loaded host. The one
// exception is a process the command left running (a background child, a
// daemon) that still holds the output pipe open: [Options.DrainDelay]
// after the command's exit the output is cut, what the pipe holds at that
// moment is still read, and the result carries [OutputCutWarning] in
// Warnings, because what that process writes later is not included. The
// call never waits on such a process. A leftover that sends its output
// elsewhere (>/dev/null, a file) cuts nothing.
//
// # Containers
//
// Every command runs in a container of its own where the host has one.
// A command's leftovers are killed when it exits (unless
// [Options.KeepLeftovers]), which removes its container; an empty
// container kept for the next pre-started shell is checked before use,
// and one that is gone (an empty cgroup can be removed by anyone) is
// replaced by a new one: a shell never runs outside a container because
// the one made for it vanished.
//
// # What it refuses to do
//
// It never copies os.Environ() into a child: the base environment goes
// through spawn, which strips secrets. A per-command Dir that cannot be
// entered yields exit 126 rather than running elsewhere; only the session
// directory, when it was deleted, falls back to its nearest existing
// ancestor (with a warning in the result). A sandbox it was asked for and
// cannot give (no trampoline, a kernel without Landlock) refuses every
// command instead of running it unconfined.
package local
