package bench

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/service"
)

// The job measurements kill jobs from workers and the ssh one waits for
// its ControlMaster in a goroutine: each must be joined before Run
// returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newService is a Service with the default configuration, its local
// commands unconfined, reading no variable but those in env; it is closed
// at the test's end.
func newService(t *testing.T, env map[string]string) *service.Service {
	t.Helper()
	cfg := config.Default()
	cfg.Sandbox.Profile = "off"
	s, err := service.New(service.Options{Config: cfg, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}
