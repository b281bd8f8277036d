package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/spawn"
)

// execEnv runs each command with its own exec: the fallback when the agent
// cannot run in the container. It is degraded, and says so in its
// Capabilities: no session state, no PTY, no streaming processes, and a
// kill reaches only the command's own process (recorded in a pid file
// under /tmp), not its tree.
//
// Its fields never change after newExecEnv, so any number of commands may
// use it at once, and while the environment around it is set up again. It
// used to read the Env's fallback reason, which a recreation rewrote under
// a lock this type did not hold.
type execEnv struct {
	remote.RunOnly
	cli    *client.Client
	id     string
	base   []string     // the image's environment
	policy spawn.Policy // child-environment policy
}

func newExecEnv(cli *client.Client, id string, base []string, policy spawn.Policy) *execEnv {
	return &execEnv{
		RunOnly: remote.RunOnly{Name: "docker", How: "exec API"},
		cli:     cli, id: id, base: slices.Clone(base), policy: policy,
	}
}

// Both halves of the wrapper record the shell's pid so a timeout can kill it.
const (
	execShellWrapper = `echo $$ >"$1" 2>/dev/null; shift; exec /bin/sh -c "$1"`
	execArgvWrapper  = `echo $$ >"$1" 2>/dev/null; shift; exec "$@"`
)

func (x *execEnv) childEnv(overlay map[string]string) ([]string, *spawn.Result, error) {
	res, err := spawn.Build(spawn.Request{Base: x.base, Overlay: overlay, Policy: x.policy})
	if err != nil {
		return nil, nil, fmt.Errorf("docker: child environment: %w", err)
	}
	return res.Env, res, nil
}

func (x *execEnv) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	env, sres, err := x.childEnv(cmd.Env)
	if err != nil {
		return nil, err
	}
	pidFile := "/tmp/.runbox-exec-" + randomID() + ".pid"
	argv := execArgv(cmd, pidFile)
	if err := sres.CheckArgv(argv); err != nil {
		return nil, fmt.Errorf("docker: run: %w", err)
	}
	xc, err := x.cli.ContainerExecCreate(ctx, x.id, container.ExecOptions{
		Cmd: argv, Env: env, WorkingDir: cmd.Dir,
		AttachStdin: cmd.Stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, x.gone(err)
	}
	hr, err := x.cli.ContainerExecAttach(ctx, xc.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, x.gone(err)
	}
	defer hr.Close()
	start := time.Now()
	out, errc := remote.NativeOutput(cmd)
	if cmd.Stdin != nil {
		go func() { // ends with cmd.Stdin or when the connection is closed
			io.Copy(hr.Conn, cmd.Stdin)
			hr.CloseWrite()
		}()
	}
	st, stopped, _ := remote.AwaitNative(ctx, cmd.Timeout,
		func() error { return demuxAll(hr.Reader, out, errc) },
		func(envs.ExitStatus) {
			x.kill(pidFile)
			hr.Close()
		})
	res := &envs.Result{ExitStatus: st, Duration: time.Since(start)}
	if !stopped {
		if res.ExitStatus, err = x.exitStatus(ctx, xc.ID); err != nil {
			return nil, err
		}
	}
	x.cleanup(pidFile)
	res.TakeOutput(out, errc)
	return res, nil
}

// execArgv wraps cmd so its shell records its pid in pidFile.
func execArgv(cmd envs.Command, pidFile string) []string {
	// The engine copies stdout and stderr in separate streams whose frames
	// it may reorder; merging them in the container keeps arrival order.
	merge := ""
	if !cmd.SeparateStreams {
		merge = "exec 2>&1; "
	}
	if cmd.Shell != "" {
		return []string{"/bin/sh", "-c", merge + execShellWrapper, "runbox", pidFile, cmd.Shell}
	}
	return append([]string{"/bin/sh", "-c", merge + execArgvWrapper, "runbox", pidFile}, cmd.Args...)
}

// exitStatus reads the status of exec xid, whose output has ended.
func (x *execEnv) exitStatus(ctx context.Context, xid string) (envs.ExitStatus, error) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	xi, err := x.cli.ContainerExecInspect(ictx, xid)
	cancel()
	if err != nil {
		return envs.ExitStatus{}, x.gone(err)
	}
	if xi.Running {
		return envs.ExitStatus{}, x.gone(fmt.Errorf("exec output ended while it still runs"))
	}
	return launch.ShellStatus(xi.ExitCode), nil // sh reports death by signal n as 128+n
}

// kill kills the command's own process (degraded: not its tree).
func (x *execEnv) kill(pidFile string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	script := `p=$(cat "$1" 2>/dev/null) && kill -KILL "$p" 2>/dev/null; rm -f "$1"`
	x.quick(ctx, []string{"/bin/sh", "-c", script, "runbox", pidFile})
}

func (x *execEnv) cleanup(pidFile string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x.quick(ctx, []string{"rm", "-f", pidFile})
}

// quick runs a small detached exec and waits for it to end.
func (x *execEnv) quick(ctx context.Context, argv []string) error {
	xc, err := x.cli.ContainerExecCreate(ctx, x.id, container.ExecOptions{Cmd: argv, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	hr, err := x.cli.ContainerExecAttach(ctx, xc.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer hr.Close()
	return demuxAll(hr.Reader, io.Discard, io.Discard)
}

// gone turns an engine error into errContainerGone when the container is
// no longer there or no longer runs.
func (x *execEnv) gone(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ci, ierr := x.cli.ContainerInspect(ctx, x.id)
	if cerrdefs.IsNotFound(ierr) || (ierr == nil && ci.State != nil && !ci.State.Running) || client.IsErrConnectionFailed(ierr) {
		return fmt.Errorf("docker: container %s: %w: %v", short(x.id), remote.ErrGone, err)
	}
	return err
}

// Capabilities says what the exec API gives and what it does not.
func (x *execEnv) Capabilities() envs.Capabilities {
	caps := x.Lacks()
	caps[envs.CapTreeKill] = envs.CapInfo{State: envs.Degraded, Detail: "exec API: only the command's process is killed"}
	caps[envs.CapSignals] = envs.CapInfo{State: envs.Degraded, Detail: "exec API: signals through kill inside the container"}
	caps[envs.CapStdin] = envs.CapInfo{State: envs.Active, Detail: "exec API attach"}
	return caps
}

func (x *execEnv) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	return putFile(ctx, x.cli, x.id, path, r, perm)
}

func (x *execEnv) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	return getFile(ctx, x.cli, x.id, path)
}
