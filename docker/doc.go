// Package docker is runbox's container backend: one container per task
// (docker engine, API 1.41 or later, version negotiated), with the runbox
// agent inside it, so every command gets what package local guarantees —
// whole-tree kill, session state, bounded and spilled output, PTYs —
// inside the container.
//
// # How commands reach the container
//
// The container is this package's; everything about the agent is package
// agent/remote's, the agent host every sandboxed backend shares. [New]
// creates the container from Options.Image (pulling it if missing) with
// the static agent build mounted read-only at /.runbox/agent/runbox-agent:
// the build is put once into a docker volume of its own
// (runbox-agent-<build id>, labelled io.runbox.agent) and every later
// container mounts it, so a new container costs no copy, and no command in
// one container can change the agent another runs. Where the volume cannot
// be made (or is found incomplete) the host copies the build to
// /.runbox/runbox-agent-<digest> instead (archive API; through an exec
// writing its stdin into a tmpfs when the root is read-only). The agent is
// started with an exec whose attached stdin/stdout carry the agent
// protocol (package agent). The exec has no TTY — a TTY would translate bytes — so the
// engine multiplexes stdout and stderr with 8-byte headers; this package
// takes them apart itself. Every command then goes over that one stream:
// ~3 ms for `true`, against ~75 ms for `docker exec`.
//
// The agent is Options.AgentBinary, else runbox-agent-linux-<arch> next to
// the running binary, else the running binary itself when it is a static
// runbox (the README's build: it serves `runbox agent`), else one built
// with CGO_ENABLED=0 from the source tree (remote.Program.Find). When none can run there (another
// architecture, no binary, no writable location), commands fall back to
// one exec each, and [Env.Capabilities], [Env.Fallback] and each Result's
// warnings say so: tree kill is degraded (only the command's own process
// is killed), there is no session state, no PTY, no streaming process, no
// durable output.
//
// The full runbox CLI is put in a container only for commands that run it
// there — the job commands, whose daemon lives in the container — at
// [CLIPath], before the first command whose argv[0] is CLIPath
// (Options.CLIBinary, else found or built like the agent).
//
// # Security defaults
//
// Every capability is dropped except:
//
//   - CHOWN, FOWNER, DAC_OVERRIDE: package managers and build tools run as
//     root in the container and must own, chmod and write files they did
//     not create (apt, pip, npm unpacking archives);
//   - SETUID, SETGID: dropping to an unprivileged user (su, runuser,
//     package scripts that create service users);
//   - KILL: the agent's tree kill must signal processes a command started
//     under another uid.
//
// Containers run with no-new-privileges, a pids limit ([DefaultPidsLimit]),
// docker-init as PID 1 (it reaps orphans), /tmp on a tmpfs, and, when
// asked, memory and CPU limits, a read-only root and network none or
// allowlist. Nothing of a command's environment is in the container's
// configuration: the Options.Env overlay (where a caller's secrets go)
// travels with each command over the agent protocol and is built into the
// child's environment by package spawn inside the container, so `docker
// inspect` never shows it. The exec fallback builds the environment with spawn on
// this side and passes it to that one exec.
//
// # Network allowlist
//
// [EgressNetwork] is a network whose only exit is one TCP port of the
// host, where the caller runs its egress proxy (package service runs the
// session's, package confine/egress): an internal bridge network (the
// engine gives it no route out and forwards nothing from it elsewhere)
// plus iptables rules on its bridge that reject everything a container
// sends to any host address except TCP to the network's gateway on the
// proxy's port, and that close that port to everyone else. A container
// joins it through Options.Egress with IPv6 switched off (link-local
// IPv6 would reach the host past IPv4 rules). So direct TCP, UDP and DNS
// to the outside fail; the engine's embedded DNS (127.0.0.11) answers
// only for containers on the same network, and, having no route out,
// forwards nothing. The rules need root and iptables ([CheckEgress]);
// without them the allowlist is refused, never given half. Egress
// networks carry io.runbox.managed, io.runbox.owner, io.runbox.network,
// io.runbox.bridge and io.runbox.pid; [ReapNetworks] (run by New for an
// environment with Options.Egress) removes those no container is on
// after a while, with their rules, and rules left without a bridge.
// Options.Network "allowlist" without Options.Egress is refused: the
// caller must run the proxy.
//
// # Lifecycle and recovery
//
// Containers carry labels: io.runbox.managed, io.runbox.owner,
// io.runbox.task and io.runbox.mode. In persistent mode a task's container
// is found again by those labels and reused (started again if stopped) and
// Close only stops it; in ephemeral mode Close removes it (one forced
// remove: the agent has already ended its commands). A container New
// made and could not start is removed — even when ctx ended while the
// engine was still creating it — and a New that fails later releases it
// as Close would. [Reap] (run by New with Options.ReapAge) removes exited
// or never-started runbox containers older than an age, which catches any
// that could not be removed then. If the container vanishes, or the agent or the daemon dies, during
// a command, the command fails at once with an error that says what
// happened to the container; the next command recreates the container (or
// starts it, or restarts the agent) and its Result has
// EnvironmentRecreated set and a warning that session state was reset.
//
// [Tasks] lists an owner's persistent containers (runbox tasks) with
// their size, state and last use — the latest of their start and stop and
// of the last agent session begun or ended in them, read as the time of
// the container's /dev/shm, where each session makes and removes its
// state directory — and what runs in them besides the idle loop;
// [RemoveTask] removes a task's containers whatever they run.
//
// # Warm pool
//
// A [Pool] keeps containers started, agent attached, per spec (the
// Options that shape a container), so that [Pool.New] hands one out after
// a ping instead of a create, a start and an attach; each one handed out
// is replaced, and removed when closed, in the background. It is for a
// process that lives across many environments (the MCP server), and it
// costs its idle containers. See [Pool] for what a pooled environment
// shares with a cold one and what it does not (its labels).
//
// # Files
//
// [Env.PutFile] and [Env.GetFile] go through the agent (the archive API in
// the fallback). [Env.CopyTo] and [Env.CopyFrom] copy trees with the
// archive API; CopyFrom refuses entries that would escape the destination
// (".." elements, absolute names, absolute or climbing symlinks) with
// [ErrUnsafePath]. [Env.PutTree] and [Env.GetTree] ([envs.TreeTransfer])
// move a tree as one tar stream with names relative to the directory;
// PutTree refuses names that climb out of it. Options.Mounts adds bind mounts and named volumes;
// Options.Workspace mounts a host directory at /workspace, and only then
// does the environment report host access (envs.CapHostAccess Active).
//
// # What it does not do
//
// It never puts a secret in a container's Cmd, Entrypoint, Env or labels.
// It never uses --privileged. It does not apply per-command limits through
// the engine (the container's limits are for the whole task). It does not
// pass the host's environment into the container: the base environment of
// commands is the container's own.
package docker
