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
	"github.com/runbox/runbox/undo"
)

// processAction is one action of the process tool. command, when set,
// is the text the gate judged (for a refusal's explanation).
type processAction func(s *Server, ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (res *mcp.CallToolResult, command string, err error)

// processActions is the process tool: one handler per action. Every
// action but list names a job.
var processActions = map[string]processAction{
	"list":     (*Server).listJobs,
	"poll":     (*Server).pollJob,
	"log":      (*Server).jobLog,
	"wait":     (*Server).waitJob,
	"kill":     (*Server).killJob,
	"write":    (*Server).writeJob,
	"submit":   (*Server).writeJob,
	"close":    (*Server).closeJob,
	"handoff":  (*Server).handoffJob,
	"lifetime": (*Server).setLifetime,
}

// runProcess is the process tool for one session, for the MCP client and
// for code in the session's kernel alike.
func (s *Server) runProcess(ctx context.Context, sess *session, in ProcessArgs) *mcp.CallToolResult {
	act, ok := processActions[in.Action]
	if !ok {
		return badArgs("action %q: want one of %s", in.Action, strings.Join(processActionNames, ", "))
	}
	if in.Action != "list" && in.SessionID == "" {
		return badArgs("action %s needs session_id (the job's id)", in.Action)
	}
	if in.Action == "write" && in.Data == "" {
		return badArgs("write needs data")
	}
	if in.Yield > 0 && !yieldActions[in.Action] {
		return badArgs("yield applies to write, submit and poll, not %s", in.Action)
	}
	jobs := sess.existingJobs()
	if jobs == nil {
		// The session never started a job: there is nothing of its own to
		// act on, and no reason to reach the registry.
		if in.Action == "list" {
			return result("no background jobs", JobList{Jobs: []procregistry.Info{}})
		}
		return s.failure(ctx, sess, "", fmt.Errorf("runbox: job %s: %w", in.SessionID, envs.ErrNotFound))
	}
	res, command, err := act(s, context.WithValue(ctx, sessionKey{}, sess), jobs, in)
	if err != nil {
		return s.failure(ctx, sess, command, err)
	}
	return res
}

// sessionKey is the context key of the session a process action acts for.
type sessionKey struct{}

// takeEvents returns the job events no notification has delivered, for
// the result of a process action (ctx names the session).
func takeEvents(ctx context.Context, jobs *service.OwnedJobs) ([]procregistry.Event, error) {
	if sess, ok := ctx.Value(sessionKey{}).(*session); ok {
		return sess.takeEvents(ctx, jobs)
	}
	return jobs.TakeEvents(ctx)
}

// JobList is the structured result of list: the session's jobs, and the
// job events no notification has delivered yet.
type JobList struct {
	Jobs   []procregistry.Info  `json:"jobs"`
	Events []procregistry.Event `json:"events,omitempty"`
}

func (s *Server) listJobs(ctx context.Context, jobs *service.OwnedJobs, _ ProcessArgs) (*mcp.CallToolResult, string, error) {
	list, err := jobs.List(ctx)
	if err != nil {
		return nil, "", err
	}
	evs, err := takeEvents(ctx, jobs)
	if err != nil {
		return nil, "", err
	}
	if list == nil {
		list = []procregistry.Info{}
	}
	var b strings.Builder
	if len(list) == 0 {
		b.WriteString("no background jobs\n")
	}
	for _, j := range list {
		fmt.Fprintf(&b, "%s  %s  %s  pid %d  %s\n", j.ID, describeStatus(j), j.Lifetime, j.PID, oneLine(j.Command, 80))
	}
	writeEvents(&b, evs)
	return result(strings.TrimRight(b.String(), "\n"), JobList{Jobs: list, Events: evs}), "", nil
}

// JobPoll is the structured result of poll: the job, the tail of its
// output, and the job events no notification has delivered yet.
type JobPoll struct {
	procregistry.Poll
	Events []procregistry.Event `json:"events,omitempty"`
	JobChanges
}

// JobChanges is what a finished job changed in the workspace, when the
// session records changes (see service.OwnedJobs.Changes).
type JobChanges struct {
	Changes        *undo.Record `json:"changes,omitempty"`
	ChangeWarnings []string     `json:"change_warnings,omitempty"`
}

// changesOf fetches the job's change record, and the lines that say it
// (its warnings, then what changed), each after a newline.
func changesOf(ctx context.Context, jobs *service.OwnedJobs, in procregistry.Info) (JobChanges, string) {
	rec, warns := jobs.Changes(ctx, in)
	var b strings.Builder
	for _, w := range warns {
		fmt.Fprintf(&b, "\nwarning: %s", w)
	}
	if t := changesText(rec); t != "" {
		fmt.Fprintf(&b, "\n%s", t)
	}
	return JobChanges{Changes: rec, ChangeWarnings: warns}, b.String()
}

func (s *Server) pollJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	if in.Yield > 0 {
		return s.yieldJob(ctx, jobs, in, -1)
	}
	p, err := jobs.Poll(ctx, in.SessionID)
	if err != nil {
		return nil, "", err
	}
	evs, err := takeEvents(ctx, jobs)
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s (%d bytes of output)\n", p.ID, describeStatus(p.Info), p.Size)
	if p.Preview != "" {
		b.WriteString(p.Preview)
		if !strings.HasSuffix(p.Preview, "\n") {
			b.WriteString("\n")
		}
	}
	writeEvents(&b, evs)
	jc, said := changesOf(ctx, jobs, p.Info)
	return result(strings.TrimRight(b.String(), "\n")+said, JobPoll{Poll: p, Events: evs, JobChanges: jc}), "", nil
}

