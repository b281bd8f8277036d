package main

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// newJobCommands returns the background-job commands: start, ps, logs,
// wait, kill, write, submit, close, handoff, events, and the hidden
// __daemon and __supervise that serve them.
func newJobCommands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newStartCommand(a), newPsCommand(a), newLogsCommand(a), newWaitCommand(a),
		newKillCommand(a), newWriteCommand(a, "write"), newWriteCommand(a, "submit"),
		newCloseCommand(a), newHandoffCommand(a), newLifetimeCommand(a), newEventsCommand(a),
		newDaemonCommand(a), newSuperviseCommand(a), newRelayCommand(a),
	}
}

// defaultOwner is who CLI jobs belong to: $RUNBOX_OWNER, else "user".
func (a *app) defaultOwner() string { return cmp.Or(a.getenv("RUNBOX_OWNER"), "user") }

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{errorf("%s: want %d argument(s); see --help", cmd.CommandPath(), n)}
		}
		return nil
	}
}

// describe is one line about a job's state.
func describe(in procregistry.Info) string {
	switch in.Status {
	case procregistry.StatusRunning, procregistry.StatusStarting:
		return in.ID + " running"
	case procregistry.StatusExited:
		switch {
		case in.Exit.KilledBy == envs.KilledByMemoryLimit || in.Exit.KilledBy == envs.KilledByPidsLimit:
			return fmt.Sprintf("%s exited: killed by the %s (exit %d)", in.ID, strings.ReplaceAll(string(in.Exit.KilledBy), "-", " "), in.Exit.Code)
		case in.Exit.Signal != 0:
			return fmt.Sprintf("%s exited: killed by signal %d (exit %d)", in.ID, in.Exit.Signal, in.Exit.Code)
		}
		return fmt.Sprintf("%s exited %d", in.ID, in.Exit.Code)
	case procregistry.StatusKilled:
		return fmt.Sprintf("%s killed by %s (exit %d)", in.ID, in.KilledBy, in.Exit.Code)
	}
	return fmt.Sprintf("%s %s: %s", in.ID, in.Status, in.Error)
}
