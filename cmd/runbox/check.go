package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/syntax"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// Exit statuses of runbox check without --jsonl.
const (
	checkAllow = 0 // the command would run
	checkAsk   = 1 // the command would need approval
	checkDeny  = 3 // the command would be refused (2 is a usage error)
)

type checkOptions struct {
	jsonl bool
	// sandbox is the --sandbox profile; "" judges as runbox always has,
	// without a sandbox, and leaves the output as it was.
	sandbox string
	// workspace is the workspace root under --sandbox; "" is the current
	// directory.
	workspace string
	// parseOnly makes --jsonl parse each command and judge nothing: the
	// baseline runbox bench measures the gate against.
	parseOnly bool
}

func newCheckCommand(a *app) *cobra.Command {
	var opts checkOptions
	cmd := &cobra.Command{
		Use:   "check [--jsonl] [--sandbox PROFILE [--workspace DIR]] [COMMAND...]",
		Short: "Show what the command gate decides about a command, without running it",
		Long: `check shows what the command gate decides about a shell command: allow, ask
(a human must approve it first) or deny, whether the denial is hardline (nothing
can allow it), and the reasons. Nothing is run.

With COMMAND, the decision is the one runbox run acts on for the same
arguments and configuration (mode, allow and deny lists, saved approvals,
--yolo, the backend and its sandbox), for an interactive session: one
argument is a shell line, several are an argv quoted word by word, as run
quotes them. A "sandbox:" line names the sandbox judged under. The exit
status is 0 for allow, 1 for ask and 3 for deny.

With --jsonl, check reads one JSON string per line from standard input (a
command, which may contain newlines) and writes one JSON object per line:
  {"command": "...", "decision": "allow"|"ask"|"deny", "hardline": false, "reasons": []}
using the default policy (interactive session, local backend, no allow lists,
runbox's own files protected, commands run in the current directory),
whatever the configuration says. The exit status is 0 unless the input is bad.

With --sandbox workspace, read-only or off, the decision is the one the gate
gives a command that runs under that sandbox profile, started in --workspace (by
default the current directory; the workspace the sandbox lets it write is the git
root above it, if any): under workspace, deleting or overwriting files inside the
workspace no longer asks, and what the kernel would refuse (writes outside the
workspace, reading credentials) is denied with the sandbox named in the reason.
--jsonl objects gain a "sandbox" field; without --sandbox they judge with no
sandbox, as they always have.`,
		Example: `  runbox check -- rm -rf /
  runbox check 'curl https://example.com/install.sh | sh'
  printf '%s\n' '"ls -la"' '"git push --force"' | runbox check --jsonl
  runbox check --sandbox workspace -- rm -rf node_modules build
  printf '%s\n' '"git clean -fdx"' | runbox check --jsonl --sandbox workspace --workspace ~/src/app`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.Context(), a, &opts, args)
		},
	}
	// Everything after the first operand belongs to the command checked:
	// runbox check rm -rf / is the same as runbox check -- rm -rf /.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().BoolVar(&opts.jsonl, "jsonl", false, "read JSON strings from stdin and write one JSON verdict per line (default policy)")
	cmd.Flags().BoolVar(&opts.parseOnly, "parse-only", false, "with --jsonl, only parse each command as bash (a baseline for runbox bench)")
	cmd.Flags().MarkHidden("parse-only")
	cmd.Flags().StringVar(&opts.sandbox, "sandbox", "", "judge as under this sandbox profile: workspace, read-only or off")
	cmd.Flags().StringVar(&opts.workspace, "workspace", "", "with --sandbox, the directory commands start in; the workspace is the git root above it (default: the current directory)")
	return cmd
}

// checkSandbox returns the sandbox --sandbox and --workspace describe,
// the directory commands are judged in, and the workspace the sandbox
// lets them write (the git root above that directory, if any); a zero
// Sandbox without --sandbox. The lists are those of the profile's
// documented default policy ([confine.DefaultPolicy]) and runbox's own
// files; a session's private TMPDIR is not known here, so paths under it
// are judged as paths the gate cannot resolve.
func checkSandbox(a *app, opts *checkOptions) (sb approval.Sandbox, dir, workspace string, err error) {
	if opts.sandbox == "" {
		if opts.workspace != "" {
			return sb, "", "", usageError{errorf("check: --workspace goes with --sandbox")}
		}
		return sb, "", "", nil
	}
	profile, err := approval.ParseSandboxProfile(opts.sandbox)
	if err != nil {
		return sb, "", "", usageError{errorf("check: %v", err)}
	}
	dir = opts.workspace
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return sb, "", "", errorf("check: finding the current directory: %v", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return sb, "", "", errorf("check: workspace %q: %v", opts.workspace, err)
	}
	if profile == approval.SandboxOff {
		return approval.Sandbox{Profile: profile}, dir, dir, nil
	}
	p := confine.DefaultPolicy(string(profile), dir, a.getenv("HOME"))
	sb = approval.Sandbox{Profile: profile, Unreadable: slices.Clone(p.DenyRead), Network: p.Network}
	if profile == approval.SandboxWorkspace {
		sb.Writable = append(sb.Writable, p.Workspace)
	}
	sb.Writable = append(sb.Writable, p.Writable...)
	for _, pp := range approval.DefaultProtection(a.getenv).Paths {
		if filepath.IsAbs(pp.Path) {
			sb.Unreadable = append(sb.Unreadable, pp.Path)
		}
	}
	return sb, dir, p.Workspace, nil
}

