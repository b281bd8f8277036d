package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckClosedDir: a closed directory (the supervisor host's) must be a real directory of this
// user that nobody else may enter.
func TestCheckClosedDir(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		problem string // "" when it is accepted
	}{
		{"private", func(t *testing.T, path string) { must(t, os.Mkdir(path, 0o700)) }, ""},
		{"group readable", func(t *testing.T, path string) {
			must(t, os.Mkdir(path, 0o700))
			must(t, os.Chmod(path, 0o750))
		}, "open to others"},
		{"a file", func(t *testing.T, path string) { writeFile(t, path, "") }, "is not a directory"},
		{"symbolic link", func(t *testing.T, path string) {
			must(t, os.Mkdir(path+".real", 0o700))
			must(t, os.Symlink(path+".real", path))
		}, "is a symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			tt.make(t, path)
			err := CheckClosedDir(path)
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("CheckClosedDir = %v; want nil", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || !strings.Contains(se.Problem, tt.problem) || se.Path != path {
				t.Fatalf("CheckClosedDir = %v; want a Error for %s that %s", err, path, tt.problem)
			}
		})
	}
}

// TestError_Message: the message names the state directory only
// when it is known, and the path once when it is the directory itself.
func TestError_Message(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Path: "/s/jobs/1/pid.json", Problem: "is a symbolic link"},
			"/s/jobs/1/pid.json is a symbolic link; refusing it"},
		{Error{Dir: "/s", Path: "/s", Problem: "has mode -rwxr-x---, open to others"},
			"state directory /s has mode -rwxr-x---, open to others; refusing it"},
		{Error{Dir: "/s", Path: "/s/jobs", Problem: "is not a directory"},
			"state directory /s: /s/jobs is not a directory; refusing it"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q; want %q", got, tt.want)
		}
		if !errors.Is(&tt.err, ErrUnsafe) {
			t.Errorf("%q does not match ErrUnsafe", tt.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(content), 0o600))
}
