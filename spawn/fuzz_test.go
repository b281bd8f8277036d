package spawn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzBuild checks the invariants doc.go promises on arbitrary input: no
// panic, no RUNBOX_FORCE_ key and no always-strip name in Env, one entry
// per name, a PATH without duplicates that holds the system directories,
// no dropped name in Env, and no name the launch env file defines coming
// from Base, and no runbox variable (RUNBOX_*) from Base. Inputs are
// newline-separated lists and an env file's text.
func FuzzBuild(f *testing.F) {
	f.Add("PATH=/a:/a:/usr/bin\nOPENAI_API_KEY=sk", "RUNBOX_FORCE_OPENAI_API_KEY=x", "", "")
	f.Add("RUNBOX_TOKEN=t\nVIRTUAL_ENV=/v\nPATH=/v/bin::.", "RUNBOX_FORCE_RUNBOX_TOKEN=t", "RUNBOX_TOKEN\n*", "PATH=/x")
	f.Add("runbox_force_x=1\n=x\nNOEQ", "runbox_force_y=2\nRUNBOX_FORCE_=z\nPATH=rel:/b", "RUNBOX_FORCE_*", "export A='x\nB=\"y")
	f.Add("RUNBOX_STATE_DIR=/s\nRunbox_Owner=o", "RUNBOX_KERNEL_TOOLS=t", "RUNBOX_*", "")
	f.Add("A=1\nA=2\nLAUNCH=1", "RUNBOX_FORCE_RUNBOX_FORCE_A=1\nRUNBOX_FORCE_sudo_password=p", "*_TOKEN", "LAUNCH=1 # c")
	f.Fuzz(func(t *testing.T, base, overlay, pass, envFile string) {
		launch := filepath.Join(t.TempDir(), "launch.env")
		if err := os.WriteFile(launch, []byte(envFile), 0o600); err != nil {
			t.Fatal(err)
		}
		vars, _ := parseEnvFile(envFile)
		req := Request{
			Base:    strings.Split(base, "\n"),
			Overlay: make(map[string]string),
			Served:  Profile{Home: "/served"},
			Launch:  Profile{EnvFile: launch},
		}
		for _, kv := range strings.Split(overlay, "\n") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				req.Overlay[k] = v
			}
		}
		if pass != "" {
			req.Policy.Passthrough = strings.Split(pass, "\n")
		}
		res, err := Build(req)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "spawn: ") {
				t.Fatalf("error %q lacks the spawn: prefix", err)
			}
			return
		}
		r, _ := compile(Policy{})
		seen := make(map[string]bool)
		prev := ""
		for i, kv := range res.Env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || seen[k] {
				t.Fatalf("Env[%d] = %q: malformed or repeated", i, kv)
			}
			if i > 0 && k < prev {
				t.Fatalf("Env not sorted: %q after %q", k, prev)
			}
			seen[k], prev = true, k
			if c := r.classify(k); c == always || c == control {
				t.Fatalf("Env has %s (class %d)", k, c)
			}
			if k == "PATH" {
				dirs := make(map[string]bool)
				for _, d := range strings.Split(v, ":") {
					if dirs[d] || !strings.HasPrefix(d, "/") {
						t.Fatalf("PATH %q: %q repeated or relative", v, d)
					}
					dirs[d] = true
				}
				for _, d := range systemPath {
					if !dirs[d] {
						t.Fatalf("PATH %q lacks %s", v, d)
					}
				}
			}
		}
		if !seen["PATH"] {
			t.Fatal("Env has no PATH")
		}
		for _, d := range res.Dropped {
			if seen[d.Name] {
				t.Fatalf("Dropped has %v but Env has it", d)
			}
		}
		// Names that may be in Env although the launch env file defines
		// them: the overlay's, the forced ones, and those Build sets itself.
		own := map[string]bool{"PATH": true, "HOME": true, HomeVar: true}
		for _, q := range quiet {
			own[q.name] = true
		}
		for k := range req.Overlay {
			own[k] = true
		}
		for _, k := range res.Forced {
			own[k] = true
		}
		for k := range seen {
			if isRunboxVar(k) && !own[k] {
				t.Fatalf("Env has %s from Base: runbox's own variables are never inherited", k)
			}
		}
		for _, v := range vars {
			if !validKey(v.key) {
				t.Fatalf("parseEnvFile returned key %q", v.key)
			}
			if seen[v.key] && !own[v.key] {
				t.Fatalf("launch env file defines %s, yet Env has it from Base", v.key)
			}
		}
	})
}
