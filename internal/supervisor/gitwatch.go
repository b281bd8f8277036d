package supervisor

import (
	"context"
	"strings"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/gitguard"
)

// gitWatchEvery is how often a confined job's workspace is checked for
// git leftovers while the job runs. A check that finds nothing new looks
// only at what inotify reported (gitguard.Tree), so it costs next to
// nothing in a quiet workspace.
const gitWatchEvery = 150 * time.Millisecond

// gitCheckBound bounds one check: the job runs meanwhile, and may swap a
// file for a fifo under it.
const gitCheckBound = 30 * time.Second

// noteGitStopped is the note of a job stopped for planting again.
const noteGitStopped = "stopped: it planted settings or hooks for the user's git to run again after the first were made inert"

// watchGit checks the job's workspace for what it plants for the user's
// git to run (internal/gitguard) while it runs, not only once it ended:
// a job that runs for minutes would otherwise leave a core.fsmonitor or a
// hook armed all that time, for the git status of the user's prompt or
// editor. Findings are made inert at once and join the job's violations.
// A file found again after it was made inert stops the job: a tool's own
// setup (husky setting core.hooksPath) writes once; a job that plants the
// same file again is keeping the user's git armed on purpose. stop ends the
// watch and returns the notes of what it found.
func (s *supervisor) watchGit() (stop func() []string) {
	if s.guard == "" {
		return func() []string { return nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var notes []string
	go func() {
		defer close(done)
		t := time.NewTicker(gitWatchEvery)
		defer t.Stop()
		inert := map[string]bool{} // what was made inert so far
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cctx, ccancel := context.WithTimeout(ctx, gitCheckBound)
			rep, err := gitguard.Check(cctx, s.guard, gitguard.Options{Since: s.started, Tree: &s.gitTree})
			ccancel()
			vs := rep.Violations()
			if len(vs) == 0 {
				continue
			}
			again := false
			for _, v := range vs {
				s.denials.Add(v)
				again = again || inert[v.Target]
				inert[v.Target] = true
			}
			notes = append(notes, rep.Warnings(err)...)
			if again {
				notes = append(notes, noteGitStopped)
				s.denials.Add(envs.Violation{Op: "git", Target: s.guard, Rule: "stopped: git leftovers planted again", Source: envs.SourceDecided})
				s.stopJob()
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		return notes
	}
}

// stopJob kills the job's whole tree at once: its container, or its
// descendants when this process is its subreaper, or its process group.
func (s *supervisor) stopJob() {
	ctx, cancel := context.WithTimeout(context.Background(), leftoverBound)
	defer cancel()
	var err error
	switch {
	case s.cont != nil:
		err = s.cont.Kill(ctx)
	case s.subreaper:
		err = ownTree{}.Kill(ctx)
	case s.cmd != nil && s.cmd.Process != nil:
		err = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		s.logf("stopping a job that planted git leftovers: %v", err)
	}
}

// joinNotes joins the notes of an exit that say something.
func joinNotes(notes []string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
