package vercel

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// ErrNoCredentials is what New and the provider's check return when no
// token, or no team and project to go with it, was found.
var ErrNoCredentials = errors.New("vercel: no credentials: set VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID (or VERCEL_OIDC_TOKEN)")

// DefaultAPIURL is Vercel's API when Credentials.APIURL is empty.
const DefaultAPIURL = "https://vercel.com/api"

// Credentials are what runbox authenticates to Vercel's API with. Source
// says where they were found, for errors ("environment variable
// VERCEL_TOKEN"); it never holds a value.
type Credentials struct {
	// Token is an access token or an OIDC token, sent only as the
	// Authorization header of API requests.
	Token string
	// TeamID and ProjectID scope every request (the teamId query
	// parameter, the projectId of a new sandbox).
	TeamID, ProjectID string
	// APIURL is the API's base URL; empty means DefaultAPIURL.
	APIURL string
	Source string
}

// CredentialsFrom reads VERCEL_TOKEN (else VERCEL_OIDC_TOKEN),
// VERCEL_TEAM_ID, VERCEL_PROJECT_ID and VERCEL_API_URL through getenv
// (runbox passes its sealed launch environment, not os.Getenv). An OIDC
// token names its team and project in its claims, which fill what the
// variables leave empty. It fails with [ErrNoCredentials] when a token,
// a team or a project is missing.
func CredentialsFrom(getenv func(string) string) (Credentials, error) {
	c := Credentials{
		Token:     getenv("VERCEL_TOKEN"),
		TeamID:    getenv("VERCEL_TEAM_ID"),
		ProjectID: getenv("VERCEL_PROJECT_ID"),
		APIURL:    getenv("VERCEL_API_URL"),
		Source:    "environment variable VERCEL_TOKEN",
	}
	if c.Token == "" {
		c.Token = getenv("VERCEL_OIDC_TOKEN")
		c.Source = "environment variable VERCEL_OIDC_TOKEN"
		if owner, project := oidcClaims(c.Token); owner != "" {
			c.TeamID = cmpOr(c.TeamID, owner)
			c.ProjectID = cmpOr(c.ProjectID, project)
		}
	}
	var missing []string
	for _, m := range []struct{ name, v string }{{"VERCEL_TOKEN (or VERCEL_OIDC_TOKEN)", c.Token}, {"VERCEL_TEAM_ID", c.TeamID}, {"VERCEL_PROJECT_ID", c.ProjectID}} {
		if m.v == "" {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return Credentials{}, fmt.Errorf("%w (missing %s)", ErrNoCredentials, strings.Join(missing, ", "))
	}
	return c, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// oidcClaims reads, without verifying it (the API does), the team
// (owner_id) and project (project_id) an OIDC token was issued for.
func oidcClaims(token string) (owner, project string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", ""
	}
	var claims struct {
		Owner   string `json:"owner_id"`
		Project string `json:"project_id"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return "", ""
	}
	return claims.Owner, claims.Project
}

func (c Credentials) url() string {
	if c.APIURL == "" {
		return DefaultAPIURL
	}
	return strings.TrimRight(c.APIURL, "/")
}

// Network policies a sandbox can be given.
const (
	NetworkAllowAll = "allow-all"
	NetworkDenyAll  = "deny-all"
)

// Options configures a Vercel environment.
type Options struct {
	// Credentials authenticate to Vercel's API. Required.
	Credentials Credentials
	// Runtime is the sandbox image ("node22", "python3.13"). Empty means
	// Vercel's default image.
	Runtime string
	// VCPUs sizes the sandbox (Vercel gives 2 GB of memory per vCPU).
	// Zero means Vercel's default.
	VCPUs int
	// Timeout is how long a sandbox session may run before Vercel stops
	// it; the next command then finds it stopped and provisions again.
	// Zero means Vercel's default (5 minutes).
	Timeout time.Duration
	// Ports are exposed through Vercel's routes (at most 15).
	Ports []int
	// Network is the sandbox's network policy: NetworkAllowAll (Vercel's
	// default when empty), NetworkDenyAll, or, when AllowDomains is set,
	// only those domains.
	Network      string
	AllowDomains []string
	// Owner and Task name the sandbox ("runbox-<owner>-<task>") and tag it
	// (runbox.owner, runbox.task), so a task's sandbox is found again.
	// An empty Task makes an unnamed, ephemeral sandbox.
	Owner, Task string
	// Persistent keeps the task's sandbox across environments: it is
	// created persistent (Vercel snapshots its filesystem when it stops),
	// found by name and resumed at the next open, and Close stops it
	// rather than deleting it. It needs a Task.
	Persistent bool
	// KeepRunning leaves a persistent sandbox running at Close.
	KeepRunning bool
	// Dir is the working directory of commands that name none. Empty
	// means the sandbox's (Vercel's /vercel/sandbox).
	Dir string
	// Env is laid over every command's environment. It travels with each
	// command over the agent's stream, never in the sandbox's definition.
	Env map[string]string
	// AgentBinary is the static agent to upload; empty finds or builds one.
	AgentBinary string
	// AgentDir is where the agent goes in the sandbox; empty means
	// DefaultAgentDir (the sandbox's user cannot write to /).
	AgentDir string
	// CreateTimeout bounds creating or resuming a sandbox. Zero means 3
	// minutes.
	CreateTimeout time.Duration
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// DefaultAgentDir is where the agent is put when Options.AgentDir is
// empty: writable by the sandbox's unprivileged user, outside its
// working directory.
const DefaultAgentDir = "/tmp/.runbox"

// Tags runbox puts on its sandboxes.
const (
	TagManaged = "runbox.managed"
	TagOwner   = "runbox.owner"
	TagTask    = "runbox.task"
)

// fill checks o and fills its defaults.
func fill(o Options) (Options, error) {
	if o.Credentials.Token == "" || o.Credentials.TeamID == "" || o.Credentials.ProjectID == "" {
		return o, ErrNoCredentials
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AgentDir == "" {
		o.AgentDir = DefaultAgentDir
	}
	if o.CreateTimeout <= 0 {
		o.CreateTimeout = 3 * time.Minute
	}
	if o.Owner == "" {
		o.Owner = "user"
	}
	switch {
	case o.Network != "" && o.Network != NetworkAllowAll && o.Network != NetworkDenyAll:
		return o, fmt.Errorf("vercel: network %q: want %q or %q", o.Network, NetworkAllowAll, NetworkDenyAll)
	case o.Network == NetworkDenyAll && len(o.AllowDomains) > 0:
		return o, errors.New("vercel: network deny-all and allowed domains exclude each other")
	case o.Persistent && o.Task == "":
		return o, errors.New("vercel: a persistent sandbox needs a task to be found again")
	case o.VCPUs < 0 || o.Timeout < 0:
		return o, errors.New("vercel: vcpus and timeout must be >= 0")
	case len(o.Ports) > 15:
		return o, errors.New("vercel: at most 15 ports")
	}
	return o, nil
}

// name is the sandbox's name for the task: lowercase letters, digits and
// dashes, as Vercel's names are.
func (o Options) name() string {
	if o.Task == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToLower("runbox-" + o.Owner + "-" + o.Task) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

func (o Options) tags() map[string]string {
	t := map[string]string{TagManaged: "true", TagOwner: o.Owner}
	if o.Task != "" {
		t[TagTask] = o.Task
	}
	return t
}

// networkPolicy is the policy's wire form, nil for Vercel's default.
func (o Options) networkPolicy() any {
	switch {
	case len(o.AllowDomains) > 0:
		return map[string]any{"allow": o.AllowDomains}
	case o.Network != "":
		return map[string]string{"mode": o.Network}
	}
	return nil
}
