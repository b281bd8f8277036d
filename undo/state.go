package undo

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// On disk, a journal's directory holds:
//
//	lock          flock'd around every operation
//	meta          metaMagic, the generation (8 bytes, little-endian),
//	              then gob: header (version, generation), then meta
//	meta.next     the state before meta's: the next save overwrites it
//	              in place and exchanges it with meta
//	index-<gen>   gob: the index, rewritten only when it changes
//	steps/<seq>   gob: one step's diffs
//	objects/<sha> content, named by its SHA-256
//	tmp/          files being written, renamed into place when complete
//
// The generation goes up with every save, so a process that holds the
// journal open reloads only what another process changed.

const stateVersion = 1

// metaMagic starts a state file written with its generation in front,
// which a process reads to tell whether the file it holds is still the
// state it knows (see [Journal.unchanged]). A state file without it is
// gob from its first byte, as earlier versions wrote it.
const metaMagic = "RBUNDO\x00\x01"

// metaPrefix is the length of the magic and the generation.
const metaPrefix = len(metaMagic) + 8

type header struct {
	Version int
	Gen     uint64
}

// meta is the journal's state apart from the index and the steps' diffs.
type meta struct {
	Root     string
	NextSeq  int64  // the next step's number; numbers are never reused
	NextCmd  int64  // the next command's id
	IndexGen uint64 // index-<IndexGen> holds the index; 0 before the first checkpoint
	// DroppedThrough is the newest step dropped to stay under the bound.
	DroppedThrough int64
	Cmds           []openCmd  // commands begun and not ended
	Steps          []stepMeta // ascending
}

// openCmd is a command between Begin and End.
type openCmd struct {
	Ref   cmdRef
	Pid   int
	Start uint64 // the process's start time; see procStart
	// Dead says the process that began it has exited without ending it:
	// the next step still names it, then it is forgotten.
	Dead bool
}

// cmdRef names a command in a step.
type cmdRef struct {
	ID    int64
	Label string
	Begin int64 // NextSeq when it began: its steps are numbered from here
}

// stepMeta is what the journal keeps in memory about a step; its diffs
// are in steps/<seq>.
type stepMeta struct {
	Seq     int64
	Time    time.Time
	Cmds    []cmdRef // empty: made outside any command
	Changes int      // listed changes
	NotKept int
	Bytes   int64    // content kept for it
	Objs    []objRef // the objects its earlier states need
}

type objRef struct {
	Hash digest
	Size int64
}

// indexFile is the index as stored: parallel slices, which gob reads
// faster than a map. The hashes are one byte string (32 bytes an entry)
// with the entries' own left zero: gob reads an array byte by byte,
// which made up most of the time to load an index.
type indexFile struct {
	Paths   []string
	Entries []entry
	Hashes  []byte
}

func (j *Journal) metaPath() string { return filepath.Join(j.dir, "meta") }

func (j *Journal) indexPath(gen uint64) string {
	return filepath.Join(j.dir, fmt.Sprintf("index-%d", gen))
}

func (j *Journal) stepPath(seq int64) string {
	return filepath.Join(j.dir, "steps", fmt.Sprint(seq))
}

// reload brings the in-memory state up to what is on disk, reading
// only what changed since this process last loaded or saved it.
func (j *Journal) reload() error {
	if j.unchanged() {
		return nil
	}
	f, err := openPrivate(j.metaPath(), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		j.reset()
		j.hold(nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("undo: journal state: %w", err)
	}
	err = j.read(f)
	if err != nil {
		f.Close()
		return err
	}
	j.hold(f)
	return nil
}

// read reads the state from f, the state file, and adopts it unless it
// is the generation in memory.
func (j *Journal) read(f *os.File) error {
	br := bufio.NewReader(f)
	if p, err := br.Peek(metaPrefix); err == nil && string(p[:len(metaMagic)]) == metaMagic {
		if binary.LittleEndian.Uint64(p[len(metaMagic):]) == j.gen && j.gen != 0 {
			return nil
		}
		br.Discard(metaPrefix)
	}
	dec := gob.NewDecoder(br)
	var h header
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("undo: journal state %s: %w", j.metaPath(), err)
	}
	if h.Version != stateVersion {
		return fmt.Errorf("undo: journal state %s has version %d, want %d", j.metaPath(), h.Version, stateVersion)
	}
	if h.Gen == j.gen {
		return nil
	}
	var m meta
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("undo: journal state %s: %w", j.metaPath(), err)
	}
	return j.adopt(h.Gen, m)
}

