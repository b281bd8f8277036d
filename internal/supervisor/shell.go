package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/internal/jobdir"
)

// shellArgv is the argv of the shell that runs rec's shell command: with
// the text itself for a plain record, sourcing command.sh for a redacted
// one.
func shellArgv(sh, dir string, spec jobdir.Spec) ([]string, error) {
	if spec.Display == "" {
		return []string{sh, "-c", spec.Shell}, nil
	}
	path := filepath.Join(dir, jobdir.FileCommand)
	if _, err := os.Lstat(path); err != nil {
		return nil, fmt.Errorf("supervisor: job %s: command file: %w", filepath.Base(dir), err)
	}
	return []string{sh, "-c", ". '" + strings.ReplaceAll(path, "'", `'\''`) + "'"}, nil
}
