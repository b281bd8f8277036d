package undo

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/runbox/runbox/statedir"
)

// TestPrepareDirs_Refuses a journal directory someone else could have
// prepared: a file, a directory others may write to, one another user
// owns or a link another user made. Breaks if the store could be planted.
func TestPrepareDirs_Refuses(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	must(t, os.Mkdir(real, 0o700))
	file := filepath.Join(base, "file")
	must(t, os.WriteFile(file, nil, 0o600))
	open := filepath.Join(base, "open")
	must(t, os.Mkdir(open, 0o700))
	must(t, os.Chmod(open, 0o777))
	cases := map[string]string{"file": file, "writable by others": open}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		must(t, os.Mkdir(other, 0o700))
		must(t, os.Chown(other, 4242, 4242))
		cases["owned by another user"] = other
		theirs := filepath.Join(base, "theirs")
		must(t, os.Symlink(real, theirs))
		must(t, os.Lchown(theirs, 4242, 4242))
		cases["link another user made"] = theirs
	}
	for name, p := range cases {
		if _, err := prepareDirs(p); !errors.Is(err, statedir.ErrUnsafe) {
			t.Errorf("prepareDirs(%s) = %v for a %s; want ErrUnsafe", p, err, name)
		}
	}
	// A link of this user's is followed, and the journal lives where it
	// leads (only this user could have made it).
	mine := filepath.Join(base, "mine")
	must(t, os.Symlink(real, mine))
	if got, err := prepareDirs(mine); err != nil || got != real {
		t.Errorf("prepareDirs(own link) = %q, %v; want %q", got, err, real)
	}
	got, err := prepareDirs(filepath.Join(base, "new", "dir"))
	if err != nil {
		t.Fatalf("prepareDirs(new) = %v", err)
	}
	for _, d := range []string{got, filepath.Join(got, "objects"), filepath.Join(got, "steps")} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("new journal directory %s: %v, %v; want mode 0700", d, fi.Mode(), err)
		}
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
