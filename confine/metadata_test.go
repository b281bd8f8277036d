//go:build linux

package confine_test

import (
	"archive/tar"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/integration"
)

// nobodyOnly runs f as nobody: the user without the read-only mount
// layer, whose metadata calls the listener decides.
func nobodyOnly(t *testing.T) user {
	t.Helper()
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root to run commands as nobody")
	}
	return users[1]
}

// setMtime is the time `touch -d` sets in these tests.
const setMtime = "2000-01-02 03:04:05"

func yearOf(path string, follow bool) int {
	var st unix.Stat_t
	stat := unix.Lstat
	if follow {
		stat = unix.Stat
	}
	if stat(path, &st) != nil {
		return -1
	}
	return time.Unix(st.Mtim.Unix()).Year()
}

func modeOf(path string) os.FileMode {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid)
}

func xattrOf(path string) string {
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, "user.runbox", buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// userXattrs reports whether the file system under dir takes user.*
// extended attributes.
func userXattrs(t *testing.T, dir string) bool {
	t.Helper()
	probe := filepath.Join(dir, "xattr-probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probe)
	return unix.Setxattr(probe, "user.probe", []byte("1"), 0) == nil
}

const setxattr = `python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.runbox", b"set")' `

// metaAttack is a metadata change outside the workspace.
type metaAttack struct {
	name   string
	xattr  bool // needs user.* extended attributes
	script string
	worked func(f *fixture, out string) bool
	op     string
	target func(f *fixture) string
}

var metaAttacks = []metaAttack{
	{
		name:   "chmod-file",
		script: `chmod 600 "$VICTIM"`,
		worked: func(f *fixture, _ string) bool { return modeOf(f.victim) == 0o600 },
		op:     "chmod", target: func(f *fixture) string { return f.victim },
	},
	{
		name:   "chmod-directory",
		script: `chmod 700 "$OUTSIDE"`,
		worked: func(f *fixture, _ string) bool { return modeOf(f.outside) == 0o700 },
		op:     "chmod", target: func(f *fixture) string { return f.outside },
	},
	{
		name:   "touch-date",
		script: `touch -d "` + setMtime + `" "$VICTIM"`,
		worked: func(f *fixture, _ string) bool { return yearOf(f.victim, true) == 2000 },
		op:     "utimes", target: func(f *fixture) string { return f.victim },
	},
	{
		name:   "setxattr",
		xattr:  true,
		script: setxattr + `"$VICTIM"`,
		worked: func(f *fixture, _ string) bool { return xattrOf(f.victim) == "set" },
		op:     "setxattr", target: func(f *fixture) string { return f.victim },
	},
	{
		// A change to its own owner and group, which the kernel allows
		// the owner: only the exit status shows it was made.
		name:   "chown-to-self",
		script: `chown 65534:65534 "$VICTIM" && echo CHOWNED`,
		worked: printed("CHOWNED"),
		op:     "chown", target: func(f *fixture) string { return f.victim },
	},
	{
		name:   "chmod-through-link",
		script: `ln -s "$VICTIM" link && chmod 600 link`,
		worked: func(f *fixture, _ string) bool { return modeOf(f.victim) == 0o600 },
		op:     "chmod", target: func(f *fixture) string { return f.victim },
	},
	{
		name:   "fchmod-open-file",
		script: `python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fchmod(fd, 0o600)' "$VICTIM"`,
		worked: func(f *fixture, _ string) bool { return modeOf(f.victim) == 0o600 },
		op:     "chmod", target: func(f *fixture) string { return f.victim },
	},
}

// TestMetadata_RefusedOutsideWorkspace protects the promise that a
// command run by a user (no read-only mount layer) changes no file
// metadata outside its writable directories: each change works
// unconfined (the control), fails confined, and is reported naming the
// resolved file. A metadata call continued to the kernel, or decided on
// the name instead of the object, would let one through.
func TestMetadata_RefusedOutsideWorkspace(t *testing.T) {
	u := nobodyOnly(t)
	for _, a := range metaAttacks {
		t.Run(a.name, func(t *testing.T) {
			f := newFixture(t, u)
			if a.xattr && !userXattrs(t, f.base) {
				t.Skip("the file system takes no user.* extended attributes")
			}
			env := []string{"VICTIM=" + f.victim, "OUTSIDE=" + f.outside}
			if out, code := f.run(t, f.policy(confine.ProfileOff), a.script, env...); !a.worked(f, out) {
				t.Fatalf("control under off: the change was not made (exit %d):\n%s", code, out)
			}
			viaBoth(t, func(t *testing.T, thread bool) {
				f := newFixture(t, u)
				f.thread = thread
				got := collect(f)
				env := []string{"VICTIM=" + f.victim, "OUTSIDE=" + f.outside}
				out, code := f.run(t, f.policy(confine.ProfileWorkspace), a.script, env...)
				if a.worked(f, out) || code == 0 {
					t.Fatalf("under workspace the change was made (exit %d):\n%s", code, out)
				}
				if thread {
					return // no reports from a helper's thread
				}
				if vs := got(); !hasViolation(vs, a.op, a.target(f)) {
					t.Errorf("violations %+v; want %s %s", vs, a.op, a.target(f))
				}
			})
		})
	}
}

// metaWork is a metadata change in the workspace and how to see it.
type metaWork struct {
	name   string
	xattr  bool
	script string
	check  func(f *fixture) error
}

func wantMode(path string, mode os.FileMode) error {
	if got := modeOf(path); got != mode {
		return fmt.Errorf("%s: mode %o, want %o", path, got, mode)
	}
	return nil
}

var metaWorks = []metaWork{
	{
		name:   "chmod-file",
		script: `echo x > f && chmod 600 f`,
		check:  func(f *fixture) error { return wantMode(filepath.Join(f.ws, "f"), 0o600) },
	},
	{
		name:   "chmod-directory",
		script: `mkdir d && chmod 700 d`,
		check:  func(f *fixture) error { return wantMode(filepath.Join(f.ws, "d"), 0o700) },
	},
	{
		name:   "chmod-tmpdir",
		script: `echo x > "$TMPDIR/f" && chmod 640 "$TMPDIR/f"`,
		check:  func(f *fixture) error { return wantMode(filepath.Join(f.tmp, "f"), 0o640) },
	},
	{
		name:   "touch-date",
		script: `echo x > f && touch -d "` + setMtime + `" f`,
		check: func(f *fixture) error {
			if y := yearOf(filepath.Join(f.ws, "f"), true); y != 2000 {
				return fmt.Errorf("mtime year %d, want 2000", y)
			}
			return nil
		},
	},
	{
		name:   "setxattr",
		xattr:  true,
		script: `echo x > f && ` + setxattr + `f && python3 -c 'import os; os.removexattr("f", "user.runbox"); os.setxattr("f", "user.runbox", b"set")'`,
		check: func(f *fixture) error {
			if v := xattrOf(filepath.Join(f.ws, "f")); v != "set" {
				return fmt.Errorf("user.runbox = %q, want set", v)
			}
			return nil
		},
	},
	{
		name:   "chown-to-self",
		script: `echo x > f && chown 65534:65534 f && chown -h 65534 f`,
		check:  func(*fixture) error { return nil },
	},
	{
		// touch -h changes the link, not the file outside it points to.
		name:   "link-not-followed",
		script: `ln -s "$VICTIM" link && touch -h -d "` + setMtime + `" link && chown -h 65534:65534 link`,
		check: func(f *fixture) error {
			if y := yearOf(filepath.Join(f.ws, "link"), false); y != 2000 {
				return fmt.Errorf("link's mtime year %d, want 2000", y)
			}
			if y := yearOf(f.victim, true); y == 2000 {
				return errors.New("the victim's mtime changed through the link")
			}
			return nil
		},
	},
	{
		name:   "fd-calls",
		script: `python3 -c 'import os; fd = os.open("f", os.O_WRONLY|os.O_CREAT, 0o644); os.fchmod(fd, 0o604); os.utime(fd, (946782245, 946782245)); os.fchown(fd, 65534, 65534)'`,
		check:  func(f *fixture) error { return wantMode(filepath.Join(f.ws, "f"), 0o604) },
	},
	{
		name:   "dirfd-relative",
		script: `mkdir d && echo x > d/f && python3 -c 'import os; d = os.open("d", os.O_RDONLY); os.chmod("f", 0o611, dir_fd=d)'`,
		check:  func(f *fixture) error { return wantMode(filepath.Join(f.ws, "d", "f"), 0o611) },
	},
}

// TestMetadata_AllowedInsideWorkspace: the same changes in the writable
// directories are made, and take effect, under the sandbox; links
// inside are changed themselves when the call says not to follow them.
func TestMetadata_AllowedInsideWorkspace(t *testing.T) {
	u := nobodyOnly(t)
	for _, w := range metaWorks {
		t.Run(w.name, func(t *testing.T) {
			viaBoth(t, func(t *testing.T, thread bool) {
				f := newFixture(t, u)
				if w.xattr && !userXattrs(t, f.base) {
					t.Skip("the file system takes no user.* extended attributes")
				}
				f.thread = thread
				out, code := f.run(t, f.policy(confine.ProfileWorkspace), w.script, "VICTIM="+f.victim)
				if code != 0 {
					t.Fatalf("exit %d:\n%s", code, out)
				}
				if err := w.check(f); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// TestMetadata_SetIDRefusedInside: the set-ID bits stay refused in the
// workspace too.
func TestMetadata_SetIDRefusedInside(t *testing.T) {
	u := nobodyOnly(t)
	viaBoth(t, func(t *testing.T, thread bool) {
		f := newFixture(t, u)
		f.thread = thread
		script := `echo x > f && chmod 755 f && { chmod 4755 f; chmod g+s f; python3 -c 'import os; os.chmod("f", 0o2755)'; true; }`
		if out, code := f.run(t, f.policy(confine.ProfileWorkspace), script); code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if err := wantMode(filepath.Join(f.ws, "f"), 0o755); err != nil {
			t.Error(err)
		}
	})
}

// TestMetadata_OrdinaryWork: tools that set modes and times as they
// write (tar, cp -p, install, git) work under the sandbox.
func TestMetadata_OrdinaryWork(t *testing.T) {
	u := nobodyOnly(t)
	cases := []struct {
		name, script, want string
	}{
		{"tar-extract", `tar xf "$TMPDIR/a.tar" && stat -c '%a %Y' dir/x dir`, "751 978310861\n700 978310861"},
		{"cp-p", `echo x > s && chmod 640 s && touch -d "` + setMtime + `" s && cp -p s c && stat -c '%a %y' c`, "640 2000-01-02 03:04:05"},
		{"install-m", `echo x > s && install -m 755 s bin-x && stat -c %a bin-x`, "755"},
		{"git-checkout", `git init -q && echo a > a && chmod +x a && git add a && git -c user.name=t -c user.email=t@example.com commit -qm first && rm a && git checkout -q a && stat -c %a a`, "755"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			viaBoth(t, func(t *testing.T, thread bool) {
				f := newFixture(t, u)
				f.thread = thread
				modesTar(t, f)
				out, code := f.run(t, f.policy(confine.ProfileWorkspace), c.script, "TZ=UTC")
				if code != 0 || !strings.Contains(out, c.want) {
					t.Fatalf("exit %d, output:\n%s\nwant %q", code, out, c.want)
				}
			})
		})
	}
}

// modesTar writes, in the fixture's TMPDIR, an archive whose directory
// and file carry their own modes and times.
func modesTar(t *testing.T, f *fixture) {
	t.Helper()
	path := filepath.Join(f.tmp, "a.tar")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	mtime := time.Unix(978310861, 0) // 2001-01-01 01:01:01 UTC
	tw := tar.NewWriter(fh)
	hdrs := []*tar.Header{
		{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o700, ModTime: mtime},
		{Name: "dir/x", Typeflag: tar.TypeReg, Mode: 0o751, ModTime: mtime, Size: 2},
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte("x\n"))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if f.u.cred != nil {
		os.Chown(path, int(f.u.cred.Uid), int(f.u.cred.Gid))
	}
}
