package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/statedir"
)

// mcpReferenceSDK is the version of the official TypeScript MCP SDK the
// reference server of mcp.terminal is written with.
const mcpReferenceSDK = "1.32.2"

// mcpReferenceServer is the reference: the smallest MCP server an agent
// framework would write with the official TypeScript SDK, one tool that
// runs its command with bash -c, unconfined, no gate.
const mcpReferenceServer = `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { execFile } from "node:child_process";

const server = new McpServer({ name: "reference", version: "1" });
server.registerTool("terminal", { inputSchema: { command: z.string() } }, ({ command }) =>
  new Promise((resolve) => {
    execFile("bash", ["-c", command], (err, stdout, stderr) =>
      resolve({ content: [{ type: "text", text: stdout + stderr }], isError: !!err }));
  }));
await server.connect(new StdioServerTransport());
`

// mcpCases: mcp.terminal is one tools/call of runbox serve's terminal
// tool running `true` (over stdio, default flags: the gate and the
// workspace sandbox), against the same call to the reference server
// above, both driven by the same Go SDK client in the same run: what an
// agent pays per command for runbox over the server it would write.
func mcpCases(h Host) []caseDef {
	return []caseDef{{name: "mcp.terminal", backend: "local", baseline: "reference MCP server (TypeScript SDK, bash -c per call)", n: 100,
		setup: func(ctx context.Context, p params) (op, base func(context.Context) error, cleanup func(), err error) {
			return mcpTerminal(ctx, statedir.Default(h.Service.Getenv))
		}}}
}

func mcpTerminal(ctx context.Context, state string) (op, base func(context.Context) error, cleanup func(), err error) {
	ref, err := mcpReference(ctx, state)
	if err != nil {
		return nil, nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	dir, err := os.MkdirTemp("", "runbox-bench-mcp-")
	if err != nil {
		return nil, nil, nil, err
	}
	var sessions []*mcp.ClientSession
	cleanup = func() {
		for _, s := range sessions {
			s.Close()
		}
		os.RemoveAll(dir)
	}
	connect := func(name string, args ...string) (func(context.Context) error, error) {
		cs, err := mcpConnect(ctx, dir, name, args...)
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, cs)
		return func(ctx context.Context) error { return mcpTrue(ctx, cs) }, nil
	}
	if op, err = connect(self, "serve"); err == nil {
		base, err = connect("node", ref)
	}
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return op, base, cleanup, nil
}

// mcpConnect starts the MCP server `name args...` in dir and connects to
// it over stdio.
func mcpConnect(ctx context.Context, dir, name string, args ...string) (*mcp.ClientSession, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stderr = dir, nil
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "runbox-bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: starting %s: %w", name, err)
	}
	return cs, nil
}

// mcpTrue calls the terminal tool with `true`.
func mcpTrue(ctx context.Context, cs *mcp.ClientSession) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "true"}})
	if err == nil && res.IsError {
		err = errors.New("bench: the terminal tool failed")
	}
	return err
}

// mcpReference writes the reference server beside its SDK, installed once
// under runbox's state directory state, and returns the script's path.
// Not under the cache directory: runbox runs what is installed there,
// unconfined, and commands may write the caches (sandbox.caches: shared),
// where they cannot reach the state directory.
func mcpReference(ctx context.Context, state string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("bench: the reference MCP server needs node: %w", err)
	}
	if state == "" {
		return "", errors.New("bench: no state directory for the reference MCP server (set HOME or RUNBOX_STATE_DIR)")
	}
	parent, err := statedir.Prepare(filepath.Join(state, "bench"))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(parent, "mcp-reference-"+mcpReferenceSDK)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true, "type": "module"}`+"\n"), 0o644)
		install := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@"+mcpReferenceSDK)
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			return "", fmt.Errorf("bench: installing the TypeScript MCP SDK %s for the reference server: %w: %s", mcpReferenceSDK, err, out)
		}
	}
	script := filepath.Join(dir, "reference.mjs")
	if err := os.WriteFile(script, []byte(mcpReferenceServer), 0o644); err != nil {
		return "", err
	}
	return script, nil
}
