package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// stderrKeep is how much of a process's recent standard error is kept for
// error messages.
const stderrKeep = 4 << 10

// closeWait bounds how long closing a stream waits for its process to end
// on its own (stdin closed) before the exec connection is cut.
const closeWait = 5 * time.Second

// executor is an exec of argv in container of pod: over websockets
// (the protocol the API server and kubelets speak since v1.30), falling
// back to SPDY where the upgrade fails (an older server, a proxy that
// does not pass websockets) — as kubectl exec does.
func (c *cluster) executor(pod, container string, argv []string, stdin bool) (remotecommand.Executor, error) {
	req := c.core.RESTClient().Post().
		Resource("pods").Namespace(c.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   argv,
			Stdin:     stdin,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	u := req.URL()
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", u)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: exec in pod %s: %w", pod, err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", u.String())
	if err != nil {
		return nil, fmt.Errorf("kubernetes: exec in pod %s: %w", pod, err)
	}
	// The websocket executor reports a refused upgrade with
	// k8s.io/streaming's error type; apimachinery's copy of the package
	// has a type of its own, which would never match.
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: exec in pod %s: %w", pod, err)
	}
	return ex, nil
}

// execRun runs argv in the pod to its end, with stdin (nil: none), and
// returns its exit code and its standard error's tail. Standard output is
// discarded.
func (c *cluster) execRun(ctx context.Context, pod, container string, argv []string, stdin io.Reader) (int, string, error) {
	ex, err := c.executor(pod, container, argv, stdin != nil)
	if err != nil {
		return 0, "", err
	}
	var errTail tail
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: &errTail})
	var code utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, errTail.String(), nil
	case errors.As(err, &code):
		return code.Code, errTail.String(), nil
	}
	return 0, errTail.String(), fmt.Errorf("kubernetes: exec %s in pod %s: %w", argv[0], pod, err)
}

// stream is a process in a pod joined to a byte stream: writes go to its
// stdin, reads come from its stdout. The exec runs in a goroutine the
// stream owns; Close ends it and waits for it.
type stream struct {
	inR  *io.PipeReader
	inW  *io.PipeWriter
	outR *io.PipeReader
	outW *io.PipeWriter

	cancel context.CancelFunc
	done   chan struct{} // closed when the exec has returned
	once   sync.Once

	errTail tail
}

// attach starts argv in the pod with its stdin and stdout on a stream.
// The exec outlives ctx (it lasts until Close); ctx only bounds setting
// it up.
func (c *cluster) attach(ctx context.Context, pod, container string, argv []string) (*stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ex, err := c.executor(pod, container, argv, true)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &stream{cancel: cancel, done: make(chan struct{})}
	s.inR, s.inW = io.Pipe()
	s.outR, s.outW = io.Pipe()
	go s.run(sctx, ex, pod)
	return s, nil
}

func (s *stream) run(ctx context.Context, ex remotecommand.Executor, pod string) {
	defer close(s.done)
	err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.inR, Stdout: s.outW, Stderr: &s.errTail})
	if err == nil {
		err = io.EOF
	} else {
		err = fmt.Errorf("kubernetes: exec stream in pod %s: %w", pod, err)
	}
	// The reader sees the end of the process (or why the stream broke);
	// a writer sees that nothing reads its stdin any more.
	s.outW.CloseWithError(err)
	s.inR.CloseWithError(err)
}

func (s *stream) Read(p []byte) (int, error)  { return s.outR.Read(p) }
func (s *stream) Write(p []byte) (int, error) { return s.inW.Write(p) }

// Close closes the process's stdin, on which the agent exits, and waits
// for the exec to end (cutting the connection after closeWait).
func (s *stream) Close() error {
	s.once.Do(func() {
		s.inW.Close()
		// Output nobody reads any more must not hold the exec open.
		s.outR.Close()
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
		}
		s.cancel()
		<-s.done
	})
	return nil
}

// Stderr is the process's recent standard error.
func (s *stream) Stderr() string { return s.errTail.String() }

// tail keeps the last stderrKeep bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrKeep {
		t.buf = t.buf[len(t.buf)-stderrKeep:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
