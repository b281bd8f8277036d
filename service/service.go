package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
)

// Options configure a [Service].
type Options struct {
	// Config is the loaded configuration. The zero value is not valid:
	// pass config.Default() or what config.Load returned.
	Config config.Config
	// Environ is the environment every child's is built from (by spawn,
	// which withholds secrets). Nil means os.Environ(); runbox passes its
	// sealed launch environment (internal/seal).
	Environ []string
	// Getenv reads the caller's environment (state and config paths,
	// RUNBOX_OWNER). Nil means os.Getenv.
	Getenv func(string) string
	// Yolo runs commands that would ask without asking. Hardline commands
	// and deny rules still hold.
	Yolo bool
	// Subreaper is the argv prefix of runbox's subreaper for local
	// commands that get no cgroup (see internal/subreaper). Nil means
	// none: tree kill is then degraded there.
	Subreaper []string
	// Confiner is the argv prefix of runbox's confinement trampoline
	// (see package confine). Nil means confine.Locate: runbox-confine
	// beside this program or on PATH. When none can be found, local
	// commands are refused unless the sandbox is off by choice (flag,
	// configuration or spec): no front end can forget the sandbox.
	Confiner []string
	// OneCommand says each environment serves a single command (runbox
	// run): the local backend then keeps no pre-started shell, which
	// would cost a bash start that no command uses.
	OneCommand bool
	// WarmPool says the Service lives across many environments (the MCP
	// server): with the configuration's docker.pool above zero it then
	// keeps that many docker containers ready per spec (a docker.Pool,
	// closed by Close). False, or a pool of 0, makes every container on
	// demand — what a one-shot command wants, since a pool's containers
	// are made ahead and would only be thrown away.
	WarmPool bool
	// Progress receives backends' progress (image pulls). Nil discards it.
	Progress io.Writer
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
	// AwakePoll is how often a session whose sandbox a keep-awake job
	// keeps awake looks whether one still runs. Zero means
	// DefaultAwakePoll.
	AwakePoll time.Duration
}

// Service is the application core. It is safe for concurrent use.
type Service struct {
	opts      Options
	log       *slog.Logger
	providers *envs.Providers
	gate      *approval.Gate
	pool      *docker.Pool // nil without Options.WarmPool and docker.pool
	// probe is what the kernel gives confined commands, probed once: it
	// does not change while the Service lives, and every local session's
	// first command would ask again.
	probe func() confine.Report

	mu       sync.Mutex
	closed   bool
	sessions map[string]*Session

	// tails holds, per job, the unfinished line its input ends with (see
	// WriteJob).
	tails inputTails
}

// New makes a Service: the provider table and the gate, from opts.
func New(opts Options) (*Service, error) {
	o := opts
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o.Logger = log
	if len(o.Confiner) == 0 {
		o.Confiner, _ = confine.Locate() // none: SandboxPolicy refuses
	}
	s := &Service{opts: o, log: log, sessions: map[string]*Session{}, probe: sync.OnceValue(confine.Probe)}
	gate, err := s.newGate()
	if err != nil {
		return nil, err
	}
	s.gate = gate
	if o.WarmPool && o.Config.Docker.Pool > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s.pool, err = docker.NewPool(ctx, docker.PoolOptions{Size: o.Config.Docker.Pool, Logger: log})
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if s.providers, err = s.newProviders(); err != nil {
		s.closePool(context.Background())
		return nil, err
	}
	return s, nil
}

// Config returns the configuration the Service was made with.
func (s *Service) Config() config.Config { return s.opts.Config }

// Providers is the provider table.
func (s *Service) Providers() *envs.Providers { return s.providers }

// Gate is the command gate, with the policy of the Service's start.
func (s *Service) Gate() *approval.Gate { return s.gate }

// Environ returns a copy of the base environment of every child.
func (s *Service) Environ() []string { return slices.Clone(s.opts.Environ) }

// Getenv reads the caller's environment.
func (s *Service) Getenv(k string) string { return s.opts.Getenv(k) }

// SpawnPolicy is the configured child-environment policy.
func (s *Service) SpawnPolicy() spawn.Policy { return *s.LocalOptions(envs.Spec{}).Spawn }

// HoldsSecret reports whether text contains the value of a variable the
// child-environment policy withholds (one long enough to tell apart from
// ordinary words), as the environment this Service was made with has it.
func (s *Service) HoldsSecret(text string) bool {
	pol := s.SpawnPolicy()
	for _, kv := range s.opts.Environ {
		k, v, _ := strings.Cut(kv, "=")
		if len(v) >= spawn.MinSecretLen && strings.Contains(text, v) && pol.Secret(k) {
			return true
		}
	}
	return false
}

// Limits are the configured per-command limits.
func (s *Service) Limits() envs.Limits {
	l := s.opts.Config.Limits
	return envs.Limits{MemoryBytes: int64(l.Memory), Pids: l.Pids, CPUs: l.CPUs}
}

// Timeout is the configured default per-command timeout (0: none).
func (s *Service) Timeout() time.Duration { return time.Duration(s.opts.Config.Timeout) }

// OutputLimit is the configured number of output bytes kept.
func (s *Service) OutputLimit() int { return s.opts.Config.OutputLimit }

// Close closes every session, tearing down what they run.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	ss := make([]*Session, 0, len(s.sessions))
	for _, x := range s.sessions {
		ss = append(ss, x)
	}
	s.mu.Unlock()
	var errs []error
	for _, x := range ss {
		if err := x.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", x.ID, err))
		}
	}
	errs = append(errs, s.closePool(ctx))
	return errors.Join(errs...)
}
