package supervisor

import (
	"context"
	"strings"
	"syscall"

	"github.com/runbox/runbox/internal/gitguard"
)

// watchGit checks the job's workspace for what it plants for the user's
// git to run (internal/gitguard) while it runs, not only once it ended:
// a job that runs for minutes would otherwise leave a core.fsmonitor or a
// hook armed all that time, for the git status of the user's prompt or
// editor. Findings are made inert at once and join the job's violations;
// a file planted again after it was made inert stops the job. stop ends
// the watch and returns the notes of what it found.
func (s *supervisor) watchGit() (stop func() []string) {
	if s.guard == "" {
		return func() []string { return nil }
	}
	var notes []string
	end := gitguard.Watch(s.guard, gitguard.Options{Since: s.started}, func(rep gitguard.Report, err error, again bool) {
		for _, v := range rep.Violations() {
			s.denials.Add(v)
		}
		notes = append(notes, rep.Warnings(err)...)
		if again {
			notes = append(notes, gitguard.NoteStopped)
			s.denials.Add(gitguard.StoppedViolation(s.guard))
			s.stopJob()
		}
	})
	return func() []string {
		end()
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
