# runbox kernel driver: runs cells in one persistent namespace and talks to
# the host over a private protocol channel. It is passed to the interpreter
# with -c, so it needs nothing in the environment but python3.
#
# Channels: the real stdin and stdout are moved to private descriptors
# before any user code runs. fd 0 then reads /dev/null, and fds 1 and 2 are
# pipes this driver reads and forwards as "out" frames, so output written at
# any level (print, os.write, a subprocess, C code) belongs to the running
# cell and can never be mistaken for a frame.
#
# Frames are JSON objects, one a line, each preceded by an HMAC-SHA256 under
# a per-kernel key: "\n" + hex(mac) + " " + json + "\n". The key is the
# first line on stdin, read before anything else runs; it is never in argv
# or the environment. A line without a valid MAC (someone else wrote to the
# descriptor) is dropped by either side. What this does and does not stop is
# in the Go package's documentation.
import ast, base64, hashlib, hmac, json, linecache, os, queue, select, signal, sys, threading, time, traceback, types


def _handshake():
    """Reads the host's first line, byte by byte so nothing after it is
    consumed: {"key": hex, "max_frame": n}."""
    line = b""
    while not line.endswith(b"\n"):
        b = os.read(0, 1)
        if not b or len(line) > 4096:
            os._exit(0)
        line += b
    return json.loads(line)


class FrameTooLarge(Exception):
    pass


class Channel:
    """Seals this driver's frames and opens the host's."""

    def __init__(self, hello):
        self.key = bytes.fromhex(hello["key"])
        self.max_frame = int(hello["max_frame"])
        self.out_seq = 0
        self.in_seq = 0

    def _mac(self, label, body):
        return hmac.new(self.key, label + body, hashlib.sha256).hexdigest().encode()

    def seal(self, msg):
        self.out_seq += 1
        msg["seq"] = self.out_seq
        body = json.dumps(msg, separators=(",", ":")).encode()
        if len(body) + 70 > self.max_frame:
            self.out_seq -= 1
            raise FrameTooLarge("%s frame of %d bytes (limit %d)" % (msg.get("op"), len(body), self.max_frame))
        return b"\n" + self._mac(b"runbox-kernel driver\n", body) + b" " + body + b"\n"

    def open(self, line):
        """The host's frame in line, or None when line is not one."""
        mac, _, body = line.partition(b" ")
        if not hmac.compare_digest(mac, self._mac(b"runbox-kernel host\n", body)):
            return None
        try:
            msg = json.loads(body)
        except ValueError:
            return None
        if not isinstance(msg, dict) or not isinstance(msg.get("seq"), int) or msg["seq"] <= self.in_seq:
            return None
        self.in_seq = msg["seq"]
        return msg


CHANNEL = Channel(_handshake())

PROTO_IN = os.dup(0)
PROTO_OUT = os.dup(1)
DIAG = os.dup(2)
for _fd in (PROTO_IN, PROTO_OUT, DIAG):
    os.set_inheritable(_fd, False)

_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)

_send_lock = threading.Lock()


def send(msg):
    """Writes one sealed frame; FrameTooLarge when it would pass the host's
    limit (nothing is written then)."""
    with _send_lock:
        view = memoryview(CHANNEL.seal(msg))
        while view:
            n = os.write(PROTO_OUT, view)
            view = view[n:]


class State:
    lock = threading.Lock()
    cell = None  # the id of the running cell
    running = False  # user code is running: an interrupt may land
    count = 0
    interrupted = False
    # Cells interrupted before they began: the interrupt can be read while
    # the cell still waits in the queue (a busy machine, a cell sent and
    # interrupted at once); the cell then does not run. Ids of cells that
    # ended before their interrupt came are dropped past a bound.
    early = set()


MAX_REPR = 64 * 1024


