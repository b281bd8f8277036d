// Package jobdir is the on-disk contract between the job registry
// (package procregistry) and a job's supervisor (package
// internal/supervisor), which run in different processes and never
// import each other: the names of a job directory's files, the JSON
// records each side writes for the other, the supervisor's control
// socket protocol, the supervisor host's files and request (host.go), and the safe way to open and write files in a state
// directory (never through a symbolic link or a hard link, never a file
// of another user; JSON written whole to a new file and renamed).
//
// It holds no state and starts nothing. The state directory's own checks
// (which directories may be trusted) stay in procregistry; the checks
// here are the ones a supervisor, handed a single checked job directory,
// still needs for the files in it.
package jobdir
