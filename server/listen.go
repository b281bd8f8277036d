package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/procregistry"
)

// ErrExposed is returned by [ListenTCP] for an address beyond this
// machine when no token was provisioned for it.
var ErrExposed = errors.New("server: refusing to listen beyond loopback without a provisioned token")

// IsLoopback reports whether a listen address (host:port) reaches only
// this machine: localhost or a loopback IP. An empty host (every
// interface) does not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ListenTCP listens on addr. Beyond loopback it requires provisioned
// (a token the operator supplied, not one generated for this run): a
// server reachable from other machines is never started by accident.
func ListenTCP(addr string, provisioned bool) (net.Listener, error) {
	if !IsLoopback(addr) && !provisioned {
		return nil, fmt.Errorf("%w: %s (give --token-file, or listen on 127.0.0.1)", ErrExposed, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return ln, nil
}

// ListenUnix listens on a Unix socket reached at path that only this
// user's unconfined processes can use. The socket itself is made, 0600,
// in private (a directory of runbox's state, which the sandbox keeps
// from commands; made 0700 if missing), and path is a symbolic link to
// it. A sandboxed command's connect to a Unix socket is made by runbox on
// its behalf (see package confine), so the credentials the server sees
// name runbox, not the command: what keeps a command out is the sandbox
// deciding by the socket's real place, which the link does not change.
// Every connection whose peer is another user (by its credentials, which
// cannot be forged), or a process confined beyond this one (see
// procregistry.CheckUnconfinedPeer), is closed unanswered. A stale socket
// or link at path is replaced; a live server there is an error. Closing
// the listener removes the socket and the link.
func ListenUnix(path, private string) (net.Listener, error) {
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("server: %s: another server is listening there", path)
	}
	if private == "" {
		return nil, errors.New("server: no private directory for the socket (set HOME or RUNBOX_STATE_DIR)")
	}
	if err := os.MkdirAll(private, 0o700); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	dir, err := os.Open(private)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	defer dir.Close()
	b := make([]byte, 6)
	rand.Read(b)
	name := "mcp-" + hex.EncodeToString(b) + ".sock"
	real := filepath.Join(private, name)
	// Bound through the directory's descriptor: the private directory's
	// path may be longer than a socket address holds (108 bytes).
	ln, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), name))
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ul := &peerListener{Listener: ln, paths: []string{real}}
	if err := os.Chmod(real, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	link, err := makeLink(real, path)
	if err != nil {
		ul.Close()
		return nil, err
	}
	ul.link = link
	return ul, nil
}

// socketLink is the link at a --socket path, held by its directory's
// descriptor: a directory on the way swapped for a link while the server
// runs cannot steer its removal elsewhere.
type socketLink struct {
	dir    *os.File
	name   string
	target string
}

// makeLink makes path a link to target. The directory is opened without
// following a link at its last step, and the link is made and later
// removed through that descriptor.
func makeLink(target, path string) (*socketLink, error) {
	parent, name := filepath.Split(filepath.Clean(path))
	if parent == "" {
		parent = "."
	}
	fd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("server: socket directory %s: %w", parent, err)
	}
	dir := os.NewFile(uintptr(fd), parent)
	unix.Unlinkat(fd, name, 0) // a stale socket or link (a live server was refused above)
	if err := unix.Symlinkat(target, fd, name); err != nil {
		dir.Close()
		return nil, fmt.Errorf("server: %s: %w", path, err)
	}
	return &socketLink{dir: dir, name: name, target: target}, nil
}

// remove removes the link if it is still the one made: a file put there
// since is not runbox's to delete.
func (l *socketLink) remove() {
	buf := make([]byte, len(l.target)+1)
	if n, err := unix.Readlinkat(int(l.dir.Fd()), l.name, buf); err == nil && string(buf[:n]) == l.target {
		unix.Unlinkat(int(l.dir.Fd()), l.name, 0)
	}
	l.dir.Close()
}

// peerListener admits only connections from this user's unconfined
// processes: a sandboxed command that reached the socket would otherwise
// run commands in a session of this server, outside its own sandbox.
type peerListener struct {
	net.Listener
	paths []string    // removed by Close: the socket
	link  *socketLink // removed by Close, if still runbox's
	once  sync.Once
}

// Close stops listening and removes the socket and the link.
func (l *peerListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		for _, p := range l.paths {
			os.Remove(p)
		}
		if l.link != nil {
			l.link.remove()
		}
	})
	return err
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := procregistry.CheckUnconfinedPeer(c); err != nil {
			c.Close()
			continue
		}
		return c, nil
	}
}

// NewToken generates a bearer token and writes it to a new file in dir,
// readable by this user only (0600). It returns the token and the file.
func NewToken(dir string) (token, path string, err error) {
	b := make([]byte, 32)
	rand.Read(b)
	token = hex.EncodeToString(b)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("server: token: %w", err)
	}
	f, err := os.CreateTemp(dir, "serve-*.token")
	if err != nil {
		return "", "", fmt.Errorf("server: token: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", "", fmt.Errorf("server: token: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		return "", "", fmt.Errorf("server: token: %w", err)
	}
	abs, err := filepath.Abs(f.Name())
	if err != nil {
		abs = f.Name()
	}
	return token, abs, nil
}

// ReadToken reads a token from a file (surrounding space trimmed). A file
// that other users can read, or an empty one, is refused.
func ReadToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("server: token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("server: token file %s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("server: token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("server: token file %s is empty", path)
	}
	return tok, nil
}