class Stream:
    """One of fds 1 and 2: a pipe whose reader forwards what it reads to the
    running cell. Reads and forwards happen under lock, so drain() after a
    cell sees every byte written before the cell ended."""

    def __init__(self, fd, name):
        r, w = os.pipe()
        os.set_inheritable(r, False)
        os.dup2(w, fd)
        os.close(w)
        self.r, self.name = r, name
        self.lock = threading.Lock()
        threading.Thread(target=self.pump, daemon=True).start()

    def forward(self, data):
        cell = State.cell
        if cell is not None and data:
            send({"op": "out", "id": cell, "stream": self.name, "data": base64.b64encode(data).decode()})

    def pump(self):
        while True:
            select.select([self.r], [], [])
            with self.lock:
                ready, _, _ = select.select([self.r], [], [], 0)
                if not ready:
                    continue
                data = os.read(self.r, 65536)
                if not data:
                    return
                self.forward(data)

    def drain(self):
        with self.lock:
            while select.select([self.r], [], [], 0)[0]:
                data = os.read(self.r, 65536)
                if not data:
                    return
                self.forward(data)


class ToolError(Exception):
    """A tool call failed: .kind says how ("denied", "bad_command", ...) and
    .data carries the host's structured error."""

    def __init__(self, message, kind="error", data=None):
        super().__init__(message)
        self.kind, self.data = kind, data


class Denied(ToolError):
    """The command gate refused the call's command."""


class Calls:
    lock = threading.Lock()
    next = 0
    pending = {}


def call(tool, **args):
    """Call one of the host's tools by name and return its result."""
    with Calls.lock:
        Calls.next += 1
        cid = Calls.next
        slot = {"event": threading.Event()}
        Calls.pending[cid] = slot
    try:
        try:
            send({"op": "call", "id": State.cell, "call": cid, "tool": tool, "args": args})
        except FrameTooLarge as e:
            raise ToolError("runbox.%s: arguments too large: %s" % (tool, e), "too_large") from None
        slot["event"].wait()
    finally:
        with Calls.lock:
            Calls.pending.pop(cid, None)
    msg = slot["msg"]
    if msg.get("ok"):
        return msg.get("value")
    err = msg.get("error") or {}
    cls = Denied if err.get("kind") == "denied" else ToolError
    raise cls(err.get("message", "tool call failed"), err.get("kind", "error"), err.get("data"))


def _clean(d):
    return {k: v for k, v in d.items() if v is not None and v is not False}


def terminal(command, timeout=None, workdir=None, background=False, notify_on_complete=False, **kw):
    """Run a shell command through runbox's command gate in this kernel's
    environment and return the terminal tool's result as a dict."""
    args = dict(kw, command=command, timeout=timeout, workdir=workdir,
                background=background, notify_on_complete=notify_on_complete)
    return call("terminal", **_clean(args))


def process(action, session_id=None, **kw):
    """Manage background jobs (list, poll, log, wait, kill, write, ...)."""
    return call("process", **_clean(dict(kw, action=action, session_id=session_id)))


def make_module(tools):
    mod = types.ModuleType("runbox", "Tools of the runbox host, callable from code: " + ", ".join(tools))
    mod.call, mod.ToolError, mod.Denied, mod.tools = call, ToolError, Denied, list(tools)
    if "terminal" in tools:
        mod.terminal = terminal
    if "process" in tools:
        mod.process = process

    def getattr_(name):
        if name in tools:
            return lambda **args: call(name, **args)
        raise AttributeError("runbox has no tool %r" % name)

    mod.__getattr__ = getattr_
    return mod


def on_sigint(signum, frame):
    if State.running:
        raise KeyboardInterrupt


def reader(main_ident, cells):
    """Reads the host's frames. EOF means the host is gone: exit at once."""
    buf = b""
    while True:
        try:
            chunk = os.read(PROTO_IN, 65536)
        except InterruptedError:
            continue
        if not chunk:
            os._exit(0)
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            msg = CHANNEL.open(line.strip())
            if msg is None:
                continue  # not the host's: someone wrote into our stdin
            op = msg.get("op")
            if op == "exec":
                cells.put(msg)
            elif op == "interrupt":
                with State.lock:
                    if State.running and State.cell == msg.get("id"):
                        State.interrupted = True
                        signal.pthread_kill(main_ident, signal.SIGINT)
                    elif State.cell != msg.get("id"):
                        if len(State.early) >= 1024:
                            State.early.clear()
                        State.early.add(msg.get("id"))
            elif op == "result":
                with Calls.lock:
                    slot = Calls.pending.get(msg.get("call"))
                if slot is not None:
                    slot["msg"] = msg
                    slot["event"].set()


