//go:build !linux

package remote

import (
	"fmt"
	"io/fs"
)

// fileKey names a version of a file: its size and modification time.
func fileKey(fi fs.FileInfo) string {
	return fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
}
