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

// ListenUnix listens on a Unix socket at path that only this user can
// reach: the socket is made 0600, and every connection whose peer is
// another user (by its credentials, which cannot be forged), or a process
// confined beyond this one (a sandboxed command: see
// procregistry.CheckUnconfinedPeer), is closed unanswered. A stale socket file is replaced; a live one is an error.
func ListenUnix(path string) (net.Listener, error) {
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("server: %s: another server is listening there", path)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	return &peerListener{Listener: ln}, nil
}

// peerListener admits only connections from this user's unconfined
// processes: a sandboxed command that reached the socket would otherwise
// run commands in a session of this server, outside its own sandbox.
type peerListener struct{ net.Listener }

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
