package confine

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Rights granted by the file rules.
const (
	readFile   = ll.AccessFSExecute | ll.AccessFSReadFile
	readDir    = readFile | ll.AccessFSReadDir
	writeFile  = ll.AccessFSWriteFile | ll.AccessFSTruncate
	writeTree  = writeFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer
	deviceFile = readFile | writeFile | ll.AccessFSIoctlDev
)

// grant is one rule: rights on the hierarchy under path (on the file
// alone when it is not a directory).
type grant struct {
	path   string
	rights landlock.AccessFSSet
	dir    bool
}

// fileGrants computes the Landlock file rules of p. Landlock only allows,
// so "read everything but the deny list" becomes: read on every entry
// beside each step of the path down to a denied path, and on the steps
// themselves only the right to list them. The same split is applied to a
// writable directory that holds a denied path. Entries are enumerated
// now: one created later beside a denied path (or beside a step toward
// it) is not readable by this command. What the rules were built from is
// recorded in w (when not nil), so that rules built once can be checked
// against the file system before they are used again.
func fileGrants(p Policy, w *watch) ([]grant, error) {
	deny, err := w.resolveAll(p.DenyRead)
	if err != nil {
		return nil, err
	}
	// /dev is not readable as a whole: a raw disk read by root would
	// bypass the deny list. Only the nodes a program needs are granted.
	readCut := append(slices.Clone(deny), "/dev")
	grants, err := grantExcept(w, "/", readCut, readDir, readFile, ll.AccessFSReadDir)
	if err != nil {
		return nil, err
	}
	grants = append(grants, grant{path: "/dev", rights: ll.AccessFSReadDir, dir: true})
	for _, d := range devWritable {
		if fi, err := w.stat(d); err == nil && !fi.IsDir() {
			grants = append(grants, grant{path: d, rights: deviceFile})
		}
	}
	for _, d := range devTrees {
		if fi, err := w.stat(d); err == nil && fi.IsDir() {
			grants = append(grants, grant{path: d, rights: readDir | writeTree | ll.AccessFSIoctlDev, dir: true})
		}
	}
	writable := slices.Clone(p.Writable)
	if p.Profile == ProfileWorkspace {
		writable = append(writable, p.Workspace)
	}
	for _, path := range writable {
		real, err := w.evalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("confine: writable path %s: %w", path, err)
		}
		if real == "" {
			continue // missing: not writable (Policy.Writable)
		}
		// A step toward a denied path keeps listing only. A Landlock
		// right on a directory holds for everything below it: the
		// right to add, rename or remove its entries would hold in the
		// denied directory too (rm ~/.ssh/id_ed25519, a key moved in as
		// ~/.ssh/authorized_keys, runbox's configuration replaced).
		// The entries that existed beside the steps stay writable.
		g, err := grantExcept(w, real, deny, readDir|writeTree, readFile|writeFile, ll.AccessFSReadDir)
		if err != nil {
			return nil, err
		}
		grants = append(grants, g...)
	}
	return grants, nil
}

// grantExcept grants dirRights on the directories and fileRights on the
// files under root, except the paths in cut and what lies below them.
// Directories on the way from root to a cut path get only stepRights.
func grantExcept(w *watch, root string, cut []string, dirRights, fileRights, stepRights landlock.AccessFSSet) ([]grant, error) {
	var below []string
	for _, c := range cut {
		if c != root && within(c, root) {
			below = append(below, c)
		}
	}
	fi, err := w.stat(root)
	if err != nil {
		return nil, fmt.Errorf("confine: %w", err)
	}
	if !fi.IsDir() {
		return []grant{{path: root, rights: fileRights}}, nil
	}
	if len(below) == 0 {
		return []grant{{path: root, rights: dirRights, dir: true}}, nil
	}
	out := []grant{{path: root, rights: stepRights, dir: true}}
	entries, err := w.readDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		child := filepath.Join(root, e.name)
		if slices.Contains(below, child) {
			continue
		}
		switch {
		case e.typ == fs.ModeSymlink:
			// A rule on a link would apply to its target: the
			// target's own rule decides, so links get none.
			continue
		case e.typ == fs.ModeDir && leadsTo(child, below):
			g, err := grantExcept(w, child, below, dirRights, fileRights, stepRights)
			if err != nil {
				return nil, err
			}
			out = append(out, g...)
		case e.typ == fs.ModeDir:
			out = append(out, grant{path: child, rights: dirRights, dir: true})
		case e.typ == 0:
			out = append(out, grant{path: child, rights: fileRights})
		default:
			// Sockets, fifos and device nodes: the file rights, never
			// ioctls (those are granted for the device nodes
			// programs need).
			out = append(out, grant{path: child, rights: fileRights &^ ll.AccessFSExecute})
		}
	}
	return out, nil
}

// leadsTo reports whether a cut path lies below dir.
func leadsTo(dir string, cut []string) bool {
	for _, c := range cut {
		if c != dir && within(c, dir) {
			return true
		}
	}
	return false
}

// rules turns grants into go-landlock rules, keeping of each only the
// rights the kernel handles (an older kernel has no ioctl or truncate
// right: those operations are then not restricted at all). A path that
// vanished since it was listed is skipped.
func rules(grants []grant, handled landlock.AccessFSSet) []landlock.Rule {
	out := make([]landlock.Rule, 0, len(grants))
	for _, g := range grants {
		if r := g.rights & handled; r != 0 {
			out = append(out, landlock.PathAccess(r, g.path).IgnoreIfMissing())
		}
	}
	return out
}
