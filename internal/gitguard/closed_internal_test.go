package gitguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadClosed_ModesGoToTheDirectoryNotItsPath: the check opens a
// directory its owner closed, and gives it its mode back when the walk
// below it is done. A job may swap a link in for the directory meanwhile:
// the mode goes back to the directory the check opened (wherever it was
// moved), and the file the link names keeps its own. A link already in
// the directory's place when the check opens it is refused. The control:
// a chmod by the same path reaches the file the link names.
func TestReadClosed_ModesGoToTheDirectoryNotItsPath(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	key := filepath.Join(outside, "id_test")
	if err := os.WriteFile(key, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(ws, "d")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(d, "sub"), 0o755)
	if err := os.Chmod(d, 0o311); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil {
		t.Fatal(err)
	}
	c := &checker{}
	ents, err := c.readClosed(d, st)
	if err != nil || len(ents) != 1 || ents[0].Name() != "sub" {
		t.Fatalf("readClosed = %v, %v; want [sub]", ents, err)
	}
	// The swap, while the walk is below d.
	moved := d + ".moved"
	if err := os.Rename(d, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(key, d); err != nil {
		t.Fatal(err)
	}
	c.opened(d)()
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o600 {
		t.Errorf("the key outside got mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(moved); fi.Mode().Perm() != 0o311 {
		t.Errorf("the directory the check opened has mode %v; want it back at 0311", fi.Mode().Perm())
	}
	if len(c.errs) != 0 {
		t.Errorf("errors: %v", c.errs)
	}
	// A link in the directory's place when the check comes.
	if _, err := c.readClosed(d, st); err == nil {
		t.Error("readClosed opened a link in the directory's place")
	}
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o600 {
		t.Errorf("the key outside got mode %v", fi.Mode().Perm())
	}
	// The control.
	if err := os.Chmod(d, fs.FileMode(0o644)); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o644 {
		t.Fatalf("control: a chmod by the path left the key at %v", fi.Mode().Perm())
	}
}
