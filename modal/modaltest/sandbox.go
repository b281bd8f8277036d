package modaltest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runbox/runbox/internal/testproc"
)

// sandbox is one fake sandbox: a directory and the processes started in
// it.
type sandbox struct {
	id, taskID, appID, dir string
	env                    map[string]string // from the definition's secrets
	created                time.Time
	done                   chan struct{} // closed when it ends

	mu       sync.Mutex
	notReady int
	tags     map[string]string
	result   *pb.GenericResult // set when it ended
	execs    map[string]*process
}

func newSandbox(id, taskID, appID, dir string, env map[string]string, notReady int, created time.Time) *sandbox {
	return &sandbox{id: id, taskID: taskID, appID: appID, dir: dir, env: env, created: created,
		done: make(chan struct{}), notReady: notReady, tags: map[string]string{}, execs: map[string]*process{}}
}

func (sb *sandbox) ended() bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.result != nil
}

// terminate marks the sandbox ended and kills every process in it: each
// exec's process group, then, as Modal's container goes with everything
// in it, whatever left those groups (a daemon that detached itself, and
// what it runs), found by the sandbox's HOME.
func (sb *sandbox) terminate() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.result != nil {
		return
	}
	sb.result = pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_TERMINATED}.Build()
	close(sb.done)
	for _, p := range sb.execs {
		if p.cmd.Process != nil {
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	testproc.KillHome(sb.dir)
}

// output is an exec's stdout or stderr as it grows, read by offset.
type output struct {
	mu      sync.Mutex
	data    []byte
	closed  bool
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.data = append(o.data, p...)
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
	return len(p), nil
}

func (o *output) close() {
	o.mu.Lock()
	o.closed = true
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

// from is what is there past off, whether more can come, and a channel
// closed on the next change.
func (o *output) from(off uint64) ([]byte, bool, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b []byte
	if off < uint64(len(o.data)) {
		b = append(b, o.data[off:]...)
	}
	return b, o.closed, o.changed
}

// process is one exec.
type process struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *output
	done           chan struct{}

	mu       sync.Mutex
	inOffset uint64
	state    *os.ProcessState
}

// basePath is the PATH of a fresh sandbox.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// TaskExecStart starts the command as a process in the sandbox's
// directory, in its own process group, with only the sandbox's base
// environment and the request's secrets.
func (s *Server) TaskExecStart(ctx context.Context, req *pb.TaskExecStartRequest) (*pb.TaskExecStartResponse, error) {
	sb, err := s.task(req.GetTaskId())
	if err != nil {
		return nil, err
	}
	if len(req.GetCommandArgs()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "empty command")
	}
	env := map[string]string{"PATH": basePath, "HOME": sb.dir}
	for k, v := range sb.env {
		env[k] = v
	}
	s.mu.Lock()
	for _, id := range req.GetSecretIds() {
		for k, v := range s.secrets[id] {
			env[k] = v
		}
	}
	s.mu.Unlock()
	args := req.GetCommandArgs()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = sb.dir
	if req.HasWorkdir() {
		cmd.Dir = req.GetWorkdir()
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &process{cmd: cmd, stdout: newOutput(), stderr: newOutput(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.result != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "task %s has finished", sb.taskID)
	}
	if err := cmd.Start(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "exec: %v", err)
	}
	sb.execs[req.GetExecId()] = p
	go func() { // owned by the process: ends when it exits
		err := cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		_ = err
		p.stdout.close()
		p.stderr.close()
		close(p.done)
	}()
	return pb.TaskExecStartResponse_builder{}.Build(), nil
}

func (s *Server) exec(taskID, execID string) (*process, error) {
	sb, err := s.task(taskID)
	if err != nil {
		return nil, err
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	p := sb.execs[execID]
	if p == nil {
		return nil, status.Errorf(codes.NotFound, "exec %s not found", execID)
	}
	return p, nil
}

// TaskExecStdinWrite writes at the given offset: data already written (a
// retried call) is skipped, a gap is refused.
func (s *Server) TaskExecStdinWrite(ctx context.Context, req *pb.TaskExecStdinWriteRequest) (*pb.TaskExecStdinWriteResponse, error) {
	p, err := s.exec(req.GetTaskId(), req.GetExecId())
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	data, off := req.GetData(), req.GetOffset()
	if off > p.inOffset {
		return nil, status.Errorf(codes.InvalidArgument, "stdin offset %d is past %d", off, p.inOffset)
	}
	if skip := p.inOffset - off; skip < uint64(len(data)) {
		n, err := p.stdin.Write(data[skip:])
		p.inOffset += uint64(n)
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "stdin: %v", err)
		}
	}
	if req.GetEof() {
		p.stdin.Close()
	}
	if n := s.cfg.LoseStdinAckEvery; n > 0 && len(data) > 0 {
		s.mu.Lock()
		s.stdinN++
		lose := s.stdinN%n == 0
		s.mu.Unlock()
		if lose {
			return nil, status.Error(codes.Unavailable, "connection reset (reply lost)")
		}
	}
	return pb.TaskExecStdinWriteResponse_builder{}.Build(), nil
}

// TaskExecStdioRead streams output from the request's offset until the
// process's output ends.
func (s *Server) TaskExecStdioRead(req *pb.TaskExecStdioReadRequest, st grpc.ServerStreamingServer[pb.TaskExecStdioReadResponse]) error {
	p, err := s.exec(req.GetTaskId(), req.GetExecId())
	if err != nil {
		return err
	}
	out := p.stdout
	if req.GetFileDescriptor() == pb.TaskExecStdioFileDescriptor_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR {
		out = p.stderr
	}
	off, sent := req.GetOffset(), 0
	for {
		b, closed, changed := out.from(off)
		if cut := s.cfg.CutStdioAfter; cut > 0 && len(b) > 0 {
			if sent >= cut {
				return status.Error(codes.Unavailable, "connection reset")
			}
			b = b[:min(len(b), cut-sent)]
			sent += len(b)
		}
		if len(b) > 0 {
			if err := st.Send(pb.TaskExecStdioReadResponse_builder{Data: b}.Build()); err != nil {
				return err
			}
			off += uint64(len(b))
			continue
		}
		if closed {
			return nil
		}
		select {
		case <-changed:
		case <-st.Context().Done():
			return st.Context().Err()
		}
	}
}

// TaskExecWait waits for the process: its exit code, or the signal that
// killed it.
func (s *Server) TaskExecWait(ctx context.Context, req *pb.TaskExecWaitRequest) (*pb.TaskExecWaitResponse, error) {
	p, err := s.exec(req.GetTaskId(), req.GetExecId())
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := int32(ws.Signal())
		return pb.TaskExecWaitResponse_builder{Signal: &sig}.Build(), nil
	}
	code := int32(p.state.ExitCode())
	return pb.TaskExecWaitResponse_builder{Code: &code}.Build(), nil
}

func sortNewestFirst(v []*pb.SandboxInfo) {
	sort.Slice(v, func(i, j int) bool { return v[i].GetCreatedAt() > v[j].GetCreatedAt() })
}
