//go:build !linux

package undo

import "errors"

var errNoPlatform = errors.New("not supported on this platform")

// cloneFile always fails here: the caller copies.
func cloneFile(dst, src int) error { return errNoPlatform }

// mkfifoat is not offered here: undo lists the fifo as not restored.
func mkfifoat(dirfd int, name string, mode uint32) error { return errNoPlatform }

// procStart is unknown here: a pid alone identifies a process.
func procStart(pid int) uint64 { return 0 }

// exchange is not offered here: the state is saved through a new file.
func exchange(a, b string) error { return errNoPlatform }
