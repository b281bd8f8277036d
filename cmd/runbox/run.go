package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/seal"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/spawn"
)

type runOptions struct {
	placeFlags
	pty            bool
	json           bool
	outputLimit    int
	outputLimitSet bool          // --output-limit was given: it also bounds output to a pipe
	yield          time.Duration // > 0: runYield (run_yield.go)
	changes        bool          // record what the command changes, for runbox undo
	args           []string
}

func newRunCommand(a *app) *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:         "run [flags] -- COMMAND [ARG...]",
		Annotations: map[string]string{annotateOneCommand: "yes"},
		Short:       "Run a command and exit with its exit code",
		Long: `Run a command through the command gate and a backend, and exit with its status.

One argument is a shell string (run by the session's shell: "cd x && make");
several arguments are joined into one shell string with each word quoted, so
"runbox run -- ls -la 'my dir'" runs exactly that argv.

Output: shown as it comes. On a terminal it is bounded like --json output:
the first 40% of the output limit as it comes, then, when the command ends,
the rest if it fit, else one line saying how much was left out and which
file holds all of it, and the last 60%. Into a pipe or a file everything
passes, unless --output-limit is given.

With --pty and a terminal on stdin the command is interactive: runbox's
terminal becomes the command's (raw mode: every key goes to the command),
window-size changes follow, and the terminal is restored when runbox exits.

Input: a pipe or a file on stdin is the command's input, judged by the
command gate the way the command reads it: as commands by a shell with no
script (bash, sh -s), as inline code by an interpreter with no script
(python3, node), as statements by a database client (psql), and not at all
by a program that reads data (wc, jq, python3 script.py). Input that ends is
judged whole before the command starts: a refused line runs nothing, and
runbox exits 125 naming it. Input that pauses before its end is a stream:
it is passed on as it is judged, and the command is killed at the first
refused line (what passed before it, it got). A terminal's input is the
command's only with --pty; without it the command reads end-of-input at once.

With --json, every failure (refused by the gate, a refused stdin line, a
directory that cannot be entered, an unknown backend, a bad flag value, a
broken configuration) is printed as {"exit_code": N, "error": "..."} on
stdout.

Exit status: the command's own; 124 when --timeout expired; 130 when
interrupted; 126 when the directory cannot be entered; 127 when the command is
not found; 128+n when killed by signal n; 125 when runbox itself failed or the
command gate refused the command; 2 for bad flags or an empty command.`,
		Example: `  runbox run -- make test
  runbox run --timeout 30s --cwd /src -- 'go test ./... | tail -20'
  runbox run --json -- sh -c 'exit 3'
  runbox run --memory 256M --pids 64 -- ./build.sh
  echo '{"a": 1}' | runbox run -- jq .a`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.args = args
			opts.outputLimitSet = cmd.Flags().Changed("output-limit")
			return a.reportJSON(opts.json, runRun(cmd.Context(), a, &opts))
		},
	}
	f := cmd.Flags()
	opts.register(f, forRun)
	f.BoolVar(&opts.pty, "pty", false, "run on a pseudo-terminal")
	f.BoolVar(&opts.json, "json", false, "print the result as JSON instead of the output")
	f.IntVar(&opts.outputLimit, "output-limit", 0, "bytes of output kept with --json or shown on a terminal (default from config); given, it bounds a pipe too")
	f.BoolVar(&opts.changes, "changes", false, "record what the command changes in the workspace, so that runbox undo can put it back (default: workspace.changes, off)")
	f.DurationVar(&opts.yield, "yield", 0, "run as a background job and wait this long: a command still running then has its output so far shown, its job id on stderr, and runbox exits 75 (continue with runbox logs/wait ID)")
	return cmd
}

