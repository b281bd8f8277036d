package local_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// BenchmarkRun measures `true` through the local backend (session state,
// spawn, containment) against a bare `bash -c true` spawned directly:
// on a pre-started shell (the default), and started cold (NoPrestart).
// Back to back, as here, each command also waits for whatever of its
// shell's start the previous command's run did not cover.
func BenchmarkRun(b *testing.B) {
	for name, opts := range map[string]local.Options{
		"contained": {}, "pgroup": {NoContainment: true},
		"contained-cold": {NoPrestart: true}, "pgroup-cold": {NoContainment: true, NoPrestart: true},
	} {
		opts.Confine = confine.Off()
		b.Run(name, func(b *testing.B) {
			env, err := local.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close(context.Background())
			for b.Loop() {
				if res, err := env.Run(b.Context(), envs.Command{Shell: "true"}); err != nil || res.Code != 0 {
					b.Fatal(err, res)
				}
			}
		})
	}
	b.Run("baseline-bash", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("bash", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
