package service

import (
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// LocalTuning adjusts a local environment opened for runbox's own
// machinery rather than for an agent's commands. The zero value adjusts
// nothing.
type LocalTuning struct {
	// Direct says the environment starts programs by argv that must
	// outlive their first stage (the job daemon starting supervisors):
	// no subreaper, leftovers kept, and no pre-started shell, which
	// would sit idle for the daemon's whole life.
	Direct bool
}

// OpenLocalTuned opens a local environment with the configuration's
// options adjusted by t. It is not a session's environment: no sandbox
// is applied (the job daemon confines each job in its supervisor) and
// nothing is gated; callers run only what they built themselves or what
// was judged before it reached them.
func (s *Service) OpenLocalTuned(spec envs.Spec, t LocalTuning) (envs.Environment, error) {
	o := s.LocalOptions(spec)
	if t.Direct {
		o.Subreaper, o.KeepLeftovers, o.NoPrestart = nil, true, true
	}
	return local.New(o)
}
