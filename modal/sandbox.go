package modal

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modal-labs/libmodal/modal-go"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// sandbox is the modal backend's part of the agent host: the task's Modal
// sandbox. The agent, loss detection and recreation are package remote's.
type sandbox struct {
	cl    *sdk.Client
	creds Credentials
	opts  Options
	log   *slog.Logger

	mu   sync.Mutex
	cur  *sdk.Sandbox            // the sandbox Provision returned last
	byID map[string]*sdk.Sandbox // sandboxes this environment made
}

var _ remote.Sandbox = (*sandbox)(nil)

// Provision returns the sandbox it had while that still runs, else a new
// one: from the task's snapshot when there is one (persistent mode), else
// from the base image.
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		code, err := s.cur.Poll(ctx)
		if err != nil {
			return remote.Instance{}, fmt.Errorf("modal: poll sandbox %s: %w", s.cur.SandboxID, err)
		}
		if code == nil {
			return remote.Instance{ID: s.cur.SandboxID, OS: "linux", Arch: "amd64"}, nil
		}
	}
	sb, err := s.create(ctx)
	if err != nil {
		return remote.Instance{}, err
	}
	s.cur = sb
	s.byID[sb.SandboxID] = sb
	return remote.Instance{ID: sb.SandboxID, OS: "linux", Arch: "amd64"}, nil
}

// create makes a sandbox with the task's tags and waits until it takes an
// exec. A sandbox that never becomes ready is terminated.
func (s *sandbox) create(ctx context.Context) (*sdk.Sandbox, error) {
	app, err := s.cl.Apps.FromName(ctx, s.opts.App, &sdk.AppFromNameParams{CreateIfMissing: true})
	if err != nil {
		return nil, s.wrap("look up app "+s.opts.App, err)
	}
	params := &sdk.SandboxCreateParams{
		CPU:           s.opts.CPU,
		MemoryMiB:     s.opts.MemoryMiB,
		Timeout:       s.opts.Timeout,
		IdleTimeout:   s.opts.IdleTimeout,
		Workdir:       s.opts.Workdir,
		BlockNetwork:  s.opts.BlockNetwork,
		CIDRAllowlist: s.opts.CIDRAllowlist,
	}
	var sb *sdk.Sandbox
	if s.opts.Persistent {
		id, err := loadSnapshot(s.opts.StateDir, s.opts.Task)
		if err != nil {
			s.log.Warn("modal: the snapshot records cannot be read; starting from the base image", "err", err)
		}
		if id != "" {
			img, err := s.cl.Images.FromID(ctx, id)
			if err == nil {
				sb, err = s.cl.Sandboxes.Create(ctx, app, img, params)
			}
			if err != nil {
				if isAuth(err) {
					return nil, s.wrap("restore snapshot "+id, err)
				}
				s.log.Warn("modal: the task's snapshot could not be restored; starting from the base image", "task", s.opts.Task, "image", id, "err", err)
				sb = nil
			}
		}
	}
	if sb == nil {
		img, err := s.image(ctx)
		if err != nil {
			return nil, err
		}
		if sb, err = s.cl.Sandboxes.Create(ctx, app, img, params); err != nil {
			return nil, s.wrap("create sandbox", err)
		}
	}
	tags := map[string]string{TagManaged: "1", TagOwner: s.opts.Owner, TagTask: s.opts.Task}
	if err := sb.SetTags(ctx, tags); err != nil {
		s.terminate(context.WithoutCancel(ctx), sb)
		return nil, s.wrap("tag sandbox "+sb.SandboxID, err)
	}
	return sb, nil
}

// image is the base image: an im-… id as is, else a registry tag.
func (s *sandbox) image(ctx context.Context) (*sdk.Image, error) {
	if strings.HasPrefix(s.opts.Image, "im-") {
		img, err := s.cl.Images.FromID(ctx, s.opts.Image)
		if err != nil {
			return nil, s.wrap("image "+s.opts.Image, err)
		}
		return img, nil
	}
	return s.cl.Images.FromRegistry(s.opts.Image, nil), nil
}

// sandboxByID is a sandbox this environment created.
func (s *sandbox) sandboxByID(id string) (*sdk.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.byID[id]
	if sb == nil {
		return nil, fmt.Errorf("modal: unknown sandbox %s", id)
	}
	return sb, nil
}

// CopyIn writes src to p through an exec of sh that reads its stdin, and
// keeps a file of that size already there.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	sb, err := s.sandboxByID(id)
	if err != nil {
		return err
	}
	check := []string{"sh", "-c", `[ "$(wc -c < "$1" 2>/dev/null)" = "$2" ]`, "sh", p, strconv.FormatInt(size, 10)}
	if code, err := s.run(ctx, sb, check, nil); err != nil {
		return err
	} else if code == 0 {
		return nil
	}
	script := `set -e; mkdir -p "$(dirname "$1")"; cat > "$1.tmp"; [ "$(wc -c < "$1.tmp")" = "$2" ]; chmod "$3" "$1.tmp"; mv -f "$1.tmp" "$1"`
	argv := []string{"sh", "-c", script, "sh", p, strconv.FormatInt(size, 10), strconv.FormatUint(uint64(perm.Perm()), 8)}
	code, err := s.run(ctx, sb, argv, io.NewSectionReader(src, 0, size))
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("modal: write %s in sandbox %s: exit code %d", p, id, code)
	}
	return nil
}

