package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"

	"github.com/runbox/runbox/agent"
)

// agentDir is where the agent binary lives in the container.
const (
	agentDir  = "/.runbox"
	agentPath = agentDir + "/runbox"
)

// AgentPath is where the runbox binary lives inside a container with the
// agent: a command can run runbox itself there (its job daemon, say).
const AgentPath = agentPath

// connectLocked deploys and starts the agent, or falls back to the exec
// API when it cannot run there, saying why in e.fallback.
func (e *Env) connectLocked(ctx context.Context) (backend, error) {
	e.fallback = ""
	reason := ""
	if e.opts.NoAgent {
		reason = "agent disabled by Options.NoAgent"
	} else {
		cl, err := e.startAgent(ctx)
		if err == nil {
			e.agent = cl
			return cl, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("docker: start agent: %w", err)
		}
		reason = err.Error()
		e.log.Debug("docker: agent unavailable, using the exec API", "err", err)
	}
	e.fallback = reason
	return newExecEnv(e, e.id), nil
}

// startAgent copies the agent into the container and connects to it.
func (e *Env) startAgent(ctx context.Context) (*agent.Client, error) {
	if e.imgInfo.os != "" && e.imgInfo.os != "linux" {
		return nil, fmt.Errorf("image OS %s: the agent runs on linux only", e.imgInfo.os)
	}
	arch := e.imgInfo.arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	bin, err := e.agentBinary(ctx, arch)
	if err != nil {
		return nil, err
	}
	if err := e.deploy(ctx, bin); err != nil {
		return nil, err
	}
	return e.attachAgent(ctx)
}

// agentBinary finds (or builds) a static runbox for arch.
func (e *Env) agentBinary(ctx context.Context, arch string) (string, error) {
	if p := e.opts.AgentBinary; p != "" {
		if err := checkStatic(p, arch); err != nil {
			return "", err
		}
		return p, nil
	}
	exe, err := os.Executable()
	if err == nil {
		side := filepath.Join(filepath.Dir(exe), "runbox-linux-"+arch)
		if checkStatic(side, arch) == nil {
			return side, nil
		}
		if strings.HasPrefix(filepath.Base(exe), "runbox") && checkStatic(exe, arch) == nil {
			return exe, nil
		}
	}
	return e.buildAgent(ctx, arch)
}

// checkStatic accepts a static ELF executable of arch (no interpreter,
// so it runs in any image, busybox and scratch included).
func checkStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("agent binary %s: %w", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM, "riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390}[arch]
	if want == 0 || f.Machine != want {
		return fmt.Errorf("agent binary %s is for %v, the container is %s", path, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("agent binary %s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	return nil
}

// buildAgent builds runbox for linux/arch with CGO_ENABLED=0 from the
// source tree, when there is one. The go tool runs with this process's
// environment: it is runbox's own build tool, not a user command.
func (e *Env) buildAgent(ctx context.Context, arch string) (string, error) {
	root := e.opts.SourceDir
	if root == "" {
		root = findModule()
	}
	if root == "" {
		// No source here: an agent built from it earlier still serves (an
		// incompatible one is refused by the handshake, with its version).
		if cached, err := agentCachePath(arch); err == nil && checkStatic(cached, arch) == nil {
			return cached, nil
		}
		return "", fmt.Errorf("no static runbox for linux/%s: none next to the binary and no source tree to build one", arch)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no static runbox for linux/%s and no go tool to build one", arch)
	}
	out, err := agentCachePath(arch)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return "", fmt.Errorf("agent build dir: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-o", out+".tmp", "./cmd/runbox")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the agent (go build ./cmd/runbox in %s): %v: %s", root, err, bytes.TrimSpace(b))
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return "", err
	}
	return out, nil
}

// agentCachePath is where an agent built on demand for arch is kept.
func agentCachePath(arch string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "runbox", "agent", "runbox-linux-"+arch), nil
}

// findModule walks up from the working directory to runbox's go.mod.
func findModule() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/runbox/runbox\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// deploy copies bin to agentPath: with the archive API, or, where that
// cannot write (a read-only root with a tmpfs at agentDir), through an
// exec that writes its stdin.
func (e *Env) deploy(ctx context.Context, bin string) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st, err := e.cli.ContainerStatPath(ctx, e.id, agentPath); err == nil && st.Size == fi.Size() {
		return nil // already there (a reused container)
	}
	pr, pw := io.Pipe()
	go func() { // ends when the tar is written or the copy below stops reading
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(agentDir, "/") + "/", Mode: 0o755})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(agentPath, "/"), Mode: 0o755, Size: fi.Size()})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	err = e.cli.CopyToContainer(ctx, e.id, "/", pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errors.New("copy ended"))
	if err == nil {
		return nil
	}
	// The engine can cut an exec's stdin short when it is closed quickly,
	// so the script checks the size it received and a short copy is tried
	// again.
	var xerr error
	for range 3 {
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			return err
		}
		if xerr = e.deployExec(ctx, f, fi.Size()); xerr == nil {
			return nil
		}
	}
	return fmt.Errorf("no writable location for the agent: %v; %v", err, xerr)
}

