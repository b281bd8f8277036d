//go:build linux

package gitguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The differential test of the watched Tree: after any sequence of
// filesystem operations, interleaved with Checks sharing one Tree, a
// last Check with that Tree must see the same directories, subdirectories
// and .git entries as a Check with a brand new Tree (a fresh walk). A
// difference means a watched Check can miss a planted .git.

// watchLayout is the initial workspace: directories, plus a .git directory
// in b and a .git file in a/d pointing at it.
var watchLayout = []string{"a/b/c", "a/d", "b/a", "c/a/b"}

// watchNames are the names operations give: few, so that they collide
// (a new directory where one was, a rename over another), and .git.
var watchNames = []string{"a", "b", "c", "d", ".git"}

// watchMaxChecks bounds the Checks of one sequence below fullEvery, so
// that no Check of it stats every directory regardless of its watches.
const watchMaxChecks = fullEvery - 8

// makeWatchLayout makes base/ws (the workspace, watchLayout) and base/out
// (the outside of the workspace, for moves in and out).
func makeWatchLayout(base string) error {
	ws := filepath.Join(base, "ws")
	for _, d := range watchLayout {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, "b", ".git", "hooks"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ws, "a", "f"), []byte("f\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ws, "a", "d", ".git"), []byte("gitdir: ../../b/.git\n"), 0o644); err != nil {
		return err
	}
	return os.MkdirAll(filepath.Join(base, "out", "o", "a"), 0o755)
}

// agedPool hands out workspaces made more than a second ago: their
// directories' ctimes are older than a Check's scan by more than
// ctimeSlack, so that Checks also take the path that trusts an unchanged
// ctime (same inode, same ctime) besides the one that trusts a watch.
type agedPool struct {
	mu    sync.Mutex
	base  string
	batch int
	free  []string
	made  time.Time
}

func (p *agedPool) take() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		for range p.batch {
			d, err := os.MkdirTemp(p.base, "aged")
			if err != nil {
				return "", err
			}
			if err := makeWatchLayout(d); err != nil {
				return "", err
			}
			p.free = append(p.free, d)
		}
		p.made = time.Now()
	}
	if wait := ctimeSlack + 200*time.Millisecond - time.Since(p.made); wait > 0 {
		time.Sleep(wait)
	}
	d := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return d, nil
}

// watchRun is one sequence: its input, the workspace, and what was done.
type watchRun struct {
	data   []byte
	pos    int
	root   string // the workspace, links resolved (as Check keys its tree)
	out    string // outside the workspace
	tree   *Tree
	log    []string
	checks int
	nOut   int
	// the workspace as the current operation found it (nil: not scanned)
	dirs, others, empty []string
}

