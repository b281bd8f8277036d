package remote

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileKey names a version of a file: size, modification and change times
// (nanoseconds), inode and device. Rewriting a file in place changes its
// change time, which no caller can set back.
func fileKey(fi fs.FileInfo) string {
	k := fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k += fmt.Sprintf(" %d.%09d %d %d", st.Ctim.Sec, st.Ctim.Nsec, st.Ino, st.Dev)
	}
	return k
}
