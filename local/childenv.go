package local

import (
	"fmt"
	"maps"
	"strings"

	"github.com/runbox/runbox/spawn"
)

// childEnv builds a command's environment through spawn: the base with
// secrets stripped, the environment's overlay, then the command's. The
// result is shared: callers must not change it.
func (e *Env) childEnv(overlay map[string]string) ([]string, *spawn.Result, error) {
	if len(overlay) == 0 && e.stableEnv() {
		// Without a command's own variables the build depends on the
		// options alone, which do not change: it is made once.
		e.baseOnce.Do(func() { e.baseEnv, e.baseRes, e.baseErr = e.buildEnv(nil) })
		return e.baseEnv, e.baseRes, e.baseErr
	}
	return e.buildEnv(overlay)
}

// stableEnv reports whether spawn.Build reads nothing but the options: it
// reads the launch profile's env file when another profile is served.
func (e *Env) stableEnv() bool {
	return e.opts.Launch.EnvFile == "" || e.opts.Served.IsZero() || e.opts.Served == e.opts.Launch
}

func (e *Env) buildEnv(overlay map[string]string) ([]string, *spawn.Result, error) {
	merged := maps.Clone(e.opts.Env)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, overlay)
	res, err := spawn.Build(spawn.Request{
		Base:    e.opts.BaseEnv,
		Overlay: merged,
		Served:  e.opts.Served,
		Launch:  e.opts.Launch,
		Policy:  *e.opts.Spawn,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("local: child environment: %w", err)
	}
	// A shell reads BASH_ENV/ENV before the command: a file named there
	// would run on every call, outside the session state.
	env := res.Env[:0:0]
	for _, kv := range res.Env {
		if strings.HasPrefix(kv, "BASH_ENV=") || strings.HasPrefix(kv, "ENV=") {
			continue
		}
		env = append(env, kv)
	}
	return env, res, nil
}
