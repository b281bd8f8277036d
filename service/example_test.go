package service_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/undo"
)

// The README's Go example, as written there: a session on the local
// backend keeps its state from one command to the next, runs confined
// (sandbox "workspace" by default), refuses what the gate refuses, and
// with RecordChanges puts the workspace back after a command.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "runbox-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/notes.txt", []byte("keep me\n"), 0o644)

	svc, err := service.New(service.Options{Config: config.Default()})
	if err != nil {
		panic(err)
	}
	defer svc.Close(ctx)
	ss, err := svc.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: dir}, RecordChanges: true})
	if err != nil {
		panic(err)
	}

	ss.Run(ctx, envs.Command{Shell: "cd /tmp && export MODE=test"})
	res, err := ss.Run(ctx, envs.Command{Shell: "echo $MODE in $(pwd)", Timeout: 5 * time.Minute})
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Output)
	fmt.Println("sandbox:", res.Sandbox)

	_, err = ss.Run(ctx, envs.Command{Shell: "rm -rf /"})
	fmt.Println("denied:", errors.Is(err, envs.ErrDenied))

	res, _ = ss.Run(ctx, envs.Command{Shell: "cd " + dir + " && echo gone > notes.txt"})
	fmt.Println("changed:", res.Changes.Changes[0].Path, res.Changes.Changes[0].Kind)
	if _, err := ss.Undo(ctx, undo.UndoOptions{}); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(dir + "/notes.txt")
	fmt.Print("after undo: ", string(b))
	// Output:
	// test in /tmp
	// sandbox: workspace
	// denied: true
	// changed: notes.txt modified
	// after undo: keep me
}