// JobLog is the structured result of log: a bounded piece of the job's
// output and where to continue. Output that is not valid UTF-8 is sent
// as base64 and marked in output_encoding.
type JobLog struct {
	ID             string `json:"session_id"`
	Offset         int64  `json:"offset"`
	Next           int64  `json:"next"`
	Size           int64  `json:"size"`
	Done           bool   `json:"done"`
	Output         string `json:"output"`
	OutputEncoding string `json:"output_encoding,omitempty"`
	Truncated      bool   `json:"truncated,omitempty"`
}

func (s *Server) jobLog(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	if in.Tail > 0 && in.Offset > 0 {
		return badArgs("log takes offset/limit or tail, not both"), "", nil
	}
	max := s.svc.OutputLimit()
	if max <= 0 {
		max = envs.DefaultOutputLimit
	}
	var ch procregistry.Chunk
	var err error
	truncated := false
	if in.Tail > 0 {
		ch, err = jobs.TailLines(ctx, in.SessionID, in.Tail)
		if err == nil && len(ch.Data) > max {
			ch.Offset += int64(len(ch.Data) - max)
			ch.Data = ch.Data[len(ch.Data)-max:]
			truncated = true
		}
	} else {
		limit := in.Limit
		if limit <= 0 || limit > max {
			limit = max
		}
		ch, err = jobs.ReadLog(ctx, in.SessionID, in.Offset, limit)
		truncated = err == nil && ch.Next < ch.Size
	}
	if err != nil {
		return nil, "", err
	}
	in2, _ := jobs.Get(ctx, in.SessionID)
	enc := service.EncodeResult(&envs.Result{Output: string(ch.Data)})
	out := JobLog{ID: in2.ID, Offset: ch.Offset, Next: ch.Next, Size: ch.Size, Done: ch.Done, Output: enc.Output, OutputEncoding: enc.OutputEncoding, Truncated: truncated}
	text := enc.Output
	if enc.OutputEncoding != "" {
		text = fmt.Sprintf("(%d bytes of binary output: see output in the structured result, %s)", len(ch.Data), enc.OutputEncoding)
	}
	if truncated && in.Tail == 0 {
		text += fmt.Sprintf("\n[%d more bytes: read on from offset %d]", ch.Size-ch.Next, ch.Next)
	}
	return result(text, out), "", nil
}

// JobWait is the structured result of wait.
type JobWait struct {
	Job     procregistry.Info `json:"job"`
	Done    bool              `json:"done"`
	Preview string            `json:"preview,omitempty"`
	JobChanges
}

