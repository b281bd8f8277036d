package confine

import (
	"fmt"
	"strings"

	"github.com/runbox/runbox/envs"
)

// State is how well the kernel gives one layer.
type State string

const (
	// Active: the layer is applied in full.
	Active State = "active"
	// Degraded: the layer is applied in part; Reason says what is missing.
	Degraded State = "degraded"
	// Unsupported: the layer cannot be applied at all.
	Unsupported State = "unsupported"
)

// Layer names, as [Probe] reports them.
const (
	LayerFiles     = "files"
	LayerProcesses = "processes"
	LayerPtrace    = "ptrace"
	LayerSignals   = "signals"
	LayerNetwork   = "network"
	LayerMountNS   = "mount namespace"
	// LayerOwnServers: runbox decides connects (see "Connects" in the
	// package documentation).
	LayerOwnServers = "own servers"
)

// Layer is one confinement layer and how the kernel gives it.
type Layer struct {
	Name   string `json:"name"`
	State  State  `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Report is what [Probe] found: the kernel's Landlock ABI (0 when it has
// none) and each layer's state.
type Report struct {
	LandlockABI int     `json:"landlock_abi"`
	Layers      []Layer `json:"layers"`
}

// Layer returns the named layer (State Unsupported when it is absent).
func (r Report) Layer(name string) Layer {
	for _, l := range r.Layers {
		if l.Name == name {
			return l
		}
	}
	return Layer{Name: name, State: Unsupported, Reason: "not probed"}
}

// Check returns nil when the kernel can give p, and otherwise an error
// (wrapping envs.ErrUnsupported) that says what is missing and how to run
// unconfined. Degraded layers do not refuse a profile: their reason is
// for `runbox doctor`.
func (r Report) Check(p Policy) error {
	if p.Profile == ProfileOff {
		return nil
	}
	var missing []string
	need := []string{LayerFiles, LayerProcesses, LayerPtrace}
	if p.network() != NetworkOpen {
		need = append(need, LayerNetwork)
	}
	for _, n := range need {
		l := r.Layer(n)
		if l.State == Unsupported {
			missing = append(missing, fmt.Sprintf("%s (%s)", n, l.Reason))
		}
	}
	if p.network() == NetworkAllowlist && r.LandlockABI < 4 {
		missing = append(missing, fmt.Sprintf("network allowlist (Landlock ABI 4 needed, the kernel has %d)", r.LandlockABI))
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("confine: this kernel cannot give the %s sandbox: missing %s; choose `sandbox: off` (config or --sandbox off) to run commands unconfined: %w",
		p.Profile, strings.Join(missing, ", "), envs.ErrUnsupported)
}
