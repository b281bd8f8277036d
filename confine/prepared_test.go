//go:build linux

package confine_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/confine"
)

// startOn starts bash running script from a thread pp confines, with the
// fixture's environment, and waits for that thread to end; the caller
// waits for the program.
func startOn(t *testing.T, pp *confine.Prepared, f *fixture, script string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, out, err := tryStart(pp, f, script)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, out
}

func prepare(t *testing.T, p confine.Policy) *confine.Prepared {
	t.Helper()
	pp, err := confine.Prepare(p)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(func() { pp.Close() })
	return pp
}

// TestPrepared_EachStartIsolated: two programs started from one Prepared
// are two sandboxes (neither can signal the other, nor this process), and
// this process keeps every right it had: the confined threads ended with
// the starts, and no goroutine runs on one afterwards.
func TestPrepared_EachStartIsolated(t *testing.T) {
	if confine.Probe().LandlockABI < 6 {
		t.Skip("signal scoping needs Landlock ABI 6")
	}
	f := newFixture(t, user{name: "root"})
	pp := prepare(t, f.policy(confine.ProfileWorkspace))
	first, _ := startOn(t, pp, f, "exec sleep 600")
	pid := strconv.Itoa(first.Process.Pid)

	second, out := startOn(t, pp, f, "kill -0 "+pid+" && echo SIBLING; kill -0 "+strconv.Itoa(os.Getpid())+" && echo PARENT; true")
	second.Wait()
	if strings.Contains(out.String(), "SIBLING") || strings.Contains(out.String(), "PARENT") {
		t.Fatalf("a confined program signalled outside its own sandbox:\n%s", out)
	}
	// The control: unconfined, the same signals are allowed.
	ctl, err := exec.Command("/bin/bash", "-c", "kill -0 "+pid+" && echo SIBLING").CombinedOutput()
	if err != nil || !strings.Contains(string(ctl), "SIBLING") {
		t.Fatalf("control: %v %s", err, ctl)
	}

	// No thread of this process keeps a layer once gone returned: the
	// confined thread has ended by then, while the program still runs
	// (the main thread is never used).
	for range 20 {
		cmd, _ := startOn(t, pp, f, "exec sleep 600")
		assertNoThreadConfined(t)
		cmd.Process.Kill()
		cmd.Wait()
	}

	// Rights the sandbox takes away, tried on every thread this process
	// may run goroutines on: none of them is confined.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			c, err := net.ListenPacket("udp4", "127.0.0.1:0") // seccomp would refuse
			if err != nil {
				errs <- err
				return
			}
			c.Close()
			err = os.WriteFile(filepath.Join(f.outside, "w"+strconv.Itoa(i)), []byte("x"), 0o644) // Landlock would refuse
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("this process lost a right after Start: %v", err)
	}
}

