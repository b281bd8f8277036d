// Package jobdir is the on-disk contract between the job registry
// (package procregistry) and a job's supervisor (package
// internal/supervisor), which run in different processes and never
// import each other: the names of a job directory's files, the JSON
// records each side writes for the other (written whole to a new file
// and renamed), the supervisor's control socket protocol, and the
// supervisor host's files and request (host.go).
//
// It holds no state and starts nothing. Which directories and files of a
// state directory may be trusted is package package statedir's rule,
// shared by both sides.
package jobdir
