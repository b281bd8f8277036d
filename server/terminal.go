package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// ptySize is the terminal a pty command gets: the client has no window.
var ptySize = envs.WindowSize{Rows: 24, Cols: 80}

// runTerminal is the terminal tool for one session, for the MCP client
// and for code in the session's kernel alike.
func (s *Server) runTerminal(ctx context.Context, sess *session, in TerminalArgs) *mcp.CallToolResult {
	if strings.TrimSpace(in.Command) == "" {
		return badArgs("command is empty")
	}
	lifetime, err := terminalLifetime(in)
	if err != nil {
		return badArgs("%v", err)
	}
	in.Lifetime = string(lifetime)
	if in.Background {
		if in.Timeout > 0 {
			return badArgs("timeout applies to foreground commands; wait for or kill a background job with the process tool")
		}
		if in.Yield > 0 {
			return badArgs("yield applies to foreground commands; a background command returns at once")
		}
		return s.startJob(ctx, sess, in)
	}
	if in.Yield > 0 {
		if in.Timeout > 0 || in.PTY {
			return badArgs("a command given a yield runs as a job: it takes no timeout or pty (kill it with the process tool)")
		}
		return s.yieldCommand(ctx, sess, in)
	}
	if in.QuietAfter > 0 || in.NoOutputTimeout > 0 || in.InputWait != 0 {
		return badArgs("quiet_after, no_output_timeout and input_wait apply to background commands and commands given a yield")
	}
	if in.NotifyOnComplete || len(in.WatchPatterns) > 0 || in.Heartbeat > 0 || in.Detach {
		return badArgs("notify_on_complete, watch_patterns, heartbeat and detach apply to background commands (set background)")
	}
	if lifetime != procregistry.LifetimeSession {
		return badArgs("lifetime %s applies to background commands and commands given a yield (a foreground command's is command)", lifetime)
	}
	ss, err := sess.service()
	if err != nil {
		return s.failure(ctx, sess, "", err)
	}
	if s.opts.Sync != nil {
		// Copying the project in is the server's configuration, not the
		// command's doing: it happens whatever the gate says of it.
		if _, err := s.pushWorkspace(ctx, sess); err != nil {
			return s.failure(ctx, sess, in.Command, err)
		}
	}
	c := envs.Command{Shell: in.Command, Dir: in.Workdir, Env: s.opts.Env, Timeout: seconds(in.Timeout)}
	if in.PTY {
		c.PTY = &ptySize
	}
	res, err := ss.Run(ctx, c)
	if err != nil {
		return s.failure(ctx, sess, in.Command, err)
	}
	sess.setCwd(res.Cwd)
	return result(foregroundText(res, c.Timeout), service.EncodeResult(res))
}

// seconds turns a tool's seconds into a duration.
func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// foregroundText is the readable form of a result: the output, then one
// line on how the command ended.
func foregroundText(res *envs.Result, timeout time.Duration) string {
	var b strings.Builder
	enc := service.EncodeResult(res)
	if enc.OutputEncoding != "" {
		fmt.Fprintf(&b, "(%d bytes of binary output: see output in the structured result, %s)\n", len(res.Output), enc.OutputEncoding)
	} else {
		b.WriteString(res.Output)
		if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
			b.WriteString("\n")
		}
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "[timed out after %v; its process tree was killed: exit %d]", timeout, res.Code)
	case res.Interrupted:
		fmt.Fprintf(&b, "[interrupted: exit %d]", res.Code)
	case res.KilledBy != "":
		fmt.Fprintf(&b, "[killed by %s: exit %d]", res.KilledBy, res.Code)
	default:
		fmt.Fprintf(&b, "[exit %d]", res.Code)
	}
	if res.Cwd != "" {
		fmt.Fprintf(&b, " cwd %s", res.Cwd)
	}
	if res.Truncated && res.SpillPath != "" {
		fmt.Fprintf(&b, "\n[output truncated; the whole output is in %s]", res.SpillPath)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "\nwarning: %s", w)
	}
	for _, v := range res.SandboxViolations {
		fmt.Fprintf(&b, "\nsandbox denied %s %s (%s)", v.Op, v.Target, v.Rule)
	}
	if enc.SandboxHint != "" {
		fmt.Fprintf(&b, "\n%s", enc.SandboxHint)
	}
	if t := changesText(res.Changes); t != "" {
		fmt.Fprintf(&b, "\n%s", t)
	}
	return b.String()
}

