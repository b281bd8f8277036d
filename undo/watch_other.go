//go:build !linux

package undo

// watcher is not offered here: every checkpoint walks the whole
// workspace.
type watcher struct{}

func newWatcher() *watcher                        { return nil }
func (w *watcher) close()                         {}
func (w *watcher) add(fd int, rel string)         {}
func (w *watcher) watching(rel string) bool       { return false }
func (w *watcher) drain() (map[string]bool, bool) { return nil, false }
