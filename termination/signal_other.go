//go:build !linux

package termination

import "syscall"

func signalProc(p Proc, sig syscall.Signal) error { return killChecked(p, sig) }
