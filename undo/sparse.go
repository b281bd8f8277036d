package undo

import "os"

// sparseBlock is the size of the runs of zeros a sparseWriter leaves as
// holes: a file system block.
const sparseBlock = 4096

// sparseWriter writes to a new file from its start, leaving a hole for
// every whole block of zeros instead of writing it. A command can make
// files of any size for nothing (truncate -s 250M f, or many such files
// that share one object in the store); written out whole, the store's
// copy and every file undo puts back would cost their full size in
// disk, past the bound the store keeps to. Call finish once the last
// byte is written: it sets the size, which a trailing hole leaves short.
type sparseWriter struct {
	f   *os.File
	off int64
}

func (w *sparseWriter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i += sparseBlock {
		c := p[i:min(i+sparseBlock, len(p))]
		if len(c) == sparseBlock && zeros(c) {
			continue
		}
		if _, err := w.f.WriteAt(c, w.off+int64(i)); err != nil {
			return i, err
		}
	}
	w.off += int64(len(p))
	return len(p), nil
}

// finish gives the file its whole size.
func (w *sparseWriter) finish() error { return w.f.Truncate(w.off) }

func zeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
