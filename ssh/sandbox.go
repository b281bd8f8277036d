package ssh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// sandbox is the ssh backend's part of the agent host: the remote host
// over one connection. Everything about the agent — its stream, loss and
// recreation, the fallback — is package remote's.
type sandbox struct {
	o    Options // defaults filled
	t    target
	auth *auth
	hk   *hostKeys
	log  *slog.Logger

	mu       sync.Mutex
	cn       *conn  // the current connection; nil before the first
	os, arch string // the host's, in Go's spelling
	cacheDir string // the remote user's cache directory
}

var (
	_ remote.Sandbox    = (*sandbox)(nil)
	_ remote.NativeExec = (*sandbox)(nil)
)

// Provision returns the host over a live connection: the open one, or a
// new one when there is none or it was lost.
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	if _, err := s.connect(ctx); err != nil {
		return remote.Instance{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return remote.Instance{ID: s.t.String(), OS: s.os, Arch: s.arch}, nil
}

// connect returns the live connection, dialling (and probing the host)
// when there is none.
func (s *sandbox) connect(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cn != nil && s.cn.Err() == nil {
		return s.cn, nil
	}
	if s.cn != nil {
		s.log.Debug("ssh: reconnecting", "host", s.t, "was", s.cn.Err())
		s.cn.Close()
		s.cn = nil
	}
	cn, err := dial(ctx, s.t, s.auth, s.hk, s.o)
	if err != nil {
		return nil, err
	}
	out, err := cn.output(ctx, script(`uname -sm && printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}"`), nil)
	if err != nil {
		cn.Close()
		return nil, fmt.Errorf("ssh: probe %s (uname): %w", s.t, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[0])
	if len(lines) != 2 || len(f) != 2 {
		cn.Close()
		return nil, fmt.Errorf("ssh: probe %s: unexpected answer %q", s.t, out)
	}
	s.os, s.arch, s.cacheDir = strings.ToLower(f[0]), goArch(f[1]), lines[1]
	s.cn = cn
	return cn, nil
}

// live is the current connection, or an error saying it is gone.
func (s *sandbox) live() (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cn == nil {
		return nil, fmt.Errorf("%w: not connected to %s", ErrConnectionLost, s.t)
	}
	if err := s.cn.Err(); err != nil {
		return nil, err
	}
	return s.cn, nil
}

// goArch maps `uname -m` to Go's architecture names; an unknown machine
// is kept as it is (no agent build matches it, so the fallback runs).
func goArch(m string) string {
	switch m {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	case "i386", "i486", "i586", "i686":
		return "386"
	case "armv6l", "armv7l":
		return "arm"
	case "riscv64", "ppc64le", "s390x":
		return m
	}
	return "unknown-" + m
}

// CopyIn puts src at p on the host: kept when a file there has the same
// SHA-256, otherwise written to a temporary file through a session's
// stdin, checked, and renamed into place (so a concurrent connection
// never runs a half-written agent).
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	cn, err := s.live()
	if err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(src, 0, size)); err != nil {
		return fmt.Errorf("ssh: read %s: %w", p, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	q := shellCommand(p)
	check := fmt.Sprintf(`command -v sha256sum >/dev/null || { echo "no sha256sum on the host" >&2; exit 3; }; if [ -f %[1]s ] && [ "$(sha256sum <%[1]s | cut -d' ' -f1)" = %[2]s ]; then echo have; fi`, q, sum)
	out, err := cn.output(ctx, script(check), nil)
	if err != nil {
		return fmt.Errorf("ssh: check %s on %s: %w", p, s.t, err)
	}
	if bytes.Equal(bytes.TrimSpace(out), []byte("have")) {
		return nil
	}
	put := fmt.Sprintf(`umask 077 && mkdir -p %[1]s && t=%[2]s.$$.tmp && cat >"$t" && [ "$(sha256sum <"$t" | cut -d' ' -f1)" = %[3]s ] || { echo "the copy does not match its checksum" >&2; rm -f "$t"; exit 1; }; chmod %[4]o "$t" && mv -f "$t" %[2]s`,
		shellCommand(path.Dir(p)), q, sum, perm.Perm())
	if _, err := cn.output(ctx, script(put), io.NewSectionReader(src, 0, size)); err != nil {
		return fmt.Errorf("ssh: upload %s to %s: %w", p, s.t, err)
	}
	return nil
}

// Attach starts argv on the host in a session whose stdin and stdout are
// the stream.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	cn, err := s.live()
	if err != nil {
		return nil, err
	}
	// Without SSH_CLIENT and SSH_CONNECTION, the bash of each command does
	// not take itself for one started by sshd, which makes Debian's bash
	// read ~/.bashrc: commands get the same environment as on local.
	prep := "unset SSH_CLIENT SSH2_CLIENT SSH_CONNECTION SSH_TTY; "
	if s.o.Dir != "" {
		prep += "cd " + shellCommand(s.o.Dir) + " || exit 126; "
	}
	return cn.attach(shellCommand(append([]string{"/bin/sh", "-c", prep + `exec "$0" "$@"`}, argv...)...))
}

// Describe says what became of the connection, for error messages: the
// peer is asked for an answer, since a session can end a moment before
// the connection is known to have gone with it.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	s.mu.Lock()
	cn := s.cn
	s.mu.Unlock()
	if cn == nil {
		return "not connected to " + id
	}
	if err := cn.check(ctx); err != nil {
		return err.Error()
	}
	return "the connection to " + id + " is up but the agent there died"
}

// Release closes the connection; what the agent ran ends with it.
func (s *sandbox) Release(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cn != nil {
		s.cn.Close()
		s.cn = nil
	}
	return nil
}

// Capabilities lays what holds for a remote host over caps.
func (s *sandbox) Capabilities(caps envs.Capabilities) {
	where := "the remote host (--host or ssh.host)"
	if s.t.host != "" {
		where = s.t.String()
	}
	caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Active, Detail: "commands run on " + where + " with that user's rights"}
	caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "the remote host's network is used as is"}
	caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported}
}
