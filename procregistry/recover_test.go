package procregistry

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/termination"
)

// The manager (a real process running a registry) is SIGKILLed while
// jobs run. A new registry on the same state dir lists every job again,
// has their complete logs, learns their exit when they end, and can
// still kill them — including, through the job's container reopened from
// pid.json, a grandchild that double-forked out of the job's session.
// Breaks if any of that depends on the manager living.
func TestRecover_ManagerSIGKILL(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	escapee, tag := escapeeShell("sleep 783")
	mgr := exec.Command(exe, "__manager", dir,
		`echo before; read x; echo "after $x"; exit 7`,
		`echo sleeper; exec sleep 60`,
		escapee)
	mgr.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	mgr.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := mgr.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	mgr.Stderr = os.Stderr
	if err := mgr.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var ids []string
	for sc.Scan() && sc.Text() != "ready" {
		if strings.HasPrefix(sc.Text(), "error") {
			t.Fatal(sc.Text())
		}
		ids = strings.Fields(sc.Text())
	}
	if len(ids) != 3 {
		t.Fatalf("manager printed ids %v", ids)
	}
	mgr.Process.Signal(syscall.SIGKILL)
	mgr.Wait()

	r := newTestRegistry(t, dir, nil)
	list := r.List("")
	if len(list) != 3 {
		t.Fatalf("after restart List = %+v", list)
	}
	for _, in := range list {
		if in.Status != StatusRunning {
			t.Errorf("job %s: %s; want running", in.ID, in.Status)
		}
	}
	testwait.Within(t, 10*time.Second, "first output", func() bool { return logText(t, r, ids[0]) == "before\n" })
	if err := r.Submit(t.Context(), ids[0], "restart"); err != nil {
		t.Fatal(err)
	}
	in := waitDone(t, r, ids[0])
	if in.Status != StatusExited || in.Exit.Code != 7 {
		t.Errorf("job after restart ended %+v", in)
	}
	if s := logText(t, r, ids[0]); s != "before\nafter restart\n" {
		t.Errorf("log = %q", s)
	}
	ev := waitEvent(t, r, "agent", EventCompletion)
	if ev.Job != ids[0] || ev.Exit.Code != 7 {
		t.Errorf("completion = %+v", ev)
	}
	res, err := r.Kill(t.Context(), ids[1])
	if err != nil || res.Outcome != KillKilled {
		t.Errorf("kill after restart = %+v, %v", res, err)
	}

	in, err = r.Get(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	requireContainer(t, in)
	esc := waitEscapee(t, tag)
	res, err = r.Kill(t.Context(), ids[2])
	if err != nil || res.Outcome != KillKilled {
		t.Errorf("kill of the contained job after restart = %+v, %v", res, err)
	}
	if esc.Alive() {
		t.Errorf("the escaped grandchild %v survived the kill after restart", esc)
	}
}

// A job record whose PIDs now name other programs (same PID, another
// start time) is reported lost at recovery, and kill signals nothing.
func TestRecover_PIDReuseNeverSignalled(t *testing.T) {
	dir := t.TempDir()
	// A bystander: the PID the stale record will name.
	by := exec.Command("sleep", "60")
	by.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := by.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { by.Process.Kill(); by.Wait() })
	real, err := termination.Identify(by.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale := termination.Proc{PID: real.PID, StartTime: real.StartTime - 1}
	id := "0123456789ab"
	jd := filepath.Join(dir, "jobs", id)
	os.MkdirAll(jd, 0o700)
	writeJSON(filepath.Join(jd, fileJob), record{Spec: jobdir.Spec{ID: id, Shell: "sleep 60"}, Owner: "agent", Notify: true, Created: time.Now()})
	os.WriteFile(filepath.Join(jd, fileLog), []byte("old output\n"), 0o600)
	writeJSON(filepath.Join(jd, filePID), pidRecord{Supervisor: stale, Command: stale, Started: time.Now()})

	r := newTestRegistry(t, dir, nil)
	in, err := r.Get(id)
	if err != nil || in.Status != StatusLost {
		t.Fatalf("recovered job: %+v, %v; want lost", in, err)
	}
	res, err := r.Kill(t.Context(), id)
	if err != nil || res.Outcome != KillLost {
		t.Errorf("Kill = %+v, %v; want lost", res, err)
	}
	if !real.Alive() {
		t.Fatal("the bystander with the recycled PID was signalled")
	}
	ev := waitEvent(t, r, "agent", EventCompletion)
	if ev.Reason != ReasonLost || ev.Tail != "old output\n" {
		t.Errorf("completion = %+v", ev)
	}
}

// Finished jobs are kept for the retention time and up to a count.
func TestRecover_Retention(t *testing.T) {
	clk := newFakeClock()
	r := newTestRegistry(t, "", func(o *Options) {
		o.Clock = clk
		o.Retention = time.Hour
		o.MaxFinished = 2
		o.Watch.Window = time.Minute
	})
	for range 3 {
		waitDone(t, r, start(t, r, StartRequest{Shell: "true"}).ID)
	}
	running := start(t, r, StartRequest{Shell: "sleep 60"})
	testwait.Within(t, 10*time.Second, "sweeper timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Minute)
	testwait.Within(t, 10*time.Second, "count limit", func() bool { return len(r.List("")) == 3 })
	testwait.Within(t, 10*time.Second, "sweeper timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(2 * time.Hour)
	testwait.Within(t, 10*time.Second, "time limit", func() bool { return len(r.List("")) == 1 })
	if l := r.List(""); l[0].ID != running.ID {
		t.Errorf("kept %+v; want the running job only", l)
	}
	// The sweeper forgets a job, then removes its directory.
	testwait.Within(t, 10*time.Second, "one job directory left", func() bool { return len(jobDirs(t, r.opts.Dir)) == 1 })
}
