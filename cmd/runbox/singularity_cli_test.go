package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// needApptainer returns the apptainer program and the test SIF that
// scripts/apptainer/build.sh prints, skipping (or, under
// RUNBOX_INTEGRATION=require, failing) without them.
func needApptainer(t *testing.T) (program, sif string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an Apptainer instance")
	}
	program, sif = os.Getenv("RUNBOX_TEST_APPTAINER"), os.Getenv("RUNBOX_TEST_SIF")
	if program == "" {
		program, _ = exec.LookPath("apptainer")
	}
	why := ""
	if program == "" {
		why = "no apptainer: set RUNBOX_TEST_APPTAINER (scripts/apptainer/build.sh)"
	} else if _, err := os.Stat(sif); sif == "" || err != nil {
		why = "no test image: set RUNBOX_TEST_SIF (scripts/apptainer/build.sh)"
	}
	if why == "" {
		return program, sif
	}
	integration.Skip(t, "%s", why)
	return "", ""
}

// TestRunSingularity: runbox run --backend singularity runs the command
// in an instance of the image (Debian's, not this machine's), exits with
// its code, and leaves no instance running.
func TestRunSingularity(t *testing.T) {
	program, sif := needApptainer(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("singularity:\n  program: "+program+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RUNBOX_CONFIG": cfg, "RUNBOX_STATE_DIR": filepath.Join(dir, "state")}
	out, stderr, code := cli(t, "", env, "run", "--backend", "singularity", "--image", sif, "--",
		"cat /etc/debian_version; echo \"pid1=$(cat /proc/1/comm)\"; exit 3")
	if code != 3 {
		t.Fatalf("exit %d; want 3 (stderr %s)", code, stderr)
	}
	if !strings.HasPrefix(out, "12.") || !strings.Contains(out, "pid1=appinit") {
		t.Fatalf("output %q; want Debian 12's version and the instance's own PID 1 (appinit)", out)
	}
	// The instance is named after the process that started it: this one.
	out2, err := exec.Command(program, "instance", "list").Output()
	if err != nil {
		t.Fatalf("instance list: %v", err)
	}
	if mine := fmt.Sprintf("runbox-%d-", os.Getpid()); strings.Contains(string(out2), mine) {
		t.Fatalf("the run left its instance running:\n%s", out2)
	}
}
