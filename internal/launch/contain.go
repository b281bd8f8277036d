package launch

import (
	"context"
	"errors"
	"fmt"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// ErrLimitUnavailable: the command asked for resource limits and no
// mechanism that enforces them could be made here. The command must not
// run.
var ErrLimitUnavailable = errors.New("launch: limits requested but no container can apply them")

// ErrNotContained: a started child could not be added to its container.
var ErrNotContained = errors.New("launch: command not added to its container")

// NewContainer makes the container of one command: termination's
// strongest usable mechanism, with limits. When limits are set, a
// failure, or a fallback to a bare process group (which enforces no
// limit), is an error matching [ErrLimitUnavailable] and nothing is left
// behind. Without limits it returns what termination gives, a process
// group included.
func NewContainer(ctx context.Context, id string, limits envs.Limits, opts ...termination.ContainerOption) (termination.Container, error) {
	c, err := termination.NewContainer(ctx, id, limits, opts...)
	if err != nil {
		if !limits.IsZero() {
			return nil, fmt.Errorf("%w: %w", ErrLimitUnavailable, err)
		}
		return nil, fmt.Errorf("launch: container %s: %w", id, err)
	}
	if !limits.IsZero() && c.Mechanism() == termination.ProcessGroup {
		c.Remove(ctx)
		return nil, fmt.Errorf("%w: only %v is usable here", ErrLimitUnavailable, termination.ProcessGroup)
	}
	return c, nil
}

// Place adds pid to cont; ctx bounds the work. Its error matches
// [ErrNotContained].
func Place(ctx context.Context, cont termination.Container, pid int) error {
	if err := cont.Add(ctx, pid); err != nil {
		return fmt.Errorf("%w: %w", ErrNotContained, err)
	}
	return nil
}
