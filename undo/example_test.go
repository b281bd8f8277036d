package undo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/runbox/runbox/undo"
)

// A command rewrites one file and creates another; the record says so,
// and undo puts the workspace back.
func Example() {
	ctx := context.Background()
	work, _ := os.MkdirTemp("", "workspace")
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(work)
	defer os.RemoveAll(state)
	os.WriteFile(filepath.Join(work, "config.txt"), []byte("debug = false\n"), 0o644)

	j, err := undo.Open(work, filepath.Join(state, "undo"), undo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer j.Close()

	c, err := j.Begin(ctx, "sed -i s/false/true/ config.txt")
	if err != nil {
		log.Fatal(err)
	}
	// The command runs here.
	os.WriteFile(filepath.Join(work, "config.txt"), []byte("debug = true\n"), 0o644)
	os.WriteFile(filepath.Join(work, "debug.log"), []byte("..."), 0o644)
	rec, err := c.End(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, ch := range rec.Changes {
		fmt.Println(ch.Kind, ch.Path)
	}

	done, err := j.Undo(ctx, undo.UndoOptions{To: rec.Step})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("undone:", done.Commands)
	b, _ := os.ReadFile(filepath.Join(work, "config.txt"))
	fmt.Print(string(b))
	_, err = os.Stat(filepath.Join(work, "debug.log"))
	fmt.Println("debug.log exists:", err == nil)
	// Output:
	// modified config.txt
	// created debug.log
	// undone: [sed -i s/false/true/ config.txt]
	// debug = false
	// debug.log exists: false
}

// Edits a user makes between commands are steps of their own; undoing
// a command that changed the same file needs Force.
func ExampleJournal_Undo_conflict() {
	ctx := context.Background()
	work, _ := os.MkdirTemp("", "workspace")
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(work)
	defer os.RemoveAll(state)
	notes := filepath.Join(work, "notes.md")
	os.WriteFile(notes, []byte("v1\n"), 0o644)

	j, _ := undo.Open(work, filepath.Join(state, "undo"), undo.Options{})
	defer j.Close()
	c, _ := j.Begin(ctx, "generate")
	os.WriteFile(notes, []byte("generated\n"), 0o644)
	c.End(ctx)
	os.WriteFile(notes, []byte("generated, then edited by hand\n"), 0o644)

	_, err := j.Undo(ctx, undo.UndoOptions{})
	fmt.Println(err)
	done, _ := j.Undo(ctx, undo.UndoOptions{Force: true})
	fmt.Println("reverted", len(done.Steps), "steps of", done.Commands)
	b, _ := os.ReadFile(notes)
	fmt.Print(string(b))
	// Output:
	// undo: notes.md changed outside any command (step 2) would be lost; undo with force to revert those too
	// reverted 2 steps of [generate]
	// v1
}
