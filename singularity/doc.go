// Package singularity is the singularity backend: commands run in an
// Apptainer (or SingularityCE) instance, through the runbox agent inside
// it. It drives the `apptainer` (or `singularity`) program, as people do
// on HPC clusters where a Docker engine is not allowed; it links none of
// its code.
//
// # What it does
//
// [New] starts an instance of Options.Image (a SIF file, a sandbox
// directory, or any reference the program takes: docker://…,
// docker-daemon:…) with `apptainer instance start`, and hands it to the
// agent host (package agent/remote), which copies the static runbox agent
// in and runs `apptainer exec instance://NAME <agent> agent`, whose stdin
// and stdout carry the agent protocol. Session state, PTYs, whole-tree
// kill, durable output and file transfer are then the agent's, as on
// every sandboxed backend.
//
//   - Containment: --containall by default ([ContainAll]: its own IPC
//     namespace, a minimal /dev, no host home or /tmp), --contain or none
//     on request; always --cleanenv. Every instance has a PID namespace of
//     its own (PID 1 is the program's appinit), so stopping it ends what
//     runs in it, the agent and its commands included. Unprivileged: --userns whenever
//     this process can make a user namespace; a setuid installation is
//     used as it is otherwise (Options.NoUserNS forces that).
//   - Network: the host's, or none (--net --network none: loopback only).
//   - Binds: a host directory per instance, under Options.StateDir, bound
//     at the agent's directory (the agent is copied there as a plain host
//     file copy); Options.Workspace at /workspace; Options.Binds as given.
//   - Names: an environment's own instance is named runbox-<pid>-<start>-
//     <random> after the process that started it; a task's is
//     [TaskInstance] (owner, task) and is found again by that name.
//   - Lifetime: [Env.Close] stops an environment's own instance and
//     removes its host directory; a task's instance is left running for
//     the task's next run ([RemoveTask] stops it). [Reap], which New runs
//     first, stops the instances of runbox processes that are gone (the
//     pid and start time in the name no longer name a live process) —
//     never a task's, a live process's or one runbox did not name.
//   - Loss: an instance stopped while a command runs (the agent dies with
//     it) fails that command with what became of it
//     ("instance … is gone (stopped, or its process ended)"); the next
//     command starts it again and its Result says environment_recreated.
//
// # What it does not do
//
// It never gives the program runbox's environment: the program gets
// PATH, HOME, the user's name, locale and runtime directory and its own
// cache and tmp settings, nothing else (APPTAINERENV_* would otherwise be
// copied into the container), and the instance and every exec run with
// --cleanenv. A command's variables (Options.Env, where secrets go)
// travel with each command over the agent protocol, never on a command
// line. It sets no resource limits on the instance (that needs cgroups
// delegated to the user): Capabilities says so. There is no native-exec
// fallback: the agent is static and runs in any Linux image.
//
// [Probe] and [Check] say which program and version is used, whether user
// namespaces are available and whether the installation is setuid, for
// runbox doctor.
package singularity