// JobStarted is the structured result of a background start.
type JobStarted struct {
	SessionID string              `json:"session_id"`
	PID       int                 `json:"pid"`
	Status    procregistry.Status `json:"status"`
	Command   string              `json:"command"`
	Dir       string              `json:"dir,omitempty"`
	Detached  bool                `json:"detached,omitempty"`
	Lifetime  string              `json:"lifetime"`
	Warning   string              `json:"warning,omitempty"`
}

// startJob starts the command as one of the session's background jobs.
func (s *Server) startJob(ctx context.Context, sess *session, in TerminalArgs) *mcp.CallToolResult {
	jobs, err := sess.ownedJobs(ctx)
	if err != nil {
		return s.failure(ctx, sess, "", err)
	}
	info, err := jobs.Start(ctx, s.jobRequest(sess, jobs, in))
	if err != nil {
		return s.failure(ctx, sess, in.Command, err)
	}
	sess.startPump(jobs)
	out := JobStarted{
		SessionID: info.ID, PID: info.PID, Status: info.Status, Command: info.Command, Dir: info.Dir,
		Detached: !info.Lifetime.EndsWithSession(), Lifetime: info.Lifetime.String(), Warning: info.Warning,
	}
	if info.Status == procregistry.StatusFailed {
		te := ToolError{ErrorJSON: service.ErrorJSON{
			Error: fmt.Sprintf("runbox: background job %s failed to start: %s", info.ID, info.Error), ExitCode: exitRunbox, Kind: service.KindInternal,
		}}
		return errorResult(te)
	}
	text := fmt.Sprintf("started background job %s (pid %d) in %s", info.ID, info.PID, info.Dir)
	if in.NotifyOnComplete {
		text += "; you will be notified when it completes"
	}
	text += "; lifetime " + info.Lifetime.String() + ": " + lifetimeMeaning(info.Lifetime)
	if info.Warning != "" {
		text += "\nwarning: " + info.Warning
	}
	return result(text, out)
}

// jobRequest is the start of in's command as one of the session's jobs.
func (s *Server) jobRequest(sess *session, jobs *service.OwnedJobs, in TerminalArgs) procregistry.StartRequest {
	dir := in.Workdir
	switch {
	case dir != "":
	case jobs.OnThisMachine():
		dir = sess.jobDir()
	default: // a path in the session's sandbox, never one of this machine
		dir = sess.remoteJobDir()
	}
	req := procregistry.StartRequest{
		Shell: in.Command, Dir: dir, Env: s.opts.Env,
		Notify: in.NotifyOnComplete, Watch: in.WatchPatterns, Heartbeat: seconds(in.Heartbeat),
	}
	req.Lifetime = procregistry.Lifetime(in.Lifetime) // checked by terminalLifetime
	if in.PTY {
		req.PTY = &ptySize
	}
	req.QuietAfter, req.NoOutputTimeout, req.InputWait = idleOptions(in)
	return req
}

// JobYielded is the structured result of a command that was still
// running when its yield time passed: the job it carries on as, and its
// output so far. Reading the job's log from next continues the output.
type JobYielded struct {
	SessionID      string              `json:"session_id"`
	Yielded        bool                `json:"yielded"`
	PID            int                 `json:"pid"`
	Status         procregistry.Status `json:"status"`
	Output         string              `json:"output"`
	OutputEncoding string              `json:"output_encoding,omitempty"`
	Next           int64               `json:"next"`
	Truncated      bool                `json:"truncated,omitempty"`
}

// YieldDone is the structured result of a command that finished within
// its yield time: a foreground result, and the id of the job it ran as.
type YieldDone struct {
	service.ResultJSON
	SessionID string `json:"session_id"`
}