// run execs argv with stdin and returns its exit code.
func (s *sandbox) run(ctx context.Context, sb *sdk.Sandbox, argv []string, stdin io.Reader) (int, error) {
	cp, err := s.exec(ctx, sb, argv)
	if err != nil {
		return 0, err
	}
	go io.Copy(io.Discard, cp.Stdout) // ends when the process's output ends
	go io.Copy(io.Discard, cp.Stderr)
	defer cp.Stdout.Close()
	defer cp.Stderr.Close()
	if stdin != nil {
		buf := make([]byte, 1<<20)
		for {
			n, rerr := stdin.Read(buf)
			if n > 0 {
				if _, err := cp.Stdin.Write(buf[:n]); err != nil {
					return 0, s.wrap("write stdin", err)
				}
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return 0, rerr
			}
		}
	}
	if err := cp.Stdin.Close(); err != nil {
		return 0, s.wrap("close stdin", err)
	}
	code, err := cp.Wait(ctx)
	if err != nil {
		return 0, s.wrap("wait for exec", err)
	}
	return code, nil
}

// exec starts argv, waiting (bounded by ReadyTimeout) while a sandbox just
// created has no task yet: the SDK's first exec right after create can
// find no task id.
func (s *sandbox) exec(ctx context.Context, sb *sdk.Sandbox, argv []string) (*sdk.ContainerProcess, error) {
	deadline := time.Now().Add(s.opts.ReadyTimeout)
	delay := 50 * time.Millisecond
	for {
		cp, err := sb.Exec(ctx, argv, nil)
		if err == nil {
			return cp, nil
		}
		if !strings.Contains(err.Error(), "does not have a task ID") || time.Now().After(deadline) {
			return nil, s.wrap("exec in sandbox "+sb.SandboxID, err)
		}
		s.log.Debug("modal: sandbox not ready yet", "sandbox", sb.SandboxID, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("modal: wait for sandbox %s to be ready: %w", sb.SandboxID, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// Attach starts argv with an exec whose stdin and stdout are the stream.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	sb, err := s.sandboxByID(id)
	if err != nil {
		return nil, err
	}
	cp, err := s.exec(ctx, sb, argv)
	if err != nil {
		return nil, err
	}
	return newStream(cp), nil
}

// Describe says what became of sandbox id.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	what := "modal sandbox " + id
	sb, err := s.sandboxByID(id)
	if err != nil {
		return what + " is unknown"
	}
	code, err := sb.Poll(ctx)
	switch {
	case err != nil:
		return fmt.Sprintf("%s cannot be queried: %v", what, err)
	case code == nil:
		return what + " is running but its agent died"
	case *code == 137:
		return what + " was terminated (exit code 137)"
	case *code == 124:
		return what + " reached its timeout (exit code 124)"
	}
	return fmt.Sprintf("%s has ended (exit code %d)", what, *code)
}

// Release terminates the sandbox; a persistent task's filesystem is
// snapshotted first and the image id recorded for the next open.
func (s *sandbox) Release(ctx context.Context, id string) error {
	sb, err := s.sandboxByID(id)
	if err != nil {
		return err
	}
	var snapErr error
	if s.opts.Persistent {
		if code, err := sb.Poll(ctx); err == nil && code == nil {
			img, err := sb.SnapshotFilesystem(ctx, 5*time.Minute)
			if err == nil {
				err = saveSnapshot(s.opts.StateDir, s.opts.Task, img.ImageID)
			}
			if err != nil {
				snapErr = fmt.Errorf("modal: snapshot task %s: %w", s.opts.Task, err)
			}
		}
	}
	return joinErr(snapErr, s.terminate(ctx, sb))
}

// terminate ends sb; one that already ended is no error.
func (s *sandbox) terminate(ctx context.Context, sb *sdk.Sandbox) error {
	if _, err := sb.Terminate(ctx, nil); err != nil {
		return s.wrap("terminate sandbox "+sb.SandboxID, err)
	}
	return nil
}

// Capabilities lays what the Modal sandbox enforces over caps.
func (s *sandbox) Capabilities(caps envs.Capabilities) {
	sandboxCapabilities(s.opts, caps)
}

func sandboxCapabilities(o Options, caps envs.Capabilities) {
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "Modal sandbox (gVisor)"}
	var lim []string
	if o.CPU > 0 {
		lim = append(lim, fmt.Sprintf("cpu %g", o.CPU))
	}
	if o.MemoryMiB > 0 {
		lim = append(lim, fmt.Sprintf("memory %d MiB", o.MemoryMiB))
	}
	if len(lim) > 0 {
		caps[envs.CapLimits] = envs.CapInfo{State: envs.Active, Detail: "sandbox: " + strings.Join(lim, ", ") + " (requests for the whole sandbox)"}
	} else {
		caps[envs.CapLimits] = envs.CapInfo{State: envs.Degraded, Detail: "Modal's default sandbox resources"}
	}
	switch {
	case o.BlockNetwork:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network blocked"}
	case len(o.CIDRAllowlist) > 0:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "allowlist " + strings.Join(o.CIDRAllowlist, ",")}
	default:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "open network (set modal.block_network)"}
	}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "through the agent"}
	if o.Persistent {
		caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Active, Detail: "filesystem snapshot on close, restored on the task's next open"}
	} else {
		caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported, Detail: "ephemeral sandbox (set modal.persistent)"}
	}
	caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "no host directory is mounted"}
}

// wrap names the operation and, for a refused token, the credentials'
// source.
func (s *sandbox) wrap(op string, err error) error {
	if isAuth(err) {
		return fmt.Errorf("%w: %s: the server %s refused the token from %s: %v", ErrAuth, op, s.creds.ServerURL, s.creds.Source, err)
	}
	return fmt.Errorf("modal: %s: %w", op, err)
}

// detachAll closes the SDK's connections to every sandbox this
// environment made (their command router clients).
func (s *sandbox) detachAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sb := range s.byID {
		if err := sb.Detach(); err != nil {
			s.log.Debug("modal: detach", "sandbox", sb.SandboxID, "err", err)
		}
	}
}
