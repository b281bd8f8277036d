package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/runbox/runbox/cmd/internal/bench"
)

// TestBench_DockerCreateJSON: the two container start-up measurements
// (cold and from a warm pool) each print one JSON object with both times
// and their ratio, and leave no container behind (the pool's included).
// Breaks if the pooled case loses its baseline or its pool outlives it.
func TestBench_DockerCreateJSON(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	out, errs, code := cli(t, "", map[string]string{"RUNBOX_IMAGE": image}, "bench", "--json", "-n", "1",
		"--only", "docker-create-to-first-command,docker-create-to-first-command-pooled")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("bench printed %d lines; want two measurements:\n%s", len(lines), out)
	}
	for i, want := range []string{"docker-create-to-first-command", "docker-create-to-first-command-pooled"} {
		var m bench.Measurement
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatalf("not JSON: %v: %s", err, lines[i])
		}
		if m.Name != want || m.Note != "" || m.N != 1 || m.P50ms <= 0 || m.BaselineP50ms <= 0 || m.Ratio <= 0 {
			t.Errorf("measurement %d = %s; want %s with both times and a ratio", i, lines[i], want)
		}
	}
	tasks, err := exec.Command("docker", "ps", "-a", "--filter", "label=io.runbox.managed", "--format", `{{.ID}} {{.Label "io.runbox.task"}}`).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(tasks)), "\n") {
		// The bench's containers carry the task runbox-bench-RUN.
		if strings.Contains(line, " runbox-bench-") {
			t.Errorf("container left by the bench: %s", line)
		}
	}
}
