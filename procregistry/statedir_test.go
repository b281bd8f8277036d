package procregistry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/jobdir"
)

// nobody is the uid a hostile directory is given: another user's.
const nobody = 65534

// needRoot skips a test that must give files to another user.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		integration.Skip(t, "giving a file to another user (chown) needs root")
	}
}

// victimFile is a file of the user's outside the state directory (0600,
// like a private key) that an attacker would like runbox to write to.
func victimFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte("SECRET victim data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// assertUntouched fails unless the victim file still has its content.
func assertUntouched(t *testing.T, victim string) {
	t.Helper()
	b, err := os.ReadFile(victim)
	if err != nil || string(b) != "SECRET victim data\n" {
		t.Errorf("victim file now holds %q (%v); want it untouched", b, err)
	}
}

// A state directory another user could change is refused before
// anything is written to it, and nothing reachable through it is
// touched: the directory of another user, one that anyone may write to,
// one reached through a directory anyone may write to or a link of
// another user, and one holding links (jobs/, events.jsonl, lock) that
// lead out of it. Breaks if Open follows, truncates or appends to what
// an attacker planted.
func TestOpen_RefusesHostileStateDir(t *testing.T) {
	needRoot(t)
	victimDir := t.TempDir()
	tests := []struct {
		name string
		// setup makes the hostile state dir under base and returns the
		// path given to Open.
		setup func(t *testing.T, base, victim string) string
		want  string // in the error
	}{
		{"owned by another user", func(t *testing.T, base, _ string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o700)
			chown(t, d, nobody)
			return d
		}, "is owned by uid 65534, not you (uid 0)"},
		{"writable by everyone", func(t *testing.T, base, _ string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o777)
			return d
		}, "is writable by its group or others (mode 0777)"},
		{"writable by its group", func(t *testing.T, base, _ string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o770)
			return d
		}, "mode 0770"},
		{"a parent anyone may write to", func(t *testing.T, base, _ string) string {
			p := filepath.Join(base, "shared")
			mkdir(t, p, 0o777)
			return filepath.Join(p, "state")
		}, "is writable by others (mode 0777) without the sticky bit"},
		{"a parent of another user", func(t *testing.T, base, _ string) string {
			p := filepath.Join(base, "theirs")
			mkdir(t, p, 0o755)
			chown(t, p, nobody)
			return filepath.Join(p, "state")
		}, "is owned by uid 65534, not you (uid 0) or root"},
		{"a link of another user", func(t *testing.T, base, _ string) string {
			d := filepath.Join(base, "real")
			mkdir(t, d, 0o700)
			l := filepath.Join(base, "state")
			symlink(t, d, l)
			lchown(t, l, nobody)
			return l
		}, "is a symbolic link owned by uid 65534"},
		{"jobs is a link", func(t *testing.T, base, _ string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o700)
			symlink(t, victimDir, filepath.Join(d, "jobs"))
			return d
		}, "jobs is a symbolic link"},
		{"the event log is a link", func(t *testing.T, base, victim string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o700)
			symlink(t, victim, filepath.Join(d, "events.jsonl"))
			return d
		}, "events.jsonl is a symbolic link"},
		{"the lock is a link", func(t *testing.T, base, victim string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o700)
			symlink(t, victim, filepath.Join(d, "lock"))
			return d
		}, "lock is a symbolic link"},
		{"the event log is a hard link", func(t *testing.T, base, victim string) string {
			d := filepath.Join(base, "state")
			mkdir(t, d, 0o700)
			if err := os.Link(victim, filepath.Join(d, "events.jsonl")); err != nil {
				integration.Skip(t, "no hard links here: %v", err)
			}
			return d
		}, "has 2 hard links"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			victim := victimFile(t)
			dir := tc.setup(t, t.TempDir(), victim)
			_, err := Open(Options{Dir: dir, Env: testEnv(t), Supervisor: supervisorArgv(t)})
			var se *StateDirError
			if !errors.Is(err, ErrUnsafeStateDir) || !errors.As(err, &se) {
				t.Fatalf("Open(%s) = %v; want a *StateDirError", dir, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), "; refusing it") {
				t.Errorf("error %q; want it to say %q", err, tc.want)
			}
			assertUntouched(t, victim)
			if ents, _ := os.ReadDir(victimDir); len(ents) != 0 {
				t.Errorf("the directory a link pointed to got %d entries", len(ents))
			}
		})
	}
}

