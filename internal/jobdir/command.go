package jobdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RemoveCommand deletes command.sh once the job has ended.
func RemoveCommand(dir string) error {
	if err := os.Remove(filepath.Join(dir, FileCommand)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("procregistry: remove command file: %w", err)
	}
	return nil
}
