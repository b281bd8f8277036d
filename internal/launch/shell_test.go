package launch_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
)

// Shell-string commands run in the shell asked for, else bash, else sh;
// with neither, the error says so (envs.ErrNotFound) instead of running
// something else.
func TestShell_Lookup(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	bash, bashErr := exec.LookPath("bash")
	onlySh := t.TempDir()
	if err := os.Symlink(sh, filepath.Join(onlySh, "sh")); err != nil {
		t.Fatal(err)
	}
	both := t.TempDir()
	os.Symlink(sh, filepath.Join(both, "sh"))
	if bashErr == nil {
		os.Symlink(bash, filepath.Join(both, "bash"))
	}
	empty := t.TempDir()
	tests := []struct {
		name, path, want string
		wantPath         string // "" with wantErr
		wantErr          error
		needBash         bool
	}{
		{name: "bash before sh", path: both, wantPath: filepath.Join(both, "bash"), needBash: true},
		{name: "sh without bash", path: onlySh, wantPath: filepath.Join(onlySh, "sh")},
		{name: "asked for", path: both, want: "sh", wantPath: filepath.Join(both, "sh")},
		{name: "asked for by path", path: empty, want: sh, wantPath: sh},
		{name: "no shell", path: empty, wantErr: envs.ErrNotFound},
		{name: "asked for, missing", path: onlySh, want: "bash", wantErr: exec.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needBash && bashErr != nil {
				t.Skip("no bash")
			}
			t.Setenv("PATH", tt.path)
			got, err := launch.Shell(tt.want)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Shell(%q) = %q, %v; want error %v", tt.want, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.wantPath {
				t.Fatalf("Shell(%q) = %q, %v; want %q", tt.want, got, err, tt.wantPath)
			}
		})
	}
}
