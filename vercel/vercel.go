package vercel

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// Env is a vercel environment: the agent host over a Vercel sandbox.
type Env struct {
	*remote.Env
	sb *sandbox
}

// New opens an environment in the task's Vercel sandbox (found again and
// resumed when it has a name, else created) with the runbox agent inside.
func New(ctx context.Context, opts Options) (*Env, error) {
	o, err := fill(opts)
	if err != nil {
		return nil, err
	}
	sb := &sandbox{cl: newClient(o.Credentials), opts: o, log: o.Logger, name: map[string]string{}}
	re, err := remote.New(ctx, sb, remote.Options{
		Name:        "vercel",
		Kind:        "sandbox",
		AgentBinary: o.AgentBinary,
		AgentDir:    o.AgentDir,
		Env:         o.Env,
		Logger:      o.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Env{Env: re, sb: sb}, nil
}

// Sandbox is the name of the sandbox the environment uses now ("" before
// one is provisioned).
func (e *Env) Sandbox() string {
	e.sb.mu.Lock()
	defer e.sb.mu.Unlock()
	return e.sb.cur.Sandbox.Name
}

// Capabilities is what an environment opened with opts would report: the
// agent's, with the sandbox's own laid over them.
func Capabilities(opts Options) envs.Capabilities {
	caps := remote.AgentCapabilities()
	sandboxCapabilities(opts, caps)
	return caps
}

// Check says whether credentials are found and the API accepts them, by
// listing one of the project's sandboxes.
func Check(ctx context.Context, creds Credentials) error {
	if creds.Token == "" {
		return ErrNoCredentials
	}
	q := url.Values{"project": {creds.ProjectID}, "limit": {"1"}}
	return newClient(creds).call(ctx, "list sandboxes", http.MethodGet, "/v2/sandboxes", q, nil, nil)
}

// Provider is the vercel backend's row of a provider table; options
// turns a caller's Spec into Options (failing when credentials are
// missing).
func Provider(options func(envs.Spec) (Options, error)) envs.Provider {
	p := envs.FallibleRow("vercel", "a Vercel Sandbox microVM per task (REST API), with the runbox agent inside over its interactive PTY",
		options, New, checkOptions, Capabilities)
	p.TaskEnvs = true
	return p
}

// checkOptions is Check of o's credentials.
func checkOptions(ctx context.Context, o Options) error { return Check(ctx, o.Credentials) }
