package approval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"github.com/runbox/runbox/approval/internal/walk"
)

// Mode says how the gate treats dangerous commands.
type Mode int

const (
	// ModeManual asks a human before a dangerous command runs. It is the
	// zero value.
	ModeManual Mode = iota
	// ModeOff lets dangerous commands run without asking. Hardline and
	// forbidden rules and the user's deny list still hold.
	ModeOff
)

// String returns "manual" or "off".
func (m Mode) String() string {
	switch m {
	case ModeManual:
		return "manual"
	case ModeOff:
		return "off"
	}
	return "invalid"
}

// ParseMode parses "manual" or "off"; the empty string is ModeManual.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "manual":
		return ModeManual, nil
	case "off":
		return ModeOff, nil
	}
	return 0, fmt.Errorf("approval: unknown mode %q (want manual or off)", s)
}

// DefaultMaxCommandBytes bounds the input the gate analyses when
// [Options.MaxCommandBytes] is zero.
const DefaultMaxCommandBytes = 64 << 10

// Options configure a [Gate]. They are copied by [New]; later changes to
// the slices have no effect.
type Options struct {
	// Mode is ModeManual when zero: dangerous commands ask.
	Mode Mode
	// Yolo lets every dangerous command run without asking. Hardline and
	// forbidden rules and Deny entries still hold. It can only be set here,
	// when the gate is built; no command or request turns it on.
	Yolo bool
	// Allow lists commands that run without asking: rule ids (the rule no
	// longer asks) or globs ("*" any text, "?" one character, "\" quotes
	// the next) matched against the whole command, a simple command in it,
	// or the resolved command ("rm -rf build" for "/bin/rm -rf build").
	// No entry can allow a hardline rule; naming one is an error. Nil
	// allows nothing.
	Allow []string
	// Deny lists commands that are denied without asking: rule ids or
	// globs, matched like Allow. Deny wins over Allow. Nil denies nothing
	// beyond the rules.
	Deny []string
	// ConfigFile is a YAML file whose approval.allow list is read at New
	// and to which "always" approvals are added (see [Gate.Persist]). The
	// empty string means no file: "always" approvals last for the Gate's
	// lifetime only. A missing file is created on the first write.
	ConfigFile string
	// RelaxSandboxed lets dangerous commands run without asking when the
	// request comes from a backend without host access
	// ([Request.Sandboxed]). Hardline, forbidden and deny still hold.
	// False (the zero value) asks in sandboxes too.
	RelaxSandboxed bool
	// MaxCommandBytes bounds the size of a command the gate analyses;
	// larger commands ask. Zero means [DefaultMaxCommandBytes].
	MaxCommandBytes int
	// Protect lists files and directories that commands must not change
	// (see [Protection]); runbox's own come from [DefaultProtection].
	// ConfigFile, which holds the saved approvals, is protected as
	// policy whatever Protect says. The zero value protects nothing else.
	Protect Protection
}

// Request is one command to judge.
type Request struct {
	// Command is the shell command line, as the backend would run it.
	Command string
	// SessionKey scopes "session" approvals; requests with the same key
	// share them. The empty string is one session like any other.
	SessionKey string
	// Backend names the backend that would run the command ("local",
	// "docker" …); it is shown in prompts.
	Backend string
	// Sandboxed is true when the backend has no access to the host (a
	// container or remote sandbox). False, the zero value, assumes host
	// access. See [Options.RelaxSandboxed].
	Sandboxed bool
	// Unattended is true when no human is present to answer a prompt
	// (a webhook, a scheduled job). Commands that would ask are denied,
	// with a hint that says how to allow them.
	Unattended bool
	// Dir is the absolute directory the command starts in, used to
	// resolve the relative paths it writes against the protected paths
	// ([Options].Protect). The empty string means unknown: a relative
	// path is then judged by its tail alone, so "config.yaml" is not
	// known to be a protected file while "runbox/config.yaml" asks.
	Dir string
	// Sandbox is the kernel confinement the command will run under; see
	// [Sandbox]. The zero value is none: the verdict ignores it.
	Sandbox Sandbox
	// Input, when its Kind is not InputData, says Command is not a
	// command line but text piped to the standard input of the program
	// Input names, which reads it as Input.Kind says ([Gate.Input]; the
	// command itself was judged before): a shell's commands are judged as
	// commands, an interpreter's program as inline code of its language
	// (which a confining sandbox lets run, see [Sandbox]), a client's
	// statements as the statements it runs. The zero value: Command is a
	// command line.
	Input Input
}