func runCheck(ctx context.Context, a *app, opts *checkOptions, args []string) error {
	sb, sbDir, workspace, err := checkSandbox(a, opts)
	if err != nil {
		return err
	}
	if opts.jsonl {
		if len(args) > 0 {
			return usageError{errorf("check: --jsonl reads commands from stdin; give no COMMAND")}
		}
		if opts.parseOnly {
			return parseJSONL(a.stdin, a.stdout)
		}
		// The default policy includes runbox's own protected paths: a
		// batch of commands is judged as runbox would judge each.
		gate, err := approval.New(approval.Options{Protect: approval.DefaultProtection(a.getenv)})
		if err != nil {
			return err
		}
		dir, _ := os.Getwd()
		if sb.Profile != "" {
			dir = sbDir
		}
		return checkJSONL(ctx, gate, approval.Request{Backend: "local", Dir: dir, Sandbox: sb}, a.stdin, a.stdout)
	}
	if opts.parseOnly {
		return usageError{errorf("check: --parse-only goes with --jsonl")}
	}
	if len(args) == 0 {
		return usageError{errorf("check: want a COMMAND (or --jsonl); see --help")}
	}
	// The command is the one run would judge: one argument is a shell
	// line, several are an argv, quoted.
	command := shellCommand(args)
	var v approval.Verdict
	if sb.Profile != "" {
		v = a.svc.Gate().Check(ctx, approval.Request{Command: command, Backend: "local", SessionKey: "cli", Dir: sbDir, Sandbox: sb})
	} else {
		// As runbox run judges it: the configured backend, its sandbox
		// (the default profile, or sandbox.profile, or --sandbox before
		// check), from the current directory.
		backend, spec := a.cfg.Backend, envs.Spec{}
		sb = a.svc.GateSandbox(backend, spec)
		v = a.svc.Check(ctx, service.Authorization{Command: command, Backend: backend, HostAccess: a.svc.HostAccess(ctx, backend, spec),
			SessionKey: "cli", Dir: hostDir(spec.Dir), Sandbox: sb})
		if sb.Profile == approval.SandboxWorkspace && len(sb.Writable) > 0 {
			workspace = sb.Writable[0] // the workspace root comes first
		}
	}
	writeVerdict(a.stdout, command, v)
	switch sb.Profile {
	case approval.SandboxWorkspace:
		fmt.Fprintf(a.stdout, "sandbox:  %s (workspace %s)\n", sb.Profile, workspace)
	case approval.SandboxReadOnly, approval.SandboxOff:
		fmt.Fprintf(a.stdout, "sandbox:  %s\n", sb.Profile)
	}
	switch v.Decision {
	case approval.Allow:
		return nil
	case approval.Ask:
		return quietError{&envs.ExitError{Code: checkAsk}}
	}
	return quietError{&envs.ExitError{Code: checkDeny}}
}

// writeVerdict prints a verdict for a person.
func writeVerdict(w io.Writer, command string, v approval.Verdict) {
	fmt.Fprintf(w, "command:  %s\n", command)
	fmt.Fprintf(w, "decision: %s\n", v.Decision)
	fmt.Fprintf(w, "hardline: %t\n", v.Hardline)
	if len(v.Reasons) > 0 {
		fmt.Fprintln(w, "reasons:")
		for _, r := range v.Reasons {
			fmt.Fprintf(w, "  - %s\n", r)
		}
	}
	if len(v.Rules) > 0 {
		fmt.Fprintf(w, "rules:    %s\n", strings.Join(v.Rules, ", "))
	}
	if v.Hint != "" {
		fmt.Fprintf(w, "hint:     %s\n", v.Hint)
	}
}

// checkLine is one line of check --jsonl output; the field names are a
// stable interface (DESIGN.md).
type checkLine struct {
	Command  string            `json:"command"`
	Decision approval.Decision `json:"decision"`
	Hardline bool              `json:"hardline"`
	Reasons  []string          `json:"reasons"`
	// Sandbox is the --sandbox profile judged under, absent without it.
	Sandbox approval.SandboxProfile `json:"sandbox,omitempty"`
}

// maxJSONLLine bounds one input line; the gate itself asks about commands
// over its own, smaller bound.
const maxJSONLLine = 4 << 20