// unchanged reports whether the state file is still the one generation
// j.gen was read from or written to: the path names the inode j holds
// open. The state is only ever replaced by a rename (writeFile), never
// written in place, and an inode held open is never given to another
// file, so the same inode is the same state: one stat instead of an
// open and a decode, at every operation of a journal nobody else uses.
func (j *Journal) unchanged() bool {
	if j.held == nil || j.gen == 0 {
		return false
	}
	var held, now unix.Stat_t
	if unix.Fstat(int(j.held.Fd()), &held) != nil || unix.Stat(j.metaPath(), &now) != nil {
		return false
	}
	if held.Dev != now.Dev || held.Ino != now.Ino {
		return false
	}
	// The same file may have been rewritten since: saves overwrite
	// the spare state file in place and exchange it with meta, so
	// after two saves by others meta names the held file again.
	var p [metaPrefix]byte
	n, err := unix.Pread(int(j.held.Fd()), p[:], 0)
	return err == nil && n == metaPrefix && string(p[:len(metaMagic)]) == metaMagic &&
		binary.LittleEndian.Uint64(p[len(metaMagic):]) == j.gen
}

// hold keeps f, the state file of the generation in memory, open in
// place of the one held before (nil: none).
func (j *Journal) hold(f *os.File) {
	if j.held != nil {
		j.held.Close()
	}
	j.held = f
}

// reset forgets everything: the journal has no state on disk yet.
func (j *Journal) reset() {
	j.gen, j.m, j.index = 0, meta{Root: j.root, NextSeq: 1, NextCmd: 1}, map[string]entry{}
	j.kids, j.racy = nil, nil
	j.refs = refsOf(j.index, nil)
}

func (j *Journal) adopt(gen uint64, m meta) error {
	if m.Root != j.root {
		return fmt.Errorf("undo: journal %s belongs to %s, not %s", j.dir, m.Root, j.root)
	}
	if m.IndexGen != j.m.IndexGen || j.index == nil {
		index, err := j.loadIndex(m.IndexGen)
		if err != nil {
			return err
		}
		j.index, j.kids, j.racy = index, nil, nil
	}
	j.gen, j.m = gen, m
	j.markDead()
	j.refs = refsOf(j.index, j.m.Steps)
	return nil
}

func (j *Journal) loadIndex(gen uint64) (map[string]entry, error) {
	if gen == 0 {
		return map[string]entry{}, nil
	}
	f, err := openPrivate(j.indexPath(gen), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("undo: journal index: %w", err)
	}
	defer f.Close()
	var x indexFile
	err = gob.NewDecoder(bufio.NewReader(f)).Decode(&x)
	if err != nil || len(x.Paths) != len(x.Entries) || len(x.Hashes) != len(digest{})*len(x.Paths) {
		return nil, fmt.Errorf("undo: journal index %s is damaged: %v", f.Name(), err)
	}
	index := make(map[string]entry, len(x.Paths))
	for i, p := range x.Paths {
		e := x.Entries[i]
		copy(e.Hash[:], x.Hashes[i*len(e.Hash):])
		index[p] = e
	}
	return index, nil
}

// save writes the state: the index first when it changed (under a new
// name, so that the meta on disk always names a complete index), then
// the meta, then removes the index it replaced.
func (j *Journal) save(indexChanged bool) error {
	gen, old := j.gen+1, j.m.IndexGen
	if indexChanged {
		if err := j.writeFile(j.indexPath(gen), j.encodeIndex); err != nil {
			return err
		}
		j.m.IndexGen = gen
	}
	if err := j.saveMeta(gen); err != nil {
		j.m.IndexGen = old
		return err
	}
	j.gen = gen
	if indexChanged && old != 0 {
		os.Remove(j.indexPath(old))
	}
	return nil
}