func runRun(ctx context.Context, a *app, opts *runOptions) error {
	shell := shellCommand(opts.args)
	if strings.TrimSpace(shell) == "" {
		return usageError{errorf("run: empty command; see --help")}
	}
	if opts.timeout < 0 {
		return usageError{errorf("--timeout %v: want a duration >= 0 (0: the configured default)", opts.timeout)}
	}
	if opts.outputLimit < 0 {
		return usageError{errorf("--output-limit %d: want a number of bytes > 0", opts.outputLimit)}
	}
	if opts.yield < 0 {
		return usageError{errorf("--yield %v: want a duration > 0", opts.yield)}
	}
	backend := cmp.Or(opts.backend, a.cfg.Backend)
	spec, err := opts.spec(a.svc.Limits())
	if err != nil {
		return err
	}
	env, err := a.envFlags(opts.env)
	if err != nil {
		return err
	}
	if opts.yield > 0 {
		return runYield(ctx, a, opts, shell, env, spec.Limits)
	}
	if err := a.checkTaskFlags(&opts.placeFlags, backend); err != nil {
		return err
	}
	state, remote := "", ""
	switch {
	case opts.sync != "":
		if state, err = a.checkedStateDir(); err != nil {
			return err
		}
		if spec, remote, err = a.svc.TaskPlace(backend, opts.task, state, opts.syncTo, spec); err != nil {
			return err
		}
	case opts.task != "":
		if spec.Settings == nil {
			spec.Settings = map[string]string{}
		}
		spec.Settings[service.SettingTask] = opts.task
	}

	timeout := opts.timeout
	if timeout == 0 {
		timeout = time.Duration(a.cfg.Timeout)
	}
	limit := firstPositive(opts.outputLimit, a.cfg.OutputLimit, envs.DefaultOutputLimit)
	c := envs.Command{Shell: shell, Env: env, Timeout: timeout, OutputLimit: limit}
	if opts.sync != "" && spec.Dir == "" {
		c.Dir = remote // see service.TaskPlace
	}
	if opts.pty {
		c.PTY = terminalSize(a.stdout)
	}
	if in := a.commandStdin(); in != nil {
		c.Stdin = in // judged the way the command reads it (service: gateStdin)
	}
	so := streamOptions{}
	if opts.pty {
		so.terminal = a.stdinTerminal()
	}
	r, err := a.openRunner(ctx, backend, spec, taskPush{state: state, remote: remote}, opts, so.terminal != nil)
	if err != nil {
		return err
	}
	defer r.close(context.WithoutCancel(ctx))
	if opts.json {
		return runJSON(ctx, a, r, c)
	}
	// A terminal shows a window of the output (an interactive session
	// shows all of it: it is a conversation); a pipe gets every byte,
	// unless --output-limit says otherwise.
	if opts.outputLimitSet || isTerminal(a.stdout) && so.terminal == nil {
		so.outLimit = limit
	}
	if opts.outputLimitSet || isTerminal(a.stderr) && so.terminal == nil {
		so.errLimit = limit
	}
	err = runStreamingWith(ctx, a, r, c, so)
	if (err == nil || isQuiet(err)) && !opts.pty && a.stdinTerminal() != nil && readsInput(opts.args) {
		fmt.Fprintf(a.stderr, "runbox: %s read end-of-input at once: a command gets the terminal's input only with --pty (runbox run --pty -- %s)\n", opts.args[0], opts.args[0])
	}
	return err
}

// readsInput reports whether args run an interactive program (a shell, an
// interpreter, a database client) with nothing to do but read its input:
// without --pty it gets none from a terminal, and ends at once.
func readsInput(args []string) bool {
	words := args
	if len(args) == 1 {
		words = strings.Fields(args[0])
	}
	if len(words) != 1 {
		return false
	}
	switch filepath.Base(words[0]) {
	case "python", "python3", "ipython", "ipython3", "node", "bash", "sh", "dash", "zsh", "fish",
		"irb", "ruby", "perl", "php", "lua", "R", "julia", "ghci", "psql", "mysql", "sqlite3", "redis-cli":
		return true
	}
	return false
}

