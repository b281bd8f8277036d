// Package procregistry runs background jobs on an environment and keeps
// track of them: durable output addressed by byte offset, status, stdin,
// whole-tree kill, ownership handoff, and a queue of events per consumer
// (completions, heartbeats, watch-pattern matches) — all of it surviving a
// restart, or a SIGKILL, of the process that manages the registry.
//
// # Shape
//
// A [Registry] is a value over a state directory ([Open]; one registry
// per directory at a time, enforced with a flock). [Registry.Start]
// starts a job and returns its [Info]; [Registry.List], [Registry.Poll],
// [Registry.ReadLog], [Registry.TailLines], [Registry.Follow],
// [Registry.Wait], [Registry.Kill], [Registry.Write], [Registry.Submit],
// [Registry.CloseStdin] and [Registry.Handoff] act on it by id or by any
// unique id prefix (an unknown id matches envs.ErrNotFound, an ambiguous
// prefix [ErrAmbiguous]). [Registry.Events] and [Registry.Ack] are a
// consumer's queue. [Server] and [Client] carry the same calls over a
// Unix socket, for the per-user daemon of the runbox CLI.
//
// # How a job runs
//
// The registry does not hold a job's pipes. Start creates the job's
// directory (<state>/jobs/<id>/, 0700) with job.json and an empty
// output.log, then starts the job's supervision through the
// [Environment]: the program named by [Options].Supervisor, which calls
// the supervisor package's Main (package internal/supervisor; for
// runbox, `runbox __supervise DIR`). The registry starts it by argv and
// never imports it; the files they share are defined in an internal
// package (internal/jobdir) that both import. Going through
// the environment means this first stage, and the command after it, get
// the child environment the backend built with package spawn (never a
// copy of this process's), and the requested working directory.
//
// The first stage hands the job to the state directory's supervisor
// host: one process (`runbox __supervise -host DIR`, which the registry
// starts when none runs, detached, with its own environment) that
// supervises every job of the directory, each in goroutines of its own,
// and exits a moment after its last job ended. The first stage sends the
// host the job's environment and working directory with the request, and
// the host starts the job with exactly those (never on an argv, never in
// any environ but the job's). Where the host cannot contain a job (see
// "Containment") the first stage supervises it in a process of the job's
// own instead, as does every job with [Options].SupervisorPerJob. Either
// supervisor makes the job's container and starts the command under a
// wrapper — a small /bin/sh script that runs it in the foreground,
// writes its exit code to the job's exitcode file and exits with it — in
// a process group of its own, with stdout and stderr opened straight onto
// output.log with O_APPEND, so output reaches the disk without passing
// through any other process (a PTY job's output passes through one
// `cat`, which copies the terminal into the log). It writes pid.json
// (its own PID, the wrapper's and the command's, with their start times,
// from termination.Identify, and the container's
// termination.ContainerRef); serves a control socket per job (ctl.sock:
// stdin writes, EOF, resize, and "tell me when it exits"); reaps the
// wrapper; and writes exit.json atomically. Nothing in this depends on
// the registry being alive, and the job's output and exit code do not
// depend on the supervisor being alive either (see "Crash safety").
//
// What an idle job costs beside its own command is its wrapper (a /bin/sh
// of about a hundred KiB) and its share of the host (which holds about
// 6 MiB when idle): about 135 KiB of PSS each with a thousand jobs, 470
// KiB with twenty, where a supervisor of a job's own costs about 5 MiB
// (`runbox bench`'s jobs.idle reports per_job_pss_kib).
//
// An idle job costs no CPU: the host blocks in accept and in reads of
// its control connections and reaps its children on SIGCHLD (a
// supervisor of a job's own blocks in wait4 and reaps adopted orphans on
// SIGCHLD); the registry's monitor blocks on the control socket, and its
// log readers on inotify. Nothing on either side runs on a timer but
// what was asked for (heartbeats; quiet, no-output and waiting-for-input
// deadlines, the last of which looks at a silent job's processes at
// most every 8 s once it has been silent a while) and the registry's one
// sweeper.
//
// # Containment
//
// A job's tree is its process group and its /proc descendants, plus —
// where the machine allows — a termination container of its own
// (termination.NewContainer with id job-<id>: a systemd scope or a
// cgroup), which is what catches a grandchild that double-forked and
// called setsid: once reparented to init, nothing in /proc ties it to the
// job. The supervisor starts the wrapper held on a gate (it reads one
// line from fd 3 before it runs the command, PTY jobs too), adds it to
// the container, and only then releases it, so everything the command
// forks is born inside. The container is the job's own, not the
// starting environment's, so it outlives the registry and the backend
// that started the job.
//
// If no container can be made, or the command cannot be added to it
// (the held command is then killed before it ran anything and started
// again without one), the job runs in its process group only, and
// pid.json and [Info].Warning say why. Such a job is not the host's: it
// gets a supervisor of its own, which is the job's subreaper
// (PR_SET_CHILD_SUBREAPER, set before the command starts, in a process
// that serves this one job): a double-forked setsid child is reparented
// to it instead of to init, so while the supervisor lives a kill finds
// the whole tree among its descendants; the supervisor reaps those
// orphans itself. A host shared by many jobs could not tell whose orphan
// it adopted, so without a container the per-job supervisor, and its
// memory, stay. [Info].Containment names the mechanism otherwise. A job with [StartRequest].Limits is the
// exception: limits without a container cannot be enforced, so it fails
// to start instead. Without Limits the container enforces none; it only
// holds the tree together.
//
// Every teardown reopens the container from pid.json
// (termination.OpenContainer) and hands it to termination.KillTree: a
// kill, the end of the owner's session, a kill after a restart of the
// registry, or of a lost job whose command still runs.
//
// A job ends whole, as a foreground command does, whatever its lifetime:
// when the command ends by itself, the supervisor kills what it left
// running (a setsid or nohup'd child, one that ignores SIGTERM) before it
// writes exit.json — through the container, or, without one, through its
// own descendants (it is the job's subreaper) — with the registry's Grace
// after SIGTERM (jobdir.Spec.Grace), and counts them in the exit
// status's LeftoverKilled; then it removes the container. A job reported
// ended has nothing left running. Should something still be in the
// container later (the supervisor died first), a kill of the finished job
// tears it down and answers [KillKilled] with [KillResult].Leftovers
// counting it (the job's status stays exited). [KillAlreadyExited] means
// it left nothing. When retention
// drops a finished job, its container is torn down first (leftovers are
// killed at once); a container that cannot be removed keeps the job, and
// the next sweep tries again.
//
// The registry's side of a running job is a monitor goroutine blocked on
// the control socket: the answer to "wait", or the socket closing — the
// kernel closes it even when the supervisor is SIGKILLed — wakes it at
// once (and a dead supervisor hands the job to the registry: see "Crash
// safety"). With watch patterns a follower goroutine reads the log as it
// grows (a 64 KiB buffer and one line of at most 4 KiB: memory does not
// depend on the volume of output), woken by each write through one
// inotify instance the registry shares among its readers (so does
// [Registry.Follow]); it looks on a timer only where inotify is missing.
// With a heartbeat a timer goroutine looks at the log's size at the
// job's interval. With quiet, waiting-for-input or no-output options an
// idle goroutine is woken by the log's writes and by its deadlines, and
// looks at the job's processes in /proc only while the job is silent. Every goroutine belongs to the registry, and
// [Registry.Close] waits for all of them. Close does not stop jobs.
//
// # Output
//
// Every byte goes to output.log. A reader asks for bytes from an offset
// and gets [Chunk].Next, the offset to ask for next: reading from Next
// each time yields every byte once, with no gap and no duplicate, across
// reconnects and restarts, because the offsets are the file's. Previews
// and event tails are the last TailBytes of the file, read on demand, so
// a thousand jobs cost no memory for them.
//
// # Events
//
// Events are appended, one JSON line each, to <state>/events.jsonl; an
// event's Seq is its offset there. A consumer (an owner id) reads the
// events addressed to it, or to everyone (the breaker's), after its
// cursor, and moves the cursor with [Registry.Ack]; the cursor is a file,
// so a restart neither loses nor repeats what was acknowledged. A
// consumer that crashes before acknowledging gets the events again.
//
// A completion is written exactly once per job with Notify: the registry
// learns every earlier completion when it opens the log, and it is the
// only writer of the directory. It carries the reason ([ReasonExited],
// [ReasonKilled], [ReasonLost], [ReasonFailedToStart]), the exit status,
// who killed the job, and the tail of the output; it comes after every
// watch event of the job. Heartbeats come at the job's interval (never
// below [Options].MinHeartbeat) only when the log grew, with the tail of
// what is new. Watch matches are limited per job and across all jobs
// ([WatchLimits]); a pattern that keeps firing is switched off with one
// event, and the global breaker announces when it trips and releases.
//
// Silence has events of its own ([StartRequest].QuietAfter, InputWait,
// NoOutputTimeout; quiet.go). [EventQuiet] comes once per quiet spell
// (output re-arms it). [EventWaitingForInput] comes once per wait: when a
// process of the job sleeps in a read of the job's stdin (its pipe or
// terminal) with no output and no write for InputWait — read from the
// kernel's view of the processes (/proc/PID/syscall, else wchan, and the
// descriptor's identity; waitinput_linux.go says what is not seen),
// never guessed from the output; output, a write through the registry,
// or the wait ending re-arms it. Both carry the output's tail, and two of
// one kind for a job are at least [Options].NoticeGap apart. A job that
// writes nothing for NoOutputTimeout is killed like [Registry.Kill]
// (KilledBy [KilledByNoOutput]) and completes with
// [ReasonNoOutputTimeout].
// All of this time is the [Clock]'s: tests pass a fake one.
//
// # Crash safety
//
// When a registry opens its directory it rebuilds every job from the
// files: exit.json means the job ended (killed when kill.json says a
// kill was asked for before); startfail.json that it never ran; a
// supervisor that is still alive — same PID *and* same start time — means
// it runs, and is monitored again (output written meanwhile is in the log
// but is not matched against watch patterns, which would report old
// lines as news); a dead supervisor is handled as below. Completions
// that were due while no registry ran are sent then. A PID is never
// signalled on its own authority: termination.Proc checks the start time
// through a pidfd, so a job whose PID now belongs to another program is
// reported lost and nothing is sent to it.
//
// If the supervisor itself dies (SIGKILL, the OOM killer; for the host,
// every job it held at once), the job does not: a pipe job's command goes on writing straight into its log, and its
// wrapper goes on waiting for it. The registry adopts the job — it stays
// running, with [Info].Warning saying so, for as long as its wrapper or
// command lives (or, if neither recorded the exit, anything of it is left
// in its cgroup or process group), waiting on pidfds and on the cgroup's
// cgroup.events, never polling.
// When they are gone, the exit code the wrapper wrote is the job's exit
// (the registry writes exit.json on the dead supervisor's behalf and
// removes the empty container); only if the wrapper was killed too, and
// so wrote nothing, is the job lost, with a reason that says so. Kill
// works on an adopted job as on any other. What went through the
// supervisor is gone with it: stdin writes, EOF and resize fail with
// envs.ErrClosed. A PTY job lives on as well: its terminal's output is
// copied into the log by a `cat` that holds the master (not by the
// supervisor, whose death would hang the terminal up), and which the
// registry lets drain and stops once the job has ended.
//
// A shell reports a command killed by signal n as 128+n; the registry
// reads such a code as that signal, so [Info].Exit says the same whether
// the supervisor or the wrapper saw the end.
//
// Finished jobs are kept for [Options].Retention and at most
// [Options].MaxFinished of them; the event log is not compacted.
//
// A container outlives every process involved: its reference is in
// pid.json, so a registry that recovers a running job after a SIGKILL of
// the one that started it still kills the whole tree, escapees included.
//
// # Trust in the state directory
//
// Whoever can change the state directory, or any directory on the way to
// it, can make the registry (and each supervisor) write through a planted
// link into another file of the user's, or read the jobs' output. So
// [Open] and [Listen] accept a state directory only when no other user
// can change it, and refuse the rest with a [*StateDirError]
// ([ErrUnsafeStateDir]) that names the path and the problem; see
// package statedir for the rules. Every directory inside it is created
// 0700 and checked with lstat; every file is opened with O_NOFOLLOW and
// must be a regular file of this user with one link; new files are
// created with O_EXCL. A job directory that fails the checks at recovery
// is skipped (logged), not read.
//
// A [Server] holds bounded memory and descriptors whatever its clients
// do: one request line of at most [Server].MaxRequest bytes, at most
// [Server].MaxConns connections, an idle timeout, and an Accept that
// waits and retries on EMFILE instead of returning. A client that holds
// every connection does not lock the others out: a new connection makes
// room by closing the oldest idle one (no request read yet; it is
// answered [ErrOverloaded], so its client asks again), else the oldest
// one waiting for a job or an event (its client sees [ErrConnLost] and
// asks again from its offset or cursor). A [Client] reports a
// server that went away as [ErrUnreachable] or [ErrConnLost], so a
// reader can start one again and go on from its offset or cursor.
//
// # Owners
//
// Every job has an owner, and a [Server] lets a connection act only for
// the owner the server finds it acts for — never the one a request
// names. It decides, for each connection, in this order:
//
//  1. A token. A [Client] with Owner and Token set ([Client.As]) acts for
//     Owner. The first call with a token claims an owner that has no job
//     yet (the SHA-256 of the token is kept in <state>/owners/, so a
//     restart of the server does not release it); a claimed owner then
//     answers only to that token, and an owner that already has jobs
//     started without one (the CLI's "user") cannot be claimed at all.
//     runbox serve gives every session a fresh token of its own, held in
//     its memory only: never in an environment, an argv or a file.
//  2. A job's process. The peer's PID (SO_PEERCRED) and its ancestors,
//     each with its start time, are matched against every running job's
//     command, wrapper and (per-job) supervisor; then the peer's process
//     group against the job's; then the peer's cgroups against each job's
//     container (by the container's cgroup.procs), which also catches a
//     child that double-forked and called setsid, and what a finished job
//     left behind. Such a process acts for that job's owner and no other,
//     whatever it asks: a session's job may run `runbox ps` or `runbox
//     kill` on its own session's jobs.
//  3. A process below a front end. A process whose ancestors include one
//     that has called with a token (runbox serve: what it runs are a
//     session's foreground commands) and that matched nothing above acts
//     for no owner: every call but ping is refused with envs.ErrDenied.
//  4. Anything else of this user (a shell's runbox CLI) acts for every
//     owner no token holds, and for none that one does.
//
// A peer whose process cannot be read (it exited) acts for no owner.
// Every call that names a job resolves it among the jobs the caller may
// see: another owner's job is envs.ErrNotFound, and never makes an id
// prefix ambiguous. A call that names an owner (list, events, ack, the
// end of a session) for one the caller does not act for is
// envs.ErrDenied; so is handing a job over to an owner a token holds.
// A caller bound to one owner (1 and 2) that starts a job starts it for
// that owner.
//
// What this holds against: a command of one session (without a token,
// which it cannot learn: it is in no environment, argv or file) cannot
// list, read, wait for, write to, kill or hand over another session's
// jobs through the server, nor read their events, with or without the
// runbox CLI and with any RUNBOX_STATE_DIR or RUNBOX_OWNER it likes.
// What it does not hold against, without the kernel confinement that
// runs commands in a sandbox: a command runs as the same user as runbox,
// so file permissions (0700 directories, 0600 files) do not keep it out
// of the state directory: it can read another job's output.log, and
// signal another job's processes, directly. Root can move a process into
// a job's cgroup. Runbox gives a command nothing that leads there (its
// own variables never reach a command; see package spawn), and the
// confinement hides the state directory; this package's guarantee is the
// server's. A foreground command that escapes its process group where
// runbox has neither a cgroup nor a subreaper for it, and outlives its
// front end's process, is placed by 4; it still cannot reach a session's
// jobs. The kernel records the peer's PID at connect time: a PID reused
// between that and the check would be placed as its new process (the
// window is a few system calls).
//
// # Confined callers
//
// A sandboxed command (package confine) can still connect to the server's
// socket: a connect to a pathname unix socket is not a file access the
// sandbox's deny list stops, before Landlock ABI 9. So the server never
// takes a job's sandbox from the request ([StartRequest].Confine and
// Confiner) but from who is asking. For every connection it reads the
// peer's /proc/PID/status (the process named by SO_PEERPIDFD where the
// kernel gives it, checked alive after the read) and compares it with its
// own: a peer that set no_new_privs, stacked a seccomp filter or dropped
// a capability from its bounding set that the server did not is confined
// — the kernel keeps all three for good, so a process cannot shed them,
// and runbox's sandbox sets all three. A peer whose status cannot be read
// counts as confined. An unconfined caller's request stands as it is: the
// user's own choice, --sandbox off included.
//
// A confined caller's job runs in the caller's own sandbox when the server
// knows it — the caller is a process of a job the registry confined (by
// rule 2 of "Owners") with exactly one seccomp filter beyond the server's,
// so that job's sandbox and no other — and under the strictest one
// otherwise ([Server].StrictPolicy: read-only, no network, runbox's deny
// list; without it the start is refused). Either way the request's
// sandbox is dropped, and its idempotency key is kept apart from
// unconfined callers' keys. Beyond starting, a confined caller sees and
// acts on (list, read, follow, wait, write, kill, hand over) only jobs
// that run in its own sandbox: jobs started for confined callers of
// unknown sandbox when its own is unknown, else jobs whose sandbox is
// exactly its own (a session's jobs, for a session's job). One of unknown
// sandbox may not read events nor end a session. job.json records which
// ("confined_caller").
//
// The other sockets in the state directory serve no sandboxed command at
// all: a job's control socket (stdin writes would run commands in that
// job's sandbox) and the supervisor host's (it would run any program it
// is asked to) refuse a confined peer outright ([CheckUnconfinedPeer]),
// as does runbox serve --socket.
//
// # What it does not do
//
// It does not run jobs in the starting environment's container: that
// one dies with the environment, and a job must outlive it (the job gets
// a container of its own instead). It does not share shell session state
// with foreground commands. It runs jobs on the machine that holds the
// state directory: a remote backend needs the supervisor on the far side
// and a shared directory, which the agent protocol does not provide yet.
// It does not store a job's environment values (only their names).
package procregistry
