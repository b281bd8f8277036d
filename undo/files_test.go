package undo

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPrepareDir_Refuses a journal directory someone else could have
// prepared: a link, a file, a directory others may write to or that
// another user owns. Breaks if the store could be planted.
func TestPrepareDir_Refuses(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	must(t, os.Mkdir(real, 0o700))
	link := filepath.Join(base, "link")
	must(t, os.Symlink(real, link))
	file := filepath.Join(base, "file")
	must(t, os.WriteFile(file, nil, 0o600))
	open := filepath.Join(base, "open")
	must(t, os.Mkdir(open, 0o700))
	must(t, os.Chmod(open, 0o777))
	cases := map[string]string{"symlink": link, "file": file, "writable by others": open}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		must(t, os.Mkdir(other, 0o700))
		must(t, os.Chown(other, 4242, 4242))
		cases["owned by another user"] = other
	}
	for name, p := range cases {
		if _, err := prepareDir(p); err == nil {
			t.Errorf("prepareDir(%s) accepted a directory that is a %s", p, name)
		}
	}
	got, err := prepareDir(filepath.Join(base, "new", "dir"))
	if err != nil {
		t.Fatalf("prepareDir(new) = %v", err)
	}
	if fi, err := os.Lstat(got); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("new journal directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
}

// TestOpenPrivate_Refuses links, hard-linked files and special files in
// the journal's directory.
func TestOpenPrivate_Refuses(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	must(t, os.WriteFile(target, []byte("x"), 0o600))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(target, link))
	hard := filepath.Join(dir, "hard")
	must(t, os.Link(target, hard))
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	for _, p := range []string{link, hard, fifo} {
		if f, err := openPrivate(p, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
			t.Errorf("openPrivate(%s) succeeded", filepath.Base(p))
		}
	}
	f, err := openPrivate(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatalf("openPrivate(new) = %v", err)
	}
	f.Close()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
