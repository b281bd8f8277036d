// Command runbox-agent is what runbox copies into a sandbox (a container,
// a remote host, a cloud sandbox): the local backend served over
// stdin/stdout with the agent protocol, and nothing else — no CLI, no
// command gate, no docker client, no job daemon. It is a fraction of the
// runbox CLI's size, so deploying it into every new sandbox is cheap (see
// docs/docker.md, "The agent build", for the numbers).
//
// Usage:
//
//	runbox-agent [agent]
//
// Both forms serve stdin/stdout until the client goes away; "agent" is
// accepted so that the host starts this binary and a full runbox CLI the
// same way (`runbox agent`). `runbox-agent version` prints the build.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/cmd/internal/agentd"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/internal/seal"
	"github.com/runbox/runbox/spawn"
)

func main() {
	// Secrets the sandbox started the agent with are kept from the
	// commands it runs, exactly as in the runbox CLI.
	launch := seal.Process(spawn.DefaultPolicy())
	args := os.Args[1:]
	switch {
	case len(args) == 0 || len(args) == 1 && args[0] == "agent":
	case len(args) == 1 && args[0] == "version":
		fmt.Println(build())
		return
	default:
		fmt.Fprintln(os.Stderr, "usage: runbox-agent [agent|version]: serves the runbox agent protocol on stdin/stdout")
		os.Exit(2)
	}
	cfg, err := config.Load("", launch.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runbox-agent:", err)
		os.Exit(125)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	err = agentd.Serve(ctx, os.Stdin, os.Stdout, agentd.Options{Config: cfg, Environ: launch.Environ(), Build: build(), Logger: log})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runbox-agent:", err)
		os.Exit(1)
	}
}

// build describes this binary in the handshake: its module version (a
// release, or "(devel)" for a source build), protocol and platform.
func build() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("runbox-agent %s protocol %d %s/%s", v, agent.Version, runtime.GOOS, runtime.GOARCH)
}
