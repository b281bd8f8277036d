package daytona_test

import (
	"strings"
	"testing"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// TestService_DaytonaFromLaunchEnvironment opens the backend as runbox
// does, through the core's provider table: the credentials come from the
// launch environment (Getenv), the configuration's daytona section shapes
// the sandbox, and neither the key nor any other launch variable reaches
// the sandbox.
func TestService_DaytonaFromLaunchEnvironment(t *testing.T) {
	f := newFake(t)
	launch := map[string]string{
		"DAYTONA_API_KEY": testKey, "DAYTONA_API_URL": f.APIURL,
		"RUNBOX_OWNER": "svc-owner", "OPENAI_API_KEY": "sk-launch-secret",
	}
	cfg := config.Default()
	// The fake's sandboxes are on this machine: the agent goes to a
	// directory of the test's, through the configuration.
	cfg.Daytona = config.DaytonaConf{Image: "python:3.12", CPU: 2, Task: "svc", Persistent: true, AgentDir: t.TempDir()}
	svc, err := service.New(service.Options{
		Config:  cfg,
		Getenv:  func(k string) string { return launch[k] },
		Environ: []string{"PATH=/usr/bin:/bin", "OPENAI_API_KEY=sk-launch-secret", "DAYTONA_API_KEY=" + testKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(t.Context())
	env, err := svc.Providers().Open(t.Context(), "daytona", envs.Spec{})
	if err != nil {
		t.Fatalf("Open daytona: %v", err)
	}
	if fe, ok := env.(interface{ Fallback() string }); !ok || fe.Fallback() != "" {
		t.Errorf("the agent is not in use through the service (%T)", env)
	}
	res := run(t, env, "env")
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if strings.Contains(res.Output, testKey) || strings.Contains(res.Output, "sk-launch-secret") {
		t.Fatalf("a launch secret is visible in the sandbox:\n%s", res.Output)
	}
	boxes := f.Sandboxes()
	if len(boxes) != 1 {
		t.Fatalf("%d sandboxes; want 1", len(boxes))
	}
	b := boxes[0]
	if b.Dockerfile != "FROM python:3.12" || b.CPU != 2 || b.Labels[daytona.LabelOwner] != "svc-owner" || b.Labels[daytona.LabelTask] != "svc" {
		t.Errorf("sandbox = %+v; want the configured image, cpu, owner and task", b)
	}
	if b.State != "stopped" {
		t.Errorf("the persistent task's sandbox is %s after close; want stopped", b.State)
	}
	for _, r := range f.Requests() {
		if strings.Contains(r.Body, "sk-launch-secret") || strings.Contains(r.Body, testKey) {
			t.Errorf("%s %s carries a launch secret", r.Method, r.Path)
		}
	}
}
