package procregistry

import (
	"fmt"
	"os"
	"path/filepath"

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
	f, err := openPrivateFile(filepath.Join(dir, fileCommand), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
