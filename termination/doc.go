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
// are set. The containerd cgroups library drives both (its cgroup2 manager
// takes any mountpoint); the limit counters (memory.events, pids.events,
// memory.oom_control, memory.failcnt) are read as plain files, because the
// library does not expose all of them. Cgroups are made beside this
// process's own cgroup in each hierarchy, named runbox-<id>; scopes are
// runbox-<id>.scope.
//
// The library only creates the cgroups and sets their limits. Everything
// after that (Add, Kill, Procs, Remove, limit counters) is plain file
// operations on the cgroup directories: cgroup.procs, cgroup.kill on v2,
// freezer.state on v1 (freeze, SIGKILL each process, thaw), rmdir,
// deepest cgroup first. That is what lets a container be reopened.
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
