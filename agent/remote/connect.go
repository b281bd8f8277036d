package remote

import (
	"context"
	"fmt"
	"os"
	"path"
	"runtime"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/envs"
)

// connectLocked deploys and starts the agent in inst, or falls back to the
// sandbox's native exec when the agent cannot run there, saying why in
// e.fallback. Called with e.mu held.
func (e *Env) connectLocked(ctx context.Context, inst Instance) (envs.Environment, error) {
	e.fallback = ""
	reason := "agent disabled by Options.NoAgent"
	if e.opts.NoAgentReason != "" {
		reason = e.opts.NoAgentReason
	}
	if !e.opts.NoAgent {
		cl, err := e.startAgent(ctx, inst)
		if err == nil {
			e.agent = cl
			return cl, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: start the agent: %w", e.opts.Name, err)
		}
		reason = err.Error()
		e.log.Debug("remote: agent unavailable", "backend", e.opts.Name, "err", err)
	}
	ne, ok := e.sb.(NativeExec)
	if !ok {
		return nil, fmt.Errorf("%s: the agent cannot run in the %s (%s) and the backend has no other way to run commands: %w", e.opts.Name, e.opts.Kind, reason, envs.ErrUnsupported)
	}
	native, err := ne.Native(ctx, inst.ID)
	if err != nil {
		return nil, fmt.Errorf("%s: native exec (the agent cannot run: %s): %w", e.opts.Name, reason, err)
	}
	e.fallback = reason
	return native, nil
}

// startAgent copies the agent into the sandbox (unless the backend put it
// there: Instance.Agent), starts it and connects.
func (e *Env) startAgent(ctx context.Context, inst Instance) (*agent.Client, error) {
	if inst.OS != "" && inst.OS != "linux" {
		return nil, fmt.Errorf("%s OS %s: the agent runs on linux only", e.opts.Kind, inst.OS)
	}
	if inst.Agent != "" {
		return e.attachAgent(ctx, inst.ID, inst.Agent)
	}
	arch := inst.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	bin := e.opts.AgentBinary
	if bin != "" {
		if err := CheckStatic(bin, arch); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	} else {
		var err error
		if bin, err = Agent().FindSmall(ctx, arch, e.opts.SourceDir); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	dst, err := e.deployLocked(ctx, inst.ID, bin, false)
	if err != nil {
		return nil, err
	}
	cl, err := e.attachAgent(ctx, inst.ID, dst)
	if _, ok := e.sb.(Recopier); err == nil || !ok || ctx.Err() != nil {
		return cl, err
	}
	// The copy kept by its name and size may be damaged: copy it again,
	// checked end to end, and try once more.
	e.log.Debug("remote: the agent kept in the sandbox did not start; copying it again", "backend", e.opts.Name, "err", err)
	if _, err := e.deployLocked(ctx, inst.ID, bin, true); err != nil {
		return nil, err
	}
	return e.attachAgent(ctx, inst.ID, dst)
}

// attachAgent starts the agent at dst in the sandbox and connects.
func (e *Env) attachAgent(ctx context.Context, id, dst string) (*agent.Client, error) {
	stream, err := e.sb.Attach(ctx, id, []string{dst, "agent"})
	if err != nil {
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, e.opts.HandshakeTimeout)
	defer cancel()
	cl, err := agent.NewClient(hctx, stream, agent.ClientOptions{Logger: e.log, ReplyTimeout: e.opts.ReplyTimeout})
	if err != nil {
		if se, ok := stream.(interface{ Stderr() string }); ok {
			if msg := se.Stderr(); msg != "" {
				return nil, fmt.Errorf("%w (agent stderr: %s)", err, msg)
			}
		}
		return nil, err
	}
	return cl, nil
}

// deployLocked copies bin into the agent directory under a name that
// carries its content digest, so a sandbox that is reused keeps the agent
// already there only when it is this very build. The digest comes from
// [FileDigest]: an unchanged binary is not read again, and the sandbox
// may trust a file of that name and size (see [Sandbox.CopyIn]).
//
// With recopy, the sandbox checks its copy end to end instead of
// trusting the name ([Recopier.Recopy]).
func (e *Env) deployLocked(ctx context.Context, id, bin string, recopy bool) (string, error) {
	dst, err := e.copyDigestNamed(ctx, id, bin, "runbox-agent", recopy)
	if err != nil {
		return "", fmt.Errorf("deploy the agent: %w", err)
	}
	return dst, nil
}

// copyDigestNamed copies bin into the agent directory as name-<digest>
// and returns that path (see deployLocked). Called with e.mu held.
func (e *Env) copyDigestNamed(ctx context.Context, id, bin, name string, recopy bool) (string, error) {
	f, err := os.Open(bin)
	if err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", bin, fi.Size(), fi.ModTime().UnixNano())
	digest, ok := e.digests[key]
	if !ok {
		sum, err := FileDigest(bin)
		if err != nil {
			return "", fmt.Errorf("binary: %w", err)
		}
		digest = sum[:2*digestBytes]
		e.digests[key] = digest
	}
	dst := path.Join(e.opts.AgentDir, name+"-"+digest)
	put := e.sb.CopyIn
	if rc, ok := e.sb.(Recopier); ok && recopy {
		put = rc.Recopy
	}
	if err := put(ctx, id, dst, f, fi.Size(), 0o755); err != nil {
		return "", fmt.Errorf("copy to %s: %w", dst, err)
	}
	return dst, nil
}

// digestBytes is how much of the SHA-256 the deployed agent's name
// carries: enough that a file of that name and size is this build.
const digestBytes = 16
