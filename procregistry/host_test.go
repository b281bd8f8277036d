package procregistry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/termination"
)

// requireHost skips (fails under RUNBOX_INTEGRATION=require) when the
// job was not given to the supervisor host: without a container the host
// hands jobs back to supervisors of their own.
func requireHost(t *testing.T, r *Registry, in Info) pidRecord {
	t.Helper()
	requireContainer(t, in)
	pids := jobPIDs(t, r, in.ID)
	if !pids.Host {
		t.Fatalf("a contained job was not supervised by the host: %+v", pids)
	}
	return pids
}

// Jobs are supervised by one host process, not one process each: the
// idle cost of a job is its wrapper and a share of the host. With
// SupervisorPerJob every job has a supervisor of its own again.
func TestHost_OneProcessForManyJobs(t *testing.T) {
	tests := []struct {
		name    string
		perJob  bool
		wantSup int // distinct supervisor PIDs for three jobs
	}{
		{name: "host", wantSup: 1},
		{name: "per-job", perJob: true, wantSup: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRegistry(t, "", func(o *Options) { o.SupervisorPerJob = tt.perJob })
			sups := map[int]bool{}
			for i := range 3 {
				in := start(t, r, StartRequest{Shell: fmt.Sprintf("read x; echo got-%d $x", i)})
				requireContainer(t, in)
				if in.Status != StatusRunning {
					t.Fatalf("job %d: %+v", i, in)
				}
				pids := jobPIDs(t, r, in.ID)
				if pids.Host == tt.perJob {
					t.Errorf("job %d: pid.json host=%v; want %v", i, pids.Host, !tt.perJob)
				}
				sups[in.SupervisorPID] = true
				// stdin still goes through the supervisor.
				if err := r.Submit(t.Context(), in.ID, "line"); err != nil {
					t.Fatal(err)
				}
				got := waitDone(t, r, in.ID)
				if got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 0 {
					t.Errorf("job %d: %+v", i, got)
				}
				if s := logText(t, r, in.ID); s != fmt.Sprintf("got-%d line\n", i) {
					t.Errorf("job %d: log %q", i, s)
				}
				if i < 2 {
					// Keep the host busy so that the next job finds it.
					defer r.Kill(t.Context(), start(t, r, StartRequest{Shell: "exec sleep 60"}).ID)
				}
			}
			if len(sups) != tt.wantSup {
				t.Errorf("%d distinct supervisors for 3 jobs (%v); want %d", len(sups), sups, tt.wantSup)
			}
		})
	}
}

// A hundred idle jobs, then the host that supervises them all is
// SIGKILLed: every job runs on (adopted by the registry), its output is
// complete, its own exit code is recorded, and nothing is left behind.
// The jobs wait on stdin, which the host held: its death is their EOF.
func TestHost_SIGKILLKeepsEveryJob(t *testing.T) {
	const n = 100
	r := newTestRegistry(t, "", nil)
	ids := make([]string, n)
	var host termination.Proc
	for i := range n {
		sh := fmt.Sprintf("echo start-%d; read x; sleep 1; echo end-%d; exit %d", i, i, 1+i%50)
		in := start(t, r, StartRequest{Shell: sh, Notify: true})
		if in.Status != StatusRunning {
			t.Fatalf("job %d: %+v", i, in)
		}
		pids := requireHost(t, r, in)
		if i == 0 {
			host = pids.Supervisor
		} else if pids.Supervisor != host {
			t.Fatalf("job %d has supervisor %v; job 0 has %v: not one host", i, pids.Supervisor, host)
		}
		ids[i] = in.ID
	}
	for i, id := range ids {
		testwait.Within(t, 20*time.Second, fmt.Sprintf("job %d started", i), func() bool {
			return strings.Contains(logText(t, r, id), fmt.Sprintf("start-%d\n", i))
		})
	}
	all := make([]pidRecord, n)
	for i, id := range ids {
		all[i] = jobPIDs(t, r, id)
	}
	if err := host.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "the host gone", func() bool { return !host.Alive() })
	// Each job sleeps a second after its EOF: still running, adopted.
	adopted := 0
	for _, id := range ids {
		if got, _ := r.Get(id); got.Status == StatusRunning {
			adopted++
		}
	}
	if adopted == 0 {
		t.Fatal("no job was still running after the host died")
	}
	for i, id := range ids {
		got := waitDone(t, r, id)
		if got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 1+i%50 {
			t.Errorf("job %d: %+v; want exited %d", i, got, 1+i%50)
		}
		if s, want := logText(t, r, id), fmt.Sprintf("start-%d\nend-%d\n", i, i); s != want {
			t.Errorf("job %d: log %q; want %q", i, s, want)
		}
	}
	for i, pids := range all {
		for _, p := range []termination.Proc{pids.Wrapper, pids.Command} {
			if p.Alive() {
				t.Errorf("job %d: %v still alive", i, p)
			}
		}
		for _, d := range containerDirs(pids) {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("job %d: cgroup %s outlived the job", i, d)
			}
		}
	}
	// A new job gets a new host.
	in := start(t, r, StartRequest{Shell: "exit 4"})
	if pids := requireHost(t, r, in); pids.Supervisor == host {
		t.Errorf("the new job names the dead host %v", host)
	}
	if got := waitDone(t, r, in.ID); got.Exit == nil || got.Exit.Code != 4 {
		t.Errorf("job after the host's death: %+v", got)
	}
}

