package procregistry

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A job's wrapper (see package internal/supervisor) writes the
// command's exit code to the job's exitcode file, where the registry
// finds it when the supervisor died before recording the exit.

// readExitCode reads the exitcode file of the job in dir: the code and
// when it was written. ok is false while there is none (the command runs,
// or its wrapper was killed before it could write one).
func readExitCode(dir string) (code int, at time.Time, ok bool) {
	path := filepath.Join(dir, fileExitCode)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, time.Time{}, false
	}
	code, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || code < 0 || code > 255 {
		return 0, time.Time{}, false
	}
	at = time.Now()
	if fi, err := os.Stat(path); err == nil {
		at = fi.ModTime()
	}
	return code, at, true
}
