package procregistry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/termination"
)

// countingShell prints lines "line 1" … "line n", pausing 0.1 s after
// every hundred (n=3000: about 3 s), then exits with code.
func countingShell(n, code int) string {
	return fmt.Sprintf(`for i in $(seq 1 %d); do echo "line $i"; case $((i %% 100)) in 0) sleep 0.1;; esac; done; exit %d`, n, code)
}

// countedLines is the whole output of countingShell(n, _).
func countedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// jobPIDs reads the job's pid.json.
func jobPIDs(t *testing.T, r *Registry, id string) pidRecord {
	t.Helper()
	var pids pidRecord
	if ok, err := readJSON(filepath.Join(r.opts.Dir, "jobs", id, filePID), &pids); !ok || err != nil {
		t.Fatalf("pid.json of %s: %v, %v", id, ok, err)
	}
	return pids
}

// killSupervisor SIGKILLs the job's supervisor and waits until it is gone.
// A supervisor host serves several jobs: it is killed once.
func killSupervisor(t *testing.T, r *Registry, id string) pidRecord {
	t.Helper()
	pids := jobPIDs(t, r, id)
	if pids.Host && !pids.Supervisor.Alive() {
		return pids // the host of another job killed already
	}
	if err := pids.Supervisor.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL the supervisor %v: %v", pids.Supervisor, err)
	}
	testwait.Within(t, 10*time.Second, "the supervisor gone", func() bool { return !pids.Supervisor.Alive() })
	return pids
}

// containerDirs lists the cgroup directories of the job's container.
func containerDirs(pids pidRecord) []string {
	if pids.Container == nil {
		return nil
	}
	var dirs []string
	if pids.Container.V2Dir != "" {
		dirs = append(dirs, pids.Container.V2Dir)
	}
	for _, d := range pids.Container.V1Dirs {
		dirs = append(dirs, d)
	}
	return dirs
}

// SIGKILL of a job's supervisor does not end the job: it stays running
// while it prints, every line reaches the log, its exit code is recorded
// (by its wrapper) and announced, and its cgroup is removed once it is
// gone. Breaks if a dead supervisor still means "lost", or if output
// passed through the supervisor.
func TestOrphan_SupervisorSIGKILLKeepsJob(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: countingShell(3000, 7), Notify: true})
	testwait.Within(t, 10*time.Second, "the first hundred lines", func() bool { return strings.Contains(logText(t, r, in.ID), "line 100\n") })
	pids := killSupervisor(t, r, in.ID)
	if pids.Wrapper.PID == 0 {
		t.Fatalf("pid.json names no wrapper: %+v", pids)
	}
	if _, err := os.Stat(filepath.Join(r.opts.Dir, "jobs", in.ID, fileExit)); err == nil {
		t.Fatal("the job ended before its supervisor was killed; the test proves nothing")
	}

	testwait.Within(t, 10*time.Second, "the registry to adopt the job", func() bool {
		got, _ := r.Get(in.ID)
		return strings.Contains(got.Warning, "supervisor died")
	})
	// Status first, then the log: a log still short of its last line
	// means the job was printing when the status was read.
	samples := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := r.Get(in.ID)
		if err != nil {
			t.Fatal(err)
		}
		text := logText(t, r, in.ID)
		if strings.HasSuffix(text, "line 3000\n") {
			break
		}
		if got.Status != StatusRunning {
			t.Fatalf("status %s while the job still prints (%d bytes so far): %+v", got.Status, len(text), got)
		}
		samples++
		if time.Now().After(deadline) {
			t.Fatal("the job never finished printing")
		}
		<-time.After(20 * time.Millisecond) // sampling interval, bounded by deadline
	}
	if samples == 0 {
		t.Fatal("never saw the job running after its supervisor died")
	}

	got := waitDone(t, r, in.ID)
	if got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 7 {
		t.Fatalf("after the job ended: %+v; want exited 7", got)
	}
	if s := logText(t, r, in.ID); s != countedLines(3000) {
		t.Errorf("log has %d bytes, want every line once (%d bytes)", len(s), len(countedLines(3000)))
	}
	ev := waitEvent(t, r, "agent", EventCompletion)
	if ev.Job != in.ID || ev.Reason != ReasonExited || ev.Exit == nil || ev.Exit.Code != 7 {
		t.Errorf("completion = %+v", ev)
	}
	for _, d := range containerDirs(pids) {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s outlived the job", d)
		}
	}
	for _, p := range []termination.Proc{pids.Wrapper, pids.Command} {
		if p.Alive() {
			t.Errorf("%v still alive", p)
		}
	}
}

// A terminal job lives on too: its terminal is held by its copier, not
// its supervisor, so the command gets no hangup, its output reaches the
// log, and its exit code is recorded.
func TestOrphan_PTYJobRunsOn(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: countingShell(1000, 4), PTY: &envs.WindowSize{Rows: 24, Cols: 80}, Notify: true})
	testwait.Within(t, 10*time.Second, "the first hundred lines", func() bool { return strings.Contains(logText(t, r, in.ID), "line 100\r\n") })
	pids := killSupervisor(t, r, in.ID)
	if pids.Copier.PID == 0 {
		t.Fatalf("pid.json names no copier: %+v", pids)
	}
	got := waitDone(t, r, in.ID)
	if got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 4 {
		t.Fatalf("after the job ended: %+v; want exited 4", got)
	}
	if s := strings.ReplaceAll(logText(t, r, in.ID), "\r\n", "\n"); s != countedLines(1000) {
		t.Errorf("log has %d bytes; want every line once (%d bytes)", len(s), len(countedLines(1000)))
	}
	if pids.Copier.Alive() {
		t.Error("the copier outlived the job")
	}
}

