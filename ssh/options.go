package ssh

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
)

// DefaultPort is the port dialled when neither the target nor Options.Port
// names one.
const DefaultPort = 22

// DefaultKeepaliveInterval is how often a keepalive request goes out when
// Options.KeepaliveInterval is zero.
const DefaultKeepaliveInterval = 15 * time.Second

// DefaultKeepaliveMax is how many keepalive intervals may pass without an
// answer before the connection is closed, when Options.KeepaliveMax is zero.
const DefaultKeepaliveMax = 3

// DefaultDialTimeout bounds the TCP connection and the ssh handshake when
// Options.DialTimeout is zero.
const DefaultDialTimeout = 15 * time.Second

// Options configures an [Env]. Only Host is required.
type Options struct {
	// Host is the remote host: "host", "user@host", "host:port",
	// "user@host:port" or "user@[::1]:port". Required.
	Host string
	// User is the remote user when Host names none. Empty means the local
	// user's name.
	User string
	// Port is the port when Host names none. Zero means [DefaultPort].
	Port int
	// Identity lists private key files to offer, after the ssh-agent's
	// keys. Nil means those of ~/.ssh/id_ed25519, id_ecdsa and id_rsa that
	// exist. An encrypted file is refused (add it to the agent instead).
	Identity []string
	// SSHConfig is the OpenSSH client configuration whose HostName, User,
	// Port and IdentityFile apply to Host when it is an alias there (what
	// Host itself names wins; the rest of the file is not read). Empty
	// means ~/.ssh/config; "none" reads none.
	SSHConfig string
	// NoAgentAuth ignores SSH_AUTH_SOCK. False offers the running
	// ssh-agent's keys first.
	NoAgentAuth bool
	// KnownHosts is the known_hosts file that host keys are checked
	// against. Empty means ~/.ssh/known_hosts. There is no way to skip the
	// check.
	KnownHosts string
	// AcceptNew records the key of a host that KnownHosts does not list
	// (and accepts it). A key that differs from a recorded one is refused
	// all the same. False refuses unknown hosts.
	AcceptNew bool
	// Dir is the initial working directory on the host. Empty means the
	// user's home directory.
	Dir string
	// Env is laid over every command's environment. It travels with each
	// command over the encrypted channel, never in a remote argv or file.
	// Nil adds nothing.
	Env map[string]string
	// AgentBinary is the static agent to upload. Empty means the small
	// runbox-agent build: runbox-agent-linux-<arch> next to the running
	// binary, else one built from SourceDir once per build of the running
	// program (see remote.Program.FindSmall).
	AgentBinary string
	// CLIBinary is the static runbox CLI uploaded to [Env.CLIPath] before
	// the first command that runs it (the job commands run runbox itself
	// on the host). Empty means runbox-linux-<arch> next to the running
	// binary, else the running binary if it is such a build, else one
	// built from SourceDir.
	CLIBinary string
	// SourceDir is the runbox module's root, to build the agent from.
	// Empty means: search upward from the current directory.
	SourceDir string
	// AgentDir is the directory on the host the agent is uploaded to.
	// Empty means ${XDG_CACHE_HOME:-$HOME/.cache}/runbox/agent of the
	// remote user.
	AgentDir string
	// NoAgent runs every command in a session of its own, without the
	// runbox agent (degraded: see the package doc). False tries the agent
	// first.
	NoAgent bool
	// Grace is how long the fallback waits between SIGTERM and SIGKILL
	// when it stops a command. Zero means 2s.
	Grace time.Duration
	// KeepaliveInterval is how often a keepalive request goes out. Zero
	// means [DefaultKeepaliveInterval]; negative disables keepalives.
	KeepaliveInterval time.Duration
	// KeepaliveMax is how many intervals may pass without an answer before
	// the connection is given up. Zero means [DefaultKeepaliveMax].
	KeepaliveMax int
	// DialTimeout bounds the TCP connection and the handshake. Zero means
	// [DefaultDialTimeout].
	DialTimeout time.Duration
	// Getenv reads this process's environment (SSH_AUTH_SOCK, HOME). Nil
	// means os.Getenv.
	Getenv func(string) string
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}

// target is where to connect and as whom.
type target struct {
	user, host string
	port       int
}

func (t target) addr() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

func (t target) String() string { return t.user + "@" + t.addr() }

// parseTarget splits "user@host:port" (every part but host optional),
// filling what it lacks from user and port, then the defaults.
func parseTarget(s, user string, port int) (target, error) {
	t, err := splitTarget(s)
	if err != nil {
		return t, err
	}
	return t.fill(user, port)
}

// splitTarget splits "user@host:port"; the parts not given stay empty.
func splitTarget(s string) (target, error) {
	var t target
	if s == "" {
		return t, fmt.Errorf("ssh: no host given: %w", envs.ErrBadCommand)
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		t.user, s = s[:i], s[i+1:]
		if t.user == "" {
			return t, fmt.Errorf("ssh: host %q: empty user: %w", s, envs.ErrBadCommand)
		}
	}
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n <= 0 || n > 65535 {
			return t, fmt.Errorf("ssh: host %q: bad port %q: %w", s, p, envs.ErrBadCommand)
		}
		host, t.port = h, n
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Count(s, ":") == 1 {
		return t, fmt.Errorf("ssh: host %q: %v: %w", s, err, envs.ErrBadCommand)
	}
	if host == "" {
		return t, fmt.Errorf("ssh: no host given in %q: %w", s, envs.ErrBadCommand)
	}
	t.host = host
	return t, nil
}

// fill gives t the user and port it lacks: these, else the defaults (the
// local user's name, port 22).
func (t target) fill(user string, port int) (target, error) {
	if t.user == "" {
		t.user = user
	}
	if t.port == 0 {
		t.port = port
	}
	if t.port == 0 {
		t.port = DefaultPort
	}
	if t.user == "" {
		u, err := localUser()
		if err != nil {
			return t, fmt.Errorf("ssh: no user given and the local one is unknown: %w", err)
		}
		t.user = u
	}
	return t, nil
}

// localUser is the local user's name.
func localUser() (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// withDefaults copies opts and fills its defaults.
func withDefaults(opts Options) Options {
	o := opts
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.KeepaliveInterval == 0 {
		o.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if o.KeepaliveMax <= 0 {
		o.KeepaliveMax = DefaultKeepaliveMax
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Grace <= 0 {
		o.Grace = 2 * time.Second
	}
	home := homeDir(o.Getenv)
	if o.KnownHosts == "" && home != "" {
		o.KnownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	if o.Identity != nil {
		o.Identity = append([]string(nil), o.Identity...)
	}
	o.Env = maps.Clone(o.Env)
	return o
}

// defaultIdentities are the usual key files in ~/.ssh that exist.
func defaultIdentities(getenv func(string) string) []string {
	home := homeDir(getenv)
	if home == "" {
		return nil
	}
	var ids []string
	for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", n)
		if _, err := os.Stat(p); err == nil {
			ids = append(ids, p)
		}
	}
	return ids
}

// homeDir is this user's home directory.
func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}
