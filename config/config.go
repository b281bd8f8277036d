package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is runbox's configuration. Zero values mean the documented defaults
// once [Default] has filled them.
type Config struct {
	Backend     string   `yaml:"backend"`
	Timeout     Duration `yaml:"timeout"`
	OutputLimit int      `yaml:"output_limit"`
	// SpillMax bounds the file that keeps a command's whole output once
	// it outgrows OutputLimit; 0 means envs.DefaultSpillMax (1 GiB).
	SpillMax    Size            `yaml:"spill_max"`
	Grace       Duration        `yaml:"grace"`
	Shell       string          `yaml:"shell"`
	Contain     bool            `yaml:"contain"`
	Limits      LimitsConf      `yaml:"limits"`
	Spawn       SpawnConf       `yaml:"spawn"`
	Approval    Approval        `yaml:"approval"`
	Docker      DockerConf      `yaml:"docker"`
	Daytona     DaytonaConf     `yaml:"daytona"`
	Modal       ModalConf       `yaml:"modal"`
	SSH         SSHConf         `yaml:"ssh"`
	Kubernetes  KubernetesConf  `yaml:"kubernetes"`
	Singularity SingularityConf `yaml:"singularity"`
	Vercel      VercelConf      `yaml:"vercel"`
	Jobs        JobsConf        `yaml:"jobs"`
	Tasks       TasksConf       `yaml:"tasks"`
	Sync        SyncConf        `yaml:"sync"`
	Sandbox     SandboxConf     `yaml:"sandbox"`
	Workspace   WorkspaceConf   `yaml:"workspace"`

	// Path is the file the configuration was read from ("" if none).
	Path string `yaml:"-"`
}

// LimitsConf are per-command resource defaults.
type LimitsConf struct {
	Memory Size    `yaml:"memory"`
	Pids   int64   `yaml:"pids"`
	CPUs   float64 `yaml:"cpus"`
}

// SpawnConf extends the child-environment lists.
type SpawnConf struct {
	Passthrough []string `yaml:"passthrough"`
	ExtraBlock  []string `yaml:"extra_block"`
	ExtraStrip  []string `yaml:"extra_strip"`
}

// Approval is the command gate's policy.
type Approval struct {
	Mode                   string   `yaml:"mode"`
	Allow                  []string `yaml:"allow"`
	Deny                   []string `yaml:"deny"`
	RelaxWithoutHostAccess bool     `yaml:"relax_without_host_access"`
}

// JobsConf configures the background-job registry.
type JobsConf struct {
	// Retention is how long a finished job is kept; 0 means 24h.
	Retention Duration `yaml:"retention"`
	// MaxFinished is how many finished jobs are kept at most; 0 means 200.
	MaxFinished int `yaml:"max_finished"`
}

// TasksConf configures what --task keeps between runs (docs/tasks.md).
type TasksConf struct {
	// MaxIdle is how long a task may go unused before the reaper (run by
	// runbox serve, and by runbox tasks reap) removes it; 0 means no
	// reaper: tasks are kept until removed.
	MaxIdle Duration `yaml:"max_idle"`
}

// DockerConf configures the docker backend.
type DockerConf struct {
	Image        string `yaml:"image"`
	AgentBinary  string `yaml:"agent_binary"`
	Task         string `yaml:"task"`
	Persistent   bool   `yaml:"persistent"`
	ReadOnlyRoot bool   `yaml:"read_only_root"`
	// Pool is how many ready containers, agent attached, a long-lived
	// runbox (`runbox serve`) keeps per docker spec; 0 means no pool.
	Pool int `yaml:"pool"`
	// Network is the containers' network when a spec names none: "" the
	// engine's default bridge, "none", "allowlist" (an internal network
	// whose only exit is the session's egress proxy, with the hosts of
	// sandbox.network.allow and deny), or the name of a docker network.
	Network string `yaml:"network"`
}

// ModalConf configures the modal backend. Credentials are not here: they
// are read where Modal's own tools read them (MODAL_TOKEN_ID and
// MODAL_TOKEN_SECRET, or the profile file).
type ModalConf struct {
	App           string   `yaml:"app"`
	Image         string   `yaml:"image"`
	CPU           float64  `yaml:"cpu"`
	Memory        Size     `yaml:"memory"`
	Timeout       Duration `yaml:"timeout"`
	IdleTimeout   Duration `yaml:"idle_timeout"`
	Workdir       string   `yaml:"workdir"`
	BlockNetwork  bool     `yaml:"block_network"`
	CIDRAllowlist []string `yaml:"cidr_allowlist"`
	Task          string   `yaml:"task"`
	Persistent    bool     `yaml:"persistent"`
	AgentBinary   string   `yaml:"agent_binary"`
	AgentDir      string   `yaml:"agent_dir"`
}

