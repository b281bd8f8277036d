package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testtree"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/undo"
)

// jobSession is a local session that records changes in the workspace
// dir, with its jobs in a real job daemon.
type jobSession struct {
	svc  *service.Service
	ss   *service.Session
	jobs *service.OwnedJobs
	dir  string
}

func newJobSession(t *testing.T) *jobSession {
	t.Helper()
	state := t.TempDir()
	cfg := config.Default()
	cfg.Sandbox.Profile = "off"
	svc := newServiceWith(t, service.Options{Config: cfg, Getenv: func(k string) string {
		if k == "RUNBOX_STATE_DIR" {
			return state
		}
		return ""
	}})
	dir := t.TempDir()
	ss, err := svc.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: dir}, RecordChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	js := &jobSession{svc: svc, ss: ss, jobs: ss.Jobs(localJobDaemon(t), service.OwnedJobsOptions{HostAccess: true}), dir: dir}
	t.Cleanup(func() {
		js.jobs.End(context.Background())
		ss.Close(context.Background())
	})
	return js
}

// start starts shell as the session's job in its workspace.
func (js *jobSession) start(t *testing.T, shell string) procregistry.Info {
	t.Helper()
	in, err := js.jobs.Start(t.Context(), procregistry.StartRequest{Shell: shell, Dir: js.dir})
	if err != nil || in.Status == procregistry.StatusFailed {
		t.Fatalf("Start(%q) = %+v, %v", shell, in, err)
	}
	return in
}

// wait waits for the job's end and returns its change record.
func (js *jobSession) wait(t *testing.T, id string) *undo.Record {
	t.Helper()
	in, done, err := js.jobs.Wait(t.Context(), id, time.Minute)
	if err != nil || !done {
		t.Fatalf("Wait(%s) = %+v, done %v, %v", id, in, done, err)
	}
	rec, warns := js.jobs.Changes(t.Context(), in)
	if rec == nil || len(warns) > 0 {
		t.Fatalf("Changes(%s) = %+v, warnings %q; want a record", id, rec, warns)
	}
	return rec
}

// seed fills dir with a few files, a directory and a link.
func seed(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three\n", "sub/d.txt": "four\n", "orig.txt": "keep me\n"}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return testtree.State(t, dir)
}

func sameTree(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	testtree.Same(t, "after undo", want, testtree.State(t, dir))
}

