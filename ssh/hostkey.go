package ssh

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is why a host's key was refused: unknown (Changed false)
// or different from the one recorded (Changed true).
type HostKeyError struct {
	// Host is the address as known_hosts names it ("build1", "[h]:2222").
	Host string
	// Fingerprint is the SHA256 fingerprint of the key the host offered.
	Fingerprint string
	// KeyType is that key's algorithm ("ssh-ed25519").
	KeyType string
	// File is the known_hosts file checked (and the one to edit).
	File string
	// Changed is true when File records another key for Host; Lines are
	// where.
	Changed bool
	Lines   []int
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		lines := make([]string, len(e.Lines))
		for i, l := range e.Lines {
			lines[i] = fmt.Sprint(l)
		}
		return fmt.Sprintf("ssh: the host key of %s has CHANGED: it now offers %s %s, which differs from the key recorded in %s (line %s). This may be an attack; if the host really was reinstalled, remove that line (ssh-keygen -R %s -f %s) and connect again",
			e.Host, e.KeyType, e.Fingerprint, e.File, strings.Join(lines, ", "), e.Host, e.File)
	}
	return fmt.Sprintf("ssh: the host key of %s is unknown: it offers %s %s, which %s does not list. Check the fingerprint, then add the key to %s (ssh-keyscan, or connect once with ssh) or pass --accept-new-host-key (ssh.accept_new) to record it",
		e.Host, e.KeyType, e.Fingerprint, e.File, e.File)
}

// hostKeys checks host keys against one known_hosts file, and records
// unknown ones when acceptNew is set.
type hostKeys struct {
	file      string
	acceptNew bool

	mu sync.Mutex // serialises reading and appending the file
}

// load is the file's callback; a missing file knows no host.
func (h *hostKeys) load() (gossh.HostKeyCallback, error) {
	if h.file == "" {
		return nil, errors.New("ssh: no known_hosts file (HOME unset; give ssh.known_hosts)")
	}
	cb, err := knownhosts.New(h.file)
	if errors.Is(err, fs.ErrNotExist) {
		return func(string, net.Addr, gossh.PublicKey) error {
			return &knownhosts.KeyError{}
		}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ssh: read %s: %w", h.file, err)
	}
	return cb, nil
}

// callback checks a host's key: accepted when the file lists it; recorded
// and accepted when unknown with acceptNew; refused with a
// *HostKeyError otherwise.
func (h *hostKeys) callback(hostname string, remote net.Addr, key gossh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	cb, err := h.load()
	if err != nil {
		return err
	}
	err = cb(hostname, remote, key)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return err // nil (known), or a revoked key
	}
	herr := &HostKeyError{Host: knownhosts.Normalize(hostname), Fingerprint: gossh.FingerprintSHA256(key), KeyType: key.Type(), File: h.file}
	if len(ke.Want) > 0 {
		herr.Changed = true
		for _, w := range ke.Want {
			herr.Lines = append(herr.Lines, w.Line)
		}
		return herr
	}
	if !h.acceptNew {
		return herr
	}
	return h.record(hostname, key)
}

// record appends hostname's key to the file.
func (h *hostKeys) record(hostname string, key gossh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(h.file), 0o700); err != nil {
		return fmt.Errorf("ssh: record the host key: %w", err)
	}
	f, err := os.OpenFile(h.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ssh: record the host key: %w", err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("ssh: record the host key in %s: %w", h.file, err)
	}
	return f.Close()
}

// algorithms are the host key algorithms to ask for: those of the keys the
// file records for hostname, so a host with several keys presents the one
// that is known. Nil (the library's default order) when none is recorded.
func (h *hostKeys) algorithms(hostname string) []string {
	h.mu.Lock()
	cb, err := h.load()
	h.mu.Unlock()
	if err != nil {
		return nil
	}
	// A throwaway key never matches, so the error lists the known ones.
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil
	}
	probe, err := gossh.NewPublicKey(pub)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(cb(hostname, &net.TCPAddr{IP: net.IPv4zero}, probe), &ke) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, w := range ke.Want {
		for _, a := range algorithmsFor(w.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// algorithmsFor maps a key type to the signature algorithms that use it.
func algorithmsFor(keyType string) []string {
	if keyType == gossh.KeyAlgoRSA {
		return []string{gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256, gossh.KeyAlgoRSA}
	}
	return []string{keyType}
}
