//go:build !linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ErrNotEnforced: [Prepared.Start] could not confine its thread.
var ErrNotEnforced = errors.New("confine: the sandbox could not be enforced")

// Prepared cannot be made: confinement exists on Linux only.
type Prepared struct{}

// Prepare refuses: confinement needs Linux.
func Prepare(p Policy) (*Prepared, error) {
	return nil, fmt.Errorf("confine: confinement needs Linux: choose `sandbox: off`")
}

// Current is false.
func (*Prepared) Current() bool { return false }

// Start refuses.
func (*Prepared) Start(func() error) (func() error, error) {
	return func() error { return nil }, ErrNotEnforced
}

// Close does nothing.
func (*Prepared) Close() error { return nil }

// Main refuses: confinement exists on Linux only.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "runbox: sandbox: confinement needs Linux: choose `sandbox: off`")
	return 126
}

// Probe reports every layer unsupported.
func Probe() Report {
	var r Report
	for _, n := range []string{LayerFiles, LayerProcesses, LayerPtrace, LayerSignals, LayerNetwork, LayerMountNS} {
		r.Layers = append(r.Layers, Layer{Name: n, State: Unsupported, Reason: "not Linux"})
	}
	return r
}

// Handover has nothing to serve: confinement exists on Linux only.
type Handover struct{}

// NewHandover returns nil.
func NewHandover(Policy) (*Handover, error) { return nil, nil }

// Env is empty.
func (*Handover) Env() string { return "" }

// Name does nothing.
func (*Handover) Name(*exec.Cmd) {}

// Serve does nothing.
func (*Handover) Serve(int, func(Violation)) {}

// Close does nothing.
func (*Handover) Close() {}
