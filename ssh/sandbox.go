package ssh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
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

	leadMu sync.Mutex // held for a request to lead; guards lead
	lead   *stream    // the open probe session (see lead.go); nil once used or gone
}

var (
	_ remote.Sandbox    = (*sandbox)(nil)
	_ remote.NativeExec = (*sandbox)(nil)
	_ remote.Recopier   = (*sandbox)(nil)
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
		s.dropLead()
		s.cn.Close()
		s.cn = nil
	}
	cn, err := dial(ctx, s.t, s.auth, s.hk, s.o)
	if err != nil {
		return nil, err
	}
	lines, err := s.probe(ctx, cn)
	if err != nil {
		cn.Close()
		return nil, fmt.Errorf("ssh: probe %s (uname): %w", s.t, err)
	}
	f := strings.Fields(lines[0])
	if len(lines) != 2 || len(f) != 2 {
		s.dropLead()
		cn.Close()
		return nil, fmt.Errorf("ssh: probe %s: unexpected answer %q", s.t, lines)
	}
	s.os, s.arch, s.cacheDir = strings.ToLower(f[0]), goArch(f[1]), lines[1]
	if s.os != "linux" || strings.HasPrefix(s.arch, "unknown-") {
		s.dropLead() // no agent will run there
	}
	s.cn = cn
	return cn, nil
}

// probe runs `uname -sm` and finds the cache directory on a new
// connection: in the lead session, kept for the agent (see lead.go), or,
// when the agent is off, in a session of its own.
func (s *sandbox) probe(ctx context.Context, cn *conn) ([]string, error) {
	if s.o.NoAgent {
		out, err := cn.output(ctx, script(probeScript), nil)
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
	}
	st, lines, err := startLead(ctx, cn, s.o.Dir)
	if err != nil {
		return nil, err
	}
	s.leadMu.Lock()
	s.lead = st
	s.leadMu.Unlock()
	return lines, nil
}

// dropLead closes the lead session, if one is open.
func (s *sandbox) dropLead() {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.lead != nil {
		s.lead.Close()
		s.lead = nil
	}
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

// CopyIn puts src at p on the host, for the agent host, which names
// what it deploys by content: a file of that name and size is taken as
// this one without reading it (it was checked when it was uploaded).
// Otherwise src goes through [sandbox.upload]. The check is a request to
// the lead session when it is still open, a session of its own when not.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	cn, err := s.live()
	if err != nil {
		return err
	}
	have, err := s.fileSize(ctx, cn, p)
	if err != nil {
		return fmt.Errorf("ssh: check %s on %s: %w", p, s.t, err)
	}
	if have == size {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(src, 0, size)); err != nil {
		return fmt.Errorf("ssh: read %s: %w", p, err)
	}
	return s.upload(ctx, cn, p, src, size, perm, hex.EncodeToString(h.Sum(nil)))
}

// Recopy puts src at p on the host unless the file there has its SHA-256
// already: what the agent host asks for when an agent CopyIn kept by its
// name and size does not start.
func (s *sandbox) Recopy(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(src, 0, size)); err != nil {
		return fmt.Errorf("ssh: read %s: %w", p, err)
	}
	return s.putChecked(ctx, p, src, size, perm, hex.EncodeToString(h.Sum(nil)))
}

// fileSize is the size of the file at p on the host, -1 when there is
// none.
func (s *sandbox) fileSize(ctx context.Context, cn *conn, p string) (int64, error) {
	s.leadMu.Lock()
	if st := s.lead; st != nil && lineSafe(p) {
		n, err := leadSize(ctx, st, p)
		if err == nil {
			s.leadMu.Unlock()
			return n, nil
		}
		s.lead = nil // out of step with its script, or gone
		st.Close()
		if !errors.Is(err, errLeadGone) {
			s.leadMu.Unlock()
			return 0, err
		}
	}
	s.leadMu.Unlock()
	q := shellCommand(p)
	out, err := cn.output(ctx, script(fmt.Sprintf(`if [ -f %[1]s ]; then wc -c <%[1]s | tr -d ' '; else echo -1; fi`, q)), nil)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

// putChecked puts src at p on the host unless the file there has the
// SHA-256 sum already: for a path that does not name its content (the
// runbox CLI's).
func (s *sandbox) putChecked(ctx context.Context, p string, src io.ReaderAt, size int64, perm fs.FileMode, sum string) error {
	cn, err := s.live()
	if err != nil {
		return err
	}
	q := shellCommand(p)
	check := fmt.Sprintf(`command -v sha256sum >/dev/null || { echo "no sha256sum on the host" >&2; exit 3; }; if [ -f %[1]s ] && [ "$(sha256sum <%[1]s | cut -d' ' -f1)" = %[2]s ]; then echo have; fi`, q, sum)
	out, err := cn.output(ctx, script(check), nil)
	if err != nil {
		return fmt.Errorf("ssh: check %s on %s: %w", p, s.t, err)
	}
	if bytes.Equal(bytes.TrimSpace(out), []byte("have")) {
		return nil
	}
	return s.upload(ctx, cn, p, src, size, perm, sum)
}

// upload writes src to a temporary file through a session's stdin,
// checks its SHA-256 against sum there, and renames it into place (so a
// concurrent connection never runs a half-written agent, and a copy
// that arrives altered is never kept).
func (s *sandbox) upload(ctx context.Context, cn *conn, p string, src io.ReaderAt, size int64, perm fs.FileMode, sum string) error {
	q := shellCommand(p)
	put := fmt.Sprintf(`command -v sha256sum >/dev/null || { echo "no sha256sum on the host" >&2; exit 3; }; umask 077 && mkdir -p %[1]s && t=%[2]s.$$.tmp && cat >"$t" && [ "$(sha256sum <"$t" | cut -d' ' -f1)" = %[3]s ] || { echo "the copy does not match its checksum" >&2; rm -f "$t"; exit 1; }; chmod %[4]o "$t" && mv -f "$t" %[2]s`,
		shellCommand(path.Dir(p)), q, sum, perm.Perm())
	if _, err := cn.output(ctx, script(put), io.NewSectionReader(src, 0, size)); err != nil {
		return fmt.Errorf("ssh: upload %s to %s: %w", p, s.t, err)
	}
	return nil
}

// Attach starts argv on the host in a session whose stdin and stdout are
// the stream: the lead session, when it is still open (no new session),
// else a new one.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	cn, err := s.live()
	if err != nil {
		return nil, err
	}
	if st := s.takeLead(); st != nil {
		if !lineSafe(argv...) {
			st.Close()
		} else if err := leadExec(st, argv); err == nil {
			return st, nil
		} else {
			st.Close()
			s.log.Debug("ssh: lead session gone, starting a new one", "host", s.t, "err", err)
		}
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

// takeLead hands the lead session over (nil when there is none).
func (s *sandbox) takeLead() *stream {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	st := s.lead
	s.lead = nil
	return st
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
	s.dropLead()
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
