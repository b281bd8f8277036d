package singularity

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// stopTimeout is the grace an instance's processes get between SIGTERM
// and SIGKILL when it is stopped: the agent has already taken its
// commands down by then.
const stopTimeout = 2 * time.Second

// sandbox is the singularity backend's part of the agent host: one named
// instance. Everything about the agent — its stream, loss and recreation
// — is package remote's.
type sandbox struct {
	p        program
	o        Options // defaults filled
	userns   bool    // instances start with --userns
	name     string  // the instance's name, fixed for the environment
	hostDir  string  // bound at agentDir in the instance
	agentDir string
	log      *slog.Logger
}

var _ remote.Sandbox = (*sandbox)(nil)

// Provision returns the instance, starting it when it does not run (the
// first time, after it was stopped, or when a task's was never started).
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	inst := remote.Instance{ID: s.name, OS: "linux", Arch: runtime.GOARCH}
	if _, up, err := s.p.running(ctx, s.name); err != nil {
		return inst, err
	} else if up {
		return inst, nil
	}
	if err := os.MkdirAll(s.hostDir, 0o700); err != nil {
		return inst, fmt.Errorf("singularity: instance directory: %w", err)
	}
	args := startArgs(s.o, s.name, s.hostDir, s.agentDir, s.userns)
	s.log.Debug("singularity: start instance", "name", s.name, "args", args)
	if err := s.p.start(ctx, args, s.o.StartTimeout); err != nil {
		// A start cut short may have left the instance half up.
		s.p.stop(context.WithoutCancel(ctx), s.name, stopTimeout)
		return inst, err
	}
	return inst, nil
}

// CopyIn writes src to p: straight into the host directory bound at the
// agent's directory when p is in it, else through `sh -c 'cat >'` in the
// instance. A file of that size already in the host directory is kept.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	if rel, ok := within(s.agentDir, p); ok {
		return copyFile(filepath.Join(s.hostDir, filepath.FromSlash(rel)), src, size, perm)
	}
	cmd := s.p.command(ctx, "exec", "--cleanenv", "instance://"+id, "/bin/sh", "-c",
		`mkdir -p "$(dirname "$1")" && cat >"$1.tmp" && chmod "$2" "$1.tmp" && mv -f "$1.tmp" "$1"`,
		"sh", p, strconv.FormatUint(uint64(perm.Perm()), 8))
	cmd.Stdin = io.NewSectionReader(src, 0, size)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("singularity: copy %s into instance %s: %w: %s", p, id, err, lastLines(strings.TrimSpace(string(out)), 3))
	}
	return nil
}

// within says whether p is dir or below it, and p's path relative to dir.
func within(dir, p string) (string, bool) {
	rel, ok := strings.CutPrefix(path.Clean(p), path.Clean(dir)+"/")
	return rel, ok && rel != "" && !strings.HasPrefix(rel, "../")
}

// copyFile writes size bytes of src to dst (through a temporary file
// renamed into place, so a reader never sees half a file) unless dst
// already is a regular file of that size. The directory is writable from
// inside the instance: a link put there is replaced, never followed.
func copyFile(dst string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("singularity: copy %s: %w", dst, err)
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".copy-*")
	if err != nil {
		return fmt.Errorf("singularity: copy %s: %w", dst, err)
	}
	defer os.Remove(f.Name())
	_, err = io.Copy(f, io.NewSectionReader(src, 0, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm.Perm())
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		return fmt.Errorf("singularity: copy %s: %w", dst, err)
	}
	return nil
}

// Attach starts argv in the instance with `exec --cleanenv`: the
// process gets the instance's clean environment, not runbox's.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	args := []string{"exec", "--cleanenv"}
	if s.o.Dir != "" {
		args = append(args, "--pwd", s.o.Dir)
	}
	args = append(append(args, "instance://"+id), argv...)
	return s.p.attach(args)
}

// Describe says what became of the instance, for the error of a command
// that lost it.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	in, up, err := s.p.running(ctx, id)
	switch {
	case err != nil:
		return fmt.Sprintf("instance %s cannot be listed: %v", id, err)
	case up:
		return fmt.Sprintf("instance %s (pid %d) is running but its agent died", id, in.PID)
	}
	return fmt.Sprintf("instance %s is gone (stopped, or its process ended)", id)
}

// Release stops an environment's own instance and removes its host
// directory; a task's instance is left running for the task's next run.
func (s *sandbox) Release(ctx context.Context, id string) error {
	if s.o.Task != "" {
		return nil
	}
	err := s.p.stop(ctx, id, stopTimeout)
	if err == nil {
		err = removeHostDir(s.hostDir)
	}
	return err
}

// removeHostDir removes an instance's host directory.
func removeHostDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("singularity: remove %s: %w", dir, err)
	}
	return nil
}

// Capabilities lays what the instance enforces over the agent's.
func (s *sandbox) Capabilities(caps envs.Capabilities) {
	instanceCapabilities(s.o, s.p.path, s.userns, caps)
}

// instanceCapabilities is what an instance of o enforces however
// commands run in it.
func instanceCapabilities(o Options, prog string, userns bool, caps envs.Capabilities) {
	mode := prog + ", setuid starter"
	if userns {
		mode = prog + ", user namespace"
	}
	switch o.Contain {
	case ContainAll:
		caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "apptainer instance (" + mode + ", containall: own PID and IPC namespaces, minimal /dev, no host home or /tmp, clean environment)"}
	case ContainDirs:
		caps[envs.CapContainment] = envs.CapInfo{State: envs.Degraded, Detail: "apptainer instance (" + mode + ", contain: own PID namespace, minimal /dev, no host home or /tmp, but the host's IPC namespace)"}
	default:
		caps[envs.CapContainment] = envs.CapInfo{State: envs.Degraded, Detail: "apptainer instance (" + mode + ", own PID namespace) with the host's home, /tmp and IPC namespace"}
	}
	caps[envs.CapLimits] = envs.CapInfo{State: envs.Unsupported, Detail: "no limits on the instance; per-command limits only where the agent can make cgroups"}
	if o.Network == "none" {
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network none (a network namespace with loopback only)"}
	} else {
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "the host's network (use network none)"}
	}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "through the runbox agent"}
	caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported}
	var host []string
	if o.Workspace != "" {
		host = append(host, o.Workspace+" read-write at /workspace")
	}
	host = append(host, o.Binds...)
	if o.Contain == ContainNone {
		host = append(host, "the home directory and /tmp")
	}
	if len(host) > 0 {
		caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Active, Detail: "bound from the host: " + strings.Join(host, ", ")}
	} else {
		caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "no host directory is bound (but runbox's agent directory)"}
	}
}
