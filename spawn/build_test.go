package spawn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// envMap turns a built Env into a map, failing on a malformed or repeated
// entry.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("Env entry %q has no '='", kv)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("Env has %s twice", k)
		}
		m[k] = v
	}
	return m
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const sysPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// TestBuild_Scenario holds one row per rule of the package doc. A failing
// row means a child gets a variable it must not (or loses one it must keep).
func TestBuild_Scenario(t *testing.T) {
	launchEnv := writeFile(t, "launch.env", `# launch profile
OPENAI_API_KEY=sk-launch
export LAUNCH_ONLY="from launch" # comment
TZ='UTC'
`)
	const home = "/srv/runbox/profiles/b"
	otherProfile := Profile{Home: home, EnvFile: "/srv/runbox/profiles/b/.env"}
	launchProfile := Profile{Home: "/srv/runbox/profiles/a", EnvFile: launchEnv}

	tests := []struct {
		name    string
		req     Request
		want    map[string]string // these names have these values
		absent  []string          // these names are not in Env
		dropped []Drop            // Dropped contains these
		forced  []string          // Forced equals this
		warn    string            // some warning contains this
	}{
		{
			// What runbox sets in its own environment today must not reach
			// a command: the job daemon's state dir (the way to every job's
			// files and socket), the CLI's owner name, configuration and
			// backend selection. An overlay key is runbox (or the user)
			// setting one on purpose, and RUNBOX_HOME is pinned by rule 3.
			name: "runbox's own variables are never inherited",
			req: Request{
				Base: []string{"RUNBOX_STATE_DIR=/home/u/.local/state/runbox", "RUNBOX_OWNER=mcp-a",
					"RUNBOX_CONFIG=/etc/runbox.toml", "RUNBOX_BACKEND=docker", "RUNBOX_SANDBOX=strict",
					"RUNBOX_INTEGRATION=require", "RUNBOX_TIMEOUT=30s", "RUNBOX_HOME=/old", "runbox_state_dir=/x",
					"RUNBOX_SEALED_FD=3", "RUNBOXED=keep"},
				Overlay: map[string]string{"RUNBOX_KERNEL_TOOLS": "shell,read"},
				Policy:  Policy{Passthrough: []string{"RUNBOX_STATE_DIR", "RUNBOX_*"}},
				Served:  Profile{Home: home},
			},
			want: map[string]string{"RUNBOX_KERNEL_TOOLS": "shell,read", "RUNBOX_HOME": home, "RUNBOXED": "keep"},
			absent: []string{"RUNBOX_STATE_DIR", "RUNBOX_OWNER", "RUNBOX_CONFIG", "RUNBOX_BACKEND", "RUNBOX_SANDBOX",
				"RUNBOX_INTEGRATION", "RUNBOX_TIMEOUT", "runbox_state_dir", "RUNBOX_SEALED_FD"},
			dropped: []Drop{{"RUNBOX_STATE_DIR", ReasonRunbox}, {"RUNBOX_OWNER", ReasonRunbox}, {"runbox_state_dir", ReasonRunbox}},
		},
		{
			name: "always-strip beats passthrough",
			req: Request{
				Base: []string{"RUNBOX_TOKEN=t0ken-value", "RUNBOX_SERVER_TOKEN=x", "RUNBOX_API_KEY=y",
					"MODAL_TOKEN_ID=id", "MODAL_TOKEN_SECRET=s", "DAYTONA_API_KEY=d", "E2B_API_KEY=e",
					"SUDO_PASSWORD=hunter2", "SUDO_ASKPASS=/usr/bin/askpass", "SLACK_BOT_TOKEN=xoxb",
					"TELEGRAM_BOT_TOKEN=tg", "DISCORD_TOKEN=dc", "runbox_token=lower", "KEEP=1"},
				Policy: Policy{Passthrough: []string{"*", "RUNBOX_TOKEN", "SUDO_PASSWORD", "SLACK_BOT_TOKEN"}},
			},
			want: map[string]string{"KEEP": "1"},
			absent: []string{"RUNBOX_TOKEN", "RUNBOX_SERVER_TOKEN", "RUNBOX_API_KEY", "MODAL_TOKEN_ID",
				"MODAL_TOKEN_SECRET", "DAYTONA_API_KEY", "E2B_API_KEY", "SUDO_PASSWORD", "SUDO_ASKPASS",
				"SLACK_BOT_TOKEN", "TELEGRAM_BOT_TOKEN", "DISCORD_TOKEN", "runbox_token"},
			dropped: []Drop{{"RUNBOX_TOKEN", ReasonAlwaysStrip}, {"SUDO_ASKPASS", ReasonAlwaysStrip}, {"runbox_token", ReasonAlwaysStrip}},
		},
		{
			name: "always-strip applies to the overlay",
			req: Request{
				Overlay: map[string]string{"RUNBOX_SERVER_TOKEN": "x", "DISCORD_BOT_TOKEN": "y"},
				Policy:  Policy{Passthrough: []string{"RUNBOX_SERVER_TOKEN"}},
			},
			absent:  []string{"RUNBOX_SERVER_TOKEN", "DISCORD_BOT_TOKEN"},
			dropped: []Drop{{"DISCORD_BOT_TOKEN", ReasonAlwaysStrip}, {"RUNBOX_SERVER_TOKEN", ReasonAlwaysStrip}},
		},
		{
			name: "blocklist and patterns",
			req: Request{Base: []string{"OPENAI_API_KEY=sk", "GITHUB_TOKEN=gh", "AWS_SECRET_ACCESS_KEY=a",
				"MY_SERVICE_TOKEN=m", "DB_PASSWORD=p", "APP_SECRET=s", "openai_api_key=lower", "TOKENIZERS_PARALLELISM=true"}},
			want: map[string]string{"TOKENIZERS_PARALLELISM": "true"},
			absent: []string{"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_SERVICE_TOKEN",
				"DB_PASSWORD", "APP_SECRET", "openai_api_key"},
			dropped: []Drop{{"GITHUB_TOKEN", ReasonBlocked}, {"MY_SERVICE_TOKEN", ReasonBlocked}, {"openai_api_key", ReasonBlocked}},
		},
		{
			name: "database passwords and bare secret names",
			req: Request{Base: []string{"PGPASSWORD=p", "MYSQL_PWD=m", "DB_PASS=d", "SECRET_KEY=s", "PRIVATE_KEY=k", "API_KEY=a",
				"CI_JOB_JWT=j", "DOCKER_AUTH_CONFIG={}", "SMTP_PASSWD=x", "GPG_PASSPHRASE=g", "OLDPWD=/tmp", "PWD=/", "PASSENGER_APP_ENV=dev"}},
			want: map[string]string{"OLDPWD": "/tmp", "PWD": "/", "PASSENGER_APP_ENV": "dev"},
			absent: []string{"PGPASSWORD", "MYSQL_PWD", "DB_PASS", "SECRET_KEY", "PRIVATE_KEY", "API_KEY", "CI_JOB_JWT", "DOCKER_AUTH_CONFIG",
				"SMTP_PASSWD", "GPG_PASSPHRASE"},
		},
		{
			name: "passthrough is exact",
			req: Request{
				Base:   []string{"GITHUB_TOKEN=gh", "github_token=lower", "HF_TOKEN=hf"},
				Policy: Policy{Passthrough: []string{"GITHUB_TOKEN", "HF_*"}},
			},
			want:    map[string]string{"GITHUB_TOKEN": "gh", "HF_TOKEN": "hf"},
			absent:  []string{"github_token"},
			dropped: []Drop{{"github_token", ReasonBlocked}},
		},
		{
			name: "configured lists extend the defaults",
			req: Request{
				Base:   []string{"INTERNAL_URL=u", "CORP_CRED=c", "OPENAI_API_KEY=sk", "FOO=1"},
				Policy: Policy{ExtraBlock: []string{"INTERNAL_*"}, ExtraStrip: []string{"corp_*"}, Passthrough: []string{"CORP_CRED"}},
			},
			want:    map[string]string{"FOO": "1"},
			absent:  []string{"INTERNAL_URL", "CORP_CRED", "OPENAI_API_KEY"},
			dropped: []Drop{{"CORP_CRED", ReasonAlwaysStrip}, {"INTERNAL_URL", ReasonBlocked}},
		},
		{
			name: "a replaced Block list replaces the defaults",
			req: Request{
				Base:   []string{"OPENAI_API_KEY=sk", "FOO=1", "RUNBOX_TOKEN=t"},
				Policy: Policy{Block: []string{"FOO"}},
			},
			want:   map[string]string{"OPENAI_API_KEY": "sk"},
			absent: []string{"FOO", "RUNBOX_TOKEN"},
		},
		{
			name: "force hands a blocked name over",
			req: Request{
				Base:    []string{"OPENAI_API_KEY=sk-base"},
				Overlay: map[string]string{"RUNBOX_FORCE_OPENAI_API_KEY": "sk-forced", "RUNBOX_FORCE_PLAIN": "p"},
			},
			want:   map[string]string{"OPENAI_API_KEY": "sk-forced", "PLAIN": "p"},
			absent: []string{"RUNBOX_FORCE_OPENAI_API_KEY", "RUNBOX_FORCE_PLAIN"},
			forced: []string{"OPENAI_API_KEY", "PLAIN"},
		},
		{
			name: "force beats a plain overlay key",
			req: Request{Overlay: map[string]string{"A_TOKEN": "plain", "RUNBOX_FORCE_A_TOKEN": "forced",
				"ZED": "plain", "RUNBOX_FORCE_ZED": "forced"}},
			want:   map[string]string{"A_TOKEN": "forced", "ZED": "forced"},
			forced: []string{"A_TOKEN", "ZED"},
		},
		{
			name: "force never hands over an always-strip name",
			req: Request{Overlay: map[string]string{"RUNBOX_FORCE_RUNBOX_TOKEN": "t", "RUNBOX_FORCE_SUDO_PASSWORD": "p",
				"RUNBOX_FORCE_RUNBOX_FORCE_X": "f", "RUNBOX_FORCE_": "empty"}},
			absent: []string{"RUNBOX_TOKEN", "SUDO_PASSWORD", "RUNBOX_FORCE_X", "RUNBOX_FORCE_", ""},
			dropped: []Drop{{"RUNBOX_FORCE_", ReasonMalformed}, {"RUNBOX_FORCE_X", ReasonForceRefused},
				{"RUNBOX_TOKEN", ReasonForceRefused}, {"SUDO_PASSWORD", ReasonForceRefused}},
			warn: "RUNBOX_FORCE_RUNBOX_TOKEN refused",
		},
		{
			name: "force keys from base or in other case are not honoured",
			req: Request{
				Base:    []string{"RUNBOX_FORCE_OPENAI_API_KEY=sk"},
				Overlay: map[string]string{"runbox_force_github_token": "gh"},
			},
			absent:  []string{"RUNBOX_FORCE_OPENAI_API_KEY", "OPENAI_API_KEY", "runbox_force_github_token", "GITHUB_TOKEN"},
			dropped: []Drop{{"RUNBOX_FORCE_OPENAI_API_KEY", ReasonForceKey}, {"runbox_force_github_token", ReasonForceKey}},
			warn:    "runbox_force_github_token ignored",
		},
		{
			name: "launch-profile residue is dropped and HOME pinned",
			req: Request{
				Base: []string{"LAUNCH_ONLY=x", "TZ=UTC", "OPENAI_API_KEY=sk-launch", "HOME=/srv/runbox/profiles/a",
					"RUNBOX_HOME=/srv/runbox/profiles/a", "OTHER=1"},
				Served: otherProfile,
				Launch: launchProfile,
				Policy: Policy{Passthrough: []string{"OPENAI_API_KEY"}},
			},
			want:    map[string]string{"HOME": home, "RUNBOX_HOME": home, "OTHER": "1"},
			absent:  []string{"LAUNCH_ONLY", "TZ", "OPENAI_API_KEY"},
			dropped: []Drop{{"LAUNCH_ONLY", ReasonLaunchProfile}, {"OPENAI_API_KEY", ReasonLaunchProfile}, {"TZ", ReasonLaunchProfile}},
		},
		{
			name: "residue may be set again by the overlay",
			req: Request{
				Base:    []string{"TZ=UTC"},
				Overlay: map[string]string{"TZ": "Europe/Paris", "HOME": "/tmp/h"},
				Served:  otherProfile,
				Launch:  launchProfile,
			},
			want: map[string]string{"TZ": "Europe/Paris", "HOME": "/tmp/h", "RUNBOX_HOME": home},
		},
		{
			name: "serving the launch profile keeps its variables",
			req: Request{
				Base:   []string{"LAUNCH_ONLY=x", "TZ=UTC", "HOME=/root"},
				Served: launchProfile,
				Launch: launchProfile,
			},
			want: map[string]string{"LAUNCH_ONLY": "x", "TZ": "UTC", "HOME": "/srv/runbox/profiles/a"},
		},
		{
			name: "an unknown served profile keeps HOME",
			req: Request{
				Base:   []string{"LAUNCH_ONLY=x", "HOME=/root"},
				Launch: launchProfile,
			},
			want: map[string]string{"LAUNCH_ONLY": "x", "HOME": "/root"},
		},
		{
			name: "a missing launch env file drops nothing and says so",
			req: Request{
				Base:   []string{"LAUNCH_ONLY=x"},
				Served: otherProfile,
				Launch: Profile{EnvFile: filepath.Join(t.TempDir(), "none.env")},
			},
			want: map[string]string{"LAUNCH_ONLY": "x", "HOME": home},
			warn: "does not exist",
		},
		{
			name: "PATH is cleaned, de-duplicated and completed",
			req:  Request{Base: []string{"PATH=/opt/x/bin:/usr/bin:/opt/x/bin/:/usr/bin::.:bin:/bin/../usr/bin"}},
			want: map[string]string{"PATH": "/opt/x/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"},
			warn: "dropped 3 empty or relative",
		},
		{
			name: "no PATH gets the system directories",
			req:  Request{},
			want: map[string]string{"PATH": sysPath},
		},
		{
			name: "virtualenv markers and bin dirs are dropped",
			req: Request{Base: []string{
				"VIRTUAL_ENV=/home/u/p/.venv", "VIRTUAL_ENV_PROMPT=(p)", "PYTHONHOME=/opt/py",
				"CONDA_PREFIX=/opt/conda/envs/x", "CONDA_PREFIX_1=/opt/conda", "CONDA_DEFAULT_ENV=x", "CONDA_SHLVL=2",
				"PATH=/home/u/p/.venv/bin:/opt/conda/envs/x/bin:/opt/conda/bin:/opt/conda/condabin:/usr/bin",
			}},
			want: map[string]string{"PATH": "/opt/conda/condabin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"},
			absent: []string{"VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONHOME", "CONDA_PREFIX", "CONDA_PREFIX_1",
				"CONDA_DEFAULT_ENV", "CONDA_SHLVL"},
			dropped: []Drop{{"CONDA_PREFIX", ReasonVirtualenv}, {"VIRTUAL_ENV", ReasonVirtualenv}},
		},
		{
			name: "a virtualenv the overlay activates keeps its bin dir",
			req: Request{
				Base:    []string{"VIRTUAL_ENV=/v", "PATH=/v/bin:/usr/bin"},
				Overlay: map[string]string{"VIRTUAL_ENV": "/v"},
			},
			want: map[string]string{"VIRTUAL_ENV": "/v", "PATH": "/v/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"},
		},
		{
			name: "an overlay PATH is kept as asked, then completed",
			req: Request{
				Base:    []string{"VIRTUAL_ENV=/v"},
				Overlay: map[string]string{"PATH": "/v/bin:/bin:/v/bin"},
			},
			want: map[string]string{"PATH": "/v/bin:/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin"},
		},
		{
			name: "pagers and editors are neutralised",
			req:  Request{Base: []string{"PAGER=less", "GIT_PAGER=delta", "EDITOR=vim", "VISUAL=emacs", "MANPAGER=most"}},
			want: map[string]string{"PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "SYSTEMD_PAGER": "cat",
				"EDITOR": "true", "VISUAL": "true", "GIT_EDITOR": "true", "GIT_TERMINAL_PROMPT": "0",
				"DEBIAN_FRONTEND": "noninteractive"},
		},
		{
			name: "the overlay wins",
			req: Request{
				Base:    []string{"FOO=base", "PAGER=less", "LANG=C"},
				Overlay: map[string]string{"FOO": "overlay", "PAGER": "more", "GIT_TERMINAL_PROMPT": "1"},
			},
			want: map[string]string{"FOO": "overlay", "PAGER": "more", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "1", "LANG": "C"},
		},
		{
			name:    "a blocked overlay name needs passthrough or force",
			req:     Request{Overlay: map[string]string{"GH_TOKEN": "gh"}},
			absent:  []string{"GH_TOKEN"},
			dropped: []Drop{{"GH_TOKEN", ReasonBlocked}},
		},
		{
			name:    "malformed base entries are dropped, duplicates resolve to the last",
			req:     Request{Base: []string{"NOEQUALS", "=C:=C:\\", "NUL=a\x00b", "DUP=1", "DUP=2"}},
			want:    map[string]string{"DUP": "2"},
			absent:  []string{"NOEQUALS", "", "NUL"},
			dropped: []Drop{{"", ReasonMalformed}, {"NOEQUALS", ReasonMalformed}, {"NUL", ReasonMalformed}},
		},
		{
			name: "an always-stripped PAGER or HOME is not set by default",
			req: Request{
				Served: Profile{Home: "/h"},
				Policy: Policy{ExtraStrip: []string{"PAGER", "HOME"}},
			},
			want:   map[string]string{"RUNBOX_HOME": "/h"},
			absent: []string{"PAGER", "HOME"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Build(tt.req)
			if err != nil {
				t.Fatalf("Build = %v; want no error", err)
			}
			if !slices.IsSortedFunc(res.Env, func(a, b string) int {
				ka, _, _ := strings.Cut(a, "=")
				kb, _, _ := strings.Cut(b, "=")
				return strings.Compare(ka, kb)
			}) {
				t.Errorf("Env not sorted by name: %q", res.Env)
			}
			env := envMap(t, res.Env)
			for k, v := range tt.want {
				if got, ok := env[k]; !ok || got != v {
					t.Errorf("Env[%s] = %q (present %v); want %q", k, got, ok, v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := env[k]; ok {
					t.Errorf("Env has %s; want it dropped", k)
				}
			}
			for _, d := range tt.dropped {
				if !slices.Contains(res.Dropped, d) {
					t.Errorf("Dropped = %v; want it to contain %v", res.Dropped, d)
				}
			}
			for _, d := range res.Dropped {
				if _, ok := env[d.Name]; ok {
					t.Errorf("Dropped has %v but Env has %s", d, d.Name)
				}
			}
			if !slices.Equal(res.Forced, tt.forced) {
				t.Errorf("Forced = %q; want %q", res.Forced, tt.forced)
			}
			if tt.warn != "" && !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, tt.warn) }) {
				t.Errorf("Warnings = %q; want one containing %q", res.Warnings, tt.warn)
			}
		})
	}
}

