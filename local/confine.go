package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/gitguard"
	"github.com/runbox/runbox/statedir"
)

// sandbox is an environment's confinement: the policy every command starts
// under (nil when commands run unconfined), the private TMPDIR made for it,
// and, when the sandbox cannot be given, the error every command gets
// instead of running unconfined.
type sandbox struct {
	profile string
	policy  *confine.Policy
	tmpDir  string
	refusal error
	// threads confines pre-started shells from a thread of this process
	// (nil when there is no policy to enforce, or it is refused).
	threads *threadStarts
}

// newSandbox prepares the sandbox of Options.Confine (the default
// workspace profile at dir when it is nil): the policy made complete with
// the session's own directories (its state directory, which its shells
// write, and a private TMPDIR, which it exports through o.Env; the other
// sessions' TMPDIRs are denied).
// An invalid policy is an error; a sandbox this host cannot give is not:
// it becomes the refusal of every command.
func newSandbox(o *Options, dir, stateDir string) (sandbox, error) {
	p := defaultPolicy(o, dir)
	if err := p.Validate(); err != nil {
		return sandbox{}, fmt.Errorf("local: %w", err)
	}
	sb := sandbox{profile: p.Profile}
	if p.Profile == confine.ProfileOff {
		return sb, nil
	}
	// Every session's TMPDIR lies in one private directory of the user,
	// which is denied: a command reads and writes its own TMPDIR only,
	// never another session's.
	// In a /tmp shared with other users, the name may be taken first:
	// a link or a directory of theirs would put the sessions' TMPDIRs in
	// their hands. Only one of this user's own, closed to others, is used.
	parent := filepath.Join(os.TempDir(), fmt.Sprintf("runbox-tmp-%d", os.Getuid()))
	if err := os.Mkdir(parent, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return sandbox{}, fmt.Errorf("local: sandbox TMPDIR: %w", err)
	}
	if err := statedir.CheckClosedDir(parent); err != nil {
		return sandbox{}, fmt.Errorf("local: sandbox TMPDIR: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "session-*")
	if err != nil {
		return sandbox{}, fmt.Errorf("local: sandbox TMPDIR: %w", err)
	}
	sb.tmpDir = tmp
	p.Writable = append(slices.Clone(p.Writable), stateDir, tmp)
	p.DenyRead = append(slices.Clone(p.DenyRead), parent)
	sb.policy = &p
	o.Env = maps.Clone(o.Env)
	if o.Env == nil {
		o.Env = map[string]string{}
	}
	o.Env["TMPDIR"] = tmp
	for k, v := range p.Env {
		o.Env[k] = v // the workspace's own caches
	}
	// Best effort: a cache that cannot be made (no home of its own)
	// stays unwritable, and the tool says so when it needs it.
	confine.MakeCaches(p, homeOf(o), exec.LookPath)
	var missing error
	if len(o.Confiner) == 0 {
		// Found here, not attached by each caller: an environment
		// nobody wired a trampoline into is still confined.
		o.Confiner, missing = confine.Locate()
	}
	switch {
	case missing != nil:
		sb.refusal = fmt.Errorf("local: the %s sandbox cannot start (install %s beside this program, set Options.Confiner, or choose confine.Off() to run commands unconfined): %w: %w", p.Profile, confine.Trampoline, missing, envs.ErrUnsupported)
	default:
		if err := confine.Probe().Check(p); err != nil {
			sb.refusal = fmt.Errorf("local: %w", err)
		}
	}
	if sb.refusal == nil {
		sb.threads = &threadStarts{policy: p}
	}
	return sb, nil
}

// defaultPolicy is Options.Confine, or, when it is nil, the workspace
// profile at dir with the home directory's secrets denied: an environment
// is confined unless someone chose confine.Off().
func defaultPolicy(o *Options, dir string) confine.Policy {
	if o.Confine != nil {
		return *o.Confine
	}
	home := homeOf(o)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, dir, home)
	if p.Workspace == "/" {
		// At the root there is no workspace to write: the command may
		// still write its TMPDIR.
		p = confine.DefaultPolicy(confine.ProfileReadOnly, dir, home)
	}
	return p
}

// confineCmd makes xc start its program through the trampoline, or
// refuses it when the sandbox cannot be given. The handover (nil when the
// policy has none to serve) is served once xc has started (Serve with its
// pid) or closed when it does not start: it lets the command reach the
// loopback servers it starts itself (see confine.Handover).
func (e *Env) confineCmd(xc *exec.Cmd) (*confine.Handover, error) {
	if e.sandbox.refusal != nil {
		return nil, e.sandbox.refusal
	}
	if e.sandbox.policy == nil {
		return nil, nil
	}
	argv, err := confine.Argv(e.opts.Confiner, *e.sandbox.policy, xc.Path, xc.Args)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	h, err := confine.NewHandover(*e.sandbox.policy)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if h != nil {
		h.Name(xc)
	}
	xc.Path, xc.Args = argv[0], argv
	return h, nil
}

// noteSandbox records in res the profile the command ran under and the
// violations: the connects the sandbox refused it (decided, exact), then
// what its output shows that they do not already say.
func (e *Env) noteSandbox(res *envs.Result, decided []envs.Violation) {
	res.Sandbox = e.sandbox.profile
	if e.sandbox.policy == nil {
		return
	}
	res.SandboxViolations = envs.MergeViolations(append(res.SandboxViolations, decided...), e.ExplainDenials(res.Output+"\n"+res.Stderr))
}

// guardGit makes inert what the command left in its workspace for the
// user's git to run later (see internal/gitguard), once nothing of the
// command runs any more: each finding is a decided violation and a
// warning saying where the original was kept.
// gitCheckTimeout bounds the git check after a command (a walk of a large
// workspace takes well under a second).
const gitCheckTimeout = time.Minute

// watchGit checks the workspace for git leftovers while the command runs
// (see guardGit and gitguard.Watch), so that a long command cannot keep
// them armed for the user's git meanwhile; a file planted again after it
// was made inert stops the command. stop ends the watch and returns its
// warnings.
func (p *process) watchGit() (stop func() []string) {
	pol := p.gitGuarded()
	if pol == nil {
		return func() []string { return nil }
	}
	var warnings []string
	end := gitguard.Watch(pol.Workspace, gitguard.Options{Since: p.started}, func(rep gitguard.Report, err error, again bool) {
		for _, v := range rep.Violations() {
			p.denials.set.Add(v)
		}
		warnings = append(warnings, rep.Warnings(err)...)
		if again {
			warnings = append(warnings, gitguard.NoteStopped)
			p.denials.set.Add(gitguard.StoppedViolation(pol.Workspace))
			p.cancel(errGitPlanted)
		}
	})
	return func() []string {
		end()
		return warnings
	}
}

// gitGuarded is the policy of a command whose workspace is checked for
// git leftovers (one it may write, whose leftovers are not kept), nil
// for any other.
func (p *process) gitGuarded() *confine.Policy {
	pol := p.env.sandbox.policy
	if pol == nil || pol.Profile != confine.ProfileWorkspace || p.env.opts.KeepLeftovers {
		return nil
	}
	return pol
}

// errGitPlanted ends a command that planted git leftovers again.
var errGitPlanted = errors.New("local: " + gitguard.NoteStopped)

func (p *process) guardGit() {
	pol := p.gitGuarded()
	if pol == nil {
		return
	}
	// Bounded: a background job may still swap a file for a fifo under
	// the check, and the git it runs would wait on it.
	ctx, cancel := context.WithTimeout(context.Background(), gitCheckTimeout)
	defer cancel()
	rep, err := gitguard.Check(ctx, pol.Workspace, gitguard.Options{Since: p.started, Tree: &p.env.gitTree})
	for _, v := range rep.Violations() {
		p.denials.set.Add(v)
	}
	p.warnings = append(p.warnings, rep.Warnings(err)...)
}

// ExplainDenials lists what the sandbox denied a command whose output
// (stdout and stderr, or their tail) is text: for front ends that stream
// a started command's output and want to say why it failed.
func (e *Env) ExplainDenials(text string) []envs.Violation {
	if e.sandbox.policy == nil {
		return nil
	}
	var out []envs.Violation
	for _, v := range confine.Explain(*e.sandbox.policy, text) {
		out = append(out, envs.Violation{Op: v.Op, Target: v.Target, Rule: v.Rule, Source: envs.SourcePrinted})
	}
	return out
}

// SandboxPolicy is the policy the environment's commands start under, its
// private TMPDIR included (nil when they run unconfined).
func (e *Env) SandboxPolicy() *confine.Policy {
	if e.sandbox.policy == nil {
		return nil
	}
	p := *e.sandbox.policy
	return &p
}

// homeOf is HOME of the environment's commands ("" when unset).
func homeOf(o *Options) string {
	var home string
	for _, kv := range o.BaseEnv {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}