// TestPrepared_CurrentFollowsFiles: a ruleset grants the entries of the
// directories on the way to a denied path as they were when it was
// built. Current turns false when they change, and a ruleset built anew
// grants what a fresh one must: a file created since is readable, and a
// directory renamed into a denied path is not — which the stale ruleset,
// bound to the old directory, would still let a program read.
func TestPrepared_CurrentFollowsFiles(t *testing.T) {
	f := newFixture(t, user{name: "root"})
	notes := filepath.Join(f.home, "notes")
	if err := os.MkdirAll(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "key"), []byte("RENAMED-CANARY"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := f.policy(confine.ProfileWorkspace)
	// Work in the workspace and TMPDIR changes nothing the rules were
	// built from: every command would otherwise prepare anew. The
	// fixture lies in the temporary directory, which other processes
	// change too (and Current rightly says so): a few tries.
	var old *confine.Prepared
	for try := 0; old == nil; try++ {
		if try == 5 {
			t.Fatal("Current = false after work in the workspace and TMPDIR, five times")
		}
		pp := prepare(t, p)
		cmd, out := startOn(t, pp, f, `mkdir -p build && echo x > build/f && echo y > "$TMPDIR/t"`)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("work: %v\n%s", err, out)
		}
		if pp.Current() {
			old = pp
		}
	}

	if err := os.WriteFile(filepath.Join(f.home, "new.txt"), []byte("NEW-FILE"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(notes, filepath.Join(f.home, ".kube")); err != nil {
		t.Fatal(err)
	}
	if old.Current() {
		t.Fatal("Current = true after HOME changed")
	}
	script := `cat ~/new.txt; cat ~/.kube/key`
	cmd, staleOut := startOn(t, old, f, script)
	cmd.Wait()
	if strings.Contains(staleOut.String(), "NEW-FILE") || !strings.Contains(staleOut.String(), "RENAMED-CANARY") {
		// If this fails the ruleset does not bind what the test thinks,
		// and the rest proves nothing.
		t.Fatalf("stale ruleset: want the new file unreadable and the renamed directory readable:\n%s", staleOut)
	}

	fresh := prepare(t, p)
	cmd, freshOut := startOn(t, fresh, f, script)
	cmd.Wait()
	if !strings.Contains(freshOut.String(), "NEW-FILE") || strings.Contains(freshOut.String(), "RENAMED-CANARY") {
		t.Fatalf("fresh ruleset: want the new file readable and the denied path not:\n%s", freshOut)
	}
}

// TestPrepared_CurrentAfterWatchedDirectoryReplaced: Current is kept cheap
// by watching the directories the rules depend on. A writable cache's
// parent is one of them (only watched: nothing lists it); when it is
// replaced by a new one with the cache moved over (nothing Current
// compares differs), the new parent is not watched, and replacing the
// cache in it later must still make Current false.
func TestPrepared_CurrentAfterWatchedDirectoryReplaced(t *testing.T) {
	// Away from the temporary directory, which other processes change
	// all the time (Current would be false for their sake).
	if fi, err := os.Stat("/var/tmp"); err != nil || !fi.IsDir() {
		t.Skip("no /var/tmp")
	}
	t.Setenv("TMPDIR", "/var/tmp")
	f := newFixture(t, user{name: "root"})
	parent := filepath.Join(t.TempDir(), "tools")
	cache := filepath.Join(parent, "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	p := f.policy(confine.ProfileWorkspace)
	p.Writable = append(p.Writable, cache)
	pp := prepare(t, p)
	if !pp.Current() {
		t.Fatal("Current = false right after Prepare")
	}
	swap := func(dir, moveIn string) {
		t.Helper()
		fresh := dir + ".new"
		if err := os.Mkdir(fresh, 0o755); err != nil {
			t.Fatal(err)
		}
		if moveIn != "" {
			if err := os.Rename(filepath.Join(dir, moveIn), filepath.Join(fresh, moveIn)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(dir, dir+".old"+strconv.Itoa(rand.Int())); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(fresh, dir); err != nil {
			t.Fatal(err)
		}
	}
	swap(parent, "cache")
	if !pp.Current() {
		// Not wrong, but then the rest proves nothing.
		t.Fatal("Current = false with the same cache in a new parent")
	}
	swap(cache, "")
	if pp.Current() {
		t.Fatal("Current = true after the writable cache was replaced")
	}
}

// TestPrepared_StartAfterClose: a closed Prepared starts nothing.
func TestPrepared_StartAfterClose(t *testing.T) {
	f := newFixture(t, user{name: "root"})
	pp, err := confine.Prepare(f.policy(confine.ProfileWorkspace))
	if err != nil {
		t.Fatal(err)
	}
	pp.Close()
	called := false
	_, _, err = pp.Start(func() error { called = true; return nil }, nil)
	if !errors.Is(err, confine.ErrNotEnforced) || called {
		t.Fatalf("Start after Close = %v (called %v); want ErrNotEnforced, not called", err, called)
	}
	if _, err := confine.Prepare(f.policy(confine.ProfileOff)); err == nil {
		t.Error("Prepare(off) succeeded; want an error: there is nothing to enforce")
	}
}

// assertNoThreadConfined fails when a thread of this process has a
// seccomp filter or no_new_privs, which only a confined thread has here.
func assertNoThreadConfined(t *testing.T) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		if strings.Contains(string(b), "\nSeccomp:\t2") || strings.Contains(string(b), "\nNoNewPrivs:\t1") {
			t.Errorf("thread %s of this process is still confined:\n%s", task.Name(), b)
		}
	}
}

// mountNS names the mount namespace of process pid, as the kernel does.
func mountNS(t *testing.T, pid int) string {
	t.Helper()
	l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestPrepared_OneMountNamespace: the programs one Prepared starts share
// the private mount namespace it built once, not this process's, and
// the read-only layer holds in it for each of them; a Prepared built
// anew builds a namespace of its own.
func TestPrepared_OneMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the read-only mount layer needs root")
	}
	f := newFixture(t, user{name: "root"})
	p := f.policy(confine.ProfileWorkspace)
	pp := prepare(t, p)
	a, _ := startOn(t, pp, f, "exec sleep 600")
	b, _ := startOn(t, pp, f, "exec sleep 600")
	nsA, nsB, self := mountNS(t, a.Process.Pid), mountNS(t, b.Process.Pid), mountNS(t, os.Getpid())
	if nsA != nsB || nsA == self {
		t.Fatalf("mount namespaces: %s and %s, this process %s; want the first two equal and not the third", nsA, nsB, self)
	}
	for range 2 {
		cmd, out := startOn(t, pp, f, "chmod 600 "+f.victim+" && echo CHANGED; touch -d 2001-01-01 "+f.victim+" && echo TOUCHED; echo x > made && chmod 600 made && echo INSIDE")
		cmd.Wait()
		if s := out.String(); strings.Contains(s, "CHANGED") || strings.Contains(s, "TOUCHED") || !strings.Contains(s, "INSIDE") {
			t.Fatalf("in the shared namespace: want the file outside unchanged and the workspace writable:\n%s", s)
		}
	}
	// The control: from this process the victim's mode can change.
	if err := os.Chmod(f.victim, 0o600); err != nil {
		t.Fatalf("control: %v", err)
	}
	c, _ := startOn(t, prepare(t, p), f, "exec sleep 600")
	if ns := mountNS(t, c.Process.Pid); ns == nsA || ns == self {
		t.Errorf("a new Prepared's programs are in %s; want a namespace of their own", ns)
	}
}

// TestPrepared_GitMadeLaterIsProtected: the shared mount namespace keeps
// .git/config and .git/hooks read-only as they were when it was built.
// A repository made at the workspace's root afterwards (by a command:
// git init) makes the next Start build the namespace anew, and that
// protects it. The control: without the protection a program writes
// the hook.
func TestPrepared_GitMadeLaterIsProtected(t *testing.T) {
	f, p := repoFixture(t)
	pp := prepare(t, p)
	cmd, out := startOn(t, pp, f, "mkdir -p .git/hooks && echo '[core]' > .git/config && echo MADE")
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "MADE") {
		t.Fatalf("making a repository in the workspace: %v\n%s", err, out)
	}
	refusesHooks(t, pp, p, f)
}

// refusesHooks checks that a program pp starts can write neither a hook
// nor the config of the repository at the workspace's root, and, as the
// control, that one started without the repository's protection can.
func refusesHooks(t *testing.T, pp *confine.Prepared, p confine.Policy, f *fixture) {
	t.Helper()
	cmd, out := startOn(t, pp, f, hookWrite)
	cmd.Wait()
	if s := out.String(); strings.Contains(s, "HOOK") || strings.Contains(s, "CONFIG") {
		t.Fatalf("a program could write the repository's hooks or config:\n%s", s)
	}
	p.ProtectGit = false
	cmd, out = startOn(t, prepare(t, p), f, hookWrite)
	cmd.Wait()
	if !strings.Contains(out.String(), "HOOK") {
		t.Fatalf("control: without the protection the hook should be written:\n%s", out)
	}
	os.Remove(filepath.Join(f.ws, ".git", "hooks", "pre-commit"))
}

// TestPrepared_SeesMountsMadeAfter: a mount made on this machine after the
// namespace was built is in the namespace of the next program started,
// as it would be in a namespace of its own; the rules stay current.
func TestPrepared_SeesMountsMadeAfter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the read-only mount layer needs root")
	}
	f := newFixture(t, user{name: "root"})
	pp := prepare(t, f.policy(confine.ProfileWorkspace))
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	cmd, out := startOn(t, pp, f, "grep -c ' "+dir+" ' /proc/self/mountinfo")
	cmd.Wait()
	if strings.TrimSpace(out.String()) != "1" {
		t.Fatalf("the mount made after Prepare in a program's mount table: %q; want it once", out)
	}
}

