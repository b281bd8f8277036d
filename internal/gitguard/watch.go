package gitguard

import (
	"context"
	"time"

	"github.com/runbox/runbox/envs"
)

// WatchEvery is how often [Watch] checks a workspace while its command
// runs, at most. A check that finds nothing new looks only at what
// inotify reported ([Tree]), so in a quiet workspace it costs next to
// nothing.
const WatchEvery = 150 * time.Millisecond

// watchBound bounds one check: the command runs meanwhile, and may swap
// a file for a fifo under it.
const watchBound = 30 * time.Second

// Watch checks workspace every WatchEvery, as [Check] with o, from a
// goroutine of its own until stop is called, and hands each report that
// found something to found (from that goroutine). again says that a file
// it made inert earlier in the watch was found again: the command is
// planting it back, and the caller stops it (a tool's own setup, husky
// setting core.hooksPath, writes once). stop returns once the goroutine
// has, so what found gathered may be read after it.
//
// The watch keeps a [Tree] of its own (o.Tree is not used): listings
// made while the command changes the workspace under them (a directory
// it then closes with chmod 111) must not be what the check at its end
// trusts.
func Watch(workspace string, o Options, found func(rep Report, err error, again bool)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tree := new(Tree)
	o.Tree = tree
	go func() {
		defer close(done)
		defer tree.Close()
		watch(ctx, workspace, o, found)
	}()
	return func() { cancel(); <-done }
}

func watch(ctx context.Context, workspace string, o Options, found func(rep Report, err error, again bool)) {
	o.InFlight = true
	t := time.NewTimer(WatchEvery)
	defer t.Stop()
	inert := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, watchBound)
		start := time.Now()
		rep, err := Check(cctx, workspace, o)
		cancel()
		// A workspace whose checks are slow (many directories, too many
		// for inotify's watches) is checked less often: the watch takes
		// at most about a tenth of a core.
		t.Reset(max(WatchEvery, 9*time.Since(start)))
		if len(rep.Findings) == 0 {
			continue
		}
		again := false
		for _, f := range rep.Findings {
			again = again || inert[f.Path]
			inert[f.Path] = true
		}
		found(rep, err, again)
	}
}

// StoppedViolation is the violation that says a command confined to
// workspace was stopped for planting a file again after it was made inert.
func StoppedViolation(workspace string) envs.Violation {
	return envs.Violation{Op: "git", Target: workspace, Rule: "stopped: git leftovers planted again", Source: envs.SourceDecided}
}

// NoteStopped says why a command was stopped, for its result.
const NoteStopped = "stopped: it planted settings or hooks for the user's git to run again after they were made inert"
