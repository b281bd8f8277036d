//go:build !linux

package procregistry

// waitingForInput needs Linux's /proc: elsewhere no job is seen waiting
// for input, and no such event is sent.
func waitingForInput(*pidRecord) int { return 0 }
