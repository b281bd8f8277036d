package launch_test

import (
	"errors"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// A command that asks for limits either gets a container that enforces
// them or does not run: a process group, which enforces nothing, is an
// error, never a silent run without the limit.
func TestNewContainer_LimitThatCannotApplyIsError(t *testing.T) {
	tests := []struct {
		name    string
		limits  envs.Limits
		wantErr error
	}{
		{name: "memory limit, process group only", limits: envs.Limits{MemoryBytes: 64 << 20}, wantErr: launch.ErrLimitUnavailable},
		{name: "pids limit, process group only", limits: envs.Limits{Pids: 10}, wantErr: launch.ErrLimitUnavailable},
		{name: "no limits, process group is fine", limits: envs.Limits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := launch.NewContainer(t.Context(), "launch-test", tt.limits, termination.WithMechanism(termination.ProcessGroup))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || c != nil {
					t.Fatalf("NewContainer(%+v) = %v, %v; want error %v", tt.limits, c, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewContainer(%+v) = %v", tt.limits, err)
			}
			if c.Mechanism() != termination.ProcessGroup {
				t.Errorf("mechanism = %v; want %v", c.Mechanism(), termination.ProcessGroup)
			}
			c.Remove(t.Context())
		})
	}
}

// A mechanism that cannot be made at all is the same error when limits
// were asked for.
func TestNewContainer_UnusableMechanismWithLimits(t *testing.T) {
	d := termination.Detect(t.Context())
	for _, m := range []termination.Mechanism{termination.SystemdScope, termination.CgroupV2, termination.CgroupV1} {
		if d.Can(m) {
			continue
		}
		_, err := launch.NewContainer(t.Context(), "launch-test", envs.Limits{Pids: 10}, termination.WithMechanism(m), termination.WithDetection(d))
		if !errors.Is(err, launch.ErrLimitUnavailable) {
			t.Errorf("NewContainer with unusable %v = %v; want ErrLimitUnavailable", m, err)
		}
		return
	}
	t.Skip("every mechanism is usable here")
}