// next is the next input byte (0 once the input is used up).
func (r *watchRun) next() byte {
	if r.pos >= len(r.data) {
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return b
}

func (r *watchRun) name() string { return watchNames[int(r.next())%len(watchNames)] }

// rel names p for the log: relative to the workspace, or out/... outside.
func (r *watchRun) rel(p string) string {
	if p == r.root {
		return "."
	}
	if s, ok := strings.CutPrefix(p, r.root+"/"); ok {
		return s
	}
	if s, ok := strings.CutPrefix(p, filepath.Dir(r.out)+"/"); ok {
		return s
	}
	return p
}

// shown is a link's target for the log: an absolute one from $WS (the
// workspace) or $OUT (its outside).
func (r *watchRun) shown(target string) string {
	if !filepath.IsAbs(target) {
		return target
	}
	if target == r.root || strings.HasPrefix(target, r.root+"/") {
		return "$WS" + strings.TrimPrefix(target, r.root)
	}
	return "$OUT" + strings.TrimPrefix(target, r.out)
}

func (r *watchRun) logf(err error, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if err != nil {
		s += "   (failed: " + errText(err) + ")"
	}
	r.log = append(r.log, s)
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// scan lists, under top and without following links or going into .git:
// the directories (top first), the entries that are not directories, and
// the empty directories.
func scan(top string) (dirs, others, empty []string) {
	var walk func(string)
	walk = func(d string) {
		dirs = append(dirs, d)
		ents, err := os.ReadDir(d)
		if err != nil {
			return
		}
		if len(ents) == 0 {
			empty = append(empty, d)
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			switch {
			case e.Name() == ".git":
				if !e.IsDir() {
					others = append(others, p)
				}
			case e.IsDir():
				walk(p)
			default:
				others = append(others, p)
			}
		}
	}
	walk(top)
	return dirs, others, empty
}

// pick is one of list chosen by the next byte ("" if list is empty).
func (r *watchRun) pick(list []string) string {
	if len(list) == 0 {
		r.next()
		return ""
	}
	return list[int(r.next())%len(list)]
}

// wsScan is scan of the workspace as the operation found it (operations
// pick their operands before they change it).
func (r *watchRun) wsScan() (dirs, others, empty []string) {
	if r.dirs == nil {
		r.dirs, r.others, r.empty = scan(r.root)
	}
	return r.dirs, r.others, r.empty
}

func (r *watchRun) wsDirs() []string    { d, _, _ := r.wsScan(); return d }
func (r *watchRun) wsSubdirs() []string { return r.wsDirs()[1:] }

// outDirs are the directories outside the workspace (not out itself).
func (r *watchRun) outDirs() []string { d, _, _ := scan(r.out); return d[1:] }

// outTops are the directories right in out (what a move in takes).
func (r *watchRun) outTops() []string {
	var tops []string
	ents, _ := os.ReadDir(r.out)
	for _, e := range ents {
		if e.IsDir() {
			tops = append(tops, filepath.Join(r.out, e.Name()))
		}
	}
	return tops
}

func (r *watchRun) newOut() string {
	r.nOut++
	return filepath.Join(r.out, fmt.Sprintf("o%d", r.nOut))
}

// linkTo is the target of a link at p to dir: relative, or absolute when
// the byte says so.
func linkTo(p, dir string, abs bool) string {
	if abs {
		return dir
	}
	t, err := filepath.Rel(filepath.Dir(p), dir)
	if err != nil {
		return dir
	}
	return t
}

// check runs a Check with the run's Tree, as a session does after each
// command. maxDirs > 0 cuts it short.
func (r *watchRun) check(maxDirs int) error {
	r.checks++
	rep, err := Check(context.Background(), r.root, Options{Since: time.Now().Add(time.Hour), Tree: r.tree, MaxDirs: maxDirs})
	if err != nil {
		return fmt.Errorf("Check: %w", err)
	}
	if len(rep.Findings) != 0 {
		return fmt.Errorf("Check found %+v with nothing changed since", rep.Findings)
	}
	if maxDirs == 0 && rep.Incomplete != "" {
		return fmt.Errorf("Check incomplete: %s", rep.Incomplete)
	}
	if maxDirs > 0 {
		r.logf(nil, "CHECK cut short after %d directories (incomplete: %q)", maxDirs, rep.Incomplete)
	} else {
		r.logf(nil, "CHECK")
	}
	return nil
}

// op decodes and applies one operation.
func (r *watchRun) op() error {
	const kinds = 23
	r.dirs, r.others, r.empty = nil, nil, nil
	k := int(r.next()) % (kinds + 5) // the last 5 are Checks
	switch k {
	case 0: // mkdir P/N
		p := filepath.Join(r.pick(r.wsDirs()), r.name())
		r.logf(os.Mkdir(p, 0o755), "mkdir %s", r.rel(p))
	case 1: // mkdir -p P/N/N/N
		p := filepath.Join(r.pick(r.wsDirs()), r.name(), r.name(), r.name())
		r.logf(os.MkdirAll(p, 0o755), "mkdir -p %s", r.rel(p))
	case 2: // rm -r D
		d := r.pick(r.wsSubdirs())
		if d == "" {
			return nil
		}
		r.logf(os.RemoveAll(d), "rm -r %s", r.rel(d))
	case 3: // mv D P/N within the workspace (deeper, shallower, aside)
		d, p := r.pick(r.wsSubdirs()), r.pick(r.wsDirs())
		if d == "" {
			return nil
		}
		to := filepath.Join(p, r.name())
		r.logf(os.Rename(d, to), "mv %s %s", r.rel(d), r.rel(to))
	case 4: // mv D E, E an existing empty directory
		d := r.pick(r.wsSubdirs())
		_, _, empty := r.wsScan()
		e := r.pick(empty)
		if d == "" || e == "" || e == r.root {
			return nil
		}
		r.logf(os.Rename(d, e), "mv %s %s (over an empty directory)", r.rel(d), r.rel(e))
	case 5: // make a tree outside, then move it in
		o := r.newOut()
		inner := filepath.Join(o, r.name(), r.name())
		err := os.MkdirAll(inner, 0o755)
		r.logf(err, "mkdir -p %s", r.rel(inner))
		if b := r.next(); b&1 != 0 {
			g := filepath.Join(filepath.Dir(inner), ".git")
			r.logf(os.Mkdir(g, 0o755), "mkdir %s", r.rel(g))
		}
		to := filepath.Join(r.pick(r.wsDirs()), r.name())
		r.logf(os.Rename(o, to), "mv %s %s (from outside)", r.rel(o), r.rel(to))
	case 6: // mkdir D/.git (with a config)
		g := filepath.Join(r.pick(r.wsDirs()), ".git")
		r.logf(os.Mkdir(g, 0o755), "mkdir %s", r.rel(g))
		if r.next()&1 != 0 {
			c := filepath.Join(g, "config")
			r.logf(os.WriteFile(c, []byte("[core]\n\tbare = false\n"), 0o644), "write %s", r.rel(c))
		}
	case 7: // D/.git file "gitdir: E"
		d := r.pick(r.wsDirs())
		e := r.pick(r.wsDirs())
		g := filepath.Join(d, ".git")
		target := linkTo(g, e, r.next()&1 != 0)
		r.logf(os.WriteFile(g, []byte("gitdir: "+target+"\n"), 0o644), "echo 'gitdir: %s' > %s", r.shown(target), r.rel(g))
	case 8: // ln -s E D/.git
		d := r.pick(r.wsDirs())
		e := r.pick(append(r.wsDirs(), r.outDirs()...))
		g := filepath.Join(d, ".git")
		target := linkTo(g, e, r.next()&1 != 0)
		r.logf(os.Symlink(target, g), "ln -s %s %s", r.shown(target), r.rel(g))
	case 9: // replace directory D by a link to directory E
		d, e := r.pick(r.wsSubdirs()), r.pick(r.wsDirs())
		if d == "" {
			return nil
		}
		if r.next()&1 != 0 {
			o := r.newOut()
			r.logf(os.Rename(d, o), "mv %s %s", r.rel(d), r.rel(o))
		} else {
			r.logf(os.RemoveAll(d), "rm -r %s", r.rel(d))
		}
		target := linkTo(d, e, r.next()&1 != 0)
		r.logf(os.Symlink(target, d), "ln -s %s %s", r.shown(target), r.rel(d))
	case 10: // replace a link or file S by a directory (maybe with a .git)
		_, others, _ := r.wsScan()
		s := r.pick(others)
		if s == "" {
			return nil
		}
		r.logf(os.Remove(s), "rm %s", r.rel(s))
		r.logf(os.Mkdir(s, 0o755), "mkdir %s", r.rel(s))
		if r.next()&1 != 0 && filepath.Base(s) != ".git" {
			g := filepath.Join(s, ".git")
			r.logf(os.Mkdir(g, 0o755), "mkdir %s", r.rel(g))
		}
	case 11: // write P/N (N may be .git: a .git file that points nowhere)
		p := filepath.Join(r.pick(r.wsDirs()), r.name())
		r.logf(os.WriteFile(p, []byte("x\n"), 0o644), "write %s", r.rel(p))
	case 12: // rm S (a file, a link, a .git file or link)
		_, others, _ := r.wsScan()
		s := r.pick(others)
		if s == "" {
			return nil
		}
		r.logf(os.Remove(s), "rm %s", r.rel(s))
	case 13: // mv D out, maybe change it there, mv it back
		d := r.pick(r.wsSubdirs())
		if d == "" {
			return nil
		}
		o := r.newOut()
		r.logf(os.Rename(d, o), "mv %s %s", r.rel(d), r.rel(o))
		if b := r.next(); b&1 != 0 {
			ds, _, _ := scan(o)
			in := r.pick(ds)
			if in != "" {
				p := filepath.Join(in, []string{".git", "z"}[int(b>>1)&1])
				r.logf(os.Mkdir(p, 0o755), "mkdir %s", r.rel(p))
			}
		}
		r.logf(os.Rename(o, d), "mv %s %s (back)", r.rel(o), r.rel(d))
	case 14: // chmod D
		d := r.pick(r.wsDirs())
		mode := []fs.FileMode{0, 0o755, 0o311, 0o500}[int(r.next())%4]
		r.logf(os.Chmod(d, mode), "chmod %o %s", mode, r.rel(d))
	case 15: // mv D out (it stays there, watched or not)
		d := r.pick(r.wsSubdirs())
		if d == "" {
			return nil
		}
		o := r.newOut()
		r.logf(os.Rename(d, o), "mv %s %s", r.rel(d), r.rel(o))
	case 16: // mv out/O P/N (back in, or in for the first time)
		o, p := r.pick(r.outTops()), r.pick(r.wsDirs())
		if o == "" {
			return nil
		}
		to := filepath.Join(p, r.name())
		r.logf(os.Rename(o, to), "mv %s %s (from outside)", r.rel(o), r.rel(to))
	case 17: // change something outside: mkdir X/N or X/.git
		x := r.pick(r.outDirs())
		if x == "" {
			return nil
		}
		p := filepath.Join(x, r.name())
		r.logf(os.Mkdir(p, 0o755), "mkdir %s", r.rel(p))
	case 18: // exchange D and E (renameat2 RENAME_EXCHANGE)
		d, e := r.pick(r.wsSubdirs()), r.pick(r.wsSubdirs())
		if d == "" || d == e {
			return nil
		}
		err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, e, unix.RENAME_EXCHANGE)
		r.logf(err, "exchange %s %s", r.rel(d), r.rel(e))
	case 19: // move a .git: D/.git to E/.git, or D/N to D/.git, or D/.git to D/N
		d, e := r.pick(r.wsDirs()), r.pick(r.wsDirs())
		var from, to string
		switch r.next() % 3 {
		case 0:
			from, to = filepath.Join(d, ".git"), filepath.Join(e, ".git")
		case 1:
			from, to = filepath.Join(d, r.name()), filepath.Join(d, ".git")
		default:
			from, to = filepath.Join(d, ".git"), filepath.Join(e, r.name())
		}
		r.logf(os.Rename(from, to), "mv %s %s", r.rel(from), r.rel(to))
	case 20: // replace directory D by a file
		d := r.pick(r.wsSubdirs())
		if d == "" {
			return nil
		}
		r.logf(os.RemoveAll(d), "rm -r %s", r.rel(d))
		r.logf(os.WriteFile(d, []byte("x\n"), 0o644), "write %s", r.rel(d))
	case 21: // a Check cut short (a workspace over MaxDirs, a cancelled context)
		if r.checks >= watchMaxChecks {
			r.next()
			return nil
		}
		return r.check(1 + int(r.next())%6)
	case 22: // mv S P/N (a file or link, a .git one included)
		_, others, _ := r.wsScan()
		s, p := r.pick(others), r.pick(r.wsDirs())
		if s == "" {
			return nil
		}
		to := filepath.Join(p, r.name())
		r.logf(os.Rename(s, to), "mv %s %s", r.rel(s), r.rel(to))
	default:
		if r.checks >= watchMaxChecks {
			return nil
		}
		return r.check(0)
	}
	return nil
}

// snapshotDirs is a tree's directories as the walks compare them: for
// each (relative) path, its sorted subdirectories and its .git entries.
func snapshotDirs(t *Tree, root string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[string]string, len(t.dirs))
	for p, d := range t.dirs {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			rel = p
		}
		subs := slices.Clone(d.subdirs)
		slices.Sort(subs)
		gits := make([]string, len(d.gits))
		for i, g := range d.gits {
			gits[i] = g.String()
		}
		m[rel] = fmt.Sprintf("subdirs=%v gits=%v", subs, gits)
	}
	return m
}

