package service

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/procregistry"
)

// Jobs is a background-job registry as a front end uses it. The local
// job daemon's client (procregistry.Client) is one; a registry inside a
// sandbox, reached through the agent channel, is another.
type Jobs interface {
	Start(ctx context.Context, req procregistry.StartRequest) (procregistry.Info, error)
	List(ctx context.Context, owner string) ([]procregistry.Info, error)
	Get(ctx context.Context, id string) (procregistry.Info, error)
	ReadLog(ctx context.Context, id string, offset int64, limit int) (procregistry.Chunk, error)
	TailLines(ctx context.Context, id string, n int) (procregistry.Chunk, error)
	Follow(ctx context.Context, id string, offset int64, w io.Writer) (int64, error)
	Wait(ctx context.Context, id string, timeout time.Duration) (procregistry.Info, bool, error)
	Kill(ctx context.Context, id string) (procregistry.KillResult, error)
	Write(ctx context.Context, id string, data []byte) error
	Submit(ctx context.Context, id, text string) error
	CloseStdin(ctx context.Context, id string) error
	Handoff(ctx context.Context, id, owner, note string) (procregistry.Info, error)
	SetLifetime(ctx context.Context, id string, l procregistry.Lifetime) (procregistry.Info, error)
	Events(ctx context.Context, consumer string, wait bool) ([]procregistry.Event, error)
	Ack(ctx context.Context, consumer string, seq int64) error
}

var _ Jobs = (*procregistry.Client)(nil)

// JobTarget says where a job runs, for the gate.
type JobTarget struct {
	Backend    string
	HostAccess bool
	Dir        string // where the job starts, for relative paths ("" unknown)
	Asker      approval.Asker
	// session, when set, is the session whose jobs these are: a local
	// job runs in the sandbox of the session's commands, its proxy
	// included.
	session *Session
}

// Connect reaches a job registry (starting its daemon if need be). It is
// called only once the gate has let the command through.
type Connect func(ctx context.Context) (Jobs, error)

// StartJob judges the job's command, then connects and starts it. The
// gate runs here, on the host, before anything is forwarded to a registry
// anywhere, or a registry started.
func (s *Service) StartJob(ctx context.Context, connect Connect, t JobTarget, req procregistry.StartRequest) (procregistry.Info, error) {
	text := jobLine(req)
	if err := s.Authorize(ctx, Authorization{Command: text, Backend: t.Backend, HostAccess: t.HostAccess, SessionKey: req.Owner, Asker: t.Asker, Dir: t.Dir, Sandbox: s.jobSandbox(t, req)}); err != nil {
		return procregistry.Info{}, err
	}
	if err := s.confineJob(ctx, t, &req); err != nil {
		return procregistry.Info{}, err
	}
	jobs, err := connect(ctx)
	if err != nil {
		return procregistry.Info{}, err
	}
	return jobs.Start(ctx, req)
}

// WriteJob judges text as a command (a job's shell or REPL runs what it
// reads), then writes it to the job's stdin: with a newline added when
// submit is true. A job's reader joins what it is sent into lines, so
// text is judged with the unfinished line the job's earlier writes left
// before it: a refused line sent in pieces is refused at the piece that
// completes it.
func (s *Service) WriteJob(ctx context.Context, jobs Jobs, t JobTarget, id, text string, submit bool) error {
	key := t.Backend + "\x00" + id
	sent := text
	if submit {
		sent += "\n"
	}
	line, err := s.tails.join(key, sent)
	if err != nil {
		return err
	}
	if err := s.Authorize(ctx, Authorization{Command: strings.TrimSuffix(line, "\n"), Backend: t.Backend, HostAccess: t.HostAccess, SessionKey: "job:" + id, Asker: t.Asker}); err != nil {
		return err
	}
	if submit {
		err = jobs.Submit(ctx, id, text)
	} else {
		err = jobs.Write(ctx, id, []byte(text))
	}
	if err == nil {
		s.tails.keep(key, line)
	}
	return err
}

// maxInputTail bounds the unfinished line a job's input may end with.
const maxInputTail = 64 << 10

// inputTails are the unfinished lines jobs' inputs end with.
type inputTails struct {
	mu sync.Mutex
	m  map[string]string
}

// join is what the job's reader will have once sent arrives: its
// unfinished line, then sent.
func (t *inputTails) join(key, sent string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := t.m[key] + sent
	if len(lastLine(line)) > maxInputTail {
		return "", fmt.Errorf("service: a line of a job's input over %d bytes is not sent unfinished", maxInputTail)
	}
	return line, nil
}

// keep remembers the unfinished line that line, sent, leaves.
func (t *inputTails) keep(key, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tail := lastLine(line)
	if tail == "" {
		delete(t.m, key)
		return
	}
	if t.m == nil {
		t.m = map[string]string{}
	}
	t.m[key] = tail
}

// lastLine is what follows the last newline of text: its unfinished line.
func lastLine(text string) string { return text[strings.LastIndexByte(text, '\n')+1:] }

// jobLine is the shell line a job's command is judged and labelled as.
func jobLine(req procregistry.StartRequest) string {
	if req.Shell != "" {
		return req.Shell
	}
	return lineOf(req.Args)
}