func (s *Server) waitJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	timeout := seconds(in.Timeout)
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	info, done, err := jobs.Wait(ctx, in.SessionID, timeout)
	if err != nil {
		return nil, "", err
	}
	out := JobWait{Job: info, Done: done}
	text := fmt.Sprintf("job %s %s", info.ID, describeStatus(info))
	if !done {
		text += fmt.Sprintf(" (still running after %v)", timeout.Round(time.Millisecond))
	}
	if p, err := jobs.Poll(ctx, info.ID); err == nil && p.Preview != "" {
		out.Preview = p.Preview
		text += "\n" + p.Preview
	}
	jc, said := changesOf(ctx, jobs, info)
	out.JobChanges = jc
	return result(text+said, out), "", nil
}

func (s *Server) killJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	res, err := jobs.Kill(ctx, in.SessionID)
	if err != nil {
		return nil, "", err
	}
	var text string
	switch res.Outcome {
	case procregistry.KillKilled:
		text = fmt.Sprintf("job %s killed (its whole process tree)", res.ID)
	case procregistry.KillAlreadyExited:
		text = fmt.Sprintf("job %s had already finished: %s", res.ID, describeStatus(res.Info))
	default:
		text = fmt.Sprintf("job %s lost: %s (nothing signalled)", res.ID, res.Info.Error)
	}
	jc, said := changesOf(ctx, jobs, res.Info)
	return result(text+said, JobKill{KillResult: res, JobChanges: jc}), "", nil
}

// JobKill is the structured result of kill: the registry's answer and,
// the job having ended, what it changed.
type JobKill struct {
	procregistry.KillResult
	JobChanges
}

// JobAck is the structured result of write, submit, close and handoff.
type JobAck struct {
	ID     string `json:"session_id"`
	Action string `json:"action"`
	Bytes  int    `json:"bytes,omitempty"`
	Owner  string `json:"owner,omitempty"`
	// Lifetime is the job's class after a lifetime action.
	Lifetime string `json:"lifetime,omitempty"`
}

func (s *Server) writeJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	info, err := jobs.Get(ctx, in.SessionID)
	if err != nil {
		return nil, "", err
	}
	submit := in.Action == "submit"
	var from int64
	if in.Yield > 0 {
		// What the job writes in answer comes after what it wrote so far.
		if from, err = jobs.LogSize(ctx, info.ID); err != nil {
			return nil, "", err
		}
	}
	if err := jobs.Write(ctx, info.ID, in.Data, submit); err != nil {
		return nil, in.Data, err
	}
	if in.Yield > 0 {
		return s.yieldJob(ctx, jobs, in, from)
	}
	n := len(in.Data)
	if submit {
		n++
	}
	return result(fmt.Sprintf("wrote %d bytes to job %s", n, info.ID), JobAck{ID: info.ID, Action: in.Action, Bytes: n}), "", nil
}

func (s *Server) closeJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	info, err := jobs.Get(ctx, in.SessionID)
	if err != nil {
		return nil, "", err
	}
	if err := jobs.CloseStdin(ctx, info.ID); err != nil {
		return nil, "", err
	}
	return result(fmt.Sprintf("closed the stdin of job %s", info.ID), JobAck{ID: info.ID, Action: "close"}), "", nil
}

func (s *Server) handoffJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	owner := in.Owner
	if owner == "" {
		owner = s.defaultOwner()
	}
	info, err := jobs.Handoff(ctx, in.SessionID, owner, in.Note)
	if err != nil {
		return nil, "", err
	}
	text := fmt.Sprintf("job %s now belongs to %s and will outlive this session", info.ID, info.Owner)
	return result(text, JobAck{ID: info.ID, Action: "handoff", Owner: info.Owner}), "", nil
}

func (s *Server) setLifetime(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs) (*mcp.CallToolResult, string, error) {
	l, err := jobLifetime(in.Lifetime)
	if err != nil {
		return nil, "", err
	}
	info, err := jobs.SetLifetime(ctx, in.SessionID, l)
	if err != nil {
		return nil, "", err
	}
	text := fmt.Sprintf("job %s is now of lifetime %s: %s", info.ID, info.Lifetime, lifetimeMeaning(info.Lifetime))
	return result(text, JobAck{ID: info.ID, Action: "lifetime", Lifetime: info.Lifetime.String()}), "", nil
}

// jobLifetime reads a job's class as the tools take it: "command" is a
// foreground command's, which a job cannot be given.
func jobLifetime(name string) (procregistry.Lifetime, error) {
	l, err := procregistry.ParseLifetime(name)
	if err != nil {
		return "", err
	}
	if l == procregistry.LifetimeCommand {
		return "", fmt.Errorf("lifetime command is a foreground command's (run it without background or yield): %w", envs.ErrBadCommand)
	}
	return l, nil
}

