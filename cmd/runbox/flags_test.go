package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A place flag is read by one definition, so a bad value is refused the
// same way by every command that takes it, before anything is opened or
// started. Breaks if a command parses its own copy of the flag.
func TestPlaceFlags_ReadTheSameEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--memory", "12XB", "--", "true"},
		{"serve", "--memory", "12XB"},
		{"start", "--memory", "12XB", "--", "true"},
	} {
		_, errs, code := cli(t, "", nil, args...)
		if code != exitUsage || !strings.Contains(errs, "--memory") {
			t.Errorf("runbox %q = exit %d, stderr %q; want %d naming --memory", args, code, errs, exitUsage)
		}
	}
}

// The configured docker image is the docker backend's default, filled in
// where docker options are made: a cell on the local backend runs though
// the configuration names one. Breaks if code lays docker.image into
// every backend's spec (local refuses an image it cannot honour).
func TestCode_LocalIgnoresDockerImage(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("docker:\n  image: debian:bookworm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, "", map[string]string{"RUNBOX_CONFIG": cfg}, "--yolo", "code", "print(6 * 7)")
	if code != 0 || out != "42\n" {
		t.Fatalf("runbox code on local with docker.image set = exit %d, stdout %q, stderr %q; want 0, \"42\\n\"", code, out, errs)
	}
}
