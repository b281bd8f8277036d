package daytona_test

import (
	"context"
	"testing"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/daytona/internal/fake"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
)

const testKey = "dtn_test-key-7f3a9c"

func newFake(t *testing.T) *fake.Server {
	t.Helper()
	f := fake.New(testKey, t.TempDir())
	t.Cleanup(f.Close)
	return f
}

// options are a test's Options against f, with the credentials read as
// runbox reads them: from a launch environment, not this process's.
func options(t *testing.T, f *fake.Server) daytona.Options {
	t.Helper()
	launch := map[string]string{"DAYTONA_API_KEY": testKey, "DAYTONA_API_URL": f.APIURL}
	c, err := daytona.CredentialsFrom(func(k string) string { return launch[k] })
	if err != nil {
		t.Fatal(err)
	}
	return daytona.Options{Credentials: c, Image: "debian:12", Owner: "tester"}
}

func open(t *testing.T, o daytona.Options) *remote.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	env, err := daytona.New(ctx, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return env
}

func run(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Run(%q): %v", shell, err)
	}
	return res
}

func TestEnv_Conformance(t *testing.T) {
	f := newFake(t)
	envtest.Run(t, func(t *testing.T) envs.Environment { return open(t, options(t, f)) })
}
