package singularity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// Env is a singularity environment: the agent host over one Apptainer
// instance.
type Env struct {
	*remote.Env
	sb *sandbox
}

// Instance is the name of the environment's instance (instance://Name).
func (e *Env) Instance() string { return e.sb.name }

// New opens an environment in an instance of opts.Image — a task's, when
// opts.Task names one and it runs already, else a new one — with the
// runbox agent inside. Instances of earlier runbox processes that are gone
// are stopped first ([Reap]).
func New(ctx context.Context, opts Options) (*Env, error) {
	o, err := fill(opts)
	if err != nil {
		return nil, err
	}
	p, err := findProgram(o.Program, o.Getenv)
	if err != nil {
		return nil, err
	}
	if _, err := reap(ctx, p, o.StateDir); err != nil {
		o.Logger.Debug("singularity: reap", "err", err)
	}
	name := TaskInstance(o.Owner, o.Task)
	if o.Task == "" {
		if name, err = ownedInstance(); err != nil {
			return nil, err
		}
	}
	agentDir := o.AgentDir
	if agentDir == "" {
		agentDir = remote.DefaultAgentDir
	}
	sb := &sandbox{
		p:        p,
		o:        o,
		userns:   !o.NoUserNS && userNS() == nil,
		name:     name,
		hostDir:  filepath.Join(o.StateDir, name),
		agentDir: agentDir,
		log:      o.Logger,
	}
	re, err := remote.New(ctx, sb, remote.Options{
		Name:        "singularity",
		Kind:        "instance",
		AgentBinary: o.AgentBinary,
		SourceDir:   o.SourceDir,
		AgentDir:    agentDir,
		Env:         o.Env,
		Logger:      o.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Env{Env: re, sb: sb}, nil
}

// Capabilities is what an environment opened with opts would report: the
// agent's, with the instance's own laid over them.
func Capabilities(opts Options) envs.Capabilities {
	o, _ := fill(opts)
	caps := remote.AgentCapabilities()
	prog := "no apptainer or singularity found"
	if p, err := findProgram(o.Program, o.Getenv); err == nil {
		prog = p.path
	}
	instanceCapabilities(o, prog, !o.NoUserNS && userNS() == nil, caps)
	return caps
}

// Check says whether the program is there, answers, and can make
// containers here (user namespaces, or a setuid installation).
func Check(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info, err := Probe(ctx, opts)
	if err != nil {
		return err
	}
	if opts.Logger != nil {
		opts.Logger.Debug("singularity", "program", info.Program, "version", info.Version, "userns", info.UserNS, "setuid", info.Setuid)
	}
	return nil
}

// Provider is the singularity backend's row of a provider table; options
// turns a caller's Spec into Options.
func Provider(options func(envs.Spec) Options) envs.Provider {
	p := envs.Row("singularity", "an Apptainer (Singularity) instance per task, with the runbox agent inside", options, New, Check, Capabilities)
	p.TaskEnvs = true
	return p
}

// Reap stops the instances of runbox processes that are gone (each named
// after the process that started it, which a crash or a kill kept from
// stopping it) and removes their host directories, and returns their
// names. Tasks' instances, the user's own and those of live processes are
// left alone. opts gives the program and the state directory.
func Reap(ctx context.Context, opts Options) ([]string, error) {
	if opts.Image == "" {
		opts.Image = "-" // not used: only the program and directories are
	}
	o, err := fill(opts)
	if err != nil {
		return nil, err
	}
	p, err := findProgram(o.Program, o.Getenv)
	if err != nil {
		return nil, err
	}
	return reap(ctx, p, o.StateDir)
}

func reap(ctx context.Context, p program, stateDir string) ([]string, error) {
	list, err := p.list(ctx, "")
	if err != nil {
		return nil, err
	}
	var reaped []string
	var errs []error
	running := map[string]bool{}
	for _, in := range list {
		running[in.Name] = true
		owner, ok := instanceOwner(in.Name)
		if !ok || owner.Alive() {
			continue
		}
		if err := p.stop(ctx, in.Name, stopTimeout); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, in.Name)
		errs = append(errs, removeHostDir(filepath.Join(stateDir, in.Name)))
	}
	// Host directories of instances that stopped without their owner
	// cleaning up (a crash after the instance ended).
	entries, _ := os.ReadDir(stateDir)
	for _, e := range entries {
		owner, ok := instanceOwner(e.Name())
		if ok && !running[e.Name()] && !owner.Alive() {
			errs = append(errs, removeHostDir(filepath.Join(stateDir, e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reaped, fmt.Errorf("singularity: reap: %w", err)
	}
	return reaped, nil
}

// RemoveTask stops owner's instance of task ("" owner: as Options.Owner)
// and removes its host directory. A task whose instance does not run is
// an error matching [envs.ErrNotFound].
func RemoveTask(ctx context.Context, opts Options, task string) (string, error) {
	if task == "" {
		return "", fmt.Errorf("singularity: remove task: no task named: %w", envs.ErrBadCommand)
	}
	if opts.Image == "" {
		opts.Image = "-"
	}
	o, err := fill(opts)
	if err != nil {
		return "", err
	}
	p, err := findProgram(o.Program, o.Getenv)
	if err != nil {
		return "", err
	}
	name := TaskInstance(o.Owner, task)
	_, up, err := p.running(ctx, name)
	if err != nil {
		return "", err
	}
	if !up {
		return "", fmt.Errorf("singularity: task %s has no running instance (%s): %w", task, name, envs.ErrNotFound)
	}
	if err := p.stop(ctx, name, stopTimeout); err != nil {
		return "", err
	}
	return name, removeHostDir(filepath.Join(o.StateDir, name))
}
