package envs

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Spec is what a caller asks of a new environment. Backends read the fields
// that apply to them and ignore the rest.
type Spec struct {
	// Dir is the initial working directory. Empty means the backend's
	// default (the current directory for local, the image's for docker).
	Dir string
	// Env is laid over every command's child environment.
	Env map[string]string
	// Image is the container image (docker).
	Image string
	// Host is the remote host (ssh).
	Host string
	// Limits are per-environment defaults for every command.
	Limits Limits
	// Network is the network policy ("" = the backend's default, "none").
	Network string
	// Settings holds backend-specific options by name.
	Settings map[string]string
	// Sandbox is the confinement profile of commands run on this machine
	// ("workspace", "read-only", "off"; "" = the configured one). Backends
	// whose commands run elsewhere ignore it: their sandbox is the
	// container or the remote host.
	Sandbox string
}

// Provider is one row of the provider table.
type Provider struct {
	// Name is what users type: "local", "docker", ...
	Name string
	// Description is one line for `runbox doctor`.
	Description string
	// New opens an environment.
	New func(ctx context.Context, spec Spec) (Environment, error)
	// Check says whether the backend can work on this machine (a docker
	// engine reachable, credentials present). Nil means always ready.
	Check func(ctx context.Context) error
	// Capabilities reports what an environment of this backend opened
	// with spec would enforce, without opening one. Nil means unknown
	// until opened.
	Capabilities func(ctx context.Context, spec Spec) Capabilities
	// Provisioning says, for `runbox doctor`, how the backend gets its
	// sandboxes here where that depends on the far side (which program
	// and version, what the cluster offers). Nil means nothing to say.
	Provisioning func(ctx context.Context) string

	// What the backend can do. The core asks these, never the name: a
	// backend takes part in tasks, jobs and sync by saying so here. The
	// zero value of each is "cannot".

	// OnThisMachine says the backend is runbox on this machine: its row
	// confines every command with runbox's own sandbox (the service's
	// local row does, with the configured profile), the gate is told
	// what that sandbox holds, background jobs are this machine's job
	// daemon's, and a task's synced workspace is a directory of its own
	// here. A backend whose commands reach this machine some other way
	// leaves it false and says so in its Capabilities (host_access
	// active), which is what the gate reads.
	OnThisMachine bool
	// Jobs says whether background jobs can run in the backend's own
	// environment (see [JobHosting]).
	Jobs JobHosting
	// TaskEnvs says the backend keeps an environment per task between
	// runs (a container, a snapshot, a pod, an instance): the spec's
	// "task" setting names it, and a task's synced workspace lives in it
	// at the directory its commands start in.
	TaskEnvs bool
	// Tasks lists and removes what the backend keeps of tasks; nil when
	// it keeps nothing runbox can list (then NoTasks says why, when the
	// backend keeps something all the same).
	Tasks TaskKeeper
	// NoTasks says what a task is on the backend, and how to remove it,
	// when runbox cannot list it (Tasks nil).
	NoTasks string
	// TaskOf names the task whose kept environment spec opens (the
	// spec's "task" setting, else the configuration's); "" when spec
	// opens one of its own. Nil with TaskEnvs: only the setting counts.
	TaskOf func(spec Spec) string
	// Missing says, before anything is tried, what spec lacks for the
	// backend to open an environment (no image, no host): nil when
	// nothing is missing. Nil means nothing ever is.
	Missing func(spec Spec) error
	// Warm starts keeping environments for spec ready before they are
	// asked for (a long-lived runbox's warm pool); nil when the backend
	// keeps none.
	Warm func(spec Spec) error
	// Reap removes what runbox processes that are gone left on the
	// backend (a killed runbox's pods) and says what it removed; a
	// long-lived runbox runs it once at start. Nil: nothing is left.
	Reap func(ctx context.Context) ([]string, error)
}

// JobHosting says where a backend's background jobs can run, besides
// this machine's job daemon (see [Provider].OnThisMachine).
type JobHosting int

const (
	// NoJobs: the backend's sandbox cannot hold runbox's job daemon.
	NoJobs JobHosting = iota
	// SessionJobs: a session's jobs run in the job daemon inside the
	// session's environment (reached through `runbox __relay` at the
	// environment's CLIPath), and end with it at the latest.
	SessionJobs
	// LastingJobs: as SessionJobs, and the environment outlives the
	// command that opened it (a task's container, a remote host), so
	// jobs started there by one runbox are there for the next.
	LastingJobs
)

