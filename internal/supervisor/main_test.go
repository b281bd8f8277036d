package supervisor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/supervisor"
	"github.com/runbox/runbox/statedir"
)

// The test binary is also the supervisor: "__supervise" runs Main with
// the arguments that follow, as `runbox __supervise` does (the detached
// second stage comes back through here too).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__supervise" {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// jobDir makes a private job directory holding spec as job.json and an
// empty log, as the registry would.
func jobDir(t *testing.T, spec jobdir.Spec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "job")
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

// supervise runs the supervisor's first stage on dir and returns its
// exit code and output.
func supervise(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"__supervise"}, args...)...)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

// readWithin polls for the JSON record name in dir (bounded: a hang
// fails the test) and decodes it into v.
func readWithin(t *testing.T, dir, name string, v any) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := jobdir.ReadJSON(filepath.Join(dir, name), v)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %s", name, dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A bad invocation is a usage error, not a job.
func TestMain_Usage(t *testing.T) {
	for _, args := range [][]string{nil, {"a", "b", "c"}} {
		if code, out := supervise(t, args...); code != 2 {
			t.Errorf("__supervise %q = exit %d (%q); want 2", args, code, out)
		}
	}
}

// The supervisor runs the job's command with its output in the log,
// records who runs it, and records its exit — a signal as 128+n — after
// its first stage has returned.
func TestMain_RunsJobAndRecordsExit(t *testing.T) {
	tests := []struct {
		name    string
		spec    jobdir.Spec
		wantLog string
		want    envs.ExitStatus
	}{
		{name: "shell", spec: jobdir.Spec{ID: "j1", Shell: "echo out; echo err >&2; exit 3"}, wantLog: "out\nerr\n", want: envs.ExitStatus{Code: 3}},
		{name: "argv", spec: jobdir.Spec{ID: "j2", Args: []string{"echo", "a b"}}, wantLog: "a b\n", want: envs.ExitStatus{Code: 0}},
		{name: "signal", spec: jobdir.Spec{ID: "j3", Shell: "kill -TERM $$"}, want: envs.SignalStatus(15)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := jobDir(t, tt.spec)
			if code, out := supervise(t, dir); code != 0 {
				t.Fatalf("__supervise = exit %d (%q); want 0", code, out)
			}
			var pids jobdir.PIDRecord
			readWithin(t, dir, jobdir.FilePID, &pids)
			if pids.Command.PID == 0 || pids.Supervisor.PID == 0 {
				t.Errorf("pid.json = %+v; want the command and the supervisor", pids)
			}
			var exit jobdir.ExitRecord
			readWithin(t, dir, jobdir.FileExit, &exit)
			if exit.Status != tt.want {
				t.Errorf("exit status = %+v; want %+v", exit.Status, tt.want)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, jobdir.FileLog)); string(b) != tt.wantLog {
				t.Errorf("log = %q; want %q", b, tt.wantLog)
			}
		})
	}
}

// A command that cannot start is recorded as a start failure with the
// conventional code, and the first stage still succeeds: the registry
// reads the failure from the job directory.
func TestMain_StartFailureRecorded(t *testing.T) {
	dir := jobDir(t, jobdir.Spec{ID: "j4", Args: []string{"/nonexistent/program"}})
	if code, out := supervise(t, dir); code != 0 {
		t.Fatalf("__supervise = exit %d (%q); want 0", code, out)
	}
	var fail jobdir.FailRecord
	readWithin(t, dir, jobdir.FileStartFail, &fail)
	if fail.Status.Code != envs.ExitNotFound || fail.Error == "" {
		t.Errorf("startfail.json = %+v; want code %d with a reason", fail, envs.ExitNotFound)
	}
}
