package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// TestIdleTasks: the reaper removes only tasks whose last use is known,
// older than the age, and in which nothing runs. A reaper that took an
// unknown last use for "never used" would remove every modal or daytona
// task it ever learned to list; one that ignored Busy would remove a
// container a session is running in.
func TestIdleTasks(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name string
		task service.TaskInfo
		idle bool
	}{
		{"unused longer than the age", service.TaskInfo{LastUsed: now.Add(-3 * day)}, true},
		{"unused exactly the age", service.TaskInfo{LastUsed: now.Add(-2 * day)}, true},
		{"used within the age", service.TaskInfo{LastUsed: now.Add(-day)}, false},
		{"last use unknown", service.TaskInfo{Created: now.Add(-30 * day)}, false},
		{"old but busy", service.TaskInfo{LastUsed: now.Add(-30 * day), Busy: "2 processes"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.task.Name, tc.task.Backend = "t", "docker"
			got := service.IdleTasks([]service.TaskInfo{tc.task}, 2*day, now)
			if (len(got) == 1) != tc.idle {
				t.Errorf("IdleTasks(%+v, 48h) = %v; want idle %v", tc.task, got, tc.idle)
			}
		})
	}
}

// TestTasks_BackendsAndRefusals: every backend that keeps tasks has a row
// in the listing (a backend runbox cannot list says why), and removal
// refuses what it cannot do instead of claiming success.
func TestTasks_BackendsAndRefusals(t *testing.T) {
	s := newService(t, config.Default())
	list := s.Tasks(t.Context())
	seen := map[string]service.TaskBackend{}
	for _, b := range list.Backends {
		seen[b.Backend] = b
	}
	for _, name := range []string{"docker", "modal", "daytona", "ssh"} {
		b, ok := seen[name]
		if !ok {
			t.Errorf("no row for backend %s in %+v", name, list.Backends)
			continue
		}
		if b.State != service.TasksListed && b.Detail == "" {
			t.Errorf("backend %s is %s with no reason", name, b.State)
		}
	}
	for _, tc := range []struct {
		task, backend string
		want          error
	}{
		{"", "", envs.ErrBadCommand},
		{"x", "ssh", envs.ErrUnsupported},
		{"x", "nowhere", envs.ErrBadCommand},
	} {
		if _, err := s.RemoveTask(t.Context(), tc.task, tc.backend); !errors.Is(err, tc.want) {
			t.Errorf("RemoveTask(%q, %q) = %v; want %v", tc.task, tc.backend, err, tc.want)
		}
	}
	if _, err := s.ReapTasks(t.Context(), 0); !errors.Is(err, envs.ErrBadCommand) {
		t.Errorf("ReapTasks(0) = %v; want a refusal", err)
	}
}

// TestTaskReaper_OffWithoutMaxIdle: with tasks.max_idle unset the reaper
// returns at once and removes nothing; with it set it runs until its
// context ends (its owner stops it).
func TestTaskReaper_OffWithoutMaxIdle(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		newService(t, config.Default()).TaskReaper(t.Context(), time.Hour)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("TaskReaper with no max_idle did not return")
	}

	cfg := config.Default()
	// An age no task on this machine reaches: the reaper runs and keeps
	// everything.
	cfg.Tasks.MaxIdle = config.Duration(100 * 365 * 24 * time.Hour)
	s := newService(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done = make(chan struct{})
	go func() {
		defer close(done)
		s.TaskReaper(ctx, time.Hour)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("TaskReaper did not return when its context ended")
	}
}

// TestTasks_ModalSnapshotRecords: a modal task's recorded snapshot is
// listed from the state directory without credentials or network, with
// its last use unknown (so the reaper keeps it), and removing it without
// Modal credentials fails rather than forgetting a snapshot that still
// exists. (modal's own tests remove one through the fake Modal.)
func TestTasks_ModalSnapshotRecords(t *testing.T) {
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "modal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "modal", "snapshots.json"), []byte(`{"snap-task": "im-123"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := service.New(service.Options{Config: config.Default(), Getenv: func(k string) string {
		if k == "RUNBOX_STATE_DIR" {
			return state
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	var found *service.TaskInfo
	list := s.Tasks(t.Context())
	for i, ti := range list.Tasks {
		if ti.Name == "snap-task" && ti.Backend == "modal" {
			found = &list.Tasks[i]
		}
	}
	if found == nil || found.Holds != "snapshot im-123" || !found.LastUsed.IsZero() {
		t.Fatalf("Tasks = %+v; want snap-task on modal held by snapshot im-123, last use unknown", list)
	}
	if idle := service.IdleTasks([]service.TaskInfo{*found}, time.Nanosecond, time.Now()); len(idle) != 0 {
		t.Errorf("IdleTasks took a snapshot of unknown last use for idle: %v", idle)
	}
	if _, err := s.RemoveTask(t.Context(), "snap-task", "modal"); err == nil {
		t.Fatal("RemoveTask without Modal credentials succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(state, "modal", "snapshots.json")); !strings.Contains(string(b), "im-123") {
		t.Errorf("the record went although the snapshot could not be deleted: %s", b)
	}
}
