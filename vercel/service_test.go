package vercel_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/vercel/verceltest"
)

// TestService_CredentialsNeverReachTheSandbox opens the backend as runbox
// does, through the core's provider table: the token comes from the
// launch environment, and neither it nor any other launch variable
// reaches a command in the sandbox, and it travels only in the
// Authorization header — never in a request's body, query or other
// header. The control run passes a value on purpose (the spec's Env, the
// documented way in) and sees it arrive, so the check can see a leak.
func TestService_CredentialsNeverReachTheSandbox(t *testing.T) {
	srv := fake(t)
	const canary = "sk-launch-canary-5d1e"
	launch := map[string]string{
		"VERCEL_TOKEN": token, "VERCEL_TEAM_ID": team, "VERCEL_PROJECT_ID": project, "VERCEL_API_URL": srv.URL(),
		"RUNBOX_OWNER": "svc-owner", "OPENAI_API_KEY": canary,
	}
	cfg := config.Default()
	cfg.Vercel = config.VercelConf{Runtime: "python3.13", VCPUs: 4, AgentBinary: agentBin, AgentDir: filepath.Join(t.TempDir(), "agent")}
	svc, err := service.New(service.Options{
		Config:  cfg,
		Getenv:  func(k string) string { return launch[k] },
		Environ: []string{"PATH=/usr/bin:/bin", "OPENAI_API_KEY=" + canary, "VERCEL_TOKEN=" + token},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(t.Context())
	open := func(spec envs.Spec) string {
		env, err := svc.Providers().Open(t.Context(), "vercel", spec)
		if err != nil {
			t.Fatalf("Open vercel: %v", err)
		}
		defer env.Close(t.Context())
		return run(t, env, envs.Command{Shell: "env; cat /proc/self/environ /proc/$PPID/environ | tr '\\0' '\\n'"}).Output
	}
	out := open(envs.Spec{})
	for _, secret := range []string{token, canary} {
		if strings.Contains(out, secret) {
			t.Errorf("a launch secret (%.8s…) is visible in the sandbox:\n%s", secret, out)
		}
	}
	if control := open(envs.Spec{Env: map[string]string{"PASSED_ON_PURPOSE": canary}}); !strings.Contains(control, canary) {
		t.Fatalf("control: a value passed in the spec's Env is not seen in the sandbox, so the check above proves nothing:\n%s", control)
	}
	for _, r := range srv.Requests() {
		body := r.Body
		if r.Header.Get("Content-Type") == "application/gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s %s: %v", r.Method, r.Path, err)
			}
			body, _ = io.ReadAll(zr)
		}
		var hdr strings.Builder
		r.Header.Write(&hdr)
		if bytes.Contains(body, []byte(token)) || strings.Contains(r.Query, token) || strings.Contains(hdr.String(), token) {
			t.Errorf("%s %s carries the token outside its Authorization header", r.Method, r.Path)
		}
		if !r.AuthOK {
			t.Errorf("%s %s was sent without the right Authorization header", r.Method, r.Path)
		}
	}
	created := requestsTo(srv, "/v2/sandboxes")
	if len(created) == 0 || !bytes.Contains(created[0].Body, []byte(`"runtime":"python3.13"`)) || !bytes.Contains(created[0].Body, []byte(`"vcpus":4`)) {
		t.Errorf("%d create requests (first: %s); want the configured runtime and vCPUs", len(created), firstBody(created))
	}
}

func requestsTo(srv *verceltest.Server, path string) []verceltest.Request {
	var out []verceltest.Request
	for _, r := range srv.Requests() {
		if r.Method == "POST" && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func firstBody(rs []verceltest.Request) string {
	if len(rs) == 0 {
		return "none"
	}
	return string(rs[0].Body)
}