// watchResult is what one sequence gave: the operations done, the
// differences between the watched and the fresh walk ("" path: none).
type watchResult struct {
	log  []string
	diff []string
}

func (w watchResult) String() string {
	return "operations (after a first Check of the layout " + strings.Join(watchLayout, ", ") +
		", b/.git/hooks, a/f, a/d/.git -> ../../b/.git):\n\t" + strings.Join(w.log, "\n\t") +
		"\ndifferences (watched Tree vs fresh walk):\n\t" + strings.Join(w.diff, "\n\t")
}

// closing bounds the Trees being closed: closing an inotify instance
// waits for the kernel (milliseconds), which the next sequence need not.
var closing = make(chan struct{}, 32)

func closeLater(t *Tree) {
	closing <- struct{}{}
	go func() {
		defer func() { <-closing }()
		t.Close()
	}()
}

// runWatched runs the sequence data encodes in a new workspace under base
// (aged, from pool, when data's first byte is odd and pool is set) and
// compares the watched Tree with a fresh walk. An error is a failure of
// the harness itself.
func runWatched(base string, pool *agedPool, data []byte) (watchResult, error) {
	var seq string
	var err error
	if len(data) > 0 && data[0]&1 != 0 && pool != nil {
		seq, err = pool.take()
	} else {
		seq, err = os.MkdirTemp(base, "seq")
		if err == nil {
			err = makeWatchLayout(seq)
		}
	}
	if err != nil {
		return watchResult{}, err
	}
	defer os.RemoveAll(seq)
	root, err := filepath.EvalSymlinks(filepath.Join(seq, "ws"))
	if err != nil {
		return watchResult{}, err
	}
	r := &watchRun{data: data, pos: 1, root: root, out: filepath.Join(filepath.Dir(root), "out"), tree: new(Tree)}
	defer closeLater(r.tree)
	if len(data) > 0 && data[0]&1 != 0 && pool != nil {
		r.logf(nil, "(workspace made more than a second before)")
	}
	if err := r.check(0); err != nil {
		return watchResult{}, err
	}
	r.log = r.log[:len(r.log)-1] // the first Check is implied
	for r.pos < len(r.data) {
		if err := r.op(); err != nil {
			return watchResult{log: r.log}, err
		}
	}
	if err := r.check(0); err != nil {
		return watchResult{log: r.log}, err
	}
	r.log[len(r.log)-1] = "CHECK (the last, compared with a fresh walk)"
	watched := snapshotDirs(r.tree, root)
	fresh := &Tree{closed: true} // no watches: every directory listed
	rep, err := Check(context.Background(), root, Options{Since: time.Now().Add(time.Hour), Tree: fresh})
	if err != nil || rep.Incomplete != "" {
		return watchResult{log: r.log}, fmt.Errorf("fresh Check: %+v, %v", rep, err)
	}
	want := snapshotDirs(fresh, root)
	var diff []string
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range want {
			if !yield(p) {
				return
			}
		}
		for p := range watched {
			if _, ok := want[p]; !ok && !yield(p) {
				return
			}
		}
	}) {
		w, okW := watched[p]
		f, okF := want[p]
		switch {
		case !okW:
			diff = append(diff, fmt.Sprintf("%s: missed by the watched walk (fresh: %s)", p, f))
		case !okF:
			diff = append(diff, fmt.Sprintf("%s: only in the watched walk (%s), not there any more", p, w))
		case w != f:
			diff = append(diff, fmt.Sprintf("%s: watched %s, fresh %s", p, w, f))
		}
	}
	return watchResult{log: r.log, diff: diff}, nil
}

