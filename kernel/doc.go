// Package kernel hosts persistent Python kernels: one long-lived python3
// process, started through any [envs.Environment], that runs cells in one
// namespace (__name__ == "__main__") and lets the code call the host's
// tools (runbox.terminal(...)) back over the same channel.
//
// # How it works
//
// The interpreter is started with [envs.Environment.Start] and a small
// driver (embedded in this package, passed with -c: nothing is written
// into the environment). The driver moves the real stdin and stdout to
// private descriptors before any user code runs, points fd 0 at
// /dev/null and fds 1 and 2 at pipes it reads itself. Everything a cell
// writes, at any level (print, os.write, a subprocess, C code), is
// forwarded as the cell's output; user code has no way to write a
// protocol frame by printing one. Frames are JSON objects, one a line.
//
// Each cell's stdout and stderr are bounded like a command's output
// ([envs.Capture]: head and tail kept, the whole stream spilled to a
// private file). A cell's reply ([Reply]) carries its status, output,
// the repr of its last expression, and the traceback of an exception.
//
// # Tool calls
//
// import runbox in a cell gives runbox.terminal(command, timeout=None,
// workdir=None, background=False, notify_on_complete=False),
// runbox.process(action, session_id=None, ...) and runbox.call(name,
// ...) for any tool the embedder registered ([Options.Tools]). Each call
// goes to the host, runs in its own goroutine with a context that ends
// with the cell, and its result comes back as a dict; a failure raises
// runbox.ToolError (runbox.Denied for a command the gate refused). A call
// that arrives when no cell is running is refused ([ErrCellFinished]).
// The package itself runs nothing but the interpreter: gating and running
// the commands is the tools' business (service.Session.KernelTerminal
// passes each command through the session's gate).
//
// # Interrupts and lifetime
//
// A cell's timeout, or its context's end, interrupts it: the driver
// raises KeyboardInterrupt in the cell itself (pthread_kill of its own
// main thread), so this needs no signal support from the environment and
// the namespace survives. A cell that does not stop within
// [Options.InterruptGrace] has its kernel killed, whole tree; the reply
// says so ([Reply.StateLost]) and the next cell runs in a fresh kernel
// ([Reply.Restarted]). The driver exits by itself when its stdin reaches
// EOF, so a kernel whose host died does not linger.
//
// # What it does not do
//
// It judges nothing: running code is not passed through the command gate
// here (a front end decides whether a cell may run; see
// service.Session.AuthorizeCode). One [Kernel] is one interpreter at a
// time, owned by its caller; a [Pool] keeps several by [Key] with a cap,
// least-recently-used eviction that never touches a kernel running a
// cell, and an idle timeout.
// The interpreter's environment is the backend's child environment
// (built by spawn): no secrets reach the code.
package kernel
