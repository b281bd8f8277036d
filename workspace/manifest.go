package workspace

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/runbox/runbox/statedir"
)

// Manifest is what the last push of a task sent: the base of the
// three-way comparison, and what the next push is measured against.
type Manifest struct {
	Task string `json:"task"`
	// Local is the absolute local directory the task syncs.
	Local string `json:"local"`
	// Remote is the directory in the sandbox.
	Remote string `json:"remote"`
	// Options are the filter and limits the push used; the comparison
	// uses the same.
	Exclude     []string `json:"exclude,omitempty"`
	NoGitignore bool     `json:"no_gitignore,omitempty"`
	IncludeGit  bool     `json:"include_git,omitempty"`
	Protected   []string `json:"protected,omitempty"`
	MaxBytes    int64    `json:"max_bytes,omitempty"`
	// Scanned is when the scan behind the entries began (Unix
	// nanoseconds). A file whose modification time is not before it may
	// have changed again within the clock's resolution without changing
	// its size, so its hash is not trusted by the next scan.
	Scanned int64 `json:"scanned,omitempty"`
	// ID is the identity of the tree the last full push made, written in
	// its marker file (see [MarkerName]): the manifest is the base of
	// that tree only. Empty in a manifest from before markers: then it is
	// the base of no tree.
	ID string `json:"id,omitempty"`
	// Entries are the pushed paths, sorted.
	Entries []*Entry `json:"entries"`
}

// tree returns the entries by path.
func (m *Manifest) tree() Tree {
	t := Tree{}
	for _, e := range m.Entries {
		t[e.Path] = e
	}
	return t
}

// setTree replaces the entries with t's, sorted by path.
func (m *Manifest) setTree(t Tree) {
	m.Entries = m.Entries[:0]
	for _, e := range t {
		m.Entries = append(m.Entries, e)
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
}

// TaskFileName is a file name for task: the task's name when it is a
// plain one (a letter or digit, then up to 63 letters, digits, dots,
// underscores and dashes), else a hash of it: a task's name must never
// choose where a file is written.
func TaskFileName(task string) string {
	if plainTask(task) {
		return task
	}
	s := sha256.Sum256([]byte(task))
	return "task-" + hex.EncodeToString(s[:12])
}

// plainTask reports whether task is a name TaskFileName keeps as it is.
func plainTask(task string) bool {
	if task == "" || len(task) > 64 {
		return false
	}
	for i := 0; i < len(task); i++ {
		c := task[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ManifestPath is where the task's manifest lives under stateDir, named
// by TaskFileName.
func ManifestPath(stateDir, task string) string {
	return filepath.Join(stateDir, "sync", TaskFileName(task)+".json")
}

// syncDir returns the checked directory that holds the manifests,
// creating it (0700) when missing.
func syncDir(stateDir string) (string, error) {
	if stateDir == "" {
		return "", errors.New("workspace: no state directory")
	}
	dir, err := statedir.Prepare(filepath.Join(stateDir, "sync"))
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return dir, nil
}

// Load reads the manifest of task from stateDir. A task never pushed is
// [ErrNoManifest].
func Load(stateDir, task string) (*Manifest, error) {
	if _, err := syncDir(stateDir); err != nil {
		return nil, err
	}
	p := ManifestPath(stateDir, task)
	f, err := statedir.OpenFile(p, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: task %q (push it with runbox run --sync)", ErrNoManifest, task)
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: manifest of %q: %w", task, err)
	}
	defer f.Close()
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(f, 1<<30)).Decode(&m); err != nil {
		return nil, fmt.Errorf("workspace: manifest %s: %w", p, err)
	}
	return &m, nil
}

// save writes m for its task: to a new private file that is then renamed
// over the old manifest, so a reader sees the old one or the new one.
func (m *Manifest) save(stateDir string) error {
	if _, err := syncDir(stateDir); err != nil {
		return err
	}
	p := ManifestPath(stateDir, m.Task)
	tmp := p + ".tmp-" + rand.Text()
	f, err := statedir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("workspace: save manifest: %w", err)
	}
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	err = enc.Encode(m)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace: save manifest: %w", err)
	}
	return nil
}

// lock takes the task's lock (an flock on a private file beside the
// manifest), so that two pushes or applies of one task do not interleave
// their reads and writes of the manifest. The returned func releases it.
func lock(stateDir, task string) (func(), error) {
	if _, err := syncDir(stateDir); err != nil {
		return nil, err
	}
	p := strings.TrimSuffix(ManifestPath(stateDir, task), ".json") + ".lock"
	f, err := statedir.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("workspace: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// removeManifest deletes the task's manifest (the caller holds the lock).
func removeManifest(stateDir, task string) error {
	err := os.Remove(ManifestPath(stateDir, task))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: remove manifest: %w", err)
	}
	return nil
}
