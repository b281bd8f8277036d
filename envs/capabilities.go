package envs

import (
	"encoding/json"
	"sort"
)

// CapState says how far a backend enforces a capability.
type CapState int

const (
	// Unsupported is the zero value: the backend does not offer it.
	Unsupported CapState = iota
	// Degraded: offered, but weaker than the contract (the detail says how).
	Degraded
	// Active: fully enforced.
	Active
)

func (s CapState) String() string {
	switch s {
	case Active:
		return "active"
	case Degraded:
		return "degraded"
	}
	return "unsupported"
}

// MarshalText writes the state as its name.
func (s CapState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Capability names a guarantee a backend may enforce.
type Capability string

// The capabilities every backend reports.
const (
	CapTreeKill      Capability = "tree_kill"
	CapPTY           Capability = "pty"
	CapStdin         Capability = "stdin"
	CapSignals       Capability = "signals"
	CapLimits        Capability = "limits"
	CapContainment   Capability = "containment"
	CapNetworkPolicy Capability = "network_policy"
	CapSnapshots     Capability = "snapshots"
	CapFileTransfer  Capability = "file_transfer"
	CapSessionState  Capability = "session_state"
	CapDurableOutput Capability = "durable_output"
	CapHostAccess    Capability = "host_access"
)

// AllCapabilities lists every capability in report order.
var AllCapabilities = []Capability{
	CapTreeKill, CapPTY, CapStdin, CapSignals, CapLimits, CapContainment,
	CapNetworkPolicy, CapSnapshots, CapFileTransfer, CapSessionState,
	CapDurableOutput, CapHostAccess, CapUndo,
}

// CapInfo is one capability's state and why.
type CapInfo struct {
	State  CapState `json:"state"`
	Detail string   `json:"detail,omitempty"`
}

// Capabilities maps each capability to its state. A missing key is Unsupported.
type Capabilities map[Capability]CapInfo

// State returns the state of c (Unsupported when absent).
func (c Capabilities) State(k Capability) CapState { return c[k].State }

// MarshalJSON writes the capabilities with sorted keys and every known
// capability present, so a missing one reads "unsupported" rather than vanishing.
func (c Capabilities) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(c)+len(AllCapabilities))
	seen := map[Capability]bool{}
	for _, k := range AllCapabilities {
		keys, seen[k] = append(keys, string(k)), true
	}
	for k := range c {
		if !seen[k] {
			keys = append(keys, string(k))
		}
	}
	sort.Strings(keys)
	m := make(map[string]CapInfo, len(keys))
	for _, k := range keys {
		m[k] = c[Capability(k)]
	}
	return json.Marshal(m)
}
