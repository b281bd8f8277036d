package daytona

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
)

// sandbox is the daytona backend's part of the agent host: the task's
// Daytona sandbox.
type sandbox struct {
	cl   *sdk.Client
	opts Options
	log  *slog.Logger
	// toolbox carries every toolbox call. The SDK gives each sandbox the
	// client's http.Client, whose 60 s timeout would cut any command
	// longer than that; this one has none, and contexts bound the calls.
	toolbox *http.Client

	// stty is what the agent's terminal is set to (rawMode); a test
	// changes it to show what a terminal left cooked does to the stream.
	stty string

	mu   sync.Mutex
	last *sdk.Sandbox // what Provision returned last
	// awake: KeepAwake turned last's auto-stop off; autoStop is the
	// interval (minutes) it gives back.
	awake    bool
	autoStop float32
}

var (
	_ remote.Sandbox    = (*sandbox)(nil)
	_ remote.NativeExec = (*sandbox)(nil)
)

// Provision makes sure the task's sandbox exists and is started: the one
// it had, else (persistent) the task's sandbox found by its labels, else a
// new one. A stopped or archived sandbox is started.
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sb *sdk.Sandbox
	if s.last != nil {
		got, err := s.cl.Get(ctx, s.last.ID)
		switch {
		case status(err) == http.StatusNotFound:
		case err != nil:
			return remote.Instance{}, apiError(s.opts.Credentials, "get sandbox "+s.last.ID, err)
		case got.State == apiclient.SANDBOXSTATE_DESTROYED || got.State == apiclient.SANDBOXSTATE_DESTROYING:
		default:
			sb = got
		}
	}
	if sb == nil && s.opts.Persistent {
		found, err := s.find(ctx)
		if err != nil {
			return remote.Instance{}, err
		}
		sb = found
	}
	if sb == nil {
		created, err := s.create(ctx)
		if err != nil {
			return remote.Instance{}, err
		}
		sb = created
	}
	if err := s.start(ctx, sb); err != nil {
		return remote.Instance{}, err
	}
	sb.ToolboxClient.GetConfig().HTTPClient = s.toolbox
	if s.last == nil || s.last.ID != sb.ID {
		s.awake, s.autoStop = false, 0 // a new sandbox has its own auto-stop
	}
	s.last = sb
	return remote.Instance{ID: sb.ID, OS: "linux"}, nil
}

// find returns the task's sandbox by its labels, nil when there is none.
func (s *sandbox) find(ctx context.Context) (*sdk.Sandbox, error) {
	page, limit := 1, 10
	res, err := s.cl.List(ctx, s.opts.labels(), &page, &limit)
	if err != nil {
		return nil, apiError(s.opts.Credentials, "list sandboxes", err)
	}
	for _, sb := range res.Items {
		switch sb.State {
		case apiclient.SANDBOXSTATE_DESTROYED, apiclient.SANDBOXSTATE_DESTROYING, apiclient.SANDBOXSTATE_ERROR, apiclient.SANDBOXSTATE_BUILD_FAILED:
			continue
		}
		s.log.Debug("daytona: found the task's sandbox", "id", sb.ID, "state", sb.State)
		return sb, nil
	}
	return nil, nil
}

func (s *sandbox) timeout() time.Duration {
	if s.opts.CreateTimeout > 0 {
		return s.opts.CreateTimeout
	}
	return 3 * time.Minute
}

// create makes a sandbox from the image or snapshot, labelled, sized, with
// auto-stop disabled when it is to persist.
func (s *sandbox) create(ctx context.Context) (*sdk.Sandbox, error) {
	o := s.opts
	base := types.SandboxBaseParams{Labels: o.labels(), NetworkBlockAll: o.NetworkBlockAll}
	if o.NetworkAllowList != "" {
		al := o.NetworkAllowList
		base.NetworkAllowList = &al
	}
	if o.Persistent {
		never := 0 // Daytona reads an interval of 0 as "never"
		base.AutoStopInterval = &never
	}
	var params any
	if o.Snapshot != "" {
		params = types.SnapshotParams{SandboxBaseParams: base, Snapshot: o.Snapshot}
	} else {
		ip := types.ImageParams{SandboxBaseParams: base, Image: o.Image}
		if o.CPU > 0 || o.MemoryGB > 0 || o.DiskGB > 0 {
			ip.Resources = &types.Resources{CPU: o.CPU, Memory: o.MemoryGB, Disk: o.DiskGB}
		}
		if o.Image == "" {
			params = types.SnapshotParams{SandboxBaseParams: base}
		} else {
			params = ip
		}
	}
	sb, err := s.cl.Create(ctx, params, options.WithTimeout(s.timeout()))
	if err != nil {
		return nil, apiError(o.Credentials, "create sandbox", err)
	}
	s.log.Debug("daytona: created sandbox", "id", sb.ID)
	return sb, nil
}

