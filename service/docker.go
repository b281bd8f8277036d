package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// SettingTask is the [envs.Spec] setting that names a task: the docker
// backend then opens the task's own container, persistent and left
// running between commands (as the docker section's task and persistent
// would, for this spec alone).
const SettingTask = "task"

// DockerOptions are the docker backend's options for spec, from the
// configuration's docker section.
func (s *Service) DockerOptions(spec envs.Spec) docker.Options {
	c := s.opts.Config.Docker
	image := spec.Image
	if image == "" {
		image = c.Image
	}
	o := docker.Options{
		Image:        image,
		AgentBinary:  c.AgentBinary,
		Task:         c.Task,
		Persistent:   c.Persistent,
		ReadOnlyRoot: c.ReadOnlyRoot,
		Workspace:    spec.Settings["workspace"],
		Dir:          spec.Dir,
		Env:          spec.Env,
		Limits:       envs.Limits{MemoryBytes: spec.Limits.MemoryBytes, CPUs: spec.Limits.CPUs},
		PidsLimit:    spec.Limits.Pids, // zero: the backend's default cap
		Network:      cmp.Or(spec.Network, c.Network),
		Progress:     s.opts.Progress,
		Logger:       s.log,
	}
	if t := spec.Settings[SettingTask]; t != "" {
		o.Task, o.Persistent, o.KeepRunning = t, true, true
	}
	return o
}

// dockerProvider is the docker backend's row: from the warm pool when the
// Service keeps one; a container whose network is an allow-list is made
// for its session alone, with its own network and egress proxy.
func (s *Service) dockerProvider() envs.Provider {
	p := docker.Provider(s.DockerOptions)
	if s.pool != nil {
		p = s.pool.Provider(s.DockerOptions)
	}
	p.Tasks = dockerTasks{}
	p.TaskOf = func(spec envs.Spec) string { return s.DockerOptions(spec).Task }
	if s.pool != nil {
		p.Warm = s.WarmDocker
	}
	p.Missing = func(spec envs.Spec) error {
		if s.DockerOptions(spec).Image == "" {
			return ErrNoImage
		}
		return nil
	}
	open, caps := p.New, p.Capabilities
	p.New = func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
		if o := s.DockerOptions(spec); o.Network == docker.NetworkAllowlist {
			return s.openDockerAllowlist(ctx, o)
		}
		return open(ctx, spec)
	}
	p.Capabilities = func(ctx context.Context, spec envs.Spec) envs.Capabilities {
		if s.DockerOptions(spec).Network != docker.NetworkAllowlist {
			return caps(ctx, spec)
		}
		spec.Network = "none" // the rest of the row is that of any container
		c := caps(ctx, spec)
		c[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network allowlist: an internal network whose only exit is the session's egress proxy (hosts from sandbox.network)"}
		if err := docker.CheckEgress(); err != nil {
			c[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: err.Error()}
		}
		return c
	}
	return p
}

// openDockerAllowlist opens a container on a network of its own whose
// only exit is the session's egress proxy, listening on the network's
// gateway: the hosts of sandbox.network.allow pass, others are asked
// about through the session's approver, and refusals are in each result.
// The proxy and the network go with the environment, or at once when
// opening it fails.
func (s *Service) openDockerAllowlist(ctx context.Context, o docker.Options) (env envs.Environment, err error) {
	cli, own := o.Client, o.Client == nil
	if own {
		if cli, err = docker.NewClient(); err != nil {
			return nil, err
		}
	}
	sb := &sandbox{policy: confine.Policy{Profile: confine.ProfileOff, Network: confine.NetworkAllowlist}, backend: "docker"}
	sb.release = func(context.Context) error {
		if own {
			return cli.Close()
		}
		return nil
	}
	defer func() {
		if err != nil {
			sb.close(context.WithoutCancel(ctx))
		}
	}()
	nw, err := docker.NewEgressNetwork(ctx, cli, o.Owner)
	if err != nil {
		return nil, err
	}
	closeClient := sb.release
	sb.release = func(ctx context.Context) error { return errors.Join(nw.Close(ctx), closeClient(ctx)) }
	if err := s.startEgress(ctx, sb, net.JoinHostPort(nw.Gateway, "0")); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	if err := nw.Guard(ctx, sb.proxy.Port()); err != nil {
		return nil, err
	}
	o.Egress, o.Network, o.Client = nw, "", cli
	o.Env = maps.Clone(o.Env)
	if o.Env == nil {
		o.Env = map[string]string{}
	}
	maps.Copy(o.Env, sb.proxy.Env())
	e, err := docker.New(ctx, o)
	if err != nil {
		return nil, err
	}
	return &sandboxedDocker{sandboxedEnv: &sandboxedEnv{Environment: e, sb: sb}, d: e}, nil
}

// sandboxedDocker is an allow-listed docker environment: its commands
// report the proxy's refusals, and the container's file transfer and
// agent state stay reachable (workspace sync, the session's jobs).
type sandboxedDocker struct {
	*sandboxedEnv
	d *docker.Env
}

var (
	_ envs.FileTransfer = (*sandboxedDocker)(nil)
	_ envs.TreeTransfer = (*sandboxedDocker)(nil)
)

// PutFile writes r to path in the container.
func (e *sandboxedDocker) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	return e.d.PutFile(ctx, path, r, perm)
}

// GetFile opens path in the container for reading.
func (e *sandboxedDocker) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	return e.d.GetFile(ctx, path)
}

// PutTree unpacks the tar stream r into dir in the container.
func (e *sandboxedDocker) PutTree(ctx context.Context, dir string, r io.Reader) error {
	return e.d.PutTree(ctx, dir, r)
}

// GetTree streams dir of the container as tar.
func (e *sandboxedDocker) GetTree(ctx context.Context, dir string) (io.ReadCloser, error) {
	return e.d.GetTree(ctx, dir)
}

// Fallback says why commands run through the exec API ("" with the agent).
func (e *sandboxedDocker) Fallback() string { return e.d.Fallback() }

// CLIPath is where commands find the runbox CLI in the container.
func (e *sandboxedDocker) CLIPath() string { return e.d.CLIPath() }

// ContainerID is the container commands currently run in.
func (e *sandboxedDocker) ContainerID() string { return e.d.ContainerID() }

// WarmDocker starts keeping docker containers ready for spec (the
// server's own spec, before its first session asks). Without a pool, or
// for a spec whose network is an allow-list, it does nothing; a spec that
// cannot be pooled (a task's persistent container) is an error.
func (s *Service) WarmDocker(spec envs.Spec) error {
	if s.pool == nil || s.DockerOptions(spec).Network == docker.NetworkAllowlist {
		// An allow-listed container has its own network and proxy.
		return nil
	}
	if err := s.pool.Warm(s.DockerOptions(spec)); err != nil {
		return fmt.Errorf("docker pool: %w", err)
	}
	return nil
}

// DockerPool is the warm pool of docker containers the Service keeps
// (Options.WarmPool with docker.pool above zero); nil when it keeps none.
func (s *Service) DockerPool() *docker.Pool { return s.pool }

// closePool closes the warm pool, if any.
func (s *Service) closePool(ctx context.Context) error {
	if s.pool == nil {
		return nil
	}
	return s.pool.Close(ctx)
}