// runner is the one session a runbox run command goes through: the
// service admits the command (its shape, the gate, its stdin line by
// line) and opens the environment; the CLI only shows what happens.
type runner struct {
	ss *service.Session
	// denials explains, from the end of the output, what the sandbox
	// denied; set once the environment is open.
	denials func(output string) []envs.Violation
	// doneAsking stops the terminal prompter (see openAsker).
	doneAsking func()
}

// openRunner makes the session of a runbox run command. On a terminal
// the user is asked for as long as the command runs: about the command,
// its piped input, and the hosts its sandbox's egress proxy asks about.
// An interactive --pty command (terminalInput) has the terminal to
// itself once its environment opens: the prompter lets go of it then,
// and what the proxy would ask is refused, saying so.
func (a *app) openRunner(ctx context.Context, backend string, spec envs.Spec, push taskPush, opts *runOptions, terminalInput bool) (*runner, error) {
	asker, answers, doneAsking := a.openAsker()
	r := &runner{doneAsking: doneAsking, denials: func(string) []envs.Violation { return nil }}
	prepare := func(ctx context.Context, env envs.Environment) error {
		if terminalInput {
			doneAsking()
		}
		a.reportSaved(answers)
		r.denials = service.WatchViolations(env)
		if opts.sync != "" {
			return a.pushWorkspace(ctx, env, backend, spec, push, opts)
		}
		return nil
	}
	ss, err := a.svc.NewSession(service.SessionOptions{
		ID: "cli", Backend: backend, Spec: spec, Asker: asker,
		Dir: hostDir(spec.Dir), Prepare: prepare, TerminalInput: terminalInput,
		RecordChanges: a.cfg.Workspace.ChangesOn(false) || opts.changes, ChangesAsked: opts.changes,
	})
	if err != nil {
		doneAsking()
		return nil, err
	}
	r.ss = ss
	return r, nil
}

func (r *runner) close(ctx context.Context) {
	r.doneAsking()
	r.ss.Close(ctx)
}

// reportJSON returns err, first printed as one JSON object on stdout when
// the command was asked for --json (and err is not one already reported):
// a caller that reads that stdout would otherwise get nothing at all.
func (a *app) reportJSON(asJSON bool, err error) error {
	if asJSON && err != nil && !isQuiet(err) {
		writeJSONError(a.stdout, err)
		a.jsonReported = true
	}
	return err
}

// writeJSONError prints err for a caller that reads run --json's stdout,
// which would otherwise get nothing at all.
func writeJSONError(w io.Writer, err error) {
	e := service.EncodeError(err, exitCode(err))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(e)
}

// shellCommand turns the arguments into one shell string: a single
// argument is taken as shell code, several are quoted word by word.
func shellCommand(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return service.CommandLine(envs.Command{Args: args})
}

// commandStdin passes runbox's stdin to the command when it is a pipe or a
// file; a terminal is not passed (the command gets /dev/null), so nothing
// waits for keyboard input that an agent cannot give.
func (a *app) commandStdin() io.Reader {
	if f, ok := a.stdin.(*os.File); ok {
		if f == nil || term.IsTerminal(int(f.Fd())) {
			return nil
		}
		if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == os.ModeCharDevice {
			return nil
		}
	}
	return a.stdin
}

func terminalSize(w io.Writer) *envs.WindowSize {
	if f, ok := w.(*os.File); ok {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil {
			return &envs.WindowSize{Rows: uint16(rows), Cols: uint16(cols)}
		}
	}
	return &envs.WindowSize{Rows: 24, Cols: 80}
}

func runJSON(ctx context.Context, a *app, r *runner, c envs.Command) error {
	res, err := r.ss.Run(ctx, c)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(service.EncodeResult(res)); err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return quietError{err}
	}
	return nil
}

