package ssh

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestResolveTarget_SSHConfig: an alias in ~/.ssh/config gives HostName,
// User, Port and IdentityFile; what the host string itself names wins, and
// runbox's own user and port only fill what both leave open.
func TestResolveTarget_SSHConfig(t *testing.T) {
	home := t.TempDir()
	key := filepath.Join(home, ".ssh", "build_key")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte("x"), 0o600)
	cfg := `Host build1
  HostName 10.1.2.3
  User alice
  Port 2222
  IdentityFile ~/.ssh/build_key
  IdentityFile ~/.ssh/missing_key

Host half
  HostName %h.example.com
`
	os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(cfg), 0o600)
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	tests := []struct {
		host, user string
		port       int
		sshConfig  string
		want       target
		ids        []string
	}{
		{host: "build1", want: target{"alice", "10.1.2.3", 2222}, ids: []string{key}},
		{host: "bob@build1:22", want: target{"bob", "10.1.2.3", 22}, ids: []string{key}},
		{host: "build1", user: "carol", port: 2200, want: target{"alice", "10.1.2.3", 2222}, ids: []string{key}},
		{host: "half", user: "carol", port: 2200, want: target{"carol", "half.example.com", 2200}},
		{host: "other", user: "carol", want: target{"carol", "other", 22}},
		{host: "build1", user: "carol", sshConfig: "none", want: target{"carol", "build1", 22}},
	}
	for _, tc := range tests {
		o := Options{Host: tc.host, User: tc.user, Port: tc.port, SSHConfig: tc.sshConfig, Getenv: getenv}
		got, ids, err := resolveTarget(o)
		if err != nil || got != tc.want || !reflect.DeepEqual(ids, tc.ids) {
			t.Errorf("resolveTarget(%q, user %q, port %d, config %q) = %+v %q %v; want %+v %q", tc.host, tc.user, tc.port, tc.sshConfig, got, ids, err, tc.want, tc.ids)
		}
	}
}
