// Package confine holds every command runbox starts on the host inside a
// kernel sandbox, so that what the approval gate misses the kernel still
// stops. The gate recognises commands and explains; recognition cannot be
// complete (a program that runs other programs, a link written through, a
// tar archive with an absolute member), so confine does not recognise
// anything: it takes away the rights the command should not have.
//
// # How a command is confined
//
// The backend does not start the program: it starts the runbox binary's
// hidden subcommand [Command] with the [Policy] as JSON, the program's path
// and its argv (see [Argv]). That trampoline ([Main]) applies every layer
// to its own thread and then executes the program in its place, so the
// program and everything it starts inherit the layers and cannot shed
// them. If any layer cannot be applied the trampoline prints why and exits
// 126: a command never runs less confined than its profile says. The
// trampoline keeps the program's argv[0] and its environment, and leaves
// no descriptor of its own open.
//
// The layers, in the order they are applied (privileged steps first):
//
//  1. Mount namespace (root only): in a private mount namespace every
//     mount is read-only but the writable roots (bind mounts of
//     themselves) and, inside them, the denied paths stay read-only,
//     because Landlock does not cover chmod, chown, utimes or extended
//     attributes; with ProtectGit, .git/hooks and .git/config of the
//     workspace's repository are read-only bind mounts and .git a mount
//     point, because hooks and config make git run programs later, for
//     the user, outside any sandbox; a mount point can be neither
//     removed nor renamed, so .git cannot be replaced either. Without
//     root (no CAP_SYS_ADMIN, and user namespaces are not required) the
//     seccomp filter sends metadata calls to the listener instead, which
//     decides them on the path it resolved and makes them itself with
//     the program's identity (metadata_linux.go); those git files stay
//     writable while the command runs.
//     (What a command leaves for git anywhere in the workspace is made
//     inert when it ends, for every user: internal/gitguard.)
//  2. Capabilities: the bounding set is emptied, the ambient, inheritable,
//     permitted and effective sets cleared. A root command keeps uid 0 but
//     gets no capability when it executes anything: no CAP_SYS_PTRACE (the
//     parent's memory), CAP_SYS_ADMIN (mounts), CAP_NET_ADMIN, CAP_NET_RAW,
//     CAP_DAC_OVERRIDE (files of other users).
//  3. no_new_privs: setuid programs and file capabilities grant nothing.
//  4. Landlock (files, TCP ports, scopes). Writes only under the workspace,
//     Policy.Writable (TMPDIR, caches) and the device nodes every program
//     uses (/dev/null, /dev/zero, /dev/full, /dev/tty, /dev/ptmx, /dev/pts;
//     not /dev/shm, which every process of the user shares: a command
//     that wrote there could change what another session runs). Reads and execution everywhere except Policy.DenyRead
//     and the rest of /dev (a raw disk would bypass the deny list). Since
//     Landlock only allows, "everywhere except" is built by allowing every
//     entry beside each step of the path to a denied path, and on the
//     steps themselves only listing: the names in a denied directory's
//     parent stay listable, and an entry created later beside a denied
//     path (or beside a step toward it) is not readable by commands
//     already started. Landlock follows the file, not the name: writing
//     through a symbolic link, a hard link (refused: it would give a file
//     more rights than it has where it is) or an archive member reaches
//     the same denial. A Landlock domain also cannot ptrace or open
//     /proc/PID/mem of a process outside it, cannot mount, and (ABI 6+)
//     cannot signal a process outside it or connect to its abstract unix
//     sockets. /sys, /proc/sys and every cgroup.procs are outside the
//     write list, so a command cannot change system settings or leave its
//     cgroup. Under NetworkAllowlist only TCP connects to Policy.ProxyPorts
//     and Policy.AllowPorts pass (ABI 4+), on any address; binding is
//     free, so a command may serve.
//  5. seccomp (written by hand, see seccomp_linux.go): foreign system-call
//     ABIs and io_uring fail (io_uring does socket and file work seccomp
//     never sees); under NetworkAllowlist IPv4/IPv6 sockets must be TCP
//     streams (no UDP, DNS included: names are resolved by the session's
//     proxy; no raw, packet or Multipath TCP sockets, which Landlock does
//     not see), under NetworkOff there are no IPv4/IPv6 sockets at all.
//
// ProfileReadOnly is the same without the workspace in the write list;
// ProfileOff applies nothing and [Argv] returns the program bare.
//
// # Without the trampoline
//
// [Prepare] builds a policy's rules once, in the calling process, and
// [Prepared.Start] enforces them on a new thread of that process (every
// layer above is a property of a thread) and starts a program from it:
// the program inherits the layers as it would from the trampoline, and
// the thread ends with the start, never running anything else (never the
// main thread, which the Go runtime does not end). Each Start is a
// Landlock domain of its own. Until the thread has ended the program
// shares its domain and could trace or signal it: Start hands back a
// wait for that end (a pidfd of the thread, Linux 6.9 and later; older
// kernels refuse, and the caller keeps the trampoline), which the caller
// passes before giving the program any work. The rules name the files
// they grant as they were when they were built; [Prepared.Current] says
// whether a fresh build would give the same ones (the directories listed
// on the way to each denied path, the paths looked up, the links
// resolved: watched with inotify, compared again only after a change),
// and a caller prepares anew when it does not. runbox's local backend
// starts its pre-started shells this way, so that a confined shell's
// start costs an unconfined one's, plus well under a millisecond.
//
// # What it does not do
//
// It does not choose what to allow: [DefaultPolicy] gives the documented
// lists and the caller adds runbox's own files to DenyRead and the session
// TMPDIR and proxy port. It does not resolve names or filter domains
// (package confine/egress, the proxy, does). It does not decide
// datagrams sent to a unix socket one by one: no unix datagram socket can
// be made (see seccomp_linux.go). Nor does it decide reads of files that
// are outside DenyRead (the deny list is the boundary). Paths given in
// Writable that do not exist when the command starts are not writable by
// it.
//
// # Connects
//
// The seccomp filter hands every connect(2) and listen(2), under every
// network mode, to a seccomp user-notification listener that this
// package serves outside the sandbox (notify_linux.go): a goroutine of
// the process that called [Prepared.Start], or, for the trampoline, of
// the process that started it and made a [Handover] (handover_linux.go);
// without one, the trampoline loads the filter without it. It records the
// sockets the programs listen on and decides each connect by the family
// of the socket itself: under NetworkAllowlist, IPv4 and IPv6 to loopback
// ports that are allowed or served by the programs' own sockets only;
// unix sockets (unixsock_linux.go) to a pathname socket whose inode lies
// in a writable root outside the deny list or is one of
// Policy.UnixSockets, or to an abstract socket the programs listen on.
// An allowed connect is made by the listener's process on a duplicate of
// the program's socket, with the address as it was read (for a pathname,
// the inode it resolved to); none is continued to the kernel, which would
// read the address and the descriptor again after another thread could
// have changed them. Both end when the last program of the start has.
//
// # Where it is degraded
//
// [Probe] reports each layer (files, processes, ptrace, signals, network,
// mount namespace) as active, degraded or unsupported with the reason,
// for `runbox doctor`; [Report.Check] refuses a profile the kernel cannot
// give, with a message that says what is missing and how to choose
// `sandbox: off`. No layer needs user namespaces or root, so the workspace
// profile works as root, as a user, and in unprivileged containers:
// without Landlock it is refused; below ABI 4 only network off and open
// are possible; below ABI 6 signals to outside processes follow the usual
// uid rules; without root, .git stays writable.
//
// # Violations
//
// A denied operation fails with EACCES, EPERM or EXDEV, and programs
// print that with the path. [Explain] reads a command's output for those
// messages and returns one [Violation] per denied path or port with the
// rule that denied it, and nothing for paths the policy allows (a plain
// file-mode error).
package confine