// TestBuild_Errors: a bad request fails with a "spawn: " error instead of
// building something the caller did not mean.
func TestBuild_Errors(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"overlay name with '='", Request{Overlay: map[string]string{"A=B": "x"}}, "invalid overlay name"},
		{"empty overlay name", Request{Overlay: map[string]string{"": "x"}}, "invalid overlay name"},
		{"overlay value with NUL", Request{Overlay: map[string]string{"A": "x\x00"}}, "contains NUL"},
		{"empty pattern", Request{Policy: Policy{Passthrough: []string{""}}}, "invalid pattern"},
		{"pattern with '='", Request{Policy: Policy{ExtraBlock: []string{"A=B"}}}, "invalid pattern"},
		{"relative home", Request{Served: Profile{Home: "home/u"}}, "not absolute"},
		{"unreadable launch env file", Request{
			Served: Profile{Home: "/h"},
			Launch: Profile{EnvFile: t.TempDir()}, // a directory: open works, read fails
		}, "launch env file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Build(tt.req)
			if err == nil {
				t.Fatalf("Build = %v, nil; want an error containing %q", res, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "spawn: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error = %q; want \"spawn: ...%s...\"", err, tt.want)
			}
		})
	}
}

// TestBuild_ChildNeverSeesSecret runs a real child with the built env. If
// it fails, a secret inherited by runbox reaches the commands it runs.
func TestBuild_ChildNeverSeesSecret(t *testing.T) {
	envPath, err := exec.LookPath("/usr/bin/env")
	if err != nil {
		integration.Skip(t, "no /usr/bin/env: %v", err)
	}
	const (
		providerKey = "sk-provider-0123456789"
		serverToken = "rbx-server-0123456789"
		sudoPass    = "sudo-pass-0123456789"
	)
	res, err := Build(Request{
		Base: []string{"OPENAI_API_KEY=" + providerKey, "RUNBOX_SERVER_TOKEN=" + serverToken,
			"SUDO_PASSWORD=" + sudoPass, "PATH=/usr/bin:/bin", "MARKER=visible"},
		Overlay: map[string]string{"RUNBOX_FORCE_RUNBOX_SERVER_TOKEN": serverToken},
		Policy:  Policy{Passthrough: []string{"RUNBOX_SERVER_TOKEN", "SUDO_PASSWORD"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), envPath)
	cmd.Env = res.Env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("env: %v", err)
	}
	if !bytes.Contains(out, []byte("MARKER=visible\n")) {
		t.Fatalf("child env lacks MARKER; got:\n%s", out)
	}
	for _, secret := range []string{providerKey, serverToken, sudoPass, "RUNBOX_FORCE_"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("child env shows %q; got:\n%s", secret, out)
		}
	}
}

