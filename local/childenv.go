package local

import (
	"fmt"
	"maps"
	"strings"

	"github.com/runbox/runbox/spawn"
)

// childEnv builds a command's environment through spawn: the base with
// secrets stripped, the environment's overlay, then the command's.
func (e *Env) childEnv(overlay map[string]string) ([]string, *spawn.Result, error) {
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
