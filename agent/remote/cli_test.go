package remote_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// cliAgentDir is the agent directory of the CLI tests: relative, so that
// a command the agent runs (in the dirSandbox's directory) finds what
// CopyIn put under that directory.
const cliAgentDir = "rb"

// runCLI runs the runbox CLI (here the agent build, which answers
// `version`) through env.
func runCLI(t *testing.T, env *remote.Env) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Args: []string{env.CLIPath(), "version"}})
	if err != nil {
		t.Fatalf("run the CLI: %v", err)
	}
	return res
}

// stale writes, at path in sandbox id, a program of size bytes that says
// "stale build": what an earlier build left in a reused sandbox.
func stale(t *testing.T, id, path string, size int64) {
	t.Helper()
	body := []byte("#!/bin/sh\necho stale build\nexit 0\n")
	pad := make([]byte, size-int64(len(body)))
	for i := range pad {
		pad[i] = '#'
	}
	dst := filepath.Join(id, path)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, append(body, pad...), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestEnv_CLIOnDemandNeverStale protects what CLIPath runs: the build
// this host has, even when the sandbox already holds a file of the same
// name and size at CLIPath (a reused sandbox, a restored snapshot). The
// control shows the attack is real: the sandbox's CopyIn keeps such a
// file, so copying the CLI to CLIPath itself would run the stale one.
// Other commands copy nothing.
func TestEnv_CLIOnDemandNeverStale(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{CLI: true, CLIBinary: agentBin, AgentDir: cliAgentDir})
	fi, err := os.Stat(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	if want := cliAgentDir + "/" + remote.CLIName; env.CLIPath() != want {
		t.Fatalf("CLIPath = %q; want %q", env.CLIPath(), want)
	}
	stale(t, env.ID(), env.CLIPath(), fi.Size())

	// Control: a CopyIn to CLIPath keeps the same-sized stale file.
	f, err := os.Open(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := sb.CopyIn(t.Context(), env.ID(), env.CLIPath(), f, fi.Size(), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := mustRun(t, env, "./"+env.CLIPath()); res.Output != "stale build\n" {
		t.Fatalf("control: CLIPath after a CopyIn of the CLI runs %q; want the stale file kept", res.Output)
	}

	before, _ := sb.counts()
	mustRun(t, env, "true")
	if after, _ := sb.counts(); after != before {
		t.Errorf("a command that does not run the CLI copied %d files", after-before)
	}
	if res := runCLI(t, env); !strings.HasPrefix(res.Output, "runbox-agent ") || res.Code != 0 {
		t.Fatalf("the CLI through CLIPath: exit %d, %q; want this host's build", res.Code, res.Output)
	}
	copies, _ := sb.counts()
	if copies != before+1 {
		t.Errorf("the first CLI command made %d copies; want 1", copies-before)
	}
	runCLI(t, env)
	if again, _ := sb.counts(); again != copies {
		t.Errorf("a second CLI command copied again (%d copies)", again-copies)
	}
}

// TestEnv_CLIAgainAfterRecreation: a sandbox that was removed and made
// again gets the CLI again before its first command that runs it.
func TestEnv_CLIAgainAfterRecreation(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{CLI: true, CLIBinary: agentBin, AgentDir: cliAgentDir})
	runCLI(t, env)
	old := env.ID()
	sb.kill(old)
	os.RemoveAll(old)
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	// The first command finds the sandbox gone (or recreates it at once).
	res, err := env.Run(ctx, envs.Command{Args: []string{env.CLIPath(), "version"}})
	if err != nil {
		res = runCLI(t, env)
	}
	if !strings.HasPrefix(res.Output, "runbox-agent ") || env.ID() == old {
		t.Fatalf("the CLI in the recreated sandbox (%s, was %s): %q", env.ID(), old, res.Output)
	}
}

// TestEnv_CLIOff: without Options.CLI there is no CLIPath, and a
// command named like it is run as it is, with nothing copied.
func TestEnv_CLIOff(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{AgentBinary: agentBin, AgentDir: cliAgentDir})
	if p := env.CLIPath(); p != "" {
		t.Fatalf("CLIPath = %q with Options.CLI off; want empty", p)
	}
	before, _ := sb.counts()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Args: []string{cliAgentDir + "/" + remote.CLIName, "version"}})
	if err == nil && res.Code == 0 {
		t.Errorf("a CLI that was never copied ran: %q", res.Output)
	}
	if after, _ := sb.counts(); after != before {
		t.Errorf("%d files copied with Options.CLI off", after-before)
	}
}