// TestResult_PrintHidesSecrets: logging a Result with %v, %+v, %#v or JSON
// must not leak a dropped value.
func TestResult_PrintHidesSecrets(t *testing.T) {
	const secret = "sk-very-secret-value"
	res, err := Build(Request{Base: []string{"OPENAI_API_KEY=" + secret}})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprintf("%v", res), fmt.Sprintf("%+v", res), fmt.Sprintf("%#v", res),
		fmt.Sprintf("%+v", *res), fmt.Sprintf("%#v", *res), string(js)} {
		if strings.Contains(s, secret) {
			t.Errorf("printed Result shows the secret: %s", s)
		}
	}
	if !strings.Contains(string(js), `{"name":"OPENAI_API_KEY","reason":"blocked"}`) {
		t.Errorf("json = %s; want the drop with its reason name", js)
	}
}

// TestBuild_DoesNotReadProcessEnv: a variable of the test process never
// reaches Env unless the caller passes it.
func TestBuild_DoesNotReadProcessEnv(t *testing.T) {
	t.Setenv("SPAWN_TEST_PROCESS_ONLY", "1")
	res, err := Build(Request{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(res.Env, func(kv string) bool { return strings.HasPrefix(kv, "SPAWN_TEST_PROCESS_ONLY=") }) {
		t.Errorf("Env = %q; want no variable taken from os.Environ", res.Env)
	}
}

// TestDefaultPolicy_Fresh: changing a returned list must not change the next
// build's defaults (no package-level mutable state).
func TestDefaultPolicy_Fresh(t *testing.T) {
	p := DefaultPolicy()
	p.Block[slices.Index(p.Block, "OPENAI_API_KEY")] = "NOTHING"
	AlwaysStrip()[0] = "NOTHING"
	SystemPath()[0] = "/nowhere"
	res, err := Build(Request{Base: []string{"OPENAI_API_KEY=sk", "RUNBOX_TOKEN=t"}})
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(t, res.Env)
	if _, ok := env["OPENAI_API_KEY"]; ok {
		t.Error("OPENAI_API_KEY reached Env after a caller edited its copy of the defaults")
	}
	if _, ok := env["RUNBOX_TOKEN"]; ok {
		t.Error("RUNBOX_TOKEN reached Env after a caller edited its copy of the always-strip list")
	}
	if env["PATH"] != sysPath {
		t.Errorf("PATH = %q; want %q", env["PATH"], sysPath)
	}
	if !slices.Equal(DefaultPolicy().Block, DefaultBlock()) {
		t.Error("DefaultPolicy().Block differs from DefaultBlock()")
	}
}

func TestReason_String(t *testing.T) {
	for r := ReasonAlwaysStrip; r <= ReasonMalformed; r++ {
		if s := r.String(); s == "" || strings.HasPrefix(s, "Reason(") {
			t.Errorf("Reason(%d).String() = %q; want a name", r, s)
		}
	}
	if s := Reason(200).String(); s != "Reason(200)" {
		t.Errorf("Reason(200).String() = %q; want Reason(200)", s)
	}
}