// SyncConf configures workspace sync (run --sync, runbox sync).
type SyncConf struct {
	// Exclude are gitignore-style patterns never pushed nor brought back,
	// besides .git/ and the .gitignore'd paths.
	Exclude []string `yaml:"exclude"`
	// Protected are gitignore-style patterns sync apply never writes, in
	// addition to the built-in ones (.git/, .env*, runbox's configuration).
	Protected []string `yaml:"protected"`
	// MaxSize refuses a tree (either side) above it; 0 means 256M.
	MaxSize Size `yaml:"max_size"`
	// IncludeGit pushes .git/ too.
	IncludeGit bool `yaml:"include_git"`
	// NoGitignore pushes .gitignore'd paths too.
	NoGitignore bool `yaml:"no_gitignore"`
}

// WorkspaceConf says whether runbox records what each command changes in
// its workspace, so that it can be undone (package undo, docs/undo.md).
type WorkspaceConf struct {
	// Changes is on or off. Empty means on in runbox serve's sessions
	// and off for runbox run (where --changes turns it on).
	Changes string `yaml:"changes"`
	// ChangesExclude are paths never recorded, besides the defaults
	// (.git/objects, node_modules and other build caches): relative to
	// the workspace, or a bare name matched at any depth.
	ChangesExclude []string `yaml:"changes_exclude"`
	// UndoMax bounds what is kept to undo with (a mirror of the
	// workspace's files and their earlier contents); the oldest steps are
	// dropped first. 0 means 1G.
	UndoMax Size `yaml:"undo_max"`
}

// ChangesOn says whether commands' changes are recorded, where a front
// end's default is def.
func (w WorkspaceConf) ChangesOn(def bool) bool {
	switch w.Changes {
	case "on":
		return true
	case "off":
		return false
	}
	return def
}

// sandbox.caches values.
const (
	CachesPrivate = "private"
	CachesShared  = "shared"
)

// SandboxConf confines the commands runbox starts on this machine (the
// local backend, background jobs, kernels): see docs/sandbox.md.
type SandboxConf struct {
	// Profile is workspace, read-only or off. Empty means workspace where
	// the kernel can give it, off (said in every result) where it cannot.
	// A profile named here that the kernel cannot give refuses commands.
	Profile string `yaml:"profile"`
	// Writable are more directories commands may write (beside the
	// workspace, the session's TMPDIR and the built-in caches).
	Writable []string `yaml:"writable"`
	// DenyRead are more paths commands may neither read nor write (beside
	// the built-in credentials and runbox's own files).
	DenyRead []string `yaml:"deny_read"`
	// GitWritable lets commands write .git/hooks and .git/config of a
	// repository that existed when the session started.
	GitWritable bool `yaml:"git_writable"`
	// Caches is private (the default: each workspace has caches of its
	// own, which the host's builds never read) or shared (the host's
	// caches, writable: faster, and a command can change what the
	// host's builds run).
	Caches string `yaml:"caches"`
	// Network is the network policy of confined commands.
	Network SandboxNetwork `yaml:"network"`
	// UnixSockets are unix sockets outside the writable directories that
	// commands may connect to (an ssh agent, a display server): every
	// other one is refused.
	UnixSockets []string `yaml:"unix_sockets"`
}

// SandboxNetwork is the network part of the sandbox.
type SandboxNetwork struct {
	// Mode is off, allowlist or open. Empty means allowlist under the
	// workspace and read-only profiles.
	Mode string `yaml:"mode"`
	// Allow are the hosts reachable through the session's proxy
	// ("pypi.org", "*.npmjs.org", "127.0.0.1:8080"); any other host asks.
	Allow []string `yaml:"allow"`
	// Deny are hosts never reachable (they win over Allow).
	Deny []string `yaml:"deny"`
	// Ports are loopback TCP ports commands may connect to directly.
	Ports []int `yaml:"ports"`
}

