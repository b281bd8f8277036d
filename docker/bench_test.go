package docker_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// BenchmarkEnv_RunTrue measures `true` through the agent; the
// DockerCLIExec sub-benchmark is the baseline on the same container.
func BenchmarkEnv_RunTrue(b *testing.B) {
	env, err := docker.New(context.Background(), docker.Options{Image: debianImage, AgentBinary: agentBin})
	if err != nil {
		b.Skipf("no engine or image: %v", err)
	}
	defer env.Close(context.Background())
	b.Run("Agent", func(b *testing.B) {
		for b.Loop() {
			if _, err := env.Run(b.Context(), envs.Command{Args: []string{"true"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DockerCLIExec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("docker", "exec", env.ContainerID(), "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