// start starts sb unless it is started.
func (s *sandbox) start(ctx context.Context, sb *sdk.Sandbox) error {
	switch sb.State {
	case apiclient.SANDBOXSTATE_STARTED:
		return nil
	case apiclient.SANDBOXSTATE_CREATING, apiclient.SANDBOXSTATE_STARTING, apiclient.SANDBOXSTATE_PENDING_BUILD,
		apiclient.SANDBOXSTATE_PULLING_SNAPSHOT, apiclient.SANDBOXSTATE_RESTORING:
		if err := sb.WaitForStart(ctx, s.timeout()); err != nil {
			return apiError(s.opts.Credentials, "wait for sandbox "+sb.ID+" to start", err)
		}
		return nil
	}
	if err := sb.StartWithTimeout(ctx, s.timeout()); err != nil {
		return apiError(s.opts.Credentials, fmt.Sprintf("start sandbox %s (it was %s)", sb.ID, sb.State), err)
	}
	return nil
}

// Describe says what became of sandbox id.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	what := "sandbox " + id
	sb, err := s.cl.Get(ctx, id)
	switch {
	case status(err) == http.StatusNotFound:
		return what + " is gone (deleted)"
	case err != nil:
		return fmt.Sprintf("%s cannot be read from the API: %v", what, err)
	}
	if sb.State == apiclient.SANDBOXSTATE_STARTED {
		return what + " is started, but the agent's PTY session has ended"
	}
	return fmt.Sprintf("%s is %s", what, sb.State)
}

// Release deletes an ephemeral sandbox, stops a persistent one, and keeps
// one running with KeepRunning.
func (s *sandbox) Release(ctx context.Context, id string) error {
	sb, err := s.cl.Get(ctx, id)
	if status(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return apiError(s.opts.Credentials, "get sandbox "+id, err)
	}
	switch {
	case s.opts.Persistent && s.opts.KeepRunning:
		return nil
	case s.opts.Persistent:
		if sb.State != apiclient.SANDBOXSTATE_STARTED {
			return nil
		}
		if err := sb.StopWithTimeout(ctx, s.timeout(), false); err != nil {
			return apiError(s.opts.Credentials, "stop sandbox "+id, err)
		}
		return nil
	}
	if err := sb.DeleteWithTimeout(ctx, s.timeout()); err != nil && status(err) != http.StatusNotFound {
		return apiError(s.opts.Credentials, "delete sandbox "+id, err)
	}
	return nil
}

// Capabilities adds what the sandbox itself enforces.
func (s *sandbox) Capabilities(caps envs.Capabilities) {
	addSandboxCaps(caps, s.opts)
}

func addSandboxCaps(caps envs.Capabilities, o Options) {
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "Daytona sandbox (its own machine)"}
	limits := "Daytona's defaults for the sandbox"
	if o.CPU > 0 || o.MemoryGB > 0 || o.DiskGB > 0 {
		limits = fmt.Sprintf("sandbox: cpu %d, memory %d GiB, disk %d GiB (0: Daytona's default)", o.CPU, o.MemoryGB, o.DiskGB)
	}
	caps[envs.CapLimits] = envs.CapInfo{State: envs.Degraded, Detail: limits + "; no per-command limits"}
	switch {
	case o.NetworkBlockAll:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network blocked"}
	case o.NetworkAllowList != "":
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network allow-list " + o.NetworkAllowList}
	default:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "Daytona's default network (set network none or an allow-list)"}
	}
	caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported}
	caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "a remote sandbox: no host directory is reachable"}
}

// Native runs commands through the toolbox's session API: the degraded
// path, for when the agent cannot run.
func (s *sandbox) Native(ctx context.Context, id string) (envs.Environment, error) {
	sb, err := s.current(id)
	if err != nil {
		return nil, err
	}
	policy := spawn.Policy{}
	if s.opts.Spawn != nil {
		policy = *s.opts.Spawn
	}
	return newExecEnv(s, sb, policy), nil
}