// Providers is the provider table: backend name → factory and requirement
// check. A caller builds one and registers the backends it wires in; there is
// no global table. It is safe for concurrent use.
type Providers struct {
	mu    sync.RWMutex
	m     map[string]Provider
	order []string // registration order: the order of listings
}

// NewProviders returns an empty table.
func NewProviders() *Providers { return &Providers{m: map[string]Provider{}} }

// Register adds p. A duplicate or empty name, or a nil New, is an error.
func (t *Providers) Register(p Provider) error {
	if p.Name == "" || p.New == nil {
		return fmt.Errorf("envs: register provider %q: name and New are required", p.Name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[p.Name]; dup {
		return fmt.Errorf("envs: register provider %q: already registered", p.Name)
	}
	t.m[p.Name] = p
	t.order = append(t.order, p.Name)
	return nil
}

// Where names, in the order they were registered, the providers keep
// holds for.
func (t *Providers) Where(keep func(Provider) bool) []string {
	var names []string
	for _, p := range t.All() {
		if keep(p) {
			names = append(names, p.Name)
		}
	}
	return names
}

// OnThisMachine reports whether the provider named name runs its
// commands on this machine ([Provider].OnThisMachine); an unknown name's
// do not.
func (t *Providers) OnThisMachine(name string) bool {
	p, err := t.Lookup(name)
	return err == nil && p.OnThisMachine
}

// All returns the providers in the order they were registered.
func (t *Providers) All() []Provider {
	t.mu.RLock()
	defer t.mu.RUnlock()
	all := make([]Provider, len(t.order))
	for i, n := range t.order {
		all[i] = t.m[n]
	}
	return all
}

// Lookup returns the provider named name, or an *UnknownBackendError
// listing the known names.
func (t *Providers) Lookup(name string) (Provider, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p, ok := t.m[name]
	if !ok {
		return Provider{}, &UnknownBackendError{Name: name, Known: t.namesLocked()}
	}
	return p, nil
}

// Names lists the registered backends, sorted.
func (t *Providers) Names() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.namesLocked()
}

func (t *Providers) namesLocked() []string {
	names := make([]string, 0, len(t.m))
	for n := range t.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open looks up name and opens an environment with spec. It runs the
// provider's requirement check first so the error says what is missing.
func (t *Providers) Open(ctx context.Context, name string, spec Spec) (Environment, error) {
	p, err := t.Lookup(name)
	if err != nil {
		return nil, err
	}
	if p.Check != nil {
		if err := p.Check(ctx); err != nil {
			return nil, fmt.Errorf("envs: backend %s not ready: %w", name, err)
		}
	}
	env, err := p.New(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("envs: open %s: %w", name, err)
	}
	return env, nil
}

// Row is a provider row for a backend whose functions take its own
// options type O: options turns a caller's Spec into O (the caller owns
// its configuration), and open, check and capabilities are the
// backend's New, requirement check (nil: always ready) and capability
// report over O.
func Row[O any, E Environment](name, description string, options func(Spec) O,
	open func(context.Context, O) (E, error), check func(context.Context, O) error, capabilities func(O) Capabilities) Provider {
	always := func(spec Spec) (O, error) { return options(spec), nil }
	return FallibleRow(name, description, always, open, check, capabilities)
}

// FallibleRow is [Row] for a backend whose options can fail to be made
// (no credentials where the caller looks for them): New and Check return
// that error, and Capabilities reports over the options returned with it,
// since a report needs no credentials.
func FallibleRow[O any, E Environment](name, description string, options func(Spec) (O, error),
	open func(context.Context, O) (E, error), check func(context.Context, O) error, capabilities func(O) Capabilities) Provider {
	return Provider{
		Name:        name,
		Description: description,
		New: func(ctx context.Context, spec Spec) (Environment, error) {
			o, err := options(spec)
			if err != nil {
				return nil, err
			}
			e, err := open(ctx, o)
			if err != nil {
				return nil, err // not e: a typed nil is no nil Environment
			}
			return e, nil
		},
		Check: func(ctx context.Context) error {
			o, err := options(Spec{})
			if err != nil || check == nil { // a nil check: always ready
				return err
			}
			return check(ctx, o)
		},
		Capabilities: func(ctx context.Context, spec Spec) Capabilities {
			o, _ := options(spec)
			return capabilities(o)
		},
	}
}
