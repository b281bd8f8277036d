//go:build !linux

package procregistry

import (
	"context"

	"github.com/runbox/runbox/termination"
)

// Without pidfds and cgroups the waits fall back to looking again now
// and then.

func waitProcExit(ctx context.Context, p termination.Proc) error {
	return pollUntil(ctx, func() bool { return !p.Alive() })
}

func waitCgroupEmpty(ctx context.Context, dir string) error {
	return nil
}
