package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/modal/modaltest"
)

// modalCLI starts the fake Modal and returns the environment and
// configuration a user of it would have: the token in the launch
// environment only, the agent built for the sandbox.
func modalCLI(t *testing.T) (*modaltest.Server, map[string]string) {
	t.Helper()
	const id, secret = "ak-cli", "as-cli-5e0d1c9a7b"
	srv, err := modaltest.Start(modaltest.Config{TokenID: id, TokenSecret: secret, Dir: t.TempDir(), NotReady: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	t.Setenv("MODAL_SERVER_URL", srv.URL())
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	dir := t.TempDir()
	agent := filepath.Join(dir, "runbox-agent")
	if err := testproc.BuildAgent(agent); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf("approval:\n  mode: off\nmodal:\n  cpu: 2\n  memory: 1G\n  agent_binary: %s\n  agent_dir: %s\n", agent, filepath.Join(dir, "agent"))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, map[string]string{
		"RUNBOX_CONFIG":      cfg,
		"RUNBOX_STATE_DIR":   filepath.Join(dir, "state"),
		"MODAL_TOKEN_ID":     id,
		"MODAL_TOKEN_SECRET": secret,
		"MODAL_SERVER_URL":   srv.URL(),
		"MODAL_CONFIG_PATH":  filepath.Join(dir, "none.toml"),
	}
}

// TestRunModal_TaskPersistsAcrossRuns: `runbox run --backend modal --task T`
// keeps the task's files from one run to the next through a snapshot, with
// the requested resources sent and the token never inside.
func TestRunModal_TaskPersistsAcrossRuns(t *testing.T) {
	srv, env := modalCLI(t)
	_, stderr, code := cli(t, "", env, "run", "--backend", "modal", "--image", "python:3.12", "--task", "t1", "--", "echo persisted > kept.txt")
	if code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	out, stderr, code := cli(t, "", env, "run", "--backend", "modal", "--task", "t1", "--", "cat kept.txt; env")
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(out, "persisted\n") {
		t.Fatalf("the file did not survive: %q", out)
	}
	if strings.Contains(out, env["MODAL_TOKEN_SECRET"]) || strings.Contains(out, "MODAL_TOKEN") {
		t.Fatalf("Modal credentials visible inside:\n%s", out)
	}
	if len(srv.Running()) != 0 {
		t.Fatalf("sandboxes left running: %v", srv.Running())
	}
	creates := srv.Requested("SandboxCreate")
	if len(creates) != 2 || !strings.Contains(creates[0], "milli_cpu:") || !strings.Contains(strings.ReplaceAll(creates[0], " ", ""), "memory_mb:1024") {
		t.Fatalf("SandboxCreate requests: %v", creates)
	}
	if imgs := srv.Requested("ImageGetOrCreate"); len(imgs) != 1 || !strings.Contains(imgs[0], "FROM python:3.12") {
		t.Fatalf("want the --image tag built once (the second run restores the snapshot): %v", imgs)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Body, env["MODAL_TOKEN_SECRET"]) {
			t.Fatalf("%s carried the token secret", r.Method)
		}
	}
}

// TestRunModal_NoCredentials: without a token anywhere, the error says
// where Modal's credentials are looked for.
func TestRunModal_NoCredentials(t *testing.T) {
	srv, env := modalCLI(t)
	delete(env, "MODAL_TOKEN_ID")
	delete(env, "MODAL_TOKEN_SECRET")
	t.Setenv("MODAL_TOKEN_ID", "")
	t.Setenv("MODAL_TOKEN_SECRET", "")
	_, stderr, code := cli(t, "", env, "run", "--backend", "modal", "--", "true")
	if code == 0 || !strings.Contains(stderr, "MODAL_TOKEN_ID") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent without credentials", n)
	}
}

// TestDoctor_ModalCredentials: doctor says whether Modal's credentials are
// found and accepted.
func TestDoctor_ModalCredentials(t *testing.T) {
	_, env := modalCLI(t)
	section := func(out string) string {
		_, after, _ := strings.Cut(out, "modal — ")
		line, _, _ := strings.Cut(strings.SplitN(after, "\n", 2)[1], "\n")
		return strings.TrimSpace(line)
	}
	out, stderr, _ := cli(t, "", env, "doctor")
	if got := section(out + stderr); got != "ready" {
		t.Fatalf("doctor with good credentials: %q\n%s%s", got, out, stderr)
	}
	env["MODAL_TOKEN_SECRET"] = "as-wrong"
	out, stderr, _ = cli(t, "", env, "doctor")
	got := section(out + stderr)
	if !strings.Contains(got, "not ready: modal: authentication failed") || !strings.Contains(got, "environment (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)") {
		t.Fatalf("doctor with a refused token: %q", got)
	}
	if strings.Contains(out+stderr, "as-wrong") {
		t.Fatal("doctor printed the secret")
	}
}
