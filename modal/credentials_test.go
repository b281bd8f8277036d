package modal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/modal"
)

func TestResolveCredentials_Precedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "modal.toml")
	body := `[default]
token_id = "ak-default"
token_secret = "as-default"
environment = "main"

[work]
token_id = "ak-work"
token_secret = "as-work"
server_url = "http://127.0.0.1:9"
active = true
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".modal.toml"), []byte("[p]\ntoken_id = \"ak-home\"\ntoken_secret = \"as-home\"\nactive = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                  string
		env                   map[string]string
		id, secret, envn, url string
		source                string
		err                   error
	}{
		{"active profile", map[string]string{"MODAL_CONFIG_PATH": file}, "ak-work", "as-work", "", "http://127.0.0.1:9", `profile "work" in ` + file, nil},
		{"named profile", map[string]string{"MODAL_CONFIG_PATH": file, "MODAL_PROFILE": "default"}, "ak-default", "as-default", "main", modal.DefaultServerURL, `profile "default"`, nil},
		{"environment wins", map[string]string{"MODAL_CONFIG_PATH": file, "MODAL_TOKEN_ID": "ak-env", "MODAL_TOKEN_SECRET": "as-env", "MODAL_ENVIRONMENT": "dev", "MODAL_SERVER_URL": "http://x:1"}, "ak-env", "as-env", "dev", "http://x:1", "environment (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)", nil},
		{"home file", map[string]string{"HOME": home}, "ak-home", "as-home", "", modal.DefaultServerURL, filepath.Join(home, ".modal.toml"), nil},
		{"unknown profile", map[string]string{"MODAL_CONFIG_PATH": file, "MODAL_PROFILE": "nope"}, "", "", "", "", "", modal.ErrNoCredentials},
		{"nothing", map[string]string{"MODAL_CONFIG_PATH": filepath.Join(dir, "absent.toml")}, "", "", "", "", "", modal.ErrNoCredentials},
		{"half in the environment", map[string]string{"MODAL_CONFIG_PATH": filepath.Join(dir, "absent.toml"), "MODAL_TOKEN_ID": "ak-x"}, "", "", "", "", "", modal.ErrNoCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := modal.ResolveCredentials(func(k string) string { return tt.env[k] })
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.TokenID != tt.id || c.TokenSecret != tt.secret || c.Environment != tt.envn || c.ServerURL != tt.url || !strings.Contains(c.Source, tt.source) {
				t.Fatalf("got %+v", c)
			}
			if strings.Contains(c.Source, c.TokenSecret) {
				t.Fatalf("the source names the secret: %q", c.Source)
			}
		})
	}
}
