package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoad_Precedence: the file sets values, the environment overrides it.
func TestLoad_Precedence(t *testing.T) {
	p := write(t, "backend: docker\ntimeout: 10s\nlimits:\n  memory: 256M\n  pids: 64\napproval:\n  mode: off\n  allow: [\"make *\"]\n")
	cfg, err := config.Load(p, envOf(map[string]string{"RUNBOX_TIMEOUT": "3s"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backend != "docker" || time.Duration(cfg.Timeout) != 3*time.Second || cfg.Limits.Memory != 256<<20 || cfg.Limits.Pids != 64 {
		t.Errorf("Load = %+v", cfg)
	}
	if cfg.Approval.Mode != "off" || len(cfg.Approval.Allow) != 1 || cfg.Path != p {
		t.Errorf("approval/path = %+v %q", cfg.Approval, cfg.Path)
	}
	if time.Duration(cfg.Grace) != 2*time.Second || !cfg.Contain {
		t.Errorf("defaults lost: grace=%v contain=%v", cfg.Grace, cfg.Contain)
	}
}

// TestLoad_Errors: a user's mistake is reported with the key and the file.
func TestLoad_Errors(t *testing.T) {
	cases := []struct {
		body string
		want []string
	}{
		{"bakend: local\n", []string{`unknown key "bakend"`, "line 1", "backend"}},
		{"limits:\n  memroy: 1G\n", []string{`unknown key "limits.memroy"`, "line 2"}},
		{"timeout: soon\n", []string{`key "timeout"`, "duration"}},
		{"output_limit: lots\n", []string{`key "output_limit"`, "integer"}},
		{"limits:\n  memory: huge\n", []string{`key "limits.memory"`, "size"}},
		{"approval: [1]\n", []string{"approval must be a mapping"}},
		{"approval:\n  mode: yolo\n", []string{"approval.mode"}},
		{"contain: maybe\n", []string{`key "contain"`, "true or false"}},
		{"jobs:\n  retention: forever\n", []string{`key "jobs.retention"`, "duration"}},
		{"jobs:\n  max_finished: -1\n", []string{"jobs.max_finished"}},
		{"docker:\n  pool: -1\n", []string{"docker.pool"}},
	}
	for _, c := range cases {
		p := write(t, c.body)
		_, err := config.Load(p, envOf(nil))
		if err == nil {
			t.Errorf("Load(%q) = nil error", c.body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Load(%q) error %q does not contain %q", c.body, err, w)
			}
		}
		if !strings.Contains(err.Error(), p) && !strings.Contains(c.body, "yolo") {
			t.Errorf("error %q does not name the file", err)
		}
	}
}

func TestLoad_Files(t *testing.T) {
	dir := t.TempDir()
	// A missing default file is fine; a missing explicit one is not.
	if _, err := config.Load("", envOf(map[string]string{"XDG_CONFIG_HOME": dir})); err != nil {
		t.Errorf("missing default file: %v", err)
	}
	if _, err := config.Load(filepath.Join(dir, "nope.yaml"), envOf(nil)); err == nil {
		t.Errorf("missing explicit file: no error")
	}
	os.MkdirAll(filepath.Join(dir, "runbox"), 0o755)
	os.WriteFile(filepath.Join(dir, "runbox", "config.yaml"), []byte("shell: sh\n"), 0o600)
	cfg, err := config.Load("", envOf(map[string]string{"XDG_CONFIG_HOME": dir}))
	if err != nil || cfg.Shell != "sh" {
		t.Errorf("XDG file: %+v, %v", cfg, err)
	}
	if _, err := config.Load("", envOf(map[string]string{"RUNBOX_CONFIG": write(t, "")})); err != nil {
		t.Errorf("empty file: %v", err)
	}
	if _, err := config.Load("", envOf(map[string]string{"RUNBOX_OUTPUT_LIMIT": "x"})); err == nil || !strings.Contains(err.Error(), "RUNBOX_OUTPUT_LIMIT") {
		t.Errorf("bad env var error = %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "64K": 64 << 10, "256M": 256 << 20, "2G": 2 << 30, "1.5G": 3 << 29, "64Mi": 64 << 20, "10MB": 10 << 20} {
		if got, err := config.ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "M", "-1", "ten"} {
		if _, err := config.ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = nil error", bad)
		}
	}
}

// TestLoad_ModalSection: the modal section decodes with its types, the
// environment overrides app and image, and contradictions are refused.
func TestLoad_ModalSection(t *testing.T) {
	p := write(t, "modal:\n  app: a\n  image: im-123\n  cpu: 1.5\n  memory: 2G\n  timeout: 10m\n  idle_timeout: 90s\n  workdir: /w\n  cidr_allowlist: [10.0.0.0/8]\n  task: t\n  persistent: true\n")
	cfg, err := config.Load(p, envOf(map[string]string{"RUNBOX_MODAL_APP": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Modal
	if m.App != "b" || m.Image != "im-123" || m.CPU != 1.5 || m.Memory != 2<<30 || time.Duration(m.Timeout) != 10*time.Minute ||
		time.Duration(m.IdleTimeout) != 90*time.Second || m.Workdir != "/w" || len(m.CIDRAllowlist) != 1 || m.Task != "t" || !m.Persistent {
		t.Errorf("modal = %+v", m)
	}
	for _, body := range []string{
		"modal:\n  block_network: true\n  cidr_allowlist: [10.0.0.0/8]\n",
		"modal:\n  cpu: -1\n",
		"modal:\n  bogus: 1\n",
	} {
		if _, err := config.Load(write(t, body), envOf(nil)); err == nil {
			t.Errorf("%q: accepted", body)
		}
	}
}

// TestLoad_DockerPool: docker.pool comes from the file, and
// RUNBOX_DOCKER_POOL overrides it.
func TestLoad_DockerPool(t *testing.T) {
	p := write(t, "docker:\n  pool: 2\n")
	cfg, err := config.Load(p, envOf(nil))
	if err != nil || cfg.Docker.Pool != 2 {
		t.Fatalf("Load = pool %d, %v; want 2", cfg.Docker.Pool, err)
	}
	cfg, err = config.Load(p, envOf(map[string]string{"RUNBOX_DOCKER_POOL": "0"}))
	if err != nil || cfg.Docker.Pool != 0 {
		t.Fatalf("Load with RUNBOX_DOCKER_POOL=0 = pool %d, %v; want 0", cfg.Docker.Pool, err)
	}
}