def run_cell(code, ns, count):
    """Runs code in ns; returns (result repr or None). The last expression's
    value is the cell's result, as in an interactive session. The source is
    registered with linecache so that tracebacks show the cell's lines."""
    name = "<cell %d>" % count
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, name, "exec"), ns)
    if last is not None:
        value = eval(compile(last, name, "eval"), ns)
        if value is not None:
            ns["_"] = value
            text = repr(value)
            if len(text) > MAX_REPR:
                text = text[:MAX_REPR] + "... [repr truncated: %d characters]" % len(text)
            return text
    return None


def format_tb(exc):
    tb = exc.__traceback__
    # Drop the driver's own frames: the traceback starts in the cell, and
    # an interrupt ends where the cell was, not in the signal handler.
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell "):
        tb = tb.tb_next
    te = traceback.TracebackException(type(exc), exc, tb)
    while te.stack and te.stack[-1].name == "on_sigint" and te.stack[-1].filename == DRIVER_FILE:
        te.stack.pop()
    return "".join(te.format())


DRIVER_FILE = on_sigint.__code__.co_filename


def main():
    signal.signal(signal.SIGINT, on_sigint)
    out = Stream(1, "stdout")
    err = Stream(2, "stderr")
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stdin = open(0, "r", closefd=False)
    tools = [t for t in os.environ.pop("RUNBOX_KERNEL_TOOLS", "").split(",") if t]
    sys.modules["runbox"] = make_module(tools)
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.modules["__main__"] = types.ModuleType("__main__")
    sys.modules["__main__"].__dict__.update(ns)
    ns = sys.modules["__main__"].__dict__
    cells = queue.Queue()
    threading.Thread(target=reader, args=(threading.get_ident(), cells), daemon=True).start()
    send({"op": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        run_one(cells.get(), ns, out, err)


def run_one(msg, ns, out, err):
    cid = msg["id"]
    State.count += 1
    reply = {"op": "done", "id": cid, "status": "ok", "execution_count": State.count}
    start = time.monotonic()
    try:
        try:
            with State.lock:
                early = cid in State.early
                State.early.discard(cid)
                State.cell, State.interrupted, State.running = cid, early, not early
            if early:
                raise KeyboardInterrupt("interrupted before it started: the cell did not run")
            reply["result"] = run_cell(msg["code"], ns, State.count)
        except SystemExit as e:
            reply["status"] = "exit"
            code = e.code
            reply["exit_code"] = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
        except BaseException as e:
            reply.update(status="error", ename=type(e).__name__, evalue=str(e), traceback=format_tb(e))
        finally:
            State.running = False
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except Exception:
                    pass
    except KeyboardInterrupt:
        State.running = False
        if reply["status"] == "ok":
            reply.update(status="error", ename="KeyboardInterrupt", evalue="", traceback="KeyboardInterrupt\n")
    out.drain()
    err.drain()
    with State.lock:
        State.cell = None
        reply["interrupted"] = State.interrupted
    reply["duration"] = time.monotonic() - start
    send_done(reply)


MAX_FIELD = 64 * 1024


def send_done(reply):
    """Sends the cell's reply, cutting its longest text fields until the
    frame fits the host's limit."""
    for limit in (MAX_FIELD, 4096, 0):
        for k in ("result", "evalue", "traceback"):
            v = reply.get(k)
            if isinstance(v, str) and len(v) > limit:
                reply[k] = v[:limit] + "... [cut: %d characters]" % len(v)
        try:
            send(reply)
            return
        except FrameTooLarge:
            continue
    send({"op": "done", "id": reply["id"], "status": reply["status"], "execution_count": reply["execution_count"]})


try:
    main()
except BaseException:
    os.write(DIAG, traceback.format_exc().encode())
    os._exit(70)
