package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/workspace"
)

// localTasks is the local backend's keeper: a task's workspace
// (runbox run --backend local --task T --sync DIR) is a directory of its
// own under runbox-tasks beside the state directory (see [TaskPlace]).
// Its last use is the later of its last push and its directory's last
// change; it is busy while a process works in it.
type localTasks struct{ s *Service }

// tasksDir is where the local backend keeps task workspaces, "" without
// a state directory.
func (l localTasks) tasksDir() string {
	dir := l.s.stateDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(dir), "runbox-tasks")
}

func (l localTasks) Tasks(ctx context.Context) ([]TaskInfo, error) {
	top := l.tasksDir()
	if top == "" {
		return nil, errors.New("local: no state directory, so no task workspaces (set RUNBOX_STATE_DIR or HOME)")
	}
	ents, err := os.ReadDir(top)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local: task workspaces: %w", err)
	}
	names := l.names()
	busy := workingIn()
	var out []TaskInfo
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(top, e.Name())
		name := e.Name()
		if n, ok := names[dir]; ok {
			name = n
		}
		t := TaskInfo{Name: name, Backend: localBackend, Holds: "directory " + dir}
		size, changed := treeSize(dir)
		t.SizeBytes, t.LastUsed = &size, changed
		if fi, err := os.Stat(workspace.ManifestPath(l.s.stateDir(), name)); err == nil && fi.ModTime().After(t.LastUsed) {
			t.LastUsed = fi.ModTime()
		}
		if pids := busy(dir); len(pids) > 0 {
			t.Busy = "process " + strings.Join(pids, ", ")
		}
		out = append(out, t)
	}
	return out, nil
}

// RemoveTask removes the task's directory and its records (the manifest
// and where it was pushed): what it held was a copy the user's own
// directory was pushed into.
func (l localTasks) RemoveTask(ctx context.Context, name string) ([]string, error) {
	top := l.tasksDir()
	if top == "" {
		return nil, fmt.Errorf("local: task %s: no state directory: %w", name, envs.ErrNotFound)
	}
	dir := filepath.Join(top, workspace.TaskFileName(name))
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local: task %s: %w", name, envs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("local: task %s: %w", name, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("local: task %s: %s is not a directory; left alone", name, dir)
	}
	if err := os.RemoveAll(dir); err != nil { // never follows a link in it
		return nil, fmt.Errorf("local: remove task %s: %w", name, err)
	}
	state := l.s.stateDir()
	os.Remove(workspace.ManifestPath(state, name))
	os.Remove(placePath(state, name))
	return []string{"directory " + dir}, nil
}

// names maps a local task's directory to the task's name, from where its
// pushes were recorded: a name that is not plain has a hashed directory.
func (l localTasks) names() map[string]string {
	state := l.s.stateDir()
	out := map[string]string{}
	ents, _ := os.ReadDir(filepath.Join(state, "sync"))
	for _, e := range ents {
		task, ok := strings.CutSuffix(e.Name(), ".where.json")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(state, "sync", e.Name()))
		if err != nil {
			continue
		}
		var p taskPlace
		if json.Unmarshal(b, &p) != nil || !l.s.onThisMachine(p.Backend) {
			continue
		}
		if m, err := readManifestTask(state, task); err == nil {
			task = m
		}
		out[p.Dir] = task
	}
	return out
}

// readManifestTask returns the task's name a manifest file records (the
// file's own name may be a hash of it).
func readManifestTask(stateDir, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, "sync", file+".json"))
	if err != nil {
		return "", err
	}
	var m struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Task == "" {
		return "", fmt.Errorf("no task in the manifest %s", file)
	}
	return m.Task, nil
}

// treeSize adds up the sizes of the files under dir and returns the
// latest modification time found, without following links.
func treeSize(dir string) (int64, time.Time) {
	var size int64
	var latest time.Time
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if fi.Mode().IsRegular() {
			size += fi.Size()
		}
		if fi.ModTime().After(latest) {
			latest = fi.ModTime()
		}
		return nil
	})
	return size, latest
}

// workingIn reads, once, every process's working directory, and returns
// a function that says which processes work in or under a directory.
func workingIn() func(dir string) []string {
	cwds := map[string]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil {
			cwds[e.Name()] = cwd
		}
	}
	return func(dir string) []string {
		var pids []string
		for pid, cwd := range cwds {
			if cwd == dir || strings.HasPrefix(cwd, dir+"/") {
				pids = append(pids, pid)
			}
		}
		slices.Sort(pids)
		return pids
	}
}

var _ TaskKeeper = localTasks{}
