package singularity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// Contain is how far an instance is kept apart from the host.
type Contain string

const (
	// ContainAll is --containall: its own IPC namespace, a minimal /dev,
	// no host home, /tmp or /var/tmp, a clean environment. The default.
	ContainAll Contain = "containall"
	// ContainDirs is --contain: a minimal /dev and no host home, /tmp or
	// /var/tmp, but the host's IPC namespace.
	ContainDirs Contain = "contain"
	// ContainNone gives the instance the host's home, /tmp and IPC
	// namespace: the usual HPC setting, and little containment.
	ContainNone Contain = "none"
)

// Options configures an [Env]. The zero value of every field but Image is
// usable.
type Options struct {
	// Program is the apptainer or singularity program (a path, or a name
	// looked up on PATH). Empty means the first of apptainer and
	// singularity found on PATH.
	Program string
	// Image is what instances start from: a SIF file, a sandbox
	// directory, or any reference the program takes (docker://…,
	// docker-daemon:…, oras://…). Required.
	Image string
	// Contain is how the instance is kept apart from the host. Empty
	// means [ContainAll].
	Contain Contain
	// WritableTmpfs lays a tmpfs over the image (--writable-tmpfs), so
	// commands can write anywhere in it (lost when the instance stops).
	// False leaves the image read-only but for the binds and the
	// directories containment gives (/tmp, home).
	WritableTmpfs bool
	// Binds are more --bind specifications ("src[:dest[:ro]]").
	Binds []string
	// Workspace is a host directory bound read-write at /workspace. Empty
	// binds none.
	Workspace string
	// Dir is the initial working directory in the instance. Empty means
	// the program's default: runbox's own working directory when the
	// instance has that path, else the home directory.
	Dir string
	// Network is the instance's network: "" the host's, "none" a network
	// namespace with loopback only (--net --network none).
	Network string
	// NoUserNS leaves --userns out, so a setuid installation uses its
	// setuid starter. False asks for user namespaces (the unprivileged
	// mode) whenever this process can make one.
	NoUserNS bool
	// Task names a task: its instance is named after Owner and Task, kept
	// running at Close and found again by the next New of the same task.
	// Empty means an instance of this environment alone, stopped at Close.
	Task string
	// Owner is whose tasks these are. Empty means $RUNBOX_OWNER (through
	// Getenv), else the user's name.
	Owner string
	// StateDir keeps a host directory per instance (bound into it at
	// AgentDir, where the agent is copied). Empty means runbox's
	// directory in the user's cache.
	StateDir string
	// AgentBinary is the static agent to deploy. Empty means the host's
	// search (see remote.Options.AgentBinary).
	AgentBinary string
	// SourceDir is the runbox module's root, to build the agent from.
	SourceDir string
	// AgentDir is where the agent goes in the instance. Empty means
	// remote.DefaultAgentDir.
	AgentDir string
	// Env is laid over every command's environment; it travels with each
	// command, never in the instance's configuration.
	Env map[string]string
	// Getenv reads runbox's environment (PATH to find the program, HOME
	// and the program's cache and tmp settings it passes on). Nil means
	// os.Getenv.
	Getenv func(string) string
	// StartTimeout bounds starting an instance. Zero means
	// [DefaultStartTimeout].
	StartTimeout time.Duration
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}

// DefaultStartTimeout bounds an instance start when Options.StartTimeout
// is zero: an image from a registry may be pulled and converted first.
const DefaultStartTimeout = 10 * time.Minute

// namePrefix starts the name of every instance runbox makes; taskPrefix
// the name of a task's.
const (
	namePrefix = "runbox-"
	taskPrefix = namePrefix + "task-"
)

// fill checks opts and fills the defaults.
func fill(opts Options) (Options, error) {
	o := opts
	o.Binds = append([]string(nil), o.Binds...)
	o.Env = maps.Clone(o.Env)
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Contain == "" {
		o.Contain = ContainAll
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Owner == "" {
		o.Owner = owner(o.Getenv)
	}
	switch {
	case o.Image == "":
		return o, fmt.Errorf("singularity: no image (singularity.image, or --image): %w", envs.ErrBadCommand)
	case o.Contain != ContainAll && o.Contain != ContainDirs && o.Contain != ContainNone:
		return o, fmt.Errorf("singularity: contain must be containall, contain or none, got %q: %w", o.Contain, envs.ErrBadCommand)
	case o.Network != "" && o.Network != "none":
		return o, fmt.Errorf("singularity: network must be empty (the host's) or none, got %q: %w", o.Network, envs.ErrUnsupported)
	}
	for _, b := range o.Binds {
		if b == "" || strings.HasPrefix(b, ":") {
			return o, fmt.Errorf("singularity: bind %q names no host path: %w", b, envs.ErrBadCommand)
		}
	}
	if o.StateDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return o, fmt.Errorf("singularity: no state directory: %w", err)
		}
		o.StateDir = filepath.Join(dir, "runbox", "singularity")
	}
	if abs, err := filepath.Abs(o.StateDir); err == nil {
		o.StateDir = abs
	}
	if o.Workspace != "" {
		abs, err := filepath.Abs(o.Workspace)
		if err != nil {
			return o, fmt.Errorf("singularity: workspace %s: %w", o.Workspace, err)
		}
		o.Workspace = abs
	}
	return o, nil
}

// owner is RUNBOX_OWNER, else the user's name, else the uid.
func owner(getenv func(string) string) string {
	if o := getenv("RUNBOX_OWNER"); o != "" {
		return o
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// unsafeName matches what an instance name may not hold.
var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// TaskInstance is the name of owner's instance for task: readable, and
// unique per (owner, task) even when either holds characters an instance
// name may not (those are replaced, and a hash of the two added).
func TaskInstance(owner, task string) string {
	name := taskPrefix + unsafeName.ReplaceAllString(owner, "_") + "-" + unsafeName.ReplaceAllString(task, "_")
	if len(name) > 64 || unsafeName.MatchString(owner+task) || strings.Contains(owner, "-") {
		sum := sha256.Sum256([]byte(owner + "\x00" + task))
		if len(name) > 48 {
			name = name[:48]
		}
		name += "-" + hex.EncodeToString(sum[:4])
	}
	return name
}

// ownedInstance names a new instance of this process alone: its pid and
// start time, so that [Reap] can tell when the process is gone, and a
// random part.
func ownedInstance() (string, error) {
	self, err := termination.Identify(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("singularity: identify this process: %w", err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s%d-%d-%s", namePrefix, self.PID, self.StartTime, hex.EncodeToString(b)), nil
}

// instanceOwner parses the owning process out of an instance name that
// [ownedInstance] made; false for any other name (a task's, a user's own).
func instanceOwner(name string) (termination.Proc, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok || strings.HasPrefix(name, taskPrefix) {
		return termination.Proc{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 {
		return termination.Proc{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return termination.Proc{}, false
	}
	return termination.Proc{PID: pid, StartTime: start}, true
}
