package daytona

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"
	"github.com/gorilla/websocket"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
)

// proc is a command running in a toolbox session.
type proc struct {
	x           *execEnv
	marker, sid string
	cid         string
	separate    bool
	outR, errR  *io.PipeReader
	outW, errW  *io.PipeWriter
	stdin       io.WriteCloser
	done        chan struct{} // closed when st and err are final
	st          envs.ExitStatus
	err         error
	mu          sync.Mutex
	killedAs    *envs.ExitStatus // what a kill made of the command
	conn        *websocket.Conn  // the log stream; set before pump starts
}

// abort cuts the log stream, so pump ends even if the toolbox never
// closes it.
func (p *proc) abort() { p.conn.Close() }

var _ envs.Process = (*proc)(nil)

func newProc(x *execEnv, marker, sid, cid string, separate bool) *proc {
	p := &proc{x: x, marker: marker, sid: sid, cid: cid, separate: separate, done: make(chan struct{})}
	p.outR, p.outW = io.Pipe()
	p.errR, p.errW = io.Pipe()
	return p
}

// pump copies the log stream into the pipes until the command ends, then
// reads its exit code. It is owned by the process: it ends with the
// stream, which the environment's Close cuts.
func (p *proc) pump(conn *websocket.Conn) {
	// Closing the environment cuts the stream and the readers' ends of
	// the pipes, so a pump blocked on output nobody reads ends too.
	stop := context.AfterFunc(p.x.ctx, func() {
		conn.Close()
		p.outR.Close()
		p.errR.Close()
	})
	errw := io.Writer(p.errW)
	if !p.separate {
		errw = p.outW
	}
	serr := demux(conn, p.outW, errw)
	conn.Close()
	stop()
	st, err := p.exitStatus(serr)
	p.mu.Lock()
	if p.killedAs != nil {
		st, err = *p.killedAs, nil
	}
	p.st, p.err = st, err
	p.mu.Unlock()
	p.outW.Close()
	p.errW.Close()
	close(p.done)
	p.x.deleteSession(p.sid)
	p.x.forget(p)
}

// exitStatus reads the command's exit code once its output has ended (the
// toolbox may record it a moment after).
func (p *proc) exitStatus(streamErr error) (envs.ExitStatus, error) {
	ctx, cancel := context.WithTimeout(p.x.ctx, 30*time.Second)
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		c, hr, err := p.x.tb.ProcessAPI.GetSessionCommand(ctx, p.sid, p.cid).Execute()
		if hr != nil && hr.Body != nil {
			hr.Body.Close()
		}
		if err != nil {
			p.mu.Lock()
			killed := p.killedAs != nil
			p.mu.Unlock()
			if killed {
				return envs.ExitStatus{}, nil
			}
			return envs.ExitStatus{}, p.x.gone(fmt.Errorf("daytona: read the command's exit code: %w (output stream: %v)", err, streamErr))
		}
		if c.ExitCode != nil {
			return launch.ShellStatus(int(*c.ExitCode)), nil // sh reports death by signal n as 128+n
		}
		select {
		case <-ctx.Done():
			return envs.ExitStatus{}, p.x.gone(fmt.Errorf("daytona: the command's output ended (%v) but it has no exit code", streamErr))
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

// kill kills the command's processes in the sandbox and ends its session;
// st is what the command's status becomes.
func (p *proc) kill(ctx context.Context, st envs.ExitStatus) error {
	p.mu.Lock()
	if p.killedAs == nil {
		select {
		case <-p.done:
		default:
			p.killedAs = &st
		}
	}
	p.mu.Unlock()
	select {
	case <-p.done:
		return nil
	default:
	}
	err := p.x.killTree(ctx, p.marker)
	p.x.deleteSession(p.sid)
	return err
}

func (p *proc) PID() int              { return 0 }
func (p *proc) Stdin() io.WriteCloser { return p.stdin }
func (p *proc) Output() io.Reader     { return p.outR }

func (p *proc) Stderr() io.Reader {
	if p.separate {
		return p.errR
	}
	return nil
}

func (p *proc) Signal(ctx context.Context, sig syscall.Signal) error {
	return fmt.Errorf("daytona: signal %v: %w", sig, envs.ErrUnsupported)
}

func (p *proc) Kill(ctx context.Context) error {
	return p.kill(ctx, envs.SignalStatus(syscall.SIGKILL))
}

func (p *proc) Resize(context.Context, envs.WindowSize) error {
	return fmt.Errorf("daytona: resize: no terminal: %w", envs.ErrUnsupported)
}

func (p *proc) Wait(ctx context.Context) (envs.ExitStatus, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return envs.ExitStatus{}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st, p.err
}

// relayWriter sends stdin through the toolbox's input route as base64
// lines, which the wrapper's relay decodes; Close sends the end line.
type relayWriter struct {
	p      *proc
	mu     sync.Mutex
	closed bool
}

const relayChunk = 48 << 10

func (w *relayWriter) send(line string) error {
	ctx, cancel := context.WithTimeout(w.p.x.ctx, 60*time.Second)
	defer cancel()
	hr, err := w.p.x.tb.ProcessAPI.SendInput(ctx, w.p.sid, w.p.cid).Request(*toolbox.NewSessionSendInputRequest(line)).Execute()
	if hr != nil && hr.Body != nil {
		hr.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("daytona: stdin: %w", err)
	}
	return nil
}

func (w *relayWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	n := 0
	for len(b) > 0 {
		c := b[:min(len(b), relayChunk)]
		if err := w.send(base64.StdEncoding.EncodeToString(c) + "\n"); err != nil {
			return n, err
		}
		n += len(c)
		b = b[len(c):]
	}
	return n, nil
}

func (w *relayWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	select {
	case <-w.p.done:
		return nil
	default:
	}
	return w.send(".\n")
}
