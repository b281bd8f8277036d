package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	pathpkg "path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/spawn"
)

// execEnv runs each command in a session channel of its own: the fallback
// when the agent cannot run on the host. It is degraded, and says so in
// its Capabilities: no session state, no PTY, no streaming processes, and
// a kill that reaches the command's process group (a setsid child
// escapes it), not its whole tree.
//
// The command's environment and directory travel on its stdin, ahead of
// its own input: the remote argv holds only the fixed wrapper and the
// command itself.
type execEnv struct {
	remote.RunOnly
	cn    *conn
	dir   string
	grace time.Duration
}

// execWrapper prints the process group to kill (sshd makes each session a
// process group of its own), reads the preamble — its length on a line,
// then that many bytes of exports and cd — from stdin, and runs the
// command with the rest of stdin. read and dd take one byte at a time
// from a pipe, so nothing of the command's input is consumed.
const execWrapper = `read -r _ _ _ _ __rb_pg _ </proc/$$/stat 2>/dev/null; echo "${__rb_pg:-0}"; unset __rb_pg
IFS= read -r __rb_n || exit 125
eval "$(dd bs=1 count="$__rb_n" 2>/dev/null)" || exit 126
unset __rb_n
if [ "$1" = shell ]; then exec /bin/sh -c "$2"; fi
shift; exec "$@"`

// Native is the fallback for the host.
func (s *sandbox) Native(ctx context.Context, id string) (envs.Environment, error) {
	cn, err := s.live()
	if err != nil {
		return nil, err
	}
	s.dropLead() // the agent will not run: its session is not needed
	run := remote.RunOnly{Name: "ssh", How: "session per command"}
	return &execEnv{RunOnly: run, cn: cn, dir: s.o.Dir, grace: s.o.Grace}, nil
}

// preamble is the exports and cd that the wrapper evaluates.
func preamble(env map[string]string, dir string) []byte {
	var b bytes.Buffer
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellCommand(env[k]))
	}
	if dir != "" {
		fmt.Fprintf(&b, "cd %s || exit 126\n", shellCommand(dir))
	}
	return b.Bytes()
}

// validName is a name the shell can export.
func validName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, c := range k {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (x *execEnv) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if cmd.PTY != nil {
		return nil, fmt.Errorf("ssh: a PTY needs the agent: %w", envs.ErrUnsupported)
	}
	for k := range cmd.Env {
		if !validName(k) {
			return nil, fmt.Errorf("ssh: environment variable name %q: %w", k, envs.ErrBadCommand)
		}
	}
	stdin, err := x.input(cmd)
	if err != nil {
		return nil, err
	}
	argv := execArgv(cmd)
	sess, err := x.cn.client.NewSession()
	if err != nil {
		return nil, x.gone(err)
	}
	defer sess.Close()
	out, errc := remote.NativeOutput(cmd)
	pg := &pgidLine{w: out}
	var mu sync.Mutex // orders writes to a shared capture
	sess.Stdin = stdin
	sess.Stdout = lockedWriter{&mu, pg}
	sess.Stderr = lockedWriter{&mu, errc}
	start := time.Now()
	if err := sess.Start(shellCommand(argv...)); err != nil {
		return nil, x.gone(err)
	}
	st, stopped, err := remote.AwaitNative(ctx, cmd.Timeout, sess.Wait, func(envs.ExitStatus) {
		x.kill(pg.pgid())
		sess.Close()
	})
	res := &envs.Result{ExitStatus: st, Duration: time.Since(start)}
	if !stopped && err != nil {
		if res.ExitStatus, err = x.exitStatus(err); err != nil {
			return nil, err
		}
	}
	res.TakeOutput(out, errc)
	return res, nil
}

// execArgv is the remote argv: the wrapper and cmd, nothing else.
func execArgv(cmd envs.Command) []string {
	wrapper := execWrapper
	if !cmd.SeparateStreams {
		// One stream on the host keeps the order of stdout and stderr.
		wrapper = "exec 2>&1\n" + wrapper
	}
	argv := []string{"/bin/sh", "-c", wrapper, "runbox"}
	if cmd.Shell != "" {
		return append(argv, "shell", cmd.Shell)
	}
	return append(append(argv, "args"), cmd.Args...)
}

// input is what the session's stdin carries: the preamble's length and
// the preamble, then cmd's own input.
func (x *execEnv) input(cmd envs.Command) (io.Reader, error) {
	dir := x.dir
	if cmd.Dir != "" {
		dir = cmd.Dir
	}
	// The defaults every child gets (PAGER=cat, ...) and the caller's
	// variables, under the same policy as the agent's children; the host's
	// own environment is the login session's, which sshd set.
	sres, err := spawn.Build(spawn.Request{Overlay: cmd.Env, Policy: spawn.DefaultPolicy()})
	if err != nil {
		return nil, fmt.Errorf("ssh: child environment: %w", err)
	}
	env := make(map[string]string, len(sres.Env))
	for _, kv := range sres.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	pre := preamble(env, dir)
	var stdin io.Reader = strings.NewReader(strconv.Itoa(len(pre)) + "\n" + string(pre))
	if cmd.Stdin != nil {
		stdin = io.MultiReader(stdin, cmd.Stdin)
	}
	return stdin, nil
}