// Gate decides whether commands may run. It is safe for concurrent use.
// A Gate never runs anything itself.
type Gate struct {
	opts  Options
	table []*rules.Compiled
	index *rules.Index
	// fullScan tests every command against every rule, bypassing the
	// index; only tests set it, to hold the index to the full scan.
	fullScan bool
	// analyzers keeps analyzers, with their parsers and buffers, between
	// checks: they cost more to make than a short command costs to judge.
	analyzers sync.Pool
	allow     []entry // Options.Allow and the config file's approval.allow
	deny      []entry
	maxSize   int
	protect   *walk.Protector // nil when nothing is protected

	mu       sync.Mutex
	sessions map[string]map[string]bool // session key → approved rule ids
	saved    []entry                    // "always" approvals of this Gate
}

// entry is one allow or deny list item: a rule id or a command glob.
type entry struct {
	rule string
	glob string
}

// New builds a Gate. It fails on a bad option, an allow entry that names
// a hardline rule, or an unreadable config file.
func New(opts Options) (*Gate, error) {
	table, err := rules.Table()
	if err != nil {
		return nil, err
	}
	index, err := rules.TableIndex()
	if err != nil {
		return nil, err
	}
	if opts.Mode != ModeManual && opts.Mode != ModeOff {
		return nil, fmt.Errorf("approval: invalid mode %d", int(opts.Mode))
	}
	if opts.MaxCommandBytes < 0 {
		return nil, fmt.Errorf("approval: negative MaxCommandBytes")
	}
	protect, err := compileProtection(opts.Protect, opts.ConfigFile)
	if err != nil {
		return nil, err
	}
	g := &Gate{
		opts:     opts,
		table:    table,
		index:    index,
		maxSize:  opts.MaxCommandBytes,
		protect:  protect,
		sessions: make(map[string]map[string]bool),
	}
	g.opts.Allow = slices.Clone(opts.Allow)
	g.opts.Deny = slices.Clone(opts.Deny)
	if g.maxSize == 0 {
		g.maxSize = DefaultMaxCommandBytes
	}
	allow := slices.Clone(opts.Allow)
	if opts.ConfigFile != "" {
		saved, err := readAllowList(opts.ConfigFile)
		if err != nil {
			return nil, err
		}
		allow = append(allow, saved...)
	}
	if g.allow, err = g.entries(allow, true); err != nil {
		return nil, err
	}
	if g.deny, err = g.entries(opts.Deny, false); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Gate) entries(list []string, allow bool) ([]entry, error) {
	out := make([]entry, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if r := g.rule(s); r != nil {
			if allow && r.Tier == rules.Hardline {
				return nil, fmt.Errorf("approval: %q is a hardline rule and cannot be allowed", s)
			}
			out = append(out, entry{rule: s})
			continue
		}
		out = append(out, entry{glob: s})
	}
	return out, nil
}

