package vercel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// sandbox is the vercel backend's part of the agent host: the task's
// Vercel sandbox. remote.Env does the rest. An Instance's ID is the
// sandbox's current session id, which every command route takes.
type sandbox struct {
	cl   *client
	opts Options
	log  *slog.Logger

	mu   sync.Mutex
	cur  sandboxAndSession // what Provision returned last
	name map[string]string // session id → sandbox name
}

var _ remote.Sandbox = (*sandbox)(nil)

// Provision returns the session it had while it still runs; else the
// task's named sandbox, resumed (a persistent one from the snapshot
// Vercel took when it stopped); else a new sandbox.
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := s.cur.Session.ID; id != "" {
		sess, err := s.cl.getSession(ctx, id)
		switch {
		case err == nil && running(sess.Status):
			return s.instance(), nil
		case err != nil && !errors.Is(err, ErrNotFound):
			return remote.Instance{}, err
		}
		s.log.Debug("vercel: the session is gone", "session", id, "status", sess.Status)
	}
	var got sandboxAndSession
	var err error
	if name := s.opts.name(); name != "" {
		got, err = s.cl.getSandbox(ctx, name, true)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return remote.Instance{}, err
		}
		if err == nil {
			s.log.Debug("vercel: found the task's sandbox", "name", name, "session", got.Session.ID)
		}
	}
	if got.Session.ID == "" {
		if got, err = s.cl.createSandbox(ctx, s.opts); err != nil {
			return remote.Instance{}, err
		}
		s.log.Debug("vercel: created sandbox", "name", got.Sandbox.Name, "session", got.Session.ID)
	}
	if got.Session, err = s.awaitRunning(ctx, got.Session); err != nil {
		return remote.Instance{}, err
	}
	s.cur = got
	s.name[got.Session.ID] = got.Sandbox.Name
	return s.instance(), nil
}

func (s *sandbox) instance() remote.Instance {
	return remote.Instance{ID: s.cur.Session.ID, OS: "linux", Arch: "amd64"}
}

// awaitRunning waits, bounded by CreateTimeout, for a pending session to
// run.
func (s *sandbox) awaitRunning(ctx context.Context, sess apiSession) (apiSession, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CreateTimeout)
	defer cancel()
	delay := 100 * time.Millisecond
	for sess.Status != "running" {
		if !running(sess.Status) {
			return sess, fmt.Errorf("vercel: session %s is %s, not running", sess.ID, sess.Status)
		}
		select {
		case <-ctx.Done():
			return sess, fmt.Errorf("vercel: wait for session %s to run: %w", sess.ID, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
		got, err := s.cl.getSession(ctx, sess.ID)
		if err != nil {
			return sess, err
		}
		sess = got
	}
	return sess, nil
}

// CopyIn keeps a file of that size at p; else it makes the directory and
// sends the file as a gzipped tar extracted at /.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	check := []string{"sh", "-c", `[ "$(wc -c < "$1" 2>/dev/null)" = "$2" ]`, "sh", p, strconv.FormatInt(size, 10)}
	if code, _, err := s.cl.runWait(ctx, id, check, 0); err != nil {
		return err
	} else if code == 0 {
		return nil
	}
	if code, out, err := s.cl.runWait(ctx, id, []string{"mkdir", "-p", path.Dir(p)}, 4096); err != nil {
		return err
	} else if code != 0 {
		return fmt.Errorf("vercel: mkdir %s in session %s: exit code %d: %s", path.Dir(p), id, code, out)
	}
	var tgz bytes.Buffer
	if err := tarFile(&tgz, strings.TrimPrefix(path.Clean(p), "/"), io.NewSectionReader(src, 0, size), size, perm); err != nil {
		return fmt.Errorf("vercel: pack %s: %w", p, err)
	}
	return s.cl.writeTar(ctx, id, "/", &tgz)
}

// tarFile writes one file as a gzipped tar.
func tarFile(w io.Writer, name string, r io.Reader, size int64, perm fs.FileMode) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{Name: name, Mode: int64(perm.Perm()), Size: size, Typeflag: tar.TypeReg, ModTime: time.Now()}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, r); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Attach starts argv in the sandbox's PTY, in raw mode, over the
// interactive websocket, in Options.Dir: the agent's directory is where
// commands that name none run.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	wsURL, token, err := s.cl.interactive(ctx, id)
	if err != nil {
		return nil, err
	}
	errPath := path.Join(s.opts.AgentDir, "agent.stderr")
	stderr := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rc, err := s.cl.readFile(ctx, id, errPath)
		if err != nil {
			return ""
		}
		defer rc.Close()
		b, _ := io.ReadAll(io.LimitReader(rc, 4<<10))
		return string(b)
	}
	return openStream(ctx, wsURL, token, s.opts.Dir, argv, errPath, stderr)
}

// Describe says what became of the session.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	what := "vercel sandbox " + s.sandboxName(id) + " (session " + id + ")"
	sess, err := s.cl.getSession(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return what + " is gone"
	case err != nil:
		return fmt.Sprintf("%s cannot be read from the API: %v", what, err)
	case running(sess.Status):
		return what + " is running but its agent died"
	}
	return fmt.Sprintf("%s is %s", what, sess.Status)
}

func (s *sandbox) sandboxName(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.name[id]; n != "" {
		return n
	}
	return "?"
}

// Release leaves a persistent sandbox running with KeepRunning, stops a
// persistent one (Vercel snapshots it for the next resume), and stops
// and deletes an ephemeral one.
func (s *sandbox) Release(ctx context.Context, id string) error {
	if s.opts.Persistent && s.opts.KeepRunning {
		return nil
	}
	err := s.cl.stopSession(ctx, id)
	if errors.Is(err, ErrNotFound) {
		err = nil
	}
	if s.opts.Persistent {
		return err
	}
	if name := s.sandboxName(id); name != "?" {
		derr := s.cl.deleteSandbox(ctx, name)
		if errors.Is(derr, ErrNotFound) {
			derr = nil
		}
		err = errors.Join(err, derr)
	}
	return err
}

// Capabilities lays what the sandbox enforces over the agent's.
func (s *sandbox) Capabilities(caps envs.Capabilities) {
	sandboxCapabilities(s.opts, caps)
}

func sandboxCapabilities(o Options, caps envs.Capabilities) {
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "Vercel sandbox (a Firecracker microVM)"}
	if o.VCPUs > 0 {
		caps[envs.CapLimits] = envs.CapInfo{State: envs.Active, Detail: fmt.Sprintf("sandbox: %d vCPUs, %d GB memory (for the whole sandbox)", o.VCPUs, 2*o.VCPUs)}
	} else {
		caps[envs.CapLimits] = envs.CapInfo{State: envs.Degraded, Detail: "Vercel's default sandbox resources"}
	}
	switch {
	case len(o.AllowDomains) > 0:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "only " + strings.Join(o.AllowDomains, ", ")}
	case o.Network == NetworkDenyAll:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network denied"}
	default:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "open network (set vercel.network or vercel.allow_domains)"}
	}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "through the agent"}
	if o.Persistent {
		caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Active, Detail: "persistent sandbox: Vercel snapshots it when it stops and resumes it at the task's next open"}
	} else {
		caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported, Detail: "ephemeral sandbox (name a task to keep it)"}
	}
	caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "a remote sandbox: no host directory is reachable"}
}
