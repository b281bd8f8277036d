//go:build !linux

package procregistry

// RaiseFileLimit does nothing here: the Go runtime raises the soft limit
// of open files itself where it can.
func RaiseFileLimit() error { return nil }
