// Package remote is the agent host: everything a sandboxed backend (docker,
// ssh, modal, daytona) needs to run commands through the runbox agent,
// written once. A backend implements the small [Sandbox] interface —
// provision a sandbox, copy a file into it, attach a byte stream to a
// process in it, describe it, release it, lay its own capabilities over
// the agent's — and [New] turns it into an [Env], an [envs.Environment]
// and [envs.FileTransfer].
//
// # What Env does
//
//  1. Provision: [Sandbox.Provision] creates or finds the sandbox.
//  2. Deploy: the static agent build for the sandbox's architecture
//     (Options.AgentBinary, else [Program.FindSmall]: the small
//     runbox-agent beside the running binary, else built from source into
//     the user's cache once per build of the running program) is copied
//     to <AgentDir>/runbox-agent-<digest>. The digest ([FileDigest], kept
//     in the user's cache while the file is unchanged) in the name lets a
//     reused sandbox keep the copy it has when, and only when, it is this
//     build: a sandbox may take a file of that name and size as it without
//     reading it ([Sandbox.CopyIn]). When a copy kept that way does not
//     start and the sandbox is a [Recopier], it is checked end to end and
//     replaced, once, before the agent is given up.
//  3. Attach: `<agent> agent` is started with [Sandbox.Attach]; its stdin
//     and stdout carry the agent protocol, and [agent.NewClient] does the
//     handshake (bounded by Options.HandshakeTimeout).
//  4. Detect loss: when the stream fails ([agent.ErrLost]) or the native
//     exec finds the sandbox gone ([ErrGone]), the command (or a started
//     command's Wait) fails at once with an error that says what became
//     of the sandbox ([Sandbox.Describe]; an [Explainer]'s error, which
//     matches envs.ErrSandboxKilled when the sandbox was killed from
//     outside, is wrapped).
//  5. Recreate: the next command provisions again (the same sandbox when
//     it still exists) and reconnects; its Result has
//     EnvironmentRecreated set and a warning that session state was reset.
//  6. Fall back: when the agent cannot run (another OS or architecture,
//     no binary, no writable place, Options.NoAgent) and the sandbox has
//     a [NativeExec], commands run through that instead — visibly:
//     [Env.Fallback] says why, every Result carries a "degraded" warning,
//     and [Env.Capabilities] reports the native exec's own (weaker)
//     capabilities.
//  7. The runbox CLI, on demand: with Options.CLI, a command whose
//     argv[0] is [Env.CLIPath] (a job command: the sandbox's own job
//     daemon) first gets the static runbox CLI (Options.CLIBinary, else
//     [CLI]().Find) copied to <AgentDir>/runbox-<digest>, once per
//     provisioning of the sandbox, and runs that copy. CLIPath names no
//     content, so a same-named file a reused sandbox holds is never run.
//     Other commands copy nothing.
//  8. Report capabilities: the agent's (or the native exec's), with the
//     sandbox's own laid over them ([Sandbox.Capabilities]).
//
// [Env.Close] shuts the agent's commands down, then calls
// [Sandbox.Release]. When [New] fails after provisioning, the sandbox is
// released the same way: a failed start leaves nothing running.
//
// # What it does not do
//
// It does not create, name, label, reap or configure sandboxes: that is
// the backend's. It never puts a command's environment (Options.Env, where
// a caller's secrets go) into the sandbox's configuration: it travels with
// each command. It does not retry a command that failed because the
// sandbox was lost — only the next command provisions again, so nothing
// runs twice.
package remote