// repoFixture is a root fixture and its workspace policy with the
// repository's protection on; the test is skipped unless run as root
// (the read-only mount layer needs it).
func repoFixture(t *testing.T) (*fixture, confine.Policy) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the read-only mount layer needs root")
	}
	f := newFixture(t, user{name: "root"})
	p := f.policy(confine.ProfileWorkspace)
	p.ProtectGit = true
	return f, p
}

// gitRepo makes a repository's control files in dir: hooks and config.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hookWrite tries to write a hook and the config of the repository at
// the workspace's root.
const hookWrite = "echo 'echo evil' >> .git/hooks/pre-commit && echo HOOK; echo evil >> .git/config && echo CONFIG"

// TestPrepared_GitLinkReplacedByRepository: a .git that is a symbolic
// link is not pinned (protectGit looks at the entry itself); replacing
// it with the directory it pointed to must make the next Start build the
// namespace anew, though the path resolves to the same directory before
// and after.
func TestPrepared_GitLinkReplacedByRepository(t *testing.T) {
	f, p := repoFixture(t)
	real := filepath.Join(f.ws, "real-git")
	gitRepo(t, real)
	if err := os.Symlink("real-git", filepath.Join(f.ws, ".git")); err != nil {
		t.Fatal(err)
	}
	pp := prepare(t, p)
	cmd, _ := startOn(t, pp, f, "true")
	cmd.Wait()
	if err := os.Remove(filepath.Join(f.ws, ".git")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(real, filepath.Join(f.ws, ".git")); err != nil {
		t.Fatal(err)
	}
	refusesHooks(t, pp, p, f)
}

// TestPrepared_RepositoryMovedWhileBuilt: a command that moves .git away
// and back while the namespace is built must not leave one that does not
// protect the repository. Each round, another goroutine moves .git away
// and back while a Prepared is made and a program started (each may
// build the namespace); once the moves stop, a program must be refused
// the hook.
func TestPrepared_RepositoryMovedWhileBuilt(t *testing.T) {
	f, p := repoFixture(t)
	git := filepath.Join(f.ws, ".git")
	gitRepo(t, git)
	started := 0
	for range 40 {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				os.Rename(git, git+"x")
				os.Rename(git+"x", git)
			}
		}()
		pp, err := confine.Prepare(p)
		if err == nil {
			if cmd, _, err := tryStart(pp, f, "true"); err == nil {
				cmd.Wait()
			}
		}
		close(stop)
		<-done
		if err != nil {
			continue // the builds kept being spoilt: shells start through the trampoline
		}
		cmd, out, err := tryStart(pp, f, hookWrite)
		if err == nil {
			started++
			cmd.Wait()
			if s := out.String(); strings.Contains(s, "HOOK") || strings.Contains(s, "CONFIG") {
				pp.Close()
				t.Fatalf("a program started after .git moved while the namespace was built wrote the repository:\n%s", s)
			}
		}
		pp.Close()
	}
	if started == 0 {
		t.Fatal("no program started in 40 rounds")
	}
	t.Logf("%d of 40 rounds started the program", started)
}

// tryStart is startOn that returns Start's error (or the confined
// thread's) instead of failing the test.
func tryStart(pp *confine.Prepared, f *fixture, script string) (*exec.Cmd, *bytes.Buffer, error) {
	cmd := exec.Command("/bin/bash", "-c", script)
	cmd.Dir = f.ws
	cmd.Env = []string{"HOME=" + f.home, "TMPDIR=" + f.tmp, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	gone, _, err := pp.Start(cmd.Start, nil)
	if gerr := gone(); err == nil {
		err = gerr
	}
	return cmd, out, err
}