// streamOptions says how a streamed command's output is shown.
type streamOptions struct {
	// outLimit and errLimit bound what is shown of stdout and stderr to
	// a window of that many bytes (see outputWindow); 0 shows everything.
	outLimit, errLimit int
	// terminal, when set, is lent to the command (see terminalSession):
	// c must have a PTY and no Stdin.
	terminal *os.File
}

// runStreamingWith shows the output as it comes, stdout to stdout and
// stderr to stderr, bounded as so says, and kills the tree if runbox is
// interrupted.
func runStreamingWith(ctx context.Context, a *app, r *runner, c envs.Command, so streamOptions) error {
	c.SeparateStreams = c.PTY == nil
	adm, err := r.ss.Admit(ctx, c)
	if err != nil {
		return err
	}
	st, err := stream(ctx, a, r, adm, c, so)
	if errors.Is(err, envs.ErrUnsupported) {
		// A backend without streaming (the docker exec fallback) still
		// runs the command, admitted once; its output comes when it
		// ends.
		return runCollected(ctx, a, adm, c, so)
	}
	if err != nil {
		return err
	}
	reportEnd(a, c, st)
	if err := st.Err(); err != nil {
		return quietError{err}
	}
	return nil
}

// stream starts c, copies its output to runbox's stdout and stderr as it
// comes, and kills its tree if runbox is interrupted (the status is then
// 130, or 128+n for the signal runbox received).
func stream(ctx context.Context, a *app, r *runner, adm *service.Admitted, c envs.Command, so streamOptions) (envs.ExitStatus, error) {
	var ts *terminalSession
	if so.terminal != nil && c.PTY != nil {
		var err error
		if ts, err = openTerminal(so.terminal); err != nil {
			return envs.ExitStatus{}, err
		}
		defer ts.close()
		c.PTY = ts.size()
	}
	p, err := adm.Start(ctx, func(ac *envs.Command) { ac.PTY = c.PTY })
	if err != nil {
		return envs.ExitStatus{}, err
	}
	// The ends of both streams, to say afterwards what the sandbox denied.
	outTail, errTail := envs.NewTail(denialTail), envs.NewTail(denialTail)
	out, finishOut := bounded(a.stdout, so.outLimit)
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(io.MultiWriter(out, outTail), p.Output()) })
	finishErr := func() {}
	if r := p.Stderr(); r != nil {
		var errw io.Writer
		errw, finishErr = bounded(a.stderr, so.errLimit)
		wg.Go(func() { io.Copy(io.MultiWriter(errw, errTail), r) })
	}
	defer func() {
		var decided []envs.Violation
		if d, ok := p.(envs.Denier); ok {
			decided = d.SandboxDenials()
		}
		reportDenials(a, envs.MergeViolations(decided, r.denials(outTail.String()+"\n"+errTail.String())))
	}()
	if ts != nil {
		ts.attach(p, a.signals)
	} else if w := p.Stdin(); w != nil {
		w.Close() // no input: the command reads EOF, never a terminal
	}
	stop := context.AfterFunc(ctx, func() { p.Kill(context.Background()) })
	defer stop()
	st, err := p.Wait(context.WithoutCancel(ctx))
	wg.Wait()
	if cr, ok := p.(changeReporter); ok {
		reportChanges(a, cr.Changes(), cr.ChangeWarnings())
	}
	if ts != nil {
		if rerr := ts.close(); rerr != nil && err == nil {
			err = rerr
		}
	}
	finishOut()
	finishErr()
	if err != nil {
		return st, err
	}
	if ctx.Err() != nil {
		st, _ = envs.StatusFromContext(ctx)
		var se signalError
		if errors.As(context.Cause(ctx), &se) {
			st.Code = 128 + int(se.sig) // as a shell reports a signal it got
		}
	}
	return st, nil
}

// denialTail is how much of the end of each stream is searched for what
// the sandbox denied a streamed command.
const denialTail = 64 << 10

