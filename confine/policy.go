package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Profiles: what a confined command may write.
const (
	// ProfileWorkspace lets a command write its workspace, its private
	// temporary directory and the package managers' caches.
	ProfileWorkspace = "workspace"
	// ProfileReadOnly lets a command write only its private temporary
	// directory (and /dev/null and friends).
	ProfileReadOnly = "read-only"
	// ProfileOff applies nothing: the command runs as it would without
	// runbox.
	ProfileOff = "off"
)

// Network modes: what a confined command may reach.
const (
	// NetworkOff refuses every IPv4 and IPv6 socket (loopback included).
	NetworkOff = "off"
	// NetworkAllowlist allows TCP connections only to Policy.ProxyPorts
	// and Policy.AllowPorts; UDP and raw sockets are refused.
	NetworkAllowlist = "allowlist"
	// NetworkOpen restricts nothing on the network.
	NetworkOpen = "open"
)

// Command is the hidden subcommand of the runbox binary that runs [Main].
const Command = "__confine"

// Policy is everything the trampoline needs to confine one command. It is
// encoded as JSON into the trampoline's arguments (see [Argv]).
type Policy struct {
	// Profile is ProfileWorkspace, ProfileReadOnly or ProfileOff. Empty is
	// an error: a caller must name the profile, even "off".
	Profile string `json:"profile"`
	// Network is NetworkOff, NetworkAllowlist or NetworkOpen. Empty means
	// NetworkOff.
	Network string `json:"network,omitempty"`
	// Workspace is the writable root under ProfileWorkspace (read-only
	// under ProfileReadOnly). It must be an absolute path to an existing
	// directory when the profile is not off.
	Workspace string `json:"workspace,omitempty"`
	// Writable are more directories (or files) the command may write:
	// the session's TMPDIR, caches. Paths missing when the command starts
	// are skipped. Under ProfileReadOnly these are the only writable paths
	// besides the device nodes.
	Writable []string `json:"writable,omitempty"`
	// DenyRead are paths that are neither readable nor writable, even
	// inside a writable directory; a Writable path inside a denied one is
	// writable (the more specific path decides). A path missing when the
	// command starts stays unreadable if it is created later.
	DenyRead []string `json:"deny_read,omitempty"`
	// ProtectGit keeps .git/hooks and .git/config of the repository at
	// Workspace read-only (when it exists as the command starts). It needs
	// a private mount namespace, which only root gets: elsewhere [Probe]
	// reports it degraded and the files stay writable.
	ProtectGit bool `json:"protect_git,omitempty"`
	// ProxyPorts are the loopback TCP ports of the session's proxy: under
	// NetworkAllowlist the command may connect to them.
	ProxyPorts []int `json:"proxy_ports,omitempty"`
	// AllowPorts are more TCP ports the command may connect to under
	// NetworkAllowlist (loopback services the user allows). The port is
	// the only thing the kernel checks: the address is not.
	AllowPorts []int `json:"allow_ports,omitempty"`
	// UnixSockets are pathname unix sockets outside the writable roots
	// that the command may connect to (an ssh agent, a display server).
	// Every other one is refused: a daemon that acts for its callers (a
	// container engine, D-Bus, systemd, runbox's own) would act outside
	// the sandbox. The socket is matched by its inode when the command
	// connects, whatever path the command spells it with.
	UnixSockets []string `json:"unix_sockets,omitempty"`
	// Env are variables the command gets on top of its environment:
	// under private caches (see [Policy.ShareCaches]), the tools' cache
	// variables pointing into the workspace's own cache directory. The
	// trampoline sets them; a backend starting programs itself should too.
	Env map[string]string `json:"env,omitempty"`
}

// secretPaths are the paths under HOME that DefaultPolicy denies: keys,
// cloud and cluster credentials, and shell histories (which hold pasted
// secrets).
var secretPaths = []string{
	".ssh",
	".gnupg",
	".aws",
	".azure",
	".config/gcloud",
	".kube",
	".docker/config.json",
	".netrc",
	".git-credentials",
	".config/gh/hosts.yml",
	".pypirc",
	".npmrc",      // _authToken
	".config/pip", // index URLs with credentials
	".config/azure",
	".yarnrc.yml",
	".cargo/credentials",
	".cargo/credentials.toml",
	".gem/credentials",
	".config/hub",
	".config/containers/auth.json",
	".vault-token",
	".terraform.d/credentials.tfrc.json",
	".pgpass",
	".my.cnf",
	".password-store",
	".local/share/keyrings",
	".bash_history",
	".zsh_history",
	".history",
	".sh_history",
	".local/share/fish/fish_history",
	".python_history",
	".node_repl_history",
	".psql_history",
	".mysql_history",
	".sqlite_history",
	".lesshst",
}