// A state directory of this user that nobody else can write to is
// accepted as it is, missing directories are created 0700, and a link of
// this user to such a directory is followed. Breaks if the checks refuse
// what runbox itself makes, or a user's own link.
func TestOpen_AcceptsPrivateStateDir(t *testing.T) {
	base := t.TempDir()
	t.Run("created", func(t *testing.T) {
		d := filepath.Join(base, "a", "b", "state")
		r := newTestRegistry(t, d, nil)
		for _, p := range []string{filepath.Join(base, "a"), d, filepath.Join(d, "jobs"), filepath.Join(d, "cursors")} {
			fi, err := os.Lstat(p)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a 0700 directory", p, fi.Mode(), err)
			}
		}
		in := start(t, r, StartRequest{Shell: "echo hi"})
		if got := waitDone(t, r, in.ID); got.Exit == nil || got.Exit.Code != 0 {
			t.Fatalf("job in a new state dir: %+v", got)
		}
	})
	t.Run("readable by others", func(t *testing.T) {
		d := filepath.Join(base, "shared-read")
		mkdir(t, d, 0o755)
		newTestRegistry(t, d, nil)
	})
	t.Run("own link", func(t *testing.T) {
		real := filepath.Join(base, "real")
		mkdir(t, real, 0o700)
		link := filepath.Join(base, "link")
		symlink(t, real, link)
		r := newTestRegistry(t, link, nil)
		if r.opts.Dir != real {
			t.Errorf("state dir used = %s; want the link resolved to %s", r.opts.Dir, real)
		}
	})
}

// A job directory whose log was replaced by a link to a file of the
// user's is refused at recovery: the registry neither reads the file
// into a completion's tail nor lets anything append to it, and the rest
// of the state directory is served. Breaks if recovery follows the link.
func TestRecover_RefusesJobLogLink(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	good := start(t, r, StartRequest{Shell: "echo fine", Notify: true})
	waitDone(t, r, good.ID)
	r.Close()

	victim := victimFile(t)
	id := "0123456789ab"
	jd := filepath.Join(dir, "jobs", id)
	mkdir(t, jd, 0o700)
	rec := record{Spec: jobdir.Spec{ID: id, Shell: "sleep 60"}, Owner: "agent", Notify: true, Created: time.Now()}
	if err := writeJSON(filepath.Join(jd, fileJob), &rec); err != nil {
		t.Fatal(err)
	}
	symlink(t, victim, filepath.Join(jd, fileLog))

	r = newTestRegistry(t, dir, nil)
	if _, err := r.Get(id); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("Get of the refused job: %v; want not found", err)
	}
	if _, err := r.Get(good.ID); err != nil {
		t.Errorf("the other job is gone: %v", err)
	}
	for _, ev := range drainEvents(t, r, "agent") {
		if strings.Contains(ev.Tail, "SECRET") || ev.Job == id {
			t.Errorf("event from the refused job: %+v", ev)
		}
	}
	assertUntouched(t, victim)
	if _, err := os.Lstat(filepath.Join(jd, fileLost)); err == nil {
		t.Error("the registry wrote into the refused job directory")
	}
}

// Files are opened without following links, and must be this user's
// regular files with one link.
func TestOpenPrivateFile_Refuses(t *testing.T) {
	dir := t.TempDir()
	victim := victimFile(t)
	link := filepath.Join(dir, "link")
	symlink(t, victim, link)
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_CREATE | os.O_TRUNC} {
		f, err := openPrivateFile(link, flag, 0o600)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, ErrUnsafeStateDir) {
			t.Errorf("open of a link with flags %#x: %v; want refused", flag, err)
		}
	}
	f, err := openPrivateFile(link, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
		t.Error("O_EXCL create over a link succeeded")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := openPrivateFile(fifo, os.O_RDWR, 0); !errors.Is(err, ErrUnsafeStateDir) {
		if f != nil {
			f.Close()
		}
		t.Errorf("open of a fifo: %v; want refused", err)
	}
	assertUntouched(t, victim)
	f, err = openPrivateFile(filepath.Join(dir, "new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatalf("create of a new file: %v", err)
	}
	f.Close()
}

func mkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func lchown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
