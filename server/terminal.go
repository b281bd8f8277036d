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
	if in.Background {
		if in.Timeout > 0 {
			return badArgs("timeout applies to foreground commands; wait for or kill a background job with the process tool")
		}
		return s.startJob(ctx, sess, in)
	}
	if in.NotifyOnComplete || len(in.WatchPatterns) > 0 || in.Heartbeat > 0 || in.Detach {
		return badArgs("notify_on_complete, watch_patterns, heartbeat and detach apply to background commands (set background)")
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
	Warning   string              `json:"warning,omitempty"`
}

// startJob starts the command as one of the session's background jobs.
func (s *Server) startJob(ctx context.Context, sess *session, in TerminalArgs) *mcp.CallToolResult {
	jobs, err := sess.ownedJobs(ctx)
	if err != nil {
		return s.failure(ctx, sess, "", err)
	}
	dir := in.Workdir
	switch {
	case dir != "":
	case jobs.Backend() == "local":
		dir = sess.jobDir()
	default: // a path in the session's sandbox, never one of this machine
		dir = sess.remoteJobDir()
	}
	req := procregistry.StartRequest{
		Shell: in.Command, Dir: dir, Env: s.opts.Env,
		Notify: in.NotifyOnComplete, Watch: in.WatchPatterns, Heartbeat: seconds(in.Heartbeat),
	}
	if in.Detach {
		req.Lifetime = procregistry.LifetimeDetached
	}
	if in.PTY {
		req.PTY = &ptySize
	}
	info, err := jobs.Start(ctx, req)
	if err != nil {
		return s.failure(ctx, sess, in.Command, err)
	}
	sess.startPump(jobs)
	out := JobStarted{SessionID: info.ID, PID: info.PID, Status: info.Status, Command: info.Command, Dir: info.Dir, Detached: in.Detach, Warning: info.Warning}
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
	if !in.Detach {
		text += "; it is killed when this session ends unless handed off"
	}
	if info.Warning != "" {
		text += "\nwarning: " + info.Warning
	}
	return result(text, out)
}