// saveMeta writes the state as generation gen and holds its file. It
// overwrites meta.next in place and exchanges it with meta: a file
// written anew and renamed over meta costs far more on a file system
// that, like ext4, flushes a file renamed over another and discards the
// blocks the replaced one frees (some 200 µs against 20 µs here, twice
// a command). meta is whole at every moment, since only meta.next is
// ever written. Where the exchange cannot be made (no meta yet, a file
// system or platform without it), the state goes through a new file
// renamed into place, as before.
func (j *Journal) saveMeta(gen uint64) error {
	if j.mbuf == nil {
		j.mbuf = new(bytes.Buffer)
	}
	b := j.mbuf
	b.Reset()
	b.WriteString(metaMagic)
	b.Write(binary.LittleEndian.AppendUint64(nil, gen))
	enc := gob.NewEncoder(b)
	if err := enc.Encode(header{Version: stateVersion, Gen: gen}); err != nil {
		return fmt.Errorf("undo: write meta: %w", err)
	}
	if err := enc.Encode(j.m); err != nil {
		return fmt.Errorf("undo: write meta: %w", err)
	}
	if f, err := j.exchangeMeta(b.Bytes()); err == nil {
		j.hold(f)
		return nil
	}
	err := j.writeFile(j.metaPath(), func(w io.Writer) error {
		_, err := w.Write(b.Bytes())
		return err
	})
	if err != nil {
		return err
	}
	// Held for the next operation's check (unchanged): the lock is
	// still held, so the path names what was just written.
	if f, err := openPrivate(j.metaPath(), os.O_RDONLY, 0); err == nil {
		j.hold(f)
	} else {
		j.hold(nil)
	}
	return nil
}

// exchangeMeta writes data over meta.next and exchanges it with meta,
// returning the file now named meta.
func (j *Journal) exchangeMeta(data []byte) (*os.File, error) {
	if _, err := os.Lstat(j.metaPath()); err != nil {
		return nil, err
	}
	f, err := openPrivate(j.metaPath()+".next", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = exchange(f.Name(), j.metaPath())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (j *Journal) encodeIndex(w io.Writer) error {
	x := indexFile{Paths: make([]string, 0, len(j.index))}
	for p := range j.index {
		x.Paths = append(x.Paths, p)
	}
	slices.Sort(x.Paths)
	x.Entries = make([]entry, len(x.Paths))
	x.Hashes = make([]byte, 0, len(digest{})*len(x.Paths))
	for i, p := range x.Paths {
		e := j.index[p]
		x.Hashes = append(x.Hashes, e.Hash[:]...)
		e.Hash = digest{}
		x.Entries[i] = e
	}
	return gob.NewEncoder(w).Encode(&x)
}

// writeFile writes a file of the journal's through a temporary file, so
// that a reader never sees it half written.
func (j *Journal) writeFile(path string, write func(io.Writer) error) error {
	return j.replaceFile(path, func(f *os.File) error {
		if j.wbuf == nil {
			j.wbuf = bufio.NewWriterSize(f, 64<<10)
		}
		w := j.wbuf
		w.Reset(f)
		err := write(w)
		if err == nil {
			err = w.Flush()
		}
		w.Reset(nil) // hold no file
		return err
	})
}

// replaceFile makes path, whole, the temporary file fill wrote: renamed
// into place once written and closed, removed on any error.
func (j *Journal) replaceFile(path string, fill func(*os.File) error) error {
	f, err := j.store.temp()
	if err != nil {
		return fmt.Errorf("undo: write %s: %w", filepath.Base(path), err)
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("undo: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// sweep removes what a process that died mid-operation may have left:
// temporary files, objects nothing refers to, step files and indexes the
// meta does not name. It runs when a journal is opened.
func (j *Journal) sweep() error {
	if err := clearDir(j.store.tmp, func(string) bool { return false }); err != nil {
		return err
	}
	names := make(map[string]bool, len(j.refs))
	for h := range j.refs {
		names[j.store.name(h)] = true
	}
	err := clearDir(j.store.objects, func(name string) bool {
		if names[name] {
			return true
		}
		// An object named by its plain hash (a journal kept before
		// objects had keyed names) is renamed, not lost.
		if h := parseDigest(name); j.refs[h] != nil {
			return os.Rename(filepath.Join(j.store.objects, name), j.store.path(h)) == nil
		}
		return false
	})
	if err != nil {
		return err
	}
	steps := map[string]bool{}
	for _, s := range j.m.Steps {
		steps[fmt.Sprint(s.Seq)] = true
	}
	if err := clearDir(filepath.Join(j.dir, "steps"), func(name string) bool { return steps[name] }); err != nil {
		return err
	}
	keep := filepath.Base(j.indexPath(j.m.IndexGen))
	return clearDir(j.dir, func(name string) bool {
		return !strings.HasPrefix(name, "index-") || name == keep
	})
}

// clearDir removes the regular files in dir that keep does not want.
func clearDir(dir string, keep func(name string) bool) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("undo: sweep: %w", err)
	}
	for _, de := range des {
		if de.Type().IsRegular() && !keep(de.Name()) {
			os.Remove(filepath.Join(dir, de.Name()))
		}
	}
	return nil
}
