package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"
)

// resolve finds the docker container behind a pod's container; an empty
// name means the pod's first container, as kubectl assumes.
func (p *provider) resolve(ctx context.Context, namespace, podName, name string) (string, error) {
	pod, err := p.GetPod(ctx, namespace, podName)
	if err != nil {
		return "", err
	}
	if name == "" && len(pod.Spec.Containers) > 0 {
		name = pod.Spec.Containers[0].Name
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return containerName(pod, name), nil
		}
	}
	return "", errdefs.NotFoundf("pod %s/%s has no container %q", namespace, podName, name)
}

// RunInContainer runs cmd in the container through the docker engine's exec
// API and returns an error the API server turns into the exit code: the
// remotecommand server recognises only k8s.io/utils/exec.ExitError, unwrapped.
func (p *provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	id, err := p.resolve(ctx, namespace, podName, containerName)
	if err != nil {
		return err
	}
	tty := attach.TTY()
	opts := container.ExecOptions{
		Cmd: cmd, Tty: tty, AttachStdin: attach.Stdin() != nil,
		AttachStdout: attach.Stdout() != nil, AttachStderr: attach.Stderr() != nil,
	}
	if tty {
		opts.ConsoleSize = initialSize(attach.Resize())
	}
	exec, err := p.docker.ContainerExecCreate(ctx, id, opts)
	if err != nil {
		return fmt.Errorf("node: exec create in %s: %w", id, err)
	}
	conn, err := p.docker.ContainerExecAttach(ctx, exec.ID, container.ExecAttachOptions{Tty: tty, ConsoleSize: opts.ConsoleSize})
	if err != nil {
		return fmt.Errorf("node: exec attach in %s: %w", id, err)
	}
	defer conn.Close()
	if s := opts.ConsoleSize; s != nil {
		// Not every engine applies the initial size given at creation.
		_ = p.docker.ContainerExecResize(ctx, exec.ID, container.ResizeOptions{Height: s[0], Width: s[1]})
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if tty && attach.Resize() != nil {
		resizeCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		wg.Go(func() {
			p.forwardResize(resizeCtx, attach.Resize(), func(o container.ResizeOptions) error {
				return p.docker.ContainerExecResize(resizeCtx, exec.ID, o)
			})
		})
	}
	if err := pump(conn, attach, tty); err != nil {
		return err
	}
	info, err := p.exitOf(ctx, exec.ID)
	if err != nil {
		return fmt.Errorf("node: exec inspect in %s: %w", id, err)
	}
	if info.ExitCode != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command exited with %d", info.ExitCode), Code: info.ExitCode}
	}
	return nil
}

// exitOf returns the ended exec's state. The engine may close the output a
// moment before it records the exit code, so a still-running exec is asked
// again, for at most ten seconds.
func (p *provider) exitOf(ctx context.Context, execID string) (container.ExecInspect, error) {
	for range 1000 {
		info, err := p.docker.ContainerExecInspect(ctx, execID)
		if err != nil || !info.Running {
			return info, err
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return container.ExecInspect{}, errors.New("the exec did not end after its output did")
}

// pump copies stdin into the hijacked connection (closing its write side at
// the end of a plain stdin, so the process sees EOF) and the output back
// until the process has closed it. The stdin copy ends when the client's stream closes,
// which the caller's return brings about.
func pump(conn types.HijackedResponse, attach api.AttachIO, tty bool) error {
	if in := attach.Stdin(); in != nil {
		go func() {
			_, _ = io.Copy(conn.Conn, in)
			// A terminal has no end of input (^D is a byte like any
			// other), and docker ends a tty session's output when its
			// stdin is closed: only a plain stdin is closed at its end.
			if !tty {
				_ = conn.CloseWrite()
			}
		}()
	}
	stdout, stderr := writerOr(attach.Stdout()), writerOr(attach.Stderr())
	var err error
	if tty {
		_, err = io.Copy(stdout, conn.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, conn.Reader)
	}
	// The output ends before the exit status is sent, as a runtime's does.
	for _, w := range []io.WriteCloser{attach.Stdout(), attach.Stderr()} {
		if w != nil {
			_ = w.Close()
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("node: copying output: %w", err)
	}
	return nil
}

func writerOr(w io.WriteCloser) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// initialSizeWait bounds the wait for a terminal client's first size.
const initialSizeWait = 100 * time.Millisecond

// initialSize takes the terminal size a client sends as soon as the session
// is set up, so the command starts with it (as a kubelet's runtime does)
// rather than at 0x0 with a resize racing its first output.
func initialSize(sizes <-chan api.TermSize) *[2]uint {
	if sizes == nil {
		return nil
	}
	select {
	case s, ok := <-sizes:
		if ok && s.Width > 0 && s.Height > 0 {
			return &[2]uint{uint(s.Height), uint(s.Width)}
		}
	case <-time.After(initialSizeWait):
	}
	return nil
}

func (p *provider) forwardResize(ctx context.Context, sizes <-chan api.TermSize, resize func(container.ResizeOptions) error) {
	for {
		select {
		case <-ctx.Done():
			return
		case s, ok := <-sizes:
			if !ok {
				return
			}
			_ = resize(container.ResizeOptions{Height: uint(s.Height), Width: uint(s.Width)})
		}
	}
}

// AttachToContainer attaches to the container's main process (its stdin
// only when the pod asked for stdin: true).
func (p *provider) AttachToContainer(ctx context.Context, namespace, podName, containerName string, attach api.AttachIO) error {
	id, err := p.resolve(ctx, namespace, podName, containerName)
	if err != nil {
		return err
	}
	tty := attach.TTY()
	conn, err := p.docker.ContainerAttach(ctx, id, container.AttachOptions{Stream: true,
		Stdin: attach.Stdin() != nil, Stdout: attach.Stdout() != nil, Stderr: attach.Stderr() != nil})
	if err != nil {
		return fmt.Errorf("node: attach to %s: %w", id, err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	if tty && attach.Resize() != nil {
		resizeCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		wg.Go(func() {
			p.forwardResize(resizeCtx, attach.Resize(), func(o container.ResizeOptions) error {
				return p.docker.ContainerResize(resizeCtx, id, o)
			})
		})
	}
	return pump(conn, attach, tty)
}

// GetContainerLogs streams the container's output as docker keeps it.
func (p *provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	id, err := p.resolve(ctx, namespace, podName, containerName)
	if err != nil {
		return nil, err
	}
	info, err := p.docker.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("node: inspect %s: %w", id, err)
	}
	o := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: opts.Follow, Timestamps: opts.Timestamps}
	if opts.Tail > 0 {
		o.Tail = strconv.Itoa(opts.Tail)
	}
	if opts.SinceSeconds > 0 {
		o.Since = strconv.Itoa(opts.SinceSeconds) + "s"
	} else if !opts.SinceTime.IsZero() {
		o.Since = strconv.FormatInt(opts.SinceTime.Unix(), 10)
	}
	rc, err := p.docker.ContainerLogs(ctx, id, o)
	if err != nil {
		return nil, fmt.Errorf("node: logs of %s: %w", id, err)
	}
	if info.Config != nil && info.Config.Tty {
		return rc, nil
	}
	// Without a tty docker multiplexes stdout and stderr; a pod's log is both
	// in order, as the kubelet serves it.
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// GetStatsSummary reports no usage: nothing in the tests reads it.
func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.cluster}}, nil
}

func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}

func (p *provider) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return errdefs.InvalidInput("port-forward is not supported by this node")
}
