// Package inherit keeps the descriptors a process was started with from
// reaching the programs it starts.
//
// A descriptor is a capability that no path rule sees: a log file outside
// the workspace, a socket to a daemon, a pipe to the harness that started
// runbox. Go opens every descriptor of its own close-on-exec and hands a
// child only what exec.Cmd lists, but one the process inherited without
// that flag stays open across every exec it makes: a confined command
// would write through it wherever it leads. [CloseOnExec] marks every
// descriptor above standard error close-on-exec, once, at the start: the
// process itself keeps using them.
package inherit