func (e *Env) deployExec(ctx context.Context, r io.Reader, size int64) error {
	tmp := agentPath + ".tmp"
	script := fmt.Sprintf(`cat >%[1]s && n=$(wc -c <%[1]s) && [ "$n" -eq %[2]d ] || { echo "received $n of %[2]d bytes" >&2; rm -f %[1]s; exit 1; }; chmod 0755 %[1]s && mv %[1]s %[3]s`, tmp, size, agentPath)
	x, err := e.cli.ContainerExecCreate(ctx, e.id, container.ExecOptions{Cmd: []string{"/bin/sh", "-c", script}, AttachStdin: true, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	hr, err := e.cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer hr.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { defer close(done); demuxAll(hr.Reader, &out, &out) }()
	_, err = io.Copy(hr.Conn, r)
	hr.CloseWrite()
	<-done
	if err != nil {
		return err
	}
	xi, err := e.cli.ContainerExecInspect(ctx, x.ID)
	if err != nil {
		return err
	}
	if xi.ExitCode != 0 {
		return fmt.Errorf("writing %s failed: %s", agentPath, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// attachAgent starts `runbox agent` with an exec whose stdin and stdout
// are the protocol stream. The exec has no TTY (a TTY would translate
// bytes), so the engine multiplexes stdout and stderr with 8-byte headers:
// agentStream takes stdout's frames apart from stderr's.
func (e *Env) attachAgent(ctx context.Context) (*agent.Client, error) {
	x, err := e.cli.ContainerExecCreate(ctx, e.id, container.ExecOptions{
		Cmd:          []string{agentPath, "agent"},
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("exec the agent: %w", err)
	}
	hr, err := e.cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("attach to the agent: %w", err)
	}
	s := &agentStream{hr: hr, stderr: &tailBuffer{max: 4096}}
	s.r = &demux{r: hr.Reader, stderr: s.stderr}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := agent.NewClient(hctx, s, agent.ClientOptions{Logger: e.log})
	if err != nil {
		if msg := s.stderr.String(); msg != "" {
			return nil, fmt.Errorf("%w (agent stderr: %s)", err, msg)
		}
		return nil, err
	}
	return cl, nil
}

// agentStream is the agent's exec attach as a byte stream.
type agentStream struct {
	hr     types.HijackedResponse
	r      *demux
	stderr *tailBuffer
}

func (s *agentStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *agentStream) Write(p []byte) (int, error) { return s.hr.Conn.Write(p) }
func (s *agentStream) Close() error                { s.hr.Close(); return nil }

// demux reads the engine's multiplexed attach stream (a header of stream
// type, three zero bytes and a big-endian uint32 length, then that many
// bytes) and returns stdout's bytes; stderr's go to stderr.
type demux struct {
	r      io.Reader
	stderr io.Writer
	left   int // bytes of the current stdout frame not yet read
}

const maxDemuxFrame = 1 << 24

func (d *demux) Read(p []byte) (int, error) {
	for d.left == 0 {
		var h [8]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			return 0, err
		}
		n := int(binary.BigEndian.Uint32(h[4:]))
		if n > maxDemuxFrame {
			return 0, fmt.Errorf("docker: attach stream frame of %d bytes", n)
		}
		switch h[0] {
		case 1:
			d.left = n
		case 2, 0, 3:
			if _, err := io.CopyN(d.stderr, d.r, int64(n)); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("docker: attach stream: unknown stream %d", h[0])
		}
	}
	if len(p) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= n
	if err == io.EOF && d.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// demuxAll copies a whole multiplexed stream.
func demuxAll(r io.Reader, stdout, stderr io.Writer) error {
	_, err := io.Copy(stdout, &demux{r: r, stderr: stderr})
	return err
}

// tailBuffer keeps the last max bytes written (the agent's stderr, for
// error messages).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