// SSHConf configures the ssh backend.
type SSHConf struct {
	// Host is the default host: "host", "user@host", "user@host:port".
	Host string `yaml:"host"`
	// User and Port apply when the host names none.
	User string `yaml:"user"`
	Port int    `yaml:"port"`
	// IdentityFile is a private key to offer after the ssh-agent's; empty
	// means the default keys in ~/.ssh.
	IdentityFile string `yaml:"identity_file"`
	// SSHConfig is the OpenSSH client configuration whose HostName, User,
	// Port and IdentityFile apply to a host alias; empty means
	// ~/.ssh/config, "none" reads none.
	SSHConfig string `yaml:"ssh_config"`
	// KnownHosts is the known_hosts file; empty means ~/.ssh/known_hosts.
	KnownHosts string `yaml:"known_hosts"`
	// AcceptNew records an unknown host's key (never a changed one).
	AcceptNew bool `yaml:"accept_new"`
	// AgentBinary is the static agent to upload ("" = found or built).
	AgentBinary string `yaml:"agent_binary"`
	// CLIBinary is the static runbox CLI uploaded for job commands
	// ("" = found or built).
	CLIBinary string `yaml:"cli_binary"`
	// NoAgent runs each command in a session of its own (degraded).
	NoAgent bool `yaml:"no_agent"`
	// Keepalive is the interval of keepalive requests (0 = 15s).
	Keepalive Duration `yaml:"keepalive"`
}

// DaytonaConf configures the daytona backend. Credentials are not here:
// they come from DAYTONA_API_KEY (or DAYTONA_JWT_TOKEN and
// DAYTONA_ORGANIZATION_ID), DAYTONA_API_URL and DAYTONA_TARGET.
type DaytonaConf struct {
	Image            string `yaml:"image"`
	Snapshot         string `yaml:"snapshot"`
	CPU              int    `yaml:"cpu"`
	Memory           int    `yaml:"memory"` // GiB
	Disk             int    `yaml:"disk"`   // GiB
	Task             string `yaml:"task"`
	Persistent       bool   `yaml:"persistent"`
	KeepRunning      bool   `yaml:"keep_running"`
	NetworkAllowList string `yaml:"network_allow_list"`
	// AgentBinary is the static runbox agent copied into the sandbox
	// ("" = the small agent beside runbox, else built once).
	AgentBinary string `yaml:"agent_binary"`
	// AgentDir is where in the sandbox the agent is put ("" =
	// /tmp/.runbox-agent).
	AgentDir string `yaml:"agent_dir"`
	// NoAgent runs each command in a toolbox session of its own
	// (degraded: no session state, PTY or signals).
	NoAgent bool `yaml:"no_agent"`
}

// Default is the configuration with nothing set by the user.
func Default() Config {
	return Config{
		Backend:     "local",
		OutputLimit: 256 << 10,
		Grace:       Duration(2 * time.Second),
		Contain:     true,
		Approval:    Approval{Mode: "manual"},
	}
}

// DefaultPath is where the file is looked for when neither --config nor
// RUNBOX_CONFIG names one.
func DefaultPath(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "runbox", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "runbox", "config.yaml")
	}
	return ""
}

