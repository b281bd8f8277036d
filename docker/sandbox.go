package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// sandbox is the docker backend's part of the agent host: the task's
// container. Everything about the agent — deploying it, its stream, loss
// and recreation, the fallback — is package remote's.
type sandbox struct {
	cli    *client.Client
	opts   Options // defaults filled by New
	labels map[string]string
	img    imageInfo
	log    *slog.Logger
	// agent is the agent build mounted into the containers this sandbox
	// creates; nil leaves deploying the agent to the host (a copy).
	agent *agentBuild
	// release, when set (a pool's container), is offered an ephemeral
	// container to remove in the background; false means remove it here.
	release func(ctx context.Context, s *sandbox, id string) bool

	mu   sync.Mutex
	last string // the container Provision returned last
}

var (
	_ remote.Sandbox    = (*sandbox)(nil)
	_ remote.NativeExec = (*sandbox)(nil)
	_ remote.Explainer  = (*sandbox)(nil)
)

// Provision makes sure the task's container exists and runs: the one it
// had, else (persistent mode) the task's container found by its labels,
// else a new one. A container it creates and cannot start is removed.
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.last
	if id != "" {
		if _, err := s.cli.ContainerInspect(ctx, id); cerrdefs.IsNotFound(err) {
			id = ""
		} else if err != nil {
			return remote.Instance{}, fmt.Errorf("docker: inspect container %s: %w", short(id), err)
		}
	}
	if id == "" && s.opts.Persistent {
		found, err := s.find(ctx)
		if err != nil {
			return remote.Instance{}, err
		}
		id = found
	}
	created, mounted := false, false
	if id == "" {
		var err error
		if id, err = s.create(ctx); err != nil {
			return remote.Instance{}, err
		}
		created, mounted = true, s.agent != nil
		// A container just created is known to be stopped: no inspect.
		if err := s.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
			s.discard(context.WithoutCancel(ctx), id, false)
			return remote.Instance{}, fmt.Errorf("docker: start container %s: %w", short(id), err)
		}
	} else {
		var err error
		if mounted, err = s.run(ctx, id); err != nil {
			return remote.Instance{}, err
		}
	}
	s.last = id
	inst := remote.Instance{ID: id, OS: s.img.os, Arch: s.img.arch}
	if mounted {
		inst.Agent = s.mountedAgent(ctx, id, created)
	}
	return inst, nil
}

// mountedAgent returns the agent's path in container id, which mounts the
// agent volume, when the whole build is there; "" leaves the host to copy
// it. A fresh container that finds the volume incomplete (a fill cut
// short by a crash) has it filled again, once, for the containers after
// it.
func (s *sandbox) mountedAgent(ctx context.Context, id string, fresh bool) string {
	if s.agent.ready(ctx, s.cli, id) {
		return s.agent.inContainer()
	}
	if fresh {
		s.log.Debug("docker: agent volume incomplete; filling it again", "volume", s.agent.volume)
		if err := s.agent.ensureVolume(ctx, s.cli, s.opts.Image, true); err != nil {
			s.log.Debug("docker: refill agent volume", "err", err)
		}
	}
	return ""
}

// run starts (or unpauses) container id unless it runs, and says whether
// it mounts this sandbox's agent volume.
func (s *sandbox) run(ctx context.Context, id string) (mounted bool, err error) {
	ci, err := s.cli.ContainerInspect(ctx, id)
	if err != nil {
		return false, fmt.Errorf("docker: inspect container %s: %w", short(id), err)
	}
	if s.agent != nil {
		for _, m := range ci.Mounts {
			mounted = mounted || m.Name == s.agent.volume && m.Destination == agentMountDir
		}
	}
	if ci.State != nil && ci.State.Running && !ci.State.Paused {
		return mounted, nil
	}
	if ci.State != nil && ci.State.Paused {
		err = s.cli.ContainerUnpause(ctx, id)
	} else {
		err = s.cli.ContainerStart(ctx, id, container.StartOptions{})
	}
	if err != nil {
		return false, fmt.Errorf("docker: start container %s: %w", short(id), err)
	}
	return mounted, nil
}

// CopyIn writes src to p in the container: with the archive API, or,
// where that cannot write (a read-only root, with a tmpfs at the agent's
// directory), through an exec that writes its stdin. A file of that size
// already there is kept.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	if st, err := s.cli.ContainerStatPath(ctx, id, p); err == nil && st.Size == size {
		return nil // already there (a reused container)
	}
	err := copyToContainer(ctx, s.cli, id, p, io.NewSectionReader(src, 0, size), size, perm)
	if err == nil {
		return nil
	}
	// The engine can cut an exec's stdin short when it is closed quickly,
	// so the script checks the size it received and a short copy is tried
	// again.
	var xerr error
	for range 3 {
		if xerr = writeByExec(ctx, s.cli, id, p, io.NewSectionReader(src, 0, size), size, perm); xerr == nil {
			return nil
		}
	}
	return fmt.Errorf("docker: no writable location for %s: %v; %v", p, err, xerr)
}

// Attach starts argv with an exec whose stdin and stdout are the stream.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	st, err := attach(ctx, s.cli, id, argv)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Describe says what became of container id, for error messages: what
// [sandbox.Explain] finds, as text.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	return s.Explain(ctx, id).Error()
}

// Release removes an ephemeral container, stops a persistent one, and
// leaves one running with KeepRunning. An ephemeral container is removed
// with one forced remove, not a stop first: the agent has already taken
// its commands down, and nothing in it is kept, so a grace period would
// only make Close slower.
func (s *sandbox) Release(ctx context.Context, id string) error {
	switch {
	case s.opts.Persistent && s.opts.KeepRunning:
		return nil
	case s.opts.Persistent:
		return s.stopContainer(ctx, id)
	case s.release != nil && s.release(ctx, s, id):
		return nil
	}
	return s.forceRemove(ctx, id)
}

// Capabilities adds what the container enforces however commands run.
func (s *sandbox) Capabilities(caps envs.Capabilities) {
	o := s.opts
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "container (capabilities dropped, no-new-privileges, pids limit)"}
	limits := fmt.Sprintf("container: pids %d", o.PidsLimit)
	if o.Limits.MemoryBytes > 0 {
		limits += fmt.Sprintf(", memory %d bytes", o.Limits.MemoryBytes)
	}
	if o.Limits.CPUs > 0 {
		limits += fmt.Sprintf(", cpus %g", o.Limits.CPUs)
	}
	caps[envs.CapLimits] = envs.CapInfo{State: envs.Active, Detail: limits + " (whole container; per-command limits only where the agent can make cgroups)"}
	switch {
	case o.Egress != nil:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network allowlist: internal network " + o.Egress.Name + ", the egress proxy at " + o.Egress.Gateway + " its only exit"}
	case o.Network == "none":
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network none"}
	case o.Network == "":
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "the engine's default bridge network (use network none or allowlist)"}
	default:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Degraded, Detail: "network " + o.Network}
	}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "docker archive API"}
	caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported}
	if o.Workspace != "" {
		caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Active, Detail: o.Workspace + " is mounted read-write at /workspace"}
	} else {
		caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "no host directory is mounted"}
	}
}

// Native is the exec API fallback for container id.
func (s *sandbox) Native(ctx context.Context, id string) (envs.Environment, error) {
	return newExecEnv(s.cli, id, s.img.env, *s.opts.Spawn), nil
}