// lifetimeMeaning says, for a tool's text, what a class means here.
func lifetimeMeaning(l procregistry.Lifetime) string {
	switch l {
	case procregistry.LifetimeDetached:
		return "it outlives this session until it ends or is killed"
	case procregistry.LifetimeKeepAwake:
		return "it outlives this session, and while it runs this session and its sandbox are not closed for being idle"
	case procregistry.LifetimeCommand:
		return "it ends with the command that started it"
	}
	return "it is killed when this session ends unless handed off"
}

// defaultOwner is who a handoff gives a job to by default: the owner the
// runbox CLI uses ($RUNBOX_OWNER, else "user").
func (s *Server) defaultOwner() string {
	if o := s.svc.Getenv("RUNBOX_OWNER"); o != "" {
		return o
	}
	return "user"
}

// describeStatus is a job's state in a few words.
func describeStatus(in procregistry.Info) string {
	switch in.Status {
	case procregistry.StatusExited:
		if in.Exit != nil && in.Exit.Signal != 0 {
			return fmt.Sprintf("exited: killed by signal %d (exit %d)", in.Exit.Signal, in.Exit.Code)
		}
		if in.Exit != nil {
			return fmt.Sprintf("exited %d", in.Exit.Code)
		}
	case procregistry.StatusKilled:
		if in.Exit != nil {
			return fmt.Sprintf("killed by %s (exit %d)", in.KilledBy, in.Exit.Code)
		}
		return "killed by " + in.KilledBy
	case procregistry.StatusLost, procregistry.StatusFailed:
		return fmt.Sprintf("%s: %s", in.Status, in.Error)
	}
	return string(in.Status)
}

// writeEvents appends the undelivered events, one readable block each.
func writeEvents(b *strings.Builder, evs []procregistry.Event) {
	if len(evs) == 0 {
		return
	}
	b.WriteString("events not yet delivered:\n")
	for _, ev := range evs {
		b.WriteString(eventMessage(ev))
		b.WriteString("\n")
	}
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// yieldActions are the process actions that take a yield.
var yieldActions = map[string]bool{"write": true, "submit": true, "poll": true}

// JobOutput is the structured result of write, submit or poll given a
// yield: the job, whether it has finished, and its output from offset
// from (the log's end when the call began) to next.
type JobOutput struct {
	Job            procregistry.Info    `json:"job"`
	Done           bool                 `json:"done"`
	Output         string               `json:"output"`
	OutputEncoding string               `json:"output_encoding,omitempty"`
	From           int64                `json:"from"`
	Next           int64                `json:"next"`
	Truncated      bool                 `json:"truncated,omitempty"`
	Events         []procregistry.Event `json:"events,omitempty"`
}

// yieldJob waits up to in.Yield for the job's output past from (-1: past
// its end now) or its end, and returns that output.
func (s *Server) yieldJob(ctx context.Context, jobs *service.OwnedJobs, in ProcessArgs, from int64) (*mcp.CallToolResult, string, error) {
	yr, err := jobs.PollYield(ctx, in.SessionID, from, seconds(in.Yield), s.svc.OutputLimit())
	if err != nil {
		return nil, "", err
	}
	evs, err := takeEvents(ctx, jobs)
	if err != nil {
		return nil, "", err
	}
	enc := service.EncodeResult(&envs.Result{Output: yr.Output})
	out := JobOutput{
		Job: yr.Job, Done: yr.Done, Output: enc.Output, OutputEncoding: enc.OutputEncoding,
		From: yr.From, Next: yr.Next, Truncated: yr.Truncated, Events: evs,
	}
	var b strings.Builder
	writeOutput(&b, enc, len(yr.Output))
	fmt.Fprintf(&b, "[job %s %s]", yr.Job.ID, describeStatus(yr.Job))
	if !yr.Done && yr.Next == yr.From {
		fmt.Fprintf(&b, " (no new output within %v)", seconds(in.Yield))
	}
	if len(evs) > 0 {
		b.WriteString("\n")
		writeEvents(&b, evs)
	}
	return result(strings.TrimRight(b.String(), "\n"), out), "", nil
}
