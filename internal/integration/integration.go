// Package integration decides what a test does when something it needs
// from the machine — a Docker engine, an image, sshd, a cgroup
// controller, a cluster — is absent: on a developer's machine it skips
// with the reason; under CI, which provisions all of it and sets
// RUNBOX_INTEGRATION=require, it fails, so that a test cannot pass by
// quietly not running.
//
//	if err := exec.Command("docker", "info").Run(); err != nil {
//		integration.Skip(t, "no docker engine: %v", err)
//	}
package integration

import (
	"os"
	"testing"
)

// Required reports whether every integration test must run
// (RUNBOX_INTEGRATION=require).
func Required() bool { return os.Getenv("RUNBOX_INTEGRATION") == "require" }

// Skip skips t with the reason, or fails it with the reason when
// [Required].
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("RUNBOX_INTEGRATION=require: "+format, args...)
	}
	t.Skipf(format, args...)
}
