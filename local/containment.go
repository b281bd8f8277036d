package local

import (
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// containmentCaps reports which mechanism holds each command's tree.
func containmentCaps(caps envs.Capabilities, contain bool, d termination.Detection) {
	if !contain {
		caps[envs.CapContainment] = envs.CapInfo{State: envs.Degraded, Detail: "process groups only (containment off); available: " + d.Mechanism.String()}
		caps[envs.CapLimits] = envs.CapInfo{State: limitState(d), Detail: "per-command limits use " + d.Mechanism.String()}
		return
	}
	state := envs.Active
	if d.Mechanism == termination.ProcessGroup {
		state = envs.Degraded
	}
	caps[envs.CapContainment] = envs.CapInfo{State: state, Detail: d.String()}
	caps[envs.CapLimits] = envs.CapInfo{State: limitState(d), Detail: d.Mechanism.String()}
}

func limitState(d termination.Detection) envs.CapState {
	if d.Mechanism == termination.ProcessGroup {
		return envs.Unsupported
	}
	return envs.Active
}