// TestSession_JobChangesUndo: a background job's writes, deletions and
// renames are its own step, its record says so once it ended, and undo
// puts the workspace back byte for byte. Without the job's step they
// would be nobody's, or blamed on the next foreground command.
func TestSession_JobChangesUndo(t *testing.T) {
	js := newJobSession(t)
	before := seed(t, js.dir)
	in := js.start(t, "printf new > a.txt; rm b.txt; mv c.txt renamed.txt; echo x > sub/new.txt; chmod 600 sub/d.txt")
	rec := js.wait(t, in.ID)
	if rec.Step == 0 || len(rec.Changes) < 5 {
		t.Errorf("job record = %+v; want its five changes and its step", rec)
	}
	steps, err := js.ss.ChangeSteps(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	label := "job " + in.ID + ": "
	if len(steps) != 1 || len(steps[0].Commands) != 1 || !strings.HasPrefix(steps[0].Commands[0], label) {
		t.Errorf("steps = %+v; want one, labelled %q and the command", steps, label)
	}
	done, err := js.ss.Undo(t.Context(), undo.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Commands) != 1 || !strings.HasPrefix(done.Commands[0], label) {
		t.Errorf("Undo undid %q; want the job", done.Commands)
	}
	sameTree(t, js.dir, before)
}

// TestSession_JobChangesOverlap: a foreground command that runs while a
// job runs shares its steps; each record names the other, undoing from
// the job's step reverts both and names both, and an edit made outside
// any command to a path the job wrote makes undo refuse until forced.
func TestSession_JobChangesOverlap(t *testing.T) {
	js := newJobSession(t)
	before := seed(t, js.dir)
	// The job waits for the foreground command's go file, so their runs
	// overlap whatever the scheduling.
	in := js.start(t, "printf j1 > j.txt; while [ ! -e go ]; do sleep 0.02; done; printf j2 >> j.txt; rm go a.txt")
	res, err := js.ss.Run(t.Context(), envs.Command{Shell: "printf f > f.txt; rm b.txt; touch go", Dir: js.dir})
	if err != nil || res.Code != 0 {
		t.Fatalf("foreground: %+v, %v", res, err)
	}
	rec := js.wait(t, in.ID)
	if res.Changes == nil || !slices.ContainsFunc(res.Changes.Concurrent, func(l string) bool { return strings.Contains(l, in.ID) }) {
		t.Errorf("foreground record = %+v; want the job among Concurrent", res.Changes)
	}
	if !slices.ContainsFunc(rec.Concurrent, func(l string) bool { return strings.Contains(l, "touch go") }) {
		t.Errorf("job record's Concurrent = %q; want the foreground command", rec.Concurrent)
	}
	// The user edits a file the job wrote: undoing the job would throw
	// the edit away, so undo refuses, naming it.
	if err := os.WriteFile(filepath.Join(js.dir, "j.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *undo.ConflictError
	if _, err := js.ss.Undo(t.Context(), undo.UndoOptions{To: rec.Step}); !errors.As(err, &ce) || !slices.Contains(ce.Paths, "j.txt") {
		t.Fatalf("Undo over the user's edit = %v; want a conflict on j.txt", err)
	}
	done, err := js.ss.Undo(t.Context(), undo.UndoOptions{To: rec.Step, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{in.ID, "touch go"} {
		if !slices.ContainsFunc(done.Commands, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("Undo undid %q; want %q among them", done.Commands, want)
		}
	}
	sameTree(t, js.dir, before)
}

// TestSession_JobChangesKilled: a job killed midway has its step closed
// by the kill, and undo removes what it did before it died.
func TestSession_JobChangesKilled(t *testing.T) {
	js := newJobSession(t)
	before := seed(t, js.dir)
	in := js.start(t, "printf k > k.txt; rm orig.txt; mkdir -p made/deep; touch started; exec sleep 600")
	awaitFile(t, filepath.Join(js.dir, "started"))
	kr, err := js.jobs.Kill(t.Context(), in.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := js.jobs.Changes(t.Context(), kr.Info)
	if rec == nil || rec.Step == 0 {
		t.Fatalf("killed job's record = %+v (status %s); want its changes", rec, kr.Info.Status)
	}
	if _, err := js.ss.Undo(t.Context(), undo.UndoOptions{To: rec.Step}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, js.dir, before)
}

// TestSession_JobChangesClose: a job still running when its session
// closes has its step closed by the close (its waiter stops; goleak in
// TestMain checks it), and the step stays in the workspace's journal.
func TestSession_JobChangesClose(t *testing.T) {
	js := newJobSession(t)
	seed(t, js.dir)
	in, err := js.jobs.Start(t.Context(), procregistry.StartRequest{
		Shell: "printf d > d.txt; touch started; exec sleep 600", Dir: js.dir, Lifetime: procregistry.LifetimeDetached,
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitFile(t, filepath.Join(js.dir, "started"))
	steps, err := js.ss.ChangeSteps(t.Context())
	if err != nil || len(steps) != 0 {
		t.Fatalf("steps while the job runs = %+v, %v; want none yet", steps, err)
	}
	// The journal is the workspace's: read it as the close left it.
	if err := js.ss.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	js.jobs.Kill(t.Context(), in.ID)
	j, err := js.svc.HostJournal(js.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	steps, err = j.Steps(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || len(steps[0].Commands) != 1 || !strings.Contains(steps[0].Commands[0], in.ID) {
		t.Errorf("steps after close = %+v; want the job's", steps)
	}
}

// awaitFile waits, bounded, for a job to create path.
func awaitFile(t *testing.T, path string) {
	t.Helper()
	testwait.Until(t, path, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}
