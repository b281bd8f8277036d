//go:build !linux

package procregistry

import "errors"

// logWatcher is unavailable here: readers of a log look again on a timer.
type logWatcher struct{}

func newLogWatcher() (*logWatcher, error) {
	return nil, errors.New("procregistry: no inotify on this system")
}

func (w *logWatcher) subscribe(string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("procregistry: no inotify on this system")
}

func (w *logWatcher) close() {}
