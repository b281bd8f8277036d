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
// protocol frame by printing one.
//
// # The channel: authenticated, bounded, and not trusted with time
//
// Frames are JSON objects, one a line, each preceded by an HMAC-SHA256
// under a key made per interpreter from crypto/rand and handed to the
// driver as the first line of its stdin, before any code runs (never in
// argv or the environment, so neither ps nor /proc/PID/environ shows
// it). Each direction has its own label in the MAC and its own sequence
// numbers; a line that does not verify or repeats a number is dropped,
// in both directions, and the host takes a frame only for the cell it is
// running. So code that writes frames into any descriptor it can reach
// (its own, or a pipe reopened through /proc/self/fd, including the
// driver's stdin), with any id it can guess, changes nothing: no early
// reply, no forged output, no tool call, no injected cell.
//
// Every line the host reads is bounded by [Options.MaxFrame]
// ([DefaultMaxFrame], 4 MiB): a longer one fails the running cell and
// kills the kernel ([ErrFrameTooLarge] in the reply's notice). The host
// holds at most one such line, whatever the kernel writes. The driver
// keeps its own frames well under the bound (output in 64 KiB pieces; a
// reply's result, exception text and traceback cut to fit; a tool call
// whose arguments would not fit raises runbox.ToolError of kind
// "too_large" in the code), so only a cell writing into the channel
// itself can trip it. At most 64 tool calls run at once; more are
// refused.
//
// The cell's timeout is kept by the host's own timer, never by a frame:
// when it expires the host sends an interrupt and, if no authentic reply
// follows within [Options.InterruptGrace], kills the kernel's whole tree.
//
// What the MAC cannot do: the driver and the cell's code are one Python
// interpreter, so nothing the driver holds is secret from that code. Code
// that reaches into the driver's objects (runbox.call.__globals__, gc,
// ctypes, /proc/self/mem) can take the key, or simply call the driver's
// own send, and make frames the host accepts. A second process holding
// the key would not change that: it would have to take the cell's end on
// the word of the process the code runs in. Such code gains nothing
// beyond what any cell already has, though: it can end its cell early
// with the reply it likes, and it can leave code running after its
// reply, exactly as a cell that returns a value and starts a thread can.
// What holds even then is the host's side: its memory stays bounded, no
// call waits past its timeout plus the grace and the kill, and no frame
// reaches another kernel (each has its own key).
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
// A cell's timeout, or its context's end, interrupts it: the host asks
// and the driver raises KeyboardInterrupt in the cell itself (pthread_kill of its own
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
