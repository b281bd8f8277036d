//go:build !linux

package gitguard

// watcher is Linux's inotify; elsewhere Checks stat every directory.
type watcher struct{ quiet bool }

func newWatcher() *watcher               { return nil }
func (w *watcher) close()                {}
func (w *watcher) watch(dir string) bool { return false }
func (w *watcher) trusted(string) bool   { return false }
func (w *watcher) read() bool            { return false }
func (w *watcher) missed()               {}