// minimiseWatched drops what it can of data while the sequence still
// makes the walks differ.
func minimiseWatched(base string, pool *agedPool, data []byte) []byte {
	fails := func(d []byte) bool {
		res, err := runWatched(base, pool, d)
		return err == nil && len(res.diff) > 0
	}
	data = slices.Clone(data)
	if data[0]&1 != 0 {
		if d := append([]byte{data[0] &^ 1}, data[1:]...); fails(d) {
			data = d
		}
	}
	for chunk := len(data) / 2; chunk >= 1; chunk /= 2 {
		for i := 1; i+chunk <= len(data); {
			d := append(slices.Clone(data[:i]), data[i+chunk:]...)
			if fails(d) {
				data = d
				continue
			}
			i += chunk
		}
	}
	return data
}

// watchSeeds are sequences worth trying first: each is a first byte (odd:
// an aged workspace) then operations, each a kind byte and its operands.
var watchSeeds = [][]byte{
	{0, 0, 1, 0, 23},                          // mkdir, Check
	{1, 3, 1, 2, 0, 6, 3, 1},                  // mv a dir within, mkdir .git in one
	{0, 15, 1, 23, 17, 0, 4, 16, 0, 0, 0},     // mv out, Check, change outside, mv back in
	{1, 13, 2, 3, 0},                          // away and back with a .git made while away
	{0, 9, 1, 2, 0, 0, 6, 2, 0},               // dir replaced by a link, then .git
	{1, 18, 1, 3, 23, 6, 1, 0},                // exchange, Check, .git
	{0, 21, 0, 6, 4, 1, 21, 1, 23},            // a Check cut short among others
	{1, 5, 0, 1, 1, 2, 3, 23, 19, 0, 3, 1, 1}, // a tree with .git moved in, then a .git moved
	{0, 4, 3, 4, 23, 10, 0, 1},                // mv over an empty dir, replace a file by a dir
	[]byte("08001"),                           // mkdir, a Check cut short, a Check: the events read by the cut one were lost
}

