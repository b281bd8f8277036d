package confine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCopyCargoConfig_WritesThroughNoLink: the private CARGO_HOME is
// writable to the workspace's commands, so a job can put a link where
// the copy of ~/.cargo/config.toml goes, or make the directory itself a
// link out of the private caches, while the copy is made. The copy
// writes through neither: the file outside stays as it was, and the copy
// is a file of its own. The control: a plain write through the same
// link changes the file outside.
func TestCopyCargoConfig_WritesThroughNoLink(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".cargo"), 0o700); err != nil {
		t.Fatal(err)
	}
	config := "[source.crates-io]\nreplace-with = \"mirror\"\n"
	if err := os.WriteFile(filepath.Join(home, ".cargo", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	canary := filepath.Join(outside, "bashrc")
	reset := func() {
		t.Helper()
		if err := os.WriteFile(canary, []byte("canary\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unchanged := func(what string) {
		t.Helper()
		if b, _ := os.ReadFile(canary); string(b) != "canary\n" {
			t.Errorf("%s: the file outside was written: %q", what, b)
		}
	}
	caches := filepath.Join(t.TempDir(), "workspaces")
	ws := filepath.Join(caches, "proj-abc")

	// A link where the copy goes.
	cargo := filepath.Join(ws, "cargo")
	if err := os.MkdirAll(cargo, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(cargo, "config.toml")
	if err := os.Symlink(canary, link); err != nil {
		t.Fatal(err)
	}
	reset()
	if err := os.WriteFile(link, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(canary); string(b) != "x" {
		t.Fatalf("control: a write through the link did not reach the file outside: %q", b)
	}
	reset()
	copyCargoConfig(home, cargo)
	unchanged("a link in the copy's place")
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the copy is not a file of its own: %v %v", fi, err)
	} else if b, _ := os.ReadFile(link); string(b) != config {
		t.Errorf("the copy holds %q; want the user's configuration", b)
	}

	// The directory itself a link out of the private caches.
	os.RemoveAll(cargo)
	if err := os.Symlink(outside, cargo); err != nil {
		t.Fatal(err)
	}
	os.Remove(canary)
	if err := os.Symlink(canary, filepath.Join(outside, "config.toml")); err != nil {
		t.Fatal(err)
	}
	reset()
	copyCargoConfig(home, cargo)
	unchanged("a linked directory")
	if fi, err := os.Lstat(filepath.Join(outside, "config.toml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the copy went into the directory outside: %v %v", fi, err)
	}
}
