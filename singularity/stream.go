package singularity

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// streamCloseTimeout bounds how long Close waits for the exec'd process
// to exit once its stdin is closed, before it is killed.
const streamCloseTimeout = 10 * time.Second

// stream is a process started with `exec instance://…`: its stdin and
// stdout are the byte stream, its recent stderr is kept for errors.
type stream struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tail

	once sync.Once
	err  error
}

// attach starts args (an exec of the program) as a stream.
func (p program) attach(args []string) (*stream, error) {
	// Not tied to a ctx: the stream outlives the call that opens it, and
	// only Close ends it.
	cmd := p.command(context.Background(), args...)
	s := &stream{cmd: cmd, stderr: &tail{max: 4096}}
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("singularity: exec: %w", err)
	}
	if s.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("singularity: exec: %w", err)
	}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("singularity: exec: %w", err)
	}
	return s, nil
}

func (s *stream) Read(b []byte) (int, error)  { return s.stdout.Read(b) }
func (s *stream) Write(b []byte) (int, error) { return s.stdin.Write(b) }

// Stderr is the process's recent standard error.
func (s *stream) Stderr() string { return s.stderr.String() }

// Close closes the process's stdin, which ends the agent, and waits for
// it; a process still there after streamCloseTimeout is killed with its
// process group.
func (s *stream) Close() error {
	s.once.Do(func() {
		s.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case s.err = <-done:
		case <-time.After(streamCloseTimeout):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			s.err = <-done
		}
		if _, exited := s.err.(*exec.ExitError); exited {
			s.err = nil // the agent's exit status says nothing to the caller
		}
	})
	return s.err
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
