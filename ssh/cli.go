package ssh

import (
	"context"
	"fmt"
	"os"
	"path"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// CLIName is the name of the full runbox CLI on the host, in the agent's
// directory ([Env.CLIPath]).
const CLIName = "runbox"

// CLIPath is where the full runbox CLI goes on the host, for commands that
// run runbox itself there (the job commands: their daemon lives on the
// host, outside any connection). An [Env] uploads it before the first
// command whose argv[0] is CLIPath — checked by checksum, so a host that
// has this build already costs one round trip — and other commands never
// pay for it. The agent, a fraction of its size, is in the same directory.
func (e *Env) CLIPath() string { return path.Join(e.agentDir, CLIName) }

// ensureCLI uploads the runbox CLI when cmd runs it and this connection
// has not put it there yet.
func (e *Env) ensureCLI(ctx context.Context, cmd envs.Command) error {
	if len(cmd.Args) == 0 || cmd.Args[0] != e.CLIPath() {
		return nil
	}
	inst, err := e.sb.Provision(ctx)
	if err != nil {
		return err
	}
	e.cliMu.Lock()
	defer e.cliMu.Unlock()
	if e.cliUp {
		return nil
	}
	if inst.OS != "linux" {
		return fmt.Errorf("ssh: the runbox CLI runs on Linux hosts; %s is %s: %w", e.Host(), inst.OS, envs.ErrUnsupported)
	}
	bin := e.sb.o.CLIBinary
	if bin != "" {
		if err := remote.CheckStatic(bin, inst.Arch); err != nil {
			return fmt.Errorf("ssh: runbox CLI: %w", err)
		}
	} else if bin, err = remote.CLI().FindSmall(ctx, inst.Arch, e.sb.o.SourceDir); err != nil {
		return fmt.Errorf("ssh: runbox CLI for %s: %w", e.Host(), err)
	}
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("ssh: runbox CLI: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ssh: runbox CLI: %w", err)
	}
	// Its path does not name its content: the host's copy is compared
	// by checksum (this side's is kept in the user's cache).
	sum, err := remote.FileDigest(bin)
	if err != nil {
		return fmt.Errorf("ssh: runbox CLI: %w", err)
	}
	if err := e.sb.putChecked(ctx, e.CLIPath(), f, fi.Size(), 0o755, sum); err != nil {
		return fmt.Errorf("ssh: put the runbox CLI on %s: %w", e.Host(), err)
	}
	e.cliUp = true
	return nil
}
