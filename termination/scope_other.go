//go:build !linux

package termination

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
)

func probeSystemd(context.Context) (string, error) {
	return "", fmt.Errorf("systemd scopes exist only on Linux")
}

func newScope(ctx context.Context, id string, limits envs.Limits, d Detection) (Container, error) {
	return nil, fmt.Errorf("termination: %v: %w", SystemdScope, envs.ErrUnsupported)
}

func openScope(ctx context.Context, ref ContainerRef) (Container, error) {
	return nil, fmt.Errorf("termination: %v: %w", SystemdScope, envs.ErrUnsupported)
}