// systemSecrets are the files of the system that DefaultPolicy denies:
// password hashes and the host's ssh keys (readable by root only, which
// a root command still is).
var systemSecrets = []string{
	"/etc/shadow",
	"/etc/gshadow",
	"/etc/sudoers",
	"/etc/sudoers.d",
	"/etc/ssh/ssh_host_rsa_key",
	"/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key",
}

// DefaultPolicy is the documented policy of profile for a command started
// in dir by a user whose home is home. Under ProfileWorkspace the
// workspace is the git root above dir when there is one (else dir), the
// command's caches are the workspace's own (see [Policy.ShareCaches] for
// the host's), and the network is NetworkAllowlist; ProfileReadOnly writes nothing but what the caller
// adds to Writable (its TMPDIR). Callers append runbox's own
// configuration, approvals, state and spill directories to DenyRead, and
// the session's TMPDIR and proxy ports. An unknown profile is returned
// as given, and Argv refuses it.
func DefaultPolicy(profile, dir, home string) Policy {
	if profile == ProfileOff {
		return Policy{Profile: ProfileOff, Network: NetworkOpen}
	}
	p := Policy{Profile: profile, Network: NetworkAllowlist, Workspace: gitRoot(dir), DenyRead: slices.Clone(systemSecrets)}
	if home != "" {
		for _, s := range secretPaths {
			p.DenyRead = append(p.DenyRead, filepath.Join(home, s))
		}
	}
	if profile != ProfileWorkspace {
		return p
	}
	p.ProtectGit = true
	if home != "" {
		p.privateCaches(home, os.Getenv)
	}
	return p
}

// gitRoot is the nearest directory at or above dir that holds .git, or
// dir itself (made absolute) when there is none.
func gitRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

// Validate reports whether p names a known profile and network mode and,
// when it confines anything, an absolute workspace.
func (p Policy) Validate() error {
	switch p.Profile {
	case ProfileOff:
		return nil
	case ProfileWorkspace, ProfileReadOnly:
	case "":
		return fmt.Errorf("confine: no sandbox profile (want %s, %s or %s)", ProfileWorkspace, ProfileReadOnly, ProfileOff)
	default:
		return fmt.Errorf("confine: unknown sandbox profile %q (want %s, %s or %s)", p.Profile, ProfileWorkspace, ProfileReadOnly, ProfileOff)
	}
	switch p.Network {
	case "", NetworkOff, NetworkAllowlist, NetworkOpen:
	default:
		return fmt.Errorf("confine: unknown network mode %q (want %s, %s or %s)", p.Network, NetworkOff, NetworkAllowlist, NetworkOpen)
	}
	if !filepath.IsAbs(p.Workspace) {
		return fmt.Errorf("confine: workspace %q is not an absolute path", p.Workspace)
	}
	if p.Profile == ProfileWorkspace && filepath.Clean(p.Workspace) == "/" {
		return fmt.Errorf("confine: workspace / would make every file writable: choose a directory, or `sandbox: off`")
	}
	for _, list := range [][]string{p.Writable, p.DenyRead, p.UnixSockets} {
		for _, d := range list {
			if !filepath.IsAbs(d) {
				return fmt.Errorf("confine: %q is not an absolute path", d)
			}
		}
	}
	for _, port := range append(slices.Clone(p.ProxyPorts), p.AllowPorts...) {
		if port < 1 || port > 65535 {
			return fmt.Errorf("confine: port %d out of range", port)
		}
	}
	return nil
}

// network is p.Network with its default filled in.
func (p Policy) network() string {
	if p.Network == "" {
		return NetworkOff
	}
	return p.Network
}

// connectPorts are the TCP ports a command may connect to under
// NetworkAllowlist: the proxy's and AllowPorts.
func (p Policy) connectPorts() []int {
	return append(slices.Clone(p.ProxyPorts), p.AllowPorts...)
}

// Argv returns the argument vector that runs the program at path (with
// args as its arguments, args[0] included and kept as the program's
// argv[0]) confined by p. prefix runs the runbox binary's subcommand (for
// example {"/usr/bin/runbox", Command}); the program to execute is the
// result's first element. Under ProfileOff nothing wraps the program:
// the result is {path, args[1:]...}, and a caller that must keep args[0]
// runs path with args itself.
func Argv(prefix []string, p Policy, path string, args []string) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("confine: empty argv for %s", path)
	}
	if p.Profile == ProfileOff {
		return append([]string{path}, args[1:]...), nil
	}
	if len(prefix) == 0 {
		return nil, fmt.Errorf("confine: no trampoline to run %s confined", path)
	}
	enc, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("confine: encoding the policy: %w", err)
	}
	out := append(slices.Clone(prefix), string(enc), path)
	return append(out, args...), nil
}
