package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// dirSandbox is a real, if thin, sandbox: a directory on this machine,
// with every process of it a child of the test, started in that directory.
// It lets the host be tested without a container engine: the agent really
// runs, really dies when killed, and a removed directory really is a
// sandbox that is gone.
type dirSandbox struct {
	parent string

	mu       sync.Mutex
	n        int
	root     string // the current sandbox ("" before the first Provision)
	procs    map[string][]*exec.Cmd
	copies   int // files CopyIn actually wrote
	releases int
}

var _ remote.Sandbox = (*dirSandbox)(nil)

func newDirSandbox(parent string) *dirSandbox {
	return &dirSandbox{parent: parent, procs: map[string][]*exec.Cmd{}}
}

func (s *dirSandbox) Provision(ctx context.Context) (remote.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != "" {
		if _, err := os.Stat(s.root); err == nil {
			return remote.Instance{ID: s.root, OS: "linux", Arch: runtime.GOARCH}, nil
		}
	}
	s.n++
	root := filepath.Join(s.parent, fmt.Sprintf("sandbox-%d", s.n))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return remote.Instance{}, err
	}
	s.root = root
	return remote.Instance{ID: root, OS: "linux", Arch: runtime.GOARCH}, nil
}

func (s *dirSandbox) CopyIn(ctx context.Context, id, path string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	dst := filepath.Join(id, path)
	if fi, err := os.Stat(dst); err == nil && fi.Size() == size {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.NewSectionReader(src, 0, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.mu.Lock()
	s.copies++
	s.mu.Unlock()
	return err
}

// Attach starts argv (argv[0] a path inside the sandbox) with a clean
// environment whose HOME is the sandbox, so the agent reads no
// configuration of the machine running the test.
func (s *dirSandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	cmd := exec.Command(filepath.Join(id, argv[0]), argv[1:]...)
	cmd.Dir = id
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + id}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	st := &procStream{WriteCloser: stdin, out: stdout}
	cmd.Stderr = &st.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs[id] = append(s.procs[id], cmd)
	s.mu.Unlock()
	return st, nil
}

func (s *dirSandbox) Describe(ctx context.Context, id string) string {
	if _, err := os.Stat(id); err != nil {
		return "sandbox " + id + " is gone (removed)"
	}
	return "sandbox " + id + " is present but its agent died"
}

func (s *dirSandbox) Release(ctx context.Context, id string) error {
	s.mu.Lock()
	s.releases++
	s.mu.Unlock()
	s.kill(id)
	return os.RemoveAll(id)
}

func (s *dirSandbox) Capabilities(caps envs.Capabilities) {
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Unsupported, Detail: "a directory on this machine"}
}

// agents lists the agent processes started in the current sandbox.
func (s *dirSandbox) agents() []*exec.Cmd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*exec.Cmd(nil), s.procs[s.root]...)
}

// kill kills and reaps every process started in sandbox id.
func (s *dirSandbox) kill(id string) {
	s.mu.Lock()
	procs := s.procs[id]
	delete(s.procs, id)
	s.mu.Unlock()
	for _, c := range procs {
		c.Process.Kill()
		c.Wait()
	}
}

// closeAll kills whatever is left (test cleanup).
func (s *dirSandbox) closeAll() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.procs))
	for id := range s.procs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.kill(id)
	}
}

func (s *dirSandbox) counts() (copies, releases int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copies, s.releases
}

// procStream is an agent process's stdin and stdout.
type procStream struct {
	io.WriteCloser
	out    io.ReadCloser
	stderr lockedBuffer
}

func (p *procStream) Read(b []byte) (int, error) { return p.out.Read(b) }
func (p *procStream) Close() error {
	p.WriteCloser.Close()
	return p.out.Close()
}
func (p *procStream) Stderr() string { return p.stderr.String() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// nativeDirSandbox adds a native exec to dirSandbox: the local backend,
// started in the sandbox's directory.
type nativeDirSandbox struct{ *dirSandbox }

var _ remote.NativeExec = nativeDirSandbox{}

func (s nativeDirSandbox) Native(ctx context.Context, id string) (envs.Environment, error) {
	return local.New(local.Options{Confine: confine.Off(), Dir: id, Grace: 300 * time.Millisecond, NoContainment: true})
}
