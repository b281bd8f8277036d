// Package inotify reads the queue of a Linux inotify instance, for the
// watchers that look again only where something happened (the undo
// journal's and the git check's). Each watcher owns its instance, its
// watches and what an event means to it; this package only turns the
// bytes the kernel queued into calls, one per event, and says how many
// watches a watcher may hold ([Budget]).
package inotify
