package jobdir

import "time"

// Files of a job's directory (<state>/jobs/<id>/). Each has one writer:
// the registry writes job.json, kill.json and lost.json, the supervisor
// writes pid.json, exit.json and startfail.json (the registry writes
// exit.json instead only once the supervisor is dead: see procregistry's orphan.go), the
// job's wrapper writes exitcode, and the command itself writes
// output.log. Every JSON file is written whole to a temporary name and
// renamed, so a reader sees the old version or the new one, never half.
const (
	FileJob       = "job.json"       // the record: spec, owner, notes
	FileLog       = "output.log"     // every byte of output, appended
	FilePID       = "pid.json"       // supervisor and command identities
	FileExit      = "exit.json"      // the command's exit status
	FileStartFail = "startfail.json" // why the command could not start
	FileKill      = "kill.json"      // who asked for the kill
	FileLost      = "lost.json"      // why the registry gave the job up
	FileCtl       = "ctl.sock"       // the supervisor's control socket
	FileSupLog    = "supervisor.log" // the supervisor's own stderr
	FileExitCode  = "exitcode"       // the command's exit code, from its wrapper
	FileCommand   = "command.sh"     // the command, when job.json shows a redacted copy
)

// CopierLinger bounds how long a PTY job's copier (the process that
// copies its terminal into FileLog) may run on after the command's end:
// a background child that keeps the terminal open would keep it forever.
// The registry waits as long for the copier of a job whose supervisor
// died.
const CopierLinger = time.Second
