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
}

// Providers is the provider table: backend name → factory and requirement
// check. A caller builds one and registers the backends it wires in; there is
// no global table. It is safe for concurrent use.
type Providers struct {
	mu sync.RWMutex
	m  map[string]Provider
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
	return nil
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
// backend's New, requirement check and capability report over O.
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
			if err != nil {
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
