package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// tsSDK is the version of the official TypeScript MCP SDK the end-to-end
// test drives runbox with.
const tsSDK = "1.32.2"

// tsClientDir returns a directory holding the TypeScript SDK (installed
// once per version into the user's cache with npm) and the client script.
func tsClientDir(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		integration.Skip(t, "%s", "node is not installed: the TypeScript client test needs node and npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		integration.Skip(t, "%s", "npm is not installed: the TypeScript client test needs node and npm")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "runbox-tests", "mcp-ts-sdk-"+tsSDK)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"runbox-mcp-e2e","private":true,"type":"module"}`+"\n"), 0o644)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@"+tsSDK)
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			integration.Skip(t, "%s", "npm install @modelcontextprotocol/sdk@"+tsSDK+" failed (no registry?): "+err.Error()+"\n"+string(out))
		}
	}
	script, err := os.ReadFile(filepath.Join("mcp", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// Run from the install directory, where node resolves the SDK.
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, dir
}

// TestServe_TypeScriptClient drives `runbox serve` over stdio from the
// official TypeScript SDK, as an MCP client in another language would:
// it lists the tools, runs commands in one session (state carries over),
// starts a background job and receives its completion notification, and
// gets a hardline command refused.
func TestServe_TypeScriptClient(t *testing.T) {
	node, dir := tsClientDir(t)
	home := user{uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}.home(t)
	state := filepath.Join(home, "state")
	t.Cleanup(func() { stopDaemon(state) })

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), runboxBin)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "RUNBOX_STATE_DIR=" + state, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Tools      []string       `json:"tools"`
		Foreground map[string]any `json:"foreground"`
		FgText     string         `json:"foreground_text"`
		Pwd        string         `json:"pwd"`
		Job        string         `json:"job"`
		PID        int            `json:"pid"`
		Completion []struct {
			Level string `json:"level"`
			Data  struct {
				Message string `json:"message"`
				Event   struct {
					Exit struct {
						Code int `json:"exit_code"`
					} `json:"exit"`
				} `json:"event"`
			} `json:"data"`
		} `json:"completions"`
		Refused struct {
			IsError    bool           `json:"isError"`
			Structured map[string]any `json:"structured"`
		} `json:"refused"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	if strings.Join(got.Tools, ",") != "check_command,execute_code,process,tasks,terminal,undo" {
		t.Errorf("tools = %v", got.Tools)
	}
	if got.Foreground["output"] != "hello-from-node\n" || got.Foreground["exit_code"] != 0.0 || !strings.Contains(got.FgText, "[exit 0]") {
		t.Errorf("foreground = %v, %q", got.Foreground, got.FgText)
	}
	if strings.TrimSpace(got.Pwd) != "/tmp" {
		t.Errorf("pwd after cd /tmp in an earlier call = %q; want /tmp", got.Pwd)
	}
	if got.Job == "" || got.PID <= 0 {
		t.Errorf("background start: job %q pid %d", got.Job, got.PID)
	}
	if len(got.Completion) != 1 {
		t.Fatalf("completion notices = %d; want 1", len(got.Completion))
	}
	c := got.Completion[0]
	if want := "[background job " + got.Job + " completed: exit 7]"; !strings.HasPrefix(c.Data.Message, want) || !strings.Contains(c.Data.Message, "bg-output") || c.Data.Event.Exit.Code != 7 {
		t.Errorf("completion notice = %+v; want %q with the output", c, want)
	}
	if !got.Refused.IsError || got.Refused.Structured["hardline"] != true {
		t.Errorf("hardline command: %+v; want a hardline refusal", got.Refused)
	}
}
