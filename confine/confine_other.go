//go:build !linux

package confine

import (
	"fmt"
	"os"
)

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
