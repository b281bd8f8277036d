// Package modal is the modal backend: a Modal sandbox per task, driven
// through Modal's official Go SDK (github.com/modal-labs/libmodal/modal-go,
// pinned at v0.7.0), with the runbox agent running inside it.
//
// # How commands run
//
// The backend is a [remote.Sandbox] for the agent host (package
// agent/remote). Provision creates the sandbox (app, image tag or im-…
// id, cpu, memory, lifetime, idle timeout, workdir, network policy) and
// tags it runbox=1, runbox.owner and runbox.task. CopyIn uploads the
// static agent with one exec of sh that reads its stdin; Attach starts
// `<agent> agent` with one long-lived exec whose stdin and stdout (the
// SDK's command-router streams) carry the agent protocol. Every command is
// then one round trip on that stream, with tree kill, PTY, session state
// and durable output — the same contract as the docker backend. A
// command's environment travels in the agent protocol, never in the
// sandbox's definition or an SDK secret.
//
// A session's background jobs run in the job daemon inside the sandbox:
// the agent host copies the full static runbox CLI in (Options.CLIBinary,
// under a name that carries its digest) before the first command that
// runs [remote.Env.CLIPath], and the service relays to `runbox __relay`
// there. Other commands never pay for that upload.
//
// A sandbox created a moment ago can answer its first exec with no task
// id (SDK v0.7.0 reports "does not have a task ID"): exec retries that,
// bounded by Options.ReadyTimeout, and a sandbox that never becomes ready
// is terminated.
//
// # Credentials
//
// [ResolveCredentials] reads them as Modal's tools do, from the launch
// environment runbox was started with (Options.Getenv; runbox removes the
// secret variables from its own process environment at start):
// MODAL_TOKEN_ID/MODAL_TOKEN_SECRET, MODAL_ENVIRONMENT, MODAL_SERVER_URL
// over the profile MODAL_PROFILE names (else the active one) in
// MODAL_CONFIG_PATH (else ~/.modal.toml). The token goes to the SDK as
// explicit parameters. A refused token is [ErrAuth], naming where it came
// from; none found is [ErrNoCredentials]. The SDK reads the server
// address from the process environment or the profile file itself, so a
// launch environment naming another server than the process's is refused.
//
// # Persistence
//
// With Options.Persistent, Close snapshots the sandbox's filesystem
// (SandboxSnapshotFs), records task → image id in
// <StateDir>/modal/snapshots.json and terminates the sandbox; the task's
// next environment is created from that image. A snapshot that cannot be
// restored (other than a refused token) is logged as a warning and the
// base image is used. Without it, Close terminates the sandbox. [Reap]
// terminates runbox-tagged sandboxes left behind. [Tasks] lists the
// recorded snapshots (from the record alone) and [RemoveTask] deletes a
// task's snapshot image on Modal, then its record (runbox tasks).
//
// # Tests
//
// Package modaltest is a loopback fake of Modal's control plane and task
// command router on the SDK's generated gRPC server interfaces; its
// sandboxes are directories and its execs real processes.
package modal
