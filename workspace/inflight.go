package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/runbox/runbox/statedir"
)

// A push that breaks midway can leave some of the files it was sending
// half written in the sandbox. Those are the push's own writes, not the
// sandbox's edits: the next push must overwrite them rather than hold
// them back as conflicts. So before an incremental transfer the paths
// being sent are recorded beside the manifest (TASK.inflight.json), and
// the record is removed once the manifest of a complete push is saved.

func inflightPath(stateDir, task string) string {
	return strings.TrimSuffix(ManifestPath(stateDir, task), ".json") + ".inflight.json"
}

// saveInflight records the paths an incremental push is about to send.
func saveInflight(stateDir, task string, paths []string) error {
	if _, err := syncDir(stateDir); err != nil {
		return err
	}
	p := inflightPath(stateDir, task)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: in-flight record: %w", err)
	}
	f, err := statedir.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("workspace: in-flight record: %w", err)
	}
	err = json.NewEncoder(f).Encode(paths)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("workspace: in-flight record: %w", err)
	}
	return nil
}

// loadInflight returns the paths a push that did not complete was
// sending (none when the last push completed).
func loadInflight(stateDir, task string) (map[string]bool, error) {
	f, err := statedir.OpenFile(inflightPath(stateDir, task), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: in-flight record: %w", err)
	}
	defer f.Close()
	var paths []string
	if err := json.NewDecoder(io.LimitReader(f, 1<<28)).Decode(&paths); err != nil {
		return nil, nil // unreadable: as if none; the conflict check stays strict
	}
	m := make(map[string]bool, len(paths))
	for _, p := range paths {
		m[p] = true
	}
	return m, nil
}

// clearInflight removes the record once a push has completed.
func clearInflight(stateDir, task string) error {
	if err := os.Remove(inflightPath(stateDir, task)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: in-flight record: %w", err)
	}
	return nil
}
