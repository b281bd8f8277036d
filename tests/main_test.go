package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testproc"
)

// runboxBin is the runbox binary built once for this package's tests, in
// a directory every user can read.
var runboxBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runbox-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755)
	runboxBin = filepath.Join(dir, "runbox")
	build := exec.Command("go", "build", "-o", runboxBin, "github.com/runbox/runbox/cmd/runbox")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build runbox:", err)
		os.Exit(1)
	}
	code := m.Run()
	// The daemons runbox started for the tests, an unprivileged user's
	// included (their sockets refuse another uid's client).
	testproc.StopDaemons(runboxBin)
	os.RemoveAll(dir)
	os.Exit(code)
}

// user is who runs runbox in a test: root (as the test runs) or an
// unprivileged uid the test switches to.
type user struct {
	name     string
	uid, gid uint32
	switched bool // run through a credential switch
}

// users returns the users a security test runs as: the current one, and
// nobody (65534) when the test runs as root and can switch to it.
func users(t *testing.T) []user {
	t.Helper()
	us := []user{{name: "self", uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}}
	if os.Getuid() == 0 {
		us = append(us, user{name: "nobody", uid: 65534, gid: 65534, switched: true})
	}
	return us
}

// home makes a private HOME and state directory owned by u.
func (u user) home(t *testing.T) string {
	t.Helper()
	// Not t.TempDir: its parent is private to the test's own user.
	base, err := os.MkdirTemp("", "runbox-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	h := filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(h, ".config"), 0o700); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(h, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(u.uid), int(u.gid)) })
	return h
}

// command builds a runbox invocation as u with exactly env (plus PATH).
func (u user) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, runboxBin, args...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, env...)
	cmd.Dir = "/"
	if u.switched {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs runbox as u and returns stdout, stderr and the exit code.
func (u user) run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	// Not t.Context: cleanups run runbox too, after it is cancelled. A
	// bound for hangs: a sandboxed `go run` with a fresh build cache has
	// taken over two minutes on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := u.command(ctx, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("runbox %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}
