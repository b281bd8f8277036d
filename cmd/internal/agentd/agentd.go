// Package agentd is the program that runs inside a sandbox: the local
// backend, configured from runbox's configuration and the sandbox's own
// launch environment, served to one client over stdin/stdout with the
// agent protocol (package agent). Both `runbox agent` and the dedicated
// runbox-agent binary (cmd/runbox-agent) are this.
//
// It runs commands without a subreaper: the sandbox bounds what a command
// leaves behind (it goes with the environment), and a process a command
// starts to outlive it there (a job daemon) must not be torn down with
// it. Nothing here reads the host's configuration: only what the
// sandbox's environment and files say.
package agentd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/statedir"
)

// stateDir is runbox's state directory in the sandbox, named by the
// launch environment (the process's own when it is nil) as runbox names
// it on a host: the agent keeps its change journals there.
func stateDir(environ []string) string {
	if environ == nil {
		return statedir.Default(os.Getenv)
	}
	return statedir.Default(func(key string) string {
		for _, kv := range slices.Backward(environ) {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				return v
			}
		}
		return ""
	})
}

// onTerminal reports whether the agent's stdout is a terminal (a PTY
// session is how runbox reaches the agent in a Daytona sandbox), whose
// relay must never have to queue many pieces of what the agent writes:
// it keeps less in flight and acknowledges in larger steps there.
func onTerminal(stdout io.Writer) bool {
	f, ok := stdout.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn() // not Fd, which would make it blocking
	if err != nil {
		return false
	}
	tty := false
	rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		tty = err == nil
	})
	return tty
}

// Options configures [Serve].
type Options struct {
	// Config is runbox's configuration as the sandbox has it (shell,
	// grace, containment, limits, spawn lists). The zero value is not
	// usable: pass config.Default() at least.
	Config config.Config
	// Environ is the base environment of commands: the agent's sealed
	// launch environment (spawn scrubs it for each child). Nil means this
	// process's environment.
	Environ []string
	// Build describes the agent in the handshake. Empty means the agent
	// package's default (OS/arch).
	Build string
	// Logger receives debug logs; it must not write to stdout, the
	// protocol stream. Nil discards them.
	Logger *slog.Logger
}

// Serve serves the local backend on stdin/stdout until the client goes
// away or ctx ends, then kills what the client left running and closes
// the environment.
func Serve(ctx context.Context, stdin io.Reader, stdout io.Writer, opts Options) error {
	env, err := local.New(local.AgentOptions(opts.Config, opts.Environ, opts.Logger))
	if err != nil {
		return fmt.Errorf("agentd: %w", err)
	}
	so := agent.ServerOptions{Build: opts.Build, StateDir: stateDir(opts.Environ), Logger: opts.Logger}
	if onTerminal(stdout) {
		so.SendWindow, so.AckEvery = agent.TerminalSendWindow, agent.TerminalAckEvery
	}
	srv := agent.NewServer(env, so)
	serveErr := srv.Serve(ctx, agent.Stdio(stdin, stdout))
	closeErr := env.Close(context.WithoutCancel(ctx))
	if serveErr != nil {
		return fmt.Errorf("agentd: %w", serveErr)
	}
	return closeErr
}
