package undo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/runbox/runbox/undo"
)

// TestJournal_TwoProcessesShareOneJournal opens the same journal twice
// (each with its own lock file description, as two processes would) and
// interleaves them: a command ended in one is undone from the other, and
// the first then sees the undo's writes as no change of its own. Breaks
// if either acts on a stale state.
func TestJournal_TwoProcessesShareOneJournal(t *testing.T) {
	ctx := context.Background()
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	files(t, root, base)
	serve := openAt(t, root, state, undo.Options{})
	cli := openAt(t, root, state, undo.Options{})

	before := snapshot(t, root)
	rec := command(t, serve, "gen", func() { run(t, root, "echo g > gen.txt; rm a.txt") })
	steps, err := cli.Steps(ctx)
	must(t, err)
	if len(steps) != 1 || steps[0].Seq != rec.Step || !slices.Equal(steps[0].Commands, []string{"gen"}) {
		t.Fatalf("steps seen by the other process = %+v; want gen's step %d", steps, rec.Step)
	}
	if _, err := cli.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo from the other process = %v", err)
	}
	requireSame(t, before, snapshot(t, root), true)

	rec = command(t, serve, "next", func() { run(t, root, "echo n > b.txt") })
	if got := kinds(rec.Changes); !slices.Equal(got, []string{"b.txt modified file"}) {
		t.Errorf("next record after the other process's undo = %q; want only b.txt", got)
	}
	steps, err = serve.Steps(ctx)
	must(t, err)
	if len(steps) != 1 || steps[0].Seq != rec.Step {
		t.Errorf("steps = %+v; want only next's step (the undo's writes are no step)", steps)
	}
}

// TestJournal_ConcurrentCommandsNameEachOther: commands open at the same
// time, in two processes, share the steps made meanwhile and each record
// names the other.
func TestJournal_ConcurrentCommandsNameEachOther(t *testing.T) {
	ctx := context.Background()
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	one := openAt(t, root, state, undo.Options{})
	two := openAt(t, root, state, undo.Options{})
	a, err := one.Begin(ctx, "a")
	must(t, err)
	b, err := two.Begin(ctx, "b")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	ra, err := a.End(ctx)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, "g"), []byte("y"), 0o644))
	rb, err := b.End(ctx)
	must(t, err)
	if !slices.Equal(ra.Concurrent, []string{"b"}) || !slices.Equal(rb.Concurrent, []string{"a"}) {
		t.Errorf("concurrent = %q and %q; want [b] and [a]", ra.Concurrent, rb.Concurrent)
	}
	if got := kinds(rb.Changes); !slices.Equal(got, []string{"f created file", "g created file"}) {
		t.Errorf("b's record = %q; want f (made while both were open) and g", got)
	}
}

