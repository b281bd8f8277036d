package undo

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// store holds content objects, each known by the SHA-256 of its bytes,
// computed here from the copy itself: no name ever comes from the
// workspace. Objects are written to a temporary file and renamed in, so
// an object that exists is complete.
//
// An object's file name is not that hash but a keyed hash of it (HMAC
// with the journal's own key, see [Journal.useKey]): the names in the
// objects directory can be listed by a confined command (Landlock lets
// the steps toward a denied directory be listed, and what lies below
// them with it), and a plain hash would let it confirm a guess at a file
// it may not read (a password in a deny-listed .env).
type store struct {
	objects string   // dir/objects: one file per object
	tmp     string   // dir/tmp: objects and records being written
	key     [32]byte // names objects; read from dir/key when the journal opens
}

// name is the file name of the object of hash h.
func (s *store) name(h digest) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write(h[:])
	return hex.EncodeToString(m.Sum(nil))
}

func (s *store) path(h digest) string { return filepath.Join(s.objects, s.name(h)) }

func (s *store) has(h digest) bool {
	_, err := os.Lstat(s.path(h))
	return err == nil
}

func (s *store) open(h digest) (*os.File, error) {
	return openPrivate(s.path(h), os.O_RDONLY, 0)
}

func (s *store) remove(h digest) error {
	if err := os.Remove(s.path(h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("undo: remove object: %w", err)
	}
	return nil
}

// temp creates a new private file in the store's tmp directory.
func (s *store) temp() (*os.File, error) {
	return openPrivate(filepath.Join(s.tmp, randomName()), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

func randomName() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// putRequest describes a file to keep.
type putRequest struct {
	src   *os.File // a regular file, at offset 0
	size  int64    // its size when it was opened
	limit int64    // [Options].MaxFileBytes
	buf   []byte   // for copying and hashing; owned by the caller
	// likelySame says the content is probably already kept (same size as
	// before): hashing first then saves writing a copy for nothing.
	likelySame bool
	// room reserves space for a new object, or says there is none.
	room func(size int64) bool
}

// putResult is what the store made of a file.
type putResult struct {
	hash  digest // zero when the file was too big to hash
	kept  bool
	fresh bool // a new object was written
}

var errTooBig = errors.New("larger than the limit")

// put keeps a file's content and returns its hash. A file over the limit
// is neither hashed nor kept; when room says no, it is hashed but not
// kept.
func (s *store) put(r putRequest) (putResult, error) {
	var h digest
	if r.likelySame {
		var err error
		if h, err = hashFrom(r.src, r.limit, r.buf); err != nil {
			return putResult{}, nilIfTooBig(err)
		}
		if s.has(h) {
			return putResult{hash: h, kept: true}, nil
		}
		if _, err := r.src.Seek(0, io.SeekStart); err != nil {
			return putResult{}, err
		}
	}
	if !r.room(r.size) {
		if !h.isZero() {
			return putResult{hash: h}, nil
		}
		h, err := hashFrom(r.src, r.limit, r.buf)
		return putResult{hash: h}, nilIfTooBig(err)
	}
	return s.write(r)
}

// write copies (or clones) the file into a new object.
func (s *store) write(r putRequest) (putResult, error) {
	tmp, err := s.temp()
	if err != nil {
		return putResult{}, err
	}
	h, err := fill(tmp, r.src, r.limit, r.buf)
	tmp.Close()
	if err != nil {
		os.Remove(tmp.Name())
		return putResult{}, nilIfTooBig(err)
	}
	if s.has(h) {
		os.Remove(tmp.Name())
		return putResult{hash: h, kept: true}, nil
	}
	if err := os.Rename(tmp.Name(), s.path(h)); err != nil {
		os.Remove(tmp.Name())
		return putResult{}, fmt.Errorf("undo: keep object: %w", err)
	}
	return putResult{hash: h, kept: true, fresh: true}, nil
}

func nilIfTooBig(err error) error {
	if errors.Is(err, errTooBig) {
		return nil
	}
	return err
}

// fill makes dst a copy of src and returns the hash of what dst holds.
// A clone shares blocks and is hashed afterwards; a plain copy is hashed
// as it is written.
func fill(dst, src *os.File, limit int64, buf []byte) (digest, error) {
	if cloneFile(int(dst.Fd()), int(src.Fd())) == nil {
		return hashFrom(io.NewSectionReader(dst, 0, limit+1), limit, buf)
	}
	h := sha256.New()
	w := &sparseWriter{f: dst}
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.LimitReader(src, limit+1), buf)
	if err == nil {
		err = w.finish()
	}
	if err != nil {
		return digest{}, fmt.Errorf("undo: copy: %w", err)
	}
	if n > limit {
		return digest{}, errTooBig
	}
	return digest(h.Sum(nil)), nil
}

// hashFrom hashes what r holds, failing with errTooBig past limit bytes.
func hashFrom(r io.Reader, limit int64, buf []byte) (digest, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(r, limit+1), buf)
	if err != nil {
		return digest{}, fmt.Errorf("undo: hash: %w", err)
	}
	if n > limit {
		return digest{}, errTooBig
	}
	return digest(h.Sum(nil)), nil
}
