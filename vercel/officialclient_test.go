package vercel_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// jsClientVersion is the @vercel/sandbox release the fake is checked
// against (scripts/vercel/install-js-client.sh installs it).
const jsClientVersion = "3.5.0"

// jsClientDir is where the install script puts the package.
func jsClientDir() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "runbox", "vercel-sandbox-js-"+jsClientVersion)
}

// TestFake_OfficialClient drives the fake with Vercel's own client under
// node: create, a command's NDJSON stream with its exit code and both
// streams, a gzipped-tar upload read back byte for byte, a missing file,
// mkdir, a detached command's log stream and kill, get by name, stop, and
// a refused token. It keeps the fake honest: what the official client
// accepts, runbox's client was written against.
func TestFake_OfficialClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the node client")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		integration.Skip(t, "node is not installed; the official client cannot run: %v", err)
	}
	dir := jsClientDir()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@vercel", "sandbox", "package.json")); err != nil {
		integration.Skip(t, "@vercel/sandbox %s is not installed in %s (run scripts/vercel/install-js-client.sh)", jsClientVersion, dir)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "client.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	srv := fake(t)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "JS_DIR=" + dir, "FAKE_URL=" + srv.URL(),
		"VERCEL_TOKEN=" + token, "VERCEL_TEAM_ID=" + team, "VERCEL_PROJECT_ID=" + project}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the official client failed against the fake: %v\n%s", err, stderr.String())
	}
	var got struct {
		Name, Status, Stdout, Stderr, GotName, Stopped, BadToken string
		ExitCode, MadeDir, KilledExit                            int
		ReadBack                                                 []int
		Missing                                                  any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"created by name, running", got.Name == "js-client" && got.Status == "running"},
		{"exit code and streams", got.ExitCode == 3 && got.Stdout == "out\n" && got.Stderr == "err\n"},
		{"file read back byte for byte", len(got.ReadBack) == 4 && got.ReadBack[0] == 0x61 && got.ReadBack[1] == 0 && got.ReadBack[2] == 0xff && got.ReadBack[3] == 0x0a},
		{"missing file is null", got.Missing == nil},
		{"mkdir", got.MadeDir == 0},
		{"detached command killed by SIGTERM", got.KilledExit == 143},
		{"found by name", got.GotName == "js-client"},
		{"stopped", got.Stopped == "stopped"},
		{"refused token", strings.Contains(got.BadToken, "403")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: client saw %+v", c.what, got)
		}
	}
	for _, r := range srv.Requests() {
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "vercel/sandbox/"+jsClientVersion) {
			t.Errorf("%s %s came with User-Agent %q; want the official client's", r.Method, r.Path, ua)
			break
		}
	}
}
