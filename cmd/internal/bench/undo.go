package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// undoCases measure what recording a command's changes (for runbox
// undo) costs, against the same command with the record off, pair by pair
// in the same run:
//   - true.changes: `true` back to back in a workspace of 10,000 files
//     (500 directories of 20), under the workspace sandbox;
//   - sed.changes: `sed -i` rewriting 1,000 files, every run changing
//     each of them (it swaps two letters), so that every run keeps 1,000
//     earlier contents.
func undoCases(h Host) []caseDef {
	return []caseDef{
		{name: "true.changes", backend: "local", baseline: "runbox true, changes off, same workspace", n: 100, maxN: 300,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				return changes(h, 500, 20, "true")
			}},
		{name: "sed.changes", backend: "local", baseline: "runbox sed -i, changes off", n: 20, maxN: 100,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				return changes(h, 50, 20, "sed -i -e 's/a/T/;s/b/a/;s/T/b/' d*/f*")
			}},
	}
}

// changes times command in a session recording changes against command
// in one that does not, each in a workspace of dirs×files small files of
// its own.
func changes(h Host, dirs, files int, command string) (op, base func(context.Context) error, cleanup func(), err error) {
	var undos []func()
	cleanup = func() {
		for _, u := range undos {
			u()
		}
	}
	session := func(record bool) (func(context.Context) error, error) {
		ws, err := os.MkdirTemp("", "runbox-bench-changes-")
		if err != nil {
			return nil, err
		}
		undos = append(undos, func() { os.RemoveAll(ws) })
		if err := fillWorkspace(ws, dirs, files); err != nil {
			return nil, err
		}
		ss, err := h.Service.NewSession(service.SessionOptions{ID: fmt.Sprintf("bench-changes-%v-%s", record, filepath.Base(ws)), Backend: "local",
			Spec: envs.Spec{Dir: ws, Sandbox: "workspace"}, RecordChanges: record})
		if err != nil {
			return nil, err
		}
		undos = append(undos, func() {
			ss.Close(context.Background())
			if dir, err := h.Service.JournalDir(ws); err == nil {
				os.RemoveAll(dir)
			}
		})
		return func(ctx context.Context) error {
			res, err := ss.Run(ctx, envs.Command{Shell: command})
			if err == nil {
				err = res.Err()
			}
			if err == nil && record && len(res.Warnings) > 0 {
				err = fmt.Errorf("%s", res.Warnings[0])
			}
			return err
		}, nil
	}
	if op, err = session(true); err == nil {
		base, err = session(false)
	}
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return op, base, cleanup, nil
}

// fillWorkspace makes dirs directories d0… of files files f0… each,
// holding "a b\n".
func fillWorkspace(root string, dirs, files int) error {
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", f)), []byte("a b\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
