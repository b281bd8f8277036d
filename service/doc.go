// Package service is runbox's application core: what every front end —
// the CLI, `runbox serve`, a Go program — does the same way, written once.
//
// A [Service] is made from the configuration and the launch environment
// ([Options]). It owns
//
//   - the provider table, built from the backends registered in
//     backends.go (one line per backend; each backend package decodes its
//     own configuration section and supplies its own provider);
//   - the command gate, built once from the policy in force when the
//     Service was made: a command that rewrites the configuration file
//     cannot weaken the policy of the Service that is running it (and
//     the gate refuses such writes anyway);
//   - sessions ([Session]): an id, an environment opened lazily on the
//     chosen backend and kept across commands (cd and export carry over),
//     and a lifetime; closing one tears its whole tree down;
//   - gate-first execution: every command ([Session.Run], [Session.Start],
//     [Service.StartJob]) and every write to a process's or a job's stdin
//     ([Service.WriteJob], [GatedInput]) is judged before any backend sees
//     it; a command's piped stdin (Command.Stdin) is judged the way the
//     command reads it (approval.Gate.Input: as commands by a shell, as
//     inline code by an interpreter, as statements by a database client,
//     not at all as data): input that ends is judged whole before the
//     command starts, a stream as it is read, the command killed at the
//     first refused statement ([StdinRefusedError]);
//   - a task's workspace on any backend that moves files ([TaskPlace],
//     [Service.PushTask], [Service.OpenTask]) and the job daemon of a
//     container or host ([Service.OpenJobHost]), opened through the
//     provider table, so that front ends import no backend;
//   - what --task keeps between runs, across backends ([Service.Tasks],
//     [Service.RemoveTask], and [Service.ReapTasks] and
//     [Service.TaskReaper] for tasks.max_idle): a backend takes part
//     through a [TaskKeeper] (docker, modal and kubernetes do); one
//     without is listed as unsupported with the reason, never left out
//     silently;
//   - a session's background jobs where its commands run ([OwnedJobs]):
//     the local job daemon's ([Session.Jobs]), or the job daemon inside
//     the session's own container, pod or cloud sandbox (modal, daytona),
//     or on its own ssh host, reached through the agent channel
//     ([Session.SandboxJobs]); other backends, and sessions whose agent
//     does not run (a native-exec fallback, daytona's no_agent), are
//     refused ([ErrNoSandboxJobs]); a command given a yield
//     time ([OwnedJobs.StartYield]) runs as such a job from the start and
//     comes back either with its end (and its completion event is then
//     never delivered) or, still running, with its output so far;
//   - the stable JSON encodings of results and errors ([EncodeResult],
//     [EncodeError]).
//
// Front ends only parse their input and print: package main (cmd/runbox)
// holds flags and output formats, nothing that decides or runs.
//
// # What it does not do
//
// It never prompts by itself: a front end passes an [approval.Asker] (a
// terminal prompter, an MCP elicitation) or none, and then a command that
// needs approval is refused with a hint. It keeps no package-level state:
// two Services in one process are independent.
package service
