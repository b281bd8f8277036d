// Package statedir decides when runbox may trust a directory to hold its
// state (job output and records, sync manifests, undo journals, the
// daemon's socket and log) and opens the files in it safely.
//
// Another user who can change a state directory, or any directory on the
// way to it, could make runbox write through a planted symbolic link into
// one of the victim's files, read the victim's job output, or answer in
// the daemon's place. So [Prepare] checks the whole path before anything
// is written (rules in statedir.go), [Mkdir] and [CheckDir] check each
// directory made or found inside it, and [OpenFile] opens a file only
// when it is a regular file of this user with one link, never through a
// symbolic link. Whatever fails a rule is refused with an [*Error]
// (errors.Is [ErrUnsafe]), never repaired.
//
// The job registry (package procregistry), the job supervisor (which is
// handed one checked job directory, package internal/jobdir), workspace
// sync and undo share these checks; none of them owns them.
package statedir
