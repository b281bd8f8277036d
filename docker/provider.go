package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/runbox/runbox/envs"
)

// Provider is the docker backend's row of a provider table. options turns
// a caller's Spec into Options (the caller owns its configuration); it is
// called for every environment opened and every capability report.
// Registering the backend is then one line:
//
//	providers.Register(docker.Provider(optionsFromConfig))
func Provider(options func(envs.Spec) Options) envs.Provider {
	p := envs.Row("docker", "a container per task (docker engine), with the runbox agent inside", options, New, check, Capabilities)
	// A task's container is kept running: jobs started there by one
	// runbox are there for the next.
	p.Jobs, p.TaskEnvs = envs.LastingJobs, true
	return p
}

// check says whether an engine answers.
func check(ctx context.Context, o Options) error {
	cli := o.Client
	if cli == nil {
		var err error
		if cli, err = NewClient(); err != nil {
			return err
		}
		defer cli.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return fmt.Errorf("docker: engine not reachable: %w", err)
	}
	if o.Logger != nil {
		o.Logger.Debug("docker engine", "version", v.Version, "api", v.APIVersion, "negotiated", cli.ClientVersion())
	}
	return nil
}