// Load reads the file (explicit: from --config; "" means RUNBOX_CONFIG or
// the default path) and applies the environment. getenv is os.Getenv in
// production; tests pass their own.
func Load(explicit string, getenv func(string) string) (Config, error) {
	cfg := Default()
	path, must := explicit, explicit != ""
	if path == "" {
		if path = getenv("RUNBOX_CONFIG"); path != "" {
			must = true
		} else {
			path = DefaultPath(getenv)
		}
	}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			if err := decode(data, path, &cfg); err != nil {
				return cfg, err
			}
			cfg.Path = path
		case errors.Is(err, os.ErrNotExist) && !must:
		default:
			return cfg, fmt.Errorf("config: %w", err)
		}
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// Validate checks values that the types alone cannot.
func (c *Config) Validate() error {
	where := c.Path
	if where == "" {
		where = "configuration"
	}
	switch {
	case c.OutputLimit < 0:
		return fmt.Errorf("config: %s: output_limit must be >= 0, got %d", where, c.OutputLimit)
	case c.Timeout < 0 || c.Grace < 0:
		return fmt.Errorf("config: %s: timeout and grace must be >= 0", where)
	case c.Approval.Mode != "manual" && c.Approval.Mode != "off":
		return fmt.Errorf("config: %s: approval.mode must be manual or off, got %q", where, c.Approval.Mode)
	case c.Limits.Pids < 0 || c.Limits.CPUs < 0 || c.Limits.Memory < 0:
		return fmt.Errorf("config: %s: limits must be >= 0", where)
	case c.Sync.MaxSize < 0:
		return fmt.Errorf("config: %s: sync.max_size must be >= 0", where)
	case c.SSH.Port < 0 || c.SSH.Port > 65535 || c.SSH.Keepalive < 0:
		return fmt.Errorf("config: %s: ssh.port must be 0..65535 and ssh.keepalive >= 0", where)
	case !slices.Contains([]string{"", "workspace", "read-only", "off"}, c.Sandbox.Profile):
		return fmt.Errorf("config: %s: sandbox.profile must be workspace, read-only or off, got %q", where, c.Sandbox.Profile)
	case !slices.Contains([]string{"", "on", "off"}, c.Workspace.Changes):
		return fmt.Errorf("config: %s: workspace.changes must be on or off, got %q", where, c.Workspace.Changes)
	case !slices.Contains([]string{"", CachesPrivate, CachesShared}, c.Sandbox.Caches):
		return fmt.Errorf("config: %s: sandbox.caches must be private or shared, got %q", where, c.Sandbox.Caches)
	case !slices.Contains([]string{"", "off", "allowlist", "open"}, c.Sandbox.Network.Mode):
		return fmt.Errorf("config: %s: sandbox.network.mode must be off, allowlist or open, got %q", where, c.Sandbox.Network.Mode)
	case c.Docker.Pool < 0:
		return fmt.Errorf("config: %s: docker.pool must be >= 0", where)
	case c.Jobs.Retention < 0 || c.Jobs.MaxFinished < 0:
		return fmt.Errorf("config: %s: jobs.retention and jobs.max_finished must be >= 0", where)
	case c.Modal.CPU < 0 || c.Modal.Memory < 0 || c.Modal.Timeout < 0 || c.Modal.IdleTimeout < 0:
		return fmt.Errorf("config: %s: modal.cpu, modal.memory, modal.timeout and modal.idle_timeout must be >= 0", where)
	case c.Modal.BlockNetwork && len(c.Modal.CIDRAllowlist) > 0:
		return fmt.Errorf("config: %s: modal.block_network and modal.cidr_allowlist exclude each other", where)
	}
	return errors.Join(c.Kubernetes.Validate(where), c.Singularity.Validate(where), c.Vercel.Validate(where))
}

func applyEnv(c *Config, getenv func(string) string) error {
	set := func(name string, f func(string) error) error {
		if v := getenv(name); v != "" {
			if err := f(v); err != nil {
				return fmt.Errorf("config: environment variable %s=%q: %w", name, v, err)
			}
		}
		return nil
	}
	str := func(dst *string) func(string) error { return func(v string) error { *dst = v; return nil } }
	return errors.Join(
		set("RUNBOX_BACKEND", str(&c.Backend)),
		set("RUNBOX_SHELL", str(&c.Shell)),
		set("RUNBOX_IMAGE", str(&c.Docker.Image)),
		set("RUNBOX_DOCKER_POOL", func(v string) (err error) { c.Docker.Pool, err = strconv.Atoi(v); return err }),
		set("RUNBOX_MODAL_APP", str(&c.Modal.App)),
		set("RUNBOX_MODAL_IMAGE", str(&c.Modal.Image)),
		set("RUNBOX_SSH_HOST", str(&c.SSH.Host)),
		set("RUNBOX_SSH_IDENTITY", str(&c.SSH.IdentityFile)),
		set("RUNBOX_APPROVAL_MODE", str(&c.Approval.Mode)),
		set("RUNBOX_DAYTONA_TASK", str(&c.Daytona.Task)),
		set("RUNBOX_TIMEOUT", c.Timeout.Set),
		set("RUNBOX_GRACE", c.Grace.Set),
		set("RUNBOX_OUTPUT_LIMIT", func(v string) (err error) { c.OutputLimit, err = strconv.Atoi(v); return err }),
		set("RUNBOX_SANDBOX", str(&c.Sandbox.Profile)),
		set("RUNBOX_CONTAIN", func(v string) (err error) { c.Contain, err = strconv.ParseBool(v); return err }),
	)
}

// Duration is a time.Duration written as "30s", "2m".
type Duration time.Duration

// Set parses s ("30s"; a bare number is seconds).
func (d *Duration) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*d = Duration(n * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (want e.g. 30s, 2m)")
	}
	*d = Duration(v)
	return nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// Size is a byte count written as 512, "64K", "256M", "2G".
type Size int64

// Set parses s.
func (z *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*z = Size(v)
	return nil
}

// ParseSize parses a byte count with an optional K/M/G/T suffix (powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("not a size (want e.g. 512M, 2G): %q", s)
	}
	return int64(f * float64(mult)), nil
}
