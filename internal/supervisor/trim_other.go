//go:build !linux

package supervisor

import "runtime/debug"

// trimStartup returns the heap the host's start left to the system.
func trimStartup() { debug.FreeOSMemory() }
