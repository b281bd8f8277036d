package modal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// snapshotFile records, per task, the image id of the filesystem snapshot
// its last persistent sandbox left.
func snapshotFile(stateDir string) string { return filepath.Join(stateDir, "modal", "snapshots.json") }

func loadSnapshots(stateDir string) (map[string]string, error) {
	m := map[string]string{}
	b, err := os.ReadFile(snapshotFile(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("modal: snapshot records: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("modal: snapshot records %s: %w", snapshotFile(stateDir), err)
	}
	return m, nil
}

// loadSnapshot is task's recorded image id, "" when there is none.
func loadSnapshot(stateDir, task string) (string, error) {
	m, err := loadSnapshots(stateDir)
	if err != nil {
		return "", err
	}
	return m[task], nil
}

// saveSnapshot records task → image id, replacing the file atomically.
func saveSnapshot(stateDir, task, image string) error {
	m, err := loadSnapshots(stateDir)
	if err != nil {
		return err
	}
	m[task] = image
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(snapshotFile(stateDir))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "snapshots.*.tmp")
	if err != nil {
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	if err := os.Rename(tmp.Name(), snapshotFile(stateDir)); err != nil {
		return fmt.Errorf("modal: snapshot records: %w", err)
	}
	return nil
}

func joinErr(a, b error) error { return errors.Join(a, b) }