// TestWatchedTreeMatchesFreshWalk runs seeded pseudo-random sequences:
// after each, the watched Tree must hold what a fresh walk finds.
func TestWatchedTreeMatchesFreshWalk(t *testing.T) {
	const sequences = 600
	base := t.TempDir()
	pool := &agedPool{base: base, batch: sequences / 2}
	inputs := slices.Clone(watchSeeds)
	for seed := range uint64(sequences - len(watchSeeds)) {
		rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		data := make([]byte, 1+rng.IntN(120))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		inputs = append(inputs, data)
	}
	failed, ops, opsFailed, checks := 0, 0, 0, 0
	for i, data := range inputs {
		res, err := runWatched(base, pool, data)
		if err != nil {
			t.Fatalf("sequence %d (%x): %v\n%s", i, data, err, res)
		}
		for _, l := range res.log {
			switch {
			case strings.HasPrefix(l, "CHECK"):
				checks++
			case strings.HasPrefix(l, "("):
			default:
				ops++
				if strings.Contains(l, "(failed: ") {
					opsFailed++
				}
			}
		}
		if len(res.diff) == 0 {
			continue
		}
		small := minimiseWatched(base, pool, data)
		res, _ = runWatched(base, pool, small)
		t.Errorf("sequence %d: the watched Tree differs from a fresh walk; minimised input %x:\n%s", i, small, res)
		if failed++; failed == 3 {
			t.Fatalf("stopping after %d failing sequences", failed)
		}
	}
	t.Logf("%d sequences: %d operations (%d of them failed, as a command's may), %d Checks", len(inputs), ops, opsFailed, checks)
}

