package local_test

import (
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/local"
)

// TestAgentOptions_FromConfig protects the mapping from the sandbox's
// configuration to the local backend the agent serves: no subreaper ever
// (what a command starts to outlive it in a sandbox must not be torn down
// with it), grace 0 meaning SIGKILL at once, contain false meaning
// process groups only, the spawn lists laid over the default policy.
func TestAgentOptions_FromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Shell = "sh"
	cfg.Contain = false
	cfg.Grace = 0
	cfg.Limits.Pids = 64
	cfg.Spawn.Passthrough = []string{"GITHUB_TOKEN"}
	o := local.AgentOptions(cfg, []string{"A=1"}, nil)
	if o.Subreaper != nil || o.Shell != "sh" || !o.NoContainment || o.Grace != local.NoGrace || o.Limits.Pids != 64 {
		t.Errorf("AgentOptions = subreaper %v, shell %q, no containment %v, grace %v, pids %d; want nil, sh, true, NoGrace, 64",
			o.Subreaper, o.Shell, o.NoContainment, o.Grace, o.Limits.Pids)
	}
	if o.Spawn == nil || len(o.Spawn.Passthrough) == 0 || o.Spawn.Passthrough[len(o.Spawn.Passthrough)-1] != "GITHUB_TOKEN" {
		t.Errorf("spawn passthrough = %v; want the configured name added", o.Spawn)
	}
	if d := local.AgentOptions(config.Default(), nil, nil); d.NoContainment || d.Grace != 2*time.Second {
		t.Errorf("default config: no containment %v, grace %v; want false, 2s", d.NoContainment, d.Grace)
	}
}
