package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/term"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// authorize passes command through the gate before any backend sees it.
// On a terminal a command that needs approval is put to the user; without
// one it is denied, with a hint on how to allow it.
// dir is where the command starts ("" if unknown), for relative paths;
// spec is what the environment will be opened with (its sandbox).
func (a *app) authorize(ctx context.Context, command, backend, dir string, hostAccess bool, spec envs.Spec) error {
	sb := a.svc.GateSandbox(backend, spec)
	return a.withAsker(func(asker approval.Asker) error {
		return a.svc.Authorize(ctx, service.Authorization{Command: command, Backend: backend, HostAccess: hostAccess, SessionKey: "cli", Asker: asker, Dir: dir, Sandbox: sb})
	})
}

// hostDir is the absolute directory a command given --cwd dir starts in on
// this machine ("" when it cannot be told).
func hostDir(dir string) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	return abs
}

// withAsker runs f with whoever can answer the gate's questions: the user
// at the terminal, or nobody (nil: such commands are refused). It then
// tells the user where an "always" answer was saved.
func (a *app) withAsker(f func(approval.Asker) error) error {
	answers := &answerLog{}
	var asker approval.Asker
	if a.interactive() {
		// Answers are read through a handle closed on return, so that the
		// prompter's reader does not stay blocked on the terminal and
		// take keys typed later (into an interactive --pty command).
		in := io.Reader(a.stdin)
		if f := a.stdinTerminal(); f != nil {
			if r, err := openTerminalReader(int(f.Fd())); err == nil {
				defer r.Close()
				in = r
			}
		}
		prompter := approval.NewTerminalPrompter(in, a.stderr)
		defer prompter.Close()
		broker := approval.NewBroker(approval.BrokerOptions{Prompter: prompter})
		defer broker.Close()
		answers.Asker = broker
		asker = answers
	}
	if err := f(asker); err != nil {
		return err
	}
	if answers.last.Kind == approval.AnswerAlways {
		if file := a.svc.ApprovalFile(); file != "" {
			fmt.Fprintf(a.stderr, "runbox: approval saved to %s\n", file)
		} else {
			fmt.Fprintln(a.stderr, "runbox: approved for this run only: there is no configuration file to save it to (set $XDG_CONFIG_HOME, $HOME or --config)")
		}
	}
	return nil
}

// answerLog is an Asker that remembers the last answer it passed on, so
// that the CLI can tell the user where an "always" answer went.
type answerLog struct {
	approval.Asker
	last approval.Answer
}

func (l *answerLog) Ask(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	ans, err := l.Asker.Ask(ctx, p)
	l.last = ans
	return ans, err
}

// hostAccess reports whether backend's commands can touch this machine
// (the gate may relax its ask tier for backends that cannot).
func (a *app) hostAccess(ctx context.Context, backend string, spec envs.Spec) bool {
	return a.svc.HostAccess(ctx, backend, spec)
}

// interactive reports whether a human can answer a prompt: stdin and
// stderr are both terminals.
func (a *app) interactive() bool {
	in, ok1 := a.stdin.(*os.File)
	errf, ok2 := a.stderr.(*os.File)
	return ok1 && ok2 && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(errf.Fd()))
}