// yieldCommand runs in's command as a job of the session and waits up
// to its yield time: a command that ends by then returns like a
// foreground one (and sends no notice); one still running returns its
// output so far and its id, and notifies when it completes.
func (s *Server) yieldCommand(ctx context.Context, sess *session, in TerminalArgs) *mcp.CallToolResult {
	jobs, err := sess.ownedJobs(ctx)
	if err != nil {
		return s.failure(ctx, sess, "", err)
	}
	if s.opts.Sync != nil {
		if _, err := s.pushWorkspace(ctx, sess); err != nil {
			return s.failure(ctx, sess, in.Command, err)
		}
	}
	// The pump runs before the start: a notice for the job must find it.
	sess.startPump(jobs)
	yr, err := jobs.StartYield(ctx, s.jobRequest(sess, jobs, in), seconds(in.Yield), s.svc.OutputLimit())
	if err != nil {
		return s.failure(ctx, sess, in.Command, err)
	}
	if yr.Done {
		return s.yieldDone(ctx, jobs, yr)
	}
	enc := service.EncodeResult(&envs.Result{Output: yr.Output})
	out := JobYielded{
		SessionID: yr.Job.ID, Yielded: true, PID: yr.Job.PID, Status: yr.Job.Status,
		Output: enc.Output, OutputEncoding: enc.OutputEncoding, Next: yr.Next, Truncated: yr.Truncated,
	}
	var b strings.Builder
	writeOutput(&b, enc, len(yr.Output))
	fmt.Fprintf(&b, "[still running after %v: carries on as background job %s (pid %d); you will be notified when it completes; poll, write to or kill it with the process tool]", seconds(in.Yield), yr.Job.ID, yr.Job.PID)
	return result(b.String(), out)
}

// terminalLifetime is the class in asks for: lifetime, or detached for
// the older detach flag. A command given no background or yield is
// checked by the caller (it must ask for none).
func terminalLifetime(in TerminalArgs) (procregistry.Lifetime, error) {
	if in.Lifetime == "" && !in.Detach {
		return procregistry.LifetimeSession, nil
	}
	if !in.Background && in.Yield <= 0 {
		if l, err := procregistry.ParseLifetime(in.Lifetime); err == nil && l == procregistry.LifetimeCommand && !in.Detach {
			return procregistry.LifetimeSession, nil // what a foreground command is anyway
		}
	}
	if in.Lifetime == "" {
		return procregistry.LifetimeDetached, nil
	}
	l, err := jobLifetime(in.Lifetime)
	if err != nil {
		return "", err
	}
	if in.Detach && l != procregistry.LifetimeDetached && l != procregistry.LifetimeKeepAwake {
		return "", fmt.Errorf("detach and lifetime %s disagree: give lifetime alone", l)
	}
	return l, nil
}

// yieldDone is the result of a command that ended within its yield.
func (s *Server) yieldDone(ctx context.Context, jobs *service.OwnedJobs, yr service.YieldResult) *mcp.CallToolResult {
	info := yr.Job
	if info.Exit == nil || info.Status == procregistry.StatusFailed {
		te := ToolError{ErrorJSON: service.ErrorJSON{
			Error: fmt.Sprintf("runbox: job %s %s", info.ID, describeStatus(info)), ExitCode: exitRunbox, Kind: service.KindInternal,
		}}
		return errorResult(te)
	}
	res := &envs.Result{ExitStatus: *info.Exit, Output: yr.Output, Truncated: yr.Truncated, TotalBytes: yr.Next}
	// It ran as a job: its changes are its job's step.
	var warns []string
	res.Changes, warns = jobs.Changes(ctx, info)
	res.Warnings = append(res.Warnings, warns...)
	if !info.Started.IsZero() && !info.Ended.IsZero() {
		res.Duration = info.Ended.Sub(info.Started)
	}
	text := foregroundText(res, 0)
	return result(text, YieldDone{ResultJSON: service.EncodeResult(res), SessionID: info.ID})
}

// writeOutput writes output to b as text, or a line that points at the
// structured result when it is binary (n bytes).
func writeOutput(b *strings.Builder, enc service.ResultJSON, n int) {
	if enc.OutputEncoding != "" {
		fmt.Fprintf(b, "(%d bytes of binary output: see output in the structured result, %s)\n", n, enc.OutputEncoding)
		return
	}
	b.WriteString(enc.Output)
	if enc.Output != "" && !strings.HasSuffix(enc.Output, "\n") {
		b.WriteString("\n")
	}
}
