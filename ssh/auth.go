package ssh

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// ErrEncryptedKey is what an identity file error wraps when the key is
// protected by a passphrase that the running ssh-agent does not stand in
// for: runbox never prompts for one.
var ErrEncryptedKey = errors.New("ssh: identity file is encrypted")

// auth is the authentication this connection offers: the agent's keys,
// then the identity files' ones.
type auth struct {
	signers []gossh.Signer
	closer  io.Closer // the agent connection; nil without one
}

// newAuth gathers the keys to offer. An encrypted identity file is an
// error unless the agent holds its public key (then the agent signs).
func newAuth(o Options) (*auth, error) {
	a := &auth{}
	agentKeys := map[string]bool{}
	if sock := o.Getenv("SSH_AUTH_SOCK"); sock != "" && !o.NoAgentAuth {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			o.Logger.Debug("ssh: agent unreachable", "sock", sock, "err", err)
		} else {
			ag := agent.NewClient(conn)
			signers, err := ag.Signers()
			if err != nil {
				conn.Close()
				return nil, fmt.Errorf("ssh: list the keys of the ssh-agent at %s: %w", sock, err)
			}
			for _, s := range signers {
				agentKeys[string(s.PublicKey().Marshal())] = true
			}
			a.signers, a.closer = signers, conn
		}
	}
	// Files named by the caller must load; an encrypted default key is
	// passed over while other keys remain, as it may well not be needed.
	ids, explicit := o.Identity, o.Identity != nil
	if !explicit {
		ids = defaultIdentities(o.Getenv)
	}
	var skipped []error
	for _, p := range ids {
		s, err := loadIdentity(p, agentKeys)
		if err != nil && (explicit || !errors.Is(err, ErrEncryptedKey)) {
			a.close()
			return nil, err
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		if s != nil {
			a.signers = append(a.signers, s)
		}
	}
	if len(a.signers) == 0 {
		a.close()
		if len(skipped) > 0 {
			return nil, errors.Join(skipped...)
		}
		return nil, fmt.Errorf("ssh: no keys to offer: no ssh-agent (SSH_AUTH_SOCK) with keys and no identity file (give one with --identity or ssh.identity_file)")
	}
	return a, nil
}

// loadIdentity reads private key file p. An encrypted key yields nil when
// the agent holds it (its public half, p.pub, matches one of agentKeys)
// and ErrEncryptedKey otherwise.
func loadIdentity(p string, agentKeys map[string]bool) (gossh.Signer, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("ssh: identity file: %w", err)
	}
	s, err := gossh.ParsePrivateKey(b)
	var pp *gossh.PassphraseMissingError
	switch {
	case errors.As(err, &pp):
		pub := pp.PublicKey
		if pub == nil {
			if pb, rerr := os.ReadFile(p + ".pub"); rerr == nil {
				pub, _, _, _, _ = gossh.ParseAuthorizedKey(pb)
			}
		}
		if pub != nil && agentKeys[string(pub.Marshal())] {
			return nil, nil // the agent signs with it
		}
		return nil, fmt.Errorf("%w: %s (add it to your ssh-agent with ssh-add %s; runbox does not ask for passphrases)", ErrEncryptedKey, p, p)
	case err != nil:
		return nil, fmt.Errorf("ssh: identity file %s: %w", p, err)
	}
	return s, nil
}

func (a *auth) methods() []gossh.AuthMethod {
	return []gossh.AuthMethod{gossh.PublicKeys(a.signers...)}
}

func (a *auth) close() {
	if a.closer != nil {
		a.closer.Close()
	}
}
