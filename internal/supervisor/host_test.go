package supervisor_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/statedir"
)

// stateDir makes a private state directory with the jobs and host
// directories the registry would make.
func stateDir(t *testing.T) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	for _, d := range []string{state, filepath.Join(state, "jobs"), filepath.Join(state, jobdir.HostDir)} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// startHost starts the host of state and stops it (SIGKILL: its jobs have
// ended) when the test ends.
func startHost(t *testing.T, state string) {
	t.Helper()
	if code, out := supervise(t, "-host", state); code != 0 {
		t.Fatalf("__supervise -host = exit %d (%q)", code, out)
	}
	t.Cleanup(func() {
		var pids jobdir.PIDRecord
		for _, d := range must(filepath.Glob(filepath.Join(state, "jobs", "*"))) {
			if ok, _ := jobdir.ReadJSON(filepath.Join(d, jobdir.FilePID), &pids); ok && pids.Host {
				pids.Supervisor.Signal(9)
				return
			}
		}
	})
}

func must[T any](v T, _ error) T { return v }

// newJob makes the directory of job spec in state, as the registry would.
func newJob(t *testing.T, state string, spec jobdir.Spec) string {
	t.Helper()
	dir := filepath.Join(state, "jobs", spec.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := jobdir.WriteJSON(filepath.Join(dir, jobdir.FileJob), spec); err != nil {
		t.Fatal(err)
	}
	f, err := statedir.OpenFile(filepath.Join(dir, jobdir.FileLog), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

// hostedJob runs the first stage of a new job and returns its pid.json,
// which must name the host (the test is skipped where the job gets no
// container, and so no host).
func hostedJob(t *testing.T, state string, spec jobdir.Spec) (string, jobdir.PIDRecord) {
	t.Helper()
	dir := newJob(t, state, spec)
	if code, out := supervise(t, dir); code != 0 {
		t.Fatalf("job %s: __supervise = exit %d (%q)", spec.ID, code, out)
	}
	var pids jobdir.PIDRecord
	readWithin(t, dir, jobdir.FilePID, &pids)
	if pids.Container == nil {
		integration.Skip(t, "no container here, so no host: %s", pids.Warning)
	}
	if !pids.Host {
		hl, _ := os.ReadFile(filepath.Join(state, jobdir.HostDir, jobdir.HostLog))
		t.Fatalf("job %s: pid.json = %+v; want the host\nhost.log: %s", spec.ID, pids, hl)
	}
	return dir, pids
}

// A job whose first stage finds the host is supervised by it: pid.json
// names the host, and the job's output and exit are recorded as by a
// supervisor of its own. A second host for the same directory defers to
// the first, which supervises the next job too.
func TestHost_SupervisesJobs(t *testing.T) {
	state := stateDir(t)
	startHost(t, state)
	longDir, long := hostedJob(t, state, jobdir.Spec{ID: "h1", Args: []string{"sleep", "60"}})
	startHost(t, state) // busy: the first one serves
	dir, pids := hostedJob(t, state, jobdir.Spec{ID: "h2", Shell: "echo out; exit 3"})
	if pids.Supervisor != long.Supervisor {
		t.Errorf("two hosts (%v, %v) for one state directory", long.Supervisor, pids.Supervisor)
	}
	var exit jobdir.ExitRecord
	readWithin(t, dir, jobdir.FileExit, &exit)
	if exit.Status != (envs.ExitStatus{Code: 3}) {
		t.Errorf("exit %+v; want code 3", exit.Status)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, jobdir.FileLog)); string(b) != "out\n" {
		t.Errorf("log %q", b)
	}
	if err := long.Command.Signal(15); err != nil {
		t.Fatal(err)
	}
	readWithin(t, longDir, jobdir.FileExit, &exit)
	if exit.Status != envs.SignalStatus(15) {
		t.Errorf("exit of the long job %+v; want SIGTERM", exit.Status)
	}
}

// The host supervises only job directories of its own state directory:
// a request naming any other directory is refused, and nothing runs.
func TestHost_RefusesForeignDirectory(t *testing.T) {
	state := stateDir(t)
	startHost(t, state)
	foreign := t.TempDir()
	marker := filepath.Join(foreign, "ran")
	for _, dir := range []string{foreign, filepath.Join(state, "jobs"), filepath.Join(state, "jobs", "..", "..", filepath.Base(foreign))} {
		c, err := net.Dial("unix", jobdir.HostSocketOf(state))
		if err != nil {
			t.Fatal(err)
		}
		req := jobdir.HostRequest{Dir: dir, Path: "/bin/sh", Argv: []string{"sh", "-c", "touch " + marker}, Env: []string{}}
		json.NewEncoder(c).Encode(req)
		var resp jobdir.HostResponse
		err = json.NewDecoder(c).Decode(&resp)
		c.Close()
		if err != nil || resp.OK || resp.Error == "" || !strings.Contains(resp.Error, "not a job directory") {
			t.Errorf("request for %s: %+v, %v; want refused", dir, resp, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a refused request ran its command")
	}
}
