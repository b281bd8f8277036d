package jobdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runbox/runbox/statedir"
)

// WriteJSON writes v to path atomically: to a new temporary file beside
// it (created with O_EXCL, so nothing planted there is followed), synced,
// then renamed over path (which replaces a link at path, never follows
// it).
func WriteJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("procregistry: write %s: %w", filepath.Base(path), err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("procregistry: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// MaxRecord bounds the size of a JSON record read from a job directory.
const MaxRecord = 16 << 20

// ReadJSON reads path into v. A missing file is (false, nil). A symbolic
// link, or anything but a regular file of this user, is an error
// ([statedir.ErrUnsafe]) and is not read.
func ReadJSON(path string, v any) (bool, error) {
	f, err := statedir.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("procregistry: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxRecord+1))
	if err != nil {
		return false, fmt.Errorf("procregistry: %w", err)
	}
	if len(b) > MaxRecord {
		return false, fmt.Errorf("procregistry: %s: larger than %d bytes", path, MaxRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("procregistry: %s: %w", path, err)
	}
	return true, nil
}