// FuzzWatchedTree: the same, from the fuzzer's inputs.
func FuzzWatchedTree(f *testing.F) {
	for _, s := range watchSeeds {
		f.Add(s)
	}
	base := f.TempDir()
	pool := &agedPool{base: base, batch: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			data = data[:400]
		}
		res, err := runWatched(base, pool, data)
		if err != nil {
			t.Fatalf("%v\n%s", err, res)
		}
		if len(res.diff) > 0 {
			t.Fatalf("the watched Tree differs from a fresh walk:\n%s", res)
		}
	})
}

// TestTree_SettledAfterQuietChecks: after a whole walk with every
// directory watched the tree is settled, a Check that inotify reported
// nothing for finds the watcher quiet (so it looks only at
// repositories), and a directory made since is walked to by the next.
func TestTree_SettledAfterQuietChecks(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"a/b", "c/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var tree Tree
	defer tree.Close()
	since := time.Now().Add(time.Hour)
	check := func() {
		t.Helper()
		if _, err := Check(context.Background(), ws, Options{Since: since, Tree: &tree}); err != nil {
			t.Fatal(err)
		}
	}
	check()
	if !tree.settled {
		t.Fatal("a whole walk with every directory watched did not settle the tree")
	}
	check()
	if !tree.w.quiet {
		t.Fatal("inotify reported events with nothing changed")
	}
	if err := os.Mkdir(filepath.Join(ws, "a", "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	check()
	if tree.w.quiet || tree.dirs[filepath.Join(ws, "a", "new")] == nil {
		t.Fatal("the Check after a directory was made did not walk to it")
	}
}

// TestTree_WatchBudget: past its budget of watches a Tree watches no more
// directories, is never settled, and still finds what changed in the
// directories it does not watch.
func TestTree_WatchBudget(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"a/b", "c/d", "e"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var tree Tree
	defer tree.Close()
	tree.mu.Lock()
	tree.root, tree.w = ws, newWatcher()
	tree.w.budget = 2
	tree.mu.Unlock()
	check := func(since time.Time) Report {
		t.Helper()
		rep, err := Check(context.Background(), ws, Options{Since: since, Tree: &tree})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	check(time.Now().Add(time.Hour))
	check(time.Now().Add(time.Hour))
	if n := len(tree.w.byWD); n > 2 {
		t.Fatalf("%d watches; want at most the budget, 2", n)
	}
	if tree.settled {
		t.Fatal("a tree past its budget counted as settled")
	}
	since := time.Now().Add(-time.Minute)
	os.MkdirAll(filepath.Join(ws, "e", "f", ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(ws, "e", "f", ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	if rep := check(since); len(rep.Findings) != 1 {
		t.Fatalf("findings %+v; want the hook planted where no watch was", rep.Findings)
	}
}
