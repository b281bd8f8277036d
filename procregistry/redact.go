package procregistry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/envs"
)

// A job whose command text holds a secret value (a client's shell
// expanded $GITHUB_TOKEN into it) is stored in two parts: job.json keeps
// the client's redacted copy (StartRequest.Display), which is all that ps,
// events and recovery ever show, and command.sh keeps the command itself,
// private to the job's directory, for the supervisor to run. The job's
// shell sources it from there, so it is in no argv either; it is removed
// when the job ends.

// writeRecord writes job.json and, for a redacted record, command.sh
// beside it, with the command taken out of the record written to disk.
func writeRecord(dir string, rec *record) error {
	if rec.Display == "" {
		return writeJSON(filepath.Join(dir, fileJob), rec)
	}
	if rec.Shell == "" {
		return fmt.Errorf("procregistry: start: %w: a command shown redacted must be a shell string (an argv would show the secret to ps)", envs.ErrBadCommand)
	}
	f, err := OpenPrivateFile(filepath.Join(dir, fileCommand), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("procregistry: start: %w", err)
	}
	_, err = f.WriteString(rec.Shell + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("procregistry: start: command file: %w", err)
	}
	shown := *rec
	shown.Shell, shown.Args = "", nil
	return writeJSON(filepath.Join(dir, fileJob), &shown)
}

// shellArgv is the argv of the shell that runs rec's shell command: with
// the text itself for a plain record, sourcing command.sh for a redacted
// one.
func shellArgv(sh, dir string, rec record) ([]string, error) {
	if rec.Display == "" {
		return []string{sh, "-c", rec.Shell}, nil
	}
	path := filepath.Join(dir, fileCommand)
	if _, err := os.Lstat(path); err != nil {
		return nil, fmt.Errorf("procregistry: job %s: command file: %w", filepath.Base(dir), err)
	}
	return []string{sh, "-c", ". '" + strings.ReplaceAll(path, "'", `'\''`) + "'"}, nil
}

// removeCommand deletes command.sh once the job has ended.
func removeCommand(dir string) error {
	if err := os.Remove(filepath.Join(dir, fileCommand)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("procregistry: remove command file: %w", err)
	}
	return nil
}
