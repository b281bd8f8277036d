package procregistry

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/supervisor"
	"github.com/runbox/runbox/local"
)

// The test binary plays four parts, picked by its first argument:
// "__supervise" is a job's supervisor (what `runbox __supervise` runs),
// "__manager" is a registry in a process of its own (for the SIGKILL
// recovery test), "__server" serves one on a socket (for the test that
// starves it of descriptors), "__client" makes one call as a client
// without a token (for the tests of who a connection acts for), anything
// else runs the tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "__supervise":
			os.Exit(supervisor.Main(os.Args[2:]))
		case "__manager":
			os.Exit(runManager(os.Args[2:]))
		case "__server":
			os.Exit(runServer(os.Args[2:]))
		case "__client":
			os.Exit(runClient(os.Args[2:]))
		}
	}
	goleak.VerifyTestMain(m)
}

// supervisorArgv runs this test binary as the supervisor.
func supervisorArgv(t testing.TB) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "__supervise"}
}

// testEnv is a real local environment with a literal base environment.
func testEnv(t testing.TB) *local.Env {
	t.Helper()
	env, err := local.New(local.Options{
		Confine: confine.Off(),
		// GORACE: a race-enabled binary otherwise sleeps 1s at exit, and
		// the supervisor's first stage is this binary.
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C", "GORACE=atexit_sleep_ms=0"},
		Grace:   local.NoGrace,
		// Like the runbox daemon: the supervisor is not in a container of
		// the environment, only the job is, in one of its own.
		NoContainment: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

// newTestRegistry opens a registry in dir (a new temp dir when "") with a
// real local environment. Cleanup closes it and kills every job still
// running, so no test leaves a process behind.
func newTestRegistry(t *testing.T, dir string, tweak func(*Options)) *Registry {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	opts := Options{
		Dir: dir, Env: testEnv(t), Supervisor: supervisorArgv(t),
		Grace: 200 * time.Millisecond, PollInterval: 10 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&opts)
	}
	r, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, in := range r.List("") {
			if !in.Status.Finished() {
				r.Kill(context.Background(), in.ID)
			}
		}
		r.Close()
	})
	return r
}

func start(t *testing.T, r *Registry, req StartRequest) Info {
	t.Helper()
	if req.Owner == "" {
		req.Owner = "agent"
	}
	in, err := r.Start(t.Context(), req)
	if err != nil {
		t.Fatalf("Start(%+v): %v", req, err)
	}
	return in
}

func waitDone(t *testing.T, r *Registry, id string) Info {
	t.Helper()
	in, done, err := r.Wait(t.Context(), id, 30*time.Second)
	if err != nil || !done {
		t.Fatalf("Wait(%s) = %+v, %v, %v", id, in, done, err)
	}
	return in
}

// events drains the consumer's queue (acknowledging it).
func drainEvents(t *testing.T, r *Registry, consumer string) []Event {
	t.Helper()
	evs, err := r.Events(t.Context(), consumer, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) > 0 {
		if err := r.Ack(consumer, evs[len(evs)-1].Seq); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

// waitEvent waits (bounded) for the next event of type typ for consumer,
// acknowledging everything before it.
func waitEvent(t *testing.T, r *Registry, consumer string, typ EventType) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		evs, err := r.Events(ctx, consumer, true)
		if err != nil {
			t.Fatalf("waiting for a %s event: %v", typ, err)
		}
		for _, ev := range evs {
			r.Ack(consumer, ev.Seq)
			if ev.Type == typ {
				return ev
			}
		}
	}
}

func ofType(evs []Event, typ EventType) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func logText(t *testing.T, r *Registry, id string) string {
	t.Helper()
	var b strings.Builder
	var off int64
	for {
		c, err := r.ReadLog(id, off, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(c.Data)
		if c.Next == off {
			return b.String()
		}
		off = c.Next
	}
}

// fakeClock is a Clock that moves only when Advance is called.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c   chan time.Time
	at  time.Time
	clk *fakeClock
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d), clk: c}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	for i, o := range t.clk.timers {
		if o == t {
			t.clk.timers = append(t.clk.timers[:i], t.clk.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// Pending is the number of armed timers.
func (c *fakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// runManager is the "__manager" part: a registry on the state dir in
// args[0] that starts the jobs described by the remaining arguments (one
// shell string each), prints their ids, and serves until killed.
func runManager(args []string) int {
	if len(args) < 1 {
		return 2
	}
	env, err := local.New(local.Options{Confine: confine.Off(), BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "GORACE=atexit_sleep_ms=0"}, Grace: local.NoGrace, NoContainment: true})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	exe, _ := os.Executable()
	r, err := Open(Options{Dir: args[0], Env: env, Supervisor: []string{exe, "__supervise"}, PollInterval: 10 * time.Millisecond})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	var ids []string
	for _, sh := range args[1:] {
		in, err := r.Start(context.Background(), StartRequest{Shell: sh, Owner: "agent", Notify: true, Lifetime: LifetimeDetached})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		ids = append(ids, in.ID)
	}
	fmt.Println(strings.Join(ids, " "))
	fmt.Println("ready")
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	<-ch
	r.Close()
	return 0
}

// jobDirs lists the job directories under a state dir.
func jobDirs(t *testing.T, state string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(state, "jobs", "*"))
	sort.Strings(m)
	return m
}
