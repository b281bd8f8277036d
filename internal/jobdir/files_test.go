package jobdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/runbox/runbox/statedir"
)

// TestJSON_RoundTrip: a record written with WriteJSON reads back equal,
// and a missing file reads as (false, nil), not an error: a job that has
// not exited yet has no exit.json.
func TestJSON_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileExit)
	var got ExitRecord
	if ok, err := ReadJSON(path, &got); ok || err != nil {
		t.Fatalf("ReadJSON(missing) = %v, %v; want false, nil", ok, err)
	}
	want := ExitRecord{Note: "from the exitcode file"}
	if err := WriteJSON(path, want); err != nil {
		t.Fatal(err)
	}
	if ok, err := ReadJSON(path, &got); !ok || err != nil {
		t.Fatalf("ReadJSON = %v, %v; want true, nil", ok, err)
	}
	if got.Note != want.Note {
		t.Fatalf("read back note %q; want %q", got.Note, want.Note)
	}
	// The temporary file was renamed, not left beside the record.
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("directory holds %d entries after WriteJSON; want 1", len(es))
	}
}

// TestWriteJSON_ReplacesLink: a symbolic link planted at the record's
// path is replaced, never followed, so its target is left alone.
func TestWriteJSON_ReplacesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FilePID)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, PIDRecord{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("link target = %q; want it untouched", b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("Lstat(%s) = %v, %v; want a regular file", path, fi, err)
	}
}

// TestReadJSON_Refuses: what a record must not be is refused with
// statedir.ErrUnsafe (or, for bad content, an error), and nothing is
// decoded from it.
func TestReadJSON_Refuses(t *testing.T) {
	tests := []struct {
		name   string
		make   func(t *testing.T, path string)
		unsafe bool // the error matches statedir.ErrUnsafe
	}{
		{"symbolic link", func(t *testing.T, path string) {
			writeFile(t, path+".real", `{"note":"planted"}`)
			must(t, os.Symlink(path+".real", path))
		}, true},
		{"hard link", func(t *testing.T, path string) {
			writeFile(t, path+".other", `{"note":"planted"}`)
			must(t, os.Link(path+".other", path))
		}, true},
		{"directory", func(t *testing.T, path string) { must(t, os.Mkdir(path, 0o700)) }, true},
		{"not JSON", func(t *testing.T, path string) { writeFile(t, path, "note=planted") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileExit)
			tt.make(t, path)
			var got ExitRecord
			ok, err := ReadJSON(path, &got)
			if ok || err == nil {
				t.Fatalf("ReadJSON = %v, %v; want false and an error", ok, err)
			}
			if errors.Is(err, statedir.ErrUnsafe) != tt.unsafe {
				t.Fatalf("ReadJSON error %v: matches statedir.ErrUnsafe = %v; want %v", err, !tt.unsafe, tt.unsafe)
			}
			if got.Note != "" {
				t.Fatalf("decoded note %q from a refused file", got.Note)
			}
		})
	}
}

// TestPaths: a job directory is <state>/jobs/<id>, and the host's socket
// is found from it.
func TestPaths(t *testing.T) {
	if got, want := StateOf("/run/rb/jobs/abc"), "/run/rb"; got != want {
		t.Errorf("StateOf = %q; want %q", got, want)
	}
	if got, want := HostSocketOf("/run/rb"), "/run/rb/host/host.sock"; got != want {
		t.Errorf("HostSocketOf = %q; want %q", got, want)
	}
}

// TestRemoveCommand: the command file goes, and removing it again (or
// from a job that never had one) is not an error.
func TestRemoveCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileCommand)
	writeFile(t, path, "echo hi\n")
	for i := range 2 {
		if err := RemoveCommand(dir); err != nil {
			t.Fatalf("RemoveCommand (call %d) = %v", i+1, err)
		}
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lstat after RemoveCommand = %v; want not exist", err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(s), 0o600))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
