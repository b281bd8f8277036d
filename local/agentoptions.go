package local

import (
	"log/slog"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
)

// AgentOptions is the local backend as runbox's agent runs it: cfg's shell,
// grace, containment, limits and spawn lists over environ, no subreaper.
func AgentOptions(cfg config.Config, environ []string, log *slog.Logger) Options {
	pol := spawn.DefaultPolicy()
	pol.Passthrough = append(pol.Passthrough, cfg.Spawn.Passthrough...)
	pol.ExtraBlock = append(pol.ExtraBlock, cfg.Spawn.ExtraBlock...)
	pol.ExtraStrip = append(pol.ExtraStrip, cfg.Spawn.ExtraStrip...)
	grace := time.Duration(cfg.Grace)
	if grace == 0 {
		grace = NoGrace
	}
	return Options{
		Shell:         cfg.Shell,
		BaseEnv:       environ,
		Spawn:         &pol,
		Grace:         grace,
		Limits:        envs.Limits{MemoryBytes: int64(cfg.Limits.Memory), Pids: cfg.Limits.Pids, CPUs: cfg.Limits.CPUs},
		NoContainment: !cfg.Contain,
		KeepLeftovers: true, // the sandbox bounds them; a job daemon started here must live on
		SpillMax:      int64(cfg.SpillMax),
		// The agent runs inside the backend's sandbox (a container, a
		// pod, a remote machine): that is the boundary, chosen by the
		// backend, not a local sandbox nobody asked for.
		Confine: confine.Off(),
		Logger:  log,
	}
}