// An adopted job is killed like any other: the whole tree goes, the job
// is killed (by the exit code its wrapper recorded, or, when the kill
// went straight to SIGKILL and took the wrapper with it, by that SIGKILL),
// and kill answers already exited afterwards.
func TestOrphan_Kill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{
		{"grace", 200 * time.Millisecond},
		{"no grace", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, "", func(o *Options) { o.Grace = tc.grace })
			in := start(t, r, StartRequest{Shell: "sleep 60 & exec sleep 61", Notify: true})
			pids := killSupervisor(t, r, in.ID)
			if got, _ := r.Get(in.ID); got.Status != StatusRunning {
				t.Fatalf("after the supervisor died: %+v; want running", got)
			}
			testwait.Within(t, 10*time.Second, "the registry to adopt the job", func() bool {
				got, _ := r.Get(in.ID)
				return strings.Contains(got.Warning, "supervisor died")
			})
			if err := r.Write(t.Context(), in.ID, []byte("x")); err == nil {
				t.Error("a write to a job whose supervisor died succeeded")
			}
			res, err := r.Kill(t.Context(), in.ID)
			if err != nil || res.Outcome != KillKilled || res.Info.Status != StatusKilled || res.Info.Exit == nil || res.Info.Exit.Code <= 128 {
				t.Fatalf("Kill = %+v, %v", res, err)
			}
			if pids.Command.Alive() || pids.Wrapper.Alive() {
				t.Errorf("survivors: command alive %v, wrapper alive %v", pids.Command.Alive(), pids.Wrapper.Alive())
			}
			if res, err := r.Kill(t.Context(), in.ID); err != nil || res.Outcome != KillAlreadyExited {
				t.Errorf("second Kill = %+v, %v; want already exited", res, err)
			}
			if ev := waitEvent(t, r, "agent", EventCompletion); ev.Reason != ReasonKilled {
				t.Errorf("completion = %+v", ev)
			}
			for _, d := range containerDirs(pids) {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("cgroup %s outlived the kill", d)
				}
			}
		})
	}
}

// With the wrapper killed too, nobody can learn the exit code; the job
// still runs as long as its command does, and is lost only once it is
// gone, with a reason that says why.
func TestOrphan_WrapperKilledLostWhenGone(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "exec sleep 60", Notify: true})
	pids := killSupervisor(t, r, in.ID)
	if err := pids.Wrapper.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "the wrapper gone", func() bool { return !pids.Wrapper.Alive() })
	if got, _ := r.Get(in.ID); got.Status != StatusRunning {
		t.Fatalf("with its command alive: %+v; want running", got)
	}
	if err := pids.Command.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, r, in.ID)
	if got.Status != StatusLost || got.Exit != nil || got.Error != lostOrphan {
		t.Fatalf("after the command ended: %+v; want lost (%q)", got, lostOrphan)
	}
	if ev := waitEvent(t, r, "agent", EventCompletion); ev.Reason != ReasonLost || ev.Message != lostOrphan {
		t.Errorf("completion = %+v", ev)
	}
	for _, d := range containerDirs(pids) {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s outlived the job", d)
		}
	}
}

// A job whose supervisor died, and which ended while no registry ran,
// is found exited with its code by the next registry; one that still
// runs is adopted and its exit learned when it ends.
func TestOrphan_Recovery(t *testing.T) {
	dir := t.TempDir()
	r1 := newTestRegistry(t, dir, nil)
	done := start(t, r1, StartRequest{Shell: "sleep 1; echo bye; exit 3", Notify: true})
	runs := start(t, r1, StartRequest{Shell: countingShell(300, 5), Notify: true})
	r1.Close()
	pDone := killSupervisor(t, r1, done.ID)
	killSupervisor(t, r1, runs.ID)
	testwait.Within(t, 30*time.Second, "the first job ended", func() bool { return !pDone.Wrapper.Alive() })
	if _, err := os.Stat(filepath.Join(dir, "jobs", done.ID, fileExit)); err == nil {
		t.Fatal("the supervisor recorded the exit before it was killed; the test proves nothing")
	}

	r2 := newTestRegistry(t, dir, nil)
	got, err := r2.Get(done.ID)
	if err != nil || got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 3 || !strings.Contains(got.Warning, "wrapper") {
		t.Errorf("job that ended meanwhile: %+v, %v; want exited 3", got, err)
	}
	if s := logText(t, r2, done.ID); s != "bye\n" {
		t.Errorf("log = %q", s)
	}
	got = waitDone(t, r2, runs.ID)
	if got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 5 {
		t.Errorf("job adopted at recovery: %+v; want exited 5", got)
	}
	if s := logText(t, r2, runs.ID); s != countedLines(300) {
		t.Errorf("log of the adopted job has %d bytes; want %d", len(s), len(countedLines(300)))
	}
	for _, d := range containerDirs(pDone) {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s outlived the job", d)
		}
	}
}
