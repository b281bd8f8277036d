//go:build !linux

package termination

import (
	"fmt"

	"github.com/runbox/runbox/envs"
)

func probeCgroups(d *Detection) {
	for _, m := range []Mechanism{Hybrid, CgroupV2, CgroupV1} {
		d.Why[m] = "cgroups exist only on Linux"
	}
}

func newCgroup(m Mechanism, id string, limits envs.Limits, d Detection) (Container, error) {
	return nil, fmt.Errorf("termination: %v: %w", m, envs.ErrUnsupported)
}

func openCgroup(ref ContainerRef) (Container, error) {
	return nil, fmt.Errorf("termination: %v: %w", ref.Mechanism, envs.ErrUnsupported)
}