// checkJSONL judges each JSON string read from in, as req's command, and
// writes one object per line to out. Blank lines are skipped; a line that
// is not a JSON string stops the run with an error naming it, after the
// lines before it were answered.
func checkJSONL(ctx context.Context, gate *approval.Gate, req approval.Request, in io.Reader, out io.Writer) error {
	return answerJSONL(in, out, func() func(string) any {
		req := req // each worker's own
		return func(command string) any {
			req.Command = command
			v := gate.Check(ctx, req)
			return checkLine{Command: command, Decision: v.Decision, Hardline: v.Hardline, Reasons: v.Reasons, Sandbox: req.Sandbox.Profile}
		}
	})
}

// answerJSONL reads one JSON string per line from in and writes, in the
// same order, one line of JSON for each to out: the value an answer
// function gives it (see checkJSONL). newAnswer makes one function for
// each worker: the lines one read of in brought are answered by as many
// workers as there are CPUs, each taking its share in order.
func answerJSONL(in io.Reader, out io.Writer, newAnswer func() func(command string) any) error {
	lessGC(jsonlGCPercent)
	b := &jsonlBatch{w: bufio.NewWriter(out), newAnswer: newAnswer}
	sc := bufio.NewScanner(flushingReader{in, b})
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var command string
		if err := json.Unmarshal(line, &command); err != nil {
			b.flush()
			return usageError{errorf("check: stdin line %d: want a JSON string: %v", n, err)}
		}
		b.pending = append(b.pending, command)
	}
	if err := sc.Err(); err != nil {
		b.flush()
		return errorf("check: reading stdin: %v", err)
	}
	if err := b.flush(); err != nil {
		return errorf("check: %v", err)
	}
	return nil
}

// jsonlGCPercent is the garbage collector's target for a run of check
// --jsonl. What a batch keeps (the patterns and automata the gate builds as
// it first meets them) is small, and most of what it allocates is garbage
// at once, so collecting at the default target costs a run about a sixth
// of its time (measured over the bench corpus) for little memory.
const jsonlGCPercent = 400

// lessGC raises the garbage collector's target to percent, unless GOGC
// in the environment says what the user wants.
func lessGC(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}

// minParallelLines is the fewest lines answered by more than one worker:
// below it, starting them costs more than they save.
const minParallelLines = 64

// jsonlBatch holds the lines read and not yet answered, and answers
// them all before check --jsonl reads again (flushingReader).
type jsonlBatch struct {
	w         *bufio.Writer
	newAnswer func() func(string) any
	answers   []func(string) any // one per worker, made when first needed
	outs      []bytes.Buffer     // each worker's answers, in order
	pending   []string
}

// flush answers the pending lines, writes the answers in order and
// flushes them.
func (b *jsonlBatch) flush() error {
	if len(b.pending) > 0 {
		workers := 1
		if len(b.pending) >= minParallelLines {
			workers = runtime.GOMAXPROCS(0)
		}
		for len(b.answers) < workers {
			b.answers = append(b.answers, b.newAnswer())
			b.outs = append(b.outs, bytes.Buffer{})
		}
		share := (len(b.pending) + workers - 1) / workers
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i := range workers {
			lines := b.pending[min(i*share, len(b.pending)):min((i+1)*share, len(b.pending))]
			wg.Go(func() { errs[i] = answerLines(&b.outs[i], b.answers[i], lines) })
		}
		wg.Wait()
		b.pending = b.pending[:0]
		for i := range workers {
			if errs[i] != nil {
				return errs[i]
			}
			if _, err := b.outs[i].WriteTo(b.w); err != nil {
				return err
			}
		}
	}
	return b.w.Flush()
}

// answerLines appends to out one line of JSON for each command: answer's
// value.
func answerLines(out *bytes.Buffer, answer func(string) any, commands []string) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for _, c := range commands {
		if err := enc.Encode(answer(c)); err != nil {
			return err
		}
	}
	return nil
}

// flushingReader answers and writes every line read so far before each
// read of r. A scanner reads only when it has handed out every line it
// holds, so every answer is written before check --jsonl waits for more
// input: a caller may write one line and wait for its answer before
// writing the next, while a batch already written is answered in large
// writes rather than one per line.
type flushingReader struct {
	r io.Reader
	b *jsonlBatch
}

func (f flushingReader) Read(p []byte) (int, error) {
	if err := f.b.flush(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

// parsedLine is one line of check --jsonl --parse-only output.
type parsedLine struct {
	Command string `json:"command"`
	Parsed  bool   `json:"parsed"`
}

// parseJSONL is checkJSONL with the gate replaced by the shell parser
// alone, reading and writing the same way: runbox bench measures the
// gate end to end against it.
func parseJSONL(in io.Reader, out io.Writer) error {
	return answerJSONL(in, out, func() func(string) any {
		parser := syntax.NewParser(syntax.Variant(syntax.LangBash)) // each worker's own
		return func(command string) any {
			_, err := parser.Parse(strings.NewReader(command), "")
			return parsedLine{Command: command, Parsed: err == nil}
		}
	})
}
