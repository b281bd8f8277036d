package undo

import "encoding/hex"

// ref counts the users of one object: index entries and steps' earlier
// states.
type ref struct {
	size int64
	n    int
}

// refs maps each object that must be kept to its users.
type refs map[digest]*ref

func refsOf(index map[string]entry, steps []stepMeta) refs {
	r := refs{}
	for _, e := range index {
		if e.isFile() && e.Kept {
			r.add(e.Hash, e.Size)
		}
	}
	for _, s := range steps {
		for _, o := range s.Objs {
			r.add(o.Hash, o.Size)
		}
	}
	return r
}

func (r refs) add(h digest, size int64) {
	if x := r[h]; x != nil {
		x.n++
		return
	}
	r[h] = &ref{size: size, n: 1}
}

// release drops one user of h and returns the bytes freed, if that was
// the last one.
func (r refs) release(h digest) int64 {
	x := r[h]
	if x == nil {
		return 0
	}
	if x.n--; x.n > 0 {
		return 0
	}
	delete(r, h)
	return x.size
}

// total is the store's size: each object counted once.
func (r refs) total() int64 {
	var n int64
	for _, x := range r {
		n += x.size
	}
	return n
}

// mirrorBytes is the size of the content the index keeps.
func mirrorBytes(index map[string]entry) int64 {
	seen := map[digest]bool{}
	var n int64
	for _, e := range index {
		if e.isFile() && e.Kept && !seen[e.Hash] {
			seen[e.Hash] = true
			n += e.Size
		}
	}
	return n
}

// parseDigest reads an object's file name; anything else is the zero
// digest.
func parseDigest(name string) digest {
	var d digest
	if len(name) != 2*len(d) {
		return digest{}
	}
	if _, err := hex.Decode(d[:], []byte(name)); err != nil {
		return digest{}
	}
	return d
}