// TestJournal_ParallelUse hammers two journals on the same directory from
// several goroutines (run it with -race). Every command's record must
// hold exactly its own file, since each waits for the lock.
func TestJournal_ParallelUse(t *testing.T) {
	ctx := context.Background()
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	js := []*undo.Journal{openAt(t, root, state, undo.Options{}), openAt(t, root, state, undo.Options{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for g := range 4 {
		wg.Go(func() {
			for i := range 5 {
				name := fmt.Sprintf("g%d-%d", g, i)
				c, err := js[g%2].Begin(ctx, name)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := c.End(ctx); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[name] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 20 {
		t.Errorf("ended %d commands; want 20", len(seen))
	}
}

// TestBegin_DeadProcessCommandIsDropped: a command whose process died
// before End is forgotten, and its changes become a step named after it,
// which undo can revert. Breaks if a crashed command stays open forever
// or its changes pass for the user's own.
func TestBegin_DeadProcessCommandIsDropped(t *testing.T) {
	ctx := context.Background()
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	files(t, root, base)
	j := openAt(t, root, state, undo.Options{})
	command(t, j, "first", func() {}) // takes the first checkpoint
	before := snapshot(t, root)

	cmd := exec.Command(os.Args[0], root, state)
	cmd.Env = append(os.Environ(), helperEnv+"=begin-and-exit")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	rec := command(t, j, "after", func() {})
	if rec.Step != 0 || len(rec.Concurrent) != 0 {
		t.Errorf("record of the next command = %+v; want no step and no concurrent command (the crashed one is gone)", rec)
	}
	steps, err := j.Steps(ctx)
	must(t, err)
	if len(steps) != 1 || !slices.Equal(steps[0].Commands, []string{"crashed"}) {
		t.Fatalf("steps = %+v; want one step of the crashed command", steps)
	}
	done, err := j.Undo(ctx, undo.UndoOptions{})
	if err != nil || !slices.Equal(done.Commands, []string{"crashed"}) {
		t.Fatalf("Undo = %+v, %v; want the crashed command undone", done, err)
	}
	requireSame(t, before, snapshot(t, root), true)
}

// TestJournal_Close makes later calls fail with ErrClosed.
func TestJournal_Close(t *testing.T) {
	j, err := undo.Open(t.TempDir(), filepath.Join(t.TempDir(), "s"), undo.Options{})
	must(t, err)
	c, err := j.Begin(context.Background(), "x")
	must(t, err)
	must(t, j.Close())
	if _, err := c.End(context.Background()); !errors.Is(err, undo.ErrClosed) {
		t.Errorf("End after Close = %v; want ErrClosed", err)
	}
	if _, err := j.Steps(context.Background()); !errors.Is(err, undo.ErrClosed) {
		t.Errorf("Steps after Close = %v; want ErrClosed", err)
	}
}

// TestOpen_Refuses a journal directory that belongs to another root, a
// root that is not a directory, and negative bounds.
func TestOpen_Refuses(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	rootA, rootB := t.TempDir(), t.TempDir()
	j := openAt(t, rootA, state, undo.Options{})
	command(t, j, "x", func() {})
	if _, err := undo.Open(rootB, state, undo.Options{}); err == nil {
		t.Error("Open of a journal with another root succeeded")
	}
	f := filepath.Join(rootA, "file")
	must(t, os.WriteFile(f, nil, 0o644))
	if _, err := undo.Open(f, filepath.Join(t.TempDir(), "s"), undo.Options{}); err == nil {
		t.Error("Open with a file as the root succeeded")
	}
	if _, err := undo.Open(rootA, filepath.Join(t.TempDir(), "s"), undo.Options{MaxBytes: -1}); err == nil {
		t.Error("Open with a negative bound succeeded")
	}
}

// TestOpen_StateInsideRootIsNotRecorded: a journal kept inside its own
// workspace leaves itself out.
func TestOpen_StateInsideRootIsNotRecorded(t *testing.T) {
	root := t.TempDir()
	j := openAt(t, root, filepath.Join(root, ".runbox", "undo"), undo.Options{})
	rec := command(t, j, "x", func() { must(t, os.WriteFile(filepath.Join(root, "f"), []byte("f"), 0o644)) })
	if got := kinds(rec.Changes); !slices.Equal(got, []string{"f created file"}) {
		t.Errorf("record = %q; want only f", got)
	}
}

// TestEnd_ListsAtMostMaxListed and counts the rest.
func TestEnd_ListsAtMostMaxListed(t *testing.T) {
	root := t.TempDir()
	j := open(t, root, undo.Options{MaxListed: 2})
	rec := command(t, j, "five", func() { run(t, root, "touch 1 2 3 4 5") })
	if got := kinds(rec.Changes); !slices.Equal(got, []string{"1 created file", "2 created file"}) || rec.More != 3 {
		t.Errorf("record = %q and %d more; want the first 2 and 3 more", got, rec.More)
	}
}

// TestBegin_CancelledLeavesTheJournalAsItWas: a cancelled checkpoint
// records nothing, and the next one sees the changes.
func TestBegin_CancelledLeavesTheJournalAsItWas(t *testing.T) {
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	command(t, j, "first", func() {})
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("edited"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Begin(ctx, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin with a cancelled context = %v; want context.Canceled", err)
	}
	steps, err := j.Steps(context.Background())
	must(t, err)
	if len(steps) != 0 {
		t.Fatalf("steps after a cancelled Begin = %+v; want none", steps)
	}
	command(t, j, "next", func() {})
	steps, err = j.Steps(context.Background())
	must(t, err)
	if len(steps) != 1 || steps[0].Changes != 1 || len(steps[0].Commands) != 0 {
		t.Errorf("steps = %+v; want the outside edit as one step", steps)
	}
}

// TestCheckpoint_UnreadableDirectoryIsNotDeleted: a command that makes a
// directory unreadable has not deleted what it holds. Breaks if the walk
// takes "cannot list" for "empty" (undo would then recreate every file).
// Root reads everything, so this runs only as another user.
func TestCheckpoint_UnreadableDirectoryIsNotDeleted(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can read a directory of mode 0000")
	}
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	rec := command(t, j, "lock", func() { must(t, os.Chmod(filepath.Join(root, "d"), 0)) })
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "d"), 0o755) })
	if got := kinds(rec.Changes); !slices.Equal(got, []string{"d mode dir"}) {
		t.Errorf("record = %q; want only d's mode", got)
	}
	if _, err := j.Undo(context.Background(), undo.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	requireSame(t, before, snapshot(t, root), true)
}

// TestJournal_SeesSavesByAnotherAfterExchanges: a save overwrites the
// spare state file and exchanges it with meta, so after saves by another
// process meta can name again the very file this process holds, with
// another state in it. The process must still see that state. The test
// runs commands in the other journal until meta names the held file
// again (the case an inode comparison alone gets wrong), then asks the
// first for the steps.
func TestJournal_SeesSavesByAnotherAfterExchanges(t *testing.T) {
	ctx := context.Background()
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	one := openAt(t, root, state, undo.Options{})
	two := openAt(t, root, state, undo.Options{})
	command(t, one, "first", func() { run(t, root, "echo 1 > first.txt") })
	held := inode(t, filepath.Join(state, "meta"))
	labels := []string{"first"}
	for i := 0; ; i++ {
		if i == 6 {
			t.Fatal("meta never named the first journal's file again")
		}
		label := fmt.Sprint("other-", i)
		command(t, two, label, func() { run(t, root, "echo x > "+label+".txt") })
		labels = append(labels, label)
		if inode(t, filepath.Join(state, "meta")) == held {
			break
		}
	}
	steps, err := one.Steps(ctx)
	must(t, err)
	var got []string
	for _, s := range steps {
		got = append(got, s.Commands...)
	}
	if !slices.Equal(got, labels) {
		t.Fatalf("steps seen by the first journal: %q; want %q", got, labels)
	}
}

// TestJournal_ReadsStateOfEarlierVersions: a state file as earlier
// versions wrote it (gob from its first byte, replaced by rename, no
// spare) is read, and the next save writes the current form.
func TestJournal_ReadsStateOfEarlierVersions(t *testing.T) {
	ctx := context.Background()
	root, state := journalWithStep(t, "old")
	meta := filepath.Join(state, "meta")
	b, err := os.ReadFile(meta)
	must(t, err)
	const prefix = 16 // the magic and the generation
	if len(b) < prefix || string(b[:6]) != "RBUNDO" {
		t.Fatalf("meta starts %q; want the magic", b[:min(len(b), prefix)])
	}
	must(t, os.WriteFile(meta+".old", b[prefix:], 0o600))
	must(t, os.Rename(meta+".old", meta))
	must(t, os.Remove(meta+".next"))

	again := openAt(t, root, state, undo.Options{})
	steps, err := again.Steps(ctx)
	must(t, err)
	if len(steps) != 1 || !slices.Equal(steps[0].Commands, []string{"old"}) {
		t.Fatalf("steps from the earlier form = %+v; want old's", steps)
	}
	command(t, again, "new", func() { run(t, root, "echo n > new.txt") })
	if b, _ := os.ReadFile(meta); string(b[:6]) != "RBUNDO" {
		t.Errorf("meta after a save starts %q; want the current form", b[:min(len(b), prefix)])
	}
	steps, err = openAt(t, root, state, undo.Options{}).Steps(ctx)
	if err != nil || len(steps) != 2 {
		t.Fatalf("steps after the save = %+v, %v; want two", steps, err)
	}
}

// TestJournal_DamagedSpareStateIgnored: meta.next holds the state before
// meta's, or a save cut short by a crash: whatever it holds, the journal
// reads meta, and the next save overwrites the spare.
func TestJournal_DamagedSpareStateIgnored(t *testing.T) {
	ctx := context.Background()
	root, state := journalWithStep(t, "one")
	must(t, os.WriteFile(filepath.Join(state, "meta.next"), []byte("RBUNDO\x00\x01 torn write"), 0o600))
	again := openAt(t, root, state, undo.Options{})
	command(t, again, "two", func() { run(t, root, "echo 2 > two.txt") })
	steps, err := openAt(t, root, state, undo.Options{}).Steps(ctx)
	if err != nil || len(steps) != 2 {
		t.Fatalf("steps = %+v, %v; want one and two", steps, err)
	}
}

// journalWithStep makes a journal with one command's step, labelled
// label, and closes it: it returns the workspace and the state
// directory.
func journalWithStep(t *testing.T, label string) (root, state string) {
	t.Helper()
	root, state = t.TempDir(), filepath.Join(t.TempDir(), "state")
	j := openAt(t, root, state, undo.Options{})
	command(t, j, label, func() { run(t, root, "echo x > "+label+".txt") })
	must(t, j.Close())
	return root, state
}

// inode is the inode number path names.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
