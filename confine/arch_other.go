//go:build linux && !amd64 && !arm64

package confine

// No seccomp filter is written for this architecture: auditArch 0 makes
// Probe report the network layer unsupported and the trampoline refuse.
const (
	auditArch uint32 = 0
	x32Base   uint32 = 0
)

// chmodCalls: none are known here (see arch_amd64.go).
var chmodCalls []struct{ nr, arg uint32 }

// legacyMetaCalls: none are known here (see arch_amd64.go).
var legacyMetaCalls = map[uint32]metaShape{}
