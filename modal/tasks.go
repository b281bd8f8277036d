package modal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	sdk "github.com/modal-labs/libmodal/modal-go"

	"github.com/runbox/runbox/envs"
)

// SnapshotTask is a persistent task's filesystem snapshot, as recorded in
// the state directory by the last close of its sandbox.
type SnapshotTask struct {
	Task    string
	ImageID string
}

// Tasks lists the tasks whose snapshots are recorded in stateDir, by
// name. It reads only the record: no credentials, no network.
func Tasks(stateDir string) ([]SnapshotTask, error) {
	m, err := loadSnapshots(stateDir)
	if err != nil {
		return nil, err
	}
	out := make([]SnapshotTask, 0, len(m))
	for task, image := range m {
		out = append(out, SnapshotTask{Task: task, ImageID: image})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out, nil
}

// RemoveTask deletes task's snapshot image on Modal (one already gone is
// fine) and then its record, so the task's next sandbox starts from the
// base image. It returns the image id. A task with no record is an error
// that matches [envs.ErrNotFound]. The credentials are read through
// getenv, as [Options].Getenv.
func RemoveTask(ctx context.Context, getenv func(string) string, stateDir, task string) (string, error) {
	m, err := loadSnapshots(stateDir)
	if err != nil {
		return "", err
	}
	image, ok := m[task]
	if !ok {
		return "", fmt.Errorf("modal: task %s has no snapshot: %w", task, envs.ErrNotFound)
	}
	cl, creds, err := connect(getenv, nil)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if err := cl.Images.Delete(ctx, image, nil); err != nil {
		var nf sdk.NotFoundError
		if !errors.As(err, &nf) {
			return "", (&sandbox{creds: creds}).wrap("delete snapshot "+image+" of task "+task, err)
		}
	}
	if err := forgetSnapshot(stateDir, task); err != nil {
		return image, err
	}
	return image, nil
}

// forgetSnapshot removes task's record, replacing the file atomically.
func forgetSnapshot(stateDir, task string) error {
	m, err := loadSnapshots(stateDir)
	if err != nil {
		return err
	}
	delete(m, task)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(snapshotFile(stateDir)), "snapshots.*.tmp")
	if err != nil {
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), snapshotFile(stateDir))
	}
	if err != nil {
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	return nil
}
