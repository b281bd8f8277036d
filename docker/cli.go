package docker

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// CLIPath is where the full runbox CLI is put in a container for commands
// that run runbox itself there (the job commands: their daemon lives in
// the container). An [Env] puts it there before the first command whose
// argv[0] is CLIPath, and again after the container was recreated; other
// commands never pay for it. The agent is the smaller runbox-agent, in the
// same directory.
const CLIPath = remote.DefaultAgentDir + "/runbox"

// ensureCLI puts the runbox CLI at CLIPath when cmd runs it and it is not
// there yet.
func (e *Env) ensureCLI(ctx context.Context, cmd envs.Command) error {
	if len(cmd.Args) == 0 || cmd.Args[0] != CLIPath {
		return nil
	}
	id := e.host.ID()
	e.cliMu.Lock()
	defer e.cliMu.Unlock()
	if e.cliIn == id {
		return nil
	}
	arch := e.sb.img.arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	bin := e.opts.CLIBinary
	if bin != "" {
		if err := remote.CheckStatic(bin, arch); err != nil {
			return fmt.Errorf("docker: runbox CLI: %w", err)
		}
	} else {
		var err error
		if bin, err = remote.CLI().FindSmall(ctx, arch, e.opts.SourceDir); err != nil {
			return fmt.Errorf("docker: runbox CLI for the container: %w", err)
		}
	}
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("docker: runbox CLI: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("docker: runbox CLI: %w", err)
	}
	if err := e.sb.CopyIn(ctx, id, CLIPath, f, fi.Size(), 0o755); err != nil {
		return fmt.Errorf("docker: put the runbox CLI in container %s: %w", short(id), err)
	}
	e.cliIn = id
	return nil
}
