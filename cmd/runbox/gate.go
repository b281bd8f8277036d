package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/term"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
)

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
	asker, answers, done := a.openAsker()
	defer done()
	if err := f(asker); err != nil {
		return err
	}
	a.reportSaved(answers)
	return nil
}

// openAsker returns whoever can answer the gate's questions (nil when
// nobody can), the log of its answers, and done, which stops asking.
func (a *app) openAsker() (approval.Asker, *answerLog, func()) {
	answers := &answerLog{}
	if !a.interactive() {
		return nil, answers, func() {}
	}
	// Answers are read through a handle closed by done, so that the
	// prompter's reader does not stay blocked on the terminal and take
	// keys typed later (into an interactive --pty command).
	var closers []func()
	in := io.Reader(a.stdin)
	if f := a.stdinTerminal(); f != nil {
		if r, err := openTerminalReader(int(f.Fd())); err == nil {
			closers = append(closers, func() { r.Close() })
			in = r
		}
	}
	prompter := approval.NewTerminalPrompter(in, a.stderr)
	broker := approval.NewBroker(approval.BrokerOptions{Prompter: prompter})
	answers.Asker = broker
	closers = append(closers, func() { prompter.Close() }, func() { broker.Close() })
	var once sync.Once
	return answers, answers, func() {
		once.Do(func() {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		})
	}
}

// reportSaved tells the user where an "always" answer was saved.
func (a *app) reportSaved(answers *answerLog) {
	if answers.last.Kind != approval.AnswerAlways {
		return
	}
	if file := a.svc.ApprovalFile(); file != "" {
		fmt.Fprintf(a.stderr, "runbox: approval saved to %s\n", file)
	} else {
		fmt.Fprintln(a.stderr, "runbox: approved for this run only: there is no configuration file to save it to (set $XDG_CONFIG_HOME, $HOME or --config)")
	}
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