// reportDenials prints one line per access the sandbox denied, then how
// to allow the writes among them.
func reportDenials(a *app, vs []envs.Violation) {
	for _, v := range vs {
		fmt.Fprintf(a.stderr, "runbox: sandbox denied %s %s (%s)\n", v.Op, v.Target, v.Rule)
	}
	if h := service.SandboxHint(vs); h != "" {
		fmt.Fprintf(a.stderr, "runbox: %s\n", h)
	}
}

// reportEnd tells the user why a command ended, when runbox ended it.
func reportEnd(a *app, c envs.Command, st envs.ExitStatus) {
	switch {
	case st.TimedOut:
		fmt.Fprintf(a.stderr, "runbox: command timed out after %v; its process tree was killed\n", c.Timeout)
	case st.KilledBy == envs.KilledByMemoryLimit:
		fmt.Fprintf(a.stderr, "runbox: command killed by the memory limit\n")
	case st.KilledBy == envs.KilledByPidsLimit:
		fmt.Fprintf(a.stderr, "runbox: command failed at the pids limit: the kernel refused it more tasks (runbox exits %d)\n", exitPidsLimit)
	}
	if n := st.LeftoverKilled; n > 0 {
		fmt.Fprintf(a.stderr, "runbox: the command left %d background process(es) running; they were killed with it (use runbox start for work that should outlive a command)\n", n)
	}
}

// runCollected runs c to completion and then prints its output, bounded
// as so says (everything, when it sets no limit).
func runCollected(ctx context.Context, a *app, adm *service.Admitted, c envs.Command, so streamOptions) error {
	c.OutputLimit = -1 // unbounded
	if so.outLimit > 0 && so.outLimit == so.errLimit {
		c.OutputLimit = so.outLimit
	}
	res, err := adm.Run(ctx, func(ac *envs.Command) { ac.OutputLimit = c.OutputLimit })
	if err != nil {
		return err
	}
	io.WriteString(a.stdout, res.Output)
	io.WriteString(a.stderr, res.Stderr)
	reportDenials(a, res.SandboxViolations)
	reportChanges(a, res.Changes, nil)
	reportEnd(a, c, res.ExitStatus)
	if err := res.Err(); err != nil {
		return quietError{err}
	}
	return nil
}

func firstPositive(n ...int) int {
	for _, v := range n {
		if v > 0 {
			return v
		}
	}
	return 0
}

// envFlags turns repeated --env flags into the command's variables.
// KEY=VALUE sets KEY; the value is copied and then overwritten in this
// process's argument memory (seal.HideEnvArgs), so /proc/PID/cmdline of
// a running `runbox run` does not show it. A bare KEY hands KEY over from
// runbox's own environment on purpose (as spawn.ForcePrefix+KEY: even a
// name the policy blocks, never an always-strip one), so a secret need
// never be on a command line at all; a KEY that is not set is an error.
func (a *app) envFlags(flags []string) (map[string]string, error) {
	env := map[string]string{}
	given := map[string]string{}
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if k == "" {
			return nil, usageError{errorf("--env %q: want KEY=VALUE or KEY", kv)}
		}
		if ok {
			k, v = strings.Clone(k), strings.Clone(v)
			env[k], given[k] = v, v
			continue
		}
		val := a.getenv(k)
		if val == "" {
			return nil, usageError{errorf("--env %s: %s is not set in runbox's environment", k, k)}
		}
		env[spawn.ForcePrefix+strings.Clone(k)] = val
	}
	if err := seal.HideEnvArgs(given); err != nil && len(given) > 0 {
		fmt.Fprintf(a.stderr, "runbox: warning: --env values stay visible in runbox's command line (%v); use --env KEY to hand a variable over from the environment\n", err)
	}
	a.warnWithheld(given) // a bare KEY is handed over on purpose
	return env, nil
}
