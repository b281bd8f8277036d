// Package seal keeps runbox's own processes from showing their children
// the secrets runbox was started with.
//
// spawn keeps withheld variables out of a child's environment, but a
// child can still look at its parent: /proc/$PPID/environ holds the
// environment the parent was started with, and /proc/PID/cmdline its
// arguments, for every process of the same user (and for root, every
// process). A runbox process started with MODAL_TOKEN_SECRET in its
// environment would hand it to any command that asked that way.
//
// [Process] is called first thing in main. It
//
//  1. copies the launch environment and arguments into memory that only
//     this process holds (the [Launch] it returns, which the rest of
//     runbox reads instead of os.Environ and os.Getenv);
//  2. removes every secret variable (spawn's always-strip and block lists,
//     [spawn.Policy.Secret]) from the process's Go environment, so nothing
//     it starts inherits one by accident;
//  3. overwrites, in the process's own memory, the values of those
//     variables where the kernel shows them as /proc/PID/environ, and any
//     secret value that appears in the arguments (a caller's shell may
//     have expanded $GITHUB_TOKEN into the command text) where the kernel
//     shows them as /proc/PID/cmdline;
//  4. makes the process non-dumpable (PR_SET_DUMPABLE 0), so processes of
//     the same user that are not root can read neither its environ nor its
//     memory, and cannot ptrace it. Children are dumpable again after
//     their execve, as usual;
//  5. marks every descriptor it inherited above standard error
//     close-on-exec ([inherit.CloseOnExec]): whatever the caller left open
//     (a log file, a socket) reaches no command.
//
// Step 3 is what protects against a root child: root can read the environ
// of a non-dumpable process, so the values must be gone from it. Root
// with CAP_SYS_PTRACE can still read the process's heap through
// /proc/PID/mem; nothing short of dropping that capability from commands
// prevents that, and seal does not pretend to.
//
// A runbox process that starts another runbox process (the job daemon)
// hands it the secrets without an environment window: [Launch.Hand] puts
// only the non-secret variables in the child's environment and passes the
// secret ones in a sealed memfd that the child's [Process] reads and
// closes before it does anything else.
//
// # What seal refuses to do
//
// It never prints, logs or returns a secret value in an error. It never
// changes the environment of a process it did not start. Where /proc or
// memfd are missing (non-Linux) it does the steps it can and reports the
// rest in [Launch.Warnings].
package seal
