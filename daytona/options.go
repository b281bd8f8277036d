package daytona

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runbox/runbox/spawn"
)

// ErrNoCredentials is what New and the provider's check return when
// neither an API key nor a JWT token with its organization was found.
var ErrNoCredentials = errors.New("daytona: no credentials: set DAYTONA_API_KEY (or DAYTONA_JWT_TOKEN and DAYTONA_ORGANIZATION_ID)")

// DefaultAPIURL is Daytona's API when no URL is configured.
const DefaultAPIURL = "https://app.daytona.io/api"

// Credentials are what the SDK authenticates with. Source says where they
// were found, for errors ("environment variable DAYTONA_API_KEY"); it
// never holds a value.
type Credentials struct {
	APIKey         string
	JWTToken       string
	OrganizationID string
	APIURL         string
	Target         string
	Source         string
}

// CredentialsFrom reads the DAYTONA_* variables through getenv (runbox
// passes its sealed launch environment, not os.Getenv). It fails with
// [ErrNoCredentials] when there is no key or token, and when a JWT token
// comes without its organization.
func CredentialsFrom(getenv func(string) string) (Credentials, error) {
	c := Credentials{
		APIKey:         getenv("DAYTONA_API_KEY"),
		JWTToken:       getenv("DAYTONA_JWT_TOKEN"),
		OrganizationID: getenv("DAYTONA_ORGANIZATION_ID"),
		APIURL:         getenv("DAYTONA_API_URL"),
		Target:         getenv("DAYTONA_TARGET"),
	}
	if c.APIURL == "" {
		c.APIURL = getenv("DAYTONA_SERVER_URL")
	}
	switch {
	case c.APIKey != "":
		c.Source = "environment variable DAYTONA_API_KEY"
	case c.JWTToken != "" && c.OrganizationID != "":
		c.Source = "environment variables DAYTONA_JWT_TOKEN and DAYTONA_ORGANIZATION_ID"
	case c.JWTToken != "":
		return Credentials{}, fmt.Errorf("%w: DAYTONA_JWT_TOKEN is set but DAYTONA_ORGANIZATION_ID is not", ErrNoCredentials)
	default:
		return Credentials{}, ErrNoCredentials
	}
	return c, nil
}

func (c Credentials) check() error {
	if c.APIKey == "" && (c.JWTToken == "" || c.OrganizationID == "") {
		return ErrNoCredentials
	}
	return nil
}

// token is what the API takes as the bearer token: the API key, else the
// JWT.
func (c Credentials) token() string {
	if c.APIKey != "" {
		return c.APIKey
	}
	return c.JWTToken
}

func (c Credentials) url() string {
	if c.APIURL == "" {
		return DefaultAPIURL
	}
	return c.APIURL
}

// Options configures a Daytona environment.
type Options struct {
	// Credentials authenticate to Daytona's API. Required.
	Credentials Credentials
	// Image is the image a new sandbox is built from ("python:3.12");
	// Snapshot names a Daytona snapshot instead. Neither means Daytona's
	// default snapshot.
	Image, Snapshot string
	// CPU (cores), MemoryGB and DiskGB size a sandbox made from an image
	// (a snapshot brings its own). Zero means Daytona's default.
	CPU, MemoryGB, DiskGB int
	// Owner and Task label the sandbox (runbox.owner, runbox.task), so a
	// persistent task's sandbox is found again and a reaper can find
	// what runbox left.
	Owner, Task string
	// Persistent keeps the task's sandbox across environments: it is
	// found by its labels, started if stopped or archived, auto-stop is
	// disabled on it, and Close stops it rather than deleting it.
	Persistent bool
	// KeepRunning leaves a persistent sandbox running at Close.
	KeepRunning bool
	// NetworkBlockAll cuts the sandbox's network; NetworkAllowList (CIDRs,
	// comma-separated) lets only those through.
	NetworkBlockAll  bool
	NetworkAllowList string
	// Dir is the working directory of commands that name none (the agent
	// starts there; a Dir that cannot be entered makes the agent fall
	// back to toolbox sessions, where such a command exits 126). Empty
	// means the sandbox's default (its user's home).
	Dir string
	// Env is laid over every command's environment.
	Env map[string]string
	// Spawn is the child-environment policy; nil means the default.
	Spawn *spawn.Policy
	// CreateTimeout bounds creating or starting a sandbox. Zero means 3
	// minutes (building from an image can take that).
	CreateTimeout time.Duration
	// AgentBinary is the static runbox agent to upload into the sandbox.
	// Empty means remote.Agent().FindSmall: the runbox-agent beside the
	// running binary, else one built from source into the user's cache.
	AgentBinary string
	// AgentDir is the directory in the sandbox the agent is uploaded to
	// (its standard error goes beside it). Empty means [DefaultAgentDir],
	// which a sandbox's unprivileged user can write.
	AgentDir string
	// CLIBinary is the static runbox CLI uploaded (into AgentDir, under a
	// name that carries its digest) before the first command that runs
	// it: the session's background jobs, whose daemon runs in the
	// sandbox. Empty means remote.CLI().FindSmall. Not used with NoAgent.
	CLIBinary string
	// NoAgent runs every command through the toolbox's session API
	// instead of the agent: the degraded path (no PTY, no session state,
	// no signals, stdin relayed, tree kill by marker), reported as such in
	// every result and in the capabilities. False runs the agent over a
	// PTY session and falls back to that path only when the agent cannot
	// run there.
	NoAgent bool
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// DefaultAgentDir is where the agent goes in a sandbox when
// Options.AgentDir is empty: Daytona's sandboxes run the toolbox as an
// unprivileged user, who may not write remote.DefaultAgentDir.
const DefaultAgentDir = "/tmp/.runbox-agent"

// Labels runbox puts on its sandboxes.
const (
	LabelManaged = "runbox.managed"
	LabelOwner   = "runbox.owner"
	LabelTask    = "runbox.task"
)

func (o Options) labels() map[string]string {
	l := map[string]string{LabelManaged: "true", LabelOwner: o.Owner}
	if o.Task != "" {
		l[LabelTask] = o.Task
	}
	return l
}
