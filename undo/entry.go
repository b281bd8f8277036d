package undo

import (
	"encoding/hex"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// digest is the SHA-256 of a file's content: the name of its object in
// the store. The zero digest means the content was never hashed.
type digest [32]byte

func (d digest) String() string { return hex.EncodeToString(d[:]) }

func (d digest) isZero() bool { return d == digest{} }

// entry is what the journal knows of one path: its lstat metadata and,
// for a regular file, its content hash.
type entry struct {
	Mode   uint32 // st_mode: type and permission bits
	Size   int64
	Mtime  int64 // ns
	Ctime  int64 // ns
	Ino    uint64
	Dev    uint64
	Rdev   uint64 // devices only
	Hash   digest // regular files; zero when not hashed
	Target string // symbolic links
	// Kept says the content with Hash is in the store.
	Kept bool
	// Racy says the file changed so close to the checkpoint that a later
	// write could leave its metadata as it is: the next checkpoint hashes
	// it again whatever its metadata says (the "racy git" problem).
	Racy bool
}

func fromStat(st *unix.Stat_t) entry {
	return entry{
		Mode:  uint32(st.Mode),
		Size:  st.Size,
		Mtime: st.Mtim.Nano(),
		Ctime: st.Ctim.Nano(),
		Ino:   uint64(st.Ino),
		Dev:   uint64(st.Dev),
		Rdev:  uint64(st.Rdev),
	}
}

func (e *entry) format() uint32 { return e.Mode & unix.S_IFMT }
func (e *entry) perm() uint32   { return e.Mode & 0o7777 }
func (e *entry) isFile() bool   { return e.format() == unix.S_IFREG }
func (e *entry) isDir() bool    { return e.format() == unix.S_IFDIR }
func (e *entry) isLink() bool   { return e.format() == unix.S_IFLNK }
func (e *entry) isFifo() bool   { return e.format() == unix.S_IFIFO }

// typeName is [Change].Type.
func (e *entry) typeName() string {
	switch e.format() {
	case unix.S_IFREG:
		return TypeFile
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	}
	return TypeOther
}

// sameMeta says the walk has no reason to look at the content again.
func (e *entry) sameMeta(n *entry) bool {
	return e.Mode == n.Mode && e.Size == n.Size && e.Mtime == n.Mtime &&
		e.Ctime == n.Ctime && e.Ino == n.Ino && e.Dev == n.Dev && e.Rdev == n.Rdev
}

// sameContent says two states of a path hold the same content. Files
// without a hash compare by size, mtime and inode: without the bytes,
// that is the best the journal can tell.
func (e *entry) sameContent(n *entry) bool {
	switch {
	case e.format() != n.format():
		return false
	case e.isFile() && !e.Hash.isZero() && !n.Hash.isZero():
		return e.Hash == n.Hash
	case e.isFile():
		return e.Size == n.Size && e.Mtime == n.Mtime && e.Ino == n.Ino
	case e.isLink():
		return e.Target == n.Target
	}
	return e.Rdev == n.Rdev
}

// fileMode is the mode undo gives what it restores. Set-user-ID and
// set-group-ID bits are never restored: undo would otherwise hand a
// command's privileges to whatever content it brings back.
func (e *entry) fileMode() fs.FileMode {
	m := fs.FileMode(e.perm() & 0o777)
	if e.perm()&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func (e *entry) octal() string { return fmt.Sprintf("%04o", e.perm()) }
