package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
)

// The readers of a job — wait, logs -f, events -f — outlive a SIGKILL of
// the job daemon while the job runs: they start a daemon again and go on,
// so wait exits with the job's real status, logs -f prints every line
// exactly once, and events -f prints the completion exactly once. Breaks
// if a reader gives up on a lost connection (exit 125), resumes from the
// wrong offset, or prints an event whose acknowledgement was lost again.
func TestJobs_CLIReadersSurviveDaemonKill(t *testing.T) {
	env := jobsEnv(t)
	state := env["RUNBOX_STATE_DIR"]
	// The job holds its second half until the daemon is gone, so the
	// readers are cut off mid-job whatever the speed of the machine.
	flag := filepath.Join(t.TempDir(), "go-on")
	sh := fmt.Sprintf(`seq 1 1000; while [ ! -e %s ]; do sleep 0.05; done; seq 1001 2000; exit 5`, flag)
	out, errs, code := jcli(t, env, "start", "--notify", "--", sh)
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	id := strings.TrimSpace(out)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	evCtx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	wait := startReader(ctx, env, "wait", id)
	logs := startReader(ctx, env, "logs", "-f", id)
	events := startReader(evCtx, env, "events", "-f")

	sock := daemonSocket(state)
	pid, err := (&procregistry.Client{Path: sock}).Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 30*time.Second, "the three readers connected", func() bool {
		return strings.HasSuffix(logs.out.String(), "\n1000\n") && acceptedConns(t, sock) >= 3
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	wait.join(t)
	if wait.code != 5 || !strings.Contains(wait.out.String(), "exited 5") {
		t.Errorf("wait: %q, exit %d, stderr %q; want exited 5, exit 5", wait.out.String(), wait.code, wait.errs)
	}
	logs.join(t)
	var want strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if got := logs.out.String(); got != want.String() || logs.code != 0 {
		t.Errorf("logs -f: exit %d, stderr %q, %d bytes; want every line once (%d bytes)", logs.code, logs.errs, len(got), want.Len())
	}
	completions := func() int {
		n := 0
		sc := bufio.NewScanner(strings.NewReader(events.out.String()))
		for sc.Scan() {
			var ev procregistry.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == procregistry.EventCompletion && ev.Job == id {
				if ev.Exit == nil || ev.Exit.Code != 5 {
					t.Errorf("completion: %s", sc.Text())
				}
				n++
			}
		}
		return n
	}
	testwait.Within(t, 30*time.Second, "the completion from events -f", func() bool { return completions() > 0 })
	stopEvents()
	events.join(t)
	if n := completions(); n != 1 || events.code != 0 {
		t.Errorf("events -f printed %d completions (exit %d, stderr %q):\n%s", n, events.code, events.errs, events.out.String())
	}
	if npid, err := (&procregistry.Client{Path: sock}).Ping(ctx); err != nil || npid == pid {
		t.Errorf("daemon after the kill: pid %d, %v; want a new one", npid, err)
	}
}

// reader is a jobs command running in the background, in-process.
type reader struct {
	out  lockedBuffer
	errs string
	code int
	done chan struct{}
}

func startReader(ctx context.Context, env map[string]string, args ...string) *reader {
	r := &reader{done: make(chan struct{})}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	}
	go func() {
		defer close(r.done)
		var errb bytes.Buffer
		err := newApp(strings.NewReader(""), &r.out, &errb, getenv).execute(ctx, args)
		r.errs, r.code = errb.String(), exitCode(err)
	}()
	return r
}

// join waits (bounded) for the command to return.
func (r *reader) join(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("reader still running; output so far %q", r.out.String())
	}
}

// acceptedConns counts the connections the server on sock has accepted
// and not yet closed (connected sockets bound to its path in
// /proc/net/unix: an accepted socket carries the listener's address).
func acceptedConns(t *testing.T, sock string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		integration.Skip(t, "no /proc/net/unix to see the daemon's connections: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode Path; St 03 is
		// connected.
		if len(f) == 8 && f[7] == sock && f[5] == "03" {
			n++
		}
	}
	return n
}

// lockedBuffer is a bytes.Buffer that a command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
