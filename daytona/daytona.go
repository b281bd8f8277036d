package daytona

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// New opens an environment in a Daytona sandbox: the task's, found by its
// labels when o.Persistent, else a new one. ctx bounds provisioning.
func New(ctx context.Context, o Options) (*remote.Env, error) {
	cl, err := newClient(o.Credentials)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Owner == "" {
		o.Owner = "runbox"
	}
	if o.AgentDir == "" {
		o.AgentDir = DefaultAgentDir
	}
	sb := &sandbox{cl: cl, opts: o, log: log, toolbox: &http.Client{}, stty: rawMode}
	env, err := remote.New(ctx, sb, remote.Options{
		Name: "daytona", Kind: "sandbox", Env: o.Env, Logger: log,
		AgentBinary: o.AgentBinary, AgentDir: o.AgentDir,
		CLI: true, CLIBinary: o.CLIBinary,
		NoAgent: o.NoAgent, NoAgentReason: "agent turned off (Options.NoAgent); each command runs in a toolbox session",
	})
	if err != nil {
		return nil, err
	}
	return env, nil
}

// Provider is the daytona backend's row of a provider table; options turns
// a caller's Spec into Options (credentials included, read by the caller
// from its own launch environment).
func Provider(options func(envs.Spec) (Options, error)) envs.Provider {
	p := envs.FallibleRow("daytona", "a Daytona sandbox per task (official SDK), the runbox agent over a toolbox PTY session",
		options, New, checkOptions, Capabilities)
	// A task's sandbox is usually stopped when the command that opened
	// it ends: its jobs are a session's.
	p.Jobs, p.TaskEnvs = envs.SessionJobs, true
	p.NoTasks = "a daytona task is a sandbox labelled runbox.task, and the Daytona SDK lists sandboxes without their labels, so runbox cannot tell which task each is for; remove one with Daytona's dashboard or CLI"
	return p
}

// checkOptions is Check of o's credentials.
func checkOptions(ctx context.Context, o Options) error { return Check(ctx, o.Credentials) }

// Check says whether credentials were found and the API answers to them.
func Check(ctx context.Context, c Credentials) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	page, limit := 1, 1
	if _, err := cl.List(ctx, map[string]string{LabelManaged: "true"}, &page, &limit); err != nil {
		return apiError(c, "reach the API", err)
	}
	return nil
}

// Sandboxes lists the sandboxes runbox made for owner (every owner when
// empty), for a reaper: their ids and states.
func Sandboxes(ctx context.Context, c Credentials, owner string) (map[string]string, error) {
	cl, err := newClient(c)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelManaged: "true"}
	if owner != "" {
		labels[LabelOwner] = owner
	}
	out := map[string]string{}
	for page := 1; ; page++ {
		limit := 100
		res, err := cl.List(ctx, labels, &page, &limit)
		if err != nil {
			return nil, apiError(c, "list sandboxes", err)
		}
		for _, sb := range res.Items {
			out[sb.ID] = fmt.Sprint(sb.State)
		}
		if page >= res.TotalPages {
			return out, nil
		}
	}
}

// Remove deletes sandbox id, for a reaper acting on what [Sandboxes]
// found. A sandbox already gone is not an error.
func Remove(ctx context.Context, c Credentials, id string) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	sb, err := cl.Get(ctx, id)
	if status(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return apiError(c, "get sandbox "+id, err)
	}
	if err := sb.Delete(ctx); err != nil && status(err) != http.StatusNotFound {
		return apiError(c, "delete sandbox "+id, err)
	}
	return nil
}
