package modal

import (
	"log/slog"
	"time"
)

// DefaultApp is the Modal app runbox's sandboxes belong to.
const DefaultApp = "runbox"

// DefaultImage is the image when Options.Image is empty.
const DefaultImage = "python:3.12-slim"

// DefaultReadyTimeout bounds waiting for a new sandbox to accept its first
// exec when Options.ReadyTimeout is zero.
const DefaultReadyTimeout = 2 * time.Minute

// Tag names on runbox's sandboxes: who made it, for which task.
const (
	TagManaged = "runbox"
	TagOwner   = "runbox.owner"
	TagTask    = "runbox.task"
)

// Options configures the modal backend.
type Options struct {
	// Getenv reads the launch environment for credentials. Nil means
	// os.Getenv.
	Getenv func(string) string
	// App is the Modal app; empty means DefaultApp.
	App string
	// Image is a registry tag ("python:3.12") or an image id ("im-…").
	Image string
	// CPU is the requested physical cores; zero is Modal's default.
	CPU float64
	// MemoryMiB is the requested memory; zero is Modal's default.
	MemoryMiB int
	// Timeout is the sandbox's maximum lifetime (whole seconds); zero is
	// Modal's default (5 minutes).
	Timeout time.Duration
	// IdleTimeout ends a sandbox with no activity (whole seconds); zero
	// means none.
	IdleTimeout time.Duration
	// Workdir is the sandbox's working directory (absolute).
	Workdir string
	// BlockNetwork cuts all network access; CIDRAllowlist allows only
	// these ranges. They exclude each other.
	BlockNetwork  bool
	CIDRAllowlist []string
	// Owner and Task tag the sandbox (runbox.owner, runbox.task). An
	// empty Task is a random one.
	Owner, Task string
	// Persistent snapshots the sandbox's filesystem on Close and records
	// Task → image id in StateDir; the next environment of the task
	// starts from it. False terminates the sandbox on Close.
	Persistent bool
	// StateDir is runbox's state directory (the snapshot records live in
	// StateDir/modal). Required with Persistent.
	StateDir string
	// AgentBinary is the static agent to upload; empty finds or builds
	// one (remote.Agent().Find).
	AgentBinary string
	// AgentDir is where the agent goes in the sandbox; empty is
	// remote.DefaultAgentDir.
	AgentDir string
	// CLIBinary is the static runbox CLI copied into the sandbox before
	// the first command that runs it (the session's background jobs:
	// their daemon runs in the sandbox); empty finds or builds one
	// (remote.CLI().FindSmall).
	CLIBinary string
	// Env is laid over every command's environment (sent with each
	// command, never in the sandbox's definition).
	Env map[string]string
	// ReadyTimeout bounds waiting for a new sandbox to take its first
	// exec. Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Logger receives warnings and debug logs. Nil discards them.
	Logger *slog.Logger
}
