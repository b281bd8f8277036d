package procregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testwait"
)

// runClient is the "__client" part: one call on the socket args[0], with
// no token, printing "ok" and the result as JSON, or "err" and the
// error's kind. args[1] is the op (list, log, kill, write, wait), args[2]
// a job id (or an owner for list), args[3] data for write.
func runClient(args []string) int {
	if len(args) < 3 {
		return 2
	}
	c := &Client{Path: args[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res any
	var err error
	switch args[1] {
	case "list":
		res, err = c.List(ctx, args[2])
	case "log":
		var ch Chunk
		ch, err = c.ReadLog(ctx, args[2], 0, 0)
		res = string(ch.Data)
	case "kill":
		res, err = c.Kill(ctx, args[2])
	case "write":
		err = c.Write(ctx, args[2], []byte(args[3]))
	case "wait":
		res, _, err = c.Wait(ctx, args[2], time.Millisecond)
	default:
		return 2
	}
	if err != nil {
		fmt.Printf("err %s: %v\n", (&wireError{}).kindOf(err), err)
		return 1
	}
	b, _ := json.Marshal(res)
	fmt.Printf("ok %s\n", b)
	return 0
}

// kindOf names the sentinel err matches, for the helper's output.
func (*wireError) kindOf(err error) string {
	if w := toWire(err); w.Kind != "" {
		return w.Kind
	}
	return "other"
}

// clientArgv is the shell text that runs this test binary as "__client".
func clientArgv(t *testing.T, sock string, args ...string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	q := []string{shq(exe), "__client", shq(sock)}
	for _, a := range args {
		q = append(q, shq(a))
	}
	return strings.Join(q, " ")
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// victim starts owner b's job, which prints a secret line and echoes its
// stdin, and returns its id once the line is in the log.
func victim(t *testing.T, b *Client) string {
	t.Helper()
	in, err := b.Start(t.Context(), StartRequest{Shell: `echo b-secret-output; while read l; do echo "got $l"; done`})
	if err != nil {
		t.Fatalf("start B's job: %v", err)
	}
	testwait.Within(t, 30*time.Second, "B's output", func() bool {
		ch, err := b.ReadLog(t.Context(), in.ID, 0, 0)
		return err == nil && strings.Contains(string(ch.Data), "b-secret-output")
	})
	return in.ID
}

// listedOwners reads a "__client list" answer: the owners of the jobs.
func listedOwners(t *testing.T, line string) map[string]bool {
	t.Helper()
	js, ok := strings.CutPrefix(strings.TrimSpace(line), "ok ")
	var list []Info
	if !ok || json.Unmarshal([]byte(js), &list) != nil {
		t.Fatalf("list answered %q", line)
	}
	owners := map[string]bool{}
	for _, in := range list {
		owners[in.Owner] = true
	}
	return owners
}

// Owners a token holds are invisible to every other caller: another
// token's holder, a wrong token, and a caller without one (who sees only
// owners no token holds). The holder itself reads, writes and kills its
// job (the control). A token cannot claim an owner that already has jobs
// started without one. Breaks if a session can name another session's
// job, or take over the CLI's owner.
func TestServer_OwnersSeeOnlyTheirJobs(t *testing.T) {
	_, c, _ := serveTest(t, Server{})
	a, b := c.As("sess-A"), c.As("sess-B")
	bid := victim(t, b)
	forged := &Client{Path: c.Path, Owner: "sess-B", Token: "guessed"}

	for _, who := range []struct {
		name   string
		c      *Client
		denied bool // refused as a caller rather than "not found"
	}{{"session A", a, false}, {"no token", c, false}, {"a wrong token for B", forged, true}} {
		t.Run(who.name, func(t *testing.T) {
			wantErr := envs.ErrNotFound
			if who.denied {
				wantErr = envs.ErrDenied
			}
			list, err := who.c.List(t.Context(), "")
			if who.denied {
				if !errors.Is(err, envs.ErrDenied) {
					t.Errorf("list: %v; want ErrDenied", err)
				}
			} else if err != nil || len(list) != 0 {
				t.Errorf("list: %v, %v; want no job", list, err)
			}
			if _, err := who.c.ReadLog(t.Context(), bid, 0, 0); !errors.Is(err, wantErr) {
				t.Errorf("log of B's job: %v; want %v", err, wantErr)
			}
			if _, err := who.c.ReadLog(t.Context(), bid[:3], 0, 0); !errors.Is(err, wantErr) {
				t.Errorf("log of B's job by prefix: %v; want %v", err, wantErr)
			}
			if err := who.c.Write(t.Context(), bid, []byte("x\n")); !errors.Is(err, wantErr) {
				t.Errorf("write to B's job: %v; want %v", err, wantErr)
			}
			if _, err := who.c.Kill(t.Context(), bid); !errors.Is(err, wantErr) {
				t.Errorf("kill of B's job: %v; want %v", err, wantErr)
			}
			if _, _, err := who.c.Wait(t.Context(), bid, time.Millisecond); !errors.Is(err, wantErr) {
				t.Errorf("wait for B's job: %v; want %v", err, wantErr)
			}
			if _, err := who.c.Handoff(t.Context(), bid, "thief", ""); !errors.Is(err, wantErr) {
				t.Errorf("handoff of B's job: %v; want %v", err, wantErr)
			}
			if _, err := who.c.Events(t.Context(), "sess-B", false); !errors.Is(err, envs.ErrDenied) {
				t.Errorf("events of B: %v; want ErrDenied", err)
			}
			if _, err := who.c.EndSession(t.Context(), "sess-B"); !errors.Is(err, envs.ErrDenied) {
				t.Errorf("end B's session: %v; want ErrDenied", err)
			}
		})
	}
	if _, err := c.List(t.Context(), "sess-B"); !errors.Is(err, envs.ErrDenied) {
		t.Errorf("list of owner sess-B without its token: %v; want ErrDenied", err)
	}

	// Control: B itself.
	if err := b.Write(t.Context(), bid, []byte("hello\n")); err != nil {
		t.Fatalf("B writes to its job: %v", err)
	}
	testwait.Within(t, 30*time.Second, "B's job echoing", func() bool {
		ch, err := b.ReadLog(t.Context(), bid, 0, 0)
		return err == nil && strings.Contains(string(ch.Data), "got hello")
	})
	if list, err := b.List(t.Context(), ""); err != nil || len(list) != 1 || list[0].ID != bid || list[0].Status != StatusRunning {
		t.Errorf("B lists %+v, %v; want its one running job", list, err)
	}
	if kr, err := b.Kill(t.Context(), bid); err != nil || kr.Outcome != KillKilled {
		t.Errorf("B kills its job: %+v, %v", kr, err)
	}

	// The CLI's owner cannot be taken by a token once it has jobs.
	if _, err := c.Start(t.Context(), StartRequest{Shell: "true", Owner: "user"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.As("user").List(t.Context(), ""); !errors.Is(err, envs.ErrDenied) {
		t.Errorf("a token for the CLI's owner: %v; want ErrDenied", err)
	}
	if list, err := c.List(t.Context(), "user"); err != nil || len(list) != 1 {
		t.Errorf("the CLI still lists its job: %v, %v", list, err)
	}
}

// A process of a job acts for the job's owner, found by the server from
// the connection (SO_PEERCRED), whatever it asks: a job of session A that
// runs a client against session B's job is refused and B's job goes on
// unread, while the same client run by a job of B works (the control).
// Even after a double fork and setsid, a process of A's job still acts
// for A (not for the owners without a token). Breaks if a command can
// reach another session's job through the daemon.
func TestServer_JobProcessActsForItsOwner(t *testing.T) {
	_, c, _ := serveTest(t, Server{})
	a, b := c.As("sess-A"), c.As("sess-B")
	bid := victim(t, b)
	if _, err := c.Start(t.Context(), StartRequest{Shell: "sleep 600", Owner: "user"}); err != nil {
		t.Fatal(err)
	}
	attack := strings.Join([]string{
		clientArgv(t, c.Path, "log", bid),
		clientArgv(t, c.Path, "write", bid, "from-a\n"),
		clientArgv(t, c.Path, "wait", bid),
		clientArgv(t, c.Path, "kill", bid),
		clientArgv(t, c.Path, "list", ""),
	}, "; ")
	run := func(cl *Client, shell string) string {
		t.Helper()
		in, err := cl.Start(t.Context(), StartRequest{Shell: shell})
		if err != nil {
			t.Fatal(err)
		}
		done, _, err := cl.Wait(t.Context(), in.ID, 0)
		if err != nil || !done.Status.Finished() {
			t.Fatalf("wait: %+v %v", done, err)
		}
		ch, err := cl.ReadLog(t.Context(), in.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return string(ch.Data)
	}

	out := run(a, attack)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("A's job printed:\n%s", out)
	}
	for i, op := range []string{"log", "write", "wait", "kill"} {
		if !strings.HasPrefix(lines[i], "err not_found") {
			t.Errorf("A's job, %s of B's job: %s; want not_found", op, lines[i])
		}
	}
	if strings.Contains(out, "b-secret-output") {
		t.Errorf("A's job read B's output:\n%s", out)
	}
	if owners := listedOwners(t, lines[4]); len(owners) != 1 || !owners["sess-A"] {
		t.Errorf("A's job listed the jobs of %v; want sess-A's only", owners)
	}
	if p, err := b.Poll(t.Context(), bid); err != nil || p.Info.Status != StatusRunning || strings.Contains(p.Preview, "from-a") {
		t.Fatalf("B's job after A's attack: %+v, %v; want running, unwritten", p.Info, err)
	}

	// Escaped: double fork and setsid; still A's.
	marker := t.TempDir() + "/escaped.out"
	// The job waits for its escaped child's answer: a job's leftovers are
	// killed when it ends.
	escaped := fmt.Sprintf(`(setsid sh -c '%s > %s.tmp 2>&1; mv %s.tmp %s' &) ; for i in $(seq 600); do [ -e %s ] && break; sleep 0.05; done`,
		strings.ReplaceAll(clientArgv(t, c.Path, "list", ""), "'", `'\''`), marker, marker, marker, marker)
	run(a, escaped)
	testwait.Within(t, 30*time.Second, "the escaped client's answer", func() bool {
		b, err := os.ReadFile(marker)
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	})
	got, _ := os.ReadFile(marker)
	if owners := listedOwners(t, string(got)); len(owners) != 1 || !owners["sess-A"] {
		t.Errorf("escaped process of A's job listed the jobs of %v; want sess-A's only", owners)
	}

	// Control: the same attack from a job of B works.
	out = run(b, attack)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("B's job printed:\n%s", out)
	}
	for i, op := range []string{"log", "write", "wait", "kill"} {
		if !strings.HasPrefix(lines[i], "ok") {
			t.Errorf("B's job, %s of B's job: %s; want ok", op, lines[i])
		}
	}
	if !strings.Contains(lines[0], "b-secret-output") {
		t.Errorf("B's job read %s; want B's output", lines[0])
	}
	if p, err := b.Poll(t.Context(), bid); err != nil || p.Info.Status != StatusKilled {
		t.Errorf("B's job after B's own kill: %+v, %v; want killed", p.Info, err)
	}
}

// A process below a front end (one that has called with a token: runbox
// serve) that proves nothing acts for no owner, not even the ones no
// token holds: a foreground command of a session cannot reach the CLI's
// jobs. The front end itself without its token, and any other process of
// the user, see the CLI's jobs (the control).
func TestServer_FrontEndCommandActsForNoOwner(t *testing.T) {
	_, c, _ := serveTest(t, Server{})
	user, err := c.Start(t.Context(), StartRequest{Shell: "sleep 600", Owner: "user"})
	if err != nil {
		t.Fatal(err)
	}
	helper := func() (string, error) {
		cmd := exec.Command("sh", "-c", clientArgv(t, c.Path, "log", user.ID))
		out, err := cmd.Output()
		return string(out), err
	}
	// Before this process calls with a token, its child is the user's.
	if out, err := helper(); err != nil || !strings.HasPrefix(out, "ok") {
		t.Fatalf("child before any token: %q, %v; want ok", out, err)
	}
	if _, err := c.As("sess-A").List(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if out, _ := helper(); !strings.HasPrefix(out, "err denied") {
		t.Errorf("child of a front end: %q; want denied", out)
	}
	if _, err := c.ReadLog(t.Context(), user.ID, 0, 0); err != nil {
		t.Errorf("the front end itself without a token: %v", err)
	}
}

// A claim outlives the registry: after a restart on the same state
// directory the session's token still holds its owner and a guessed one
// is still refused, so a daemon restart does not open a session's jobs to
// everyone. Breaks if claims are kept in memory only.
func TestServer_ClaimSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "run", "s.sock")
	serve := func() (stop func()) {
		r := newTestRegistry(t, dir, nil)
		ln, err := Listen(sock)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- (&Server{Reg: r}).Serve(ctx, ln) }()
		return func() { cancel(); <-done; r.Close() }
	}
	stop := serve()
	b := (&Client{Path: sock}).As("sess-B")
	in, err := b.Start(t.Context(), StartRequest{Shell: "sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	stop()

	stop = serve()
	defer stop()
	forged := &Client{Path: sock, Owner: "sess-B", Token: "guessed"}
	if _, err := forged.Get(t.Context(), in.ID); !errors.Is(err, envs.ErrDenied) {
		t.Errorf("a guessed token after the restart: %v; want ErrDenied", err)
	}
	if _, err := (&Client{Path: sock}).Get(t.Context(), in.ID); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("no token after the restart: %v; want ErrNotFound", err)
	}
	if got, err := b.Get(t.Context(), in.ID); err != nil || got.Status != StatusRunning {
		t.Errorf("B after the restart: %+v, %v; want its running job", got, err)
	}
	if _, err := b.Kill(t.Context(), in.ID); err != nil {
		t.Errorf("B kills its job after the restart: %v", err)
	}
}