func (g *Gate) rule(id string) *rules.Compiled {
	for _, r := range g.table {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Check judges req without asking anyone. A command that needs a human
// gets [Ask] (or [Deny] when req is unattended). ctx only matters before
// the check starts: analysis is bounded and does not block.
func (g *Gate) Check(ctx context.Context, req Request) Verdict {
	if err := ctx.Err(); err != nil {
		return Verdict{Decision: Deny, Reasons: []string{"check cancelled: " + err.Error()}, Rules: []string{}}
	}
	cmd := shell.Normalize(req.Command)
	var cmds []rules.Command
	// An interpreter's program is judged whole, unread: its size is no
	// bound of the analysis.
	if len(cmd) > g.maxSize && req.Input.Kind != InputCode {
		cmds = []rules.Command{{Name: rules.FactTooComplex, Args: []string{walk.TooLargeDetail(len(cmd), g.maxSize)}}}
	} else {
		a, _ := g.analyzers.Get().(*walk.Analyzer)
		if a == nil {
			a = walk.NewAnalyzer()
		}
		// The commands are a's until it is put back, after the verdict.
		defer g.analyzers.Put(a)
		var in *walk.Reader // piped input: how its program reads it
		if req.Input.Kind != InputData {
			in = &walk.Reader{Program: req.Input.Program, Role: req.Input.role}
		}
		cmds = a.RunInput(cmd, a.GuardFor(g.protect, req.Dir), in)
	}
	var fs []rules.Finding
	if g.fullScan {
		fs = rules.Judge(g.table, cmds)
	} else {
		fs = g.index.Judge(cmds)
	}
	fs = dropArtefactDeletes(g.opts.Protect.Env["HOME"], req.Dir, cmd, cmds, fs)
	return g.verdict(strings.TrimSpace(cmd), req, cmds, fs)
}

func (g *Gate) verdict(cmd string, req Request, cmds []rules.Command, fs []rules.Finding) Verdict {
	v := Verdict{Decision: Allow, Reasons: []string{}, Rules: []string{}}
	var top rules.Tier
	for _, f := range fs {
		if !slices.Contains(v.Rules, f.Rule.ID) {
			v.Rules = append(v.Rules, f.Rule.ID)
		}
		if r := f.Reason(); !slices.Contains(v.Reasons, r) {
			v.Reasons = append(v.Reasons, r)
		}
		top = max(top, f.Rule.Tier)
	}
	if top == rules.Hardline {
		// The hardline rules alone explain the verdict; lesser matches
		// stay in Rules. A write to runbox's policy that is part of a
		// wider hardline delete or change (rm -rf ~ deletes the policy
		// too) is explained by the wider rule: the policy rule's reason
		// is given only when no other hardline rule matched.
		v.Decision, v.Hardline = Deny, true
		v.Reasons = v.Reasons[:0]
		wider := slices.ContainsFunc(fs, func(f rules.Finding) bool {
			return f.Rule.Tier == rules.Hardline && f.Rule.ID != rules.ProtectedPolicyRule
		})
		for _, f := range fs {
			if f.Rule.Tier != rules.Hardline || wider && f.Rule.ID == rules.ProtectedPolicyRule {
				continue
			}
			if r := f.Reason(); !slices.Contains(v.Reasons, r) {
				v.Reasons = append(v.Reasons, r)
			}
		}
		return v
	}
	if g.denied(cmd, cmds, fs) {
		v.Decision = Deny
		v.Reasons = append(v.Reasons, "denied by the deny list")
		return v
	}
	sb := g.judgeSandbox(req, cmds, fs)
	if sb.denial != "" {
		v.Decision = Deny
		v.Reasons = append(v.Reasons, sb.denial)
		return v
	}
	// Every finding must be let through, each by its own means.
	g.mu.Lock()
	session := g.sessions[req.SessionKey]
	saved := slices.Clone(g.saved)
	g.mu.Unlock()
	pending, relaxed := false, false // relaxed: a finding the sandbox let through
	for i, f := range fs {
		if g.allowed(cmd, f, g.allow) || g.allowed(cmd, f, saved) {
			continue
		}
		if f.Rule.Tier == rules.Forbidden {
			v.Decision = Deny
			return v
		}
		if g.opts.Yolo && yoloCovers(f.Rule) || !f.Rule.AlwaysAsk && (session[f.Rule.ID] || g.opts.Mode == ModeOff ||
			req.Sandboxed && g.opts.RelaxSandboxed) {
			continue
		}
		if !f.Rule.AlwaysAsk && sb.relaxes(i) {
			relaxed = true
			continue
		}
		pending = true
	}
	if !pending {
		if relaxed {
			v.Reasons = append(v.Reasons, sb.notes()...)
		}
		return v
	}
	if req.Unattended {
		v.Decision = Deny
		v.Reasons = append(v.Reasons, "no one is present to approve it")
		v.Hint = fmt.Sprintf("to allow it, run it where a human can approve, or add %s to approval.allow",
			strings.Join(quoteAll(v.Rules), " or "))
		return v
	}
	v.Decision = Ask
	return v
}

// limitRule is the id of the rule that asks about input beyond the bounds.
const limitRule = "too-complex"

// yoloCovers reports whether Options.Yolo lets a finding of r through:
// every dangerous rule's, the limits of the analysis (too-complex)
// included, since yolo is the user's own choice, made when runbox
// starts, to be asked nothing. The other rules that ask in every mode
// guard runbox's own policy (protected-unresolved): yolo does not
// reach them.
func yoloCovers(r *rules.Compiled) bool { return !r.AlwaysAsk || r.ID == limitRule }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// denied reports whether a deny entry matches.
func (g *Gate) denied(cmd string, cmds []rules.Command, fs []rules.Finding) bool {
	for _, e := range g.deny {
		if e.rule != "" {
			for _, f := range fs {
				if f.Rule.ID == e.rule {
					return true
				}
			}
			continue
		}
		if globMatch(e.glob, cmd) {
			return true
		}
		for i := range cmds {
			if g.globCommand(e.glob, &cmds[i]) {
				return true
			}
		}
	}
	return false
}

// allowed reports whether an entry of list lets finding f through.
func (g *Gate) allowed(cmd string, f rules.Finding, list []entry) bool {
	for _, e := range list {
		if e.rule != "" {
			if e.rule == f.Rule.ID {
				return true
			}
			continue
		}
		if f.Rule.Tier == rules.Forbidden {
			continue // only a rule id allows a forbidden rule
		}
		if globMatch(e.glob, cmd) || g.globCommand(e.glob, f.Cmd) {
			return true
		}
	}
	return false
}

// globCommand matches a glob against one command's source text and its
// resolved form.
func (g *Gate) globCommand(glob string, c *rules.Command) bool {
	if c.Source != "" && globMatch(glob, strings.TrimSpace(c.Source)) {
		return true
	}
	if c.Name == "" || strings.HasPrefix(c.Name, "@") {
		return false
	}
	resolved := c.Name
	if len(c.Globals)+len(c.Args) > 0 {
		resolved += " " + strings.Join(append(slices.Clone(c.Globals), c.Args...), " ")
	}
	return globMatch(glob, resolved)
}

// ApproveSession lets the given rules through for every later request
// with the same session key.
func (g *Gate) ApproveSession(sessionKey string, ruleIDs []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.sessions[sessionKey]
	if m == nil {
		m = make(map[string]bool)
		g.sessions[sessionKey] = m
	}
	for _, id := range ruleIDs {
		if r := g.rule(id); r != nil && r.Tier == rules.Dangerous && !r.AlwaysAsk {
			m[id] = true
		}
	}
}

// Persist allows command from now on: it adds the command, as an exact
// glob, to this Gate's allow list and, when [Options.ConfigFile] is set,
// to the file's approval.allow list. The file is read again just before
// it is written, so other keys, comments and manual edits are kept.
func (g *Gate) Persist(command string) error {
	glob := EscapeGlob(strings.TrimSpace(shell.Normalize(command)))
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opts.ConfigFile != "" {
		if err := appendAllow(g.opts.ConfigFile, glob); err != nil {
			return err
		}
	}
	if !slices.Contains(g.saved, entry{glob: glob}) {
		g.saved = append(g.saved, entry{glob: glob})
	}
	return nil
}

// Asker obtains a human's answer to a prompt. [*Broker] is one.
type Asker interface {
	Ask(ctx context.Context, p Prompt) (Answer, error)
}

// Decide checks req and, when the verdict is [Ask], asks through asker.
// It returns nil when the command may run, and otherwise an error that
// matches [ErrDenied] and unwraps to a [*DeniedError]. A nil asker means
// nobody can answer: commands that would ask are denied. "session" answers
// are remembered for req.SessionKey, "always" answers through [Gate.Persist];
// a failure to save an "always" answer is returned as an error (the
// command does not run).
func (g *Gate) Decide(ctx context.Context, req Request, asker Asker) error {
	v := g.Check(ctx, req)
	denied := func(err error, extra ...string) error {
		return &DeniedError{Decision: v.Decision, Hardline: v.Hardline, Reasons: append(slices.Clone(v.Reasons), extra...), Rules: v.Rules, Hint: v.Hint, Err: err}
	}
	switch v.Decision {
	case Allow:
		return nil
	case Deny:
		return denied(nil)
	}
	if asker == nil {
		return denied(nil, "no one is present to approve it")
	}
	reasons := v.Reasons
	if req.Input.Kind != InputData {
		reasons = append([]string{fmt.Sprintf("%s piped into %s", req.Input.Kind, cmp.Or(req.Input.Program, "the command"))}, reasons...)
	}
	ans, err := asker.Ask(ctx, Prompt{
		Command: strings.TrimSpace(req.Command), SessionKey: req.SessionKey, Backend: req.Backend,
		Reasons: reasons, Rules: v.Rules,
	})
	if err != nil {
		return denied(err)
	}
	switch ans.Kind {
	case AnswerOnce:
		return nil
	case AnswerSession:
		g.ApproveSession(req.SessionKey, v.Rules)
		return nil
	case AnswerAlways:
		if err := g.Persist(req.Command); err != nil {
			return fmt.Errorf("approval: saving the approval: %w", err)
		}
		return nil
	}
	reason := "denied by the approver"
	if ans.Reason != "" {
		reason += ": " + ans.Reason
	}
	return denied(nil, reason)
}
