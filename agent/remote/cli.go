package remote

import (
	"context"
	"fmt"
	"path"
	"runtime"

	"github.com/runbox/runbox/envs"
)

// CLIName is the name under which the full runbox CLI is run in the
// sandbox, in the agent's directory ([Env.CLIPath]).
const CLIName = "runbox"

// CLIPath is the argv[0] that runs the full runbox CLI in the sandbox,
// for commands that run runbox itself there (the job commands: their
// daemon lives in the sandbox, outside any command). Empty when
// Options.CLI is off.
//
// Nothing is copied for it until a command whose argv[0] is CLIPath
// runs: then the static CLI (Options.CLIBinary, else [CLI]().Find) is
// copied in under a name that carries its content digest, as the agent
// is, and the command runs that copy. CLIPath itself names no content,
// so a sandbox that already holds another build (a reused one, a
// restored snapshot) never runs it. A recreated sandbox gets the CLI
// again before its first such command.
func (e *Env) CLIPath() string {
	if !e.opts.CLI {
		return ""
	}
	return path.Join(e.opts.AgentDir, CLIName)
}

// withCLI returns cmd to run on be: when cmd runs [Env.CLIPath], the CLI
// is put in the sandbox (once per setup of it) and cmd runs the copy.
func (e *Env) withCLI(ctx context.Context, be envs.Environment, cmd envs.Command) (envs.Command, error) {
	if !e.opts.CLI || len(cmd.Args) == 0 || cmd.Args[0] != e.CLIPath() {
		return cmd, nil
	}
	dst, err := e.deployCLI(ctx, be)
	if err != nil {
		return cmd, err
	}
	cmd.Args = append([]string{dst}, cmd.Args[1:]...)
	return cmd, nil
}

// deployCLI copies the CLI into the sandbox be runs in, unless this setup
// of it has it already, and returns its path there.
func (e *Env) deployCLI(ctx context.Context, be envs.Environment) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.be != be {
		// The sandbox was lost and set up again since be was taken: the
		// command fails on be as any other would.
		return "", fmt.Errorf("%s: the %s was lost before the runbox CLI was put in it", e.opts.Name, e.opts.Kind)
	}
	if e.cli != "" {
		return e.cli, nil
	}
	if e.fallback != "" {
		return "", fmt.Errorf("%s: the runbox CLI runs beside the agent, which is not in use (%s): %w", e.opts.Name, e.fallback, envs.ErrUnsupported)
	}
	arch := e.arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	bin := e.opts.CLIBinary
	if bin != "" {
		if err := CheckStatic(bin, arch); err != nil {
			return "", fmt.Errorf("%s: runbox CLI: %w", e.opts.Name, err)
		}
	} else {
		var err error
		if bin, err = CLI().FindSmall(ctx, arch, e.opts.SourceDir); err != nil {
			return "", fmt.Errorf("%s: runbox CLI for the %s: %w", e.opts.Name, e.opts.Kind, err)
		}
	}
	dst, err := e.copyDigestNamed(ctx, e.id, bin, CLIName, false)
	if err != nil {
		return "", fmt.Errorf("%s: put the runbox CLI in the %s: %w", e.opts.Name, e.opts.Kind, err)
	}
	e.cli = dst
	return dst, nil
}