// exitStatus maps the error of a session that ended by itself to the
// command's status.
func (x *execEnv) exitStatus(err error) (envs.ExitStatus, error) {
	var ee *gossh.ExitError
	if !errors.As(err, &ee) {
		return envs.ExitStatus{}, x.gone(err)
	}
	if n := signalNumber(ee.Signal()); n > 0 {
		return envs.SignalStatus(syscall.Signal(n)), nil
	}
	return launch.ShellStatus(ee.ExitStatus()), nil // sh reports death by signal n as 128+n
}

// signalNumber maps the signal names sshd reports to numbers.
func signalNumber(name string) int {
	switch gossh.Signal(name) {
	case gossh.SIGHUP:
		return 1
	case gossh.SIGINT:
		return 2
	case gossh.SIGQUIT:
		return 3
	case gossh.SIGABRT:
		return 6
	case gossh.SIGKILL:
		return 9
	case gossh.SIGSEGV:
		return 11
	case gossh.SIGPIPE:
		return 13
	case gossh.SIGALRM:
		return 14
	case gossh.SIGTERM:
		return 15
	}
	return 0
}

// kill stops process group pg on the host: SIGTERM, then SIGKILL after
// the grace period.
func (x *execEnv) kill(pg int) {
	if pg <= 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.grace+10*time.Second)
	defer cancel()
	g := strconv.Itoa(pg)
	// dash's kill takes no "--"; a negative pid after the signal is a group.
	x.cn.output(ctx, script("kill -TERM -"+g+" 2>/dev/null || exit 0; i=0; while kill -0 -"+g+" 2>/dev/null && [ $i -lt "+steps(x.grace)+" ]; do sleep 0.1; i=$((i+1)); done; kill -KILL -"+g+" 2>/dev/null; exit 0"), nil)
}

// steps is the grace period in tenths of a second.
func steps(d time.Duration) string { return strconv.Itoa(int(d / (100 * time.Millisecond))) }

// gone marks err as the loss of the host when the connection is down, so
// the next command connects again.
func (x *execEnv) gone(err error) error {
	if cerr := x.cn.Err(); cerr != nil {
		return fmt.Errorf("%w: %w (%v)", remote.ErrGone, cerr, err)
	}
	return fmt.Errorf("ssh: session on %s: %w", x.cn.t, err)
}

// Capabilities says what a session per command gives and what it does not.
func (x *execEnv) Capabilities() envs.Capabilities {
	caps := x.Lacks()
	caps[envs.CapTreeKill] = envs.CapInfo{State: envs.Degraded, Detail: "session per command: its process group is killed; a setsid child escapes"}
	caps[envs.CapSignals] = envs.CapInfo{State: envs.Degraded, Detail: "kill of the process group through another session"}
	caps[envs.CapStdin] = envs.CapInfo{State: envs.Active, Detail: "session stdin"}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "cat through a session"}
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Unsupported, Detail: x.How + " fallback"}
	caps[envs.CapLimits] = envs.CapInfo{State: envs.Unsupported, Detail: x.How + " fallback"}
	return caps
}

// PutFile writes r to path through a session that copies its stdin there.
func (x *execEnv) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	q := shellCommand(path)
	put := fmt.Sprintf(`mkdir -p %[3]s && t=%[1]s.$$.tmp && cat >"$t" && chmod %[2]o "$t" && mv -f "$t" %[1]s || { rm -f "$t"; exit 1; }`, q, perm.Perm(), shellCommand(pathpkg.Dir(path)))
	if _, err := x.cn.output(ctx, script(put), r); err != nil {
		return fmt.Errorf("ssh: put %s: %w", path, err)
	}
	return nil
}

// GetFile reads path through a session that prints it.
func (x *execEnv) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	b, err := x.cn.output(ctx, shellCommand("cat", "--", path), nil)
	if err != nil {
		return nil, fmt.Errorf("ssh: get %s: %w", path, err)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// pgidLine takes the wrapper's first line (the process group) off the
// output and passes the rest on.
type pgidLine struct {
	w    io.Writer
	mu   sync.Mutex
	line []byte
	pg   int
	done bool
}

func (p *pgidLine) Write(b []byte) (int, error) {
	p.mu.Lock()
	n := len(b)
	if !p.done {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			p.mu.Unlock()
			return n, nil
		}
		p.line = append(p.line, b[:i]...)
		p.pg, _ = strconv.Atoi(string(p.line))
		p.done = true
		b = b[i+1:]
	}
	p.mu.Unlock()
	if len(b) == 0 {
		return n, nil
	}
	if _, err := p.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

func (p *pgidLine) pgid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pg
}

// lockedWriter serialises writes from the stdout and stderr copiers.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
