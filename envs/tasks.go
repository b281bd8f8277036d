package envs

import (
	"context"
	"time"
)

// TaskInfo is one backend's part of a task (runbox run --task T): what
// it keeps alive between runs.
type TaskInfo struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
	// Created is when it was made; zero when the backend does not say.
	Created time.Time `json:"created,omitzero"`
	// LastUsed is when it was last used, as well as the backend can
	// tell; zero when it cannot, and then the reaper leaves the task
	// alone.
	LastUsed time.Time `json:"last_used,omitzero"`
	// SizeBytes is its size on the backend; nil when unknown.
	SizeBytes *int64 `json:"size_bytes,omitempty"`
	// Holds says what keeps the task: "container runbox-t1 (running)".
	Holds string `json:"holds"`
	// Busy says what runs in it now; empty when nothing does. The
	// reaper never removes a busy task.
	Busy string `json:"busy,omitempty"`
}

// TaskKeeper is a backend's part of tasks ([Provider].Tasks).
type TaskKeeper interface {
	// Tasks lists the backend's tasks of this user.
	Tasks(ctx context.Context) ([]TaskInfo, error)
	// RemoveTask removes everything of task name on the backend and
	// says what it removed; nothing to remove is an error that matches
	// [ErrNotFound].
	RemoveTask(ctx context.Context, name string) ([]string, error)
}