// Killing one of a host's jobs tears down its whole tree, a child that
// double-forked and called setsid included, and nothing of the host's
// other jobs.
func TestHost_KillTreeSetsidChild(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	sh, tag := escapeeShell("sleep 783")
	victim := start(t, r, StartRequest{Shell: sh})
	vp := requireHost(t, r, victim)
	other := start(t, r, StartRequest{Shell: "exec sleep 60"})
	op := requireHost(t, r, other)
	if vp.Supervisor != op.Supervisor {
		t.Fatalf("two jobs, two supervisors (%v, %v): not one host", vp.Supervisor, op.Supervisor)
	}
	esc := waitEscapee(t, tag)
	res, err := r.Kill(t.Context(), victim.ID)
	if err != nil || res.Outcome != KillKilled || res.Info.Status != StatusKilled {
		t.Fatalf("Kill = %+v, %v", res, err)
	}
	if esc.Alive() {
		t.Fatalf("the setsid'd %v survived the kill", esc)
	}
	assertContainerGone(t, vp.Container)
	if !op.Supervisor.Alive() || !op.Command.Alive() {
		t.Fatalf("the kill of one job took the host or another job down: host %v, other %v", op.Supervisor.Alive(), op.Command.Alive())
	}
	if got, _ := r.Get(other.ID); got.Status != StatusRunning {
		t.Errorf("other job: %+v", got)
	}
}

// With no job left, the host exits by itself (after a short linger),
// leaving no process behind.
func TestHost_ExitsWhenIdle(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "exit 0"})
	pids := requireHost(t, r, in)
	waitDone(t, r, in.ID)
	testwait.Within(t, 30*time.Second, "the idle host gone", func() bool { return !pids.Supervisor.Alive() })
	if _, err := os.Lstat(filepath.Join(r.opts.Dir, "host", "host.sock")); err == nil {
		t.Error("the host's socket outlived it")
	}
}

// The host starts a job with the environment and working directory the
// backend gave its first stage, and a value of that environment shows on
// no argv and in no environ of the host: only in the job's own.
func TestHost_JobEnvironmentAndDirOnlyInTheJob(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	cwd := t.TempDir()
	value := fmt.Sprintf("value-%d-only-for-the-job", time.Now().UnixNano())
	in := start(t, r, StartRequest{Shell: `echo "$JOB_ONLY"; pwd; exec sleep 60`, Env: map[string]string{"JOB_ONLY": value}, Dir: cwd})
	pids := requireHost(t, r, in)
	want := value + "\n" + cwd + "\n"
	testwait.Within(t, 10*time.Second, "the job's output", func() bool { return logText(t, r, in.ID) == want })
	read := func(p termination.Proc, f string) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.PID, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if !strings.Contains(read(pids.Command, "environ"), "JOB_ONLY="+value) {
		t.Error("the job's own environ lacks its variable; the test proves nothing")
	}
	for _, f := range []string{"environ", "cmdline"} {
		if strings.Contains(read(pids.Supervisor, f), value) {
			t.Errorf("the host's %s holds the job's value", f)
		}
	}
	if strings.Contains(read(pids.Wrapper, "cmdline"), value) {
		t.Errorf("the wrapper's cmdline holds the job's value")
	}
}

// The wrapper of a hosted job SIGKILLed under a command that runs on:
// the job is not over while its command runs, and when it ends its exit
// says that the command's own status is unknown.
func TestHost_WrapperKilledJobRunsOn(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "exec sleep 60"})
	pids := requireHost(t, r, in)
	if err := pids.Wrapper.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "the wrapper reaped", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pids.Wrapper.PID))
		return err != nil
	})
	if got, _ := r.Get(in.ID); got.Status != StatusRunning || !pids.Command.Alive() {
		t.Fatalf("with its command alive: %+v; want running", got)
	}
	if err := pids.Command.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, r, in.ID)
	if got.Exit == nil || !strings.Contains(got.Warning, "unknown") {
		t.Errorf("after the command ended: %+v; want an exit that says the status is unknown", got)
	}
	if !pids.Supervisor.Alive() {
		t.Error("the host died")
	}
}
