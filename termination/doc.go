// Package termination tears down whole process trees: a command, every
// process it started, and the ones that tried to get away. It also knows
// who a PID is (by start time) and how to contain a tree (systemd scopes,
// cgroups) so that nothing can get away.
//
// # Teardown order
//
// [KillTree] runs one fixed sequence:
//
//  1. Snapshot. Before any signal, it reads /proc and records every
//     descendant of the root and every member of the root's process group,
//     each with its start time, plus everything in the [Container].
//     A child that called setsid has left the process group but is still a
//     descendant while its parent lives; once the parent dies, it is
//     reparented to init and no longer looks related. The snapshot is what
//     keeps it known.
//  2. SIGTERM the parent only, and wait up to [Options.Grace] for it to
//     exit. A well behaved parent forwards the signal, reaps its children
//     and exits with its own status — after them, so the wait ends as soon
//     as the parent is gone. Signalling the whole tree at once would take
//     that chance away (and turns "clean shutdown" into "the children died
//     under the parent").
//  3. SIGTERM whatever survived, including processes a fresh snapshot
//     found, and wait up to Grace again.
//  4. SIGSTOP everything found, rescanning until nothing new appears (a
//     stopped process cannot fork, so a fork storm converges), then SIGKILL
//     all of it.
//  5. Kill the container (cgroup.kill, or stop the systemd scope). This
//     catches processes that double-forked and were reparented to init
//     before the first snapshot: /proc can no longer tie them to the tree,
//     only the container can. Without a container they are not found.
//  6. Verify that nothing is left, then remove the container. Anything
//     alive is returned as an *envs.SurvivorsError naming it.
//
// A cancelled context skips the waiting (steps 2–3) but never steps 4–6.
//
// # What it refuses to do
//
//   - It never signals a recycled PID. Every signal goes through
//     [Proc.Signal], which checks the start time immediately before (on
//     Linux through a pidfd, so the check and the signal see the same
//     process) and returns [ErrRecycled] instead.
//   - It never kills the container while the parent has not had its SIGTERM
//     and grace period: cgroup.kill and stopping a scope come after the
//     PID-based rounds, never first.
//   - It never hides survivors or a container it could not remove: the
//     first is an error, the second is an error or, with a [Reaper], kept
//     and retried.
//   - It never waits for (reaps) the root: the root is the caller's child
//     and the caller's Wait owns its exit status. A zombie counts as dead.
//
// # Subreapers
//
// The package never sets PR_SET_CHILD_SUBREAPER. A subreaper would make
// orphans of a command reparent to runbox instead of init, so they stay
// findable by parentage; but then runbox must reap every one of them
// (os/exec's Wait only reaps its own children, so orphans would pile up as
// zombies), and the setting is process-wide, so it would change the
// behaviour of every other library in the process. Containers solve the
// same problem without that cost. A program that wants it anyway sets it
// itself and runs a reaping loop.
//
// # Containers
//
// [NewContainer] picks the strongest mechanism [Detect] finds: a systemd
// transient scope over D-Bus, a cgroup v2 (or a cgroup v2 mount beside v1
// on hybrid hosts, with v1 controllers for limits), cgroup v1, or just the
// process group. A container must receive the child before the child runs
// any user code; see [Container] for the contract.
//
// On a hybrid host (v1 controllers under /sys/fs/cgroup/<controller> and a
// controller-less cgroup2 at /sys/fs/cgroup/unified), the [Hybrid]
// mechanism puts the tree in a cgroup2 group for membership and
// cgroup.kill, and in v1 memory, pids and cpu groups for the limits that
// are set. Cgroups are made beside this process's own cgroup in each
// hierarchy, named runbox-<id>; scopes are runbox-<id>.scope. A cgroup of
// that name that exists already is refused, never joined: it belongs to
// another container, and sharing it would let one command's teardown
// kill another's processes.
//
// # Cgroups without a cgroup library
//
// A cgroup container's whole life is plain file operations on its
// directories: mkdir, the limit files (memory.max, pids.max, cpu.max on
// v2, with the controllers enabled in cgroup.subtree_control above;
// memory.limit_in_bytes, pids.max, cpu.cfs_* on v1), cgroup.procs,
// cgroup.kill on v2 or freezer.state on v1 (freeze, SIGKILL each process,
// thaw), the limit counters (memory.events, pids.events,
// memory.oom_control, memory.failcnt), and rmdir, deepest cgroup first.
// That is what lets a container be reopened from its [ContainerRef] in
// another process and run the same code.
//
// runbox used containerd/cgroups (v3) to create the groups, and dropped
// it rather than let its managers drive the groups' whole life, because
// of what the library does:
//
//   - cgroup2.Manager.Kill falls back, on any failed write of cgroup.kill
//     (a group removed meanwhile, a threaded group), to freezing the group,
//     signalling every PID and then waiting for each one unless this
//     process is a subreaper: it would reap the command's root, whose exit
//     status belongs to the caller's Wait (see "What it refuses to do").
//     It reports through a process-wide logger.
//   - Freeze (v1 and v2) polls the freezer state without a bound; cgroup1
//     has no Kill at all; Delete's "still contains running tasks" is an
//     untyped error; Stat has no pids.events max (a hit of the pids
//     limit) on either version, so the counters were read as files anyway.
//   - NewManager and cgroup1.New create with MkdirAll, so an id used twice
//     silently shares one cgroup.
//   - Its systemd constructors (cgroup2.NewSystemd, DeleteSystemd) take no
//     context (context.TODO, a fixed 30 s job wait), reach only the
//     system manager, place units under a fixed /sys/fs/cgroup (no hybrid
//     or v1 host, no user manager), and keep package-level state (the
//     systemd version, whether to delegate). runbox's scopes are made over
//     D-Bus with go-systemd directly, on the system or the user bus, on
//     unified, hybrid and v1 hosts.
//   - What it would do for runbox, creating a directory and writing a
//     few limit files, is a few dozen lines here; the library brought
//     cilium/ebpf (device filters runbox never sets), protobuf (its
//     statistics types) and logrus into every build, the agent included:
//     the static runbox-agent (CGO_ENABLED=0 go build -trimpath
//     -ldflags='-s -w' ./cmd/runbox-agent; linux/amd64, Go 1.26) went
//     from 7.7 MB to 4.9 MB without it.
//
// # Reopening a container
//
// [Container.Ref] returns a [ContainerRef]: the mechanism, the cgroup
// directories, and for a scope its unit name and bus. It is plain data
// (JSON-friendly) and can be stored. [OpenContainer] turns it back into a
// Container in any process, for example to tear down a tree whose owner
// crashed; the reopened container runs the same code as the original.
// OpenContainer never creates anything: a cgroup or unit that is gone
// reopens as an empty container whose Kill and Remove succeed (not found
// counts as stopped and removed). It refuses a ref whose directories are
// not runbox-* cgroups strictly inside a mounted hierarchy of the right
// version, or whose unit is not runbox-*.scope, so a corrupted or forged
// record cannot aim cgroup.kill at a hierarchy's root or at a foreign
// unit. A reopened scope cannot Add (systemd builds a scope around its
// first processes only); a reopened cgroup can.
package termination
