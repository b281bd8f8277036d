// Package supervisor is the program that runs one background job for
// package procregistry, in a process of its own: `runbox __supervise
// JOBDIR` calls [Main]. The registry starts it by argv through a backend
// (so it gets the child environment the backend built with package spawn,
// and the job's working directory) and never imports this package; the
// two share only the job directory, whose files, records and control
// socket protocol are defined in procregistry/internal/jobdir.
//
// # Two stages
//
// The first stage starts a detached copy of itself (a new session, stdio
// away from any terminal or pipe of the registry's), waits until that copy
// reports that the command runs or that its start failure is recorded,
// and exits. The second stage is the supervisor proper. It:
//
//  1. makes the job's container with package launch (a systemd scope or a
//     cgroup; a job with limits does not run where they cannot be
//     applied), or, with none, makes itself the subreaper of the job;
//  2. starts the command under its wrapper, a small /bin/sh script held at
//     its launch.Gate until it is in the container, which runs the command
//     in the foreground and writes its exit code to the exitcode file, so
//     the exit is on disk even if the supervisor dies (wrapper.go);
//  3. sends output straight into the job's log (opened O_APPEND), or for a
//     PTY job through one `cat` that copies the terminal (ptycopy.go);
//  4. writes pid.json (its own, the wrapper's, the command's identity and
//     the container's reference), serves the control socket (stdin writes,
//     EOF, resize, exit waits), reaps the wrapper, and writes exit.json.
//
// Nothing in it depends on the registry staying alive.
//
// # What it does not do
//
// It never decides whether a command may run (the registry's caller went
// through the command gate before the job was created), never reads the
// registry's own state, and never kills a job's tree: a kill is the
// registry's, through the container reference in pid.json. It forwards
// SIGTERM to the command and stays to record how the command ended.
package supervisor
