package procregistry

import (
	"io/fs"
	"os"

	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/statedir"
)

// The files and records a job's directory shares with the job's
// supervisor are defined in package jobdir, which both sides import;
// these names keep the registry's code in its own vocabulary.

const (
	fileJob       = jobdir.FileJob
	fileLog       = jobdir.FileLog
	filePID       = jobdir.FilePID
	fileExit      = jobdir.FileExit
	fileStartFail = jobdir.FileStartFail
	fileKill      = jobdir.FileKill
	fileLost      = jobdir.FileLost
	fileCtl       = jobdir.FileCtl
	fileSupLog    = jobdir.FileSupLog
	fileExitCode  = jobdir.FileExitCode
	fileCommand   = jobdir.FileCommand

	opWrite  = jobdir.OpWrite
	opClose  = jobdir.OpClose
	opWait   = jobdir.OpWait
	opResize = jobdir.OpResize
)

type (
	pidRecord   = jobdir.PIDRecord
	exitRecord  = jobdir.ExitRecord
	failRecord  = jobdir.FailRecord
	ctlRequest  = jobdir.CtlRequest
	ctlResponse = jobdir.CtlResponse
)

func writeJSON(path string, v any) error                 { return jobdir.WriteJSON(path, v) }
func readJSON(path string, v any) (bool, error)          { return jobdir.ReadJSON(path, v) }
func removeCommand(dir string) error                     { return jobdir.RemoveCommand(dir) }
func checkPrivateFile(path string, fi fs.FileInfo) error { return statedir.CheckFile(path, fi) }

// openPrivateFile opens a file in the checked state directory
// (statedir.OpenFile: never through a link, only a regular file of this
// user with one link).
func openPrivateFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return statedir.OpenFile(path, flag, perm)
}

// ErrUnsafeStateDir matches every [*StateDirError].
var ErrUnsafeStateDir = statedir.ErrUnsafe

// StateDirError says which path of a state directory was refused and
// why (its fields: Dir, the state directory, empty when only the path is
// known; Path, what was refused; Problem, what is wrong with it). It
// matches [ErrUnsafeStateDir].
type StateDirError = statedir.Error
